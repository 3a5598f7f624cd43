//===- BigCuts.h - the cluster planner of the BigCuts thesis ----*- C++ -*-===//
//
// Chapter 4 of ../shared/papers/deepcuts-bigcuts-thesis.txt: a model too
// big for a GPU trained (or run) from storage on a cluster of GPU-storage
// units, one process each, split into DIM_DP data-parallel groups, DIM_WP
// weight-partitioned and DIM_P pipeline groups, with parameter-resident
// (PR) or activation-resident (AR) scheduling. For every split it
// estimates COMM_STORAGE, COMM_GPU, TIME_COMPUTE and TIME_TOT (Tables
// 4.1-4.3's symbols, formulas 4.1-4.9) and ranks them, as Table 5.6 does.
// The formulas the text conversion garbled are derived in BigCuts.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_CLUSTER_BIGCUTS_H
#define CUTS_PERFMODEL_CLUSTER_BIGCUTS_H

#include <optional>
#include <string>
#include <vector>

namespace cuts::bigcuts {

/// Table 4.1 (and Table 5.5's rows): the cluster. Bandwidths in bytes/s,
/// per GPU for storage; PERF_peak per GPU in FLOP/s.
struct Cluster {
  std::string name;
  int nodes = 0, gpusPerNode = 0;
  double peakFlops = 0;            // PERF_peak (fp16)
  double bwIntra = 0, bwInter = 0; // GPU to GPU in a node, node to node
  double bwStorage = 0;            // BW_storage, a GPU's share
  double gpuMemory = 0;            // bytes; 0: not checked
  bool switchedFabric = false;     // NVSwitch: each GPU its link's bandwidth
  /// A node's data-parallel replicas may share AR's parameter reads (one
  /// reads, the fabric passes them on); false where each process reads its
  /// own, as cuts-mpi's ranks do.
  bool sharedReads = true;
  int gpus() const { return nodes * gpusPerNode; }
  /// BW_P2P: the slowest link a group spanning nodes crosses.
  double bwP2P() const;
};

/// Table 4.2: the model as the averages of its parameterised complex
/// operators, per sample (one sequence), plus the batch.
struct Model {
  std::string name;
  double numOp = 0;         // NUM_OP
  double numParam = 0;      // NUM_PARAM, values an operator
  double numAct = 0;        // NUM_ACT, output values an operator per sample
  double numCompute = 0;    // NUM_COMPUTE, FLOP an operator per sample
  double effCompute = 0;    // EFF_COMPUTE
  double coefOptimizer = 0; // COEF_OPTIMIZER (4 for Adam)
  bool inference = false;   // forward only: no gradients, no optimizer
  double valueBytes = 2;    // a parameter's or activation's (fp16: L730)
  double batchMini = 0, batchMicro = 1;
  int maxPipeline = 0; // the most pipeline stages worth using (0: any)
};

/// Table 4.3: one way to run it.
struct Config {
  int dp = 1, wp = 1, p = 1;
  bool activationResident = false; // Policy_schedule
};
std::string describe(const Config &c); // "(DP 2, WP 1, P 8, PR)"

/// Bytes per mini-batch and seconds, for one process.
struct Estimate {
  Config config;
  double commFwdBwd = 0, commOpt = 0, commStorage = 0;
  double commWP = 0, commDP = 0, commP = 0, commGpu = 0;
  double timeStorage = 0, timeGpu = 0; // TIME_COMM's two parts
  double timeComm = 0, timeCompute = 0, timeTot = 0;
  double memoryBytes = 0; // a GPU's working set
  bool feasible = true;
  std::string why; // where infeasible
};

Estimate estimate(const Model &m, const Cluster &c, const Config &k);

/// TIME_COMPUTE with no communication at all: the ideal Table 5.6 divides
/// by.
double idealTime(const Model &m, const Cluster &c);

/// Every power-of-two split of the cluster's GPUs into DP x WP x P (P up
/// to the model's maxPipeline) under both schedules, estimated, feasible
/// ones first by TIME_TOT.
std::vector<Estimate> rank(const Model &m, const Cluster &c);

/// Parse a cluster (perfmodel/cluster/*.json) or a model description
/// (examples/bigcuts/*.json); nullopt and `error` naming the field that
/// is missing or impossible.
std::optional<Cluster> parseCluster(const std::string &json,
                                    std::string &error);
std::optional<Model> parseModel(const std::string &json, std::string &error);

} // namespace cuts::bigcuts

#endif // CUTS_PERFMODEL_CLUSTER_BIGCUTS_H

//===- BigCuts.cpp - the cluster planner of the BigCuts thesis ------------===//
#include "perfmodel/cluster/BigCuts.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace cuts::bigcuts {

double Cluster::bwP2P() const {
  return nodes > 1 ? std::min(bwIntra, bwInter) : bwIntra;
}

std::string describe(const Config &c) {
  return "(DP " + std::to_string(c.dp) + ", WP " + std::to_string(c.wp) +
         ", P " + std::to_string(c.p) + ", " +
         (c.activationResident ? "AR" : "PR") + ")";
}

double idealTime(const Model &m, const Cluster &c) {
  return m.numCompute * m.numOp * m.batchMini /
         (m.effCompute * c.peakFlops * c.gpus());
}

namespace {

/// Seconds to bring COMM_FWDBWD in. AR's parameters are the same for a
/// node's data-parallel replicas: one may read them and pass them on over
/// the node's fabric where that is faster (not in the thesis; a switched
/// fabric gives each receiver its link's bandwidth, a shared bus splits
/// it, so PCIe nodes gain nothing). This is what Table 5.6's cluster B
/// columns show.
double parameterReads(const Cluster &c, const Config &k, double bytes) {
  const double alone = bytes / c.bwStorage;
  const int sharers = std::min(k.dp, c.gpusPerNode);
  if (!k.activationResident || sharers < 2 || !c.sharedReads)
    return alone;
  const double link = c.switchedFabric ? c.bwIntra : c.bwIntra / sharers;
  const double shared =
      bytes / sharers / c.bwStorage + bytes * (sharers - 1) / sharers / link;
  return std::min(alone, shared);
}

} // namespace

Estimate estimate(const Model &m, const Cluster &c, const Config &k) {
  Estimate e;
  e.config = k;
  const double dp = k.dp, wp = k.wp, p = k.p, b = m.batchMini;
  // 4.2 / 4.3: PR moves each layer's activations (out and back in), AR
  // the parameters for every micro-batch: 4.3 as printed multiplies by
  // BATCH_MINI, the count of micro-batches of one sample each (Table 5.6);
  // the text's "for every iteration" makes it BATCH_MINI / BATCH_MICRO. A
  // micro-batch is split across the DP groups (F1's BATCH_MICRO/DIM_DP),
  // so each process sees all of them. In inference (derived), PR reads the
  // parameters once a mini-batch and keeps the activations on the GPU:
  // only the next layer reads them.
  const double v = m.valueBytes;
  const double params = v * m.numParam * m.numOp / (wp * p);
  e.commFwdBwd = k.activationResident ? params * (b / m.batchMicro)
                 : m.inference        ? params
                               : 2 * v * m.numAct * m.numOp * b / (dp * p);
  e.commOpt = 8 * m.coefOptimizer * m.numParam * m.numOp / (wp * p); // 4.4
  e.commStorage = e.commFwdBwd + e.commOpt;                          // 4.5
  // 4.6-4.8. COMM_DP as printed counts one operator; a process's share of
  // the gradients is NUM_OP / DIM_P of them (derived). COMM_P exists only
  // with a pipeline.
  e.commWP = v * (m.numOp / p) * (m.numAct / dp) * std::log2(wp) * b;
  e.commDP = v * (m.numOp / p) * (m.numParam / wp) * std::log2(dp) *
             (m.inference ? 0 : 1);
  e.commP = p > 1 ? v * (m.numAct / dp) * b : 0;
  e.commGpu = e.commWP + e.commDP + e.commP;
  // 4.9 as printed adds bytes to seconds; derived: each traffic over its
  // bandwidth. Table 5.6's activation-resident columns fit the weight-
  // partition exchange going through storage (staged with the
  // parameters), its parameter-resident ones through BW_P2P.
  const double viaStorage = k.activationResident ? e.commWP : 0;
  e.timeStorage = parameterReads(c, k, e.commFwdBwd) +
                  (e.commOpt + viaStorage) / c.bwStorage;
  e.timeGpu = (e.commGpu - viaStorage) / c.bwP2P();
  e.timeComm = e.timeStorage + e.timeGpu;
  e.timeCompute = m.numCompute * m.numOp * b /
                  (m.effCompute * c.peakFlops * dp * wp * p); // 4.10-4.12
  e.timeTot = std::max(e.timeCompute, e.timeComm);            // 4.13
  // Not in the thesis: one step's working set must fit the GPU: an
  // operator's parameter shard and one micro-batch's activations in and
  // out, each double-buffered so that the next step's arrive meanwhile.
  const double shard = v * m.numParam / wp;
  const double acts = 2 * v * m.numAct * m.batchMicro;
  e.memoryBytes = 2 * (shard + acts);
  if (c.gpuMemory > 0 && e.memoryBytes > c.gpuMemory) {
    e.feasible = false;
    e.why = "a step needs " + std::to_string(e.memoryBytes / 1e9) +
            " GB of GPU memory";
  }
  return e;
}

std::vector<Estimate> rank(const Model &m, const Cluster &c) {
  std::vector<Estimate> all;
  const int n = c.gpus();
  for (int dp = 1; dp <= n; dp *= 2)
    for (int p = 1; dp * p <= n; p *= 2) {
      const int wp = n / (dp * p);
      if (dp * wp * p != n || (m.maxPipeline > 0 && p > m.maxPipeline))
        continue;
      for (bool ar : {false, true})
        all.push_back(estimate(m, c, {dp, wp, p, ar}));
    }
  std::stable_sort(all.begin(), all.end(),
                   [](const Estimate &a, const Estimate &b) {
                     if (a.feasible != b.feasible)
                       return a.feasible;
                     return a.timeTot < b.timeTot;
                   });
  return all;
}

namespace {

using Json = nlohmann::json;

/// `key` of `j` as a positive number into `out`, else `error`.
bool positive(const Json &j, const char *key, double &out, std::string &error,
              bool optional = false) {
  if (!j.contains(key)) {
    if (optional)
      return true;
    error = "\"" + std::string(key) + "\" is missing";
    return false;
  }
  if (!j[key].is_number() || !(j[key].get<double>() > 0) ||
      !std::isfinite(j[key].get<double>())) {
    error = "\"" + std::string(key) + "\" must be a positive number";
    return false;
  }
  out = j[key].get<double>();
  return true;
}

std::optional<Json> parse(const std::string &text, std::string &error) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error = "not a JSON object";
    return std::nullopt;
  }
  return j;
}

} // namespace

std::optional<Cluster> parseCluster(const std::string &text,
                                    std::string &error) {
  auto j = parse(text, error);
  if (!j)
    return std::nullopt;
  Cluster c;
  c.name = j->value("name", std::string("cluster"));
  double nodes = 0, gpus = 0, gb = 0;
  if (!positive(*j, "nodes", nodes, error) ||
      !positive(*j, "gpus_per_node", gpus, error) ||
      !positive(*j, "peak_tflops", c.peakFlops, error) ||
      !positive(*j, "intra_node_gbs", c.bwIntra, error) ||
      !positive(*j, "inter_node_gbs", c.bwInter, error) ||
      !positive(*j, "storage_gbs_per_gpu", c.bwStorage, error) ||
      !positive(*j, "gpu_memory_gb", gb, error, true))
    return std::nullopt;
  for (auto [key, flag] : {std::pair{"intra_node_switched", &c.switchedFabric},
                           std::pair{"shared_parameter_reads", &c.sharedReads}})
    if (j->contains(key)) {
      if (!(*j)[key].is_boolean()) {
        error = "\"" + std::string(key) + "\" must be true or false";
        return std::nullopt;
      }
      *flag = (*j)[key].get<bool>();
    }
  if (nodes != std::floor(nodes) || gpus != std::floor(gpus) ||
      nodes * gpus > 65536) {
    error = "\"nodes\" and \"gpus_per_node\" must be whole numbers of at "
            "most 65536 GPUs together";
    return std::nullopt;
  }
  c.nodes = int(nodes), c.gpusPerNode = int(gpus);
  c.peakFlops *= 1e12, c.bwIntra *= 1e9, c.bwInter *= 1e9;
  c.bwStorage *= 1e9, c.gpuMemory = gb * 1e9;
  return c;
}

std::optional<Model> parseModel(const std::string &text, std::string &error) {
  auto j = parse(text, error);
  if (!j)
    return std::nullopt;
  Model m;
  m.name = j->value("name", std::string("model"));
  double layers = 0, hidden = 0, seq = 0, maxP = 0;
  if (!positive(*j, "layers", layers, error) ||
      !positive(*j, "hidden", hidden, error) ||
      !positive(*j, "sequence", seq, error) ||
      !positive(*j, "batch", m.batchMini, error) ||
      !positive(*j, "efficiency", m.effCompute, error) ||
      !positive(*j, "micro_batch", m.batchMicro, error, true) ||
      !positive(*j, "max_pipeline", maxP, error, true))
    return std::nullopt;
  if (m.effCompute > 1) {
    error = "\"efficiency\" is a share of the peak, at most 1";
    return std::nullopt;
  }
  const std::string mode = j->value("mode", std::string("training"));
  if (mode != "training" && mode != "inference") {
    error = "\"mode\" must be \"training\" or \"inference\"";
    return std::nullopt;
  }
  const bool training = mode == "training";
  if (std::fmod(m.batchMini, m.batchMicro) != 0) {
    error = "\"batch\" must be a multiple of \"micro_batch\" (§4.2's "
            "assumption 5)";
    return std::nullopt;
  }
  // A transformer layer as 12 operators of hidden x hidden (Q, K, V, the
  // output projection, 4 and 4 for the FFN), each producing hidden values
  // a token: Table 5.6's parameter-to-activation slopes fit this (derived;
  // the thesis gives no numbers). Training counts forward and backward.
  m.numOp = 12 * layers;
  m.numParam = hidden * hidden;
  m.numAct = hidden * seq;
  m.numCompute = 2 * hidden * hidden * seq * (training ? 3 : 1);
  m.coefOptimizer = training ? j->value("optimizer_values", 4.0) : 0;
  m.inference = !training;
  if (!positive(*j, "value_bytes", m.valueBytes, error, true))
    return std::nullopt;
  m.maxPipeline = int(maxP);
  return m;
}

} // namespace cuts::bigcuts

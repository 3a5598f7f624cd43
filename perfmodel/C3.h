//===- C3.h - compute concurrent with communication (ConCCL) ----*- C++ -*-===//
//
// ConCCL's model of a GEMM running beside a collective on one GPU
// (../shared/papers/conccl-dma-collectives.txt): the taxonomy of §III, the
// ideal speedup of §IV-B3, and the runtime heuristic of §V-C extended to
// every strategy of §V-VI. Roofline times of the GEMM and the collective
// (70 % of the peaks, as the paper assumes), the GEMM's FLOP rate in
// proportion to its SMs; measured once per GPU, the collective's slowdown
// on few SMs and the GEMM's while a collective runs beside it (memory
// contention). The configuration with the least predicted time is chosen.
// Pure arithmetic: `cuts c3` measures the tables and checks the choice
// against the exhaustive sweep.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_C3_H
#define CUTS_PERFMODEL_C3_H

#include <string>
#include <vector>

namespace cuts {

/// §III: G-long when the GEMM alone takes over 115 % of the collective's
/// time alone, C-long the converse, GC-equal otherwise.
enum class C3Type { GLong, CLong, GCEqual };
const char *c3TypeName(C3Type t);
C3Type classifyC3(double gemm, double comm);

/// Serial over concurrent when the shorter hides entirely: (G + C) /
/// max(G, C).
double idealSpeedup(double gemm, double comm);
/// The share of the ideal gain that `concurrent` realises, (S - 1) /
/// (S_ideal - 1) with S = (G + C) / concurrent: the paper's "1.13x is 21 %
/// of ideal" where the ideal is 1.6x.
double percentOfIdeal(double gemm, double comm, double concurrent);

/// How the two run (§IV-VI): c3_base (the GEMM launched first), c3_sp (the
/// collective first, on a high-priority stream), c3_rp (an SM partition:
/// `commSms` for the collective, the rest for the GEMM; green contexts),
/// ConCCL (the collective on the copy engines) and ConCCL_rp (the GEMM
/// confined to all but `commSms` SMs beside it).
enum class C3Strategy {
  Base,
  Prioritised,
  Partitioned,
  CopyEngine,
  CopyEnginePartitioned
};
struct C3Config {
  C3Strategy strategy = C3Strategy::Base;
  int commSms = 0;
};
std::string describeC3(const C3Config &c);

/// What the heuristic knows of the GPU: the peaks the roofline uses, and
/// what the roofline cannot know, measured once (§V-C's lookup tables):
/// the copy engines' rate; per split, comm[i], the SM collective's time on
/// splits[i] SMs over its time on all, and gemmBeside[i], how much slower
/// the GEMM runs on the other SMs while that collective runs; gemmBesideCe
/// the same beside the copy engines' collective; and the SMs the
/// collective's grid takes when it runs first.
struct C3Machine {
  int sms = 0;
  double peakFlops = 0, bandwidth = 0; // FLOP/s and bytes/s
  double copyEngineBandwidth = 0;      // bytes/s of a collective, measured
  double commBandwidth = 0; // the SM collective's across GPUs (0: HBM's)
  double efficiency = 0.7;  // of the peaks (§V-C)
  int commSmsFirst = 0;
  std::vector<int> splits;
  std::vector<double> comm, gemmBeside;
  double gemmBesideCe = 1;
};

/// One GEMM beside one collective: the GEMM's work and minimal traffic,
/// and the bytes the collective reads and writes on this GPU.
struct C3Scenario {
  double gemmFlops = 0, gemmBytes = 0, commBytes = 0;
};

/// The roofline's times (seconds): the GEMM on every SM, the collective on
/// SMs and on the copy engines.
double rooflineGemm(const C3Machine &m, const C3Scenario &s);
double rooflineComm(const C3Machine &m, const C3Scenario &s);
double rooflineCopyEngine(const C3Machine &m, const C3Scenario &s);

/// The GEMM's slowdown beside a collective on the copy engines, from
/// timings on one GPU: the GEMM alone (`gemm`), the collective alone
/// (`comm`), both started together (`both`), assuming the collective
/// keeps its pace and the GEMM is the longer (twoPhase below solved for
/// it); 1 where they overlapped perfectly, at most 10.
double gemmSlowdownBeside(double gemm, double comm, double both);

/// The predicted time of `c` for `s`.
double predictC3(const C3Machine &m, const C3Scenario &s, const C3Config &c);

/// Every configuration the sweep times: base, prioritised, a partition per
/// split, copy engines, and copy engines beside a GEMM partition per split
/// up to `ceSplits` of them.
std::vector<C3Config> c3Configs(const C3Machine &m, size_t ceSplits = 2);

/// The configuration of `c3Configs` with the least predicted time.
C3Config chooseC3(const C3Machine &m, const C3Scenario &s);

} // namespace cuts

#endif // CUTS_PERFMODEL_C3_H

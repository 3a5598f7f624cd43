//===- Arch.h - GPU descriptors for the performance model -------*- C++ -*-===//
//
// The GPU architecture parameters of DeepCuts (thesis Table 3.4: NUM_SM,
// PERF_peak, BW_global, TRANS_global, LAT_shared, MAX_shared, MAX_thread)
// plus what occupancy needs (registers and blocks per SM, L2). Descriptors
// are JSON files in perfmodel/arch/, compiled into the library; each number
// carries its source there. `cuts arch --probe` measures a local GPU and
// writes a descriptor in the same format.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_ARCH_H
#define CUTS_PERFMODEL_ARCH_H

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace cuts {

/// XY of an NVIDIA architecture "sm_XY" (its suffix "a" or "f" ignored); 0
/// for any other ("gfx942").
inline int smVersion(const std::string &arch) {
  return arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0;
}

struct GpuArch {
  std::string name;                 // "H100-SXM"
  std::vector<std::string> aliases; // "h100", "sm_90", ...
  std::string vendor;               // "nvidia" or "amd"
  std::string computeArch;          // "sm_90", "gfx942"
  int numSM = 0;                    // NUM_SM
  double perfPeakFp32 = 0;          // PERF_peak, FLOP/s, FP32 SIMT (FMA = 2)
  double perfPeakFp16 = 0;          // FLOP/s, FP16 (tensor/matrix cores)
  double bwGlobal = 0;              // BW_global, bytes/s
  int transGlobalBytes = 0;         // TRANS_global in bytes (elements = /size)
  int latShared = 0;                // LAT_shared, cycles
  int maxSharedPerBlock = 0;        // MAX_shared, bytes
  int maxThreadsPerBlock = 0;       // MAX_thread
  int sharedPerSM = 0;              // bytes
  int regsPerSM = 0;                // 32-bit registers
  int maxRegsPerThread = 0;
  int maxBlocksPerSM = 0;
  int maxThreadsPerSM = 0;
  int warpSize = 0;
  int sharedBanks = 0; // banks of 4 bytes
  long long l2Bytes = 0;
  double clockGHz = 0; // boost clock the peaks are computed at
  /// LAT_iter, cycles: the least time one iteration of a tiled kernel's
  /// C_input loop takes (a global load into shared memory, two barriers),
  /// measured on the GPU; 0 where not measured (the bound then has no
  /// latency term). Optional in the JSON.
  double latIterCycles = 0;
  /// Seconds a kernel occupies in a CUDA graph of back-to-back launches
  /// even when it does nothing, measured (cuts-probe); 0 where not
  /// measured. Optional in the JSON.
  double launchSeconds = 0;
  /// Bytes/s a full-occupancy grid reads from L2, measured (cuts-probe); 0
  /// where not measured. Optional in the JSON.
  double bwL2 = 0;
  /// Bytes/s one SM alone reads from L2 (one block of the most threads),
  /// measured (cuts-probe); 0 where not measured. Optional in the JSON;
  /// recorded for the model's known gap (a grid on few SMs), not used yet.
  double bwL2PerSM = 0;
  /// Bytes/s a full-occupancy grid copies from L2 into shared memory with
  /// cp.async, as tensor-core kernels load their tiles, measured
  /// (cuts-probe); 0 where not measured, and then taken as bwL2. Optional.
  double bwL2CpAsync = 0;
  /// Cycles between two blocks an SM starts when the blocks do nothing,
  /// measured (cuts-probe, the least over block sizes); 0 where not
  /// measured. Optional in the JSON. A grid of many small blocks cannot run
  /// faster than its blocks per SM times this.
  double blockDispatchCycles = 0;
  /// FLOP/s of a full grid of warps issuing independent mma.sync m16n8k16
  /// (fp16 in, fp32 accumulate), measured (cuts-probe); 0 where not
  /// measured, and then taken as perfPeakFp16. Optional in the JSON. On
  /// Hopper the legacy warp-level instruction does not reach the wgmma peak.
  double perfPeakMmaSync = 0;
  /// Bytes a rank receives from which the copy engines' collectives are at
  /// least as fast as NCCL's between two GPUs of a node (cuts collectives,
  /// ConCCL's crossover); a tensor-parallel plan's smaller all-reduces go
  /// to NCCL where the devices are distinct. 0 where not measured: copy
  /// engines for every size. Optional in the JSON.
  double collectiveCrossoverBytes = 0;
  /// The most ranks for which that crossover was measured to hold; a plan
  /// of more puts every all-reduce on NCCL (on four H200s the copy engines
  /// trailed it at every size). 0: no limit. Optional in the JSON.
  double collectiveCopyEngineRanks = 0;
  /// tf32 tensor-core products run at this share of the 16-bit rate (A100
  /// and H100 data sheets).
  static constexpr double kTf32PerFp16 = 0.5;
  /// Not in the JSON: every architecture the kernels are compiled for
  /// (the CUBIN targets, "sm_90", "sm_80"); the search chooses only
  /// instructions all of them have. Empty: computeArch alone.
  std::vector<std::string> targets;

  /// R_peak / BW_global: the roofline's ridge point in FLOP per byte.
  double ridgePoint() const { return perfPeakFp32 / bwGlobal; }
  /// TRANS_global in elements of `elementBytes`.
  int transGlobalElements(int elementBytes) const {
    return transGlobalBytes / elementBytes;
  }
  /// Whether it launches programmatic dependents (PDL: sm_90 and later).
  bool hasPdl() const { return smVersion(computeArch) >= 90; }
};

/// The built-in descriptors (V100, RTX 2080, A100-SXM, H100-SXM, H200,
/// MI300X), in that order.
const std::vector<GpuArch> &knownArchs();

/// Looks a descriptor up by name or alias, case-insensitively ("h100",
/// "H100-SXM", "sm_90"); nullopt if unknown.
std::optional<GpuArch> findArch(const std::string &nameOrAlias);

/// Parses a descriptor (the JSON format of perfmodel/arch/*.json). On error
/// returns nullopt and sets `error` (which field is missing or invalid).
std::optional<GpuArch> parseArchJson(const std::string &text,
                                     std::string &error);

/// Serialises a descriptor in that JSON format (sources given per field).
std::string archToJson(
    const GpuArch &arch,
    const std::vector<std::pair<std::string, std::string>> &sources = {});

} // namespace cuts

#endif // CUTS_PERFMODEL_ARCH_H

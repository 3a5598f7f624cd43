//===- Compile.h - the compile pipeline: graph to artifact ------*- C++ -*-===//
//
// The one place that sees every stage (DESIGN.md): the cleaned graph is
// partitioned by the performance model (restricted to groups the code
// generator can build, costed by the bound or by measured times), each group
// is lowered to a kernel with its chosen parameter set, every distinct
// kernel is compiled with NVRTC for each target architecture, and the plan,
// the weights and the CUBINs become the artifact the runtime loads.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_DRIVER_COMPILE_H
#define CUTS_COMPILER_DRIVER_COMPILE_H

#include "compiler/tune/Tuner.h"
#include "cuts/Artifact.h"
#include "perfmodel/Explain.h"

#include "mlir/IR/BuiltinOps.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace cuts::driver {

/// Where Evaluate's cost comes from (§3.1).
enum class CostSource {
  Model,   // the PUL lower bound alone: no GPU, no cache
  Measure, // --tune: time the candidates on this machine's GPU
  Cache    // --tuning FILE alone: measured times from the cache, the bound
           // where the cache has none
};

struct CompileOptions {
  GpuArch arch;                   // the performance model's target
  std::vector<std::string> archs; // CUBIN targets ("sm_90"); empty: none
  PruneOptions prune;
  bool fusion = true;
  int jobs = 0; // NVRTC threads; 0: one per core
  /// Tuning compiles in worker processes of this executable (it serves
  /// `--nvrtc-worker`, NvrtcWorker.h); "": in this process's threads.
  std::string nvrtcWorker;
  CostSource cost = CostSource::Model;
  std::string tuningCache;   // read, and written after measuring
  int tuneCandidates = 16;   // best-bound parameter sets timed per group
  double tuneSeconds = 0;    // stop measuring after this long; 0: no limit
  std::string candidatesOut; // write the unmeasured candidates here
  tune::ProgressMode progress = tune::ProgressMode::Off; // on stderr
  bool library = true; // tuning also times cuDNN for the groups it can run
  /// What the module's floating-point tensors were converted to (the
  /// cuts-convert-precision pass), recorded in the artifact.
  std::string precision = "fp32";
  /// cuSync pairs: where the model predicts a gain, none (--no-sync), or
  /// every pair the tile analysis follows (--sync-all, for measuring).
  enum class Sync { Model, Off, All } sync = Sync::Model;
  /// false: the plan alone, no NVRTC (`cuts explain --sync` shows the
  /// pairs a compile would make).
  bool buildKernels = true;
};

/// A pair of consecutive generated kernels the cuSync planner considered.
struct SyncDecision {
  std::string producer, consumer; // the kernels' names before the pair
  bool chosen = false;
  std::string policy; // the best policy estimated ("" if none applies)
  /// T: the producer's custom tile order under it, its dimensions of more
  /// than one tile fastest first ("K,W,H"); "" for blockIdx order.
  std::string order;
  bool overPdl = false;            // the pair runs over PDL (rt::Step::overPdl)
  std::string why;                 // why not chosen
  double streamUs = 0, syncUs = 0; // the model's estimate
  int64_t earlyTiles = 0;
  /// The tuner's times (compile --tune, or its cache), when it timed the
  /// pair: in stream order, as a programmatic dependent (0: not timed) and
  /// under `policy` (over PDL where overPdl), the fastest way then.
  bool measured = false;
  std::string key; // the tuning cache's name for the pair (tune::pairKey)
  double measuredStreamUs = 0, measuredPdlUs = 0, measuredSyncUs = 0;
};

/// One generated kernel as a reader sees it.
struct KernelSource {
  std::string name;   // function and file name
  std::string source; // CUDA C++
  std::string hip;    // the same kernel for HIP
  std::string ptxas;  // resource report per arch, one line each
};

/// A chosen group's measurements (tuning): its fastest generated kernel
/// and its fastest library call next to the bound (INFINITY where none was
/// measured).
struct GroupTiming {
  std::string ops;    // "conv(name) + relu(name)"
  std::string fusion; // as `cuts explain` names it
  double boundUs = 0; // the performance model's lower bound
  double generatedUs = INFINITY, libraryUs = INFINITY;
  std::string library; // the fastest library call's ("cudnn.conv", ...)
  /// The fastest generated kernel's loop variant: "persistent" (", B
  /// resident"), "prefetch" (a SIMT loop's next slice, a tensor-core loop's
  /// residual early), or "" for the plain loop.
  std::string variant;
  bool chosenLibrary = false;
};

/// Seconds since t: the compile's phase times and the tuning budget.
inline double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

struct CompileResult {
  /// Its weight spans point into the module's constants (and
  /// `convertedWeights`): write it before the module goes.
  rt::ArtifactContents contents;
  /// Constants whose artifact bytes differ from their storage, converted
  /// (each vector's buffer stays where it is as the list grows).
  std::vector<std::vector<uint8_t>> convertedWeights;
  std::vector<KernelSource> sources; // distinct kernels
  int groups = 0, kernels = 0, views = 0;
  double searchSeconds = 0, codegenSeconds = 0, nvrtcSeconds = 0;
  // Tuning: rounds of search and measurement, candidates measured in this
  // run, candidates the final partition would still need (Cache mode), and
  // kernels chosen from measured times.
  int tuneRounds = 0, measured = 0, unmeasured = 0, chosenByTime = 0;
  int libraryKernels = 0; // groups given to cuDNN
  double tuneSeconds = 0;
  bool tuneBudgetSpent = false; // --tune-seconds ran out
  /// When the last search left groups unmeasured: the fraction of its bound
  /// (the part above the launch) each was priced at (the worst a measured
  /// group achieved), else 0.
  double unmeasuredPricedAt = 0;
  tune::MeasureStats measureStats;        // where the measuring time went
  double predictedUs = 0, measuredUs = 0; // sums over the chosen kernels
  std::vector<GroupTiming> timings;       // per chosen group, when tuning
  std::vector<SyncDecision> syncs;        // per candidate pair
};

/// Whether a compileModule error says the model uses something the compiler
/// does not cover yet (an op or shape the code generator has no kernel for,
/// an element type an artifact cannot hold) rather than that compiling
/// failed.
bool notCoveredYet(const std::string &error);

/// Whether the code generator can make one kernel of `ops`: the test the
/// partition search of compileModule puts every candidate group to, so that
/// `cuts explain` shows the partition a compile builds.
bool canGenerateGroup(llvm::ArrayRef<mlir::Operation *> ops);

/// The pairs considered, as JSON (tuning.json's and `cuts explain
/// --sync --json`'s "sync" list).
std::string syncJson(const std::vector<SyncDecision> &syncs);

/// The timings as JSON (`cuts compile` writes it to DIR/tuning.json): the
/// one compile's groups and sync pairs, or with batch profiles (one result
/// per batch) a "profiles" list of them.
std::string timingsJson(const std::vector<const CompileResult *> &results,
                        const std::vector<int64_t> &batches,
                        const std::string &arch);

/// The weight codecs' module (codegen/emit/Compress.h) compiled with NVRTC
/// for each arch into c.codecs: `cuts compile --weight-codecs`, so that a
/// device list may send its weights compressed (cuts_load_options).
bool addWeightCodecs(rt::ArtifactContents &c,
                     const std::vector<std::string> &archs, std::string &error);

/// The all-reduce's sum kernels (codegen/emit/Collective.h) compiled for
/// each arch into c.collectives: what a tensor-parallel model's ranks sum
/// their partial products with on the GPU.
bool addCollectiveKernels(rt::ArtifactContents &c,
                          const std::vector<std::string> &archs,
                          std::string &error);

/// Compiles `module`'s @main. Fails with `error` naming the op or kernel.
std::optional<CompileResult> compileModule(mlir::ModuleOp module,
                                           const CompileOptions &opts,
                                           std::string &error);

} // namespace cuts::driver

#endif // CUTS_COMPILER_DRIVER_COMPILE_H

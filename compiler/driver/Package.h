//===- Package.h - chosen groups to an artifact -----------------*- C++ -*-===//
//
// The last stages: each group of the partition becomes a plan step, a
// library call or a generated kernel (identical kernels kept once), over a
// table of the tensors the steps touch (inputs, weights, views,
// intermediates, outputs); then every distinct kernel is compiled with NVRTC
// for each target architecture.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_DRIVER_PACKAGE_H
#define CUTS_COMPILER_DRIVER_PACKAGE_H

#include "codegen/sync/TileSync.h"
#include "compiler/driver/Candidates.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <set>

namespace cuts::driver {

class Packager {
public:
  /// Fills res.contents (the manifest, weights, sources and CUBINs) and
  /// res.sources. `candidates` is null when nothing was tuned.
  Packager(mlir::ModuleOp module, const CompileOptions &opts,
           CandidateTable *candidates, tune::Cache &cache, CompileResult &res);

  /// The function's arguments, in order.
  bool addInputs(std::string &error);
  /// One group of the partition: its fastest measured candidate where it
  /// has one, else its best parameter set by the bound.
  bool addGroup(const GroupReport &g, std::string &error);
  /// The returned values. A kernel writes straight into the caller's buffer
  /// where it can; otherwise (an input, a weight, a value returned twice) a
  /// copy step.
  bool addOutputs(std::string &error);
  /// cuSync (PlanSync.cpp): consecutive generated kernels the model expects
  /// to gain from tile synchronisation run as producer and consumer on two
  /// streams (CompileOptions::sync; every candidate in res.syncs).
  bool addSync(std::string &error);
  /// Marks each generated kernel that follows one on its stream as its
  /// programmatic dependent (rt::Step::pdl; every generated kernel waits in
  /// griddepcontrol.wait before it reads).
  void markProgrammaticLaunches();
  /// CUDA and HIP sources, and NVRTC for every distinct kernel and arch
  /// (CUBINs a tuned compile shipped are taken from `cache`).
  /// Compiles every kernel a launch uses: those that a variant replaced
  /// (a cuSync pair's, an early launch's) are dropped first.
  bool compileKernels(std::string &error);
  /// The CUBINs compiled, by their source's signature on each arch: what a
  /// compile with a cache records there.
  void recordBinaries(tune::Cache &cache) const;

private:
  struct SyncPair {
    size_t step; // the producer's; the consumer's is the next
    /// The consumer's arguments that are the producer's output or views of
    /// it (two where it reads Q and K of one fused product), the fetch of
    /// each and a dependence each.
    std::vector<size_t> args;
    std::vector<int> fetches;
    std::vector<codegen::sync::Dependence> dependences;
    const codegen::sync::TileGrid &producer() const {
      return dependences.front().producer;
    }
    codegen::sync::Policy policy; // the model's best
    codegen::sync::SyncEstimate estimate;
    std::vector<codegen::sync::Policy> policies; // every one that applies
    /// T: each policy's producer tile order (the model's), by name; none
    /// for blockIdx order.
    std::map<std::string, std::optional<codegen::sync::TileOrder>> orders;
    bool overPdl = false; // run over PDL (rt::Step::overPdl)
  };
  std::optional<SyncPair> syncCandidate(size_t step, SyncDecision &d);
  /// The pair as the tuner times it (every policy's two kernels).
  tune::PairCandidate pairCandidate(const SyncPair &p) const;
  /// Whether the pair is made: the tuner's times where the cache has them,
  /// else the model's estimate; fills d (and p.policy and p.overPdl with
  /// the winner).
  bool decide(SyncPair &p, SyncDecision &d);
  /// The producer's post and consumer's wait kernels under one policy.
  std::pair<codegen::Kernel, codegen::Kernel>
  pairKernels(const SyncPair &p, const codegen::sync::Policy &policy) const;
  bool addSyncPairs(std::string &error);
  void dropUnusedKernels();
  /// Whether step s runs a kernel made from a DFG (not a copy, a library
  /// call or cuSync's wait and epoch kernels).
  bool generatedStep(const rt::Step &s) const;
  /// Pair n: the producer's post and the consumer's wait, their launches'
  /// semaphores; returns the wait kernel's launch.
  int synchronise(const SyncPair &p, size_t n, int epoch, int wait);
  int addHelperLaunch(int u, std::vector<int> args, std::vector<int> outputs,
                      std::string summary);
  int addStateTensor(const std::string &name, int64_t words);
  /// A split-K kernel's partials and counters (codegen::SplitKWorkspace)
  /// after kernel `kernel`'s tensors, as its source takes them.
  void addSplitKWorkspace(size_t kernel, const codegen::Kernel &k);
  int addRawKernel(const std::string &name, const std::string &cuda,
                   const std::string &hip);
  int addUnique(codegen::Kernel k, const std::string &suffix);
  int tensorFor(mlir::Value v, std::string &error);
  int addTensor(mlir::Value v, rt::TensorKind kind, const std::string &name,
                const std::string &what, std::string &error);
  int addWeight(mlir::Value v, const std::string &name, std::string &error);
  int addKernel(rt::KernelLaunch launch, llvm::ArrayRef<mlir::Value> args,
                const std::vector<bool> &outputs, std::string &error);
  bool addStep(rt::KernelLaunch launch, llvm::ArrayRef<mlir::Value> args,
               const std::vector<bool> &outputs, std::string &error);
  int addGenerated(const GroupReport &g, GroupKernel &gk,
                   const std::string &ops, double measured, std::string &error);
  bool addHostAlternative(const GroupReport &g, const GroupKernel &library,
                          const std::string &ops, std::string &error);
  bool addLibraryStep(const GroupReport &g, const GroupCandidate &c,
                      const std::string &ops, std::string &error);
  std::optional<GroupKernel> boundChoice(const GroupReport &g,
                                         std::string &why) const;
  std::optional<GroupKernel> measuredChoice(const GroupReport &g,
                                            const std::string &ops,
                                            bool &library, double &us,
                                            std::string &error);

  mlir::func::FuncOp func;
  const CompileOptions &opts;
  CandidateTable *candidates;
  tune::Cache &cache;
  CompileResult &res;
  rt::Manifest &m;
  llvm::DenseMap<mlir::Value, int> tensorOf;
  // Weights stored once: (bytes, XXH64) -> the offsets already holding
  // such bytes (a tied embedding and its copy folded for a product).
  std::map<std::pair<uint64_t, uint64_t>, std::vector<rt::WeightSpan>>
      storedWeights;
  std::map<std::string, int> uniqueOf; // kernel code -> index in `unique`
  std::vector<codegen::Kernel> unique;
  // unique index -> the CUDA and HIP sources of a kernel not from a DFG
  std::map<int, std::pair<std::string, std::string>> rawSources;
  // Per manifest kernel: its index in `unique` (-1: a library call), and its
  // time (measured, else the bound) for the sync estimate.
  std::vector<int> uniqueOfKernel;
  std::vector<double> kernelUs;
  std::set<int> noPdl; // launches measured slower as programmatic dependents
  std::vector<std::map<std::string, std::vector<char>>> cubins; // per unique
};

} // namespace cuts::driver

#endif // CUTS_COMPILER_DRIVER_PACKAGE_H

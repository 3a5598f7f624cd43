//===- Candidates.h - what each group's kernel is chosen from ---*- C++ -*-===//
//
// The first stage of a tuned compile: for every group the partition search
// considers, its candidates to time. Those are the best-bound parameter sets
// (in the normal and, for looped kernels, the prefetching variant; for
// short-K tensor-core loops the persistent one too, for products over few
// tiles split-K ones), each
// lowered once, and, where the group is one, cuDNN's fused convolution and
// cuBLASLt's product.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_DRIVER_CANDIDATES_H
#define CUTS_COMPILER_DRIVER_CANDIDATES_H

#include "compiler/driver/Compile.h"
#include "compiler/driver/Lower.h"

#include <map>
#include <optional>
#include <vector>

namespace cuts::driver {

struct GroupCandidate {
  /// A generated kernel, or (a library call) only the graph values of the
  /// call's args in `kernel.args`.
  GroupKernel kernel;
  tune::Candidate tc;
};

/// The predecessor's parameters of a shared-memory-level estimate's i-th
/// ranked set; null for other groups.
const TileParams *predecessorOf(const GroupEstimate &e, size_t i);

class CandidateTable {
public:
  explicit CandidateTable(const CompileOptions &opts);

  /// The candidates of `ops` (estimated as `e`), built on first use; a
  /// group's number is the order in which it was first asked for.
  const std::vector<GroupCandidate> &of(llvm::ArrayRef<mlir::Operation *> ops,
                                        const GroupEstimate &e);

  /// The arch the candidates are keyed and compiled for, and NVRTC's
  /// version (part of every key).
  const std::string &arch() const { return arch0; }
  const std::string &toolkit() const { return nvrtc; }

private:
  void addGenerated(llvm::ArrayRef<mlir::Operation *> ops,
                    const GroupEstimate &e, int group,
                    std::vector<GroupCandidate> &list) const;
  void addLibrary(llvm::ArrayRef<mlir::Operation *> ops, int group,
                  std::vector<GroupCandidate> &list) const;
  /// The persistent variant (codegen::Kernel::persistentBlocks) of a
  /// multistage tensor-core set with at most kPersistentSlices slices and
  /// tiles for two waves or more: as many blocks as fit on the GPU at once,
  /// B kept resident where `residentB` (none where it cannot be).
  std::optional<GroupKernel>
  persistentVariant(llvm::ArrayRef<mlir::Operation *> ops,
                    const GroupKernel &gk, TileParams p, size_t i,
                    const GroupEstimate &e, bool residentB) const;
  static constexpr int64_t kPersistentSlices = 4;
  /// The shallow pipelines of a memory-bound tensor-core set i of e (2 and
  /// 3 stages, no producer warpgroup) other than its own (a candidate
  /// listed twice is measured once).
  std::vector<GroupKernel>
  shallowVariants(llvm::ArrayRef<mlir::Operation *> ops, const GroupEstimate &e,
                  size_t i) const;

  /// The patch variant (codegen::Kernel::patchA) of tensor-core set i of
  /// e, a conv whose input pixels are narrower than a 16-byte copy: its
  /// blocks boxes of (pooled) pixels reading A from the input patch.
  std::optional<GroupKernel> patchVariant(llvm::ArrayRef<mlir::Operation *> ops,
                                          const GroupEstimate &e,
                                          size_t i) const;
  /// The split-K variants (codegen::Kernel::splitK) of a tensor-core set
  /// whose tiles fill at most half the blocks the GPU holds at once.
  std::vector<GroupKernel> splitKVariants(const GroupKernel &gk) const;
  static constexpr int64_t kMaxSplitK = 16;
  /// Patch variant v's persistent form, where its tiles share B.
  std::optional<GroupKernel> persistentPatchVariant(const GroupKernel &v) const;

  const CompileOptions &opts;
  std::string arch0, nvrtc;
  std::map<std::vector<mlir::Operation *>, std::vector<GroupCandidate>> memo;
};

/// The index of the fastest candidate of `list` (a generated one where
/// `generatedOnly`) that `cache` has a time for, and that time in `us`; -1
/// (and `us` infinite) when none has one.
int fastestMeasured(const std::vector<GroupCandidate> &list,
                    const tune::Cache &cache, double &us,
                    bool generatedOnly = false);

} // namespace cuts::driver

#endif // CUTS_COMPILER_DRIVER_CANDIDATES_H

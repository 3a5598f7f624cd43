//===- Fusion.h - the PUL of a group of fused ops ---------------*- C++ -*-===//
//
// §3.2.4. A group of ops becomes one kernel built around an anchor: its only
// complex op (conv, matmul), or else its only op that needs neighbouring
// data (depthwise conv, pooling, normalisation, reductions), or else its
// first op. The other ops must be elementwise and fuse at the register level:
// the intermediate stays in registers, N_load and NUM_trans are the anchor's
// (plus the operands the fused ops read from outside the group; the thesis's
// rule assumes they read nothing else), and COMP is the sum.
//
// Shared-memory-level fusion: two such anchors in a chain (a conv feeding a
// conv or a pooling, a matmul feeding a matmul or a softmax / layer
// normalisation) make one kernel in two phases. Each phase's PUL is computed
// as usual with the thesis's constraints: the successor reads its input from
// shared memory (NUM_trans = 0, so GMRatio = 1; C_input = C when it is
// complex), and the predecessor's block computes exactly the successor's
// input tile (halos recomputed), with the same number of threads. The
// group's time is the sum of the two phases' lower bounds.
//
// A chained product: a tensor-core product whose blocks span its output's
// columns stores that output (others read it) and hands its staged tile to
// a second product that reads it as A. Its bound is the first product's
// (with its register-fused ops) plus the second's products on mma.sync and
// its output's stores at their rooflines.
//
// A pooled implicit GEMM: a channels-last conv whose blocks compute boxes of
// output pixels, each holding a tile of a pooling's windows (halos
// recomputed), pools its staged tile; the conv's output never leaves the
// chip. Its bound is the conv group's on the rows the boxes add up to.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_FUSION_H
#define CUTS_PERFMODEL_FUSION_H

#include "perfmodel/ParamSearch.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cuts {

struct GroupEstimate {
  // "none" (one op), "register", "shared" (shared-memory level), "chain"
  // (a chained product: anchor, best and ranked are its first product's,
  // the bounds the chain's), "pooled" (a conv's group and a pooling of its
  // staged tile: anchor, best and ranked the conv's, the bounds the
  // kernel's), or "view" (no kernel).
  std::string fusion;
  mlir::Operation *anchor = nullptr;
  OpDesc anchorDesc;
  int64_t enumerated = 0;        // parameter sets of the anchor
  int64_t kept = 0;              // after pruning
  Candidate best;                // the best kept set, with the group's bound
  std::vector<Candidate> ranked; // every kept set, best bound first
  double time = 0; // lower-bound time of the group plus a launch, seconds
  // Shared-memory-level fusion: the predecessor stage's anchor and its
  // parameters (its block computes the anchor's input tile), for the best
  // set and for each of `ranked`.
  mlir::Operation *predecessor = nullptr;
  OpDesc predecessorDesc;
  Candidate predecessorBest;
  std::vector<Candidate> rankedPredecessor;
};

class FusionModel {
public:
  FusionModel(GpuArch arch, PruneOptions prune, bool allowFusion)
      : arch(std::move(arch)), prune(prune), allowFusion(allowFusion) {}

  /// The estimate for `ops` (in program order) as one kernel, or nullopt if
  /// the fusion rules forbid it.
  std::optional<GroupEstimate> estimate(llvm::ArrayRef<mlir::Operation *> ops);

  /// The memoised parameter search of one op.
  const SearchResult &search(const OpDesc &d);

  /// Runs the searches of `ops` not yet memoised on `jobs` threads (they are
  /// independent), so that later estimates find them done.
  void searchAll(const std::vector<OpDesc> &ops, int jobs);

  const GpuArch &target() const { return arch; }

private:
  /// The estimate without the launch time, ranking the anchor's kept sets
  /// or, where given, `only` these (a chain's).
  std::optional<GroupEstimate>
  estimateKernel(llvm::ArrayRef<mlir::Operation *> ops,
                 const std::vector<TileParams> *only = nullptr);
  std::optional<GroupEstimate>
  estimateShared(llvm::ArrayRef<mlir::Operation *> ops,
                 llvm::ArrayRef<mlir::Operation *> real,
                 llvm::ArrayRef<OpDesc> descs, int pred, int succ);
  /// A chained product: the first product's register-fused group, its
  /// blocks spanning its output's columns, then the second product from its
  /// staged tile (codegen's fuseChained).
  std::optional<GroupEstimate>
  estimateChain(llvm::ArrayRef<mlir::Operation *> ops,
                llvm::ArrayRef<mlir::Operation *> real,
                llvm::ArrayRef<OpDesc> descs, int pred, int succ);
  /// A pooled implicit GEMM: a channels-last conv's register-fused group on
  /// 16-bit tensor cores whose blocks compute boxes of pixels (PoolBox),
  /// then a max pooling (or an unpadded average) of its staged tile
  /// (codegen's fusePooled).
  std::optional<GroupEstimate>
  estimatePooled(llvm::ArrayRef<mlir::Operation *> ops,
                 llvm::ArrayRef<mlir::Operation *> real,
                 llvm::ArrayRef<OpDesc> descs, int pred, int succ);
  /// A shared-memory-level successor's sets: the best of each block its
  /// predecessor could be asked to compute (bestPerBlockKey), memoised.
  const SearchResult &searchOnChip(const OpDesc &d);

  GpuArch arch;
  PruneOptions prune;
  bool allowFusion;
  std::map<std::string, SearchResult> memo, memoOnChip;
  std::map<std::string, std::optional<Candidate>> memoBlock;
};

} // namespace cuts

#endif // CUTS_PERFMODEL_FUSION_H

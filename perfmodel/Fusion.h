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
// Shared-memory-level fusion (a complex op feeding another, or an op that
// needs other threads' results) is not modelled yet: such groups are
// reported as not fusible, so the partition search keeps them apart.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_FUSION_H
#define CUTS_PERFMODEL_FUSION_H

#include "perfmodel/Params.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"

#include <map>
#include <optional>
#include <string>

namespace cuts {

struct GroupEstimate {
  std::string fusion; // "none" (one op), "register", or "view" (no kernel)
  mlir::Operation *anchor = nullptr;
  OpDesc anchorDesc;
  int64_t enumerated = 0; // parameter sets of the anchor
  int64_t kept = 0;       // after pruning
  Candidate best;         // the best kept set, with the group's bound
  double time = 0;        // lower-bound time of the group, seconds
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

  const GpuArch &target() const { return arch; }

private:
  GpuArch arch;
  PruneOptions prune;
  bool allowFusion;
  std::map<std::string, SearchResult> memo;
};

} // namespace cuts

#endif // CUTS_PERFMODEL_FUSION_H

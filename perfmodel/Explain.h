//===- Explain.h - partition a cuts graph and report why --------*- C++ -*-===//
//
// Builds the op graph of a cleaned `func.func @main`, runs the partition
// search with the PUL lower-bound time as Evaluate's cost, and reports each
// chosen group: its ops, fusion kind, candidates enumerated and kept, the
// best PUL and its four factors, and the predicted lower-bound time
// (`cuts explain`; the JSON schema is in the README).
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_EXPLAIN_H
#define CUTS_PERFMODEL_EXPLAIN_H

#include "perfmodel/Fusion.h"
#include "perfmodel/Partition.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <functional>
#include <string>
#include <vector>

namespace cuts {

struct ExplainOptions {
  PruneOptions prune;
  bool fusion = true;
  PartitionOptions partition;
  /// What the kernels' consumer can build: a group of more than one op is a
  /// candidate only if this accepts it (the compiler passes the code
  /// generator's rules; `cuts explain` alone leaves it empty).
  std::function<bool(llvm::ArrayRef<mlir::Operation *>)> canFuse;
  int jobs = 0; // threads for the parameter searches; 0: one per core
  /// The storage of the graph's floating-point tensors (reported only: the
  /// graph already carries the types, cuts-convert-precision).
  std::string precision = "fp32";
  /// A model kept across calls on one graph (tuning's rounds of search),
  /// so each op's parameter search runs once; built with the same arch,
  /// prune and fusion. Null: a model of this call's own.
  FusionModel *model = nullptr;
  /// Evaluate's cost source (§3.1): given a group and its estimate, the cost
  /// the partition search uses; empty means the lower-bound time. Tuning
  /// passes the measured time of the group's fastest candidate.
  std::function<double(llvm::ArrayRef<mlir::Operation *>,
                       const GroupEstimate &)>
      cost;
};

struct GroupReport {
  std::vector<std::string> ops;              // "cuts.conv"
  std::vector<std::string> names;            // the ONNX node names (locations)
  std::vector<mlir::Operation *> operations; // program order
  GroupEstimate estimate;
  double cost = 0; // what the partition search charged for it
};

struct ExplainReport {
  std::string arch;
  ExplainOptions options;
  std::vector<GroupReport> groups;
  int numOps = 0;
  double totalTime = 0; // seconds
  int evaluations = 0, candidateSubsets = 0;
  bool truncated = false;
  double searchSeconds = 0;
};

/// Explains `func` for `arch`; fails only if the graph has an op the model
/// cannot describe (then `error` names it).
std::optional<ExplainReport> explainFunction(mlir::func::FuncOp func,
                                             const GpuArch &arch,
                                             const ExplainOptions &opts,
                                             std::string &error);

std::string explainTable(const ExplainReport &r);

/// Wraps each group of r in a cuts.group op carrying its estimate (what
/// `cuts explain --mlir` prints); the explained function is changed. Fails
/// (with `error`) if a group is not convex.
bool groupRegions(const ExplainReport &r, std::string &error);
std::string explainJson(const ExplainReport &r);

} // namespace cuts

#endif // CUTS_PERFMODEL_EXPLAIN_H

//===- Search.h - the partition search, tuned -------------------*- C++ -*-===//
//
// The second stage: the partition search (perfmodel) with Evaluate's cost
// from the bound alone, or from measured times (§3.1). When tuning, rounds
// of search and measurement alternate until the search sees only measured
// groups, or the rounds or the time budget run out.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_DRIVER_SEARCH_H
#define CUTS_COMPILER_DRIVER_SEARCH_H

#include "compiler/driver/Candidates.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace cuts::driver {

/// Evaluate's cost from the bound alone (an untuned compile's, and cuts
/// explain's): the group's bound, or +inf for a group whose kernel the bound
/// cannot stand for (a chained product; a shared-memory-level pair whose
/// best sets do not line up).
double boundCost(llvm::ArrayRef<mlir::Operation *> ops, const GroupEstimate &e);

/// The partition of `func` to compile. Times measured go into `cache` (and
/// opts.tuningCache); `res` gets the tuning counters. The report returned is
/// always one whose pending candidates were not measured after it, so a
/// compile from the saved cache (one search, no measuring) sees the same
/// costs and makes the same choices.
std::optional<ExplainReport>
searchAndTune(mlir::func::FuncOp func, const CompileOptions &opts,
              CandidateTable &candidates, tune::Cache &cache,
              CompileResult &res, std::string &error);

} // namespace cuts::driver

#endif // CUTS_COMPILER_DRIVER_SEARCH_H

//===- Profiles.h - batch profiles merged into one artifact -----*- C++ -*-===//
//
// `cuts compile --batch 1,8,32` compiles the model once per batch (each
// profile searched and tuned on its own; one tuning cache serves them all)
// and merges the results into one artifact: the smallest profile's plan in
// the manifest, the others as profiles (rt::Artifact::profiles), the
// weights stored once, identical kernels once (the writer shares blobs).
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_DRIVER_PROFILES_H
#define CUTS_COMPILER_DRIVER_PROFILES_H

#include "compiler/driver/Compile.h"

namespace cuts::driver {

/// Merges `results` (one per batch of `batches`, increasing) into `out`.
/// An input or output is batched where its axis 0 is the profile's batch in
/// every profile; the profiles must agree on everything else about their
/// inputs and outputs, or `error` says where they differ. The results'
/// weight spans stay referenced: keep their modules until `out` is written.
bool mergeProfiles(std::vector<CompileResult> &results,
                   const std::vector<int64_t> &batches,
                   rt::ArtifactContents &out, std::string &error);

/// Merges the plans of a tensor-parallel compile (`results`: rank 0, 1,
/// ...) into `out`: rank 0's plan in the manifest, the others as
/// rt::Artifact::rankPlans, each rank's own weights in the one section
/// (equal ones once). Keep the results' modules until `out` is written.
bool mergeRanks(std::vector<CompileResult> &results, rt::ArtifactContents &out,
                std::string &error);

/// Whether the model combines rows of its batch, so that a padded batch or
/// a device list's split would change every row (RowMixing.cpp).
struct RowMixing {
  /// The first op whose results depend on more than one row (a reduction,
  /// softmax or norm over the batch axis, a product contracting over it, a
  /// slice, concat or gather along it): "op (loc) why"; "" where none.
  std::string mixes;
  /// The first op the batch axis could not be followed through ("op
  /// (loc)"; nothing is known after it), or "".
  std::string lost;
};
RowMixing rowMixing(mlir::func::FuncOp fn);

} // namespace cuts::driver

#endif // CUTS_COMPILER_DRIVER_PROFILES_H

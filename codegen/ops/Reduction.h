//===- Reduction.h - row reductions: softmax, layer norm, reduce -*- C++
//-*-===//
#ifndef CUTS_CODEGEN_OPS_REDUCTION_H
#define CUTS_CODEGEN_OPS_REDUCTION_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

enum class RowOp { Softmax, LayerNorm, ReduceSum, ReduceMean, ReduceMax };

/// An op over the rows of X[rows, length] (the reduced axes last and
/// contiguous, as the importer's normalised ops are after a transpose
/// where needed): Softmax and LayerNorm write Y[rows, length] (LayerNorm
/// with scale and optional bias vectors of `length`), the reductions
/// Y[rows].
/// What a row op computes beyond its extents.
struct RowSpec {
  RowOp op = RowOp::Softmax;
  double epsilon = 1e-5;
  bool bias = true; // LayerNorm's B
  /// Rows over lanes read X through a shared tile of the block's rows (a
  /// fetch a shared-memory-level producer can fill) instead of straight
  /// into registers.
  bool sharedInput = false;
};

/// The kernel of row op d (OpDesc, Reduction: d.N rows of d.C elements,
/// contiguous) for tile parameters p (C_input = d.C: whole rows). X is
/// N x C; Y is N x C for softmax and layer normalisation, N for the
/// reductions.
std::optional<Kernel> buildRowOp(const std::string &name, const OpDesc &d,
                                 const RowSpec &s, const TileParams &p,
                                 std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_REDUCTION_H

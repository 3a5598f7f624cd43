//===- Elementwise.h - elementwise kernels and fused chains -----*- C++ -*-===//
#ifndef CUTS_CODEGEN_OPS_ELEMENTWISE_H
#define CUTS_CODEGEN_OPS_ELEMENTWISE_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

/// A global input and how an output position reads it (its index function,
/// thesis §3.4.2). By default it broadcasts to the output's shape (numpy
/// rules). With `perm` its axes are read transposed: output axis d reads
/// input axis perm[d] (ONNX Transpose). With `follows`, input axis d reads
/// the position of output axis follows[d], or 0 for kFixed, or, for
/// kGathered, the value of input `indices` at the same output position
/// (memory-based: ONNX Gather, whose indices input has its own `follows`).
struct ElementwiseInput {
  static constexpr int kFixed = -1;
  static constexpr int kGathered = -2;
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int64_t> perm = {};
  dfg::Type type = dfg::Type::F32;
  std::vector<int> follows = {};
  int indices = -1; // the input holding a kGathered axis's positions
  /// With `follows`: input axis d reads start[d] + step[d] x the output
  /// position (ONNX Slice; steps > 0). Empty: 0 and 1.
  std::vector<int64_t> start = {}, step = {};
  /// Positions outside the input read 0 instead of being an error (Concat:
  /// each input shifted by -its offset along the axis, the outputs it does
  /// not cover reading 0).
  bool outsideReadsZero = false;
};

/// One scalar op of a fused chain: op(args) where an argument k >= 0 is the
/// result of step k and -1 - i is input i; a Cast converts to `cast`.
struct ElementwiseStep {
  dfg::Op op;
  std::vector<int> args;
  double value = 0, value2 = 0;
  dfg::Type cast = dfg::Type::F32;
};

/// Y = the last step's result over an output of rank <= 4 (viewed as
/// N x K x H x W, leading axes first), every step fused at the register
/// level (thesis Fig. 3.4(c)): each thread loads its elements once and
/// writes only the final result.
/// `d` is the chain's output as the model describes it (OpDesc,
/// Elementwise: outShape right-aligned into N x K x H x W); p's C_input is 1.
std::optional<Kernel>
buildElementwise(const std::string &name, const OpDesc &d,
                 const std::vector<int64_t> &outShape,
                 const std::vector<ElementwiseInput> &in,
                 const std::vector<ElementwiseStep> &steps, const TileParams &p,
                 std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_ELEMENTWISE_H

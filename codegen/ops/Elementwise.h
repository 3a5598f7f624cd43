//===- Elementwise.h - elementwise kernels and fused chains -----*- C++ -*-===//
#ifndef CUTS_CODEGEN_OPS_ELEMENTWISE_H
#define CUTS_CODEGEN_OPS_ELEMENTWISE_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

/// A global input, broadcast to the output's shape (numpy rules). With
/// `perm` its axes are read transposed: output axis d reads input axis
/// perm[d] (ONNX Transpose; then the ranks are equal and nothing
/// broadcasts).
struct ElementwiseInput {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int64_t> perm = {};
};

/// One scalar op of a fused chain: op(args) where an argument k >= 0 is the
/// result of step k and -1 - i is input i.
struct ElementwiseStep {
  dfg::Op op;
  std::vector<int> args;
  double value = 0, value2 = 0;
};

/// Y = the last step's result over an output of rank <= 4 (viewed as
/// N x K x H x W, leading axes first), every step fused at the register
/// level (thesis Fig. 3.4(c)): each thread loads its elements once and
/// writes only the final result.
std::optional<Kernel>
buildElementwise(const std::string &name, const std::vector<int64_t> &outShape,
                 const std::vector<ElementwiseInput> &in,
                 const std::vector<ElementwiseStep> &steps, const TileParams &p,
                 std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_ELEMENTWISE_H

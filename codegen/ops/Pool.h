//===- Pool.h - max and average pooling kernels -----------------*- C++ -*-===//
#ifndef CUTS_CODEGEN_OPS_POOL_H
#define CUTS_CODEGEN_OPS_POOL_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

/// 2-D pooling Y[N, C, OH, OW] of X[N, C, H, W] (ONNX MaxPool /
/// AveragePool; a global average pool is a window of the whole image).
/// What a pooling window computes: its max, or its average over the
/// window (AverageWithPad: padding positions count) or over its positions
/// inside the input.
enum class Pooling { Max, Average, AverageWithPad };

/// The kernel of pooling op d (OpDesc, Pool: X is N x K x IH x IW, Y
/// N x K x H x W) for tile parameters p (C_input 1: there is no C loop).
std::optional<Kernel> buildPool(const std::string &name, const OpDesc &d,
                                Pooling pooling, const TileParams &p,
                                const std::vector<EpilogueOp> &epilogue,
                                std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_POOL_H

//===- Pool.h - max and average pooling kernels -----------------*- C++ -*-===//
#ifndef CUTS_CODEGEN_OPS_POOL_H
#define CUTS_CODEGEN_OPS_POOL_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

/// 2-D pooling Y[N, C, OH, OW] of X[N, C, H, W] (ONNX MaxPool /
/// AveragePool; a global average pool is a window of the whole image).
struct PoolShape {
  int64_t N = 1, C = 1, H = 1, W = 1, FH = 1, FW = 1;
  int64_t SH = 1, SW = 1, PH = 0, PW = 0, DH = 1, DW = 1;
  int64_t OH = 1, OW = 1;
  bool max = true;
  bool countIncludePad = false; // average pooling: divide by FH x FW
};

std::optional<Kernel> buildPool(const std::string &name, const PoolShape &s,
                                const TileParams &p,
                                const std::vector<EpilogueOp> &epilogue,
                                std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_POOL_H

//===- Conv.h - direct and depthwise convolution kernels --------*- C++ -*-===//
#ifndef CUTS_CODEGEN_OPS_CONV_H
#define CUTS_CODEGEN_OPS_CONV_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

/// The kernel of convolution d (OpDesc, DepthwiseConv or Conv: groups in
/// `batch`, C and K per group) for tile parameters p: Y[N, K, H, W] =
/// conv(X[N, C, IH, IW], Wt[K, C / group, FH, FW]) with d's strides, begin
/// pads and dilations, C_input = p.Cin slices of C per iteration (1 for a
/// depthwise conv: no C loop), the input tile in p's FORMAT_shared. The
/// emitted kernel reads X and Wt and writes Y.
std::optional<Kernel> buildConv(const std::string &name, const OpDesc &d,
                                const TileParams &p,
                                const std::vector<EpilogueOp> &epilogue,
                                std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_CONV_H

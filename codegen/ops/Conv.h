//===- Conv.h - direct and depthwise convolution kernels --------*- C++ -*-===//
#ifndef CUTS_CODEGEN_OPS_CONV_H
#define CUTS_CODEGEN_OPS_CONV_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

/// A 2-D convolution Y[N, K, OH, OW] = conv(X[N, C, H, W], Wt[K, C/group,
/// FH, FW]) with strides, begin pads and dilations; the output extents are
/// given (end pads only change them). group 1 is a direct convolution;
/// group = C = K is depthwise; otherwise output channel k sums over the C /
/// group input channels of its group k / (K / group).
struct ConvShape {
  int64_t N = 1, C = 1, H = 1, W = 1, K = 1, FH = 1, FW = 1;
  int64_t SH = 1, SW = 1, PH = 0, PW = 0, DH = 1, DW = 1;
  int64_t group = 1;
  int64_t OH = 1, OW = 1;
};

/// The kernel for tile parameters p (thesis Table 3.3; C_input = p.Cin
/// slices of C per iteration, the input tile in p's FORMAT_shared).
std::optional<Kernel> buildConv(const std::string &name, const ConvShape &s,
                                const TileParams &p,
                                const std::vector<EpilogueOp> &epilogue,
                                std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_CONV_H

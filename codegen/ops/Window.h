//===- Window.h - channels-last window ops as channel vectors ---*- C++ -*-===//
#ifndef CUTS_CODEGEN_OPS_WINDOW_H
#define CUTS_CODEGEN_OPS_WINDOW_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

/// The channel-vector kernel (ChannelVectorLoop) of channels-last op d: a
/// depthwise conv (X N x IH x IW x C, Wt C x FH x FW x 1) or a pooling (X),
/// into Y N x OH x OW x C. p: Nt = Ht = 1, Kt = d.channelVector(), C_input 1.
std::optional<Kernel>
buildChannelVectors(const std::string &name, const OpDesc &d,
                    ChannelVectorLoop::Reduce reduce, const TileParams &p,
                    const std::vector<EpilogueOp> &epilogue,
                    std::string &error);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_WINDOW_H

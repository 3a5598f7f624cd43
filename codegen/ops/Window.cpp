//===- Window.cpp - channels-last window ops as channel vectors -----------===//
//
// Depthwise convs and poolings read each input element a few times and
// compute little on it: memory-bound. Channels-last, a pixel's channels are
// contiguous, so a thread loads 16 bytes of them at once and the reuse
// between neighbouring windows stays in registers (a thread's pixels) and
// the L1 cache (its neighbours'); a shared tile of scalar elements (the
// DFG's fetch) read them 2 bytes at a time. The main loop is emitted
// directly (Emitter::emitChannelVectors); the epilogue is the exit DFG's.
//
//===----------------------------------------------------------------------===//
#include "codegen/ops/Window.h"

namespace cuts::codegen {

std::optional<Kernel>
buildChannelVectors(const std::string &name, const OpDesc &d,
                    ChannelVectorLoop::Reduce reduce, const TileParams &p,
                    const std::vector<EpilogueOp> &epilogue,
                    std::string &error) {
  const int64_t v = d.channelVector();
  const bool depthwise = reduce == ChannelVectorLoop::Reduce::Depthwise;
  if (!v || d.kind != (depthwise ? OpKind::DepthwiseConv : OpKind::Pool) ||
      (depthwise && d.IC != d.K)) {
    error = "channel vectors need a channels-last pooling or depthwise conv "
            "(one output a channel) of whole 16-byte vectors of channels";
    return std::nullopt;
  }
  if (p.tensorCore() || p.Nt != 1 || p.Ht != 1 || p.Kt != v || p.Cin != 1 ||
      !threadsTileBlock(p)) {
    error = "channel-vector tiles take Nt = Ht = 1, Kt = " + std::to_string(v) +
            " channels and C_input 1";
    return std::nullopt;
  }
  Kernel k;
  k.name = name;
  k.desc = d;
  k.params = p;
  k.vec = ChannelVectorLoop{reduce, v};
  k.tensors = {{"X", {d.N, d.IH, d.IW, d.K}, false}};
  if (depthwise)
    k.tensors.push_back({"Wt", {d.K, d.FH, d.FW, 1}, false});
  if (!buildExit(k, "Y", {d.N, d.H, d.W, d.K},
                 {dfg::DimN, dfg::DimH, dfg::DimW, dfg::DimK}, epilogue, error))
    return std::nullopt;
  static const char *const kWhat[] = {"max pool", "average pool",
                                      "average pool (padding counted)",
                                      "depthwise conv"};
  k.summary = "channel vectors: " + std::string(kWhat[int(reduce)]) + " " +
              std::to_string(d.FH) + "x" + std::to_string(d.FW) + " stride " +
              std::to_string(d.SH) + " on " + std::to_string(d.N) + "x" +
              std::to_string(d.IH) + "x" + std::to_string(d.IW) + "x" +
              std::to_string(d.K) + ", " + std::to_string(v) +
              " channels a load";
  return k;
}

} // namespace cuts::codegen

//===- Pool.cpp - max and average pooling kernels -------------------------===//
//
// The DFG of one output is a chain of max (or add) nodes over its window in
// the input tile; padding reads -inf for a max and 0 for an average. An
// average that excludes the padding divides by the number of in-image
// positions of its window, summed from a mask tile the fetch fills with 1
// inside the image and 0 outside, so no position-dependent code is needed.
//
//===----------------------------------------------------------------------===//
#include "codegen/ops/Pool.h"

#include <cmath>

namespace cuts::codegen {

std::optional<Kernel> buildPool(const std::string &name, const OpDesc &d,
                                Pooling pooling, const TileParams &p,
                                const std::vector<EpilogueOp> &epilogue,
                                std::string &error) {
  if (d.kind != OpKind::Pool || !threadsTileBlock(p) || p.Cin != 1) {
    error = "pooling tiles need block extents that are multiples of thread "
            "extents and C_input 1";
    return std::nullopt;
  }
  // The pooling's extents: X is N x C x H x W, Y N x C x OH x OW.
  struct {
    int64_t N, C, H, W, FH, FW, SH, SW, PH, PW, DH, DW, OH, OW;
    bool max, countIncludePad;
  } s = {d.N,
         d.K,
         d.IH,
         d.IW,
         d.FH,
         d.FW,
         d.SH,
         d.SW,
         d.PH,
         d.PW,
         d.DH,
         d.DW,
         d.H,
         d.W,
         pooling == Pooling::Max,
         pooling == Pooling::AverageWithPad};
  Kernel k;
  k.name = name;
  k.desc = d;
  k.params = p;
  k.loopExtent = 1; // one fetch, one compute phase
  k.accumulatorInit = s.max ? -INFINITY : 0.0;
  // Channels-last: X N x H x W x C, Y N x OH x OW x C.
  const ImageLayout layout{d.channelsLast};
  k.tensors = {{"X", layout.order(s.N, s.C, s.H, s.W), false}};

  int64_t inH = (p.Hb - 1) * s.SH + (s.FH - 1) * s.DH + 1;
  int64_t inW = (p.Wb - 1) * s.SW + (s.FW - 1) * s.DW + 1;
  // The input tile, N x C x inH x inW, row-major (the layout matters little
  // for a window op that reads each element a few times).
  std::vector<int64_t> strides{p.Kb * inH * inW, inH * inW, inW, 1};
  std::vector<dfg::DimMap> map{
      {dfg::DimN, 1}, {dfg::DimK, 1}, {dfg::DimH, s.SH}, {dfg::DimW, s.SW}};
  const dfg::Buffer tile{
      "Xs", dfg::Space::Shared, {p.Nb, p.Kb, inH, inW}, strides, map};
  // A large window: a PositionLoop.
  planBody(k, {&tile}, layout.unitDim(), 1, s.FH * s.FW);
  int xs = k.body.addBuffer(tile);
  const std::array<int64_t, 4> gs = layout.strides(s.C, s.H, s.W);
  FetchDim batch =
      fetchDim(p.Nb, dfg::DimN, 1, 0, false, s.N, gs[0], strides[0]);
  FetchDim channels =
      fetchDim(p.Kb, dfg::DimK, 1, 0, false, s.C, gs[1], strides[1]);
  FetchDim rows =
      fetchDim(inH, dfg::DimH, s.SH, -s.PH, false, s.H, gs[2], strides[2]);
  FetchDim cols =
      fetchDim(inW, dfg::DimW, s.SW, -s.PW, false, s.W, gs[3], strides[3]);
  std::vector<FetchDim> dims = layout.order(batch, channels, rows, cols);
  Fetch fx{0, xs, dims};
  fx.outside = s.max ? -INFINITY : 0.0;
  k.fetches.push_back(fx);
  bool masked = !s.max && !s.countIncludePad;
  int ms = -1;
  if (masked) {
    ms = k.body.addBuffer(
        {"Ms", dfg::Space::Shared, {p.Nb, p.Kb, inH, inW}, strides, map});
    Fetch fm{0, ms, dims};
    fm.mask = true;
    k.fetches.push_back(fm);
  }

  forEachChunkPosition(k, [&](const int64_t *pos) {
    dfg::Node v(dfg::Op::Value);
    v.name = accName(pos);
    int acc = k.body.add(v), count = -1;
    for (int64_t fh = 0; fh < s.FH; ++fh)
      for (int64_t fw = 0; fw < s.FW; ++fw) {
        std::vector<int64_t> at{pos[0], pos[1], pos[2] * s.SH + fh * s.DH,
                                pos[3] * s.SW + fw * s.DW};
        dfg::Node n(s.max ? dfg::Op::Max : dfg::Op::Add,
                    {acc, k.body.load(xs, at)});
        n.name = v.name;
        acc = k.body.add(n);
        if (masked) {
          int m = k.body.load(ms, at);
          count = count < 0 ? m : k.body.op(dfg::Op::Add, {count, m});
        }
      }
    if (!s.max) {
      int div = masked ? count : k.body.constant(double(s.FH * s.FW));
      dfg::Node avg(dfg::Op::Div, {acc, div});
      avg.name = v.name;
      acc = k.body.add(avg);
    }
    addResult(k, acc, v.name, pos);
  });
  declareAccumulators(k);
  if (!buildExit(k, "Y", layout.order(s.N, s.C, s.OH, s.OW),
                 layout.order<int>(dfg::DimN, dfg::DimK, dfg::DimH, dfg::DimW),
                 epilogue, error))
    return std::nullopt;
  k.summary = std::string(d.channelsLast ? "channels-last " : "") +
              (s.max ? "max" : "average") + " pool " + std::to_string(s.FH) +
              "x" + std::to_string(s.FW) + " stride " + std::to_string(s.SH);
  return k;
}

} // namespace cuts::codegen

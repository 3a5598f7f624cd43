//===- Conv.cpp - direct, grouped and depthwise convolution kernels -------===//
//
// The baseline DFG of one output (thesis Fig. 3.3(b)) is a chain of
// multiply-adds over the C_input x FH x FW window of the input tile and the
// filter tile; duplicated over the block's outputs, the window loads that
// neighbouring outputs share merge into one node. Padding is the fetch's:
// input positions outside the image read 0.
//
//===----------------------------------------------------------------------===//
#include "codegen/ops/Conv.h"

#include <algorithm>

namespace cuts::codegen {
namespace {

// Strides of a shared tile with axes N, C, H, W laid out in FORMAT_shared
// order, the innermost axis padded by a word when it is a multiple of the
// bank count (bank-conflict-aware padding, §3.4.2).
std::vector<int64_t> formatStrides(const SharedFormat &f,
                                   const int64_t ext[4]) {
  auto axis = [](char c) {
    return c == 'N' ? 0 : c == 'C' ? 1 : c == 'H' ? 2 : 3;
  };
  std::vector<int64_t> strides(4, 1);
  int64_t s = 1;
  for (int i = 3; i >= 0; --i) {
    int a = axis(f[i]);
    strides[a] = s;
    int64_t e = ext[a];
    if (i == 3 && e > 1 && e % 32 == 0)
      e += 1;
    s *= e;
  }
  return strides;
}

// "depthwise conv 3x3 stride 2 on 1x32x112x112 -> 32 channels + bias0":
// the kernel header's line.
std::string summary(const OpDesc &d, bool depthwise, int64_t group,
                    const std::vector<EpilogueOp> &epilogue) {
  std::string s =
      depthwise   ? std::string(d.channelsLast ? "channels-last depthwise conv "
                                               : "depthwise conv ")
      : group > 1 ? std::to_string(group) + "-group conv "
                  : std::string("conv ");
  s += std::to_string(d.FH) + "x" + std::to_string(d.FW) + " stride " +
       std::to_string(d.SH) + " on " + std::to_string(d.N) + "x" +
       std::to_string(d.IC) + "x" + std::to_string(d.IH) + "x" +
       std::to_string(d.IW) + " -> " +
       std::to_string(d.kind == OpKind::Conv ? d.K * group : d.K) + " channels";
  for (const EpilogueOp &e : epilogue)
    s += e.operand.empty() ? " + unary" : " + " + e.operand;
  return s;
}

} // namespace

std::optional<Kernel> buildConv(const std::string &name, const OpDesc &d,
                                const TileParams &p,
                                const std::vector<EpilogueOp> &epilogue,
                                std::string &error) {
  if (d.kind != OpKind::DepthwiseConv && d.kind != OpKind::Conv) {
    error = "not a convolution";
    return std::nullopt;
  }
  // The model's depthwise convs have one input channel a group; those with
  // one output a group too are generated as depthwise (the block's channels
  // from the fetch, no C loop), the others (a channel multiplier, one
  // group) as groups that sum over their C inputs for K outputs each.
  const int64_t group = d.kind == OpKind::Conv ? d.batch : d.IC;
  const int64_t cg = d.C, kg = d.kind == OpKind::Conv ? d.K : d.K / group;
  const bool depthwise = group > 1 && kg == 1 && cg == 1;
  if (!threadsTileBlock(p) || p.Cin < 1 || cg % p.Cin) {
    error = "parameters do not tile the convolution (block extents must be "
            "multiples of thread extents, C_input must divide C / group)";
    return std::nullopt;
  }
  if (d.channelsLast && !depthwise) {
    error = "only depthwise convs are generated channels-last on SIMT "
            "units (the others are implicit GEMMs)";
    return std::nullopt;
  }
  if (!depthwise && group > 1 && kg % p.Kb) {
    error = "a block's output channels must lie in one group (Kb dividing "
            "K / group)";
    return std::nullopt;
  }
  // The convolution's extents: X is N x C x IH x IW, Y N x K x OH x OW.
  struct {
    int64_t N, C, H, W, K, FH, FW, SH, SW, PH, PW, DH, DW, OH, OW;
  } s = {d.N,  cg * group, d.IH, d.IW, kg * group, d.FH, d.FW, d.SH,
         d.SW, d.PH,       d.PW, d.DH, d.DW,       d.H,  d.W};
  Kernel k;
  k.name = name;
  k.desc = d;
  k.params = p;
  k.loopExtent = depthwise ? 1 : cg;
  int64_t cin = p.Cin;
  int64_t inH = (p.Hb - 1) * s.SH + (s.FH - 1) * s.DH + 1;
  int64_t inW = (p.Wb - 1) * s.SW + (s.FW - 1) * s.DW + 1;
  int64_t cw = cg; // weight's channels per output
  // Channels-last: X N x H x W x C, the weight K x FH x FW x 1 (the same
  // memory as K x 1 x FH x FW), Y N x OH x OW x K.
  const ImageLayout layout{d.channelsLast};
  k.tensors = {{"X", layout.order(s.N, s.C, s.H, s.W), false},
               {"Wt", layout.order(s.K, cw, s.FH, s.FW), false}};

  // The input tile: N x (C_input, or the block's channels when depthwise) x
  // inH x inW in FORMAT_shared; the filter tile row-major.
  const int64_t ext[4] = {p.Nb, depthwise ? p.Kb : cin, inH, inW};
  std::vector<int64_t> is = formatStrides(sharedFormats()[p.format], ext);
  int64_t wc = depthwise ? 1 : cin;
  // One channel's FMAs are never split (planBody chunks the rest).
  const int64_t fmaPerChannel = p.Nt * p.Kt * p.Ht * p.Wt * s.FH * s.FW;
  if (fmaPerChannel > kMaxUnrolledFma) {
    error = std::to_string(fmaPerChannel) + " FMAs a thread for one " +
            "channel are more than a body unrolls (" +
            std::to_string(kMaxUnrolledFma) + ")";
    return std::nullopt;
  }
  dfg::Buffer xs{"Xs",
                 dfg::Space::Shared,
                 {ext[0], ext[1], ext[2], ext[3]},
                 is,
                 {{dfg::DimN, 1},
                  {depthwise ? dfg::DimK : dfg::NoDim, 1},
                  {dfg::DimH, s.SH},
                  {dfg::DimW, s.SW}}};
  std::vector<int64_t> ws{wc * s.FH * s.FW, s.FH * s.FW, s.FW, 1};
  dfg::Buffer wsb{
      "Ws",
      dfg::Space::Shared,
      {p.Kb, wc, s.FH, s.FW},
      ws,
      {{dfg::DimK, 1}, {dfg::NoDim, 1}, {dfg::NoDim, 1}, {dfg::NoDim, 1}}};
  int64_t step =
      planBody(k, {&xs, &wsb}, layout.unitDim(), wc, s.FH * s.FW, s.FH);
  xs.map[1].inner = wsb.map[1].inner = k.bodyStep > 0;
  if (k.tapStep > 0)
    xs.map[2].tap = s.DH, wsb.map[2].tap = 1;
  const int64_t rowsInDfg = k.tapStep > 0 ? k.tapStep : s.FH;
  int in = k.body.addBuffer(xs), wt = k.body.addBuffer(wsb);
  const std::array<int64_t, 4> gs = layout.strides(s.C, s.H, s.W);
  FetchDim channels =
      depthwise ? fetchDim(ext[1], dfg::DimK, 1, 0, false, s.C, gs[1], is[1])
                : fetchDim(ext[1], dfg::NoDim, 1, 0, true, s.C, gs[1], is[1]);
  if (!depthwise && group > 1)
    channels.groupK = kg, channels.groupC = cg;
  FetchDim batch = fetchDim(ext[0], dfg::DimN, 1, 0, false, s.N, gs[0], is[0]);
  FetchDim rows =
      fetchDim(inH, dfg::DimH, s.SH, -s.PH, false, s.H, gs[2], is[2]);
  FetchDim cols =
      fetchDim(inW, dfg::DimW, s.SW, -s.PW, false, s.W, gs[3], is[3]);
  k.fetches.push_back({0, in, layout.order(batch, channels, rows, cols)});
  int64_t fhw = s.FH * s.FW;
  k.fetches.push_back(
      {1,
       wt,
       {fetchDim(p.Kb, dfg::DimK, 1, 0, false, s.K, cw * fhw, ws[0]),
        fetchDim(wc, dfg::NoDim, 1, 0, !depthwise, cw, fhw, ws[1]),
        fetchDim(s.FH, dfg::NoDim, 1, 0, false, s.FH, s.FW, ws[2]),
        fetchDim(s.FW, dfg::NoDim, 1, 0, false, s.FW, 1, ws[3])}});

  // Loop body: acc(n, k, h, w) += X[n, c, h*SH + fh*DH, w*SW + fw*DW] *
  // Wt[k, c, fh, fw] over this iteration's channels and the window.
  forEachChunkPosition(k, [&](const int64_t *pos) {
    dfg::Node v(dfg::Op::Value);
    v.name = accName(pos);
    int acc = k.body.add(v);
    for (int64_t c = 0; c < step; ++c)
      for (int64_t fh = 0; fh < rowsInDfg; ++fh)
        for (int64_t fw = 0; fw < s.FW; ++fw) {
          int x = k.body.load(in, {pos[0], depthwise ? pos[1] : c,
                                   pos[2] * s.SH + fh * s.DH,
                                   pos[3] * s.SW + fw * s.DW});
          int w = k.body.load(wt, {pos[1], c, fh, fw});
          dfg::Node fma(dfg::Op::Fma, {x, w, acc});
          fma.name = v.name;
          acc = k.body.add(fma);
        }
    addResult(k, acc, v.name, pos);
  });
  declareAccumulators(k);

  if (!buildExit(k, "Y", layout.order(s.N, s.K, s.OH, s.OW),
                 layout.order<int>(dfg::DimN, dfg::DimK, dfg::DimH, dfg::DimW),
                 epilogue, error))
    return std::nullopt;
  k.summary = summary(d, depthwise, group, epilogue);
  return k;
}

} // namespace cuts::codegen

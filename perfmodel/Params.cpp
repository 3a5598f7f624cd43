//===- Params.cpp - an op and the tile parameters that implement it -------===//
#include "perfmodel/Params.h"

#include <algorithm>
#include <sstream>

namespace cuts {

bool isComplex(OpKind k) { return k == OpKind::Conv || k == OpKind::MatMul; }

const char *opKindName(OpKind k) {
  switch (k) {
  case OpKind::Conv:
    return "conv";
  case OpKind::DepthwiseConv:
    return "depthwise_conv";
  case OpKind::MatMul:
    return "matmul";
  case OpKind::Pool:
    return "pool";
  case OpKind::BatchNorm:
    return "batch_norm";
  case OpKind::Elementwise:
    return "elementwise";
  case OpKind::Reduction:
    return "reduction";
  }
  return "?";
}

const std::vector<SharedFormat> &sharedFormats() {
  static const std::vector<SharedFormat> formats = [] {
    std::vector<SharedFormat> out;
    SharedFormat f = {'N', 'C', 'H', 'W'};
    std::sort(f.begin(), f.end());
    std::vector<SharedFormat> all;
    do
      all.push_back(f);
    while (std::next_permutation(f.begin(), f.end()));
    // NCHW first: the layout of the tensors in global memory.
    SharedFormat nchw = {'N', 'C', 'H', 'W'};
    out.push_back(nchw);
    for (const auto &g : all)
      if (g != nchw)
        out.push_back(g);
    return out;
  }();
  return formats;
}

std::string formatName(int format) {
  const auto &f = sharedFormats()[format];
  return std::string(f.begin(), f.end());
}

std::string paramsText(const TileParams &p) {
  auto x4 = [](int64_t a, int64_t b, int64_t c, int64_t d) {
    return std::to_string(a) + "x" + std::to_string(b) + "x" +
           std::to_string(c) + "x" + std::to_string(d);
  };
  std::string text = "block " + x4(p.Nb, p.Kb, p.Hb, p.Wb) + ", thread " +
                     x4(p.Nt, p.Kt, p.Ht, p.Wt) + " (N x K x H x W), C_input " +
                     std::to_string(p.Cin);
  if (!p.tensorCore())
    return text + ", FORMAT_shared " + formatName(p.format);
  return text + (p.instr == MatrixInstr::Wgmma ? ", wgmma " : ", mma.sync ") +
         std::to_string(p.warpsM) + "x" + std::to_string(p.warpsN) +
         (p.instr == MatrixInstr::Wgmma ? " warpgroups, " : " warps, ") +
         std::to_string(p.stages) + " stages" +
         (p.warpSpecialized ? ", warp-specialised" : "");
}

std::string OpDesc::key() const {
  std::ostringstream os;
  os << int(kind) << ':' << N << ',' << C << ',' << K << ',' << H << ',' << W
     << ',' << FH << ',' << FW << ',' << PH << ',' << PW << ',' << SH << ','
     << SW << ',' << DH << ',' << DW << ',' << batch << ',' << inputs << ','
     << elementBytes << ',' << compPerElement;
  if (transA || transB)
    os << ",t" << transA << transB;
  if (tf32)
    os << ",tf32";
  if (channelsLast)
    os << ",nhwc";
  if (im2col)
    os << ",im2col:" << IC << ',' << IH << ',' << IW << ',' << OH << ',' << OW;
  if (IC2)
    os << ",sum:" << IC2 << ',' << IH2 << ',' << IW2 << ',' << SH2 << ','
       << SW2;
  if (planarC)
    os << ",planar:" << planarC;
  return os.str();
}

namespace {

int64_t product(const std::vector<int64_t> &s, size_t from) {
  int64_t n = 1;
  for (size_t i = from; i < s.size(); ++i)
    n *= s[i];
  return n;
}

int64_t at(const std::vector<int64_t> &v, size_t i, int64_t dflt) {
  return i < v.size() ? v[i] : dflt;
}

// N, H, W and the window of a conv or pooling from its NC<spatial> input
// and result, its kernel's spatial extents and per-axis attributes.
void setWindow(OpDesc &d, const std::vector<int64_t> &in,
               const std::vector<int64_t> &out,
               const std::vector<int64_t> &kernel, const Window &win) {
  d.N = out[0];
  d.IH = at(in, 2, 1);
  d.IW = in.size() > 3 ? product(in, 3) : 1;
  d.H = at(out, 2, 1);
  d.W = out.size() > 3 ? product(out, 3) : 1;
  d.FH = at(kernel, 0, 1);
  d.FW = kernel.size() > 1 ? product(kernel, 1) : 1;
  d.SH = at(win.strides, 0, 1), d.SW = at(win.strides, 1, 1);
  d.PH = at(win.pads, 0, 0), d.PW = at(win.pads, 1, 0);
  d.DH = at(win.dilations, 0, 1), d.DW = at(win.dilations, 1, 1);
}

} // namespace

OpDesc describeConv(const std::vector<int64_t> &x,
                    const std::vector<int64_t> &w,
                    const std::vector<int64_t> &y, int64_t group,
                    const Window &win) {
  OpDesc d;
  int64_t cin = x[1], m = w[0];
  setWindow(d, x, y, {w.begin() + 2, w.end()}, win);
  d.IC = cin;
  // Depthwise: one input channel a group (m outputs over them, a multiple
  // of the group count).
  if (group == cin && w[1] == 1) {
    d.kind = OpKind::DepthwiseConv;
    d.K = m;
    d.C = 1;
  } else {
    d.kind = OpKind::Conv;
    d.K = m / group;
    d.C = cin / group;
    d.batch = group;
  }
  return d;
}

OpDesc describeImplicitGemm(const std::vector<int64_t> &x,
                            const std::vector<int64_t> &w,
                            const std::vector<int64_t> &y, const Window &win) {
  OpDesc d;
  d.kind = OpKind::MatMul;
  d.im2col = d.transB = true;
  d.IH = x[1], d.IW = x[2], d.IC = x[3];
  d.OH = y[1], d.OW = y[2];
  d.N = y[0] * y[1] * y[2];
  d.K = w[0];
  d.FH = w[1], d.FW = w[2];
  d.C = d.FH * d.FW * d.IC;
  d.SH = at(win.strides, 0, 1), d.SW = at(win.strides, 1, 1);
  d.PH = at(win.pads, 0, 0), d.PW = at(win.pads, 1, 0);
  d.DH = at(win.dilations, 0, 1), d.DW = at(win.dilations, 1, 1);
  return d;
}

OpDesc describeConvSum(const std::vector<int64_t> &x,
                       const std::vector<int64_t> &x2,
                       const std::vector<int64_t> &w,
                       const std::vector<int64_t> &y,
                       const std::vector<int64_t> &strides,
                       const std::vector<int64_t> &strides2) {
  const std::vector<int64_t> w1{w[0], 1, 1, x[3]};
  OpDesc d = describeImplicitGemm(x, w1, y, Window{strides, {}, {}});
  d.IC2 = x2[3], d.IH2 = x2[1], d.IW2 = x2[2];
  d.SH2 = at(strides2, 0, 1), d.SW2 = at(strides2, 1, 1);
  d.C = d.IC + d.IC2;
  return d;
}

OpDesc describePool(const std::vector<int64_t> &x,
                    const std::vector<int64_t> &y,
                    const std::vector<int64_t> &kernel, const Window &win) {
  OpDesc d;
  d.kind = OpKind::Pool;
  d.K = y[1];
  setWindow(d, x, y, kernel, win);
  return d;
}

OpDesc describeMatMul(const std::vector<int64_t> &a,
                      const std::vector<int64_t> &b,
                      const std::vector<int64_t> &y, bool transA, bool transB) {
  int64_t m = a.size() >= 2 ? a[a.size() - (transA ? 1 : 2)] : 1;
  int64_t k = a.empty() ? 1 : a[a.size() - (transA ? 2 : 1)];
  int64_t n = b.size() >= 2 ? b[b.size() - (transB ? 2 : 1)] : 1;
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < y.size(); ++i)
    batch *= y[i];
  OpDesc d;
  d.kind = OpKind::MatMul;
  d.transA = transA, d.transB = transB;
  d.C = k;
  d.K = n;
  // Shared weights (B without batch axes): the batch is more rows of one
  // product; per-batch B (attention): independent products.
  if (b.size() <= 2) {
    d.N = m * batch;
  } else {
    d.N = m;
    d.batch = batch;
  }
  return d;
}

OpDesc describeElementwise(const std::vector<int64_t> &y, int inputs) {
  // The last three axes are K, H, W and the leading ones fold into N
  // (elementwise ops do not care which is which).
  int64_t v[4] = {1, 1, 1, 1};
  int r = int(y.size());
  for (int i = 0; i < r; ++i)
    v[std::max(0, 4 - r + i)] *= y[size_t(i)];
  OpDesc d;
  d.kind = OpKind::Elementwise;
  d.N = v[0], d.K = v[1], d.H = v[2], d.W = v[3];
  d.inputs = inputs;
  return d;
}

OpDesc describeRows(int64_t rows, int64_t length, double comp) {
  OpDesc d;
  d.kind = OpKind::Reduction;
  d.N = rows;
  d.C = length;
  d.compPerElement = comp;
  return d;
}

std::optional<PoolBox> poolBox(const OpDesc &pool, int64_t rows) {
  if (pool.kind != OpKind::Pool || pool.DH != 1 || pool.DW != 1)
    return std::nullopt;
  std::optional<PoolBox> best;
  for (int64_t th = 1; th <= pool.H; ++th) {
    const int64_t bh = (th - 1) * pool.SH + pool.FH;
    if (bh > rows)
      break;
    // The widest tile whose box fits in the rows.
    const int64_t bwMax = rows / bh;
    if (bwMax < pool.FW)
      break;
    const int64_t tw = std::min(pool.W, (bwMax - pool.FW) / pool.SW + 1);
    PoolBox b;
    b.tileH = th, b.tileW = tw;
    b.boxH = bh, b.boxW = (tw - 1) * pool.SW + pool.FW;
    b.tilesH = (pool.H + th - 1) / th, b.tilesW = (pool.W + tw - 1) / tw;
    const int64_t tiles = b.tilesH * b.tilesW;
    if (!best || tiles < best->tilesH * best->tilesW ||
        (tiles == best->tilesH * best->tilesW && tw > best->tileW))
      best = b;
  }
  return best;
}

PoolBox convBox(const OpDesc &conv, int64_t rows) {
  PoolBox best;
  int64_t bestTiles = 0, bestPixels = 0;
  for (int64_t h = 1; h <= std::min(conv.OH, rows); ++h) {
    // The same tiles in the smallest box: ragged tiles spread evenly.
    const int64_t tilesH = (conv.OH + h - 1) / h;
    const int64_t bh = (conv.OH + tilesH - 1) / tilesH;
    const int64_t tilesW = (conv.OW + rows / bh - 1) / (rows / bh);
    const int64_t bw = (conv.OW + tilesW - 1) / tilesW;
    const int64_t tiles = tilesH * tilesW;
    const int64_t pixels = ((bh - 1) * conv.SH + (conv.FH - 1) * conv.DH + 1) *
                           ((bw - 1) * conv.SW + (conv.FW - 1) * conv.DW + 1);
    if (bestTiles &&
        (tiles > bestTiles || (tiles == bestTiles && pixels >= bestPixels)))
      continue;
    bestTiles = tiles, bestPixels = pixels;
    best.tileH = best.boxH = bh, best.tileW = best.boxW = bw;
    best.tilesH = tilesH, best.tilesW = tilesW;
  }
  return best;
}

TileParams smallestParams(const OpDesc &d) {
  TileParams p;
  p.Cin = d.kind == OpKind::Reduction ? d.C : 1;
  if (d.kind == OpKind::Reduction && d.C > kMaxThreadRow)
    p.Wb = 32;
  return p;
}

} // namespace cuts

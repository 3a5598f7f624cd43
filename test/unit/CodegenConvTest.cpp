// Convolution kernels generated from DFGs run on the CPU through the
// CUDA-on-host harness and match a double-precision reference.
#include "CodegenTestUtil.h"
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/Conv.h"
#include "perfmodel/ParamSearch.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace cuts;
using namespace cuts::codegen;

namespace {

struct Case {
  test::ConvCase s;
  std::vector<EpilogueOp> epilogue;
};

// x, res and y are laid out as `layout` says (the weight, K x C/group x FH
// x FW, is K x FH x FW x 1 channels-last for a depthwise conv: the same).
double runAndCompare(const Kernel &k, const Case &c, uint32_t seed,
                     ImageLayout layout = {}) {
  const test::ConvCase &s = c.s;
  const auto xs = layout.strides(s.C, s.H, s.W);
  const auto ys = layout.strides(s.K, s.OH, s.OW);
  int64_t cw = s.C / s.group, kg = s.K / s.group;
  std::mt19937 rng(seed);
  auto fill = [&](size_t n) { return test::randomVector(rng, n); };
  size_t outN = size_t(s.N * s.K * s.OH * s.OW);
  std::vector<float> x = fill(s.N * s.C * s.H * s.W);
  std::vector<float> w = fill(s.K * cw * s.FH * s.FW);
  std::vector<float> bias = fill(s.K), res = fill(outN);
  std::vector<float> y = test::poisoned(outN);

  std::string err;
  bool ran = runOnHost(k,
                       {{"X", x.data()},
                        {"Wt", w.data()},
                        {"bias", bias.data()},
                        {"res", res.data()},
                        {"Y", y.data()}},
                       err);
  INFO(err);
  REQUIRE(ran);

  test::RelativeL2 error;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t o = 0; o < s.K; ++o)
      for (int64_t h = 0; h < s.OH; ++h)
        for (int64_t q = 0; q < s.OW; ++q) {
          double v = 0;
          for (int64_t c = 0; c < cw; ++c)
            for (int64_t fh = 0; fh < s.FH; ++fh)
              for (int64_t fw = 0; fw < s.FW; ++fw) {
                int64_t ih = h * s.SH - s.PH + fh * s.DH;
                int64_t iw = q * s.SW - s.PW + fw * s.DW;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W)
                  continue;
                int64_t ic = o / kg * cw + c;
                v += double(
                         x[n * xs[0] + ic * xs[1] + ih * xs[2] + iw * xs[3]]) *
                     double(w[((o * cw + c) * s.FH + fh) * s.FW + fw]);
              }
          size_t at = size_t(n * ys[0] + o * ys[1] + h * ys[2] + q * ys[3]);
          for (const EpilogueOp &e : c.epilogue) {
            if (e.op == dfg::Op::Add)
              v += e.operand == "bias" ? bias[o] : res[at];
            else if (e.op == dfg::Op::Relu)
              v = std::max(v, 0.0);
            else if (e.op == dfg::Op::Clip)
              v = std::min(std::max(v, e.value), e.value2);
          }
          error.add(y[at], v);
        }
  return error.value();
}

// The cheapest-to-run parameter set the model keeps for this conv.
TileParams keptParams(const test::ConvCase &s) {
  OpDesc d = s.desc();
  PruneOptions opts;
  opts.topPercent = 5;
  SearchResult r = searchParams(d, *findArch("h100"), opts);
  REQUIRE(!r.kept.empty());
  auto work = [](const TileParams &p) {
    return p.Nb * p.Kb * p.Hb * p.Wb * p.Cin;
  };
  TileParams best = r.kept.front().params;
  for (const Candidate &c : r.kept)
    if (work(c.params) < work(best))
      best = c.params;
  return best;
}

int formatIndex(const char *name) {
  for (size_t f = 0; f < sharedFormats().size(); ++f)
    if (formatName(int(f)) == name)
      return int(f);
  return 0;
}

} // namespace

TEST_CASE("generated convolution kernels match the reference on the CPU",
          "[codegen]") {
  std::vector<Case> cases = {
      // 3x3, pad 1, bias + relu (the conv + bias + relu chain)
      {test::convCase(2, 8, 9, 12, 3, 1, 1),
       {EpilogueOp::binary(dfg::Op::Add, "bias", {12}),
        EpilogueOp::unary(dfg::Op::Relu)}},
      // 1x1 stride 2 with a residual add
      {test::convCase(1, 16, 10, 8, 1, 2, 0),
       {EpilogueOp::binary(dfg::Op::Add, "res", {1, 8, 5, 5})}},
      // dilated 3x3
      {test::convCase(1, 4, 11, 6, 3, 1, 2, 2), {}},
      // depthwise 3x3 stride 2 + bias + clip(0, 6) (MobileNet's block)
      {test::convCase(1, 8, 9, 8, 3, 2, 1, 1, 8),
       {EpilogueOp::binary(dfg::Op::Add, "bias", {8}),
        EpilogueOp::unary(dfg::Op::Clip, 0.0, 6.0)}},
      // 2 groups of 4 inputs and 8 outputs, + bias (ResNeXt's 3x3)
      {test::convCase(2, 8, 7, 16, 3, 1, 1, 1, 2),
       {EpilogueOp::binary(dfg::Op::Add, "bias", {16})}},
      // a channel multiplier: 4 groups of one input and two outputs
      {test::convCase(1, 4, 6, 8, 3, 1, 1, 1, 4), {}},
  };
  uint32_t seed = 7;
  for (const Case &c : cases) {
    std::vector<TileParams> params{keptParams(c.s)};
    // A hand-picked tiling: several outputs per thread along every axis,
    // C_input < C (a looped op), a transposed shared layout.
    TileParams t;
    t.Nb = 1, t.Kb = 4, t.Hb = 4, t.Wb = 4;
    t.Nt = 1, t.Kt = 2, t.Ht = 2, t.Wt = 2;
    t.Cin = std::min<int64_t>(2, c.s.C / c.s.group);
    t.Kb = std::min<int64_t>(4, c.s.K / c.s.group);
    t.Kt = std::min<int64_t>(2, t.Kb);
    t.format = formatIndex("HWCN");
    params.push_back(t);
    for (const TileParams &p : params) {
      std::string err;
      auto k = buildConv("conv_test", c.s.desc(), p, c.epilogue, err);
      INFO(err);
      REQUIRE(k);
      INFO("block " << p.Nb << "x" << p.Kb << "x" << p.Hb << "x" << p.Wb
                    << " thread " << p.Nt << "x" << p.Kt << "x" << p.Ht << "x"
                    << p.Wt << " Cin " << p.Cin << " format "
                    << formatName(p.format));
      CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
      if (&p == &params.back()) { // the prefetching variant of the loop
        k->prefetch = true;
        CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
      }
    }
  }
}

TEST_CASE("channels-last depthwise convs match the reference on the CPU",
          "[codegen]") {
  // MobileNet's stride-2 and stride-1 3x3 blocks with bias + clip, every
  // tensor channels innermost (x N x H x W x C, w K x 3 x 3 x 1).
  for (const test::ConvCase &s :
       {test::convCase(2, 24, 9, 24, 3, 2, 1, 1, 24),
        test::convCase(1, 16, 7, 16, 3, 1, 1, 1, 16)}) {
    OpDesc d = s.desc();
    d.channelsLast = true;
    const std::vector<EpilogueOp> epi = {
        EpilogueOp::binary(dfg::Op::Add, "bias", {s.K}),
        EpilogueOp::unary(dfg::Op::Clip, 0.0, 6.0)};
    TileParams t;
    t.Nb = 1, t.Kb = 8, t.Hb = 2, t.Wb = 4;
    t.Nt = 1, t.Kt = 2, t.Ht = 1, t.Wt = 2;
    for (const TileParams &p : {keptParams(s), t}) {
      std::string err;
      auto k = buildConv("dw_nhwc", d, p, epi, err);
      INFO(err);
      REQUIRE(k);
      CHECK(runAndCompare(*k, {s, epi}, 11, ImageLayout{true}) <= 1e-5);
    }
  }
}

TEST_CASE("a body past kMaxUnrolledFma loops over its C_input slice",
          "[codegen]") {
  // 16-channel slices; 32 outputs a thread x 9 taps is 288 FMAs a channel:
  // 2-channel chunks; 8 outputs: 8-channel chunks, which with C innermost
  // (NHWC, 16 words unpadded) are 128-bit loads along the loop's axis.
  Case c{test::convCase(1, 64, 8, 8, 3, 1, 1),
         {EpilogueOp::binary(dfg::Op::Add, "bias", {8})}};
  uint32_t seed = 40;
  for (int64_t ht : {4, 1})
    for (const char *format : {"NCHW", "NHWC"}) {
      TileParams p;
      p.Nb = 1, p.Kb = 4, p.Hb = 4, p.Wb = 8;
      p.Nt = 1, p.Kt = 4, p.Ht = ht, p.Wt = 2;
      p.Cin = 16;
      p.format = formatIndex(format);
      std::string err;
      auto k = buildConv("conv_chunks", c.s.desc(), p, c.epilogue, err);
      INFO(err << " Ht " << ht << " format " << format);
      REQUIRE(k);
      int64_t fma = p.Nt * p.Kt * p.Ht * p.Wt * 9;
      CHECK(k->bodyStep == (ht == 4 ? 2 : 8));
      CHECK(k->bodyStep * fma <= kMaxUnrolledFma);
      std::string src = emitSource(*k);
      CHECK(src.find("for (int ci = 0; ci < 16; ci += " +
                     std::to_string(k->bodyStep) + ")") != std::string::npos);
      if (ht == 1 && std::string(format) == "NHWC")
        CHECK(src.find("const float4 Xs_") != std::string::npos);
      CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
      k->prefetch = true;
      CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
    }
}

TEST_CASE("a channel past kMaxBodyDfgFma loops over its filter rows",
          "[codegen]") {
  // A 16x16 patch embedding, 2 outputs a thread: 512 FMAs a channel, 8 rows
  // a DFG; a 9x9 filter dilated by 2, 4 outputs: 324 FMAs, 3 rows a DFG,
  // each row 2 input rows down.
  struct Tap {
    test::ConvCase s;
    int64_t wt, cin, rows;
  };
  const Tap taps[] = {{test::convCase(1, 3, 64, 8, 16, 16, 0), 2, 3, 8},
                      {test::convCase(1, 4, 20, 4, 9, 1, 8, 2), 4, 2, 3}};
  uint32_t seed = 80;
  for (const Tap &t : taps)
    for (const char *format : {"NCHW", "NHWC"}) {
      Case c{t.s, {EpilogueOp::binary(dfg::Op::Add, "bias", {t.s.K})}};
      TileParams p;
      p.Nb = 1, p.Kb = 2, p.Hb = 2, p.Wb = 2 * t.wt;
      p.Nt = 1, p.Kt = 1, p.Ht = 1, p.Wt = t.wt;
      p.Cin = t.cin;
      p.format = formatIndex(format);
      std::string err;
      auto k = buildConv("conv_taps", c.s.desc(), p, c.epilogue, err);
      INFO(err << " filter " << t.s.FH << " format " << format);
      REQUIRE(k);
      CHECK(k->bodyStep == 1);
      CHECK(k->tapStep == t.rows);
      std::string src = emitSource(*k);
      CHECK(src.find("for (int fr = 0; fr < " + std::to_string(t.s.FH) +
                     "; fr += " + std::to_string(t.rows) + ")") !=
            std::string::npos);
      CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
      k->prefetch = true;
      CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
    }
}

TEST_CASE("a large thread tile sweeps its positions in loops", "[codegen]") {
  // 2 x 4 x 2 x 4 outputs a thread x 9 taps: 576 FMAs a channel. The DFGs
  // hold spans of 4 along W (the input tile's and the output's unit axis,
  // NCHW; stride 1) and of 1 elsewhere; with stride 2 the span along W is
  // the output's stores'.
  uint32_t seed = 60;
  for (int64_t stride : {1, 2})
    for (const char *format : {"NCHW", "NHWC"}) {
      Case c{test::convCase(2, 16, 10, 8, 3, stride, 1),
             {EpilogueOp::binary(dfg::Op::Add, "bias", {8}),
              EpilogueOp::binary(dfg::Op::Add, "res",
                                 {2, 8, 10 / stride, 10 / stride}),
              EpilogueOp::unary(dfg::Op::Relu)}};
      TileParams p;
      p.Nb = 2, p.Kb = 8, p.Hb = 4, p.Wb = 8;
      p.Nt = 2, p.Kt = 4, p.Ht = 2, p.Wt = 4;
      p.Cin = 8;
      p.format = formatIndex(format);
      std::string err;
      auto k = buildConv("conv_loops", c.s.desc(), p, c.epilogue, err);
      INFO(err << " stride " << stride << " format " << format);
      REQUIRE(k);
      const PositionLoop &l = k->positions;
      CHECK(l.span[dfg::DimW] == 4);
      CHECK(l.count[dfg::DimN] == 2);
      CHECK(l.count[dfg::DimK] == 4);
      CHECK(l.count[dfg::DimH] == 2);
      CHECK(k->accumulators.size() == 4);
      std::string src = emitSource(*k);
      CHECK(src.find("for (int lv_k = 0; lv_k < 4; ++lv_k)") !=
            std::string::npos);
      CHECK(src.find("[(lv_n * 4 + lv_k) * 2 + lv_h]") != std::string::npos);
      CHECK(src.size() < 32 * 1024);
      CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
      k->prefetch = true;
      CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
    }
}

TEST_CASE("every ResNet-50 batch-64 conv kernel the search keeps is under "
          "64 KB of source",
          "[codegen]") {
  // The 7x7 stem, a 3x3 and a 1x1 of the first stage, the strided 3x3 of
  // the second: register tiles up to kMaxUnrolledFma FMAs a channel.
  for (const test::ConvCase &s : {test::convCase(64, 3, 224, 64, 7, 2, 3),
                                  test::convCase(64, 64, 56, 64, 3, 1, 1),
                                  test::convCase(64, 256, 56, 64, 1, 1, 0),
                                  test::convCase(64, 128, 56, 128, 3, 2, 1)}) {
    SearchResult r = searchParams(s.desc(), *findArch("h100"), {});
    REQUIRE(!r.kept.empty());
    size_t largest = 0;
    for (const Candidate &c : r.kept) {
      std::string err;
      auto k = buildConv("conv", s.desc(), c.params,
                         {EpilogueOp::binary(dfg::Op::Add, "bias", {s.K}),
                          EpilogueOp::unary(dfg::Op::Relu)},
                         err);
      INFO(err << " " << paramsText(c.params));
      REQUIRE(k);
      largest = std::max(largest, emitSource(*k).size());
    }
    INFO(s.C << " -> " << s.K << ", " << s.FH << "x" << s.FW << ": "
             << r.kept.size() << " sets");
    CHECK(largest <= 64 * 1024);
  }
}

TEST_CASE("a ResNet-50 3x3 conv compiles with NVRTC", "[codegen]") {
  test::ConvCase s = test::convCase(1, 64, 56, 64, 3, 1, 1);
  TileParams p;
  p.Nb = 1, p.Kb = 16, p.Hb = 8, p.Wb = 8;
  p.Nt = 1, p.Kt = 4, p.Ht = 2, p.Wt = 2;
  p.Cin = 8;
  std::string err;
  auto k = buildConv("conv3x3_bias_relu", s.desc(), p,
                     {EpilogueOp::binary(dfg::Op::Add, "bias", {64}),
                      EpilogueOp::unary(dfg::Op::Relu)},
                     err);
  REQUIRE(k);
  std::string src = emitSource(*k);
  // The weights' C_input x 3 x 3 run of each output channel is contiguous
  // in tensor and tile: one axis, fetched in quads without checks; the
  // input's rows and columns are checked (padding), its channels not.
  CHECK(src.find("*reinterpret_cast<const float4 *>(Wt + g0 * 576 + g1 * 1)") !=
        std::string::npos);
  CHECK(src.find("(g2 >= 0 && g2 < 56 && g3 >= 0 && g3 < 56) ? X[") !=
        std::string::npos);
  CHECK(runAndCompare(*k,
                      {s,
                       {EpilogueOp::binary(dfg::Op::Add, "bias", {64}),
                        EpilogueOp::unary(dfg::Op::Relu)}},
                      77) <= 1e-5);
  for (const char *arch : {"sm_80", "sm_90"}) {
    auto r = compileWithNvrtc(src, arch, err);
    INFO(err);
    REQUIRE(r);
    const KernelResources *res = r->find("conv3x3_bias_relu");
    REQUIRE(res);
    // ptxas's report is recorded, whatever it says: registers within the
    // hardware limit, spills and shared memory read back.
    CHECK(res->registers > 0);
    CHECK(res->registers <= 255);
    CHECK(res->spillStoreBytes >= 0);
    CHECK(res->sharedBytes == 0); // the tiles are dynamic shared memory
  }
}

TEST_CASE("a grouped conv's parameter sets keep a block in one group",
          "[codegen]") {
  // 2 groups of 12 outputs (RegNet's group widths are not powers of two):
  // no set the search enumerates has a block straddling two groups, and
  // the kept ones build.
  test::ConvCase s = test::convCase(1, 24, 7, 24, 3, 1, 1, 1, 2);
  OpDesc d = s.desc();
  int64_t sets = 0, straddling = 0;
  forEachParams(d, *findArch("h100"), [&](const TileParams &p) {
    ++sets;
    straddling += 12 % p.Kb != 0;
  });
  CHECK(sets > 0);
  CHECK(straddling == 0);
  PruneOptions opts;
  SearchResult r = searchParams(d, *findArch("h100"), opts);
  REQUIRE(!r.kept.empty());
  std::string err;
  for (const Candidate &c : r.kept) {
    INFO(err);
    CHECK(buildConv("grouped", d, c.params, {}, err));
  }
}

TEST_CASE("convolutions the generator does not cover are rejected",
          "[codegen]") {
  std::string err;
  TileParams p;
  // A block straddling two groups' output channels.
  p.Kb = 4;
  CHECK(!buildConv("grouped", test::convCase(1, 8, 8, 12, 3, 1, 1, 1, 2).desc(),
                   p, {}, err));
  CHECK(err.find("one group") != std::string::npos);
  p.Kb = 1;
  p.Cin = 3;
  CHECK(!buildConv("cin", test::convCase(1, 8, 8, 8, 3, 1, 1).desc(), p, {},
                   err));
}

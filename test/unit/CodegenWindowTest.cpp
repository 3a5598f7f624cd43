// Channels-last poolings and depthwise convs as channel vectors (one
// 16-byte load of a pixel's channels at a time), run on the CPU against a
// double-precision reference: fp32 (4 channels a load) and fp16 (8), ragged
// pixel and channel blocks, several pixels a thread.
#include "CodegenTestUtil.h"
#include "Half.h"
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/Window.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>

using namespace cuts;
using namespace cuts::codegen;
using Reduce = ChannelVectorLoop::Reduce;

namespace {

struct WindowCase {
  int64_t N, C, HW, F, S, P;
  Reduce reduce;
  bool half;
  int64_t Kb, Wt, Wb, Hb;
};

TileParams vectorParams(const OpDesc &d, const WindowCase &c) {
  TileParams p;
  p.Nb = p.Nt = p.Ht = 1;
  p.Kt = d.channelVector(), p.Kb = c.Kb;
  p.Wt = c.Wt, p.Wb = c.Wb, p.Hb = c.Hb;
  return p;
}

} // namespace

TEST_CASE("channels-last window ops run as channel vectors on the CPU",
          "[codegen]") {
  const std::vector<WindowCase> cases = {
      // ResNet's stem max pool, 2 pixels a thread; ragged W blocks.
      {2, 16, 9, 3, 2, 1, Reduce::Max, false, 16, 2, 4, 2},
      // Average without the padding, 4 pixels a thread, ragged channels
      // (24 in blocks of 16).
      {1, 24, 7, 3, 1, 1, Reduce::Average, false, 16, 4, 8, 1},
      // Average 2x2 stride 2, fp16 (8 channels a load).
      {1, 16, 8, 2, 2, 0, Reduce::AverageWithPad, true, 16, 1, 4, 2},
      // MobileNet's depthwise convs in fp16: stride 1 and 2.
      {2, 32, 9, 3, 1, 1, Reduce::Depthwise, true, 32, 4, 8, 2},
      {1, 24, 10, 3, 2, 1, Reduce::Depthwise, true, 16, 2, 2, 4},
  };
  uint32_t seed = 5;
  for (const WindowCase &c : cases) {
    const bool dw = c.reduce == Reduce::Depthwise;
    const int64_t N = c.N, C = c.C, H = c.HW, F = c.F;
    const int64_t O = (H + 2 * c.P - F) / c.S + 1;
    const Window win{{c.S, c.S}, {c.P, c.P, c.P, c.P}, {1, 1}};
    OpDesc d =
        dw ? describeConv({N, C, H, H}, {C, 1, F, F}, {N, C, O, O}, C, win)
           : describePool({N, C, H, H}, {N, C, O, O}, {F, F}, win);
    d.channelsLast = true;
    d.elementBytes = c.half ? 2 : 4;
    std::vector<EpilogueOp> epi;
    if (dw)
      epi = {EpilogueOp::binary(dfg::Op::Add, "bias", {C}),
             EpilogueOp::unary(dfg::Op::Relu)};
    std::string err;
    auto k = buildChannelVectors("window_test", d, c.reduce, vectorParams(d, c),
                                 epi, err);
    INFO(err);
    REQUIRE(k);
    std::mt19937 rng(seed++);
    std::vector<float> xv(N * H * H * C), wv(C * F * F);
    std::vector<uint16_t> xh(xv.size()), wh(wv.size()), yh(N * O * O * C);
    std::vector<float> y = test::poisoned(yh.size());
    std::vector<float> bias = test::randomVector(rng, C);
    std::map<std::string, void *> buffers{{"bias", bias.data()}};
    if (c.half) {
      test::random16(rng, false, xh, xv);
      test::random16(rng, false, wh, wv);
      for (const char *t : {"X", "Wt", "Y"})
        setTensorType(*k, t, dfg::Type::F16);
      buffers.insert({{"X", xh.data()}, {"Wt", wh.data()}, {"Y", yh.data()}});
    } else {
      xv = test::randomVector(rng, xv.size());
      wv = test::randomVector(rng, wv.size());
      buffers.insert({{"X", xv.data()}, {"Wt", wv.data()}, {"Y", y.data()}});
    }
    if (!dw)
      buffers.erase("Wt"), buffers.erase("bias");
    REQUIRE(runOnHost(*k, buffers, err));
    test::RelativeL2 e;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < O; ++oh)
        for (int64_t ow = 0; ow < O; ++ow)
          for (int64_t ch = 0; ch < C; ++ch) {
            double acc = c.reduce == Reduce::Max ? -INFINITY : 0.0;
            int inside = 0;
            for (int64_t r = 0; r < F; ++r)
              for (int64_t s = 0; s < F; ++s) {
                const int64_t ih = oh * c.S - c.P + r, iw = ow * c.S - c.P + s;
                if (ih < 0 || ih >= H || iw < 0 || iw >= H)
                  continue;
                const double x = xv[((n * H + ih) * H + iw) * C + ch];
                ++inside;
                acc = c.reduce == Reduce::Max ? std::max(acc, x)
                      : dw ? acc + x * wv[(ch * F + r) * F + s]
                           : acc + x;
              }
            if (c.reduce == Reduce::Average)
              acc /= inside;
            if (c.reduce == Reduce::AverageWithPad)
              acc /= double(F * F);
            if (dw)
              acc = std::max(acc + bias[ch], 0.0);
            const size_t at = size_t(((n * O + oh) * O + ow) * C + ch);
            e.add(c.half ? test::halfValue(yh[at]) : y[at], acc);
          }
    INFO("N " << N << " C " << C << " " << H << "x" << H << " window " << F
              << " stride " << c.S);
    CHECK(e.value() <= (c.half ? 2e-3 : 1e-6));
    // Compiles for both architectures, without spilling.
    REQUIRE(nvrtcAvailable()); // the tests build with the CUDA toolkit
    for (const char *arch : {"sm_80", "sm_90"}) {
      auto r = compileWithNvrtc(emitSource(*k), arch, err);
      INFO(arch << ": " << err);
      REQUIRE(r);
      const KernelResources *res = r->find(k->name);
      REQUIRE(res);
      CHECK(res->spillStoreBytes == 0);
    }
  }
}

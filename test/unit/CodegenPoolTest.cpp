// Max and average pooling kernels generated from DFGs, run on the CPU
// against a double-precision reference (padding: -inf for max; for average
// with and without the padded positions in the divisor).
#include "CodegenTestUtil.h"
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/Pool.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

using namespace cuts;
using namespace cuts::codegen;

namespace {

test::PoolCase pool(int64_t n, int64_t c, int64_t hw, int64_t f, int64_t s,
                    int64_t pad, bool max, bool includePad = false) {
  test::PoolCase p;
  p.N = n, p.C = c, p.H = p.W = hw, p.FH = p.FW = f, p.SH = p.SW = s;
  p.PH = p.PW = pad, p.max = max, p.countIncludePad = includePad;
  p.OH = p.OW = (hw + 2 * pad - f) / s + 1;
  return p;
}

// x and y laid out as `layout` says.
double runAndCompare(const Kernel &k, const test::PoolCase &s, uint32_t seed,
                     ImageLayout layout = {}) {
  const auto xs = layout.strides(s.C, s.H, s.W);
  const auto ys = layout.strides(s.C, s.OH, s.OW);
  std::mt19937 rng(seed);
  std::vector<float> x = test::randomVector(rng, s.N * s.C * s.H * s.W);
  std::vector<float> y = test::poisoned(size_t(s.N * s.C * s.OH * s.OW));
  std::string err;
  bool ran = runOnHost(k, {{"X", x.data()}, {"Y", y.data()}}, err);
  INFO(err);
  REQUIRE(ran);
  test::RelativeL2 error;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t h = 0; h < s.OH; ++h)
        for (int64_t w = 0; w < s.OW; ++w) {
          double acc = s.max ? -INFINITY : 0.0;
          int count = 0;
          for (int64_t fh = 0; fh < s.FH; ++fh)
            for (int64_t fw = 0; fw < s.FW; ++fw) {
              int64_t ih = h * s.SH - s.PH + fh, iw = w * s.SW - s.PW + fw;
              if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W)
                continue;
              double v = x[n * xs[0] + c * xs[1] + ih * xs[2] + iw * xs[3]];
              acc = s.max ? std::max(acc, v) : acc + v;
              ++count;
            }
          if (!s.max)
            acc /= s.countIncludePad ? double(s.FH * s.FW) : double(count);
          error.add(y[n * ys[0] + c * ys[1] + h * ys[2] + w * ys[3]], acc);
        }
  return error.value();
}

} // namespace

TEST_CASE("generated pooling kernels match the reference on the CPU",
          "[codegen]") {
  std::vector<test::PoolCase> shapes = {
      pool(1, 8, 12, 3, 2, 1, true),        // ResNet's stem max pool
      pool(2, 4, 9, 3, 1, 1, false, false), // average, padding excluded
      pool(1, 6, 8, 2, 2, 0, false, true),  // average 2x2
      pool(1, 16, 7, 7, 1, 0, false, true), // a global average pool
  };
  TileParams p;
  p.Nb = 1, p.Kb = 4, p.Hb = 4, p.Wb = 4;
  p.Nt = 1, p.Kt = 2, p.Ht = 2, p.Wt = 1;
  uint32_t seed = 11;
  for (const test::PoolCase &s : shapes) {
    std::string err;
    auto k = buildPool("pool_test", s.desc(), s.pooling(), p, {}, err);
    INFO(err);
    REQUIRE(k);
    CHECK(runAndCompare(*k, s, seed++) <= 1e-6);
    auto r = compileWithNvrtc(emitSource(*k), "sm_90", err);
    INFO(err);
    CHECK(r);
  }
}

TEST_CASE("channels-last pooling kernels match the reference on the CPU",
          "[codegen]") {
  // ResNet's 3x3 stride-2 max pool after its stem, and an average pool
  // that excludes the padding, on x N x H x W x C into y N x OH x OW x C.
  for (const test::PoolCase &s :
       {pool(2, 16, 9, 3, 2, 1, true), pool(1, 24, 7, 3, 1, 1, false)}) {
    OpDesc d = s.desc();
    d.channelsLast = true;
    TileParams t;
    t.Nb = 1, t.Kb = 8, t.Hb = 2, t.Wb = 2;
    t.Nt = 1, t.Kt = 2, t.Ht = 1, t.Wt = 1;
    std::string err;
    auto k = buildPool("pool_nhwc", d, s.pooling(), t, {}, err);
    INFO(err);
    REQUIRE(k);
    CHECK(runAndCompare(*k, s, 3, ImageLayout{true}) <= 1e-6);
  }
}

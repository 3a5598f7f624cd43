// ScaleDNN's 3:1 weight compression: the scalar reference
// (runtime/internal/cuts/rt/Compress.h) on random and adversarial values,
// and the GPU kernels (codegen/emit/Compress.h) run on the CPU harness
// against it, bit for bit.
#include "codegen/emit/Compress.h"
#include "codegen/emit/HostCompile.h"
#include "codegen/emit/Nvrtc.h"
#include "cuts/rt/Compress.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

using namespace cuts;
using namespace cuts::rt;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Weight-like values (normal, deviation 0.05) with the hard cases mixed
/// in: zeros, denormals, infinities, NaN, values outside both bases, exact
/// powers of two, and groups whose three values straddle the two bases.
std::vector<float> mixedValues(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> w(0.f, 0.05f);
  const float hard[] = {0.f,
                        -0.f,
                        std::numeric_limits<float>::denorm_min(),
                        -1e-40f,
                        std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(),
                        2.f,
                        -3.5f,
                        1e30f,
                        1.f,
                        0.5f,
                        -0.25f,
                        std::ldexp(1.f, -31),
                        std::ldexp(1.f, -32),
                        1.9999999f,
                        1e-6f};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = rng() % 7 == 0 ? hard[rng() % (sizeof hard / sizeof *hard)] : w(rng);
  return v;
}

// The value a packed field restores: the lower 18 mantissa bits cleared.
float truncated(float x) { return fromBits(bits(x) & ~0x3ffffu); }

} // namespace

TEST_CASE("3:1 compression packs three values of one base per word",
          "[compress]") {
  float v[3] = {0.75f, -0.01f, 1.5f}, back[3];
  uint32_t w = 0;
  REQUIRE(packGroup(v, w));
  CHECK((w & kEscapeBit) == 0);
  CHECK((w & kBaseFlagBit) != 0); // exponents 0111xxxx
  unpackGroup(w, back);
  for (int i = 0; i < 3; ++i)
    CHECK(bits(back[i]) == bits(truncated(v[i])));
  float low[3] = {1e-5f, -2e-6f, 3e-7f}; // 0110xxxx
  REQUIRE(packGroup(low, w));
  CHECK((w & kBaseFlagBit) == 0);
  float mixed[3] = {0.5f, 1e-6f, 0.5f}; // one of each base: escapes
  CHECK_FALSE(packGroup(mixed, w));
  for (float x : {0.f, 2.f, std::ldexp(1.f, -32), INFINITY, NAN}) {
    float g[3] = {0.5f, x, 0.5f};
    CHECK_FALSE(packGroup(g, w));
  }
}

TEST_CASE("3:1 compression round-trips: packed values truncated, escaped "
          "ones exact",
          "[compress]") {
  for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(1000),
                   size_t(30001), size_t(30002)}) {
    INFO("n " << n);
    std::vector<float> x = mixedValues(n, unsigned(n));
    Compressed3to1 c = compress3to1(x.data(), n);
    CHECK(c.words.size() == (n + 2) / 3);
    std::vector<float> y(n, 42.f);
    REQUIRE(decompress3to1(c, y.data()));
    for (size_t g = 0; g < c.words.size(); ++g)
      for (size_t i = g * 3; i < std::min(n, g * 3 + 3); ++i) {
        INFO("value " << i << " " << x[i]);
        // An escaped group keeps every bit, NaN's too.
        uint32_t want =
            c.words[g] & kEscapeBit ? bits(x[i]) : bits(truncated(x[i]));
        CHECK(bits(y[i]) == want);
      }
  }
  // Weight-like values: about 3x fewer bytes, error under 2^-5 of each.
  std::vector<float> x(300000);
  std::mt19937 rng(1);
  std::normal_distribution<float> w(0.f, 0.05f);
  for (float &v : x)
    v = w(rng);
  Compressed3to1 c = compress3to1(x.data(), x.size());
  const double ratio = double(4 * x.size()) / double(c.bytes());
  CHECK(ratio > 2.95);
  std::vector<float> y(x.size());
  REQUIRE(decompress3to1(c, y.data()));
  ReconstructionError e = reconstructionError(x.data(), y.data(), x.size());
  CHECK(e.relL2 < 1.0 / 32);
  CHECK(e.relL2 > 1.0 / 256); // truncation's error, not none
  for (size_t i = 0; i < x.size(); ++i)
    CHECK(std::fabs(y[i] - x[i]) <= std::fabs(x[i]) / 32);
}

TEST_CASE("3:1 decompression rejects words and side arrays that do not fit",
          "[compress]") {
  std::vector<float> x = {0.f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  Compressed3to1 c = compress3to1(x.data(), x.size());
  REQUIRE(c.side.size() == 3);
  std::vector<float> y(6);
  Compressed3to1 bad = c;
  bad.words[0] = kEscapeBit | 5; // a side slot that is not there
  CHECK_FALSE(decompress3to1(bad, y.data()));
  bad = c;
  bad.count = 7; // a word short
  CHECK_FALSE(decompress3to1(bad, y.data()));
}

TEST_CASE("3:1 compression kernels run on the CPU as the reference does",
          "[compress]") {
  std::string err;
  const std::string src = codegen::compress3to1Source();
  if (nvrtcAvailable()) { // and for the GPU
    auto r = compileWithNvrtc(src, "sm_90", err);
    INFO(err);
    CHECK(r);
  }
  auto pack = compileForHost(
      src,
      KernelSignature{"cuts_compress3to1",
                      {{"x", "const float *__restrict__"},
                       {"n", "unsigned long long"},
                       {"words", "unsigned *__restrict__"},
                       {"side", "float *__restrict__"},
                       {"side_groups", "unsigned *__restrict__"}}},
      err);
  INFO(err);
  REQUIRE(pack);
  auto unpack =
      compileForHost(src,
                     KernelSignature{"cuts_decompress3to1",
                                     {{"words", "const unsigned *__restrict__"},
                                      {"side", "const float *__restrict__"},
                                      {"n", "unsigned long long"},
                                      {"out", "float *__restrict__"}}},
                     err);
  REQUIRE(unpack);
  // Aligned inputs take float4 loads; `skew` misaligns them (scalar loads).
  for (auto [n, skew] : {std::pair<size_t, size_t>{1, 0},
                         {5, 0},
                         {768, 0},
                         {4097, 0},
                         {4097, 1},
                         {3 * 1024 * 3 + 2, 0}}) {
    INFO("n " << n << " skew " << skew);
    std::vector<float> held = mixedValues(n + skew, 7 + unsigned(n));
    std::vector<float> x(held.begin() + long(skew), held.end());
    Compressed3to1 ref = compress3to1(x.data(), n);
    const size_t groups = (n + 2) / 3;
    std::vector<uint32_t> words(groups, 0);
    std::vector<float> side(3 * groups, 0.f);
    unsigned sideGroups = 0;
    // Fewer threads than groups: the grid-stride loop takes the rest.
    REQUIRE(pack->launch(
        {3, 1, 1}, {64, 1, 1},
        {KernelArg::buffer(held.data() + skew), KernelArg::scalar(int64_t(n)),
         KernelArg::buffer(words.data()), KernelArg::buffer(side.data()),
         KernelArg::buffer(&sideGroups)},
        err));
    CHECK(sideGroups * 3 == ref.side.size());
    for (size_t g = 0; g < groups; ++g)
      if (!(ref.words[g] & kEscapeBit))
        CHECK(words[g] == ref.words[g]);
      else
        CHECK((words[g] & kEscapeBit) != 0);
    std::vector<float> y(n, 42.f), want(n);
    REQUIRE(unpack->launch(
        {2, 1, 1}, {32, 1, 1},
        {KernelArg::buffer(words.data()), KernelArg::buffer(side.data()),
         KernelArg::scalar(int64_t(n)), KernelArg::buffer(y.data())},
        err));
    REQUIRE(decompress3to1(ref, want.data()));
    for (size_t i = 0; i < n; ++i) {
      INFO("value " << i << " " << x[i]);
      CHECK(bits(y[i]) == bits(want[i]));
    }
  }
}

// ScaleDNN's 3:1 weight compression: the scalar reference
// (runtime/internal/cuts/rt/Compress.h) on random and adversarial values,
// and the GPU kernels (codegen/emit/Compress.h) run on the CPU harness
// against it, bit for bit.
#include "codegen/emit/Compress.h"
#include "codegen/emit/HostCompile.h"
#include "codegen/emit/Nvrtc.h"
#include "cuts/rt/Compress.h"
#include "cuts/rt/WeightCodec.h"

#include <catch2/catch.hpp>

#include <algorithm>
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

namespace {

/// A weights section as a device list sends it: fp32 weights of awkward
/// sizes (one value, a partial group, more than a tile, one misaligned)
/// with int64 bytes between, and `small` more of five values (past the
/// kernels' shared-memory table at 256 ranges); its codec ranges, layout
/// and table.
struct Section {
  Artifact a;
  std::vector<uint8_t> bytes;
  CodecRanges ranges;
  StagingLayout layout;
  std::vector<CodecTableEntry> table;
  uint64_t items = 0;

  explicit Section(WeightCodec codec, int small = 0) {
    Manifest &m = a.manifest;
    uint64_t at = 0;
    auto weight = [&](int64_t n, const char *dtype, uint64_t align) {
      at = (at + align - 1) / align * align;
      Tensor t;
      t.name = "w" + std::to_string(m.tensors.size());
      t.shape = {n};
      t.dtype = dtype;
      t.kind = TensorKind::Weight;
      t.weightOffset = at;
      m.tensors.push_back(t);
      at += t.bytes();
    };
    for (int64_t n : {1, 5, 768, 4097})
      weight(n, "float32", 256);
    weight(3, "int64", 256);
    weight(3 * 1024 * 3 + 2, "float32", 4); // not 16-byte aligned
    weight(64, "float32", 256);
    for (int i = 0; i < small; ++i)
      weight(5, "float32", 16);
    bytes.assign(at, 0);
    std::vector<float> v = mixedValues(at / 4, unsigned(at));
    std::memcpy(bytes.data(), v.data(), at / 4 * 4);
    ranges = codecRanges(a);
    layout = stagingLayout(ranges, codec);
    table = codecTable(ranges, layout, codec, items);
  }
};

KernelSignature codecSignature(const std::string &name) {
  const std::string range = "const cuts_codec_range *__restrict__";
  if (name == "cuts_compress3to1")
    return {name,
            {{"weights", "const unsigned char *__restrict__"},
             {"staging", "unsigned char *__restrict__"},
             {"ranges", range},
             {"count", "unsigned"},
             {"items", "unsigned long long"},
             {"side_groups", "unsigned *__restrict__"},
             {"side_capacity", "unsigned"},
             {"side_offset", "unsigned long long"}}};
  if (name == "cuts_decompress3to1")
    return {name,
            {{"staging", "const unsigned char *__restrict__"},
             {"weights", "unsigned char *__restrict__"},
             {"ranges", range},
             {"count", "unsigned"},
             {"items", "unsigned long long"},
             {"side_offset", "unsigned long long"}}};
  const bool encode = name == "cuts_truncate_bf16";
  return {
      name,
      {{encode ? "weights" : "staging", "const unsigned char *__restrict__"},
       {encode ? "staging" : "weights", "unsigned char *__restrict__"},
       {"ranges", range},
       {"count", "unsigned"},
       {"items", "unsigned long long"}}};
}

/// Launches a codec kernel of the CPU harness over the section's table
/// (copied into `staging` at its offset, as the runtime does).
void runCodec(const std::string &name, const Section &c,
              std::vector<uint8_t> &staging, const void *from, void *to,
              std::vector<KernelArg> extra, Dim3 grid, Dim3 block) {
  std::string err;
  auto k =
      compileForHost(codegen::weightCodecSource(), codecSignature(name), err);
  INFO(err);
  REQUIRE(k);
  std::memcpy(staging.data() + c.layout.table, c.table.data(),
              c.table.size() * sizeof(CodecTableEntry));
  std::vector<KernelArg> args = {
      KernelArg::buffer(from), KernelArg::buffer(to),
      KernelArg::buffer(staging.data() + c.layout.table),
      KernelArg::scalar(int64_t(c.table.size())),
      KernelArg::scalar(int64_t(c.items))};
  args.insert(args.end(), extra.begin(), extra.end());
  REQUIRE(k->launch(grid, block, args, err));
}

} // namespace

TEST_CASE("3:1 compression kernels run on the CPU as the reference does, "
          "over a table of weight ranges",
          "[compress]") {
  std::string err;
  if (nvrtcAvailable()) { // and for the GPU
    auto r = compileWithNvrtc(codegen::weightCodecSource(), "sm_90", err);
    INFO(err);
    CHECK(r);
  }
  const int small = GENERATE(0, 300);
  const Section c(WeightCodec::ThreeToOne, small);
  REQUIRE(c.ranges.packed.size() == 6 + size_t(small));
  REQUIRE(c.ranges.raw.size() == 1);
  std::vector<uint8_t> staging(c.layout.bytes(c.items), 0);
  unsigned sideGroups = 0;
  // Fewer threads than groups: the grid-stride loop takes the rest.
  runCodec("cuts_compress3to1", c, staging, c.bytes.data(), staging.data(),
           {KernelArg::buffer(&sideGroups), KernelArg::scalar(int64_t(c.items)),
            KernelArg::scalar(int64_t(c.layout.side))},
           {3, 1, 1}, {64, 1, 1});
  size_t escaped = 0;
  for (size_t i = 0; i < c.ranges.packed.size(); ++i) {
    const ByteRange &r = c.ranges.packed[i];
    const Compressed3to1 ref =
        compress3to1(reinterpret_cast<const float *>(c.bytes.data() + r.offset),
                     r.bytes / 4);
    escaped += ref.side.size() / 3;
    const uint32_t *words =
        reinterpret_cast<const uint32_t *>(staging.data() + c.layout.packed[i]);
    for (size_t g = 0; g < ref.words.size(); ++g)
      if (!(ref.words[g] & kEscapeBit))
        CHECK(words[g] == ref.words[g]);
      else
        CHECK((words[g] & kEscapeBit) != 0);
  }
  CHECK(sideGroups == escaped);
  // Decoded into a section of 0x2a bytes: the packed ranges restored as the
  // reference restores them, every other byte untouched.
  std::vector<uint8_t> out(c.bytes.size(), 0x2a);
  runCodec("cuts_decompress3to1", c, staging, staging.data(), out.data(),
           {KernelArg::scalar(int64_t(c.layout.side))}, {2, 1, 1}, {32, 1, 1});
  std::vector<bool> packed(out.size(), false);
  for (const ByteRange &r : c.ranges.packed) {
    const float *x = reinterpret_cast<const float *>(c.bytes.data() + r.offset);
    std::vector<float> want(r.bytes / 4);
    REQUIRE(decompress3to1(compress3to1(x, want.size()), want.data()));
    for (size_t i = 0; i < want.size(); ++i) {
      float got;
      std::memcpy(&got, out.data() + r.offset + 4 * i, 4);
      INFO("range at " << r.offset << " value " << i << " " << x[i]);
      CHECK(bits(got) == bits(want[i]));
    }
    std::fill(packed.begin() + long(r.offset),
              packed.begin() + long(r.offset + r.bytes), true);
  }
  for (size_t b = 0; b < out.size(); ++b)
    if (!packed[b])
      REQUIRE(out[b] == 0x2a);
}

TEST_CASE("3:1 compression counts escaped groups past the side capacity "
          "without writing them",
          "[compress]") {
  const Section c(WeightCodec::ThreeToOne);
  std::vector<uint8_t> all(c.layout.bytes(c.items), 0);
  unsigned escaped = 0;
  runCodec("cuts_compress3to1", c, all, c.bytes.data(), all.data(),
           {KernelArg::buffer(&escaped), KernelArg::scalar(int64_t(c.items)),
            KernelArg::scalar(int64_t(c.layout.side))},
           {2, 1, 1}, {64, 1, 1});
  REQUIRE(escaped > 8);
  const unsigned capacity = escaped / 2;
  // A guard after the capacity's slots: nothing may land there.
  std::vector<uint8_t> staging(c.layout.bytes(capacity + 1), 0);
  const size_t guard = c.layout.bytes(capacity);
  std::fill(staging.begin() + long(guard), staging.end(), 0x77);
  unsigned counted = 0;
  runCodec("cuts_compress3to1", c, staging, c.bytes.data(), staging.data(),
           {KernelArg::buffer(&counted), KernelArg::scalar(int64_t(capacity)),
            KernelArg::scalar(int64_t(c.layout.side))},
           {2, 1, 1}, {64, 1, 1});
  CHECK(counted == escaped);
  for (size_t i = guard; i < staging.size(); ++i)
    REQUIRE(staging[i] == 0x77);
}

TEST_CASE("bf16 truncation kernels run on the CPU as the reference does, "
          "over a table of weight ranges",
          "[compress]") {
  Section c(WeightCodec::Bf16, GENERATE(0, 300));
  // A NaN whose payload lies in the low half only: truncation alone would
  // leave an infinity.
  const uint32_t nan = 0x7f800001u;
  std::memcpy(c.bytes.data() + c.ranges.packed[2].offset + 68, &nan, 4);
  std::vector<uint8_t> staging(c.layout.bytes(0), 0);
  runCodec("cuts_truncate_bf16", c, staging, c.bytes.data(), staging.data(), {},
           {3, 1, 1}, {64, 1, 1});
  std::vector<uint8_t> out(c.bytes.size(), 0x2a);
  runCodec("cuts_expand_bf16", c, staging, staging.data(), out.data(), {},
           {2, 1, 1}, {32, 1, 1});
  size_t covered = 0;
  for (size_t i = 0; i < c.ranges.packed.size(); ++i) {
    const ByteRange &r = c.ranges.packed[i];
    for (size_t v = 0; v < r.bytes / 4; ++v) {
      float x, back;
      uint16_t half;
      std::memcpy(&x, c.bytes.data() + r.offset + 4 * v, 4);
      std::memcpy(&back, out.data() + r.offset + 4 * v, 4);
      std::memcpy(&half, staging.data() + c.layout.packed[i] + 2 * v, 2);
      INFO("range " << i << " value " << v << " " << x);
      CHECK(half == truncateBf16(x));
      CHECK(bits(back) == bits(expandBf16(truncateBf16(x))));
      if (std::isnan(x))
        CHECK(std::isnan(back));
      else
        CHECK(bits(back) == (bits(x) & 0xffff0000u));
    }
    covered += r.bytes;
    std::fill(out.begin() + long(r.offset),
              out.begin() + long(r.offset + r.bytes), 0x2a);
  }
  CHECK(covered == c.ranges.packedBytes());
  // Nothing written outside the ranges.
  CHECK(
      std::all_of(out.begin(), out.end(), [](uint8_t b) { return b == 0x2a; }));
}

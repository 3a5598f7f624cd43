// Fused elementwise chains with broadcasting, generated from DFGs and run on
// the CPU against a double-precision reference.
#include "CodegenTestUtil.h"
#include "Half.h"
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/Elementwise.h"
#include "perfmodel/Describe.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace cuts;
using namespace cuts::codegen;

namespace {
// The builder with the chain's output described as the model describes it.
std::optional<Kernel> buildChain(const std::string &name,
                                 const std::vector<int64_t> &out,
                                 const std::vector<ElementwiseInput> &in,
                                 const std::vector<ElementwiseStep> &steps,
                                 const TileParams &p, std::string &error) {
  return buildElementwise(name, describeElementwise(out, 1), out, in, steps, p,
                          error);
}
} // namespace

namespace {

int64_t numel(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

// Offset in a broadcast input of the output element at flat index k.
int64_t bcast(int64_t k, const std::vector<int64_t> &out,
              const std::vector<int64_t> &in) {
  int64_t off = 0, stride = 1;
  size_t lead = out.size() - in.size();
  for (size_t d = out.size(); d-- > 0;) {
    int64_t idx = k % out[d];
    k /= out[d];
    if (d < lead)
      continue;
    int64_t e = in[d - lead];
    if (e != 1)
      off += idx * stride;
    stride *= e;
  }
  return off;
}

} // namespace

TEST_CASE("a fused elementwise chain with broadcasting matches the reference",
          "[codegen]") {
  // y = hard_swish(x * scale[c] + bias[c]) - residual   (x: 2x6x5x7)
  std::vector<int64_t> out{2, 6, 5, 7};
  std::vector<ElementwiseInput> in{{"x", out},
                                   {"scale", {6, 1, 1}},
                                   {"bias", {6, 1, 1}},
                                   {"residual", {5, 7}}};
  std::vector<ElementwiseStep> steps{{dfg::Op::Mul, {-1, -2}},
                                     {dfg::Op::Add, {0, -3}},
                                     {dfg::Op::HardSwish, {1}},
                                     {dfg::Op::Sub, {2, -4}}};
  std::vector<TileParams> params(2);
  params[0].Nb = 1, params[0].Kb = 2, params[0].Hb = 4, params[0].Wb = 8;
  params[0].Nt = 1, params[0].Kt = 1, params[0].Ht = 2, params[0].Wt = 2;
  params[1].Nb = 2, params[1].Kb = 4, params[1].Hb = 1, params[1].Wb = 4;
  params[1].Nt = 2, params[1].Kt = 1, params[1].Ht = 1, params[1].Wt = 4;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  for (const TileParams &p : params) {
    std::string err;
    auto k = buildChain("chain", out, in, steps, p, err);
    INFO(err);
    REQUIRE(k);
    std::vector<std::vector<float>> data;
    for (const auto &x : in) {
      data.emplace_back(numel(x.shape));
      for (float &v : data.back())
        v = dist(rng);
    }
    std::vector<float> y(numel(out), std::numeric_limits<float>::quiet_NaN());
    std::map<std::string, void *> buffers{{"Y", y.data()}};
    for (size_t i = 0; i < in.size(); ++i)
      buffers[in[i].name] = data[i].data();
    bool ran = runOnHost(*k, buffers, err);
    INFO(err);
    REQUIRE(ran);
    double num = 0, den = 0;
    for (int64_t e = 0; e < numel(out); ++e) {
      double v = double(data[0][e]) * data[1][bcast(e, out, in[1].shape)] +
                 data[2][bcast(e, out, in[2].shape)];
      v = v * std::min(std::max(v / 6 + 0.5, 0.0), 1.0);
      v -= data[3][bcast(e, out, in[3].shape)];
      REQUIRE(!std::isnan(y[e]));
      num += (y[e] - v) * (y[e] - v);
      den += v * v;
    }
    CHECK(std::sqrt(num / den) <= 1e-5);
  }
}

TEST_CASE("a transpose fused with an elementwise op", "[codegen]") {
  // y[a, b, c] = relu(x[c, a, b]) + z[a, b, c]: ONNX Transpose perm
  // (1, 2, 0) followed by an Add, as attention's head split is.
  std::vector<int64_t> out{3, 5, 4}, xs{4, 3, 5};
  std::vector<ElementwiseInput> in{{"x", xs, {1, 2, 0}}, {"z", out}};
  std::vector<ElementwiseStep> steps{{dfg::Op::Relu, {-1}},
                                     {dfg::Op::Add, {0, -2}}};
  TileParams p;
  p.Kb = 2, p.Hb = 4, p.Wb = 4, p.Wt = 2;
  std::string err;
  auto k = buildChain("transpose_add", out, in, steps, p, err);
  INFO(err);
  REQUIRE(k);
  std::mt19937 rng(8);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(numel(xs)), z(numel(out));
  for (float &v : x)
    v = dist(rng);
  for (float &v : z)
    v = dist(rng);
  std::vector<float> y(numel(out), std::numeric_limits<float>::quiet_NaN());
  bool ran =
      runOnHost(*k, {{"x", x.data()}, {"z", z.data()}, {"Y", y.data()}}, err);
  INFO(err);
  REQUIRE(ran);
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 5; ++b)
      for (int64_t c = 0; c < 4; ++c) {
        float want =
            std::max(x[(c * 3 + a) * 5 + b], 0.0f) + z[(a * 5 + b) * 4 + c];
        CHECK(y[(a * 5 + b) * 4 + c] == want);
      }
}

TEST_CASE("elementwise inputs that do not broadcast are rejected",
          "[codegen]") {
  TileParams p;
  std::string err;
  CHECK(!buildChain("bad", {4, 5}, {{"x", {3}}}, {{dfg::Op::Relu, {-1}}}, p,
                    err));
  CHECK(err.find("does not broadcast") != std::string::npos);
}

TEST_CASE("a gather through int64 indices fused with an add", "[codegen]") {
  // y[b, s, h] = table[ids[b, s], h] + pos[s, h]: BERT's embedding lookup,
  // a memory-based index function (thesis §3.4.2). A negative index counts
  // from the end, as in ONNX; one out of range reads 0 instead of faulting.
  const int64_t V = 11, B = 2, S = 5, H = 6;
  std::vector<int64_t> out{B, S, H};
  ElementwiseInput ids{"ids", {B, S}};
  ids.type = dfg::Type::I64;
  ids.follows = {0, 1};
  ElementwiseInput table{"table", {V, H}};
  table.follows = {ElementwiseInput::kGathered, 2};
  table.indices = 0;
  std::vector<ElementwiseInput> in{ids, table, {"pos", {S, H}}};
  std::vector<ElementwiseStep> steps{{dfg::Op::Add, {-2, -3}}};
  TileParams p;
  p.Kb = 2, p.Hb = 2, p.Wb = 4, p.Ht = 1, p.Wt = 2;
  std::string err;
  auto k = buildChain("embed", out, in, steps, p, err);
  INFO(err);
  REQUIRE(k);
  std::string src = emitSource(*k);
  CHECK(src.find("const long long *__restrict__ ids") != std::string::npos);
  std::mt19937 rng(4);
  std::vector<int64_t> idx{3, 0, 10, -1, 7, 2, -11, 5, 9, 100};
  auto tab = test::randomVector(rng, V * H),
       pos = test::randomVector(rng, S * H);
  auto y = test::poisoned(B * S * H);
  bool ran = runOnHost(*k,
                       {{"ids", idx.data()},
                        {"table", tab.data()},
                        {"pos", pos.data()},
                        {"Y", y.data()}},
                       err);
  INFO(err);
  REQUIRE(ran);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h) {
        int64_t i = idx[b * S + s];
        i = i < 0 ? i + V : i;
        float row = i >= 0 && i < V ? tab[i * H + h] : 0.0f;
        CHECK(y[(b * S + s) * H + h] == row + pos[s * H + h]);
      }
}

TEST_CASE("an attention mask from int64 through bool to fp32", "[codegen]") {
  // y = where(cast<bool>(mask) broadcast over rows, 0, -3.4e38): BERT's
  // padding mask, with a bool intermediate kernel output in between.
  const int64_t B = 2, S = 6;
  std::vector<int64_t> mask{1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0};
  ElementwiseInput m{"mask", {B, S}};
  m.type = dfg::Type::I64;
  ElementwiseStep cast{dfg::Op::Cast, {-1}};
  cast.cast = dfg::Type::Bool;
  TileParams p;
  p.Hb = 2, p.Wb = 2;
  std::string err;
  auto k1 = buildChain("to_bool", {B, S}, {m}, {cast}, p, err);
  INFO(err);
  REQUIRE(k1);
  CHECK(k1->tensors.back().type == dfg::Type::Bool);
  bool flags[B * S];
  std::fill(flags, flags + B * S, false);
  REQUIRE(runOnHost(*k1, {{"mask", mask.data()}, {"Y", flags}}, err));
  for (int64_t i = 0; i < B * S; ++i)
    CHECK(flags[i] == (mask[i] != 0));

  ElementwiseInput c{"cond", {B, 1, 1, S}};
  c.type = dfg::Type::Bool;
  std::vector<ElementwiseInput> in{c, {"zero", {1}}, {"low", {1}}};
  std::vector<ElementwiseStep> steps{{dfg::Op::Not, {-1}},
                                     {dfg::Op::Where, {0, -3, -2}}};
  p.Kb = 1, p.Hb = 4, p.Wb = 4, p.Wt = 2;
  auto k2 = buildChain("mask", {B, 1, S, S}, in, steps, p, err);
  INFO(err);
  REQUIRE(k2);
  float zero = 0.0f, low = -3.4e38f;
  auto y = test::poisoned(B * S * S);
  REQUIRE(runOnHost(
      *k2, {{"cond", flags}, {"zero", &zero}, {"low", &low}, {"Y", y.data()}},
      err));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t q = 0; q < S; ++q)
      for (int64_t kv = 0; kv < S; ++kv)
        CHECK(y[(b * S + q) * S + kv] == (mask[b * S + kv] ? 0.0f : low));
}

TEST_CASE("a concat reads the one part a position falls in", "[codegen]") {
  // y = concat(p0..p4, axis 1) of uneven parts (3, 1, 4, 2, 6 channels):
  // a Pick bisects the offsets. Bitwise equal, -0.0 included (a sum of
  // zero-filled parts would turn it into +0.0), for tiles that straddle
  // parts and overhang the output; rows of 5 (scalar reads) and of 8
  // (128- and 64-bit reads through the chosen part).
  const std::vector<int64_t> widths{3, 1, 4, 2, 6};
  std::vector<TileParams> params(3);
  params[0].Kb = 4, params[0].Hb = 2, params[0].Wb = 4;
  params[0].Kt = 2, params[0].Wt = 2;
  params[1].Nb = 2, params[1].Kb = 8, params[1].Wb = 8;
  params[1].Nt = 1, params[1].Kt = 4, params[1].Wt = 4;
  params[2].Kb = 2, params[2].Hb = 2, params[2].Wb = 16;
  params[2].Kt = 2, params[2].Ht = 2, params[2].Wt = 4;
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t W : {5, 8}) {
    std::vector<int64_t> out{2, 16, 3, W};
    std::vector<ElementwiseInput> in;
    std::vector<int> parts;
    int64_t offset = 0;
    for (size_t i = 0; i < widths.size(); ++i) {
      ElementwiseInput x{"p" + std::to_string(i), {2, widths[i], 3, W}};
      x.outsideReadsZero = true;
      x.follows = {0, 1, 2, 3};
      x.start = {0, -offset, 0, 0};
      x.step = {1, 1, 1, 1};
      offset += widths[i];
      parts.push_back(-1 - int(i));
      in.push_back(x);
    }
    std::vector<ElementwiseStep> steps{{dfg::Op::Pick, parts, 1}};
    std::vector<std::vector<float>> data;
    for (const auto &x : in) {
      data.emplace_back(numel(x.shape));
      for (float &v : data.back())
        v = dist(rng);
      data.back()[1] = -0.0f;
    }
    for (const TileParams &p : params) {
      std::string err;
      auto k = buildChain("concat", out, in, steps, p, err);
      INFO(err << " W " << W << " Wt " << p.Wt);
      REQUIRE(k);
      std::vector<float> y(numel(out), std::numeric_limits<float>::quiet_NaN());
      std::map<std::string, void *> buffers{{"Y", y.data()}};
      for (size_t i = 0; i < in.size(); ++i)
        buffers[in[i].name] = data[i].data();
      REQUIRE(runOnHost(*k, buffers, err));
      int64_t mismatches = 0;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t c = 0, part = 0, first = 0; c < 16; ++c) {
          if (c - first == widths[part])
            first += widths[part++];
          for (int64_t hw = 0; hw < 3 * W; ++hw) {
            float want =
                data[part][(n * widths[part] + c - first) * 3 * W + hw];
            float got = y[(n * 16 + c) * 3 * W + hw];
            mismatches += std::memcmp(&want, &got, sizeof want) != 0;
          }
        }
      CHECK(mismatches == 0);
      // One bisection a (n, k) of the thread, not one an element: a
      // 16-element thread of a 25-part concat compiled to 145 KB of code.
      std::string src = emitSource(*k);
      size_t bisections = 0;
      for (size_t at = src.find("const float *pick_base");
           at != std::string::npos;
           at = src.find("const float *pick_base", at + 1))
        ++bisections;
      CHECK(bisections == size_t(p.Nt * p.Kt));
      // Rows of 8 read 4 (or 2) words at a time through it.
      bool vectors = src.find("*reinterpret_cast<const float" +
                              std::to_string(p.Wt >= 4 ? 4 : 2) +
                              " *>(pick_base") != std::string::npos;
      CHECK(vectors == (W == 8));
    }
  }
  // Along the innermost axis too: 4 parts along W, blocks straddling them.
  {
    const std::vector<int64_t> cols{3, 1, 6, 2};
    std::vector<int64_t> outW{2, 3, 4, 12};
    std::vector<ElementwiseInput> inW;
    std::vector<int> partsW;
    std::vector<std::vector<float>> dataW;
    int64_t at = 0;
    for (size_t i = 0; i < cols.size(); ++i) {
      ElementwiseInput x{"q" + std::to_string(i), {2, 3, 4, cols[i]}};
      x.outsideReadsZero = true;
      x.follows = {0, 1, 2, 3};
      x.start = {0, 0, 0, -at};
      x.step = {1, 1, 1, 1};
      at += cols[i];
      partsW.push_back(-1 - int(i));
      inW.push_back(x);
      dataW.emplace_back(numel(x.shape));
      for (float &v : dataW.back())
        v = dist(rng);
    }
    TileParams p;
    p.Kb = 2, p.Hb = 2, p.Wb = 8, p.Wt = 2;
    std::string err;
    auto k =
        buildChain("concatW", outW, inW, {{dfg::Op::Pick, partsW, 3}}, p, err);
    INFO(err);
    REQUIRE(k);
    std::vector<float> y(numel(outW), std::numeric_limits<float>::quiet_NaN());
    std::map<std::string, void *> buffers{{"Y", y.data()}};
    for (size_t i = 0; i < inW.size(); ++i)
      buffers[inW[i].name] = dataW[i].data();
    REQUIRE(runOnHost(*k, buffers, err));
    int64_t mismatches = 0;
    for (int64_t r = 0; r < 2 * 3 * 4; ++r)
      for (int64_t w = 0, part = 0, first = 0; w < 12; ++w) {
        if (w - first == cols[part])
          first += cols[part++];
        mismatches += dataW[part][r * cols[part] + w - first] != y[r * 12 + w];
      }
    CHECK(mismatches == 0);
  }
  // Channels-last: parts of 8, 16 and 8 channels along the innermost axis.
  // A thread's 4 or 8 aligned channels lie in one part: one bisection
  // serves them (DenseNet's concats with batch norm and ReLU).
  for (int64_t wt : {4, 8}) {
    const std::vector<int64_t> cols{8, 16, 8};
    std::vector<int64_t> outC{2, 3, 4, 32};
    std::vector<ElementwiseInput> inC;
    std::vector<int> partsC;
    std::vector<std::vector<float>> dataC;
    int64_t at = 0;
    for (size_t i = 0; i < cols.size(); ++i) {
      ElementwiseInput x{"c" + std::to_string(i), {2, 3, 4, cols[i]}};
      x.outsideReadsZero = true;
      x.follows = {0, 1, 2, 3};
      x.start = {0, 0, 0, -at};
      x.step = {1, 1, 1, 1};
      at += cols[i];
      partsC.push_back(-1 - int(i));
      inC.push_back(x);
      dataC.emplace_back(numel(x.shape));
      for (float &v : dataC.back())
        v = dist(rng);
    }
    TileParams p;
    p.Kb = 2, p.Hb = 2, p.Wb = 16, p.Wt = wt;
    std::string err;
    auto k =
        buildChain("concatC", outC, inC, {{dfg::Op::Pick, partsC, 3}}, p, err);
    INFO(err);
    REQUIRE(k);
    std::string src = emitSource(*k);
    size_t bisections = 0;
    for (size_t f = src.find("const float *pick_base"); f != std::string::npos;
         f = src.find("const float *pick_base", f + 1))
      ++bisections;
    CHECK(bisections == 1);
    std::vector<float> y(numel(outC), std::numeric_limits<float>::quiet_NaN());
    std::map<std::string, void *> buffers{{"Y", y.data()}};
    for (size_t i = 0; i < inC.size(); ++i)
      buffers[inC[i].name] = dataC[i].data();
    REQUIRE(runOnHost(*k, buffers, err));
    int64_t mismatches = 0;
    for (int64_t r = 0; r < 2 * 3 * 4; ++r)
      for (int64_t w = 0, part = 0, first = 0; w < 32; ++w) {
        if (w - first == cols[part])
          first += cols[part++];
        mismatches += dataC[part][r * cols[part] + w - first] != y[r * 32 + w];
      }
    CHECK(mismatches == 0);
  }
  // Single-channel parts of rows of 5: every other axis has extent 1, so
  // 4-word vectors are aligned and the row's end is ragged (checked
  // element by element).
  {
    std::vector<int64_t> outR{1, 3, 1, 5};
    std::vector<ElementwiseInput> inR;
    std::vector<int> partsR;
    std::vector<std::vector<float>> dataR;
    for (int64_t i = 0; i < 3; ++i) {
      ElementwiseInput x{"r" + std::to_string(i), {1, 1, 1, 5}};
      x.outsideReadsZero = true;
      x.follows = {0, 1, 2, 3};
      x.start = {0, -i, 0, 0};
      partsR.push_back(-1 - int(i));
      inR.push_back(x);
      dataR.emplace_back(5);
      for (float &v : dataR.back())
        v = dist(rng);
    }
    TileParams p;
    p.Kb = 2, p.Wb = 8, p.Wt = 4;
    std::string err;
    auto k =
        buildChain("concatR", outR, inR, {{dfg::Op::Pick, partsR, 1}}, p, err);
    INFO(err);
    REQUIRE(k);
    CHECK(emitSource(*k).find("const float4 *>(pick_base") !=
          std::string::npos);
    std::vector<float> y(15, std::numeric_limits<float>::quiet_NaN());
    std::map<std::string, void *> buffers{{"Y", y.data()}};
    for (size_t i = 0; i < inR.size(); ++i)
      buffers[inR[i].name] = dataR[i].data();
    REQUIRE(runOnHost(*k, buffers, err));
    int64_t mismatches = 0;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t w = 0; w < 5; ++w)
        mismatches += dataR[c][w] != y[c * 5 + w];
    CHECK(mismatches == 0);
  }
  // Parts that are not concatenated inputs are refused.
  std::vector<int64_t> out{2, 16, 3, 5};
  std::vector<ElementwiseInput> in;
  for (size_t i = 0, offset = 0; i < widths.size(); offset += widths[i++]) {
    ElementwiseInput x{"p" + std::to_string(i), {2, widths[i], 3, 5}};
    x.outsideReadsZero = true;
    x.follows = {0, 1, 2, 3};
    x.start = {0, -int64_t(offset), 0, 0};
    in.push_back(x);
  }
  std::vector<ElementwiseStep> bad{{dfg::Op::Relu, {-1}},
                                   {dfg::Op::Pick, {0, -2}, 1}};
  std::string err;
  CHECK_FALSE(buildChain("bad", out, in, bad, params[0], err));
  CHECK(err.find("concatenated") != std::string::npos);
  // And a Pick of nothing.
  err.clear();
  CHECK_FALSE(
      buildChain("empty", out, in, {{dfg::Op::Pick, {}, 1}}, params[0], err));
  CHECK(err.find("no inputs") != std::string::npos);
  // So are parts out of offset order: the bisection would misread them.
  std::vector<ElementwiseStep> swapped{{dfg::Op::Pick, {-2, -1, -3}, 1}};
  err.clear();
  CHECK_FALSE(buildChain("swapped", out, in, swapped, params[0], err));
  CHECK(err.find("concatenated") != std::string::npos);
}

TEST_CASE("a 16-bit channels-last concat reads 16 bytes of a part at once",
          "[codegen][half]") {
  // Parts of 8, 16 and 8 fp16 or bf16 channels, innermost: a thread's 2, 4
  // or 8 aligned channels are one 32-, 64- or 128-bit load of one part.
  std::mt19937 rng(17);
  const std::vector<int64_t> cols{8, 16, 8};
  const std::vector<int64_t> out{2, 3, 4, 32};
  for (dfg::Type type : {dfg::Type::F16, dfg::Type::BF16})
    for (int64_t wt : {2, 4, 8}) {
      std::vector<ElementwiseInput> in;
      std::vector<int> parts;
      std::vector<std::vector<uint16_t>> data;
      int64_t at = 0;
      for (size_t i = 0; i < cols.size(); ++i) {
        ElementwiseInput x{"c" + std::to_string(i), {2, 3, 4, cols[i]}, {},
                           type};
        x.outsideReadsZero = true;
        x.follows = {0, 1, 2, 3};
        x.start = {0, 0, 0, -at};
        x.step = {1, 1, 1, 1};
        at += cols[i];
        parts.push_back(-1 - int(i));
        in.push_back(x);
        std::vector<float> values(size_t(numel(x.shape)));
        data.emplace_back(values.size());
        test::random16(rng, type == dfg::Type::BF16, data.back(), values);
      }
      TileParams p;
      p.Kb = 2, p.Hb = 2, p.Wb = 16, p.Wt = wt;
      std::string err;
      auto k = buildChain("concat16", out, in, {{dfg::Op::Pick, parts, 3}}, p,
                          err);
      INFO(err);
      REQUIRE(k);
      REQUIRE(k->tensors.back().type == type);
      const char *vec = wt == 8 ? "const uint4 *>(pick_base"
                        : wt == 4 ? "const uint2 *>(pick_base"
                                  : "const unsigned *>(pick_base";
      CHECK(emitSource(*k).find(vec) != std::string::npos);
      std::vector<uint16_t> y(size_t(numel(out)), 0xffff);
      std::map<std::string, void *> buffers{{"Y", y.data()}};
      for (size_t i = 0; i < in.size(); ++i)
        buffers[in[i].name] = data[i].data();
      REQUIRE(runOnHost(*k, buffers, err));
      int64_t mismatches = 0;
      for (int64_t r = 0; r < 2 * 3 * 4; ++r)
        for (int64_t w = 0, part = 0, first = 0; w < 32; ++w) {
          if (w - first == cols[part])
            first += cols[part++];
          mismatches += data[part][r * cols[part] + w - first] != y[r * 32 + w];
        }
      CHECK(mismatches == 0);
    }
}

TEST_CASE("16-bit float chains compute in fp32 and round once at the store",
          "[codegen][half]") {
  using dfg::Op;
  using dfg::Type;
  // y16 = hard_swish(x16 + bias16[c]); y32 = float(x16) * 2; ybf = bf16(z)
  std::vector<int64_t> out{2, 6, 5, 7};
  std::mt19937 rng(16);
  const int64_t n = numel(out);
  std::vector<uint16_t> x(n), bias(6);
  std::vector<float> xv(n), bv(6);
  test::random16(rng, false, x, xv);
  test::random16(rng, false, bias, bv);
  std::vector<float> z = test::randomVector(rng, n);
  TileParams p;
  p.Nb = 1, p.Kb = 2, p.Hb = 5, p.Wb = 8, p.Ht = 1, p.Wt = 2;
  std::string err;

  auto chain = buildChain(
      "half_chain", out,
      {{"x", out, {}, Type::F16}, {"bias", {6, 1, 1}, {}, Type::F16}},
      {{Op::Add, {-1, -2}}, {Op::HardSwish, {0}}}, p, err);
  INFO(err);
  REQUIRE(chain);
  CHECK(chain->tensors.back().type == Type::F16);
  std::vector<uint16_t> y(n, 0xffff);
  REQUIRE(runOnHost(
      *chain, {{"x", x.data()}, {"bias", bias.data()}, {"Y", y.data()}}, err));
  int wrong = 0;
  for (int64_t e = 0; e < n; ++e) {
    float v = xv[e] + bv[e / 35 % 6]; // fp32 as the kernel computes
    v = v * std::min(std::max(v / 6.0f + 0.5f, 0.0f), 1.0f);
    // One rounding to fp16; fp32 arithmetic order may move v by an ulp of
    // fp32, which can flip a tie: accept the neighbouring pattern then.
    uint16_t want = test::toHalf(v);
    wrong += y[e] != want && std::abs(int(y[e]) - int(want)) > 1;
  }
  CHECK(wrong == 0);

  auto widenK = buildChain(
      "widen", out, {{"x", out, {}, Type::F16}},
      {{Op::Cast, {-1}, 0, 0, Type::F32}, {Op::Mul, {0, 0}}}, p, err);
  INFO(err);
  REQUIRE(widenK);
  CHECK(widenK->tensors.back().type == Type::F32);
  std::vector<float> y32 = test::poisoned(n);
  REQUIRE(runOnHost(*widenK, {{"x", x.data()}, {"Y", y32.data()}}, err));
  int wrong32 = 0;
  for (int64_t e = 0; e < n; ++e)
    wrong32 += y32[e] != xv[e] * xv[e];
  CHECK(wrong32 == 0);

  // Cast to bf16 inside a chain rounds there: y = bf16(z) * 1 stored bf16.
  auto narrowK =
      buildChain("narrow", out, {{"z", out}},
                 {{Op::Cast, {-1}, 0, 0, Type::BF16}, {Op::Relu, {0}}}, p, err);
  INFO(err);
  REQUIRE(narrowK);
  CHECK(narrowK->tensors.back().type == Type::BF16);
  std::vector<uint16_t> ybf(n, 0xffff);
  REQUIRE(runOnHost(*narrowK, {{"z", z.data()}, {"Y", ybf.data()}}, err));
  int wrongBf = 0;
  for (int64_t e = 0; e < n; ++e)
    wrongBf += ybf[e] != test::toBf16(std::max(z[e], 0.0f));
  CHECK(wrongBf == 0);
  // The CUDA source compiles; HIP refuses 16-bit floats for now.
  std::string src = emitSource(*chain);
  CHECK(src.find("cuts_h2f") != std::string::npos);
  CHECK(src.find("cuts_f2h") != std::string::npos);
  REQUIRE(nvrtcAvailable()); // the tests build with the CUDA toolkit
  INFO(err);
  CHECK(compileWithNvrtc(src, "sm_80", err));
  CHECK(emitSource(*chain, Target::Hip).find("#error") != std::string::npos);
}

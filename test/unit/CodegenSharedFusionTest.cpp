// Shared-memory-level fusion (thesis §3.3.2): a producer phase computes the
// consumer's input tile into shared memory in every block. The fused kernels
// run on the CPU through the CUDA-on-host harness against a double-precision
// reference of the two ops in sequence, and compile with NVRTC.
#include "CodegenTestUtil.h"
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/Conv.h"
#include "codegen/ops/MatMul.h"
#include "codegen/ops/Pool.h"
#include "codegen/ops/Reduction.h"
#include "codegen/ops/SharedFusion.h"
#include "perfmodel/ParamSearch.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

using namespace cuts;
using namespace cuts::codegen;

namespace {

const GpuArch &h100() {
  static GpuArch a = *findArch("h100");
  return a;
}

test::ConvCase convShape(int64_t c, int64_t hw, int64_t k, int64_t f,
                         int64_t stride, int64_t pad, bool depthwise = false) {
  return test::convCase(1, c, hw, k, f, stride, pad, 1, depthwise ? c : 1);
}

// The consumer's kept parameter sets when its input comes from shared
// memory (C_input = C), the cheapest to run on the host first.
std::vector<TileParams> consumerParams(const OpDesc &d, size_t count) {
  PruneOptions opts;
  opts.topPercent = 5;
  SearchResult r = searchParams(d, h100(), opts, InputFrom::SharedMemory);
  std::vector<TileParams> ps;
  for (const Candidate &c : r.kept)
    ps.push_back(c.params);
  auto work = [](const TileParams &p) {
    return p.Nb * p.Kb * p.Hb * p.Wb * p.Cin;
  };
  std::stable_sort(ps.begin(), ps.end(),
                   [&](const TileParams &a, const TileParams &b) {
                     return work(a) < work(b);
                   });
  if (ps.size() > count)
    ps.resize(count);
  REQUIRE(!ps.empty());
  return ps;
}

// The producer's parameters: the model's best thread tiling of the tile the
// consumer reads, with the consumer's thread count (none when its
// accumulators would not fit in registers).
std::optional<TileParams> producerParams(const OpDesc &producer,
                                         const TileParams &block,
                                         int64_t threads) {
  auto c = bestForBlock(producer, h100(), block, threads);
  if (!c)
    return std::nullopt;
  return c->params;
}

// The input tile of a windowed consumer with parameters q: the producer's
// block (all producer channels when the consumer sums over them).
TileParams windowTile(const test::ConvCase &s, const TileParams &q, bool allC,
                      int64_t channels) {
  TileParams b;
  b.Nb = q.Nb;
  b.Kb = allC ? channels : q.Kb;
  b.Hb = (q.Hb - 1) * s.SH + (s.FH - 1) + 1;
  b.Wb = (q.Wb - 1) * s.SW + (s.FW - 1) + 1;
  return b;
}

using Tensor = std::vector<double>;

// conv (or depthwise conv) in double; positions outside the image read 0.
Tensor convRef(const Tensor &x, const test::ConvCase &s,
               const std::vector<float> &w, const std::vector<float> &bias) {
  bool dw = s.group > 1;
  int64_t cw = dw ? 1 : s.C;
  Tensor y(size_t(s.N * s.K * s.OH * s.OW));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t o = 0; o < s.K; ++o)
      for (int64_t h = 0; h < s.OH; ++h)
        for (int64_t q = 0; q < s.OW; ++q) {
          double v = bias.empty() ? 0.0 : bias[o];
          for (int64_t c = 0; c < cw; ++c)
            for (int64_t fh = 0; fh < s.FH; ++fh)
              for (int64_t fw = 0; fw < s.FW; ++fw) {
                int64_t ih = h * s.SH - s.PH + fh, iw = q * s.SW - s.PW + fw;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W)
                  continue;
                int64_t ic = dw ? o : c;
                v += x[((n * s.C + ic) * s.H + ih) * s.W + iw] *
                     double(w[((o * cw + c) * s.FH + fh) * s.FW + fw]);
              }
          y[((n * s.K + o) * s.OH + h) * s.OW + q] = v;
        }
  return y;
}

Tensor maxPoolRef(const Tensor &x, const test::PoolCase &s) {
  Tensor y(size_t(s.N * s.C * s.OH * s.OW));
  for (int64_t n = 0; n < s.N * s.C; ++n)
    for (int64_t h = 0; h < s.OH; ++h)
      for (int64_t q = 0; q < s.OW; ++q) {
        double v = -INFINITY;
        for (int64_t fh = 0; fh < s.FH; ++fh)
          for (int64_t fw = 0; fw < s.FW; ++fw) {
            int64_t ih = h * s.SH - s.PH + fh, iw = q * s.SW - s.PW + fw;
            if (ih >= 0 && ih < s.H && iw >= 0 && iw < s.W)
              v = std::max(v, x[(n * s.H + ih) * s.W + iw]);
          }
        y[(n * s.OH + h) * s.OW + q] = v;
      }
  return y;
}

Tensor toDouble(const std::vector<float> &v) { return {v.begin(), v.end()}; }

void apply(Tensor &t, double (*f)(double)) {
  for (double &v : t)
    v = f(v);
}
double relu(double v) { return std::max(v, 0.0); }
double relu6(double v) { return std::min(std::max(v, 0.0), 6.0); }

// Runs k on `buffers` (Y poisoned, of want's size) and returns the relative
// L2 error against `want`.
double runFused(const Kernel &k, std::map<std::string, void *> buffers,
                const Tensor &want) {
  std::vector<float> y = test::poisoned(want.size());
  buffers["Y"] = y.data();
  std::string err;
  bool ran = runOnHost(k, buffers, err);
  INFO(err);
  REQUIRE(ran);
  test::RelativeL2 e;
  for (size_t i = 0; i < want.size(); ++i)
    e.add(y[i], want[i]);
  return e.value();
}

// The fused kernel compiles for both architectures, without spilling.
void compilesWithNvrtc(const Kernel &k) {
  REQUIRE(nvrtcAvailable()); // the tests build with the CUDA toolkit
  std::string src = emitSource(k), error;
  for (const char *arch : {"sm_80", "sm_90"}) {
    auto r = compileWithNvrtc(src, arch, error);
    INFO(arch << ": " << error << "\n" << src);
    REQUIRE(r);
    const KernelResources *res = r->find(k.name);
    REQUIRE(res);
    CHECK(res->spillStoreBytes == 0);
  }
}

// Fuses `pre` into `post` in place of its fetch of X, runs the fused kernel
// on the CPU against `want` and compiles it with NVRTC; returns it.
Kernel checkFused(const std::optional<Kernel> &pre,
                  const std::optional<Kernel> &post,
                  std::map<std::string, void *> buffers, const Tensor &want) {
  REQUIRE(pre);
  REQUIRE(post);
  std::string error;
  auto k = fuseShared(*pre, *post, "X", error);
  INFO(error);
  REQUIRE(k);
  CHECK(runFused(*k, std::move(buffers), want) <= 1e-5);
  compilesWithNvrtc(*k);
  return *k;
}

} // namespace

TEST_CASE("conv -> conv fused at the shared-memory level", "[codegen]") {
  // 1x1 conv + bias + relu feeding a 3x3 conv, at stride 1 and at stride 2
  // (the consumer's tiles start before the image and overhang it).
  int built = 0;
  for (int64_t stride : {1, 2}) {
    test::ConvCase s1 = convShape(8, 10, 16, 1, 1, 0);
    test::ConvCase s2 = convShape(16, 10, 8, 3, stride, 1);
    std::mt19937 rng(11 + uint32_t(stride));
    auto x = test::randomVector(rng, size_t(8 * 100));
    auto w1 = test::randomVector(rng, 16 * 8), b1 = test::randomVector(rng, 16);
    auto w2 = test::randomVector(rng, 8 * 16 * 9);
    Tensor mid = convRef(toDouble(x), s1, w1, b1);
    apply(mid, relu);
    Tensor want = convRef(mid, s2, w2, {});

    for (const TileParams &q : consumerParams(s2.desc(), 2)) {
      auto pp =
          producerParams(s1.desc(), windowTile(s2, q, true, s1.K), q.threads());
      if (!pp)
        continue;
      ++built;
      std::string error;
      auto pre = buildConv("pre", s1.desc(), *pp,
                           {EpilogueOp::binary(dfg::Op::Add, "bias", {16}),
                            EpilogueOp::unary(dfg::Op::Relu)},
                           error);
      INFO("stride " << stride << ", consumer block " << q.Nb << "x" << q.Kb
                     << "x" << q.Hb << "x" << q.Wb << ", producer threads "
                     << pp->threads() << " vs " << q.threads());
      Kernel k = checkFused(pre, buildConv("fused", s2.desc(), q, {}, error),
                            {{"pre_X", x.data()},
                             {"pre_Wt", w1.data()},
                             {"pre_bias", b1.data()},
                             {"Wt", w2.data()}},
                            want);
      CHECK(k.tensors.size() == 5); // Wt, pre_X, pre_Wt, pre_bias, Y
    }
  }
  CHECK(built > 0);
}

TEST_CASE("a producer whose thread tiles outnumber the threads runs in rounds",
          "[codegen]") {
  test::ConvCase s1 = convShape(4, 9, 8, 1, 1, 0);
  test::ConvCase s2 = convShape(8, 9, 4, 3, 1, 1);
  TileParams q;
  q.Nb = 1, q.Kb = 4, q.Hb = 4, q.Wb = 8, q.Nt = 1, q.Kt = 1, q.Ht = 1,
  q.Wt = 2, q.Cin = 8;                        // 64 threads
  TileParams pp = windowTile(s2, q, true, 8); // 1 x 8 x 6 x 10
  pp.Nt = 1, pp.Kt = 2, pp.Ht = 1, pp.Wt = 1; // 240 tiles: 4 rounds
  pp.Cin = 4;
  std::string error;
  auto pre = buildConv("pre", s1.desc(), pp, {}, error);
  REQUIRE(pre);
  std::mt19937 rng(5);
  auto x = test::randomVector(rng, 4 * 81);
  auto w1 = test::randomVector(rng, 8 * 4),
       w2 = test::randomVector(rng, 4 * 72);
  Tensor want = convRef(convRef(toDouble(x), s1, w1, {}), s2, w2, {});
  for (bool prefetch : {false, true}) {
    pre->prefetch = prefetch; // the producer's loop
    Kernel k = checkFused(
        pre, buildConv("fused", s2.desc(), q, {}, error),
        {{"pre_X", x.data()}, {"pre_Wt", w1.data()}, {"Wt", w2.data()}}, want);
    CHECK(emitSource(k).find("acc_0_0_0_0_r3") != std::string::npos);
  }
}

TEST_CASE("both phases of a fused kernel sweep large thread tiles in loops",
          "[codegen]") {
  // A 1x1 producer of 32 outputs a thread over 16 channels, in 4 rounds,
  // and a 3x3 consumer of 32 outputs a thread: each phase's DFGs hold a
  // span of its positions, its accumulators arrays over the loops.
  test::ConvCase s1 = convShape(16, 9, 8, 1, 1, 0);
  test::ConvCase s2 = convShape(8, 9, 4, 3, 1, 1);
  TileParams q;
  q.Nb = 1, q.Kb = 4, q.Hb = 4, q.Wb = 8, q.Nt = 1, q.Kt = 4, q.Ht = 2,
  q.Wt = 4, q.Cin = 8;                        // 4 threads
  TileParams pp = windowTile(s2, q, true, 8); // 1 x 8 x 6 x 10
  pp.Nt = 1, pp.Kt = 8, pp.Ht = 2, pp.Wt = 2; // 15 tiles: 4 rounds
  pp.Cin = 16;
  std::string error;
  auto pre = buildConv("pre", s1.desc(), pp, {EpilogueOp::unary(dfg::Op::Relu)},
                       error);
  auto post = buildConv("fused", s2.desc(), q, {}, error);
  REQUIRE(pre);
  REQUIRE(post);
  CHECK(pre->positions.count[dfg::DimK] == 8);
  CHECK(post->positions.iterations() > 1);
  std::mt19937 rng(21);
  auto x = test::randomVector(rng, 16 * 81);
  auto w1 = test::randomVector(rng, 8 * 16),
       w2 = test::randomVector(rng, 4 * 72);
  Tensor mid = convRef(toDouble(x), s1, w1, {});
  apply(mid, relu);
  Tensor want = convRef(mid, s2, w2, {});
  for (bool prefetch : {false, true}) {
    pre->prefetch = prefetch;
    Kernel k = checkFused(
        pre, post,
        {{"pre_X", x.data()}, {"pre_Wt", w1.data()}, {"Wt", w2.data()}}, want);
    std::string src = emitSource(k);
    CHECK(src.find("for (int lv_k = 0; lv_k < 8; ++lv_k)") !=
          std::string::npos);
    CHECK(src.find("acc_0_0_0_0_r3[") != std::string::npos);
  }
}

TEST_CASE("a one-slice producer of many rounds loops over them at run time",
          "[codegen]") {
  // MobileNetV2's depthwise conv + clip feeding its 1x1 projection: the
  // producer (one C_input slice, nothing carried between slices) has 8
  // rounds of thread tiles, emitted as one loop, not 8 copies; its fetch
  // goes through registers where it is small enough (kMaxStagedFetch).
  test::ConvCase s1 = convShape(16, 9, 16, 3, 1, 1, true);
  test::ConvCase s2 = convShape(16, 9, 8, 1, 1, 0);
  std::mt19937 rng(9);
  auto x = test::randomVector(rng, 16 * 81);
  auto w1 = test::randomVector(rng, 16 * 9),
       w2 = test::randomVector(rng, 8 * 16);
  Tensor mid = convRef(toDouble(x), s1, w1, {});
  apply(mid, relu6);
  Tensor want = convRef(mid, s2, w2, {});
  for (bool staged : {false, true}) {
    TileParams q;
    q.Nb = 1, q.Kb = 8, q.Wb = 8, q.Nt = 1, q.Ht = 1, q.Cin = 16;
    if (staged) // 128 threads, a 16 x 10 x 10 input tile: 15 floats each
      q.Hb = 8, q.Kt = 4, q.Wt = 1;
    else // 64 threads, a 16 x 6 x 10 input tile: 18 floats each
      q.Hb = 4, q.Kt = 2, q.Wt = 2;
    TileParams pp = windowTile(s2, q, true, 16);
    pp.Nt = pp.Kt = pp.Ht = pp.Wt = 1, pp.Cin = 1; // 8 rounds of tiles
    std::string error;
    auto pre = buildConv("pre", s1.desc(), pp,
                         {EpilogueOp::unary(dfg::Op::Clip, 0, 6)}, error);
    REQUIRE(pre);
    REQUIRE(pre->loopExtent <= pre->params.Cin);
    for (bool prefetch : {false, true}) {
      pre->prefetch = prefetch; // no effect on one slice
      Kernel k = checkFused(
          pre, buildConv("fused", s2.desc(), q, {}, error),
          {{"pre_X", x.data()}, {"pre_Wt", w1.data()}, {"Wt", w2.data()}},
          want);
      std::string src = emitSource(k);
      CHECK(src.find("for (int tileRound = 0; tileRound < 8; ++tileRound)") !=
            std::string::npos);
      CHECK(src.find("_r1") == std::string::npos);
      CHECK((src.find("staged0") != std::string::npos) == staged);
    }
  }
}

TEST_CASE("conv -> depthwise conv + clip fused at the shared-memory level",
          "[codegen]") {
  // MobileNetV2's expansion feeding its depthwise conv, stride 2.
  test::ConvCase s1 = convShape(4, 9, 16, 1, 1, 0);
  test::ConvCase s2 = convShape(16, 9, 16, 3, 2, 1, true);
  std::mt19937 rng(3);
  auto x = test::randomVector(rng, 4 * 81);
  auto w1 = test::randomVector(rng, 16 * 4),
       w2 = test::randomVector(rng, 16 * 9);
  auto b2 = test::randomVector(rng, 16);
  Tensor mid = convRef(toDouble(x), s1, w1, {});
  apply(mid, relu6);
  Tensor want = convRef(mid, s2, w2, b2);
  apply(want, relu6);
  int built = 0;
  for (const TileParams &q : consumerParams(s2.desc(), 2)) {
    auto pp =
        producerParams(s1.desc(), windowTile(s2, q, false, 0), q.threads());
    if (!pp)
      continue;
    ++built;
    std::string error;
    checkFused(buildConv("pre", s1.desc(), *pp,
                         {EpilogueOp::unary(dfg::Op::Clip, 0, 6)}, error),
               buildConv("fused", s2.desc(), q,
                         {EpilogueOp::binary(dfg::Op::Add, "bias", {16}),
                          EpilogueOp::unary(dfg::Op::Clip, 0, 6)},
                         error),
               {{"pre_X", x.data()},
                {"pre_Wt", w1.data()},
                {"Wt", w2.data()},
                {"bias", b2.data()}},
               want);
  }
  CHECK(built > 0);
}

TEST_CASE("conv -> max pool fused: the tile's halo holds -inf", "[codegen]") {
  // Negative inputs everywhere: a halo of zeros would win the max.
  test::ConvCase s1 = convShape(4, 8, 8, 3, 1, 1);
  test::PoolCase ps;
  ps.N = 1, ps.C = 8, ps.H = ps.W = 8, ps.FH = ps.FW = 3, ps.SH = ps.SW = 2;
  ps.PH = ps.PW = 1, ps.OH = ps.OW = 4, ps.max = true;
  std::mt19937 rng(7);
  auto x = test::randomVector(rng, 4 * 64),
       w1 = test::randomVector(rng, 8 * 36);
  auto b1 = std::vector<float>(8, -100.0f);
  Tensor want = maxPoolRef(convRef(toDouble(x), s1, w1, b1), ps);
  OpDesc pd = ps.desc();
  test::ConvCase window = s1;
  window.FH = window.FW = 3, window.SH = window.SW = 2;
  int built = 0;
  for (const TileParams &q : consumerParams(pd, 2)) {
    auto pp =
        producerParams(s1.desc(), windowTile(window, q, false, 0), q.threads());
    if (!pp)
      continue;
    ++built;
    std::string error;
    checkFused(
        buildConv("pre", s1.desc(), *pp,
                  {EpilogueOp::binary(dfg::Op::Add, "bias", {8})}, error),
        buildPool("fused", ps.desc(), ps.pooling(), q, {}, error),
        {{"pre_X", x.data()}, {"pre_Wt", w1.data()}, {"pre_bias", b1.data()}},
        want);
  }
  CHECK(built > 0);
}

TEST_CASE("matmul + bias + residual -> layer norm fused at the shared-memory "
          "level",
          "[codegen]") {
  // BERT's attention output: a block computes whole rows of the product
  // into shared memory, then normalises them. Rows of 40 overhang some
  // lane counts (guarded shared reads, masked deviations).
  const int64_t M = 12, K = 32, N = GENERATE(64, 40);
  RowSpec rs;
  rs.op = RowOp::LayerNorm, rs.epsilon = 1e-5;
  rs.sharedInput = true;
  std::mt19937 rng(17);
  auto a = test::randomVector(rng, M * K), b = test::randomVector(rng, K * N);
  auto bias = test::randomVector(rng, N), res = test::randomVector(rng, M * N);
  auto gamma = test::randomVector(rng, N), beta = test::randomVector(rng, N);
  Tensor want(size_t(M * N));
  for (int64_t i = 0; i < M; ++i) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < N; ++j) {
      double v = bias[j] + res[i * N + j];
      for (int64_t p = 0; p < K; ++p)
        v += double(a[i * K + p]) * b[p * N + j];
      want[i * N + j] = v;
      mean += v / N;
    }
    for (int64_t j = 0; j < N; ++j)
      var += (want[i * N + j] - mean) * (want[i * N + j] - mean) / N;
    for (int64_t j = 0; j < N; ++j)
      want[i * N + j] =
          (want[i * N + j] - mean) / std::sqrt(var + 1e-5) * gamma[j] + beta[j];
  }
  OpDesc rd = describeRows(M, N), md = test::matmulDesc(M, K, N);
  int built = 0, lanes = 0, ragged = 0;
  for (const TileParams &q : consumerParams(rd, 1000)) {
    if (built == 4)
      break;
    TileParams block;
    block.Nb = q.Nb, block.Kb = N;
    auto pp = producerParams(md, block, q.threads());
    if (!pp)
      continue;
    ++built;
    lanes += q.Wb > 1; // rows over lanes, reading the tile
    ragged += N % q.Wb != 0;
    std::string error;
    checkFused(buildMatMul("pre", md, *pp,
                           {EpilogueOp::binary(dfg::Op::Add, "bias", {N}),
                            EpilogueOp::binary(dfg::Op::Add, "res", {M, N})},
                           error),
               buildRowOp("fused", rd, rs, q, error),
               {{"pre_A", a.data()},
                {"pre_B", b.data()},
                {"pre_bias", bias.data()},
                {"pre_res", res.data()},
                {"scale", gamma.data()},
                {"bias", beta.data()}},
               want);
  }
  CHECK(built > 0);
  CHECK(lanes > 0);
  CHECK((ragged > 0) == (N == 40));
}

TEST_CASE("shared-memory-level fusion refuses tiles that do not line up",
          "[codegen]") {
  test::ConvCase s1 = convShape(8, 10, 16, 1, 1, 0);
  test::ConvCase s2 = convShape(16, 10, 8, 3, 1, 1);
  TileParams q = consumerParams(s2.desc(), 1).front();
  TileParams pp = windowTile(s2, q, true, 16);
  pp.Hb += 1; // one row too many
  std::string error;
  auto pre = buildConv("pre", s1.desc(), pp, {}, error);
  auto post = buildConv("fused", s2.desc(), q, {}, error);
  REQUIRE(pre);
  REQUIRE(post);
  CHECK(!fuseShared(*pre, *post, "X", error));
  CHECK(error.find("is not the consumer's input tile") != std::string::npos);

  // A consumer that loops over its input in slices cannot hold it.
  TileParams sliced = q;
  sliced.Cin = 8;
  auto looped = buildConv("fused", s2.desc(), sliced, {}, error);
  REQUIRE(looped);
  CHECK(!fuseShared(*pre, *looped, "X", error));
  CHECK(error.find("C_input = C") != std::string::npos);
}

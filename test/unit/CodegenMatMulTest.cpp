// Matmul kernels generated from DFGs (with fused epilogues) run on the CPU
// through the CUDA-on-host harness and match a double-precision reference;
// the same source compiles with NVRTC for sm_80 and sm_90.
#include "CodegenTestUtil.h"
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/MatMul.h"
#include "perfmodel/ParamSearch.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

using namespace cuts;
using namespace cuts::codegen;

namespace {

struct Case {
  int64_t M, K, N;
  std::vector<EpilogueOp> epilogue;
};

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

// Runs kernel k on random inputs and returns the relative L2 error against
// a double-precision reference of the same computation.
double runAndCompare(const Kernel &k, const Case &c, uint32_t seed) {
  std::mt19937 rng(seed);
  auto fill = [&](size_t n) { return test::randomVector(rng, n); };
  std::vector<float> a = fill(c.M * c.K), b = fill(c.K * c.N);
  std::vector<float> bias = fill(c.N), res = fill(c.M * c.N);
  // Past Y's end, a guard that must stay NaN: a wide store at a ragged
  // end must not overrun the tensor.
  constexpr size_t kGuard = 8;
  std::vector<float> y = test::poisoned(c.M * c.N + kGuard);

  std::string err;
  bool ran = runOnHost(k,
                       {{"A", a.data()},
                        {"B", b.data()},
                        {"bias", bias.data()},
                        {"res", res.data()},
                        {"Y", y.data()}},
                       err);
  INFO(err);
  REQUIRE(ran);

  for (size_t i = 0; i < kGuard; ++i)
    if (!std::isnan(y[c.M * c.N + i]))
      return INFINITY;
  test::RelativeL2 error;
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      double v = 0;
      for (int64_t p = 0; p < c.K; ++p)
        v += double(a[i * c.K + p]) * double(b[p * c.N + j]);
      for (const EpilogueOp &e : c.epilogue) {
        if (e.op == dfg::Op::Add)
          v += e.operand == "bias" ? bias[j] : res[i * c.N + j];
        else if (e.op == dfg::Op::Gelu)
          v = gelu(v);
        else if (e.op == dfg::Op::Relu)
          v = std::max(v, 0.0);
      }
      error.add(y[i * c.N + j], v);
    }
  return error.value();
}

// A few parameter sets the performance model keeps for this matmul, the
// smallest first (host threads and compile time stay small).
std::vector<TileParams> keptParams(const Case &c, size_t count) {
  OpDesc d = test::matmulDesc(c.M, c.K, c.N);
  PruneOptions opts;
  opts.topPercent = 5;
  SearchResult r = searchParams(d, *findArch("h100"), opts);
  std::vector<TileParams> ps;
  for (const Candidate &cand : r.kept)
    ps.push_back(cand.params);
  auto work = [](const TileParams &x) { return x.Nb * x.Kb * x.Cin; };
  std::sort(ps.begin(), ps.end(),
            [&](const TileParams &x, const TileParams &y) {
              return work(x) < work(y);
            });
  if (ps.size() > count)
    ps.resize(count);
  return ps;
}

} // namespace

TEST_CASE("generated matmul kernels match the reference on the CPU",
          "[codegen]") {
  std::vector<Case> cases = {
      {50,
       64,
       70,
       {EpilogueOp::binary(dfg::Op::Add, "bias", {70}),
        EpilogueOp::unary(dfg::Op::Gelu)}},
      {33,
       48,
       40,
       {EpilogueOp::binary(dfg::Op::Add, "res", {33, 40}),
        EpilogueOp::unary(dfg::Op::Relu)}},
      {16, 32, 24, {}},
  };
  uint32_t seed = 1;
  for (const Case &c : cases) {
    auto params = keptParams(c, 1);
    REQUIRE(!params.empty());
    // Also a hand-picked tiling with a transposed A tile and bank padding.
    TileParams t;
    t.Nb = 16, t.Kb = 32, t.Nt = 2, t.Kt = 4, t.Cin = 16;
    for (size_t f = 0; f < sharedFormats().size(); ++f)
      if (formatName(int(f)) == "CNHW")
        t.format = int(f);
    params.push_back(t);
    for (const TileParams &p : params) {
      std::string err;
      auto k = buildMatMul("matmul_test", test::matmulDesc(c.M, c.K, c.N), p,
                           c.epilogue, err);
      INFO(err);
      REQUIRE(k);
      INFO("block " << p.Nb << "x" << p.Kb << " thread " << p.Nt << "x" << p.Kt
                    << " Cin " << p.Cin << " format " << formatName(p.format));
      CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
      if (&p == &params.back()) { // the prefetching variant of the loop
        k->prefetch = true;
        CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
      }
    }
  }
}

TEST_CASE("global stores and epilogue loads go 64 or 128 bits wide where "
          "every thread's run is aligned",
          "[codegen]") {
  // A thread's 4 consecutive columns of Y (and of the residual): one float4
  // where the row stride keeps every row 16-byte aligned, float2 where it
  // keeps 8 bytes, scalars otherwise; a row of 30 columns alone (M = 1) is
  // ragged: the last run of each row is checked word by word.
  struct Wide {
    int64_t M, N;
    const char *store; // the store Y gets, nullptr: scalar
    bool ragged;
  };
  const Wide cases[] = {{6, 32, "float4", false},
                        {6, 30, "float2", false},
                        {1, 30, "float4", true},
                        {6, 31, nullptr, false}};
  uint32_t seed = 200;
  for (const Wide &w : cases) {
    Case c{w.M,
           8,
           w.N,
           {EpilogueOp::binary(dfg::Op::Add, "res", {w.M, w.N}),
            EpilogueOp::unary(dfg::Op::Relu)}};
    TileParams p;
    p.Nb = w.M == 1 ? 1 : 2, p.Kb = 16, p.Nt = 1, p.Kt = 4, p.Cin = 8;
    std::string err;
    auto k = buildMatMul("matmul_wide", test::matmulDesc(c.M, c.K, c.N), p,
                         c.epilogue, err);
    INFO(err);
    REQUIRE(k);
    std::string src = emitSource(*k);
    INFO("M " << w.M << " N " << w.N << "\n" << src);
    for (const char *vec : {"float4", "float2"}) {
      bool want = w.store && std::string(vec) == w.store;
      CHECK((src.find(std::string("reinterpret_cast<") + vec + " *>(&Y[") !=
             std::string::npos) == want);
      CHECK((src.find(std::string("reinterpret_cast<const ") + vec +
                      " *>(&res[") != std::string::npos) == want);
    }
    CHECK((src.find("else {") != std::string::npos) == w.ragged);
    CHECK(runAndCompare(*k, c, seed++) <= 1e-5);
    auto r = compileWithNvrtc(src, "sm_90", err);
    INFO(err);
    CHECK(r);
  }
}

TEST_CASE("a matmul body past kMaxUnrolledFma loops over its slice",
          "[codegen]") {
  // 8 x 8 outputs a thread, C_input 64: 4096 FMAs unrolled; in 16-column
  // chunks, 1024.
  Case c{64, 128, 64, {EpilogueOp::binary(dfg::Op::Add, "bias", {64})}};
  TileParams p;
  p.Nb = 32, p.Kb = 32, p.Nt = 8, p.Kt = 8, p.Cin = 64;
  std::string err;
  auto k = buildMatMul("matmul_chunks", test::matmulDesc(c.M, c.K, c.N), p,
                       c.epilogue, err);
  INFO(err);
  REQUIRE(k);
  CHECK(k->bodyStep == 16);
  CHECK(emitSource(*k).find("for (int ci = 0; ci < 64; ci += 16)") !=
        std::string::npos);
  CHECK(runAndCompare(*k, c, 90) <= 1e-5);
  k->prefetch = true;
  CHECK(runAndCompare(*k, c, 91) <= 1e-5);
}

TEST_CASE("generated matmul kernels compile with NVRTC for sm_80 and sm_90",
          "[codegen]") {
  TileParams p;
  p.Nb = 32, p.Kb = 64, p.Nt = 4, p.Kt = 4, p.Cin = 16;
  std::string err;
  auto k = buildMatMul("matmul_bias_gelu", test::matmulDesc(128, 256, 192), p,
                       {EpilogueOp::binary(dfg::Op::Add, "bias", {192}),
                        EpilogueOp::unary(dfg::Op::Gelu)},
                       err);
  REQUIRE(k);
  std::string src = emitSource(*k);
  for (const char *arch : {"sm_80", "sm_90"}) {
    auto r = compileWithNvrtc(src, arch, err);
    INFO(err);
    REQUIRE(r);
    const KernelResources *res = r->find("matmul_bias_gelu");
    REQUIRE(res);
    CHECK(res->registers > 0);
    CHECK(res->spillStoreBytes == 0);
    // The tiles are dynamic shared memory: A's 32 x 16 tile and B's
    // 16 x (64 + 4) tile, padded by one 128-bit access since each thread
    // reads 4 consecutive columns (as float4); none is static.
    CHECK(res->sharedBytes == 0);
    CHECK(launchShape(*k).sharedBytes == (32 * 16 + 15 * 68 + 64) * 4);
  }
  // 4 + 8 floats a thread per slice (kMaxStagedFetch), as 1 + 2 quads:
  // every global load of the fetch into registers, then the shared stores.
  CHECK(src.find("float4 staged0[1];") != std::string::npos);
  CHECK(src.find("float4 staged1[2];") != std::string::npos);
  CHECK(src.find("for (int e = tid;") == std::string::npos);
  // A thread's 4 columns of B and its row of A's 16 columns: 128-bit loads.
  CHECK(src.find("const float4 Bs_0_0_x4 = *reinterpret_cast<const float4 "
                 "*>(&Bs[(0) * 68 + (t_k * 4 + 0) * 1]);") !=
        std::string::npos);
  CHECK(src.find("const float4 As_0_0_x4") != std::string::npos);
  // The prefetching variant: two stages of tiles.
  k->prefetch = true;
  auto r = compileWithNvrtc(emitSource(*k), "sm_90", err);
  INFO(err);
  REQUIRE(r);
  CHECK(launchShape(*k).sharedBytes == 2 * (32 * 16 + 15 * 68 + 64) * 4);
}

TEST_CASE("Gemm's transposed operands", "[codegen]") {
  const int64_t M = 20, K = 24, N = 36;
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> a(M * K), b(K * N); // stored transposed: [K, M], [N, K]
  for (float &v : a)
    v = dist(rng);
  for (float &v : b)
    v = dist(rng);
  TileParams p;
  p.Nb = 8, p.Kb = 16, p.Nt = 2, p.Kt = 2, p.Cin = 8;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      std::string err;
      auto k =
          buildMatMul("gemm_t", test::matmulDesc(M, K, N, ta, tb), p, {}, err);
      REQUIRE(k);
      std::vector<float> y(M * N, std::numeric_limits<float>::quiet_NaN());
      bool ran = runOnHost(
          *k, {{"A", a.data()}, {"B", b.data()}, {"Y", y.data()}}, err);
      INFO(err);
      REQUIRE(ran);
      double num = 0, den = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double v = 0;
          for (int64_t c = 0; c < K; ++c)
            v += double(ta ? a[c * M + i] : a[i * K + c]) *
                 double(tb ? b[j * K + c] : b[c * N + j]);
          double got = y[i * N + j];
          num += std::isnan(got) ? INFINITY : (got - v) * (got - v);
          den += v * v;
        }
      INFO("transA " << ta << " transB " << tb);
      CHECK(std::sqrt(num / den) <= 1e-5);
    }
}

TEST_CASE("matmul parameters that do not tile are rejected", "[codegen]") {
  TileParams p;
  p.Nb = 16, p.Kb = 16, p.Nt = 3, p.Kt = 4, p.Cin = 8;
  std::string err;
  CHECK(!buildMatMul("bad", test::matmulDesc(16, 64, 16), p, {}, err));
  CHECK(err.find("matmul tiling") != std::string::npos);
}

TEST_CASE("batched matmul: one product per grid row, with a bias epilogue",
          "[codegen][matmul]") {
  const int64_t B = 3, M = 5, K = 8, N = 6;
  OpDesc d = test::matmulDesc(M, K, N, false, false, B);
  PruneOptions opts;
  opts.topPercent = 5;
  SearchResult r = searchParams(d, *findArch("h100"), opts);
  REQUIRE(!r.kept.empty());
  std::mt19937 rng(11);
  std::vector<float> a = test::randomVector(rng, B * M * K);
  std::vector<float> b = test::randomVector(rng, B * K * N);
  std::vector<float> bias = test::randomVector(rng, N);
  int tried = 0;
  for (const Candidate &c : r.kept) {
    if (c.params.threads() > 64 || tried == 3)
      continue;
    ++tried;
    std::string err;
    auto k = buildMatMul("bmm", d, c.params,
                         {EpilogueOp::binary(dfg::Op::Add, "bias", {N})}, err);
    INFO(err);
    REQUIRE(k);
    std::vector<float> y = test::poisoned(B * M * N);
    REQUIRE(runOnHost(*k,
                      {{"A", a.data()},
                       {"B", b.data()},
                       {"bias", bias.data()},
                       {"Y", y.data()}},
                      err));
    test::RelativeL2 e;
    for (int64_t q = 0; q < B; ++q)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double v = bias[j];
          for (int64_t p = 0; p < K; ++p)
            v +=
                double(a[(q * M + i) * K + p]) * double(b[(q * K + p) * N + j]);
          e.add(y[(q * M + i) * N + j], v);
        }
    CHECK(e.value() <= 1e-5);
    auto nv = compileWithNvrtc(emitSource(*k), "sm_90", err);
    INFO(err);
    CHECK(nv);
  }
  CHECK(tried > 0);
}

TEST_CASE("batched matmul: a mask shared by the heads, stored transposed",
          "[codegen][matmul]") {
  // out [Bn, H, M, N] as the kernel's [Bn H, M, N]: mask[b] (its batch
  // digit b = bh / H) is added, and Y is stored as [Bn, M, H, N].
  const int64_t Bn = 2, H = 3, M = 5, K = 8, N = 6;
  OpDesc d = test::matmulDesc(M, K, N, false, false, Bn * H);
  PruneOptions opts;
  opts.topPercent = 5;
  SearchResult r = searchParams(d, *findArch("h100"), opts);
  REQUIRE(!r.kept.empty());
  std::mt19937 rng(12);
  std::vector<float> a = test::randomVector(rng, Bn * H * M * K);
  std::vector<float> b = test::randomVector(rng, Bn * H * K * N);
  std::vector<float> mask = test::randomVector(rng, Bn * M * N);
  int tried = 0;
  for (const Candidate &c : r.kept) {
    if (c.params.threads() > 64 || tried == 3)
      continue;
    ++tried;
    std::string err;
    auto k = buildMatMul("masked", d, c.params,
                         {EpilogueOp::binary(dfg::Op::Add, "mask", {Bn, M, N},
                                             {{0, H, 0}, {1}, {2}})},
                         err);
    INFO(err);
    REQUIRE(k);
    REQUIRE(
        storeDigits(*k, {Bn, M, H, N}, {{0, H, 0}, {1}, {0, 1, H}, {2}}, err));
    std::vector<float> y = test::poisoned(Bn * H * M * N);
    REQUIRE(runOnHost(*k,
                      {{"A", a.data()},
                       {"B", b.data()},
                       {"mask", mask.data()},
                       {"Y", y.data()}},
                      err));
    test::RelativeL2 e;
    for (int64_t q = 0; q < Bn * H; ++q)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double v = mask[(q / H * M + i) * N + j];
          for (int64_t p = 0; p < K; ++p)
            v +=
                double(a[(q * M + i) * K + p]) * double(b[(q * K + p) * N + j]);
          e.add(y[((q / H * M + i) * H + q % H) * N + j], v);
        }
    CHECK(e.value() <= 1e-5);
    CHECK(compileWithNvrtc(emitSource(*k), "sm_90", err));
  }
  CHECK(tried > 0);
}

namespace {
// The line of `src` that contains `what` (empty if none).
std::string lineWith(const std::string &src, const std::string &what) {
  size_t at = src.find(what);
  if (at == std::string::npos)
    return "";
  size_t begin = src.rfind('\n', at) + 1, end = src.find('\n', at);
  return src.substr(begin, end - begin);
}
} // namespace

TEST_CASE("the fetch checks only bounds that can fail, in 32-bit indices "
          "and four floats at a time where aligned",
          "[codegen]") {
  TileParams p;
  p.Nb = 32, p.Kb = 64, p.Nt = 4, p.Kt = 4, p.Cin = 16;
  std::string err;
  uint32_t seed = 300;
  // Tiles that divide the product: no check at all, quads of A and B.
  auto k = buildMatMul("mm", test::matmulDesc(128, 256, 192), p, {}, err);
  REQUIRE(k);
  std::string src = emitSource(*k);
  CHECK(lineWith(src, "staged0[round] = ") ==
        "        staged0[round] = *reinterpret_cast<const float4 *>(A + g0 * "
        "256 + g1 * 1);");
  CHECK(lineWith(src, "staged1[round] = ") ==
        "        staged1[round] = *reinterpret_cast<const float4 *>(B + g0 * "
        "192 + g1 * 1);");
  CHECK(src.find("long long g") == std::string::npos);
  CHECK(runAndCompare(*k, {128, 256, 192, {}}, seed++) <= 1e-5);
  // The prefetching loop skips the slice after the last instead of
  // checking every element of it.
  k->prefetch = true;
  src = emitSource(*k);
  CHECK(src.find("if (more) {") != std::string::npos);
  CHECK(lineWith(src, "staged0[round] = ").find('?') == std::string::npos);
  CHECK(runAndCompare(*k, {128, 256, 192, {}}, seed++) <= 1e-5);

  // 100 rows in blocks of 32: A's rows are checked, its columns and B not.
  k = buildMatMul("mm", test::matmulDesc(100, 256, 192), p, {}, err);
  REQUIRE(k);
  src = emitSource(*k);
  CHECK(lineWith(src, "staged0[round] = ").find("(g0 < 100) ?") !=
        std::string::npos);
  CHECK(lineWith(src, "staged1[round] = ").find('?') == std::string::npos);
  CHECK(runAndCompare(*k, {100, 256, 192, {}}, seed++) <= 1e-5);

  // 190 columns: B's rows are 190 floats, so its quads would misalign; it
  // goes one float at a time, its columns checked.
  k = buildMatMul("mm", test::matmulDesc(128, 256, 190), p, {}, err);
  REQUIRE(k);
  src = emitSource(*k);
  CHECK(src.find("float staged1[") != std::string::npos);
  CHECK(lineWith(src, "staged1[round] = ").find("g1 < 190") !=
        std::string::npos);
  CHECK(runAndCompare(*k, {128, 256, 190, {}}, seed++) <= 1e-5);
}

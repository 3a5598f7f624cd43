// The reduced-precision conversions and tensor-core operations of
// TensorCore.h in handwritten kernels: on the CPU (cuda_host.h's versions)
// against references computed here, and compiled with NVRTC for sm_80 and
// sm_90 (the GPU's versions). cuts-tensor-core-check (test/gpu, ctest
// tensor-core-gpu) runs the same kernels on a GPU against the CPU.
#include "CodegenTestUtil.h"
#include "Half.h"
#include "TensorCoreKernels.h"
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostCompile.h"
#include "codegen/emit/HostRun.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/emit/TensorCore.h"
#include "codegen/ops/MatMul.h"
#include "codegen/ops/SharedFusion.h"
#include "perfmodel/ParamSearch.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <utility>
#include <vector>

using namespace cuts;
using namespace cuts::test;
using namespace cuts::codegen;

namespace {

std::unique_ptr<HostKernel> build(const std::string &body,
                                  const KernelSignature &sig) {
  std::string error;
  auto k = compileForHost(codegen::tensorCorePrelude() + body, sig, error);
  INFO(error);
  REQUIRE(k);
  return k;
}

// `source` (the prelude first, where it is only a kernel's body) compiles
// for both architectures and holds kernel `name`.
void compilesWithNvrtc(const std::string &body, const std::string &name,
                       bool withPrelude = true,
                       std::vector<const char *> archs = {"sm_80", "sm_90"}) {
  REQUIRE(nvrtcAvailable()); // the tests build with the CUDA toolkit
  std::string error;
  std::string source = withPrelude ? codegen::tensorCorePrelude() + body : body;
  for (const char *arch : archs) {
    auto r = compileWithNvrtc(source, arch, error);
    INFO(arch << ": " << error);
    REQUIRE(r);
    CHECK(r->find(name));
  }
}

KernelArg buf(const void *p) { return KernelArg::buffer(p); }

// Every finite positive value of a 16-bit format (`toFloat` of bit
// patterns 0 .. limit), each value's midpoint with the next, and a float
// just either side of it: what round-to-nearest must decide.
std::vector<float> roundingCases(float (*toFloat)(uint16_t), uint16_t limit) {
  std::vector<float> xs;
  for (uint32_t h = 0; h < limit; ++h) {
    float lo = toFloat(uint16_t(h)), hi = toFloat(uint16_t(h + 1));
    float mid = float((double(lo) + double(hi)) / 2);
    xs.insert(xs.end(), {lo, -lo, mid, -mid, std::nextafter(mid, lo),
                         std::nextafter(mid, hi)});
  }
  return xs;
}

} // namespace

TEST_CASE("fp16, bf16 and tf32 rounding on the CPU", "[codegen][tensorcore]") {
  std::vector<float> xs = roundingCases(halfValue, 0x7bff);
  std::vector<float> bs = roundingCases(bf16Value, 0x7f7f);
  xs.insert(xs.end(), bs.begin(), bs.end());
  xs.insert(xs.end(), {65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f, INFINITY,
                       -INFINITY, 3.4e38f});
  int n = int(xs.size());
  std::vector<uint16_t> h(n), b(n);
  std::vector<float> t(n);
  auto k = build(kConvert, {"convert",
                            {{"x", "const float *"},
                             {"h", "unsigned short *"},
                             {"b", "unsigned short *"},
                             {"t", "float *"},
                             {"n", "int"}}});
  std::string error;
  REQUIRE(k->launch({unsigned((n + 255) / 256)}, {256},
                    {buf(xs.data()), buf(h.data()), buf(b.data()),
                     buf(t.data()), KernelArg::scalar(n)},
                    error));
  int wrongH = 0, wrongB = 0, wrongT = 0;
  for (int i = 0; i < n; ++i) {
    float x = xs[i];
    wrongH += h[i] != nearestEven(x, halfValue, 0x7bff, 0x7c00);
    wrongB += b[i] != nearestEven(x, bf16Value, 0x7f7f, 0x7f80);
    // tf32: 10 mantissa bits, ties away from zero.
    double a = std::fabs(double(x));
    int e;
    std::frexp(a, &e);
    double ulp = std::ldexp(1.0, e - 11);
    double r = std::isinf(a) ? a : std::floor(a / ulp + 0.5) * ulp;
    wrongT +=
        double(std::fabs(t[i])) != r || std::signbit(t[i]) != std::signbit(x);
  }
  CHECK(wrongH == 0);
  CHECK(wrongB == 0);
  CHECK(wrongT == 0);
  // And back: every 16-bit pattern to float, exactly.
  std::vector<uint16_t> all(65536);
  for (uint32_t p = 0; p < 65536; ++p)
    all[p] = uint16_t(p);
  std::vector<float> hf(65536), bf(65536);
  auto w = build(kWiden, {"widen",
                          {{"p", "const unsigned short *"},
                           {"hf", "float *"},
                           {"bf", "float *"}}});
  REQUIRE(w->launch({256}, {256},
                    {buf(all.data()), buf(hf.data()), buf(bf.data())}, error));
  int wrongWiden = 0;
  for (uint32_t p = 0; p < 65536; ++p) {
    bool nan = (p & 0x7c00) == 0x7c00 && (p & 0x3ff);
    if (nan)
      wrongWiden += !std::isnan(hf[p]);
    else if ((p & 0x7fff) == 0x7c00)
      wrongWiden += hf[p] != ((p & 0x8000) ? -INFINITY : INFINITY);
    else
      wrongWiden += hf[p] != halfValue(uint16_t(p));
    float want = bf16Value(uint16_t(p));
    wrongWiden += std::memcmp(&bf[p], &want, 4) != 0;
  }
  CHECK(wrongWiden == 0);
  compilesWithNvrtc(kConvert, "convert");
  compilesWithNvrtc(kWiden, "widen");
}

namespace {} // namespace

TEST_CASE("m16n8k16 fp16 and bf16 tensor-core products on the CPU",
          "[codegen][tensorcore]") {
  auto k = build(kMma16, {"mma16",
                          {{"A", "const unsigned short *"},
                           {"B", "const unsigned short *"},
                           {"C", "const float *"},
                           {"D", "float *"},
                           {"bf16", "int"},
                           {"aT", "int"}}});
  std::mt19937 rng(3);
  for (int bf16 : {0, 1})
    for (int aT : {0, 1}) {
      std::vector<uint16_t> a(256), b(128);
      std::vector<float> av(256), bv(128);
      random16(rng, bf16, a, av);
      random16(rng, bf16, b, bv);
      std::vector<float> c = test::randomVector(rng, 128);
      std::vector<float> d = test::poisoned(128);
      std::vector<uint16_t> stored = a; // At[k][m] when aT
      if (aT)
        for (int m = 0; m < 16; ++m)
          for (int q = 0; q < 16; ++q)
            stored[q * 16 + m] = a[m * 16 + q];
      std::string error;
      REQUIRE(k->launch({1}, {32},
                        {buf(stored.data()), buf(b.data()), buf(c.data()),
                         buf(d.data()), KernelArg::scalar(bf16),
                         KernelArg::scalar(aT)},
                        error));
      test::RelativeL2 e;
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n) {
          double want = c[m * 8 + n];
          for (int q = 0; q < 16; ++q)
            want += double(av[m * 16 + q]) * bv[q * 8 + n];
          e.add(d[m * 8 + n], want);
        }
      INFO((bf16 ? "bf16" : "fp16") << (aT ? ", A transposed" : ""));
      CHECK(e.value() <= 1e-6);
    }
  compilesWithNvrtc(kMma16, "mma16");
}

TEST_CASE("m16n8k8 tf32 tensor-core products on the CPU",
          "[codegen][tensorcore]") {
  auto k = build(kMmaTf32, {"mma_tf32",
                            {{"A", "const float *"},
                             {"B", "const float *"},
                             {"C", "const float *"},
                             {"D", "float *"}}});
  std::mt19937 rng(4);
  std::vector<float> a = test::randomVector(rng, 128);
  std::vector<float> b = test::randomVector(rng, 64);
  std::vector<float> c = test::randomVector(rng, 128);
  std::vector<float> d = test::poisoned(128);
  std::string error;
  REQUIRE(k->launch(
      {1}, {32}, {buf(a.data()), buf(b.data()), buf(c.data()), buf(d.data())},
      error));
  // tf32 keeps 10 mantissa bits, rounding ties away from zero.
  auto tf32 = [](float x) {
    int e;
    std::frexp(double(x), &e);
    double ulp = std::ldexp(1.0, e - 11);
    double r = std::floor(std::fabs(double(x)) / ulp + 0.5) * ulp;
    return x < 0 ? -r : r;
  };
  test::RelativeL2 exact, rounded;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double want = c[m * 8 + n], full = want;
      for (int q = 0; q < 8; ++q) {
        want += tf32(a[m * 8 + q]) * tf32(b[q * 8 + n]);
        full += double(a[m * 8 + q]) * b[q * 8 + n];
      }
      rounded.add(d[m * 8 + n], want);
      exact.add(d[m * 8 + n], full);
    }
  CHECK(rounded.value() <= 1e-6);
  // tf32's own error against fp32 operands: about 2^-11 relative.
  CHECK(exact.value() > 1e-5);
  CHECK(exact.value() < 3e-3);
  compilesWithNvrtc(kMmaTf32, "mma_tf32");
}

namespace {

struct MmaCase {
  int64_t M, K, N, batch;
  bool transB;
  MmaLoop loop;
  int64_t bk;
  std::vector<EpilogueOp> epilogue;
};

MmaLoop mmaLoop(dfg::Type t, int64_t warpsM, int64_t warpsN, int64_t mi,
                int64_t ni, int64_t stages,
                MatrixInstr instr = MatrixInstr::MmaSync) {
  MmaLoop m;
  m.instr = instr, m.operand = t, m.warpsM = warpsM, m.warpsN = warpsN;
  m.mi = mi, m.ni = ni, m.stages = stages;
  return m;
}

// m with a producer warpgroup and mbarrier-guarded stages.
MmaLoop specialized(MmaLoop m) {
  m.warpSpecialized = true;
  return m;
}

// x rounded to tf32: 10 mantissa bits, ties away from zero (cvt.rna).
float tf32Value(float x) {
  int e;
  std::frexp(double(x), &e);
  double ulp = std::ldexp(1.0, e - 11);
  double r = std::floor(std::fabs(double(x)) / ulp + 0.5) * ulp;
  return float(x < 0 ? -r : r);
}

// Random operands of type t: their stored words (`bits`: 16-bit patterns,
// or fp32 values) and the values the tensor cores multiply (`v`: tf32's
// rounded).
struct Operand {
  std::vector<uint16_t> half;
  std::vector<float> full, v;
  // Host kernels take their buffers as void * (runOnHost).
  void *bits() const {
    return half.empty()
               ? const_cast<float *>(full.data())
               : static_cast<void *>(const_cast<uint16_t *>(half.data()));
  }
};
Operand randomOperand(std::mt19937 &rng, dfg::Type t, size_t n) {
  Operand o;
  if (t == dfg::Type::F32) {
    o.full = test::randomVector(rng, int64_t(n));
    for (float x : o.full)
      o.v.push_back(tf32Value(x));
    return o;
  }
  o.half.resize(n), o.v.resize(n);
  random16(rng, t == dfg::Type::BF16, o.half, o.v);
  return o;
}

// The case's kernel (its matrices batched where c.batch > 1).
std::optional<Kernel> buildCase(const MmaCase &c, const std::string &name) {
  std::vector<int64_t> a = {c.M, c.K}, b = c.transB
                                               ? std::vector<int64_t>{c.N, c.K}
                                               : std::vector<int64_t>{c.K, c.N};
  std::vector<int64_t> y = {c.M, c.N};
  if (c.batch > 1)
    for (auto *s : {&a, &b, &y})
      s->insert(s->begin(), c.batch);
  OpDesc d = describeMatMul(a, b, y, false, c.transB);
  std::string err;
  auto k = codegen::buildMmaMatMul(name, d, mmaParams(c.loop, c.bk),
                                   c.loop.operand, c.epilogue, err);
  INFO(err);
  REQUIRE(k);
  return k;
}

// k's persistent variant with one block fewer than tiles (the first block
// takes two), B resident where asked.
Kernel persistentOf(const Kernel &k, bool residentB = false) {
  Kernel p = k;
  p.persistentBlocks = std::max<int64_t>(1, launchShape(k).blocks - 1);
  p.residentB = residentB;
  return p;
}

// Runs the case's kernel on the CPU and returns its relative L2 error
// against a double-precision product of the same 16-bit (or tf32)
// operands.
double runMma(const Kernel &k, const MmaCase &c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t M = c.M, K = c.K, N = c.N, B = c.batch;
  const Operand a = randomOperand(rng, c.loop.operand, size_t(B * M * K));
  const Operand b = randomOperand(rng, c.loop.operand, size_t(B * K * N));
  const std::vector<float> &av = a.v, &bv = b.v;
  std::vector<float> bias = test::randomVector(rng, N);
  std::vector<float> res = test::randomVector(rng, B * M * N);
  std::vector<float> y = test::poisoned(B * M * N);
  // Split-K's workspace: partials of any contents, counters from zero.
  const SplitKWorkspace ws = splitKWorkspace(k);
  std::vector<float> partials =
      test::poisoned(std::max<int64_t>(1, ws.partialFloats));
  std::vector<unsigned> arrived(size_t(std::max<int64_t>(1, ws.counters)), 0u);
  std::string err;
  bool ran = runOnHost(k,
                       {{"A", a.bits()},
                        {"B", b.bits()},
                        {"bias", bias.data()},
                        {"res", res.data()},
                        {"Y", y.data()},
                        {"cuts_partials", partials.data()},
                        {"cuts_arrived", arrived.data()}},
                       err);
  INFO(err);
  REQUIRE(ran);
  // Every tile's last part reset its counter for the next run.
  CHECK(std::count(arrived.begin(), arrived.end(), 0u) ==
        std::ptrdiff_t(arrived.size()));
  test::RelativeL2 e;
  for (int64_t q = 0; q < B; ++q)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double v = 0;
        for (int64_t p = 0; p < K; ++p)
          v += double(av[(q * M + i) * K + p]) *
               bv[c.transB ? (q * N + j) * K + p : (q * K + p) * N + j];
        size_t at = size_t((q * M + i) * N + j);
        for (const EpilogueOp &op : c.epilogue)
          if (op.op == dfg::Op::Add)
            v += op.operand == "bias" ? bias[j] : res[at];
          else if (op.op == dfg::Op::Relu)
            v = std::max(v, 0.0);
        e.add(y[at], v);
      }
  return e.value();
}

} // namespace

TEST_CASE("tensor-core products match the reference on the CPU",
          "[codegen][tensorcore]") {
  using dfg::Type;
  std::vector<MmaCase> cases = {
      // Ragged M and K (a partial last slice), bias + relu, 3 stages.
      {40,
       48,
       64,
       1,
       false,
       mmaLoop(Type::F16, 2, 2, 1, 2, 3),
       32,
       {EpilogueOp::binary(dfg::Op::Add, "bias", {64}),
        EpilogueOp::unary(dfg::Op::Relu)}},
      // B transposed (a Linear layer's weight), bf16, a residual.
      {32,
       64,
       48,
       1,
       true,
       mmaLoop(Type::BF16, 1, 2, 2, 2, 2),
       32,
       {EpilogueOp::binary(dfg::Op::Add, "res", {32, 48})}},
      // Batched products (attention), 4 stages, a wider warp tile.
      {24, 32, 32, 2, false, mmaLoop(Type::F16, 1, 1, 2, 4, 4), 16, {}},
      // Fewer copies than threads (a guarded last copy), N ragged, 2 stages.
      {64, 80, 48, 1, false, mmaLoop(Type::F16, 2, 2, 1, 2, 2), 16, {}},
      // wgmma: ragged M and K, two m64 tiles, n = 48, bias + relu.
      {100,
       80,
       48,
       1,
       true,
       mmaLoop(Type::F16, 1, 1, 2, 6, 3, MatrixInstr::Wgmma),
       32,
       {EpilogueOp::binary(dfg::Op::Add, "bias", {48}),
        EpilogueOp::unary(dfg::Op::Relu)}},
      // wgmma: two warpgroups, ragged N, bf16, a residual, 2 stages.
      {64,
       64,
       40,
       1,
       true,
       mmaLoop(Type::BF16, 2, 1, 1, 4, 2, MatrixInstr::Wgmma),
       64,
       {EpilogueOp::binary(dfg::Op::Add, "res", {64, 40})}},
      // wgmma: 5 slices through 3 stages, and through 4 with one slice's
      // products in flight across the next barrier (the emulation runs
      // them at their wait, so a stage refilled too early sums wrong
      // values).
      {64,
       160,
       32,
       1,
       true,
       mmaLoop(Type::F16, 1, 1, 1, 4, 3, MatrixInstr::Wgmma),
       32,
       {}},
      {128,
       160,
       64,
       1,
       true,
       mmaLoop(Type::BF16, 2, 1, 1, 8, 4, MatrixInstr::Wgmma),
       32,
       {EpilogueOp::binary(dfg::Op::Add, "bias", {64})}},
      // tf32 (fp32 operands, B transposed): ragged M, N and K (3 slices of
      // 16, the last past K), bias + relu, 3 stages.
      {40,
       40,
       24,
       1,
       true,
       mmaLoop(Type::F32, 2, 1, 1, 2, 3),
       16,
       {EpilogueOp::binary(dfg::Op::Add, "bias", {24}),
        EpilogueOp::unary(dfg::Op::Relu)}},
      // tf32: batched, a wider warp tile, slices of 32, 2 stages.
      {32, 64, 32, 2, true, mmaLoop(Type::F32, 1, 2, 2, 2, 2), 32, {}},
      // wgmma: batched, n = 16, K = 2 slices of 16.
      {64,
       32,
       16,
       2,
       true,
       mmaLoop(Type::F16, 1, 1, 1, 2, 4, MatrixInstr::Wgmma),
       16,
       {}},
      // wgmma over 4 row tiles (the last ragged), 3 slices through 3
      // stages, and 2 slices through 4 (one slice's products in flight):
      // a persistent block's pipeline runs on from tile to tile.
      {200,
       96,
       32,
       1,
       true,
       mmaLoop(Type::F16, 1, 1, 1, 4, 3, MatrixInstr::Wgmma),
       32,
       {EpilogueOp::binary(dfg::Op::Add, "bias", {32})}},
      {256,
       64,
       32,
       1,
       true,
       mmaLoop(Type::BF16, 1, 1, 1, 4, 4, MatrixInstr::Wgmma),
       32,
       {}},
      // Warp-specialised wgmma: ragged M and K, two m64 tiles, bias + relu.
      {100,
       80,
       48,
       1,
       true,
       specialized(mmaLoop(Type::F16, 1, 1, 2, 6, 3, MatrixInstr::Wgmma)),
       32,
       {EpilogueOp::binary(dfg::Op::Add, "bias", {48}),
        EpilogueOp::unary(dfg::Op::Relu)}},
      // Two consumer warpgroups, bf16, a residual; 7 slices through 2
      // stages, so each stage's mbarriers go round several phases.
      {128,
       224,
       40,
       1,
       true,
       specialized(mmaLoop(Type::BF16, 2, 1, 1, 6, 2, MatrixInstr::Wgmma)),
       32,
       {EpilogueOp::binary(dfg::Op::Add, "res", {128, 40})}},
      // Batched, 4 stages for 2 slices (stages never refilled).
      {64,
       32,
       16,
       2,
       true,
       specialized(mmaLoop(Type::F16, 1, 1, 1, 2, 4, MatrixInstr::Wgmma)),
       16,
       {}},
      // Deep pipelines (a batch-1 Linear layer's): 8 and 6 stages over 20
      // slices of 16, each stage refilled twice or more, K ragged.
      {64,
       312,
       32,
       1,
       true,
       mmaLoop(Type::F16, 1, 1, 1, 4, 8, MatrixInstr::Wgmma),
       16,
       {EpilogueOp::binary(dfg::Op::Add, "bias", {32})}},
      {80,
       312,
       32,
       1,
       true,
       specialized(mmaLoop(Type::BF16, 1, 1, 1, 4, 8, MatrixInstr::Wgmma)),
       16,
       {}},
      {48, 312, 32, 1, false, mmaLoop(Type::F16, 1, 2, 1, 2, 6), 16, {}},
  };
  uint32_t seed = 21;
  int staged = 0, prefetching = 0, multiTile = 0, resident = 0;
  for (const MmaCase &c : cases) {
    std::optional<Kernel> k = buildCase(c, "mma_test");
    INFO(c.M << "x" << c.K << "x" << c.N << " batch " << c.batch
             << (c.transB ? " B^T" : "") << " " << int(c.loop.operand));
    CHECK(runMma(*k, c, seed) <= 1e-6);
    // B a weight: a multistage loop copies its first slices before it
    // waits for the previous kernel; the same products.
    Kernel w = *k;
    w.weightB = true;
    CHECK(runMma(w, c, seed++) <= 1e-6);
    const std::string ws = emitSource(w);
    const size_t wait = ws.find("griddepcontrol.wait");
    REQUIRE(wait != std::string::npos);
    CHECK((ws.find("fetchB(s, ") < wait) == !c.loop.warpSpecialized);
    // Persistent: blocks loop over the tiles, each one's pipeline running
    // on into its next tile (ragged last tiles, staged exits).
    std::string persistent;
    if (!c.loop.warpSpecialized) {
      const Kernel pk = persistentOf(w);
      const int64_t tiles = launchShape(w).blocks;
      CHECK(runMma(pk, c, seed) <= 1e-6);
      CHECK(launchShape(pk).blocks == pk.persistentBlocks);
      multiTile += tiles > 1 && c.loop.instr == MatrixInstr::Wgmma;
      // Where every tile reads all of B, it may be copied once.
      const Kernel rk = persistentOf(w, true);
      CHECK(runMma(rk, c, seed) <= 1e-6);
      persistent = emitSource(rk);
      resident += persistent.find("B, once") != std::string::npos;
      CHECK(persistent.find("tile += gridDim.x") != std::string::npos);
    } else { // no persistent warp-specialised loop: a block a tile still
      Kernel pk = w;
      pk.persistentBlocks = 1;
      CHECK(launchShape(pk).blocks == launchShape(w).blocks);
      CHECK(emitSource(pk) == emitSource(w));
    }
    std::string src = emitSource(*k);
    CHECK(src.find("fetchB") == std::string::npos);
    const bool wgmma = c.loop.instr == MatrixInstr::Wgmma;
    CHECK(src.find(wgmma ? "wgmma.mma_async" : "cuts_ldmatrix_x4") !=
          std::string::npos);
    CHECK((src.find("cuts_mbar_wait(bars") != std::string::npos) ==
          c.loop.warpSpecialized);
    staged += src.find("cuts_ytile[") != std::string::npos;
    const bool residual = !c.epilogue.empty() && c.epilogue[0].operand == "res";
    if (residual && src.find("cuts_ytile[") != std::string::npos)
      CHECK(src.find("? res + ") != std::string::npos);
    // Even rows of Y: a lane's column pairs are stored 8 bytes at a time.
    CHECK(src.find("make_float2") != std::string::npos);
    // The prefetching variant: the residual's tile beside the stages,
    // copied in before the loop (and after the weights' first slices).
    std::string early;
    CHECK(prefetchesOperand(*k) == (residual && !c.loop.warpSpecialized));
    if (prefetchesOperand(*k)) {
      ++prefetching;
      Kernel e = w;
      e.prefetch = true;
      CHECK(runMma(e, c, seed++) <= 1e-6);
      early = emitSource(e);
      const size_t copy = early.find("? res + "), loop = early.find("kt = 0");
      CHECK(copy < loop);
      CHECK(early.find("fetchB(s, ") < copy);
      CHECK(launchShape(e).sharedBytes > launchShape(w).sharedBytes);
    }
    for (const std::string *text :
         std::vector<const std::string *>{&src, &ws, &early, &persistent})
      if (!text->empty())
        compilesWithNvrtc(*text, "mma_test", /*withPrelude=*/false,
                          wgmma ? std::vector<const char *>{"sm_90a"}
                                : std::vector<const char *>{"sm_80", "sm_90"});
  }
  // fp32 rows of whole 16-byte chunks leave through a shared tile (both
  // pipelines, batched, ragged M and N), but for the 2-stage
  // warp-specialised loop, whose stages leave too little room for its
  // 128 x 48 tile: it stores its fragments directly.
  CHECK(staged == int(cases.size()) - 1);
  CHECK(prefetching == 2);
  CHECK(multiTile >= 3);
  CHECK(resident >= 3);
}

TEST_CASE("split-K products sum their parts in the last block on the CPU",
          "[codegen][tensorcore]") {
  using dfg::Type;
  const std::vector<EpilogueOp> biasRelu = {
      EpilogueOp::binary(dfg::Op::Add, "bias", {48}),
      EpilogueOp::unary(dfg::Op::Relu)};
  std::vector<MmaCase> cases = {
      // mma.sync, ragged M, 4 slices, bias + relu.
      {40, 128, 48, 1, false, mmaLoop(Type::F16, 2, 2, 1, 2, 3), 32, biasRelu},
      // wgmma, ragged M and K (the last part's last slice overhangs K).
      {100, 184, 48, 1, true,
       mmaLoop(Type::F16, 1, 1, 2, 6, 3, MatrixInstr::Wgmma), 32, biasRelu},
      // Warp-specialised, staged exit.
      {100, 192, 48, 1, true,
       specialized(mmaLoop(Type::F16, 1, 1, 2, 6, 3, MatrixInstr::Wgmma)), 32,
       biasRelu},
      // Warp-specialised, 2 stages: its fragments stored directly (the
      // producer warpgroup returns after the count), a residual.
      {128,
       192,
       40,
       1,
       true,
       specialized(mmaLoop(Type::BF16, 2, 1, 1, 6, 2, MatrixInstr::Wgmma)),
       32,
       {EpilogueOp::binary(dfg::Op::Add, "res", {128, 40})}},
      // Batched (attention's shape), tf32.
      {32, 128, 32, 2, true, mmaLoop(Type::F32, 1, 2, 2, 2, 2), 32, {}},
  };
  uint32_t seed = 5;
  int split = 0;
  for (const MmaCase &c : cases) {
    std::optional<Kernel> k = buildCase(c, "mma_split");
    k->weightB = true;
    INFO(c.M << "x" << c.K << "x" << c.N << " batch " << c.batch);
    const int64_t slices = (c.K + c.bk - 1) / c.bk;
    CHECK_FALSE(canSplitK(*k, slices)); // a part needs two slices
    Kernel early = *k; // its residual's copies in flight at a part's return
    early.prefetch = true;
    CHECK_FALSE(canSplitK(early, 2));
    for (int64_t parts : {2, 3}) {
      INFO(parts << " parts");
      if (slices % parts) {
        CHECK_FALSE(canSplitK(*k, parts));
        continue;
      }
      Kernel sk = *k;
      sk.splitK = parts;
      REQUIRE(canSplitK(sk, parts));
      CHECK(runMma(sk, c, seed++) <= 1e-6);
      CHECK(launchShape(sk).blocks == parts * launchShape(*k).blocks);
      const SplitKWorkspace w = splitKWorkspace(sk);
      CHECK(w.counters == launchShape(*k).blocks);
      CHECK(w.partialFloats ==
            parts * w.counters * sk.params.Nb * sk.params.Kb);
      const std::string src = emitSource(sk);
      CHECK(src.find("split-K: " + std::to_string(parts)) != std::string::npos);
      compilesWithNvrtc(src, "mma_split", /*withPrelude=*/false,
                        c.loop.instr == MatrixInstr::Wgmma
                            ? std::vector<const char *>{"sm_90a"}
                            : std::vector<const char *>{"sm_80", "sm_90"});
      ++split;
    }
    // Not split: the kernel's own source, no workspace.
    Kernel one = *k;
    one.splitK = 1;
    CHECK(emitSource(one) == emitSource(*k));
    CHECK(splitKWorkspace(one).counters == 0);
  }
  CHECK(split >= 7);
}

TEST_CASE("tensor-core epilogues move 16-bit tensors a column pair at a time",
          "[codegen][tensorcore]") {
  // As in a model compiled --precision fp16 or bf16: bias, residual and Y
  // hold 16-bit values, so a lane's column pair is one 32-bit load or
  // store, guarded as a whole where a block overhangs N. An odd N puts
  // Y's rows at odd elements, where pairs are not 4-byte aligned: its
  // stores stay single, while the bias vector's pairs end ragged (the last
  // element read alone).
  using dfg::Type;
  struct Case {
    int64_t M, K, N;
    bool bf16;
    MmaLoop loop;
    int64_t bk;
  };
  const std::vector<Case> cases = {
      {40, 48, 42, false, mmaLoop(Type::F16, 2, 2, 1, 2, 3), 32},
      {40, 48, 41, false, mmaLoop(Type::F16, 2, 2, 1, 2, 3), 32},
      {64, 64, 48, true, mmaLoop(Type::BF16, 1, 2, 2, 2, 2), 32},
      {100, 80, 46, false,
       mmaLoop(Type::F16, 1, 1, 2, 6, 3, MatrixInstr::Wgmma), 32}};
  const std::vector<EpilogueOp> epilogue = {
      EpilogueOp::binary(dfg::Op::Add, "bias", {0}),
      EpilogueOp::binary(dfg::Op::Add, "res", {0, 0}),
      EpilogueOp::unary(dfg::Op::Relu)};
  std::mt19937 rng(5);
  for (const Case &c : cases) {
    const int64_t M = c.M, K = c.K, N = c.N;
    std::vector<EpilogueOp> epi = epilogue;
    epi[0].operandShape = {N}, epi[1].operandShape = {M, N};
    OpDesc d = describeMatMul({M, K}, {N, K}, {M, N}, false, true);
    std::string err;
    auto k = buildMmaMatMul("mma16", d, mmaParams(c.loop, c.bk), c.loop.operand,
                            epi, err);
    INFO(err);
    REQUIRE(k);
    for (const char *t : {"bias", "res", "Y"})
      REQUIRE(setTensorType(*k, t, c.loop.operand));
    std::vector<uint16_t> a(M * K), b(N * K), bias(N), res(M * N);
    std::vector<float> av(a.size()), bv(b.size()), biasv(N), resv(M * N);
    random16(rng, c.bf16, a, av);
    random16(rng, c.bf16, b, bv);
    random16(rng, c.bf16, bias, biasv);
    random16(rng, c.bf16, res, resv);
    std::vector<uint16_t> y(M * N, 0x7fff); // NaN in both formats
    REQUIRE(runOnHost(*k,
                      {{"A", a.data()},
                       {"B", b.data()},
                       {"bias", bias.data()},
                       {"res", res.data()},
                       {"Y", y.data()}},
                      err));
    // Against the reference rounded once to the 16-bit type, as the kernel
    // rounds its fp32 result: equal but where the summation order tips a
    // rounding.
    RelativeL2 e;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double v = biasv[j] + resv[i * N + j];
        for (int64_t p = 0; p < K; ++p)
          v += double(av[i * K + p]) * bv[j * K + p];
        float want = float(std::max(v, 0.0));
        uint16_t got = y[i * N + j];
        want = c.bf16 ? bf16Value(toBf16(want)) : halfValue(toHalf(want));
        e.add(c.bf16 ? bf16Value(got) : halfValue(got), want);
      }
    INFO(M << "x" << K << "x" << N << (c.bf16 ? " bf16" : " fp16"));
    CHECK(e.value() <= 5e-4);
    std::string src = emitSource(*k);
    // Rows of whole 16-byte chunks go through a shared tile, stored 16
    // bytes a thread; other even rows a lane's pair at a time.
    const bool staged = N % 8 == 0, pairs = N % 2 == 0 && !staged;
    CHECK((src.find("__stwb(reinterpret_cast<unsigned *>(&Y[") !=
           std::string::npos) == pairs);
    CHECK((src.find("__stwb(reinterpret_cast<uint4 *>(&Y[") !=
           std::string::npos) == staged);
    // ... and the residual, laid out as Y, comes in through the same tile.
    CHECK((src.find("? res + ") != std::string::npos) == staged);
    CHECK(src.find("reinterpret_cast<const unsigned *>(&bias[") !=
          std::string::npos);
    const bool wgmma = c.loop.instr == MatrixInstr::Wgmma;
    compilesWithNvrtc(src, "mma16", /*withPrelude=*/false,
                      wgmma ? std::vector<const char *>{"sm_90a"}
                            : std::vector<const char *>{"sm_80", "sm_90"});
  }
}

TEST_CASE("tensor-core products refuse what they cannot tile",
          "[codegen][tensorcore]") {
  MmaLoop m;
  std::string err;
  OpDesc d = describeMatMul({32, 20}, {20, 32}, {32, 32}, false, false);
  CHECK_FALSE(
      codegen::buildMmaMatMul("k20", d, mmaParams(m, 32), m.operand, {}, err));
  CHECK(err.find("16-byte") != std::string::npos);
  d = describeMatMul({32, 32}, {32, 32}, {32, 32}, false, false);
  TileParams p = mmaParams(m, 32);
  p.Nt = 1;
  CHECK_FALSE(codegen::buildMmaMatMul("tile", d, p, m.operand, {}, err));
  CHECK(err.find("tensor-core tiling") != std::string::npos);
}

TEST_CASE("every tensor-core set the search enumerates is generated, with "
          "the shared memory the bound counts",
          "[codegen][tensorcore][perfmodel]") {
  const GpuArch h100 = *findArch("h100"), a100 = *findArch("a100");
  struct Shape {
    std::vector<int64_t> a, b, y;
    bool transB;
  };
  // BERT's batch-1 projection (B as stored, and as a Linear weight), a
  // ragged attention product, and a batched one.
  const Shape shapes[] = {{{128, 768}, {768, 2304}, {128, 2304}, false},
                          {{128, 768}, {3072, 768}, {128, 3072}, true},
                          {{40, 24}, {24, 56}, {40, 56}, false},
                          {{4, 64, 32}, {4, 32, 64}, {4, 64, 64}, false}};
  for (const Shape &s : shapes) {
    OpDesc d = describeMatMul(s.a, s.b, s.y, false, s.transB);
    d.elementBytes = 2;
    for (const GpuArch *arch : {&h100, &a100}) {
      int64_t sets = 0, wgmma = 0;
      forEachTensorCoreParams(d, *arch, [&](const TileParams &p) {
        ++sets;
        wgmma += p.instr == MatrixInstr::Wgmma;
        // No stage beyond the product's K slices (two at least), and no
        // accumulators past the register cap (a wgmma's cannot spill).
        CHECK(p.stages <= std::max<int64_t>(2, (d.C + p.Cin - 1) / p.Cin));
        CHECK(tensorCoreRegisters(p) <= registerCap(p.threads(), *arch));
        std::string err;
        auto k = buildMmaMatMul("k", d, p, dfg::Type::F16, {}, err);
        INFO(paramsText(p) << ": " << err);
        REQUIRE(k);
        CHECK(launchShape(*k).sharedBytes == sharedBytes(d, p));
        CHECK(launchShape(*k).threads == p.threads());
      });
      INFO(arch->name << " " << d.N << "x" << d.C << "x" << d.K);
      CHECK(sets > 0);
      // wgmma only where it exists and reads B as stored.
      CHECK((wgmma > 0) == (arch == &h100 && s.transB));
      // The widest one-warpgroup wgmma tile, m64 x n256 twice (256
      // accumulators a thread), would spill: never enumerated.
      int64_t spilling = 0;
      forEachTensorCoreParams(d, *arch, [&](const TileParams &p) {
        spilling += p.instr == MatrixInstr::Wgmma && p.Nt == 4 && p.Kt == 64;
      });
      CHECK(spilling == 0);
    }
  }
  // fp32 products stay on the SIMT units, unless tf32 is allowed and B is
  // N x K: then mma.sync sets only, every one generated.
  OpDesc f32 = describeMatMul({64, 64}, {64, 64}, {64, 64}, false, false);
  int64_t n = 0;
  forEachTensorCoreParams(f32, h100, [&](const TileParams &) { ++n; });
  CHECK(n == 0);
  f32.tf32 = true;
  forEachTensorCoreParams(f32, h100, [&](const TileParams &) { ++n; });
  CHECK(n == 0);
  OpDesc tf32 = describeMatMul({128, 96}, {64, 96}, {128, 64}, false, true);
  tf32.tf32 = true;
  forEachTensorCoreParams(tf32, h100, [&](const TileParams &p) {
    ++n;
    CHECK(p.instr == MatrixInstr::MmaSync);
    std::string err;
    auto k = buildMmaMatMul("k", tf32, p, dfg::Type::F32, {}, err);
    INFO(paramsText(p) << ": " << err);
    REQUIRE(k);
    CHECK(launchShape(*k).sharedBytes == sharedBytes(tf32, p));
  });
  CHECK(n > 0);
}

TEST_CASE("the bound ranks tensor-core sets by their peak",
          "[perfmodel][tensorcore]") {
  const GpuArch h100 = *findArch("h100");
  OpDesc d =
      describeMatMul({4096, 768}, {3072, 768}, {4096, 3072}, false, true);
  d.elementBytes = 2;
  SearchResult r = searchParams(d, h100);
  REQUIRE(!r.kept.empty());
  const Candidate &best = r.kept.front();
  INFO(paramsText(best.params));
  CHECK(best.params.tensorCore());
  CHECK(best.bound.peak == h100.perfPeakFp16);
  // An upper bound: no faster than the tensor peak, and below the time
  // the GEMM's operands take to read once.
  const double flops = 2.0 * 4096 * 768 * 3072;
  CHECK(best.bound.timeLowerBound >= flops / h100.perfPeakFp16);
  CHECK(best.bound.pul > 0);
  CHECK(best.bound.pul <= 1);
}

TEST_CASE("tensor-core tiles stream from L2 at the cp.async rate where it "
          "is measured",
          "[perfmodel][tensorcore]") {
  // A large GEMM in 64 x 64 blocks: its tiles' L2 traffic (each operand
  // re-read by every block of a row or column) binds the bound.
  GpuArch a = *findArch("h200");
  OpDesc d =
      describeMatMul({4096, 4096}, {4096, 4096}, {4096, 4096}, false, true);
  d.elementBytes = 2;
  TileParams p;
  bool found = false;
  forEachTensorCoreParams(d, a, [&](const TileParams &q) {
    if (!found && q.instr == MatrixInstr::Wgmma && q.Nb == 64 && q.Kb == 64)
      p = q, found = true;
  });
  REQUIRE(found);
  a.bwL2CpAsync = 0;
  const Bound measuredLd = evaluateBound(d, p, a);
  a.bwL2CpAsync = 2 * a.bwL2;
  const Bound measuredAsync = evaluateBound(d, p, a);
  REQUIRE(measuredLd.gmRaw < 0.5);
  CHECK(measuredAsync.gmRaw == Approx(2 * measuredLd.gmRaw).epsilon(1e-9));
}

TEST_CASE("where DRAM binds, tensor-core sets rank by the blocks an SM "
          "holds, and a fused residual's bytes count",
          "[perfmodel][tensorcore]") {
  const GpuArch h200 = *findArch("h200");
  // ResNet-50's layer-1 1x1 conv at batch 64 (64 -> 256 channels, 56 x 56):
  // one K slice, its time the bytes it moves.
  Window win{{1, 1}, {0, 0, 0, 0}, {1, 1}};
  OpDesc d = describeImplicitGemm({64, 56, 56, 64}, {256, 1, 1, 64},
                                  {64, 56, 56, 256}, win);
  d.elementBytes = 2;
  SearchResult r = searchParams(d, h200);
  REQUIRE(r.kept.size() > 1);
  const Candidate &best = r.kept.front();
  INFO(paramsText(best.params));
  CHECK(best.bound.gmRatio < 1);
  int64_t most = 0;
  for (const Candidate &c : r.kept) {
    if (c.bound.pul == best.bound.pul)
      most = std::max(most, c.bound.residentBlocks);
    // No stage beyond the product's slices (two at least).
    CHECK(c.params.stages <=
          std::max<int64_t>(2, (d.C + c.params.Cin - 1) / c.params.Cin));
  }
  CHECK(best.bound.residentBlocks == most);
  CHECK(best.bound.residentBlocks >= 3);
  // The same set with a residual added: its bytes lengthen the bound.
  FusedExtra residual;
  residual.elements = double(64 * 56 * 56 * 256);
  const Bound plain = evaluateBound(d, best.params, h200, -1, nullptr, 1);
  const Bound fused = evaluateBound(d, best.params, h200, -1, &residual, 1);
  CHECK(fused.timeLowerBound > 1.5 * plain.timeLowerBound);
}

TEST_CASE("the kept tensor-core sets span several block shapes",
          "[perfmodel][tensorcore]") {
  // ResNet-50's layer-2 512 -> 128 1 x 1 conv at batch 64: its top 1 % is
  // nine 256 x 128 sets; the best set of each next block shape follows.
  const GpuArch h200 = *findArch("h200");
  OpDesc d =
      describeImplicitGemm({64, 28, 28, 512}, {128, 1, 1, 512},
                           {64, 28, 28, 128}, {{1, 1}, {0, 0, 0, 0}, {1, 1}});
  d.elementBytes = 2;
  SearchResult r = searchParams(d, h200);
  const int64_t top = keepCount(r.enumerated, PruneOptions{});
  REQUIRE(int64_t(r.kept.size()) > top);
  auto shape = [](const TileParams &p) {
    return std::to_string(int(p.instr)) + " " + std::to_string(p.Nb) + "x" +
           std::to_string(p.Kb) + " " + std::to_string(p.warpsM) + "x" +
           std::to_string(p.warpsN) + " " + std::to_string(p.Nt) + "x" +
           std::to_string(p.Kt);
  };
  std::set<std::string> topShapes, shapes;
  for (int64_t i = 0; i < int64_t(r.kept.size()); ++i) {
    (i < top ? topShapes : shapes).insert(shape(r.kept[size_t(i)].params));
    if (i > 0) // still best first
      CHECK_FALSE(
          betterBound(r.kept[size_t(i)].bound, r.kept[size_t(i - 1)].bound));
  }
  CHECK(topShapes.size() < size_t(kKeptTilings));
  for (const std::string &s : topShapes)
    CHECK(shapes.count(s) == 0); // a shape once: its best set
  CHECK(topShapes.size() + shapes.size() == size_t(kKeptTilings));
  // Each added set is the best of its shape.
  std::vector<Candidate> all;
  forEachTensorCoreParams(d, h200, [&](const TileParams &p) {
    all.push_back({p, evaluateBound(d, p, h200)});
  });
  for (int64_t i = top; i < int64_t(r.kept.size()); ++i)
    for (const Candidate &c : all)
      if (shape(c.params) == shape(r.kept[size_t(i)].params))
        CHECK_FALSE(betterBound(c.bound, r.kept[size_t(i)].bound));
}

TEST_CASE("mma.sync sets are bounded by its measured peak where known",
          "[perfmodel][tensorcore]") {
  GpuArch h100 = *findArch("h100");
  OpDesc d =
      describeMatMul({4096, 768}, {3072, 768}, {4096, 3072}, false, true);
  d.elementBytes = 2;
  TileParams sync, wg;
  forEachTensorCoreParams(d, h100, [&](const TileParams &p) {
    (p.instr == MatrixInstr::MmaSync ? sync : wg) = p;
  });
  REQUIRE(sync.tensorCore());
  REQUIRE(wg.tensorCore());
  h100.perfPeakMmaSync = 0;
  CHECK(evaluateBound(d, sync, h100).peak == h100.perfPeakFp16);
  h100.perfPeakMmaSync = 0.6 * h100.perfPeakFp16;
  CHECK(evaluateBound(d, sync, h100).peak == h100.perfPeakMmaSync);
  CHECK(evaluateBound(d, wg, h100).peak == h100.perfPeakFp16);
}

TEST_CASE("tensor-core products read transposed operands in place",
          "[codegen][tensorcore]") {
  // Attention's scores: Q' K''^T for each (b, h), Q' and K'' the [0, 2, 1,
  // 3] transposes of [B, S, H, D] tensors, read where they are (rows H x D
  // apart, product (b, h) at b S H D + h D); S = 40 leaves a ragged tile.
  const int64_t Bn = 2, S = 40, H = 3, D = 32;
  OpDesc d = describeMatMul({Bn * H, S, D}, {Bn * H, S, D}, {Bn * H, S, S},
                            false, true);
  MmaView v;
  v.shape = {Bn, S, H, D};
  v.batchExtents = {Bn, H};
  v.batchStrides = {S * H * D, D};
  v.rowStride = H * D;
  for (MatrixInstr instr : {MatrixInstr::MmaSync, MatrixInstr::Wgmma}) {
    MmaLoop m = instr == MatrixInstr::Wgmma
                    ? mmaLoop(dfg::Type::F16, 1, 1, 1, 4, 3, instr)
                    : mmaLoop(dfg::Type::F16, 2, 2, 1, 2, 3, instr);
    std::string err;
    auto k = buildMmaMatMul("views", d, mmaParams(m, 32), dfg::Type::F16, {},
                            err, {v, v});
    INFO(err);
    REQUIRE(k);
    std::mt19937 rng(5);
    std::vector<uint16_t> q(Bn * S * H * D), kk(q.size());
    std::vector<float> qv(q.size()), kv(q.size());
    random16(rng, false, q, qv);
    random16(rng, false, kk, kv);
    std::vector<float> y = test::poisoned(Bn * H * S * S);
    REQUIRE(runOnHost(*k, {{"A", q.data()}, {"B", kk.data()}, {"Y", y.data()}},
                      err));
    test::RelativeL2 e;
    for (int64_t b = 0; b < Bn; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < S; ++i)
          for (int64_t j = 0; j < S; ++j) {
            double ref = 0;
            for (int64_t c = 0; c < D; ++c)
              ref += double(qv[((b * S + i) * H + h) * D + c]) *
                     kv[((b * S + j) * H + h) * D + c];
            e.add(y[((b * H + h) * S + i) * S + j], ref);
          }
    CHECK(e.value() <= 1e-6);
    compilesWithNvrtc(emitSource(*k), "views", /*withPrelude=*/false,
                      instr == MatrixInstr::Wgmma
                          ? std::vector<const char *>{"sm_90a"}
                          : std::vector<const char *>{"sm_90"});
  }
  // Rows that do not start on 16 bytes are refused.
  v.rowStride = H * D + 1;
  std::string err;
  CHECK_FALSE(buildMmaMatMul(
      "views", d, mmaParams(mmaLoop(dfg::Type::F16, 2, 2, 1, 2, 3), 32),
      dfg::Type::F16, {}, err, {v, std::nullopt}));
  CHECK(err.find("16-byte") != std::string::npos);
}

TEST_CASE("tensor-core epilogues read a mask shared by the heads and store "
          "transposed",
          "[codegen][tensorcore]") {
  // Attention's scores for (b, h) plus mask[b] (a [B, 1, S, S] tensor: the
  // batch axis's digit b = bh / H), stored as [B, S, H, S] (a [0, 2, 1, 3]
  // transpose: h = bh % H is the second digit); S = 40 is ragged.
  const int64_t Bn = 2, S = 40, H = 3, D = 32;
  OpDesc d = describeMatMul({Bn * H, S, D}, {Bn * H, S, D}, {Bn * H, S, S},
                            false, true);
  const std::vector<EpilogueOp> epi = {EpilogueOp::binary(
      dfg::Op::Add, "mask", {Bn, S, S}, {{0, H, 0}, {1}, {2}})};
  const std::vector<OutputDigit> store = {{0, H, 0}, {1}, {0, 1, H}, {2}};
  for (MatrixInstr instr : {MatrixInstr::MmaSync, MatrixInstr::Wgmma}) {
    MmaLoop m = instr == MatrixInstr::Wgmma
                    ? mmaLoop(dfg::Type::F16, 1, 1, 1, 4, 3, instr)
                    : mmaLoop(dfg::Type::F16, 2, 2, 1, 2, 3, instr);
    std::string err;
    auto k =
        buildMmaMatMul("masked", d, mmaParams(m, 32), dfg::Type::F16, epi, err);
    INFO(err);
    REQUIRE(k);
    REQUIRE(storeDigits(*k, {Bn, S, H, S}, store, err));
    std::mt19937 rng(6);
    const Operand q = randomOperand(rng, dfg::Type::F16, Bn * H * S * D);
    const Operand kk = randomOperand(rng, dfg::Type::F16, Bn * H * S * D);
    const std::vector<float> &qv = q.v, &kv = kk.v;
    std::vector<float> mask = test::randomVector(rng, Bn * S * S);
    std::vector<float> y = test::poisoned(Bn * H * S * S);
    REQUIRE(runOnHost(*k,
                      {{"A", q.bits()},
                       {"B", kk.bits()},
                       {"mask", mask.data()},
                       {"Y", y.data()}},
                      err));
    test::RelativeL2 e;
    for (int64_t b = 0; b < Bn; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < S; ++i)
          for (int64_t j = 0; j < S; ++j) {
            double ref = mask[(b * S + i) * S + j];
            for (int64_t c = 0; c < D; ++c)
              ref += double(qv[((b * H + h) * S + i) * D + c]) *
                     kv[((b * H + h) * S + j) * D + c];
            e.add(y[((b * S + i) * H + h) * S + j], ref);
          }
    CHECK(e.value() <= 1e-6);
    compilesWithNvrtc(emitSource(*k), "masked", /*withPrelude=*/false,
                      instr == MatrixInstr::Wgmma
                          ? std::vector<const char *>{"sm_90a"}
                          : std::vector<const char *>{"sm_90"});
  }
  // A store that moves the innermost axis would not coalesce: refused.
  std::string err;
  auto k = buildMmaMatMul("masked", d,
                          mmaParams(mmaLoop(dfg::Type::F16, 2, 2, 1, 2, 3), 32),
                          dfg::Type::F16, {}, err);
  REQUIRE(k);
  CHECK_FALSE(storeDigits(*k, {Bn * H, S, S}, {{0}, {2}, {1}}, err));
  CHECK(err.find("innermost") != std::string::npos);
}

TEST_CASE("channels-last convs run as implicit GEMMs on the CPU",
          "[codegen][tensorcore]") {
  struct ConvCase {
    std::vector<int64_t> x, w;          // N H W C, M FH FW C
    int64_t stride, pad, dilation, cin; // cin: C_input
    MmaLoop loop;
    int64_t padW = -1;   // the begin padding along W, where not `pad`
    bool paired = false; // 16-byte copies of pixel pairs (pairedPixels)
  };
  using dfg::Type;
  const std::vector<ConvCase> cases = {
      // 3x3, padding, 2 images of 7 x 7 (98 rows: a ragged tile), 2 slices
      // of channels a window position.
      {{2, 7, 7, 32},
       {24, 3, 3, 32},
       1,
       1,
       1,
       16,
       mmaLoop(Type::F16, 2, 1, 2, 2, 3)},
      // Strided 3x3 (ResNet's downsampling), wgmma, one slice a position.
      {{1, 9, 9, 16},
       {32, 3, 3, 16},
       2,
       1,
       1,
       16,
       mmaLoop(Type::F16, 1, 1, 1, 4, 4, MatrixInstr::Wgmma)},
      // 1x1 without padding (no window checks), bf16, wgmma, 64 channels.
      {{2, 6, 6, 64},
       {40, 1, 1, 64},
       1,
       0,
       1,
       64,
       mmaLoop(Type::BF16, 1, 1, 1, 6, 2, MatrixInstr::Wgmma)},
      // 1x1 on 24 channels (MobileNetV2's): the second slice of 16 is
      // half past them, zero-filled; mma.sync and wgmma.
      {{2, 5, 5, 24},
       {16, 1, 1, 24},
       1,
       0,
       1,
       16,
       mmaLoop(Type::F16, 1, 1, 1, 2, 2)},
      {{1, 8, 8, 24},
       {32, 1, 1, 24},
       1,
       0,
       1,
       16,
       mmaLoop(Type::BF16, 1, 1, 1, 4, 3, MatrixInstr::Wgmma)},
      // A stem: 7x7 stride 2 on 8 channels (3 padded), each 16-byte chunk
      // of a slice at its own window position, K = 392 ragged; wgmma.
      {{2, 12, 12, 8},
       {16, 7, 7, 8},
       2,
       3,
       1,
       16,
       mmaLoop(Type::F16, 1, 1, 1, 2, 3, MatrixInstr::Wgmma)},
      // A 16-bit stem padded to 4 channels: each 8-byte copy of a slice at
      // its own window position, K = 196 (half a swizzled chunk a copy);
      // wgmma with slices of 64, mma.sync with slices of 16.
      {{2, 12, 12, 4},
       {16, 7, 7, 4},
       2,
       3,
       1,
       64,
       mmaLoop(Type::F16, 1, 1, 1, 2, 3, MatrixInstr::Wgmma)},
      {{1, 11, 11, 4},
       {16, 7, 7, 4},
       2,
       3,
       1,
       16,
       mmaLoop(Type::BF16, 1, 2, 1, 2, 2)},
      // 3x3 on 8 channels, 8 window positions a slice (K = 72: the second
      // slice mostly past it), bf16, mma.sync.
      {{1, 9, 9, 8},
       {24, 3, 3, 8},
       2,
       1,
       1,
       64,
       mmaLoop(Type::BF16, 1, 2, 1, 2, 2)},
      // tf32: a stem of 4 channels (3 padded), each 16-byte chunk of 4
      // fp32 channels at its own window position, K = 196 ragged.
      {{2, 12, 12, 4},
       {16, 7, 7, 4},
       2,
       3,
       1,
       16,
       mmaLoop(Type::F32, 2, 1, 2, 2, 3)},
      // tf32: 3x3 with padding, 2 slices of 16 channels a position.
      {{1, 7, 7, 32},
       {24, 3, 3, 32},
       1,
       1,
       1,
       16,
       mmaLoop(Type::F32, 2, 1, 1, 4, 2)},
      // Dilated 3x3 reaching past a 10 x 10 input.
      {{1, 10, 10, 16},
       {16, 3, 3, 16},
       1,
       2,
       2,
       16,
       mmaLoop(Type::F16, 1, 2, 2, 2, 2)},
      // cuts-channels-last's ResNet stem: 7 x 7 stride 2 pad 3 on 4
      // channels made 7 x 8 with a zero column first and begin padding 4
      // along W, so each 16-byte copy is two window positions; wgmma and
      // mma.sync.
      {{2, 12, 12, 4},
       {16, 7, 8, 4},
       2,
       3,
       1,
       32,
       mmaLoop(Type::F16, 1, 1, 1, 2, 3, MatrixInstr::Wgmma),
       4,
       true},
      {{2, 12, 12, 4},
       {16, 7, 8, 4},
       2,
       3,
       1,
       32,
       mmaLoop(Type::BF16, 1, 2, 1, 2, 2),
       4,
       true},
  };
  uint32_t seed = 40;
  int multiTile = 0;
  for (const ConvCase &c : cases) {
    const int64_t N = c.x[0], H = c.x[1], W = c.x[2], C = c.x[3];
    const int64_t M = c.w[0], FH = c.w[1], FW = c.w[2];
    const int64_t padW = c.padW < 0 ? c.pad : c.padW;
    const int64_t OH =
        (H + 2 * c.pad - c.dilation * (FH - 1) - 1) / c.stride + 1;
    const int64_t OW =
        (W + padW + c.pad - c.dilation * (FW - 1) - 1) / c.stride + 1;
    Window win{{c.stride, c.stride},
               {c.pad, padW, c.pad, c.pad},
               {c.dilation, c.dilation}};
    OpDesc d = describeImplicitGemm(c.x, c.w, {N, OH, OW, M}, win);
    d.elementBytes = c.loop.operand == Type::F32 ? 4 : 2;
    d.tf32 = c.loop.operand == Type::F32;
    std::vector<EpilogueOp> epi = {
        EpilogueOp::binary(dfg::Op::Add, "bias", {M}),
        EpilogueOp::unary(dfg::Op::Relu)};
    std::string err;
    auto k = buildMmaMatMul("im2col_test", d, mmaParams(c.loop, c.cin),
                            c.loop.operand, epi, err);
    INFO(err);
    REQUIRE(k);
    k->weightB = seed % 2; // every other case copies its filter first
    std::mt19937 rng(seed++);
    const Operand x = randomOperand(rng, c.loop.operand, size_t(N * H * W * C));
    const Operand w =
        randomOperand(rng, c.loop.operand, size_t(M * FH * FW * C));
    const std::vector<float> &xv = x.v, &wv = w.v;
    std::vector<float> bias = test::randomVector(rng, M);
    std::vector<float> y(size_t(N * OH * OW * M));
    INFO(N << "x" << H << "x" << W << "x" << C << " by " << M << "x" << FH
           << "x" << FW << " stride " << c.stride << " pad " << c.pad);
    auto error = [&](const Kernel &kernel) {
      y = test::poisoned(y.size());
      REQUIRE(runOnHost(kernel,
                        {{"A", x.bits()},
                         {"B", w.bits()},
                         {"bias", bias.data()},
                         {"Y", y.data()}},
                        err));
      test::RelativeL2 e;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow)
            for (int64_t m = 0; m < M; ++m) {
              double v = bias[m];
              for (int64_t r = 0; r < FH; ++r)
                for (int64_t s = 0; s < FW; ++s) {
                  const int64_t ih = oh * c.stride - c.pad + r * c.dilation;
                  const int64_t iw = ow * c.stride - padW + s * c.dilation;
                  if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                    continue;
                  for (int64_t q = 0; q < C; ++q)
                    v += double(xv[((n * H + ih) * W + iw) * C + q]) *
                         wv[((m * FH + r) * FW + s) * C + q];
                }
              e.add(y[((n * OH + oh) * OW + ow) * M + m], std::max(v, 0.0));
            }
      return e.value();
    };
    CHECK(error(*k) <= 1e-6);
    // Persistent, one block fewer than tiles: each fetch finds its own
    // tile's windows (padding and ragged rows included).
    CHECK(error(persistentOf(*k)) <= 1e-6);
    CHECK(error(persistentOf(*k, true)) <= 1e-6); // the filter copied once
    multiTile += launchShape(*k).blocks > 1;
    // 8-byte pixels move in 8-byte copies, the filter's rows too, unless
    // they pair up: then 16-byte copies, A's through L1.
    CHECK(d.pairedPixels() == c.paired);
    const bool eight = C * d.elementBytes == 8;
    const std::string src = emitSource(*k);
    for (const char *copy : {"cuts_cp_async8(a_s", "cuts_cp_async8(b_s"})
      CHECK((src.find(copy) != std::string::npos) == (eight && !c.paired));
    CHECK((src.find("cuts_cp_async16(a_s") == std::string::npos) == eight);
    CHECK((src.find("cuts_cp_async16_ca(a_s") != std::string::npos) ==
          c.paired);
    const bool wgmma = c.loop.instr == MatrixInstr::Wgmma;
    compilesWithNvrtc(src, "im2col_test", /*withPrelude=*/false,
                      wgmma ? std::vector<const char *>{"sm_90a"}
                            : std::vector<const char *>{"sm_80", "sm_90"});
  }
  CHECK(multiTile >= 3);
}

TEST_CASE("a pooled implicit GEMM pools its staged tile on the CPU",
          "[codegen][tensorcore]") {
  // conv + bias + relu, then a max or average pooling from each block's box
  // of conv pixels (halos recomputed): the pooled output must be the
  // unfused conv's output pooled here (a max value for value).
  using dfg::Type;
  struct PoolCase {
    std::vector<int64_t> x, w; // N H W C, M FH FW C
    int64_t stride, pad, padW; // the conv's
    int64_t pk, ps, pp;        // the pooling's kernel, stride, padding
    int64_t cin;
    MmaLoop loop;
    Type out; // the conv's (and the pooling's) output type
    bool average = false;
  };
  const std::vector<PoolCase> cases = {
      // cuts-channels-last's ResNet stem and its 3 x 3 max pool: one box a
      // 6 x 6 image (49 of 64 rows), its top row and left column outside.
      {{2, 12, 12, 4},
       {16, 7, 8, 4},
       2,
       3,
       4,
       3,
       2,
       1,
       32,
       mmaLoop(Type::F16, 1, 1, 1, 2, 3, MatrixInstr::Wgmma),
       Type::F16},
      // The same on mma.sync in 32-row blocks: 2 x 2 pooled tiles, boxes
      // of 5 x 5 pixels (the patch's pixel pairs).
      {{2, 12, 12, 4},
       {16, 7, 8, 4},
       2,
       3,
       4,
       3,
       2,
       1,
       32,
       mmaLoop(Type::F16, 2, 1, 1, 2, 3),
       Type::F16},
      // C_input 64 over K = 224: the last slice half past K (a patch
      // issues none of its k-steps there); wgmma and mma.sync.
      {{2, 12, 12, 4},
       {16, 7, 8, 4},
       2,
       3,
       4,
       3,
       2,
       1,
       64,
       mmaLoop(Type::F16, 1, 1, 1, 2, 2, MatrixInstr::Wgmma),
       Type::F16},
      {{2, 12, 12, 4},
       {16, 7, 8, 4},
       2,
       3,
       4,
       3,
       2,
       1,
       64,
       mmaLoop(Type::BF16, 2, 1, 1, 2, 2),
       Type::BF16},
      // 3 x 3 conv, 11 x 11: 2 x 2 pooled tiles a block, 9 an image (the
      // last ones ragged), 24 channels over two column blocks; mma.sync.
      {{2, 11, 11, 16},
       {24, 3, 3, 16},
       1,
       1,
       1,
       3,
       2,
       1,
       16,
       mmaLoop(Type::F16, 2, 1, 1, 2, 3),
       Type::F16},
      // VGG's 2 x 2 stride 2 pooling (no halo), the conv's last row and
      // column unpooled; bf16, wgmma.
      {{1, 9, 9, 16},
       {32, 3, 3, 16},
       1,
       1,
       1,
       2,
       2,
       0,
       16,
       mmaLoop(Type::BF16, 1, 1, 1, 4, 3, MatrixInstr::Wgmma),
       Type::BF16},
      // fp32 output.
      {{1, 10, 10, 16},
       {16, 3, 3, 16},
       1,
       1,
       1,
       3,
       2,
       1,
       16,
       mmaLoop(Type::F16, 2, 1, 1, 2, 2),
       Type::F32},
      // A pooling of 1 x 1 windows: the plain conv's output in boxes of
      // its pixels (a patch variant's blocks); fp16, bf16 on wgmma, fp32.
      {{2, 11, 11, 16},
       {24, 3, 3, 16},
       1,
       1,
       1,
       1,
       1,
       0,
       16,
       mmaLoop(Type::F16, 2, 1, 1, 2, 3),
       Type::F16},
      {{1, 13, 13, 32},
       {32, 3, 3, 32},
       2,
       1,
       1,
       1,
       1,
       0,
       32,
       mmaLoop(Type::BF16, 1, 1, 1, 4, 2, MatrixInstr::Wgmma),
       Type::BF16},
      {{1, 9, 9, 16},
       {16, 3, 3, 16},
       1,
       1,
       1,
       1,
       1,
       0,
       16,
       mmaLoop(Type::F16, 2, 1, 1, 2, 2),
       Type::F32},
      // DenseNet's transition: a 1 x 1 conv and a 2 x 2 average pooling;
      // fp16 and fp32 outputs, and a 3 x 3 stride-2 average of bf16.
      {{2, 12, 12, 64},
       {32, 1, 1, 64},
       1,
       0,
       0,
       2,
       2,
       0,
       16,
       mmaLoop(Type::F16, 1, 1, 1, 4, 2, MatrixInstr::Wgmma),
       Type::F16,
       true},
      {{1, 8, 8, 32},
       {16, 1, 1, 32},
       1,
       0,
       0,
       2,
       2,
       0,
       16,
       mmaLoop(Type::F16, 2, 1, 1, 2, 2),
       Type::F32,
       true},
      {{1, 11, 11, 16},
       {16, 3, 3, 16},
       1,
       1,
       1,
       3,
       2,
       0,
       16,
       mmaLoop(Type::BF16, 2, 1, 1, 2, 3),
       Type::BF16,
       true},
  };
  uint32_t seed = 130;
  int patches = 0, persistentPatches = 0;
  for (const PoolCase &c : cases) {
    const bool bf16 = c.loop.operand == Type::BF16;
    const int64_t N = c.x[0], H = c.x[1], W = c.x[2], C = c.x[3];
    const int64_t M = c.w[0], FH = c.w[1], FW = c.w[2];
    const int64_t OH = (H + 2 * c.pad - FH) / c.stride + 1;
    const int64_t OW = (W + c.padW + c.pad - FW) / c.stride + 1;
    const int64_t PH = (OH + 2 * c.pp - c.pk) / c.ps + 1;
    const int64_t PW = (OW + 2 * c.pp - c.pk) / c.ps + 1;
    const Window win{{c.stride, c.stride}, {c.pad, c.padW, c.pad, c.pad}, {}};
    OpDesc d = describeImplicitGemm(c.x, c.w, {N, OH, OW, M}, win);
    d.elementBytes = 2;
    const OpDesc pool =
        describePool({N, M, OH, OW}, {N, M, PH, PW}, {c.pk, c.pk},
                     {{c.ps, c.ps}, {c.pp, c.pp, c.pp, c.pp}, {}});
    std::string err;
    auto conv = buildMmaMatMul("pooled_test", d, mmaParams(c.loop, c.cin),
                               c.loop.operand,
                               {EpilogueOp::binary(dfg::Op::Add, "bias", {M}),
                                EpilogueOp::unary(dfg::Op::Relu)},
                               err);
    INFO(err);
    REQUIRE(conv);
    REQUIRE(setTensorType(*conv, "bias", c.loop.operand));
    if (c.out != Type::F32)
      REQUIRE(setTensorType(*conv, "Y", c.out));
    REQUIRE(poolsStagedTile(*conv));
    auto k = fusePooled(*conv, pool, c.average, err);
    REQUIRE(k);
    REQUIRE(k->pooled);
    INFO(N << "x" << H << "x" << W << "x" << C << " by " << M << "x" << FH
           << "x" << FW << ", pooled " << c.pk << "x" << c.pk << " stride "
           << c.ps << " into " << PH << "x" << PW << " in boxes of "
           << k->pooled->box.boxH << "x" << k->pooled->box.boxW);

    std::mt19937 rng(seed++);
    std::vector<uint16_t> x(N * H * W * C), w(M * FH * FW * C), b(M);
    std::vector<float> xv(x.size()), wv(w.size()), bv(M);
    random16(rng, bf16, x, xv);
    random16(rng, bf16, w, wv);
    random16(rng, bf16, b, bv);
    // The outputs' values, whatever their type (NaN where unwritten).
    auto run = [&](const Kernel &kernel, int64_t elements) {
      const bool f32 = c.out == Type::F32;
      std::vector<uint16_t> y16(elements, 0x7fff);
      std::vector<float> y32(elements, NAN);
      REQUIRE(runOnHost(kernel,
                        {{"A", x.data()},
                         {"B", w.data()},
                         {"bias", b.data()},
                         {"Y", f32 ? (void *)y32.data() : (void *)y16.data()}},
                        err));
      if (!f32)
        for (int64_t i = 0; i < elements; ++i)
          y32[i] = bf16 || c.out == Type::BF16 ? bf16Value(y16[i])
                                               : halfValue(y16[i]);
      return y32;
    };
    const std::vector<float> y = run(*conv, N * OH * OW * M);
    const std::vector<float> pooled = run(*k, N * PH * PW * M);
    // A max equals the unfused output's; an average is within its type's
    // rounding of the mean of it.
    const double tolerance = !c.average           ? 0
                             : c.out == Type::F32 ? 1e-6
                             : c.out == Type::F16 ? 1e-3
                                                  : 8e-3;
    int64_t wrong = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t py = 0; py < PH; ++py)
        for (int64_t px = 0; px < PW; ++px)
          for (int64_t m = 0; m < M; ++m) {
            double want = c.average ? 0 : -INFINITY;
            for (int64_t fy = 0; fy < c.pk; ++fy)
              for (int64_t fx = 0; fx < c.pk; ++fx) {
                const int64_t oh = py * c.ps - c.pp + fy;
                const int64_t ow = px * c.ps - c.pp + fx;
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
                  continue;
                const double v = y[((n * OH + oh) * OW + ow) * M + m];
                want = c.average ? want + v / double(c.pk * c.pk)
                                 : std::max(want, v);
              }
            const double got = pooled[((n * PH + py) * PW + px) * M + m];
            wrong += !(std::abs(got - want) <=
                       tolerance * std::max(1.0, std::abs(want)));
          }
    CHECK(wrong == 0);
    CHECK(launchShape(*k).blocks ==
          N * k->pooled->box.tilesH * k->pooled->box.tilesW *
              ((M + k->params.Kb - 1) / k->params.Kb));
    // A read from the box's input patch: the same products in the same
    // order, so the same output bit for bit.
    {
      const bool wgmma = c.loop.instr == MatrixInstr::Wgmma;
      REQUIRE(patchable(*k, 1 << 20));
      Kernel patched = *k;
      patched.patchA = true;
      const std::vector<float> fromPatch = run(patched, N * PH * PW * M);
      const std::string src = emitSource(patched);
      CHECK(src.find("copyPatch(sA, base_n)") != std::string::npos);
      CHECK((src.find("cuts_wgmma_rs_") != std::string::npos) == wgmma);
      // On wgmma, all of B with the patch and no barrier between k-steps
      // (emitPatchPipeline).
      CHECK((src.find("All of B, slice s in stage s") != std::string::npos) ==
            wgmma);
      CHECK(std::memcmp(fromPatch.data(), pooled.data(),
                        pooled.size() * sizeof(float)) == 0);
      compilesWithNvrtc(src, "pooled_test", /*withPrelude=*/false,
                        wgmma ? std::vector<const char *>{"sm_90a"}
                              : std::vector<const char *>{"sm_80", "sm_90"});
      ++patches;
      // On wgmma, persistent: fewer blocks than tiles, each looping over
      // its tiles with the next one's patch in the other buffer.
      const int64_t tiles = launchShape(*k).blocks;
      Kernel persistent = patched;
      persistent.persistentBlocks = std::max<int64_t>(1, tiles / 2);
      CHECK(patchable(persistent, 1 << 20) == wgmma);
      if (wgmma && tiles >= 2) {
        ++persistentPatches;
        REQUIRE(launchShape(persistent).blocks == tiles / 2);
        const std::vector<float> looped = run(persistent, N * PH * PW * M);
        CHECK(std::memcmp(looped.data(), pooled.data(),
                          pooled.size() * sizeof(float)) == 0);
        persistent.blocksPerSM = 2; // the launch bounds' minimum
        const std::string psrc = emitSource(persistent);
        CHECK(psrc.find("copyPatch(sA + (pb ^ 1)") != std::string::npos);
        CHECK(psrc.find("__launch_bounds__(" +
                        std::to_string(persistent.params.threads()) + ", 2)") !=
              std::string::npos);
        compilesWithNvrtc(psrc, "pooled_test", /*withPrelude=*/false,
                          {"sm_90a"});
      }
    }
    const bool wgmma = c.loop.instr == MatrixInstr::Wgmma;
    compilesWithNvrtc(emitSource(*k), "pooled_test", /*withPrelude=*/false,
                      wgmma ? std::vector<const char *>{"sm_90a"}
                            : std::vector<const char *>{"sm_80", "sm_90"});
  }
  CHECK(patches == int(cases.size()));
  CHECK(persistentPatches >= 2);
  {
    // A plain conv reads its slices (it has no boxes), and a producer
    // warpgroup copies slices, not a patch.
    OpDesc d = describeImplicitGemm({1, 8, 8, 16}, {16, 3, 3, 16},
                                    {1, 8, 8, 16}, {{1, 1}, {1, 1, 1, 1}, {}});
    d.elementBytes = 2;
    std::string err;
    const OpDesc none = describePool({1, 16, 8, 8}, {1, 16, 8, 8}, {1, 1},
                                     {{1, 1}, {0, 0, 0, 0}, {}});
    auto plain = buildMmaMatMul(
        "plain", d,
        mmaParams(mmaLoop(Type::F16, 1, 1, 1, 2, 2, MatrixInstr::Wgmma), 16),
        Type::F16, {}, err);
    REQUIRE(plain);
    CHECK_FALSE(patchable(*plain, 1 << 20));
    auto boxed = fusePooled(*plain, none, false, err);
    REQUIRE(boxed);
    CHECK(patchable(*boxed, 1 << 20));
    CHECK_FALSE(patchable(*boxed, 1024)); // past the shared memory given
    auto ws =
        buildMmaMatMul("specialized", d,
                       mmaParams(specialized(mmaLoop(Type::F16, 1, 1, 1, 2, 2,
                                                     MatrixInstr::Wgmma)),
                                 16),
                       Type::F16, {}, err);
    REQUIRE(ws);
    auto wsBoxed = fusePooled(*ws, none, false, err);
    CHECK((!wsBoxed || !patchable(*wsBoxed, 1 << 20)));
  }
  // A kernel that stages a residual, or none, pools nothing.
  OpDesc d = describeImplicitGemm({1, 8, 8, 16}, {16, 1, 1, 16}, {1, 8, 8, 16},
                                  {{1, 1}, {0, 0, 0, 0}, {}});
  d.elementBytes = 2;
  std::string err;
  auto residual = buildMmaMatMul(
      "residual", d, mmaParams(mmaLoop(Type::F16, 2, 1, 1, 2, 2), 16),
      Type::F16, {EpilogueOp::binary(dfg::Op::Add, "z", {64, 16})}, err);
  REQUIRE(residual);
  CHECK_FALSE(poolsStagedTile(*residual));
  const OpDesc wrongPool = describePool({1, 16, 4, 4}, {1, 16, 2, 2}, {2, 2},
                                        {{2, 2}, {0, 0, 0, 0}, {}});
  CHECK_FALSE(fusePooled(*residual, wrongPool, false, err));
  CHECK(err.find("does not read the conv's output") != std::string::npos);
  // An average over padded windows is not fused.
  auto plain = buildMmaMatMul("plain", d,
                              mmaParams(mmaLoop(Type::F16, 2, 1, 1, 2, 2), 16),
                              Type::F16, {}, err);
  REQUIRE(plain);
  const OpDesc padded = describePool({1, 16, 8, 8}, {1, 16, 4, 4}, {3, 3},
                                     {{2, 2}, {1, 1, 1, 1}, {}});
  CHECK_FALSE(fusePooled(*plain, padded, true, err));
  CHECK(err.find("unpadded") != std::string::npos);
  CHECK(fusePooled(*plain, padded, false, err));
}

TEST_CASE("a stem reads its planar input through the patch on the CPU",
          "[codegen][tensorcore]") {
  // The pooled stem of cuts-channels-last (7 x 8 window, 4 channels) with
  // its NCHW input of 3 channels read in place (OpDesc::planarC): K over
  // (channel, r, s), A from planes of the patch, B gathered. It must match
  // the channels-last kernel on the transposed, padded (and, for an fp32
  // input, rounded) input within its output's rounding: the products' order
  // differs. fp16 and bf16, 16-bit and fp32 inputs, one block a tile and
  // persistent.
  using dfg::Type;
  // Widths of 20 and 24: the patch's rows copied in pixel pairs, or in
  // 16-byte runs (8 fp16 or 4 fp32 pixels) that tile the input's rows. 48
  // channels in three column blocks; a 7 x 16 window (B's gather then takes
  // two batches of loads).
  struct PlanarCase {
    Type operand, input;
    int64_t cin, mi, ni, W, M = 16, FW = 8;
  };
  const std::vector<PlanarCase> cases = {
      {Type::F16, Type::F16, 32, 2, 2, 20},
      {Type::F16, Type::F16, 32, 1, 2, 24},
      {Type::BF16, Type::BF16, 64, 1, 2, 20},
      {Type::F16, Type::F32, 32, 1, 2, 20},
      {Type::BF16, Type::F32, 16, 2, 2, 24},
      {Type::F16, Type::F16, 32, 1, 2, 24, 48},
      {Type::F16, Type::F32, 64, 1, 4, 24, 32, 16}};
  const int64_t N = 2, H = 20, C = 3, IC = 4, FH = 7;
  uint32_t seed = 170;
  for (const PlanarCase &c : cases) {
    const int64_t W = c.W, M = c.M, FW = c.FW;
    const Window win{{2, 2}, {3, FW / 2, 3, FW / 2 - 1}, {}};
    const int64_t OH = (H + 6 - FH) / 2 + 1, OW = (W + FW - 1 - FW) / 2 + 1;
    const int64_t PH = (OH + 2 - 3) / 2 + 1, PW = (OW + 2 - 3) / 2 + 1;
    const bool bf16 = c.operand == Type::BF16;
    INFO((bf16 ? "bf16" : "fp16")
         << " products of " << (c.input == Type::F32 ? "fp32" : "16-bit")
         << " input " << W << " wide, " << M << " channels, window 7 x " << FW
         << ", C_input " << c.cin);
    OpDesc d = describeImplicitGemm({N, H, W, IC}, {M, FH, FW, IC},
                                    {N, OH, OW, M}, win);
    d.elementBytes = 2;
    OpDesc planar = d;
    planar.planarC = C;
    const OpDesc pool = describePool({N, M, OH, OW}, {N, M, PH, PW}, {3, 3},
                                     {{2, 2}, {1, 1, 1, 1}, {}});
    const MmaLoop loop =
        mmaLoop(c.operand, 1, 1, c.mi, c.ni, 2, MatrixInstr::Wgmma);
    auto make = [&](const OpDesc &desc) {
      std::string err;
      auto conv =
          buildMmaMatMul("planar_test", desc, mmaParams(loop, c.cin), c.operand,
                         {EpilogueOp::binary(dfg::Op::Add, "bias", {M}),
                          EpilogueOp::unary(dfg::Op::Relu)},
                         err);
      INFO(err);
      REQUIRE(conv);
      REQUIRE(setTensorType(*conv, "bias", c.operand));
      REQUIRE(setTensorType(*conv, "Y", c.operand));
      if (desc.planarC)
        REQUIRE(setTensorType(*conv, "A", c.input));
      auto k = fusePooled(*conv, pool, false, err);
      REQUIRE(k);
      k->patchA = true;
      REQUIRE(patchable(*k, 1 << 20));
      return *k;
    };
    const Kernel plain = make(d), patched = make(planar);
    std::mt19937 rng(seed++);
    std::vector<uint16_t> x16(N * C * H * W), w(M * FH * FW * IC), b(M);
    std::vector<float> xv(x16.size()), wv(w.size()), bv(M);
    random16(rng, bf16, x16, xv);
    random16(rng, bf16, w, wv);
    random16(rng, bf16, b, bv);
    // An fp32 input off the 16-bit grid, which the kernel rounds.
    std::vector<float> x32(xv);
    for (size_t i = 0; i < x32.size(); ++i) {
      x32[i] *= 1.0f + 1e-3f * float(i % 7);
      x16[i] = bf16 ? toBf16(x32[i]) : toHalf(x32[i]);
    }
    std::vector<uint16_t> last(N * H * W * IC, 0); // NHWC, channel 3 zero
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t i = 0; i < H * W; ++i)
          last[(n * H * W + i) * IC + ch] = x16[(n * C + ch) * H * W + i];
    void *planarIn = c.input == Type::F32 ? (void *)x32.data() : x16.data();
    auto run = [&](const Kernel &kernel, void *a) {
      std::vector<uint16_t> y(N * PH * PW * M, 0x7fff);
      std::string err;
      REQUIRE(runOnHost(
          kernel,
          {{"A", a}, {"B", w.data()}, {"bias", b.data()}, {"Y", y.data()}},
          err));
      std::vector<float> v(y.size());
      for (size_t i = 0; i < y.size(); ++i)
        v[i] = bf16 ? bf16Value(y[i]) : halfValue(y[i]);
      return v;
    };
    const std::vector<float> want = run(plain, last.data());
    const double tolerance = bf16 ? 1.6e-2 : 2e-3;
    auto wrongOf = [&](const std::vector<float> &got) {
      int64_t wrong = 0;
      for (size_t i = 0; i < got.size(); ++i)
        wrong += !(std::abs(got[i] - want[i]) <=
                   tolerance * std::max(1.0f, std::abs(want[i])));
      return wrong;
    };
    CHECK(wrongOf(run(patched, planarIn)) == 0);
    const std::string src = emitSource(patched);
    CHECK(src.find("The planar patch") != std::string::npos);
    CHECK(src.find("in (channel, r, s) order") != std::string::npos);
    compilesWithNvrtc(src, "planar_test", /*withPrelude=*/false, {"sm_90a"});
    // Persistent (where its tiles share B): the next tile's planes load
    // while this one computes.
    Kernel persistent = patched;
    persistent.persistentBlocks =
        std::max<int64_t>(1, launchShape(patched).blocks / 2);
    if (M > patched.params.Kb) {
      CHECK_FALSE(patchable(persistent, 1 << 20));
      continue;
    }
    REQUIRE(patchable(persistent, 1 << 20));
    CHECK(wrongOf(run(persistent, planarIn)) == 0);
    compilesWithNvrtc(emitSource(persistent), "planar_test",
                      /*withPrelude=*/false, {"sm_90a"});
  }
  // mma.sync has no planar patch.
  const int64_t W = 20, OH = 10, OW = 10, PH = 5, PW = 5, M = 16, FW = 8;
  const Window win{{2, 2}, {3, 4, 3, 3}, {}};
  OpDesc d =
      describeImplicitGemm({N, H, W, IC}, {M, FH, FW, IC}, {N, OH, OW, M}, win);
  d.elementBytes = 2;
  d.planarC = C;
  std::string err;
  auto conv = buildMmaMatMul("planar_test", d,
                             mmaParams(mmaLoop(Type::F16, 2, 1, 1, 2, 3), 32),
                             Type::F16, {}, err);
  REQUIRE(conv);
  auto k = fusePooled(*conv,
                      describePool({N, M, OH, OW}, {N, M, PH, PW}, {3, 3},
                                   {{2, 2}, {1, 1, 1, 1}, {}}),
                      false, err);
  REQUIRE(k);
  CHECK_FALSE(patchable(*k, 1 << 20));
  // Without a patch its slices would read NCHW as channels-last: the
  // source refuses to compile.
  CHECK(emitSource(*k).find("#error \"a planar input is read through a "
                            "patch alone\"") != std::string::npos);
}

TEST_CASE("a conv_sum's K runs through both inputs on the CPU",
          "[codegen][tensorcore]") {
  struct SumCase {
    std::vector<int64_t> x, x2; // N H W C: x at stride 1, x2 at `stride2`
    int64_t M, stride2, cin;
    MmaLoop loop;
    bool residual;
  };
  using dfg::Type;
  const std::vector<SumCase> cases = {
      // A projection shortcut at stride 2 (ResNet's layer 2-4 blocks):
      // 2 images of 5 x 5 (50 rows, a ragged tile), wgmma, 2-stage.
      {{2, 5, 5, 32},
       {2, 10, 10, 64},
       48,
       2,
       32,
       mmaLoop(Type::F16, 1, 1, 1, 6, 2, MatrixInstr::Wgmma),
       false},
      // Stride 1 (layer 1), bf16, mma.sync, with a residual operand too.
      {{1, 6, 6, 16},
       {1, 6, 6, 32},
       32,
       1,
       16,
       mmaLoop(Type::BF16, 1, 2, 1, 2, 3),
       true},
      // Warp-specialised wgmma, 4 stages.
      {{2, 4, 4, 64},
       {2, 8, 8, 64},
       64,
       2,
       64,
       specialized(mmaLoop(Type::F16, 1, 1, 1, 8, 4, MatrixInstr::Wgmma)),
       false},
  };
  uint32_t seed = 70;
  int multiTile = 0;
  for (const SumCase &c : cases) {
    const int64_t N = c.x[0], H = c.x[1], W = c.x[2], C = c.x[3];
    const int64_t H2 = c.x2[1], W2 = c.x2[2], C2 = c.x2[3], M = c.M;
    OpDesc d = describeConvSum(c.x, c.x2, {M, 1, 1, C + C2}, {N, H, W, M},
                               {1, 1}, {c.stride2, c.stride2});
    d.elementBytes = 2;
    std::vector<EpilogueOp> epi = {
        EpilogueOp::binary(dfg::Op::Add, "bias", {M})};
    if (c.residual)
      epi.push_back(EpilogueOp::binary(dfg::Op::Add, "z", {N * H * W, M}));
    epi.push_back(EpilogueOp::unary(dfg::Op::Relu));
    std::string err;
    auto k = buildMmaMatMul("conv_sum_test", d, mmaParams(c.loop, c.cin),
                            c.loop.operand, epi, err);
    INFO(err);
    REQUIRE(k);
    std::mt19937 rng(seed++);
    const Operand x = randomOperand(rng, c.loop.operand, size_t(N * H * W * C));
    const Operand x2 =
        randomOperand(rng, c.loop.operand, size_t(N * H2 * W2 * C2));
    const Operand w = randomOperand(rng, c.loop.operand, size_t(M * (C + C2)));
    std::vector<float> bias = test::randomVector(rng, M);
    std::vector<float> z = test::randomVector(rng, N * H * W * M);
    std::vector<float> y = test::poisoned(N * H * W * M);
    std::map<std::string, void *> args = {{"A", x.bits()},
                                          {"B", w.bits()},
                                          {"A2", x2.bits()},
                                          {"bias", bias.data()},
                                          {"Y", y.data()}};
    if (c.residual)
      args["z"] = z.data();
    INFO(N << "x" << H << "x" << W << "x" << C << " + " << H2 << "x" << W2
           << "x" << C2 << " stride " << c.stride2);
    auto error = [&](const Kernel &kernel) {
      std::fill(y.begin(), y.end(), std::numeric_limits<float>::quiet_NaN());
      REQUIRE(runOnHost(kernel, args, err));
      test::RelativeL2 e;
      for (int64_t p = 0; p < N * H * W; ++p)
        for (int64_t m = 0; m < M; ++m) {
          const int64_t n = p / (H * W), oh = p / W % H, ow = p % W;
          double v = bias[m] + (c.residual ? z[p * M + m] : 0.0);
          for (int64_t q = 0; q < C; ++q)
            v += double(x.v[p * C + q]) * w.v[m * (C + C2) + q];
          const int64_t p2 = (n * H2 + oh * c.stride2) * W2 + ow * c.stride2;
          for (int64_t q = 0; q < C2; ++q)
            v += double(x2.v[p2 * C2 + q]) * w.v[m * (C + C2) + C + q];
          e.add(y[p * M + m], std::max(v, 0.0));
        }
      return e.value();
    };
    CHECK(error(*k) <= 1e-6);
    // Persistent: each block's fetches find their tile's rows in both
    // inputs.
    if (!c.loop.warpSpecialized) {
      CHECK(error(persistentOf(*k)) <= 1e-6);
      CHECK(error(persistentOf(*k, true)) <= 1e-6);
      multiTile += launchShape(*k).blocks > 1;
    }
    const bool wgmma = c.loop.instr == MatrixInstr::Wgmma;
    compilesWithNvrtc(emitSource(*k), "conv_sum_test", /*withPrelude=*/false,
                      wgmma ? std::vector<const char *>{"sm_90a"}
                            : std::vector<const char *>{"sm_80", "sm_90"});
  }
  CHECK(multiTile >= 1);
  // A slice may not straddle the inputs: 24 channels in slices of 16.
  std::string err;
  OpDesc d = describeConvSum({1, 4, 4, 24}, {1, 4, 4, 40}, {32, 1, 1, 64},
                             {1, 4, 4, 32}, {1, 1}, {1, 1});
  d.elementBytes = 2;
  CHECK_FALSE(buildMmaMatMul("conv_sum_test", d,
                             mmaParams(mmaLoop(Type::F16, 1, 2, 1, 2, 2), 16),
                             Type::F16, {}, err));
}

TEST_CASE("a chained product reads its producer's staged tile on the CPU",
          "[codegen][tensorcore]") {
  // A ResNet block's end and the next block's start: y = relu(x w1 + b1 +
  // z), stored, then relu(y w2 + b2), both 1 x 1 convs as implicit GEMMs,
  // the second from the first's staged tile.
  using dfg::Type;
  struct ChainCase {
    std::vector<int64_t> x; // N H W C
    int64_t mid, out, cin;  // y's and the output's channels, C_input
    MmaLoop loop;
  };
  const std::vector<ChainCase> cases = {
      // mma.sync, 72 rows (a ragged tile of 32), 40 outputs of a 64-column
      // chain block, 2 slices.
      {{2, 6, 6, 32}, 64, 40, 16, mmaLoop(Type::F16, 2, 2, 1, 4, 3)},
      // One slice: the staged tile outgrows the stage and lies beside it.
      {{2, 5, 5, 16}, 64, 32, 16, mmaLoop(Type::F16, 2, 2, 1, 4, 3)},
      // wgmma, 128 channels in between, 4 warps along the rows, bf16; the
      // chain on wgmma too, its B in two 64-deep slices.
      {{1, 9, 9, 64},
       128,
       64,
       32,
       mmaLoop(Type::BF16, 1, 1, 1, 16, 3, MatrixInstr::Wgmma)},
      // ResNet-50's layer-1 chain: 256 channels in between (the chain's B
      // in four slices), a ragged last tile, fp16.
      {{1, 9, 9, 64},
       256,
       64,
       32,
       mmaLoop(Type::F16, 1, 1, 1, 32, 3, MatrixInstr::Wgmma)},
  };
  uint32_t seed = 90;
  for (const ChainCase &c : cases) {
    const bool bf16 = c.loop.operand == Type::BF16;
    const int64_t N = c.x[0], H = c.x[1], W = c.x[2], C = c.x[3];
    const int64_t P = N * H * W, Mid = c.mid, Out = c.out;
    const Window one{{1, 1}, {0, 0, 0, 0}, {1, 1}};
    OpDesc d1 = describeImplicitGemm(c.x, {Mid, 1, 1, C}, {N, H, W, Mid}, one);
    OpDesc d2 = describeImplicitGemm({N, H, W, Mid}, {Out, 1, 1, Mid},
                                     {N, H, W, Out}, one);
    d1.elementBytes = d2.elementBytes = 2;
    std::string err;
    auto first =
        buildMmaMatMul("first", d1, mmaParams(c.loop, c.cin), c.loop.operand,
                       {EpilogueOp::binary(dfg::Op::Add, "bias", {Mid}),
                        EpilogueOp::binary(dfg::Op::Add, "z", {P, Mid}),
                        EpilogueOp::unary(dfg::Op::Relu)},
                       err);
    INFO(err);
    REQUIRE(first);
    const std::optional<TileParams> p2 = chainParams(first->params, d2);
    REQUIRE(p2);
    auto second =
        buildMmaMatMul("second", d2, *p2, c.loop.operand,
                       {EpilogueOp::binary(dfg::Op::Add, "bias", {Out}),
                        EpilogueOp::unary(dfg::Op::Relu)},
                       err);
    REQUIRE(second);
    for (const char *t : {"bias", "z", "Y"})
      REQUIRE(setTensorType(*first, t, c.loop.operand));
    for (const char *t : {"bias", "Y"})
      REQUIRE(setTensorType(*second, t, c.loop.operand));
    REQUIRE(stagesOutput(*first));
    auto k = fuseChained(*first, *second, "A", err);
    REQUIRE(k);

    std::mt19937 rng(seed++);
    std::vector<uint16_t> x(P * C), w1(Mid * C), b1(Mid), z(P * Mid),
        w2(Out * Mid), b2(Out);
    std::vector<float> xv(x.size()), w1v(w1.size()), b1v(Mid), zv(z.size()),
        w2v(w2.size()), b2v(Out);
    random16(rng, bf16, x, xv);
    random16(rng, bf16, w1, w1v);
    random16(rng, bf16, b1, b1v);
    random16(rng, bf16, z, zv);
    random16(rng, bf16, w2, w2v);
    random16(rng, bf16, b2, b2v);
    auto value = [&](uint16_t h) { return bf16 ? bf16Value(h) : halfValue(h); };
    auto run = [&](const Kernel &kernel, std::vector<uint16_t> &y,
                   std::vector<uint16_t> &out) {
      y.assign(P * Mid, 0x7fff), out.assign(P * Out, 0x7fff); // NaN
      REQUIRE(runOnHost(kernel,
                        {{"A", x.data()},
                         {"B", w1.data()},
                         {"bias", b1.data()},
                         {"z", z.data()},
                         {"Y", y.data()},
                         {"chain_B", w2.data()},
                         {"chain_bias", b2.data()},
                         {"chain_Y", out.data()}},
                        err));
    };
    std::vector<uint16_t> alone(P * Mid), unused;
    REQUIRE(runOnHost(*first,
                      {{"A", x.data()},
                       {"B", w1.data()},
                       {"bias", b1.data()},
                       {"z", z.data()},
                       {"Y", alone.data()}},
                      err));
    Kernel prefetching = *k, weightsFirst = *k;
    prefetching.prefetch = true; // the residual beside the stages
    weightsFirst.weightB = true;
    // Persistent: each tile's chain after its exit, the next tile's slices
    // (and residual) in flight; the first product's B resident too.
    Kernel persistent = persistentOf(*k), resident = persistentOf(*k, true);
    REQUIRE(launchShape(*k).blocks > 1);
    for (const Kernel *kernel :
         {&*k, &prefetching, &weightsFirst, &persistent, &resident}) {
      std::vector<uint16_t> y, out;
      run(*kernel, y, out);
      // The producer's output is the unchained kernel's, bit for bit.
      CHECK(y == alone);
      RelativeL2 e;
      for (int64_t p = 0; p < P; ++p)
        for (int64_t m = 0; m < Out; ++m) {
          double v = b2v[m];
          for (int64_t q = 0; q < Mid; ++q)
            v += double(value(y[p * Mid + q])) * w2v[m * Mid + q];
          const float want = float(std::max(v, 0.0));
          e.add(value(out[p * Out + m]),
                value(bf16 ? toBf16(want) : toHalf(want)));
        }
      INFO(N << "x" << H << "x" << W << "x" << C << " -> " << Mid << " -> "
             << Out << (kernel->prefetch ? " prefetch" : "")
             << (kernel->weightB ? " weights first" : "")
             << (kernel->persistentBlocks ? " persistent" : "")
             << (kernel->residentB ? ", B resident" : ""));
      CHECK(e.value() <= 5e-3);
    }
    // Where the chain alone reads y, y stays on chip.
    auto onChip = fuseChained(*first, *second, "A", err, false);
    REQUIRE(onChip);
    std::vector<uint16_t> y, out, chained;
    run(*k, y, chained);
    run(*onChip, y, out);
    CHECK(out == chained);
    CHECK(std::all_of(y.begin(), y.end(),
                      [](uint16_t h) { return h == 0x7fff; }));
    const std::string param = "short *__restrict__ Y,";
    CHECK(emitSource(*k).find(param) != std::string::npos);
    CHECK(emitSource(*onChip).find(param) == std::string::npos);
    CHECK(launchShape(persistent).blocks == launchShape(*k).blocks - 1);
    const bool wgmma = c.loop.instr == MatrixInstr::Wgmma;
    // After a wgmma producer the chain is on wgmma, A from registers.
    CHECK(k->chain->mma->wgmma() == wgmma);
    CHECK((emitSource(*k).find("cuts_wgmma_rs_m64n") != std::string::npos) ==
          wgmma);
    compilesWithNvrtc(emitSource(*k), "first", /*withPrelude=*/false,
                      wgmma ? std::vector<const char *>{"sm_90a"}
                            : std::vector<const char *>{"sm_80", "sm_90"});
  }
}

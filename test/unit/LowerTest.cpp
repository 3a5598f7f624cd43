// The driver's lowering of partition groups to kernels: which groups the
// code generator can build, and that a lowered group runs on the CPU with
// the right answer.
#include "compiler/driver/Lower.h"
#include "GraphTestUtil.h"
#include "codegen/emit/Cuda.h"
#include "codegen/emit/HostRun.h"
#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "perfmodel/Describe.h"
#include "perfmodel/ParamSearch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace cuts;

namespace {

using test::Graph;

// conv -> add bias-like vector -> relu -> add residual -> reshape; a
// transpose + mul chain; a second conv fed by the first.
const char *kGraph = R"mlir(
func.func @main(%x: tensor<1x4x6x6xf32>, %r: tensor<1x8x6x6xf32>, %t: tensor<6x8x6x1xf32>) -> (tensor<8x36xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) {
  %w = cuts.constant {value = dense<0.25> : tensor<8x4x3x3xf32>} : tensor<8x4x3x3xf32>
  %b = cuts.constant {value = dense<0.5> : tensor<8x1x1xf32>} : tensor<8x1x1xf32>
  %w2 = cuts.constant {value = dense<0.125> : tensor<8x8x1x1xf32>} : tensor<8x8x1x1xf32>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  %1 = cuts.add %0, %b : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %2 = cuts.relu %1 : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %3 = cuts.add %r, %2 : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %4 = cuts.reshape %3 {shape = array<i64: 8, 36>} : (tensor<1x8x6x6xf32>) -> tensor<8x36xf32>
  %5 = cuts.transpose %t {perm = array<i64: 3, 1, 0, 2>} : (tensor<6x8x6x1xf32>) -> tensor<1x8x6x6xf32>
  %6 = cuts.mul %5, %3 : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %7 = cuts.conv %2, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x6x6xf32>
  return %4, %6, %7 : tensor<8x36xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>
}
)mlir";

} // namespace

TEST_CASE("canGenerate: an anchor first, then a chain whose end alone "
          "leaves the group",
          "[lower]") {
  Graph g(kGraph);
  // ops: 0 conv, 1 add, 2 relu, 3 add, 4 reshape, 5 transpose, 6 mul, 7 conv
  std::string why;
  CHECK(driver::canGenerate(g.pick({0}), &why));
  // conv + bias + relu: relu's result also feeds conv %7, so it must end
  // the group.
  CHECK(driver::canGenerate(g.pick({0, 1, 2}), &why));
  CHECK_FALSE(driver::canGenerate(g.pick({0, 1, 2, 3}), &why));
  CHECK(why.find("result") != std::string::npos);
  CHECK(driver::canGenerate(g.pick({3}), &why));
  // Views stay out of kernels; two convolutions need smem-level fusion.
  CHECK_FALSE(driver::canGenerate(g.pick({3, 4}), &why));
  CHECK_FALSE(driver::canGenerate(g.pick({0, 1, 2, 7}), &why));
  // An elementwise group with a transposed input.
  CHECK(driver::canGenerate(g.pick({5, 6}), &why));
  // A prologue before the anchor is not generated.
  CHECK_FALSE(driver::canGenerate(g.pick({2, 7}), &why));
  CHECK(why.find("prologue") != std::string::npos);
}

TEST_CASE("a lowered conv + bias + relu group runs on the CPU", "[lower]") {
  Graph g(kGraph);
  auto ops = g.pick({0, 1, 2});
  TileParams p;
  p.Nb = 1, p.Kb = 8, p.Hb = 2, p.Wb = 6;
  p.Nt = 1, p.Kt = 2, p.Ht = 1, p.Wt = 2;
  p.Cin = 2;
  std::string err;
  auto gk = driver::lowerGroup(ops, p, "conv_bias_relu", err);
  REQUIRE(gk);
  REQUIRE(gk->args.size() == gk->kernel.tensors.size());
  // The arguments are the graph's values: x, the weight, the bias, relu's
  // result.
  CHECK(gk->args.front() == ops[0]->getOperand(0));
  CHECK(gk->args.back() == ops[2]->getResult(0));

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(4 * 36), w(8 * 4 * 9, 0.25f), b(8, 0.5f), y(8 * 36, NAN);
  for (float &v : x)
    v = u(rng);
  std::map<std::string, void *> buffers;
  for (size_t i = 0; i < gk->kernel.tensors.size(); ++i) {
    mlir::Value v = gk->args[i];
    const std::string &n = gk->kernel.tensors[i].name;
    if (v == ops[0]->getOperand(0))
      buffers[n] = x.data();
    else if (v == ops[0]->getOperand(1))
      buffers[n] = w.data();
    else if (v == ops[2]->getResult(0))
      buffers[n] = y.data();
    else
      buffers[n] = b.data();
  }
  REQUIRE(codegen::runOnHost(gk->kernel, buffers, err));
  double maxErr = 0;
  for (int k = 0; k < 8; ++k)
    for (int h = 0; h < 6; ++h)
      for (int wi = 0; wi < 6; ++wi) {
        double acc = 0;
        for (int c = 0; c < 4; ++c)
          for (int fh = 0; fh < 3; ++fh)
            for (int fw = 0; fw < 3; ++fw) {
              int ih = h + fh - 1, iw = wi + fw - 1;
              if (ih >= 0 && ih < 6 && iw >= 0 && iw < 6)
                acc += 0.25 * x[c * 36 + ih * 6 + iw];
            }
        double ref = std::max(0.0, acc + 0.5);
        maxErr = std::max(maxErr, std::fabs(ref - y[k * 36 + h * 6 + wi]));
      }
  CHECK(maxErr < 1e-5);
}

namespace {
// Attention's scores: a batched product scaled by a constant and masked by
// a matrix shared across heads; a linear layer with bias, residual and
// relu; an embedding gather from int64 ids; a cast of an int64 mask.
const char *kAttention = R"mlir(
func.func @main(%q: tensor<1x2x4x3xf32>, %k: tensor<1x2x3x4xf32>, %mask: tensor<1x1x4x4xf32>, %x: tensor<1x4x3xf32>, %r: tensor<1x4x5xf32>, %ids: tensor<1x4xi64>, %m: tensor<1x4xi64>) -> (tensor<1x2x4x4xf32>, tensor<1x4x5xf32>, tensor<1x4x6xf32>, tensor<1x4xi1>) {
  %s = cuts.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %w = cuts.constant {value = dense<0.25> : tensor<3x5xf32>} : tensor<3x5xf32>
  %b = cuts.constant {value = dense<0.5> : tensor<5xf32>} : tensor<5xf32>
  %t = cuts.constant {value = dense<1.5> : tensor<7x6xf32>} : tensor<7x6xf32>
  %0 = cuts.matmul %q, %k : (tensor<1x2x4x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = cuts.mul %0, %s : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %2 = cuts.add %1, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %3 = cuts.matmul_add %x, %w, %b : (tensor<1x4x3xf32>, tensor<3x5xf32>, tensor<5xf32>) -> tensor<1x4x5xf32>
  %4 = cuts.add %3, %r : (tensor<1x4x5xf32>, tensor<1x4x5xf32>) -> tensor<1x4x5xf32>
  %5 = cuts.relu %4 : (tensor<1x4x5xf32>) -> tensor<1x4x5xf32>
  %6 = cuts.gather %t, %ids {axis = 0 : i64} : (tensor<7x6xf32>, tensor<1x4xi64>) -> tensor<1x4x6xf32>
  %7 = cuts.cast %m {to = i1} : (tensor<1x4xi64>) -> tensor<1x4xi1>
  return %2, %5, %6, %7 : tensor<1x2x4x4xf32>, tensor<1x4x5xf32>, tensor<1x4x6xf32>, tensor<1x4xi1>
}
)mlir";
} // namespace

TEST_CASE("cublasGemm takes a tanh GELU as its epilogue, not erf's",
          "[lower]") {
  Graph g(R"mlir(
func.func @main(%x: tensor<4x3xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  %w = cuts.constant {value = dense<0.25> : tensor<3x5xf32>} : tensor<3x5xf32>
  %b = cuts.constant {value = dense<0.5> : tensor<5xf32>} : tensor<5xf32>
  %0 = cuts.matmul_add %x, %w, %b : (tensor<4x3xf32>, tensor<3x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %1 = cuts.gelu %0 {approximate = "tanh"} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %2 = cuts.matmul_add %x, %w, %b : (tensor<4x3xf32>, tensor<3x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %3 = cuts.gelu %2 {approximate = "none"} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  return %1, %3 : tensor<4x5xf32>, tensor<4x5xf32>
}
)mlir");
  std::vector<mlir::Value> args;
  auto s = driver::cublasGemm(g.pick({0, 1}), args);
  REQUIRE(s);
  CHECK((s->bias && s->act == rt::GemmAct::GeluTanh));
  CHECK_FALSE(driver::cublasGemm(g.pick({2, 3}), args));
}

TEST_CASE("cublasGemm: attention scores and a linear layer as cuBLASLt "
          "products",
          "[lower]") {
  Graph g(kAttention);
  // ops: 0 matmul, 1 mul, 2 add, 3 matmul_add, 4 add, 5 relu, 6 gather,
  // 7 cast
  std::vector<mlir::Value> args;
  auto s = driver::cublasGemm(g.pick({0, 1, 2}), args);
  REQUIRE(s);
  CHECK(s->batch == 2);
  CHECK((s->M == 4 && s->N == 4 && s->K == 3));
  CHECK(s->alpha == 0.5f);
  CHECK((s->residual && !s->batchZ && !s->bias));
  CHECK(args.size() == 4);
  auto l = driver::cublasGemm(g.pick({3, 4, 5}), args);
  REQUIRE(l);
  CHECK((l->M == 4 && l->N == 5 && l->K == 3 && l->batch == 1));
  CHECK((l->bias && l->residual && l->batchZ && !l->batchB));
  CHECK(l->act == rt::GemmAct::Relu);
  CHECK(args.size() == 5);
  // A scale after the bias would scale the bias too: refused.
  CHECK_FALSE(driver::cublasGemm(g.pick({0, 2, 1}), args));
  // Integer tensors flow only through elementwise kernels.
  std::string why;
  CHECK(driver::canGenerate(g.pick({6}), &why));
  CHECK(driver::canGenerate(g.pick({7}), &why));
}

TEST_CASE("a lowered embedding gather and a masked score run on the CPU",
          "[lower]") {
  Graph g(kAttention);
  std::string err;
  TileParams p;
  p.Hb = 2, p.Wb = 6, p.Wt = 2;
  auto gk = driver::lowerGroup(g.pick({6}), p, "embed", err);
  INFO(err);
  REQUIRE(gk);
  std::vector<int64_t> ids{6, 0, -1, 3};
  std::vector<float> t(42, 1.5f), y(24, NAN);
  for (int i = 0; i < 42; ++i)
    t[i] = float(i);
  std::map<std::string, void *> buffers;
  for (size_t i = 0; i < gk->kernel.tensors.size(); ++i) {
    const auto &tn = gk->kernel.tensors[i];
    buffers[tn.name] = tn.output                   ? (void *)y.data()
                       : tn.type == dfg::Type::I64 ? (void *)ids.data()
                                                   : (void *)t.data();
  }
  REQUIRE(codegen::runOnHost(gk->kernel, buffers, err));
  for (int s = 0; s < 4; ++s)
    for (int h = 0; h < 6; ++h)
      CHECK(y[s * 6 + h] == float(((ids[s] + 7) % 7) * 6 + h));

  // The scores with a mask shared by the heads: the epilogue broadcasts.
  p = TileParams();
  p.Nb = 4, p.Kb = 4, p.Nt = 1, p.Kt = 2, p.Cin = 3;
  auto ops = g.pick({0, 1, 2});
  auto sk = driver::lowerGroup(ops, p, "scores", err);
  INFO(err);
  REQUIRE(sk);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> q(24), k(24), mask(16), sc(32, NAN);
  for (auto *v : {&q, &k, &mask})
    for (float &x : *v)
      x = u(rng);
  float half = 0.5f;
  buffers.clear();
  for (size_t i = 0; i < sk->kernel.tensors.size(); ++i) {
    mlir::Value v = sk->args[i];
    void *d = v == ops[0]->getOperand(0)   ? (void *)q.data()
              : v == ops[0]->getOperand(1) ? (void *)k.data()
              : v == ops[2]->getResult(0)  ? (void *)sc.data()
              : v == ops[1]->getOperand(1) ? (void *)&half
                                           : (void *)mask.data();
    buffers[sk->kernel.tensors[i].name] = d;
  }
  REQUIRE(codegen::runOnHost(sk->kernel, buffers, err));
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        double acc = 0;
        for (int c = 0; c < 3; ++c)
          acc += double(q[(h * 4 + i) * 3 + c]) * k[(h * 3 + c) * 4 + j];
        CHECK(std::fabs(sc[(h * 4 + i) * 4 + j] -
                        (0.5 * acc + mask[i * 4 + j])) < 1e-5);
      }
}

TEST_CASE("a mask shared by the heads and a transposed store lower as digits "
          "of the batch axis",
          "[lower]") {
  // BERT at batch 2: the kernel merges (batch, heads) into one axis; the
  // mask reads its batch digit, and the [0, 2, 1, 3] transpose stores the
  // heads apart. cuBLASLt cannot broadcast the mask.
  Graph g(R"mlir(
func.func @main(%q: tensor<2x3x4x5xf32>, %k: tensor<2x3x5x4xf32>, %mask: tensor<2x1x4x4xf32>, %m1: tensor<1x1x4x4xf32>) -> (tensor<2x4x3x4xf32>, tensor<2x3x4x4xf32>, tensor<3x2x4x4xf32>, tensor<2x4x3x4xf32>) {
  %0 = cuts.matmul %q, %k : (tensor<2x3x4x5xf32>, tensor<2x3x5x4xf32>) -> tensor<2x3x4x4xf32>
  %1 = cuts.add %0, %mask : (tensor<2x3x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x3x4x4xf32>
  %2 = cuts.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x4xf32>) -> tensor<2x4x3x4xf32>
  %3 = cuts.matmul %q, %k : (tensor<2x3x4x5xf32>, tensor<2x3x5x4xf32>) -> tensor<2x3x4x4xf32>
  %4 = cuts.add %3, %m1 : (tensor<2x3x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x3x4x4xf32>
  %5 = cuts.matmul %q, %k : (tensor<2x3x4x5xf32>, tensor<2x3x5x4xf32>) -> tensor<2x3x4x4xf32>
  %6 = cuts.transpose %5 {perm = array<i64: 1, 0, 3, 2>} : (tensor<2x3x4x4xf32>) -> tensor<3x2x4x4xf32>
  %7 = cuts.matmul %q, %k : (tensor<2x3x4x5xf32>, tensor<2x3x5x4xf32>) -> tensor<2x3x4x4xf32>
  %8 = cuts.transpose %7 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x4xf32>) -> tensor<2x4x3x4xf32>
  return %2, %4, %6, %8 : tensor<2x4x3x4xf32>, tensor<2x3x4x4xf32>, tensor<3x2x4x4xf32>, tensor<2x4x3x4xf32>
}
)mlir");
  std::string why;
  CHECK(driver::canGenerate(g.pick({0, 1, 2}), &why));
  CHECK(driver::canGenerate(g.pick({3, 4}), &why));
  // A transpose that moves the innermost axis stays a kernel of its own.
  CHECK_FALSE(driver::canGenerate(g.pick({5, 6}), &why));
  CHECK(why.find("cannot follow an anchor") != std::string::npos);
  std::vector<mlir::Value> args;
  CHECK_FALSE(driver::cublasGemm(g.pick({0, 1}), args));
  // cuBLASLt stores each product at one batch stride, not transposed.
  CHECK(driver::canGenerate(g.pick({7, 8})));
  CHECK_FALSE(driver::cublasGemm(g.pick({7, 8}), args));
  auto s = driver::cublasGemm(g.pick({3, 4}), args);
  REQUIRE(s);
  CHECK((s->batch == 6 && s->residual && !s->batchZ));

  TileParams p;
  p.Nb = 4, p.Kb = 4, p.Nt = 1, p.Kt = 2, p.Cin = 5;
  auto ops = g.pick({0, 1, 2});
  auto gk = driver::lowerGroup(ops, p, "masked", why);
  INFO(why);
  REQUIRE(gk);
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> q(120), k(120), mask(32), y(96, NAN);
  for (auto *v : {&q, &k, &mask})
    for (float &x : *v)
      x = u(rng);
  std::map<std::string, void *> buffers;
  for (size_t i = 0; i < gk->kernel.tensors.size(); ++i) {
    mlir::Value v = gk->args[i];
    buffers[gk->kernel.tensors[i].name] =
        v == ops[0]->getOperand(0)   ? (void *)q.data()
        : v == ops[0]->getOperand(1) ? (void *)k.data()
        : v == ops[1]->getOperand(1) ? (void *)mask.data()
                                     : (void *)y.data();
  }
  REQUIRE(codegen::runOnHost(gk->kernel, buffers, why));
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 3; ++h)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          double acc = mask[(b * 4 + i) * 4 + j];
          for (int c = 0; c < 5; ++c)
            acc += double(q[((b * 3 + h) * 4 + i) * 5 + c]) *
                   k[((b * 3 + h) * 5 + c) * 4 + j];
          CHECK(std::fabs(y[((b * 4 + i) * 3 + h) * 4 + j] - acc) < 1e-5);
        }
}

TEST_CASE("a slice (GPT-2's split) lowers to an in-place read", "[lower]") {
  Graph g(R"mlir(
func.func @main(%x: tensor<2x4x9xf32>) -> tensor<2x4x3xf32> {
  %0 = cuts.slice %x {ends = array<i64: 2, 4, 9>, starts = array<i64: 0, 0, 3>, steps = array<i64: 1, 1, 2>} : (tensor<2x4x9xf32>) -> tensor<2x4x3xf32>
  %1 = cuts.relu %0 : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %1 : tensor<2x4x3xf32>
}
)mlir");
  std::string err;
  REQUIRE(driver::canGenerate(g.pick({0, 1}), &err));
  for (int64_t wb : {1, 2, 4}) {
    TileParams p;
    p.Kb = 2, p.Hb = 2, p.Wb = wb;
    auto gk = driver::lowerGroup(g.pick({0, 1}), p, "slice_relu", err);
    INFO(err);
    REQUIRE(gk);
    std::vector<float> x(72), y(24, NAN);
    for (int i = 0; i < 72; ++i)
      x[i] = float(i % 7) - 3.0f;
    REQUIRE(codegen::runOnHost(gk->kernel,
                               {{gk->kernel.tensors[0].name, x.data()},
                                {gk->kernel.tensors[1].name, y.data()}},
                               err));
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 4; ++b)
        for (int c = 0; c < 3; ++c)
          CHECK(y[(a * 4 + b) * 3 + c] ==
                std::max(0.0f, x[(a * 4 + b) * 9 + 3 + 2 * c]));
  }
}

namespace {
// An fp16 linear layer and conv: no fp32 detour.
const char *kHalf = R"mlir(
func.func @main(%x: tensor<4x8xf16>, %i: tensor<1x2x5x5xf16>) -> (tensor<4x6xf16>, tensor<1x3x5x5xf16>) {
  %w = cuts.constant {value = dense<0.25> : tensor<8x6xf16>} : tensor<8x6xf16>
  %b = cuts.constant {value = dense<0.5> : tensor<6xf16>} : tensor<6xf16>
  %c = cuts.constant {value = dense<0.125> : tensor<3x2x3x3xf16>} : tensor<3x2x3x3xf16>
  %0 = cuts.matmul_add %x, %w, %b : (tensor<4x8xf16>, tensor<8x6xf16>, tensor<6xf16>) -> tensor<4x6xf16>
  %1 = cuts.relu %0 : (tensor<4x6xf16>) -> tensor<4x6xf16>
  %2 = cuts.conv %i, %c {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x5x5xf16>, tensor<3x2x3x3xf16>) -> tensor<1x3x5x5xf16>
  return %1, %2 : tensor<4x6xf16>, tensor<1x3x5x5xf16>
}
)mlir";
} // namespace

TEST_CASE("fp16 groups lower with fp16 tensors; the library calls take "
          "them in fp16 math",
          "[lower][half]") {
  Graph g(kHalf);
  // ops: 0 matmul_add, 1 relu, 2 conv
  std::string why;
  REQUIRE(driver::canGenerate(g.pick({0, 1}), &why));
  REQUIRE(driver::canGenerate(g.pick({2}), &why));
  std::vector<mlir::Value> args;
  auto gemm = driver::cublasGemm(g.pick({0, 1}), args);
  REQUIRE(gemm);
  CHECK(gemm->math == rt::LibraryMath::Fp16);
  CHECK(gemm->aBytes() == 2 * 4 * 8);
  CHECK(gemm->act == rt::GemmAct::Relu);
  auto conv = driver::cudnnConv(g.pick({2}), args);
  REQUIRE(conv);
  CHECK(conv->math == rt::LibraryMath::Fp16);
  CHECK(conv->yBytes() == 2 * 3 * 5 * 5);
  TileParams p;
  p.Nb = 4, p.Kb = 6, p.Nt = 2, p.Kt = 3, p.Cin = 4;
  std::string err;
  auto gk = driver::lowerGroup(g.pick({0, 1}), p, "linear16", err);
  INFO(err);
  REQUIRE(gk);
  for (const codegen::TensorArg &t : gk->kernel.tensors)
    CHECK(t.type == dfg::Type::F16);
  std::string src = codegen::emitSource(gk->kernel);
  CHECK(src.find("const unsigned short *__restrict__") != std::string::npos);
}

namespace {
// Attention's scores in fp16 as cuts-transpose-weights leaves them: Q and K
// row-moved from [B, S, H, D] and read with transB.
const char *kInPlace = R"mlir(
func.func @main(%q: tensor<1x16x2x32xf16>, %k: tensor<1x16x2x32xf16>) -> tensor<1x2x16x16xf16> {
  %0 = cuts.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x32xf16>) -> tensor<1x2x16x32xf16>
  %1 = cuts.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x32xf16>) -> tensor<1x2x16x32xf16>
  %2 = cuts.matmul %0, %1 {transB} : (tensor<1x2x16x32xf16>, tensor<1x2x16x32xf16>) -> tensor<1x2x16x16xf16>
  return %2 : tensor<1x2x16x16xf16>
}
)mlir";
} // namespace

TEST_CASE("a tensor-core product reads row-moving transposes in place",
          "[lower][half]") {
  Graph g(kInPlace);
  // ops: 0, 1 transposes, 2 matmul
  std::string why;
  REQUIRE(driver::canGenerate(g.pick({0, 1, 2}), &why));
  // cuBLASLt would read the transposes' results, which no kernel writes.
  std::vector<mlir::Value> libArgs;
  CHECK_FALSE(driver::cublasGemm(g.pick({0, 1, 2}), libArgs));
  TileParams simt = smallestParams(*describeOp(g.ops[2]));
  std::string err;
  CHECK_FALSE(driver::lowerGroup(g.pick({0, 1, 2}), simt, "k", err));
  CHECK(err.find("tensor-core") != std::string::npos);
  TileParams tc;
  tc.instr = MatrixInstr::MmaSync, tc.warpsM = tc.warpsN = 1, tc.stages = 2;
  tc.Nb = tc.Kb = 16, tc.Cin = 32, tc.Nt = 2, tc.Kt = 4;
  auto gk = driver::lowerGroup(g.pick({0, 1, 2}), tc, "scores", err);
  INFO(err);
  REQUIRE(gk);
  // A and B are the transposes' inputs, read at their own strides.
  REQUIRE(gk->args.size() == 3);
  CHECK(gk->args[0] == g.ops[0]->getOperand(0));
  CHECK(gk->args[1] == g.ops[1]->getOperand(0));
  REQUIRE(gk->kernel.mmaViews[0]);
  CHECK(gk->kernel.mmaViews[0]->rowStride == 64);
  CHECK(gk->kernel.mmaViews[0]->batchStrides == std::vector<int64_t>{1024, 32});
  // A transpose that moves the innermost axis is no view.
  Graph h(R"mlir(
func.func @main(%q: tensor<1x2x16x32xf16>, %k: tensor<1x2x16x32xf16>) -> tensor<1x2x16x16xf16> {
  %0 = cuts.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x16x32xf16>) -> tensor<1x2x32x16xf16>
  %1 = cuts.matmul %q, %0 : (tensor<1x2x16x32xf16>, tensor<1x2x32x16xf16>) -> tensor<1x2x16x16xf16>
  return %1 : tensor<1x2x16x16xf16>
}
)mlir");
  CHECK_FALSE(driver::canGenerate(h.pick({0, 1}), &why));
}

// The driver's lowering of partition groups to kernels: which groups the
// code generator can build, and that a lowered group runs on the CPU with
// the right answer.
#include "compiler/driver/Lower.h"
#include "GraphTestUtil.h"
#include "codegen/emit/HostRun.h"
#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "perfmodel/Params.h"

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
  std::map<std::string, float *> buffers;
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

// The fusion model (thesis §3.2.4) on small cuts graphs.
#include "perfmodel/Fusion.h"
#include "GraphTestUtil.h"
#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "perfmodel/Describe.h"
#include "perfmodel/ParamSearch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

using namespace cuts;

namespace {

using test::Graph;

const char *kConvChain = R"mlir(
func.func @main(%x: tensor<1x64x28x28xf32>, %r: tensor<1x64x28x28xf32>) -> tensor<1x64x28x28xf32> {
  %w1 = cuts.constant {value = dense<0.5> : tensor<64x64x1x1xf32>} : tensor<64x64x1x1xf32>
  %w2 = cuts.constant {value = dense<0.5> : tensor<64x64x3x3xf32>} : tensor<64x64x3x3xf32>
  %0 = cuts.conv %x, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x28x28xf32>, tensor<64x64x1x1xf32>) -> tensor<1x64x28x28xf32>
  %1 = cuts.relu %0 : (tensor<1x64x28x28xf32>) -> tensor<1x64x28x28xf32>
  %2 = cuts.conv %1, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x28x28xf32>
  %3 = cuts.add %2, %r : (tensor<1x64x28x28xf32>, tensor<1x64x28x28xf32>) -> tensor<1x64x28x28xf32>
  %4 = cuts.conv %3, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x28x28xf32>, tensor<64x64x1x1xf32>) -> tensor<1x64x28x28xf32>
  %5 = cuts.reshape %4 {shape = array<i64: 64, 784>} : (tensor<1x64x28x28xf32>) -> tensor<64x784xf32>
  return %4 : tensor<1x64x28x28xf32>
}
)mlir";

const GpuArch &h100() {
  static GpuArch a = *findArch("h100");
  return a;
}

} // namespace

TEST_CASE("register-level fusion: the anchor's traffic, the summed work",
          "[fusion]") {
  Graph g(kConvChain);
  FusionModel model(h100(), {}, true);
  // conv1 + relu: the relu reads nothing from outside.
  auto e = model.estimate({g.ops[0], g.ops[1]});
  REQUIRE(e);
  CHECK(e->fusion == "register");
  CHECK(e->anchor == g.ops[0]);
  OpDesc conv = *describeOp(g.ops[0]);
  Bound alone = evaluateBound(conv, e->best.params, h100());
  CHECK(e->best.bound.numTrans == alone.numTrans);
  CHECK(e->best.bound.nLoad == Approx(alone.nLoad));
  double reluPerBlock = 64.0 * 28 * 28 / double(alone.numBlocks);
  CHECK(e->best.bound.compBlock == Approx(alone.compBlock + reluPerBlock));
  // conv2 + add: the residual operand adds its transactions.
  auto r = model.estimate({g.ops[2], g.ops[3]});
  REQUIRE(r);
  OpDesc conv2 = *describeOp(g.ops[2]);
  Bound alone2 = evaluateBound(conv2, r->best.params, h100());
  int T = h100().transGlobalElements(4);
  double perBlock = 64.0 * 28 * 28 / double(alone2.numBlocks);
  CHECK(r->best.bound.numTrans ==
        Approx(alone2.numTrans + std::ceil(perBlock / T)));
  // Fusing never makes the pair slower than its anchor alone.
  CHECK(e->time <= model.estimate({g.ops[0]})->time * (1 + 1e-9) +
                       model.estimate({g.ops[1]})->time);
}

TEST_CASE("each kernel costs a launch; a fused group saves one", "[fusion]") {
  Graph g(kConvChain);
  GpuArch noLaunch = h100();
  REQUIRE(noLaunch.launchSeconds > 0);
  noLaunch.launchSeconds = 0;
  FusionModel with(h100(), {}, true), without(noLaunch, {}, true);
  for (auto ops : {std::vector<mlir::Operation *>{g.ops[0]},
                   std::vector<mlir::Operation *>{g.ops[0], g.ops[1]}}) {
    auto a = with.estimate(ops), b = without.estimate(ops);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->time == Approx(b->time + h100().launchSeconds).epsilon(1e-12));
  }
  // The relu alone: one more launch than inside the conv's kernel.
  auto relu = with.estimate({g.ops[1]}),
       reluBare = without.estimate({g.ops[1]});
  REQUIRE(relu);
  CHECK(relu->time - reluBare->time == Approx(h100().launchSeconds));
  // A view launches nothing.
  auto view = with.estimate({g.ops[5]});
  REQUIRE(view);
  CHECK(view->fusion == "view");
  CHECK(view->time == 0);
}

TEST_CASE("shared-memory-level fusion: the successor reads shared memory",
          "[fusion]") {
  Graph g(kConvChain);
  FusionModel model(h100(), {}, true);
  // conv1 (1x1) + relu -> conv2 (3x3): complex -> complex.
  auto e = model.estimate({g.ops[0], g.ops[1], g.ops[2]});
  REQUIRE(e);
  CHECK(e->fusion == "shared");
  CHECK(e->anchor == g.ops[2]);
  CHECK(e->predecessor == g.ops[0]);
  // NUM_trans of the successor is 0: GMRatio = 1; C_input = C.
  CHECK(e->best.bound.gmRatio == 1.0);
  CHECK(e->best.params.Cin == 64);
  // The predecessor's block is the successor's input tile (3x3 halo, also
  // where it overhangs the image) with every channel, for every ranked set.
  const TileParams &s = e->best.params, &p = e->predecessorBest.params;
  CHECK(p.Nb == s.Nb);
  CHECK(p.Kb == 64);
  CHECK(p.Hb == s.Hb + 2);
  CHECK(p.Wb == s.Wb + 2);
  REQUIRE(e->ranked.size() == e->rankedPredecessor.size());
  for (size_t i = 0; i < e->ranked.size(); ++i) {
    CHECK(e->rankedPredecessor[i].params.Hb == e->ranked[i].params.Hb + 2);
    if (i > 0)
      CHECK(e->ranked[i - 1].bound.timeLowerBound <=
            e->ranked[i].bound.timeLowerBound);
  }
  CHECK(e->time ==
        Approx(e->ranked.front().bound.timeLowerBound + h100().launchSeconds));
  CHECK(e->predecessorBest.bound.sharedBytes + e->best.bound.sharedBytes <=
        h100().maxSharedPerBlock);
  CHECK(std::isfinite(e->time));
}

TEST_CASE("a successor's best set per predecessor block: every block, "
          "each its best",
          "[fusion]") {
  Graph g(kConvChain);
  OpDesc ds = *describeOp(g.ops[2]);
  auto key = [](const TileParams &q) -> BlockKey {
    return {q.Nb, 0, q.Hb, q.Wb, q.threads()};
  };
  int64_t n = 0;
  std::vector<Candidate> best =
      bestPerBlockKey(ds, h100(), InputFrom::SharedMemory, key, &n);
  // Brute force: every set ranked; a key's first is its best.
  PruneOptions all;
  all.topPercent = 100;
  all.maxKeep = int64_t(1) << 40;
  SearchResult every = searchParams(ds, h100(), all, InputFrom::SharedMemory);
  CHECK(n == every.enumerated);
  std::map<BlockKey, const Candidate *> first;
  for (const Candidate &c : every.kept)
    first.emplace(key(c.params), &c);
  REQUIRE(best.size() == first.size());
  for (size_t i = 0; i < best.size(); ++i) {
    const Candidate &ref = *first.at(key(best[i].params));
    CHECK(best[i].bound.pul == ref.bound.pul);
    if (i > 0)
      CHECK(!betterBound(best[i].bound, best[i - 1].bound));
  }
}

TEST_CASE("shared-memory-level fusion keeps the best pairs over every "
          "predecessor block",
          "[fusion]") {
  // Branch and bound against fusing every block's best successor set.
  Graph g(kConvChain);
  const GpuArch &a = h100();
  PruneOptions prune;
  FusionModel model(a, prune, true);
  auto e = model.estimate({g.ops[0], g.ops[1], g.ops[2]});
  REQUIRE(e);
  REQUIRE(e->fusion == "shared");
  OpDesc dp = *describeOp(g.ops[0]), ds = *describeOp(g.ops[2]);
  auto key = [](const TileParams &q) -> BlockKey {
    return {q.Nb, 0, q.Hb, q.Wb, q.threads()};
  };
  std::vector<double> times;
  int64_t blocks = 0;
  for (const Candidate &c :
       bestPerBlockKey(ds, a, InputFrom::SharedMemory, key)) {
    TileParams block;
    block.Nb = c.params.Nb, block.Kb = dp.K;
    block.Hb = c.params.Hb + 2, block.Wb = c.params.Wb + 2;
    if (block.Nb > dp.N || c.bound.wbRatio <= 0)
      continue;
    ++blocks;
    auto pc = bestForBlock(dp, a, block, c.params.threads());
    if (!pc || pc->bound.pul <= 0 ||
        pc->bound.sharedBytes + c.bound.sharedBytes > a.maxSharedPerBlock)
      continue;
    times.push_back(pc->bound.compBlock * double(c.bound.numBlocks) /
                        (pc->bound.pul * c.bound.wbRatio * a.perfPeakFp32) +
                    c.bound.timeLowerBound);
  }
  std::sort(times.begin(), times.end());
  size_t k = std::min(times.size(), size_t(keepCount(blocks, prune)));
  REQUIRE(k >= size_t(prune.minKeep));
  REQUIRE(e->ranked.size() == k);
  CHECK(e->kept == int64_t(k));
  for (size_t i = 0; i < k; ++i)
    CHECK(e->ranked[i].bound.timeLowerBound == Approx(times[i]));
}

TEST_CASE("fusion rules that forbid a group", "[fusion]") {
  Graph g(kConvChain);
  FusionModel model(h100(), {}, true);
  // Three complex ops would need two shared-memory hand-overs.
  CHECK(!model.estimate({g.ops[0], g.ops[1], g.ops[2], g.ops[3], g.ops[4]}));
  // With fusion off only single ops have a cost.
  FusionModel off(h100(), {}, false);
  CHECK(!off.estimate({g.ops[0], g.ops[1]}));
  CHECK(off.estimate({g.ops[0]}));
  // A reshape is a view: no kernel, no time.
  auto v = model.estimate({g.ops[5]});
  REQUIRE(v);
  CHECK(v->fusion == "view");
  CHECK(v->time == 0.0);
}

TEST_CASE("matmul -> softmax fuses at the shared-memory level over rows",
          "[fusion]") {
  Graph g(R"mlir(
func.func @main(%a: tensor<128x64xf32>) -> tensor<128x256xf32> {
  %w = cuts.constant {value = dense<0.5> : tensor<64x256xf32>} : tensor<64x256xf32>
  %0 = cuts.matmul %a, %w : (tensor<128x64xf32>, tensor<64x256xf32>) -> tensor<128x256xf32>
  %1 = cuts.softmax %0 {axis = 1 : i64} : (tensor<128x256xf32>) -> tensor<128x256xf32>
  return %1 : tensor<128x256xf32>
}
)mlir");
  FusionModel model(h100(), {}, true);
  auto e = model.estimate({g.ops[0], g.ops[1]});
  REQUIRE(e);
  CHECK(e->fusion == "shared");
  CHECK(e->best.bound.gmRatio == 1.0);
  // The matmul's block produces whole rows of the softmax.
  CHECK(e->predecessorBest.params.Kb == 256);
  CHECK(e->predecessorBest.params.Nb == e->best.params.Nb);
}

TEST_CASE("a concat reads its output's worth, however many operands",
          "[fusion]") {
  // Four parts of 8 channels each (each 1/4 of the output): one full-size
  // read, not four. The add beside it reads two.
  Graph g(R"mlir(
func.func @main(%a: tensor<1x8x4x4xf32>, %b: tensor<1x8x4x4xf32>, %c: tensor<1x8x4x4xf32>, %d: tensor<1x8x4x4xf32>, %r: tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32> {
  %0 = cuts.concat %a, %b, %c, %d {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x32x4x4xf32>
  %1 = cuts.add %0, %r : (tensor<1x32x4x4xf32>, tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32>
  return %1 : tensor<1x32x4x4xf32>
}
)mlir");
  REQUIRE(g.ops.size() == 2);
  CHECK(describeOp(g.ops[0])->inputs == 1);
  CHECK(describeOp(g.ops[1])->inputs == 2);
  llvm::SmallPtrSet<mlir::Operation *, 2> group;
  group.insert(g.ops[0]);
  CHECK(externalInputs(g.ops[1], group) == 1);
}

// The HIP emission of a representative set of generated kernels compiles
// offline for gfx90a (hipcc --genco). ctest's codegen-hip runs it, and skips
// it where hipcc is not installed.
#include "codegen/emit/Cuda.h"
#include "codegen/ops/Conv.h"
#include "codegen/ops/Elementwise.h"
#include "codegen/ops/MatMul.h"
#include "codegen/ops/Pool.h"
#include "codegen/ops/Reduction.h"
#include "codegen/ops/SharedFusion.h"
#include "codegen/sync/TileSync.h"

#include "CodegenTestUtil.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace cuts;
using namespace cuts::codegen;

TEST_CASE("HIP emission compiles with hipcc for gfx90a", "[.hip]") {
  // ctest runs this case alone (codegen-hip), skipped where hipcc is absent.
  REQUIRE(std::system("command -v hipcc >/dev/null 2>&1") == 0);
  std::string err;
  std::vector<Kernel> kernels;
  auto add = [&](std::optional<Kernel> k) {
    INFO(err);
    REQUIRE(k);
    kernels.push_back(std::move(*k));
  };
  TileParams mm;
  mm.Nb = 32, mm.Kb = 64, mm.Nt = 4, mm.Kt = 4, mm.Cin = 16;
  add(buildMatMul("hip_matmul_bias_gelu", test::matmulDesc(128, 256, 192), mm,
                  {EpilogueOp::binary(dfg::Op::Add, "bias", {192}),
                   EpilogueOp::unary(dfg::Op::Gelu)},
                  err));
  TileParams cv;
  cv.Kb = 8, cv.Hb = 4, cv.Wb = 8, cv.Kt = 2, cv.Ht = 2, cv.Wt = 2, cv.Cin = 8;
  add(buildConv("hip_conv3x3", test::convCase(1, 32, 28, 32, 3, 1, 1).desc(),
                cv, {}, err));
  cv.Cin = 1; // depthwise: no C loop
  add(buildConv("hip_depthwise",
                test::convCase(1, 32, 28, 32, 3, 1, 1, 1, 32).desc(), cv,
                {EpilogueOp::unary(dfg::Op::Clip, 0, 6)}, err));
  TileParams ew;
  ew.Hb = 4, ew.Wb = 32, ew.Wt = 4;
  add(buildElementwise("hip_add_relu", describeElementwise({8, 28, 28}, 2),
                       {8, 28, 28}, {{"a", {8, 28, 28}}, {"b", {8, 1, 1}}},
                       {{dfg::Op::Add, {-1, -2}}, {dfg::Op::Relu, {0}}}, ew,
                       err));
  test::PoolCase ps;
  ps.C = 32, ps.H = ps.W = 28, ps.FH = ps.FW = 3;
  ps.SH = ps.SW = 2, ps.PH = ps.PW = 1, ps.OH = ps.OW = 14;
  TileParams pp;
  pp.Kb = 8, pp.Hb = 4, pp.Wb = 4, pp.Kt = 2;
  add(buildPool("hip_max_pool", ps.desc(), ps.pooling(), pp, {}, err));
  // Shared-memory-level fusion: a matmul's rows layer-normalised over lanes.
  TileParams rows, pre;
  rows.Nb = 4, rows.Wb = 32, rows.Cin = 64;
  pre.Nb = 4, pre.Kb = 64, pre.Kt = 2, pre.Cin = 16; // 128 tiles: 1 round
  RowSpec rs;
  rs.op = RowOp::LayerNorm;
  rs.sharedInput = true;
  auto producer =
      buildMatMul("pre", test::matmulDesc(48, 32, 64), pre, {}, err);
  auto consumer =
      buildRowOp("hip_matmul_layernorm", describeRows(48, 64), rs, rows, err);
  INFO(err);
  REQUIRE(producer);
  REQUIRE(consumer);
  add(fuseShared(*producer, *consumer, "X", err));
  // cuSync on HIP: a GEMM pair, the producer posting its tiles (RowSync)
  // and the consumer waiting for the rows it reads; the wait and epoch
  // kernels.
  TileParams g1 = mm, g2 = mm;
  g2.Nb = 32, g2.Kb = 32;
  auto post =
      buildMatMul("hip_sync_post", test::matmulDesc(64, 96, 128), g1, {}, err);
  auto wait =
      buildMatMul("hip_sync_wait", test::matmulDesc(64, 128, 96), g2, {}, err);
  INFO(err);
  REQUIRE(post);
  REQUIRE(wait);
  std::string why;
  auto dep = sync::dependence(*post, *wait, 0, why);
  INFO(why);
  REQUIRE(dep);
  const sync::Policy policy = sync::policies(*dep).back();
  post->post = TilePost{dep->producer, policy, std::nullopt};
  wait->waits = {TileWait{sync::tiledFetch(*wait, 0)->tensor, *dep, policy}};
  // The producer's tiles in a custom order (T): atomicInc's slot counter.
  auto ordered = std::make_optional<Kernel>(*post);
  ordered->name = "hip_sync_post_ordered";
  ordered->post->order = sync::TileOrder{{1, 3, 2, 0}};
  add(std::move(ordered));
  add(std::move(post));
  add(std::move(wait));
  char dir[] = "/tmp/cuts-hip-XXXXXX";
  REQUIRE(mkdtemp(dir));
  for (const Kernel &k : kernels) {
    std::string src = std::string(dir) + "/" + k.name + ".hip";
    std::ofstream(src) << emitSource(k, Target::Hip);
    std::string cmd = "hipcc --genco --offload-arch=gfx90a -O2 " + src +
                      " -o " + src + ".hsaco > " + src + ".log 2>&1";
    INFO(k.name << ": " << cmd);
    CHECK(std::system(cmd.c_str()) == 0);
    std::remove((src + ".hsaco").c_str());
    std::remove((src + ".log").c_str());
    std::remove(src.c_str());
  }
  for (const auto &[name, source] :
       {std::make_pair("cuts_sync_wait", syncWaitKernel(Target::Hip)),
        std::make_pair("cuts_sync_epoch", syncEpochKernel(Target::Hip))}) {
    std::string src = std::string(dir) + "/" + name + ".hip";
    std::ofstream(src) << source;
    std::string cmd = "hipcc --genco --offload-arch=gfx90a -O2 " + src +
                      " -o " + src + ".hsaco > " + src + ".log 2>&1";
    INFO(name << ": " << cmd);
    CHECK(std::system(cmd.c_str()) == 0);
    std::remove((src + ".hsaco").c_str());
    std::remove((src + ".log").c_str());
    std::remove(src.c_str());
  }
  rmdir(dir);
}

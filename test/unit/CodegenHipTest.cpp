// The HIP emission of a representative set of generated kernels compiles
// offline for gfx90a (hipcc --genco), where hipcc is installed.
#include "codegen/emit/Cuda.h"
#include "codegen/ops/Conv.h"
#include "codegen/ops/Elementwise.h"
#include "codegen/ops/MatMul.h"
#include "codegen/ops/Pool.h"
#include "codegen/ops/Reduction.h"
#include "codegen/ops/SharedFusion.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace cuts;
using namespace cuts::codegen;

TEST_CASE("HIP emission compiles with hipcc for gfx90a", "[codegen][hip]") {
  if (std::system("command -v hipcc >/dev/null 2>&1") != 0) {
    WARN("hipcc not found: HIP compile check skipped");
    return;
  }
  std::string err;
  std::vector<Kernel> kernels;
  TileParams mm;
  mm.Nb = 32, mm.Kb = 64, mm.Nt = 4, mm.Kt = 4, mm.Cin = 16;
  kernels.push_back(
      *buildMatMul("hip_matmul_bias_gelu", 128, 256, 192, mm,
                   {EpilogueOp::binary(dfg::Op::Add, "bias", {192}),
                    EpilogueOp::unary(dfg::Op::Gelu)},
                   err));
  ConvShape s;
  s.N = 1, s.C = 32, s.H = s.W = 28, s.K = 32, s.FH = s.FW = 3;
  s.PH = s.PW = 1, s.OH = s.OW = 28;
  TileParams cv;
  cv.Kb = 8, cv.Hb = 4, cv.Wb = 8, cv.Kt = 2, cv.Ht = 2, cv.Wt = 2, cv.Cin = 8;
  kernels.push_back(*buildConv("hip_conv3x3", s, cv, {}, err));
  s.group = 32;
  kernels.push_back(*buildConv("hip_depthwise", s, cv,
                               {EpilogueOp::unary(dfg::Op::Clip, 0, 6)}, err));
  TileParams ew;
  ew.Hb = 4, ew.Wb = 32, ew.Wt = 4;
  kernels.push_back(*buildElementwise(
      "hip_add_relu", {8, 28, 28}, {{"a", {8, 28, 28}}, {"b", {8, 1, 1}}},
      {{dfg::Op::Add, {-1, -2}}, {dfg::Op::Relu, {0}}}, ew, err));
  PoolShape ps;
  ps.N = 1, ps.C = 32, ps.H = ps.W = 28, ps.FH = ps.FW = 3;
  ps.SH = ps.SW = 2, ps.PH = ps.PW = 1, ps.OH = ps.OW = 14;
  TileParams pp;
  pp.Kb = 8, pp.Hb = 4, pp.Wb = 4, pp.Kt = 2;
  kernels.push_back(*buildPool("hip_max_pool", ps, pp, {}, err));
  // Shared-memory-level fusion: a matmul's rows layer-normalised over lanes.
  TileParams rows, pre;
  rows.Nb = 4, rows.Wb = 32, rows.Cin = 64;
  pre.Nb = 4, pre.Kb = 64, pre.Kt = 2, pre.Cin = 16; // 128 tiles: 1 round
  RowShape rs;
  rs.rows = 48, rs.length = 64, rs.op = RowOp::LayerNorm;
  rs.sharedInput = true;
  auto fused = fuseShared(*buildMatMul("pre", 48, 32, 64, pre, {}, err),
                          *buildRowOp("hip_matmul_layernorm", rs, rows, err),
                          "X", err);
  INFO(err);
  REQUIRE(fused);
  kernels.push_back(*fused);
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
  rmdir(dir);
}

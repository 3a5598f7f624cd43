//===- TensorCore.cpp - tilings and bound of tensor-core matmuls ----------===//
#include "perfmodel/Roofline.h"

#include <algorithm>
#include <cmath>

namespace cuts {
namespace {

// Whether every architecture a's kernels are compiled for passes `has`.
template <typename Has> bool everyTarget(const GpuArch &a, Has has) {
  if (a.vendor != "nvidia" || !has(smVersion(a.computeArch)))
    return false;
  for (const std::string &t : a.targets)
    if (!has(smVersion(t)))
      return false;
  return true;
}

int64_t roundUp(int64_t x, int64_t unit) {
  return (x + unit - 1) / unit * unit;
}

// The rows of B's shared tile: Kb when B is stored N x K, else C_input.
int64_t bRows(const OpDesc &d, const TileParams &p) {
  return d.transB ? p.Kb : p.Cin;
}

// A row of each shared tile is moved in 16-byte copies, and each thread's
// copies start at one column of it (codegen's buildMmaMatMul refuses other
// sets): a row's copies divide the block's threads, and for wgmma's 8-row
// core matrices a pass of copies covers whole ones.
bool copiesDivide(const OpDesc &d, const TileParams &p) {
  const int64_t perCopy = d.copyElements(), threads = p.copyThreads();
  const int64_t cprA = p.Cin / perCopy;
  const int64_t cprB = (d.transB ? p.Cin : p.Kb) / perCopy;
  return threads % cprA == 0 && threads % cprB == 0 &&
         (p.instr != MatrixInstr::Wgmma || (threads / cprA) % 8 == 0);
}

} // namespace

bool hasMmaSync(const GpuArch &a) {
  return a.perfPeakFp16 > 0 && everyTarget(a, [](int sm) { return sm >= 80; });
}

bool tensorCoreAllows(const OpDesc &d, const GpuArch &a, MatrixInstr instr) {
  // tf32: fp32 operands on mma.sync, B K-major (codegen's ldmatrix cannot
  // transpose 32-bit words).
  const bool tf32 =
      d.elementBytes == 4 && d.tf32 && d.transB && instr != MatrixInstr::Wgmma;
  // Rows of K (and of N where B is K x N) in whole 16-byte copies (8-byte
  // ones for a stem's, OpDesc::copyElements).
  const int64_t perCopy = d.copyElements();
  if (d.kind != OpKind::MatMul || (d.elementBytes != 2 && !tf32) || d.transA ||
      a.perfPeakFp16 <= 0 || d.C % perCopy || (!d.transB && d.K % perCopy))
    return false;
  switch (instr) {
  case MatrixInstr::MmaSync:
    return everyTarget(a, [](int sm) { return sm >= 80; });
  case MatrixInstr::Wgmma: // sm_90a only: Blackwell has tcgen05 instead
    return d.transB && everyTarget(a, [](int sm) { return sm == 90; });
  case MatrixInstr::None:
    return true;
  }
  return false;
}

void forEachTensorCoreParams(
    const OpDesc &d, const GpuArch &a,
    const std::function<void(const TileParams &)> &fn) {
  // Blocks no more than one power of two past the matrix: a larger one
  // only idles its extra warps.
  auto fits = [](int64_t block, int64_t extent, int64_t least) {
    int64_t span = least;
    while (span < extent)
      span <<= 1;
    return block <= span;
  };
  TileParams p;
  p.Hb = p.Wb = p.Ht = p.Wt = 1;
  auto emit = [&](MatrixInstr instr, int64_t rowsPerTile, int64_t wm,
                  int64_t wn, int64_t mi, int64_t ni) {
    p.instr = instr, p.warpsM = wm, p.warpsN = wn, p.warpSpecialized = false;
    p.Nt = 2 * mi, p.Kt = 2 * ni;
    p.Nb = rowsPerTile * wm * mi, p.Kb = 8 * wn * ni;
    if (!fits(p.Nb, d.N, rowsPerTile * wm) || !fits(p.Kb, d.K, 8 * wn * 2))
      return;
    // Accumulators past the block's register cap would spill: a wgmma's
    // must stay in registers.
    auto regsFit = [&] {
      return tensorCoreRegisters(p) <= registerCap(p.threads(), a);
    };
    // Among sets of equal bounds the first enumerated ranks first: the
    // widest slice and the deepest pipeline, which hide the most latency.
    for (int64_t cin : {64, 32, 16}) {
      if ((cin > 16 && !fits(cin, d.C, 16)) ||
          (d.im2col && !d.im2colSlices(cin)))
        continue;
      p.Cin = cin;
      if (!copiesDivide(d, p))
        continue;
      // A stage past the product's slices holds nothing but costs shared
      // memory, and so blocks on an SM (attention's K = 64 in one slice).
      const int64_t slices = (d.C + cin - 1) / cin;
      for (int64_t stages : {8, 6, 4, 3, 2}) {
        if (stages > std::max<int64_t>(2, slices))
          continue;
        p.stages = stages;
        // wgmma warp-specialised first: no block barrier between slices.
        for (bool ws : {true, false}) {
          p.warpSpecialized = ws;
          if ((ws && (instr != MatrixInstr::Wgmma || !copiesDivide(d, p))) ||
              !regsFit())
            continue;
          fn(p);
        }
      }
    }
  };
  // wgmma first: its products read shared memory without register
  // fragments, and on an H100 it ran the large GEMMs fastest.
  if (tensorCoreAllows(d, a, MatrixInstr::Wgmma))
    for (int64_t wm : {1, 2})
      for (int64_t mi : {1, 2})
        for (int64_t ni : {4, 8, 16, 32})
          emit(MatrixInstr::Wgmma, 64, wm, 1, mi, ni);
  if (tensorCoreAllows(d, a, MatrixInstr::MmaSync))
    for (int64_t wm : {1, 2, 4})
      for (int64_t wn : {1, 2, 4})
        for (int64_t mi : {1, 2, 4})
          for (int64_t ni : {2, 4, 8})
            if (wm * wn <= 8)
              emit(MatrixInstr::MmaSync, 16, wm, wn, mi, ni);
}

int64_t tensorCoreSharedBytes(const OpDesc &d, const TileParams &p) {
  const int64_t eb = d.elementBytes;
  const bool wgmma = p.instr == MatrixInstr::Wgmma;
  // mma.sync rows are padded by 16 bytes (ldmatrix's rows in distinct
  // banks); wgmma's swizzled stages are whole 1024-byte patterns.
  const int64_t pad = wgmma ? 0 : 16 / eb;
  int64_t a = p.Nb * (p.Cin + pad);
  int64_t b = bRows(d, p) * ((d.transB ? p.Cin : p.Kb) + pad);
  if (wgmma) {
    a = roundUp(a, 1024 / eb);
    b = roundUp(b, 1024 / eb);
  }
  // A warp-specialised pipeline's full and empty mbarriers, 8 bytes each.
  return filledStages(d, p) * (a + b) * eb +
         (p.warpSpecialized ? p.stages * 16 : 0);
}

int64_t filledStages(const OpDesc &d, const TileParams &p) {
  const int64_t slices = (d.C + p.Cin - 1) / p.Cin;
  return p.warpSpecialized ? p.stages : std::min(p.stages, slices);
}

int64_t tensorCoreRegisters(const TileParams &p) {
  // A lane's accumulators, its A and B fragments of one k-step (mma.sync),
  // and indices and shared addresses.
  const int64_t mi = p.Nt / 2, ni = p.Kt / 2;
  const int64_t fragments = p.instr == MatrixInstr::Wgmma ? 0 : 4 * mi + 2 * ni;
  return 4 * mi * ni + fragments + 32;
}

double tensorCorePul(Bound &b, const OpDesc &d, const TileParams &p,
                     const GpuArch &a) {
  const double clock = a.clockGHz * 1e9;
  const int64_t mi = p.Nt / 2, ni = p.Kt / 2;
  const double steps = std::ceil(double(d.C) / double(p.Cin)) * p.Cin / 16.0;
  const bool wgmma = p.instr == MatrixInstr::Wgmma;
  // Shared-memory traffic of a block: cp.async writes each tile once; per
  // 16-deep step, ldmatrix reads every warp's A and B fragments (mma.sync)
  // or each m64 product reads its A rows and all of B's columns (wgmma).
  const double perStep =
      wgmma ? double(p.warpsM * mi) * (64 + 8 * ni) * 16 * d.elementBytes
            : double(p.warpsM * p.warpsN) * (16 * mi + 8 * ni) * 16 *
                  d.elementBytes;
  const double written = double(p.Nb + p.Kb) * steps * 16 * d.elementBytes;
  const double sharedCycles =
      (perStep * steps + written) / (a.sharedBanks * 4.0);
  const double tensorCycles =
      2.0 * p.Nb * p.Kb * steps * 16 / (b.peak / (a.numSM * clock));
  double sharedRatio = tensorCycles / sharedCycles;
  // mma.sync issues to its warp's scheduler's tensor core: with fewer
  // resident warps than schedulers, the other cores idle. A warpgroup
  // spans all four.
  if (!wgmma)
    sharedRatio *= busySchedulers(warpsPerScheduler(p, b.residentBlocks, a));
  b.smRatio = std::min(1.0, sharedRatio);
  // Global memory: the operands and the result cross DRAM once, and every
  // block's tiles come from L2 (at bwL2, measured): the tiles of a large
  // GEMM are re-read from L2 many times, which the thesis's NUM_trans at
  // BW_global would count as DRAM traffic (it bounded BERT's batch-32
  // projections below the 47 % of peak they ran at on an H100). A fused
  // epilogue's operands (a residual) cross it once too.
  const double eb = d.elementBytes;
  // An implicit GEMM's A is its input, each element read by up to FH x FW
  // rows' slices (from L2 after the first).
  // A conv_sum's second input is 1 x 1: only the pixels its rows read.
  const double aElems = d.im2col
                            ? double(d.N / (d.OH * d.OW)) * d.IH * d.IW * d.IC +
                                  double(d.N) * d.IC2
                            : double(d.N) * d.C;
  const double dram =
      (aElems + double(d.C) * d.K + double(d.N) * d.K) * eb * double(d.batch) +
      b.extraElements * eb;
  const double tiles = double(b.numBlocks) * double(p.Nb + p.Kb) *
                       std::ceil(double(d.C) / double(p.Cin)) * p.Cin * eb;
  // The tiles come in by cp.async, measured apart where the probe has it.
  const double bwTiles = a.bwL2CpAsync > 0 ? a.bwL2CpAsync : a.bwL2;
  const double l2Seconds = bwTiles > 0 ? tiles / bwTiles : 0.0;
  const double seconds = std::max(dram / a.bwGlobal, l2Seconds);
  b.gmRaw = b.totalComp / b.peak / seconds;
  b.gmRatio = std::min(1.0, b.gmRaw);
  // Sets whose binding ceiling is the same (GMRatio of a large GEMM's
  // 128 x 256 blocks) rank by both: the one with more shared-memory slack
  // first. Where DRAM binds (ResNet-50's 1 x 1 convs at batch 64), the one
  // with more blocks on an SM: more copies in flight. On an H200 those
  // (64 x 256 and 128 x 128 blocks of one warpgroup) ran 7-25 % faster
  // than the larger blocks the slack preferred.
  const double resident = double(std::max<int64_t>(b.residentBlocks, 1));
  const bool dramBound = b.gmRatio < std::min(1.0, sharedRatio) * b.wbRatio &&
                         dram / a.bwGlobal >= l2Seconds;
  b.headroom = dramBound ? b.gmRaw * resident / (resident + 1)
                         : 1.0 / (1.0 / b.gmRaw + 1.0 / sharedRatio);
  // The pipeline keeps `ahead` slices in flight: after the first slice's
  // LAT_iter, a slice at least every LAT_iter / ahead.
  if (a.latIterCycles > 0) {
    double iterations = std::ceil(double(d.C) / double(p.Cin));
    double waves = double(wavesPerSM(b.numBlocks, b.residentBlocks, a));
    b.chainSteps = waves * iterations;
    b.latencyChainSeconds = waves * a.latIterCycles *
                            (1 + (iterations - 1) / double(p.slicesAhead())) /
                            clock;
  }
  return b.coefR * std::min(b.gmRatio, b.smRatio * b.wbRatio);
}

} // namespace cuts

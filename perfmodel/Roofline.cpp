//===- Roofline.cpp - the DeepCuts performance upper bound (PUL) ----------===//
#include "perfmodel/Roofline.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <iterator>
#include <map>
#include <sstream>

namespace cuts {

namespace {

double ceilDiv(double a, double b) { return std::ceil(a / b); }

// Input extent that `out` outputs of a window of size f, stride s and
// dilation d read. The thesis's Tables 3.6/3.7 print floor((x + F - 2P)/S) + 1
// here, which is the output-size formula and undercounts strided windows
// (the text conversion garbled it); we derive it from the definition instead:
// (out - 1) * S + (F - 1) * D + 1. Padding only trims the border tiles, so
// the interior tiles that dominate are counted in full.
double inExtent(double out, int64_t f, int64_t s, int64_t d) {
  return (out - 1) * double(s) + double(f - 1) * double(d) + 1;
}

double outElems(double n, double k, double h, double w) {
  return n * k * h * w;
}

struct Dims {
  double n, k, h, w;
};

double compFor(const OpDesc &d, Dims t) {
  double nkhw = outElems(t.n, t.k, t.h, t.w);
  switch (d.kind) {
  case OpKind::Conv: // Table 3.5
    return 2 * t.n * double(d.C) * t.k * t.h * t.w * double(d.FH * d.FW);
  case OpKind::DepthwiseConv: // Table 3.5's conv with one channel per group
    return 2 * nkhw * double(d.FH * d.FW);
  case OpKind::MatMul: // Table 3.5
    return 2 * t.n * double(d.C) * t.k;
  case OpKind::BatchNorm: // Table 3.5
    return 3 * nkhw;
  case OpKind::Pool: // Table 3.5
    return nkhw * double(d.FH * d.FW);
  case OpKind::Elementwise: // Table 3.5 (operations per element given)
    return nkhw * d.compPerElement;
  case OpKind::Reduction: // derived: every row element is visited
    return t.n * double(d.C) * d.compPerElement;
  }
  return 0;
}

Dims blockDims(const TileParams &p) {
  return {double(p.Nb), double(p.Kb), double(p.Hb), double(p.Wb)};
}
Dims threadDims(const TileParams &p) {
  return {double(p.Nt), double(p.Kt), double(p.Ht), double(p.Wt)};
}

} // namespace

double OpDesc::totalComp() const {
  return compFor(*this, {double(N), double(K), double(H), double(W)}) *
         double(batch);
}

double compBlock(const OpDesc &d, const TileParams &p) {
  return compFor(d, blockDims(p));
}

double compThread(const OpDesc &d, const TileParams &p) {
  // Lanes sharing a row each take ceil(C / G) of its C elements (the
  // shuffles are few).
  if (rowsOverLanes(d, p))
    return compFor(d, threadDims(p)) * double(laneShare(d.C, p.Wb)) /
           double(d.C);
  return compFor(d, threadDims(p));
}

bool rowsOverLanes(const OpDesc &d, const TileParams &p) {
  return d.kind == OpKind::Reduction && p.Wb > 1;
}

// Loads per word where a thread reads a tile's unit-stride axis in aligned
// runs of four: one 128-bit load for four words (the emitter's vector
// loads), else one each.
double perWord(bool runsOfFour) { return runsOfFour ? 0.25 : 1.0; }

// Whether C is inner to N in FORMAT_shared: the A (or row) tile's rows
// are outer, its C_input columns contiguous.
static bool cInner(const TileParams &p) {
  const SharedFormat &f = sharedFormats()[p.format];
  return std::find(f.begin(), f.end(), 'N') <
         std::find(f.begin(), f.end(), 'C');
}

bool nLoadByFormat(OpKind kind) {
  return kind == OpKind::MatMul || kind == OpKind::Reduction;
}

double nLoad(const OpDesc &d, const TileParams &p) { // Table 3.6
  double n = double(p.Nt), k = double(p.Kt), h = double(p.Ht), w = double(p.Wt);
  double c = double(d.C), f = double(d.FH * d.FW);
  double inH = inExtent(h, d.FH, d.SH, d.DH),
         inW = inExtent(w, d.FW, d.SW, d.DW);
  switch (d.kind) {
  case OpKind::Conv:
    return n * c * inH * inW + k * c * f;
  case OpKind::DepthwiseConv:
    return n * k * inH * inW + k * f;
  case OpKind::MatMul:
    // Table 3.6's n C + C k, in 128-bit loads where the runs allow: A's
    // C_input columns (or its Nt rows) and B's Kt columns.
    return n * c * perWord(cInner(p) ? p.Cin % 4 == 0 : p.Nt % 4 == 0) +
           c * k * perWord(p.Kt % 4 == 0);
  case OpKind::BatchNorm:
    return outElems(n, k, h, w) + 3 * k;
  case OpKind::Pool:
    return outElems(n, k, h, w) * f;
  case OpKind::Elementwise:
    return d.inputs * outElems(n, k, h, w);
  case OpKind::Reduction: // whole rows (or a thread's Nt rows) in runs
    return n * c * perWord(cInner(p) ? d.C % 4 == 0 : p.Nt % 4 == 0);
  }
  return 1;
}

double numTrans(const OpDesc &d, const TileParams &p, int T) { // Table 3.7
  double n = double(p.Nb), k = double(p.Kb), h = double(p.Hb), w = double(p.Wb);
  double c = double(d.C), f = double(d.FH * d.FW);
  double inH = inExtent(h, d.FH, d.SH, d.DH),
         inW = inExtent(w, d.FW, d.SW, d.DW);
  switch (d.kind) {
  case OpKind::Conv:
    return n * c * inH * ceilDiv(inW, T) + ceilDiv(k * c * f, T);
  case OpKind::DepthwiseConv:
    return n * k * inH * ceilDiv(inW, T) + ceilDiv(k * f, T);
  case OpKind::MatMul:
    return n * ceilDiv(c, T) + c * ceilDiv(k, T);
  case OpKind::BatchNorm:
    return n * k * h * ceilDiv(w, T) + 3 * ceilDiv(k, T);
  case OpKind::Pool:
    return n * k * inH * ceilDiv(inW, T);
  case OpKind::Elementwise:
    return d.inputs * n * k * h * ceilDiv(w, T);
  case OpKind::Reduction:
    return n * ceilDiv(c, T);
  }
  return 1;
}

int64_t sharedBytes(const OpDesc &d, const TileParams &p) {
  if (p.tensorCore())
    return tensorCoreSharedBytes(d, p);
  if (d.channelVector())
    return 0;
  double n = double(p.Nb), k = double(p.Kb), h = double(p.Hb), w = double(p.Wb),
         cin = double(p.Cin), f = double(d.FH * d.FW);
  double inH = inExtent(h, d.FH, d.SH, d.DH),
         inW = inExtent(w, d.FW, d.SW, d.DW);
  double elems = 0;
  switch (d.kind) {
  case OpKind::Conv: // one C_input slice of the input and filter tiles
    elems = n * cin * inH * inW + k * cin * f;
    break;
  case OpKind::DepthwiseConv:
    elems = n * k * inH * inW + k * f;
    break;
  case OpKind::MatMul:
    elems = n * cin + cin * k;
    break;
  case OpKind::BatchNorm:
    elems = outElems(n, k, h, w) + 3 * k;
    break;
  case OpKind::Pool:
    elems = n * k * inH * inW;
    break;
  case OpKind::Elementwise:
    elems = d.inputs * outElems(n, k, h, w);
    break;
  case OpKind::Reduction: // rows over lanes keep them in registers
    elems = rowsOverLanes(d, p) ? 0 : n * double(d.C);
    break;
  }
  return int64_t(elems) * d.elementBytes;
}

namespace {
// Elements a thread fetches into the shared tiles per C_input slice.
int64_t fetchedPerThread(const OpDesc &d, const TileParams &p) {
  int64_t threads = std::max<int64_t>(1, p.threads());
  int64_t tile = sharedBytes(d, p) / std::max(1, d.elementBytes);
  return (tile + threads - 1) / threads;
}
} // namespace

int64_t registersPerThread(const OpDesc &d, const TileParams &p) {
  if (p.tensorCore())
    return tensorCoreRegisters(p);
  int64_t acc = p.Nt * p.Kt * p.Ht * p.Wt;
  if (rowsOverLanes(d, p)) // a lane's share of its rows, in registers
    acc = p.Nt * laneShare(d.C, p.Wb);
  if (d.kind == OpKind::DepthwiseConv) // one step's operands
    return acc + p.Nt * p.Ht * p.Wt + p.Kt + 24;
  if (!isComplex(d.kind))
    return acc + 24; // accumulators, and indices and addresses
  // Fitted against ptxas (sm_90, CUDA 13.0) on 1,930 generated kernels of
  // MobileNetV2's batch-64 convs, where ptxas was not held to its cap:
  // about 2 per accumulator (ptxas loads the operands of steps ahead, more
  // for a wider thread tile), 3 per element the fetch stages (its value
  // and 64-bit address in flight) and 24 for indices; rms error 29.
  // Counting one step's operands instead (the depthwise form above) puts 64
  // accumulators at 104-122 registers where ptxas takes 128-255: twice the
  // residency, and those sets would rank first at batch 64.
  int64_t staged = fetchedPerThread(d, p);
  if (staged > kStagedFetchLimit)
    staged = 0;
  return 2 * acc + 3 * staged + 24;
}

double fetchLatencyRounds(const OpDesc &d, const TileParams &p) {
  int64_t perThread = fetchedPerThread(d, p);
  if (perThread <= kStagedFetchLimit)
    return 1;
  return double((perThread + kDirectFetchInFlight - 1) / kDirectFetchInFlight);
}

int64_t registerCap(int64_t threads, const GpuArch &a) {
  int64_t warps = (threads + a.warpSize - 1) / a.warpSize;
  if (warps <= 0)
    return a.maxRegsPerThread;
  return std::min<int64_t>(a.maxRegsPerThread,
                           a.regsPerSM / (warps * a.warpSize));
}

int64_t numBlocks(const OpDesc &d, const TileParams &p) {
  auto tiles = [](int64_t dim, int64_t tile) {
    return (dim + tile - 1) / tile;
  };
  return d.batch * tiles(d.N, p.Nb) * tiles(d.K, p.Kb) * tiles(d.H, p.Hb) *
         tiles(d.W, p.Wb);
}

int warpConflictDegree(const std::vector<int64_t> &addrs, int banks) {
  // Distinct words per bank; a word read by several lanes is broadcast.
  // Sorting makes equal words adjacent (a warp is at most 64 lanes).
  int64_t sorted[64];
  size_t n = std::min<size_t>(addrs.size(), 64);
  std::copy(addrs.begin(), addrs.begin() + n, sorted);
  std::sort(sorted, sorted + n);
  int perBank[64] = {};
  int worst = 1;
  for (size_t i = 0; i < n; ++i) {
    if (i && sorted[i] == sorted[i - 1])
      continue;
    int bank = int(((sorted[i] % banks) + banks) % banks) % 64;
    worst = std::max(worst, ++perBank[bank]);
  }
  return worst;
}

namespace {

// Thread coordinates of a lane: W fastest, then H, K, N (the code generator
// assigns threads in this order).
struct ThreadPos {
  int64_t n, k, h, w;
};
ThreadPos threadPos(const TileParams &p, int64_t lane) {
  int64_t tw = p.Wb / p.Wt, th = p.Hb / p.Ht, tk = p.Kb / p.Kt;
  ThreadPos t;
  t.w = lane % tw;
  t.h = (lane / tw) % th;
  t.k = (lane / (tw * th)) % tk;
  t.n = lane / (tw * th * tk);
  return t;
}

// Word address of element (n, c, h, w) of a shared tile with the given
// extents, laid out in FORMAT_shared order (outermost first).
int64_t sharedAddress(const SharedFormat &f, const int64_t ext[4],
                      const int64_t idx[4]) {
  auto dimOf = [](char c) {
    switch (c) {
    case 'N':
      return 0;
    case 'C':
      return 1;
    case 'H':
      return 2;
    default:
      return 3;
    }
  };
  int64_t addr = 0;
  for (char c : f) {
    int d = dimOf(c);
    addr = addr * ext[d] + idx[d];
  }
  return addr;
}

} // namespace

namespace {

// What COEF_bc needs that does not depend on FORMAT_shared: each lane's
// index into the data tile, the tile's extents, the weight tile's conflict
// degree and its loads. The search walks the 24 formats innermost, so
// this is computed once per format group (the last one is remembered per
// thread) instead of once per format.
using ConflictKey = std::array<int64_t, 19>;

/// What the format-independent part of COEF_bc is computed from.
ConflictKey conflictKey(const OpDesc &d, const TileParams &p,
                        const GpuArch &a) {
  return {int64_t(d.kind),
          d.C,
          d.FH,
          d.FW,
          d.SH,
          d.SW,
          d.DH,
          d.DW,
          p.Nb,
          p.Kb,
          p.Hb,
          p.Wb,
          p.Nt,
          p.Kt,
          p.Ht,
          p.Wt,
          p.Cin,
          a.sharedBanks,
          a.warpSize};
}

struct ConflictInputs {
  ConflictKey key{}; // what the rest was computed from
  int lanes = 0;
  int64_t ext[4] = {};
  int64_t idx[64][4] = {};
  bool hasWeights = false;
  double degW = 1, nW = 0;
  std::vector<int64_t> data; // each lane's data-tile address (per format)
};

void computeConflictInputs(ConflictInputs &ci, const OpDesc &d,
                           const TileParams &p, const GpuArch &arch) {
  ci.key = conflictKey(d, p, arch);
  ci.lanes =
      int(std::min<int64_t>(std::min<int64_t>(arch.warpSize, p.threads()), 64));
  int64_t inH = int64_t(inExtent(double(p.Hb), d.FH, d.SH, d.DH));
  int64_t inW = int64_t(inExtent(double(p.Wb), d.FW, d.SW, d.DW));
  // The data tile: what each thread reads first in the compute phase.
  int64_t ext[4] = {p.Nb, 1, inH, inW};
  std::vector<int64_t> weights;
  for (int l = 0; l < ci.lanes; ++l) {
    ThreadPos t = threadPos(p, l);
    int64_t *idx = ci.idx[l];
    idx[0] = t.n * p.Nt, idx[1] = 0, idx[2] = t.h * p.Ht * d.SH;
    idx[3] = t.w * p.Wt * d.SW;
    switch (d.kind) {
    case OpKind::Conv:
      ext[1] = p.Cin;
      weights.push_back(t.k * p.Kt * p.Cin * d.FH * d.FW); // K C FH FW
      break;
    case OpKind::MatMul:
      ext[1] = p.Cin;                // A tile: rows N, columns C
      weights.push_back(t.k * p.Kt); // B tile: C x K, row-major
      break;
    case OpKind::DepthwiseConv:
      ext[1] = p.Kb;
      idx[1] = t.k * p.Kt;
      weights.push_back(t.k * p.Kt * d.FH * d.FW);
      break;
    case OpKind::Reduction:
      ext[1] = d.C; // whole rows
      break;
    default:
      ext[1] = p.Kb;
      idx[1] = t.k * p.Kt;
      break;
    }
    if (d.kind == OpKind::Elementwise || d.kind == OpKind::BatchNorm) {
      ext[2] = p.Hb;
      ext[3] = p.Wb;
      idx[2] = t.h * p.Ht;
      idx[3] = t.w * p.Wt;
    }
  }
  std::copy(ext, ext + 4, ci.ext);
  ci.hasWeights = !weights.empty();
  if (!ci.hasWeights)
    return;
  ci.degW = warpConflictDegree(weights, arch.sharedBanks);
  // Weight by how many loads of each kind a thread issues (Table 3.6 terms).
  ci.nW = double(p.Kt) * double(d.FH * d.FW) *
          (d.kind == OpKind::DepthwiseConv ? 1.0 : double(d.C));
}

} // namespace

double coefBc(const OpDesc &d, const TileParams &p, const GpuArch &arch) {
  if (p.tensorCore()) // padded (ldmatrix) or swizzled (wgmma) tiles
    return 1.0;
  thread_local ConflictInputs ci;
  if (ci.key != conflictKey(d, p, arch))
    computeConflictInputs(ci, d, p, arch);
  const SharedFormat &f = sharedFormats()[p.format];
  ci.data.resize(size_t(ci.lanes));
  for (int l = 0; l < ci.lanes; ++l)
    ci.data[size_t(l)] = sharedAddress(f, ci.ext, ci.idx[l]);
  double degData = warpConflictDegree(ci.data, arch.sharedBanks);
  if (!ci.hasWeights)
    return degData;
  // N_load depends on the format (its 128-bit runs), the weights' share not.
  double nData = std::max(0.0, nLoad(d, p) - ci.nW);
  return (degData * nData + ci.degW * ci.nW) / std::max(1.0, nData + ci.nW);
}

double oiTB(const OpDesc &d, double compBlock, double numTrans,
            int transElements) {
  return compBlock / (double(d.elementBytes) * transElements * numTrans);
}

double gmRatio(double oiTB, double ridgePoint) {
  return std::min(1.0, oiTB / ridgePoint);
}

double latencyRatio(double compThread, double nLoad, double latShared,
                    double coefBc, double warpsPerScheduler) {
  return (compThread / nLoad) * std::max(1.0, warpsPerScheduler) /
         (latShared * coefBc);
}

double smRatio(double compThread, double nLoad, double latShared, double coefBc,
               double warpsPerScheduler) {
  return std::min(1.0, latencyRatio(compThread, nLoad, latShared, coefBc,
                                    warpsPerScheduler)) *
         busySchedulers(warpsPerScheduler);
}

double busySchedulers(double warpsPerScheduler) {
  return std::min(1.0, warpsPerScheduler);
}

double sharedThroughputRatio(double compThread, double nLoad, double coefBc,
                             const GpuArch &a) {
  double flopsPerCycle = a.perfPeakFp32 / (a.numSM * a.clockGHz * 1e9);
  return compThread * a.sharedBanks / (nLoad * coefBc * flopsPerCycle);
}

double warpsPerScheduler(const TileParams &p, int64_t resident,
                         const GpuArch &a) {
  int64_t warps = (p.threads() + a.warpSize - 1) / a.warpSize;
  return double(resident * warps) / 4.0;
}

int64_t residentBlocks(int64_t blocks, int64_t perSM, const GpuArch &a) {
  int64_t given = (blocks + a.numSM - 1) / a.numSM;
  return std::max<int64_t>(1, std::min(perSM, given));
}

int64_t wavesPerSM(int64_t blocks, int64_t resident, const GpuArch &a) {
  int64_t perSM = (blocks + a.numSM - 1) / a.numSM;
  int64_t r = std::max<int64_t>(1, resident);
  return (perSM + r - 1) / r;
}

double wbRatio(int64_t blocks, int64_t slots) {
  if (blocks <= 0 || slots <= 0)
    return 0;
  int64_t waves = (blocks + slots - 1) / slots;
  return double(blocks) / double(waves * slots);
}

int64_t blocksPerSM(const OpDesc &d, const TileParams &p, const GpuArch &a) {
  int64_t threads = p.threads();
  int64_t warps = (threads + a.warpSize - 1) / a.warpSize;
  int64_t smem = sharedBytes(d, p);
  int64_t regs = std::min(registersPerThread(d, p), registerCap(threads, a)) *
                 warps * a.warpSize;
  int64_t n = a.maxBlocksPerSM;
  n = std::min(n, a.maxThreadsPerSM / (warps * a.warpSize));
  if (smem > 0)
    n = std::min(n, a.sharedPerSM / smem);
  if (regs > 0)
    n = std::min(n, a.regsPerSM / regs);
  return std::max<int64_t>(n, 0);
}

namespace {
// The share of `blocks` tiles of p that lies inside the output: edge tiles
// overhang it. (Lanes sharing a row are not outputs along W.)
double usefulFraction(const OpDesc &d, const TileParams &p, int64_t blocks) {
  double blockW = rowsOverLanes(d, p) ? 1.0 : double(p.Wb);
  double useful =
      double(d.N) * double(d.K) * double(d.H) * double(d.W) * double(d.batch) /
      (double(blocks) * double(p.Nb) * double(p.Kb) * double(p.Hb) * blockW);
  return std::min(1.0, useful);
}
} // namespace

Bound evaluateBound(const OpDesc &d, const TileParams &p, const GpuArch &a,
                    double gmOverride, const FusedExtra *extra,
                    double knownCoefBc) {
  Bound b;
  b.peak = !p.tensorCore() ? a.perfPeakFp32
           : p.instr == MatrixInstr::MmaSync && a.perfPeakMmaSync > 0
               ? std::min(a.perfPeakMmaSync, a.perfPeakFp16)
               : a.perfPeakFp16;
  if (p.tensorCore() && d.elementBytes == 4) // tf32
    b.peak *= GpuArch::kTf32PerFp16;
  int T = std::max(1, a.transGlobalElements(d.elementBytes));
  b.compBlock = compBlock(d, p);
  b.compThread = compThread(d, p);
  b.nLoad = nLoad(d, p);
  b.numTrans = numTrans(d, p, T);
  b.sharedBytes = sharedBytes(d, p);
  b.registers = registersPerThread(d, p);
  b.numBlocks = numBlocks(d, p);
  b.blocksPerSM = blocksPerSM(d, p, a);
  b.residentBlocks = residentBlocks(b.numBlocks, b.blocksPerSM, a);
  double total = d.totalComp();
  if (extra) {
    b.compBlock += extra->compBlock;
    b.compThread += extra->compThread;
    b.numTrans += extra->numTrans;
    b.nLoad += extra->nLoad;
    b.extraElements = extra->elements;
    total += extra->compTotal;
  }

  b.oiTB = oiTB(d, b.compBlock, b.numTrans, T);
  b.gmRatio = gmOverride >= 0 ? gmOverride : gmRatio(b.oiTB, a.ridgePoint());
  b.gmRaw = gmOverride >= 0 ? INFINITY : b.oiTB / a.ridgePoint();
  // WBRatio (the thesis's formula is garbled): the fraction of issued block
  // slots that do work, N_TB / (ceil(N_TB / slots) * slots) with slots =
  // NUM_SM x resident blocks per SM, so 1.2 waves gives 0.6. Edge tiles that
  // overhang the output idle in the same way, so their useful fraction
  // multiplies in (the thesis assumes tiles divide the output).
  b.wbRatio = wbRatio(b.numBlocks, int64_t(a.numSM) * b.residentBlocks) *
              usefulFraction(d, p, b.numBlocks);
  // COEF_r: the block must fit (the thesis writes strict '<'; a block of
  // exactly MAX_thread threads or MAX_shared bytes is legal on every GPU),
  // and so must a thread's registers, under the cap its block size sets:
  // past it ptxas spills (MobileNetV2's batch-64 1x1 convs: the sets that
  // spilled over 256 bytes ran a median 4-8x slower than the op's fastest).
  b.coefR =
      (p.threads() <= a.maxThreadsPerBlock &&
       b.sharedBytes <= a.maxSharedPerBlock &&
       b.registers <= registerCap(p.threads(), a) + kRegisterEstimateError &&
       b.blocksPerSM > 0)
          ? 1.0
          : 0.0;
  b.totalComp = total;
  // The latency chain: a block's C_input iterations run one after another,
  // each waiting for its global loads and two barriers (at least
  // LAT_iter, measured), and an SM runs its blocks in waves of the resident
  // ones. Only complex ops loop over C in C_input steps.
  if (a.latIterCycles > 0 && isComplex(d.kind) && p.Cin > 0 &&
      !p.tensorCore()) {
    double iterations = std::ceil(double(d.C) / double(p.Cin));
    double waves = double(wavesPerSM(b.numBlocks, b.residentBlocks, a));
    b.chainSteps = waves * iterations;
    b.fetchRounds = fetchLatencyRounds(d, p);
    b.latencyChainSeconds =
        b.chainSteps * a.latIterCycles * b.fetchRounds / (a.clockGHz * 1e9);
  }
  // The streaming bound's ops keep nothing in shared memory: no conflicts.
  double bc = knownCoefBc > 0             ? knownCoefBc
              : streamingRoofline(d.kind) ? 1.0
                                          : coefBc(d, p, a);
  setCoefBc(b, bc, d, p, a);
  return b;
}

double fetchInstructionsPerElement(const OpDesc &d, const TileParams &p) {
  if (d.kind != OpKind::MatMul || p.Cin < 1)
    return kFetchInstructions;
  // A (N x C): its C_input columns are the unit axis of tensor and tile
  // when its rows are outer; B (C x K): its Kb columns always are.
  bool quadA = cInner(p) && p.Cin % 4 == 0 && d.C % 4 == 0 &&
               paddedPitch(p.Cin, p.Cin) % 4 == 0;
  bool quadB =
      p.Kb % 4 == 0 && d.K % 4 == 0 && paddedPitch(p.Kb, p.Kt) % 4 == 0;
  double a = double(p.Nb * p.Cin), b = double(p.Cin * p.Kb);
  return kFetchInstructions * (a / (quadA ? 4 : 1) + b / (quadB ? 4 : 1)) /
         (a + b);
}

bool issueRoofline(OpKind kind) {
  return isComplex(kind) || kind == OpKind::DepthwiseConv;
}

double blockIssueCycles(double instructions, const TileParams &p,
                        const GpuArch &a) {
  double warps = std::ceil(double(p.threads()) / a.warpSize);
  return instructions * std::ceil(warps / 4.0);
}

double closedQueueThroughput(int64_t customers, double demand, double delay) {
  // Exact mean-value analysis (Reiser and Lavenberg, 1980) of one queueing
  // station and one delay: with n customers, a visit to the queue takes
  // demand x (1 + the queue's length at n - 1), and the throughput is n
  // over that plus the delay (Little's law round the loop).
  double queue = 0, throughput = 0;
  for (int64_t n = 1; n <= std::max<int64_t>(1, customers); ++n) {
    double residence = demand * (1 + queue);
    throughput = double(n) / (residence + delay);
    queue = throughput * residence;
  }
  return throughput;
}

double issueRooflinePul(Bound &b, const OpDesc &d, const TileParams &p,
                        const GpuArch &a) {
  double clock = a.clockGHz * 1e9;
  double work = b.totalComp / a.perfPeakFp32; // seconds at peak
  // The SM's instruction stream: per thread, an FFMA per FMA, a shared
  // load per N_load (COEF_bc times over), and kFetchInstructions per
  // access of the block's fetch from global memory into shared tiles.
  double warps = std::ceil(double(p.threads()) / a.warpSize);
  double fetched = std::isfinite(b.gmRaw)
                       ? b.numTrans * a.transGlobalElements(d.elementBytes) /
                             double(p.threads())
                       : 0.0;
  double instructions = b.compThread / 2 + b.nLoad * b.coefBc +
                        fetched * fetchInstructionsPerElement(d, p);
  // A busy SM runs its blocks in waves of the resident ones.
  int64_t resident = std::max<int64_t>(1, b.residentBlocks);
  int64_t waves = wavesPerSM(b.numBlocks, resident, a);
  if (b.chainSteps > 0) {
    // Each iteration waits for its fetch and also issues its share of the
    // work; the resident blocks share the SM's issue slots (4 a cycle), so
    // one block's wait hides behind the others' issue only as far as their
    // waits do not coincide: a closed queue of `resident` blocks.
    double iterations = b.chainSteps / double(waves);
    double perIteration = instructions / iterations;
    double alone = blockIssueCycles(perIteration, p, a);
    double demand = warps * perIteration / 4.0;
    double delay =
        a.latIterCycles * b.fetchRounds + std::max(0.0, alone - demand);
    b.latencyChainSeconds = double(waves * resident) * iterations /
                            closedQueueThroughput(resident, demand, delay) /
                            clock;
  }
  double warpsPerSM = double(waves * resident) * warps;
  // A scheduler issues one instruction a cycle while its warps cover each
  // one's wait: each warp issues at most every 1 + kIssueLatencyCycles.
  double wps = warpsPerScheduler(p, resident, a);
  double issueEff = std::min(1.0, wps / (1.0 + kIssueLatencyCycles));
  double tIssue = warpsPerSM * instructions / 4.0 / issueEff / clock;
  // Shared memory serves one wavefront a cycle; a warp's load costs COEF_bc.
  double tShared = warpsPerSM * b.nLoad * b.coefBc / clock;
  // The SM's ceiling while busy, as a fraction of its share of peak.
  double tSM = std::max(tIssue, tShared);
  b.smRatio = tSM > 0 ? std::min(1.0, work / (b.wbRatio * tSM)) : 1.0;
  // Global memory: BW_global, or less when the grid's blocks sit on too few
  // SMs to draw it (each draws at most bwL2PerSM, measured).
  int64_t active = std::min<int64_t>(a.numSM, b.numBlocks);
  double perSM = a.bwL2PerSM > 0
                     ? std::min(1.0, double(active) * a.bwL2PerSM / a.bwGlobal)
                     : 1.0;
  if (std::isfinite(b.gmRaw))
    b.gmRatio = std::min(1.0, b.gmRaw * perSM);
  return b.coefR * std::min(b.gmRatio, b.smRatio * b.wbRatio);
}

bool streamingRoofline(OpKind kind) {
  return kind == OpKind::Elementwise || kind == OpKind::BatchNorm;
}

double streamWarpInstructions(const Bound &b, const TileParams &p) {
  // nLoad counts a thread's full-size reads (Table 3.6 and what fusion
  // adds); batch norm's 3 Kt parameters are loads too. One store an element.
  double elements = double(p.Nt * p.Kt * p.Ht * p.Wt);
  return kStreamWarpInstructions + kStreamReadInstructions * b.nLoad +
         b.compThread + kStreamStoreInstructions * elements;
}

int vectorWidth(const OpDesc &d, const TileParams &p) {
  // As the emitter's vector runs: elements consecutive along W whose
  // first every thread (and block) reaches at a multiple of the width,
  // 16 or 8 bytes (4 for 16-bit elements) an access.
  if (d.elementBytes != 4 && d.elementBytes != 2)
    return 1;
  for (int w : {8, 4, 2})
    if ((w < 8 || d.elementBytes == 2) && p.Wt % w == 0 && d.W % w == 0)
      return w;
  return 1;
}

WarpTraffic warpTraffic(const OpDesc &d, const TileParams &p, const GpuArch &a,
                        int width) {
  // Memoised: the search asks for the same first warp under many block
  // shapes (a quarter of DenseNet-121's search time went here).
  int64_t tw = p.Wb / p.Wt, th = p.Hb / p.Ht, tk = p.Kb / p.Kt;
  int64_t lanes = std::min<int64_t>(a.warpSize, p.threads());
  std::array<int64_t, 14> key = {d.N,   d.K,  d.H, d.W, p.Nt, p.Kt,
                                 p.Ht,  p.Wt, tw,  th,  tk,   d.elementBytes,
                                 width, lanes};
  thread_local std::map<std::array<int64_t, 14>, WarpTraffic> memo;
  if (auto it = memo.find(key); it != memo.end())
    return it->second;
  if (memo.size() > 100000)
    memo.clear();
  const int64_t ext[4] = {d.N, d.K, d.H, d.W};
  const int64_t t[4] = {p.Nt, p.Kt, p.Ht, p.Wt};
  constexpr int64_t kSectorBytes = 32, kLineSectors = 4;
  // The lanes' first elements (element (0, 0, 0, 0) of their tiles).
  std::vector<std::array<int64_t, 4>> first;
  for (int64_t lane = 0; lane < lanes; ++lane) {
    ThreadPos q = threadPos(p, lane);
    first.push_back({q.n * t[0], q.k * t[1], q.h * t[2], q.w * t[3]});
  }
  // An L2 transaction per line of `sectors` (sorted), at least
  // kL2MinSectors each.
  auto transactions = [](const std::vector<int64_t> &sectors) {
    double sum = 0;
    for (size_t s = 0; s < sectors.size();) {
      size_t e = s;
      while (e < sectors.size() &&
             sectors[e] / kLineSectors == sectors[s] / kLineSectors)
        ++e;
      sum += std::max(double(e - s), kL2MinSectors);
      s = e;
    }
    return sum;
  };
  WarpTraffic out;
  std::vector<int64_t> fetched, one, fresh;
  for (int64_t i = 0; i < t[0]; ++i)
    for (int64_t j = 0; j < t[1]; ++j)
      for (int64_t k = 0; k < t[2]; ++k)
        for (int64_t l = 0; l < t[3]; l += width) {
          // One request: every lane's vector (i, j, k, l..l+width) of its
          // tile inside the tensor. Aligned vectors of at most 16 bytes lie
          // in one sector.
          one.clear();
          for (const auto &q : first) {
            int64_t x[4] = {q[0] + i, q[1] + j, q[2] + k, q[3] + l};
            if (x[0] >= ext[0] || x[1] >= ext[1] || x[2] >= ext[2] ||
                x[3] >= ext[3])
              continue;
            int64_t index =
                ((x[0] * ext[1] + x[1]) * ext[2] + x[2]) * ext[3] + x[3];
            one.push_back(index * d.elementBytes / kSectorBytes);
          }
          std::sort(one.begin(), one.end());
          one.erase(std::unique(one.begin(), one.end()), one.end());
          out.l1 += double(one.size());
          // A store sends all its sectors to L2; a load those the warp has
          // not fetched yet (its earlier requests' hit L1).
          out.l2Store += transactions(one);
          fresh.clear();
          std::set_difference(one.begin(), one.end(), fetched.begin(),
                              fetched.end(), std::back_inserter(fresh));
          out.l2Load += transactions(fresh);
          size_t mid = fetched.size();
          fetched.insert(fetched.end(), fresh.begin(), fresh.end());
          std::inplace_merge(fetched.begin(), fetched.begin() + mid,
                             fetched.end());
        }
  memo.emplace(key, out);
  return out;
}

double streamingPul(Bound &b, const OpDesc &d, const TileParams &p,
                    const GpuArch &a) {
  double clock = a.clockGHz * 1e9;
  double elements = double(p.Nt * p.Kt * p.Ht * p.Wt);
  double warpsPerBlock = std::ceil(double(p.threads()) / a.warpSize);
  double warps = double(b.numBlocks) * warpsPerBlock;
  double total = double(d.N * d.K * d.H * d.W) * double(d.batch);
  // Reads per output element (nLoad over the thread's elements) plus the
  // store, each moved once.
  double reads = b.nLoad / elements;
  double tDram = total * (reads + 1) * d.elementBytes / a.bwGlobal;
  // A warp's requests as the emitter makes them: vectors along W where it
  // can (a concat's picks too, through the chosen part's pointer).
  WarpTraffic traffic = warpTraffic(d, p, a, vectorWidth(d, p));
  double l2 = reads * traffic.l2Load + traffic.l2Store;
  double l1 = (reads + 1) * traffic.l1;
  // Edge blocks' warps touch only the sectors inside the tensor.
  double useful = usefulFraction(d, p, b.numBlocks);
  double tL2 = a.bwL2 > 0 ? warps * useful * l2 * 32 / a.bwL2 : 0;
  double tL1 = warps * useful * l1 / (kL1SectorsPerCycle * a.numSM) / clock;
  double tIssue =
      warps * streamWarpInstructions(b, p) / (4.0 * a.numSM) / clock;
  double tDispatch =
      std::ceil(double(b.numBlocks) / a.numSM) * a.blockDispatchCycles / clock;
  double slots = wbRatio(b.numBlocks, int64_t(a.numSM) * b.residentBlocks);
  double seconds =
      slots > 0
          ? std::max(tDispatch, tIssue + std::max({tDram, tL2, tL1})) / slots
          : INFINITY;
  double ratio = b.totalComp / (seconds * a.perfPeakFp32);
  // GMRatio with the store counted (Table 3.7 leaves it out); SMRatio the
  // rest, so that GMRatio x SMRatio x WBRatio is the ratio.
  b.gmRaw = b.totalComp / (tDram * a.perfPeakFp32);
  b.gmRatio = std::min(1.0, b.gmRaw);
  b.smRatio = std::min(1.0, ratio / (b.gmRatio * b.wbRatio));
  b.headroom = b.gmRaw;
  return b.coefR * ratio;
}

double channelVectorPul(Bound &b, const OpDesc &d, const TileParams &p,
                        const GpuArch &a) {
  // Every input and output element crosses DRAM once (neighbouring windows
  // share theirs through L1 and L2), in the blocks' waves: a bound the
  // kernel cannot beat, however its loads are issued.
  (void)p;
  double bytes = double(d.N) * double(d.K) *
                 (double(d.IH * d.IW) + double(d.H * d.W)) * d.elementBytes;
  if (d.kind == OpKind::DepthwiseConv)
    bytes += double(d.K * d.FH * d.FW) * d.elementBytes;
  double clock = a.clockGHz * 1e9;
  double tDram = bytes / a.bwGlobal;
  double tDispatch =
      std::ceil(double(b.numBlocks) / a.numSM) * a.blockDispatchCycles / clock;
  double slots = wbRatio(b.numBlocks, int64_t(a.numSM) * b.residentBlocks);
  double seconds = slots > 0 ? std::max(tDram, tDispatch) / slots : INFINITY;
  b.gmRaw = b.totalComp / (tDram * a.perfPeakFp32);
  b.gmRatio = std::min(1.0, b.gmRaw);
  b.smRatio = 1;
  b.headroom = b.gmRaw;
  return b.totalComp / (seconds * a.perfPeakFp32);
}

void setCoefBc(Bound &b, double coefBcValue, const OpDesc &d,
               const TileParams &p, const GpuArch &a) {
  b.coefBc = coefBcValue;
  // Rows over lanes read global memory straight into registers: no
  // shared-memory loads to wait for.
  bool lanes = rowsOverLanes(d, p);
  double wps = warpsPerScheduler(p, b.residentBlocks, a);
  double perScheduler =
      lanes ? INFINITY
            : latencyRatio(b.compThread, b.nLoad, a.latShared, b.coefBc, wps);
  // An SM's schedulers each issue only their own warps: with fewer warps
  // than schedulers on the SM, the others idle, whatever the ratio.
  double latency = perScheduler * busySchedulers(wps);
  b.smRatio = std::min(1.0, perScheduler) * busySchedulers(wps);
  // And however many warps hide the latency, the SM's shared memory serves
  // a bounded number of loads a cycle: a roof of its own over GMRatio x
  // SMRatio (a roofline takes the least of its ceilings; multiplied in, a
  // GEMV's memory bound would count twice). Complex ops only: the others
  // are memory-bound (MobileNetV2's depthwise convs ranked worse with it).
  double throughput =
      !lanes && isComplex(d.kind)
          ? sharedThroughputRatio(b.compThread, b.nLoad, b.coefBc, a)
          : INFINITY;
  if (b.gmRatio > 0 && b.gmRatio * b.smRatio > throughput)
    b.smRatio = throughput / b.gmRatio;
  b.headroom = std::min({b.gmRaw, latency, throughput});
  double pul = b.gmRatio * b.smRatio * b.wbRatio * b.coefR;
  if (b.wbRatio > 0 && b.totalComp > 0) {
    if (p.tensorCore())
      pul = tensorCorePul(b, d, p, a);
    else if (d.channelVector())
      pul = channelVectorPul(b, d, p, a);
    else if (issueRoofline(d.kind))
      pul = issueRooflinePul(b, d, p, a);
    else if (streamingRoofline(d.kind))
      pul = streamingPul(b, d, p, a);
  }
  // LATRatio caps the performance at the total work over the latency chain:
  // the time bound becomes max(work at PUL, chain). It falls as COEF_bc
  // rises (PUL does), so COEF_bc = 1 still bounds a format group.
  // The cap is computed apart from PUL, so every capped set gets exactly
  // the same value (pul x LATRatio would differ in the last bit, and the
  // search's COEF_bc = 1 bound must not fall below a format's).
  b.latRatio = 1;
  b.pul = pul;
  if (pul > 0 && b.latencyChainSeconds > 0) {
    double cap = b.totalComp / (b.latencyChainSeconds * b.peak);
    if (cap < pul) {
      b.pul = cap;
      b.latRatio = cap / pul;
    }
  }
  b.timeLowerBound = b.pul > 0 ? b.totalComp / (b.pul * b.peak) : INFINITY;
  // Never NaN; infinite only for a set that cannot run (PUL 0: no block
  // fits), which the search never keeps over one that can.
  assert(b.pul >= 0 && b.pul <= 1 &&
         std::isfinite(b.timeLowerBound) == (b.pul > 0));
}

} // namespace cuts

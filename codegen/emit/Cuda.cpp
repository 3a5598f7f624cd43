//===- Cuda.cpp - CUDA / HIP source from a kernel's DFGs ------------------===//
#include "codegen/emit/Cuda.h"

#include "codegen/emit/TensorCore.h"
#include "codegen/ops/SharedFusion.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace cuts::codegen {

const char *typeName(dfg::Type t) {
  switch (t) {
  case dfg::Type::I64:
    return "long long";
  case dfg::Type::I32:
    return "int";
  case dfg::Type::Bool:
    return "bool";
  case dfg::Type::F16:
  case dfg::Type::BF16:
    return "unsigned short"; // the bit pattern (TensorCore.h)
  default:
    return "float";
  }
}

std::string paramType(const TensorArg &t) {
  return std::string(t.output ? "" : "const ") + typeName(t.type) +
         " *__restrict__";
}

namespace {
bool splitsK(const Kernel &k);
} // namespace

std::vector<std::pair<std::string, std::string>> kernelParams(const Kernel &k) {
  std::vector<std::pair<std::string, std::string>> ps;
  for (size_t i = 0; i < k.tensors.size(); ++i) {
    // A waited tensor: no ld.global.nc, the producer writes it meanwhile.
    ps.emplace_back(k.tensors[i].name,
                    k.waitsFor(int(i)) ? std::string("const ") +
                                             typeName(k.tensors[i].type) + " *"
                                       : paramType(k.tensors[i]));
  }
  if (splitsK(k)) {
    ps.emplace_back("cuts_partials", "float *__restrict__");
    ps.emplace_back("cuts_arrived", "unsigned *__restrict__");
  }
  if (k.post) {
    ps.emplace_back("cuts_posted", "unsigned *__restrict__");
    ps.emplace_back("cuts_started", "unsigned *__restrict__");
    if (k.post->order)
      ps.emplace_back("cuts_next", "unsigned *__restrict__");
  }
  for (size_t i = 0; i < k.waits.size(); ++i)
    ps.emplace_back("cuts_ready" + std::to_string(i), "const unsigned *");
  if (!k.waits.empty())
    ps.emplace_back("cuts_epoch", "const unsigned *__restrict__");
  return ps;
}

namespace {

using dfg::Op;

// Whether k's blocks loop over its tiles (Kernel::persistentBlocks: a
// multistage tensor-core loop's variant; ignored elsewhere).
bool persistentLoop(const Kernel &k) {
  return k.persistentBlocks > 0 && k.mma && !k.mma->warpSpecialized;
}

// The C_input slices of k's reduction (kTiles in its source, a part's
// with split-K).
int64_t gemmSlices(const Kernel &k);

// Whether k's blocks each sum a part of K (Kernel::splitK, where it can).
bool splitsK(const Kernel &k) { return k.splitK > 1 && canSplitK(k, k.splitK); }

// Whether k copies its weights' first slices before waiting for other
// kernels (Kernel::weightB; a multistage tensor-core loop).
bool prefetchesWeights(const Kernel &k) {
  return k.mma && k.weightB && !k.mma->warpSpecialized && !persistentLoop(k);
}

// The tiles of k's output its blocks cover (a persistent block loops over
// several).
int64_t tileCount(const Kernel &k) {
  const std::array<int64_t, 4> dims = gridExtents(k.desc);
  const int64_t ext[4] = {k.params.Nb, k.params.Kb, k.params.Hb, k.params.Wb};
  int64_t tiles = 1;
  for (int d = 0; d < 4; ++d)
    tiles *= (dims[d] + ext[d] - 1) / ext[d];
  return tiles;
}

const char *kDimLetter = "nkhw";

// Elements a shared buffer takes: the last element's offset plus one
// (padding included), rounded up to 16 bytes so every tile (and stage)
// starts where a 128-bit load may.
int64_t bufferFloats(const dfg::Buffer &b) {
  int64_t size = 1;
  for (size_t d = 0; d < b.extents.size(); ++d)
    size += (b.extents[d] - 1) * b.strides[d];
  return (size + 3) / 4 * 4;
}

// Elements one fetch copies per iteration: its tile.
int64_t fetchElements(const Fetch &f) {
  int64_t total = 1;
  for (const FetchDim &d : f.dims)
    total *= d.extent;
  return total;
}

int64_t sharedFloats(const Kernel &k) {
  int64_t n = 0;
  for (const dfg::Buffer &b : k.body.allBuffers())
    if (b.space == dfg::Space::Shared)
      n += bufferFloats(b);
  return n;
}

// The shared tiles of a tensor-core kernel, in elements: A's Nb x Cin and
// B's Cin x Kb (Kb x Cin when B is transposed). For mma.sync rows are
// padded by 16 bytes so that ldmatrix's eight rows fall in distinct banks;
// for wgmma they are K-major and swizzled (mmaSwizzle), each stage a
// multiple of 1024 bytes so that every stage starts a swizzle pattern.
struct MmaTiles {
  int64_t lda = 0, ldb = 0, aElems = 0, bElems = 0, bytes = 0;
  int64_t patchBytes = 0; // A's input patch instead of its stages
  int64_t stageBytes = 0; // the stages' tiles; the mbarriers follow
};
// The stages k's loop fills: a persistent loop's slices run on into the
// next tile, so all of them.
int64_t stagesFilled(const Kernel &k) {
  return persistentLoop(k) ? k.params.stages : filledStages(k.desc, k.params);
}

// The reduction's length: C, or a planar input's (channel, r, s).
int64_t gemmK(const OpDesc &d) { return d.planarC ? d.planarK() : d.C; }

int64_t gemmSlices(const Kernel &k) {
  return (gemmK(k.desc) + k.params.Cin - 1) / k.params.Cin;
}

int64_t sliceCount(const Kernel &k) {
  return gemmSlices(k) / (splitsK(k) ? k.splitK : 1);
}

// Whether k keeps B in shared memory (Kernel::residentB): its persistent
// blocks' tiles all read the same columns of one matrix.
bool residentB(const Kernel &k) {
  const std::array<int64_t, 4> dims = gridExtents(k.desc);
  return k.residentB && persistentLoop(k) && dims[1] <= k.params.Kb &&
         dims[2] <= k.params.Hb && dims[3] <= k.params.Wb;
}

// Whether k's persistent blocks can loop over patched tiles: on wgmma
// (emitPersistentPatchPipeline), every tile reading the same B.
bool persistentPatch(const Kernel &k) {
  const std::array<int64_t, 4> dims = gridExtents(k.desc);
  return persistentLoop(k) && k.mma->wgmma() && dims[1] <= k.params.Kb &&
         dims[2] <= k.params.Hb && dims[3] <= k.params.Wb;
}

// A pooled implicit GEMM's input patch (Kernel::patchA): the `rows` x
// `cols` input pixels under its box's windows, `pitch` elements apart (the
// channels, 16 bytes more where ldmatrix's eight rows, SW pixels apart,
// would share banks), a 16-bit stem's pixel pairs (OpDesc::pairedPixels)
// unpadded.
// A planar input's patch (OpDesc::planarC): `planes` planes of `rows` x
// `pitch` pixels of the input's type, copied in runs of `run` pixels (16
// bytes where they tile the input's rows, else pixel pairs).
struct Patch {
  int64_t rows = 0, cols = 0, pitch = 0, bytes = 0;
  int64_t chunks = 0; // 16-byte copies a patch row (a planar patch's runs)
  bool paired = false;
  int64_t planes = 0, elementBytes = 2, run = 0;
};

// The shared-memory wavefronts of a planar patch's fragment loads for one
// k-step (emitPlanarFragments) at row pitch `pitch` (elements of `eb`
// bytes): per load, lanes (g, tq) read pixel pair tq of their rows' window
// origins; 8-byte loads go a half-warp at a time.
int64_t planarWavefronts(const Kernel &k, int64_t pitch, int64_t eb) {
  const OpDesc &d = k.desc;
  const PoolBox &b = k.pooled->box;
  const MmaLoop &m = *k.mma;
  int64_t total = 0;
  for (int64_t warp = 0; warp < 4 * m.warpsM; ++warp)
    for (int64_t i = 0; i < m.mi; ++i)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t half = 0; half < (eb == 4 ? 2 : 1); ++half) {
          std::map<int64_t, std::set<int64_t>> banks; // bank -> words
          for (int64_t lane = 16 * half; lane < (eb == 4 ? 16 * half + 16 : 32);
               ++lane) {
            const int64_t r = warp / 4 * 64 * m.mi + i * 64 + warp % 4 * 16 +
                              lane / 4 + 8 * h;
            const int64_t pix =
                r < b.boxH * b.boxW
                    ? r / b.boxW * d.SH * pitch + r % b.boxW * d.SW
                    : 0;
            const int64_t byte = (pix + lane % 4 * 2) * eb;
            for (int64_t w = byte / 4; w < (byte + 2 * eb) / 4; ++w)
              banks[w % 32].insert(w);
          }
          size_t most = 0;
          for (const auto &bw : banks)
            most = std::max(most, bw.second.size());
          total += int64_t(most);
        }
  return total;
}

std::optional<Patch> planarPatch(const Kernel &k, Patch q) {
  const OpDesc &d = k.desc;
  if (!k.mma->wgmma() || !d.planarWindow())
    return std::nullopt;
  q.planes = d.planarC;
  q.elementBytes = elementBytes(k.tensors[0].type);
  q.run = d.IW % (16 / q.elementBytes) ? 2 : 16 / q.elementBytes;
  q.chunks = (q.cols + q.run - 2 + q.run - 1) / q.run;
  // The pitch (whole runs) whose fragment loads wait least on banks.
  int64_t best = -1;
  for (int64_t chunks = q.chunks; chunks < q.chunks + 32 / q.run; ++chunks) {
    const int64_t cost = planarWavefronts(k, chunks * q.run, q.elementBytes);
    if (best < 0 || cost < best)
      best = cost, q.pitch = chunks * q.run;
  }
  q.bytes = (q.planes * q.rows * q.pitch * q.elementBytes + 1023) / 1024 * 1024;
  return q;
}

std::optional<Patch> patchOf(const Kernel &k) {
  const OpDesc &d = k.desc;
  const TileParams &p = k.params;
  if (!k.mma || k.mma->warpSpecialized || !k.pooled || d.IC2 || k.chain ||
      k.producer || (persistentLoop(k) && !persistentPatch(k)) ||
      elementBytes(k.mma->operand) != 2 ||
      (!d.planarC && (d.C % 16 || p.Cin % 8)))
    return std::nullopt;
  Patch q;
  q.paired = d.pairedPixels();
  if (d.IC % 8 && !q.paired)
    return std::nullopt;
  const PoolBox &b = k.pooled->box;
  q.rows = (b.boxH - 1) * d.SH + (d.FH - 1) * d.DH + 1;
  q.cols = (b.boxW - 1) * d.SW + (d.FW - 1) * d.DW + 1;
  if (d.planarC)
    return planarPatch(k, q);
  q.cols += q.paired ? q.cols % 2 : 0;
  q.pitch = q.paired || (d.IC * 2 * d.SW / 16) % 2 ? d.IC : d.IC + 8;
  q.chunks = q.paired ? q.cols / 2 : q.cols * d.IC / 8;
  // wgmma's B stages after it start swizzle patterns (1024 bytes).
  q.bytes = (q.rows * q.cols * q.pitch * 2 + 1023) / 1024 * 1024;
  return q;
}

// Whether k reads A from its input patch.
bool readsPatch(const Kernel &k) { return k.patchA && patchOf(k); }

MmaTiles mmaTiles(const Kernel &k) {
  const TileParams &p = k.params;
  const bool wgmma = k.mma->instr == MatrixInstr::Wgmma;
  int64_t eb = elementBytes(k.mma->operand), pad = wgmma ? 0 : 16 / eb;
  bool tb = k.desc.transB;
  MmaTiles t;
  t.lda = p.Cin + pad;
  t.aElems = p.Nb * t.lda;
  t.ldb = (tb ? p.Cin : p.Kb) + pad;
  t.bElems = (tb ? p.Kb : p.Cin) * t.ldb;
  if (wgmma) {
    const int64_t unit = 1024 / eb;
    t.aElems = (t.aElems + unit - 1) / unit * unit;
    t.bElems = (t.bElems + unit - 1) / unit * unit;
  }
  if (readsPatch(k)) // a persistent block's next tile's patch beside
    t.aElems = 0,
    t.patchBytes = patchOf(k)->bytes * (persistentLoop(k) ? 2 : 1);
  // Only the stages the loop fills (the bound counts the same); a resident
  // B, or a wgmma patch kernel's (emitPatchPipeline), a stage a slice.
  const int64_t slices = sliceCount(k);
  const bool wholeB = residentB(k) || (wgmma && readsPatch(k));
  t.stageBytes = t.bytes =
      t.patchBytes + (stagesFilled(k) * t.aElems +
                      (wholeB ? slices : stagesFilled(k)) * t.bElems) *
                         eb;
  if (k.mma->warpSpecialized) // each stage's full and empty mbarriers
    t.bytes += k.mma->stages * 16;
  return t;
}

int64_t copyElements(const Kernel &k) {
  return mmaCopyElements(k.desc, k.mma->operand);
}

// wgmma's swizzle of a K-major tile whose rows are C_input elements: 16 x
// 2^swizzle bytes a row, 16-byte chunk c of row r at c ^ (r % 8 >> (3 -
// swizzle)), as the hardware reads it (TensorCore.h).
int64_t mmaSwizzle(const Kernel &k) {
  const int64_t rowBytes = k.params.Cin * elementBytes(k.mma->operand);
  return rowBytes == 32 ? 1 : rowBytes == 64 ? 2 : 3;
}

// A tensor-core exit whose stores go through shared memory: each lane's
// fragment (a column pair of 8 rows a warp: 16-byte runs of a row) into a
// row-major tile of the block's output, then 16-byte coalesced stores of
// its rows. Where the output is one global tensor, its K axis contiguous
// in whole 16-byte chunks, not read back, and the tile fits in the memory
// the pipeline's stages leave free after the loop.
struct StagedStore {
  int buffer = -1;              // the output, in Kernel::exit
  int nAxis = -1, kAxis = -1;   // its axes along the block's rows and columns
  int64_t pitch = 0, chunk = 0; // the tile's row pitch, elements a copy
  // An operand laid out as the output (a residual), loaded into the tile
  // first, 16 bytes a thread: each lane then reads and overwrites its own
  // elements there.
  int operand = -1;
};

std::optional<StagedStore> stagedStore(const Kernel &k) {
  StagedStore s;
  for (int id : k.exit.nodesWith(Op::Store)) {
    const int b = k.exit.node(id).buffer;
    if (s.buffer >= 0 && b != s.buffer)
      return std::nullopt;
    s.buffer = b;
  }
  if (s.buffer < 0)
    return std::nullopt;
  const dfg::Buffer &b = k.exit.buffer(s.buffer);
  for (int id : k.exit.nodesWith(Op::Load)) {
    const int o = k.exit.node(id).buffer;
    const dfg::Buffer &x = k.exit.buffer(o);
    if (x.name == b.name)
      return std::nullopt;
    if (s.operand < 0 && x.space == b.space && x.type == b.type &&
        x.extents == b.extents && x.strides == b.strides &&
        k.exit.node(id).indexFrom.empty() && x.map == b.map)
      s.operand = o;
  }
  const int64_t eb = elementBytes(b.type);
  s.chunk = 16 / eb;
  if (b.space != dfg::Space::Global ||
      (b.type != dfg::Type::F32 && b.type != dfg::Type::F16 &&
       b.type != dfg::Type::BF16))
    return std::nullopt;
  for (size_t d = 0; d < b.map.size(); ++d) {
    const dfg::DimMap &m = b.map[d];
    const bool plain = m.scale == 1 && !m.digit() && !m.loops();
    if (m.outDim == dfg::DimN && plain && s.nAxis < 0)
      s.nAxis = int(d);
    else if (m.outDim == dfg::DimK && plain && s.kAxis < 0 &&
             b.strides[d] == 1 && b.extents[d] % s.chunk == 0)
      s.kAxis = int(d);
    else if (m.outDim == dfg::DimN || m.outDim == dfg::DimK || m.loops() ||
             b.strides[d] % s.chunk)
      return std::nullopt;
  }
  const TileParams &p = k.params;
  s.pitch = p.Kb + s.chunk; // 16 bytes of padding: 8 rows, distinct banks
  // A persistent loop's tile lies beside the stages, which stay in use; so
  // does a chained product's where the stages are too small for it.
  // A patch kernel's shared memory grows to hold its tile (mmaSharedBytes).
  if (s.nAxis < 0 || s.kAxis < 0 || p.Kb % s.chunk ||
      (!persistentLoop(k) && !k.chain && !readsPatch(k) &&
       p.Nb * s.pitch * eb > mmaTiles(k).stageBytes))
    return std::nullopt;
  return s;
}

// Whether k's copying warpgroup returns once its copies are issued: a
// warp-specialised loop whose consumers store their fragments themselves
// (no staged tile) and sum no split-K parts.
bool copiersReturn(const Kernel &k) {
  return k.mma && k.mma->warpSpecialized && !stagedStore(k) && !splitsK(k);
}

// Whether k stages an operand a multistage loop could copy in early.
bool prefetchable(const Kernel &k, const std::optional<StagedStore> &s) {
  return k.mma && !k.mma->warpSpecialized && s && s->operand >= 0;
}

// Whether k's staged operand (a residual) is copied in at the start,
// beside the stages, rather than after the loop into the stages' memory:
// the prefetching variant of a multistage tensor-core loop (its copies
// then overlap the main loop, for the price of the tile's shared memory).
bool earlyOperand(const Kernel &k, const std::optional<StagedStore> &s) {
  return k.prefetch && !persistentLoop(k) && prefetchable(k, s);
}

// Whether k's persistent loop copies its staged operand (a residual) with
// each tile's first slice, into the tile beside the stages.
bool persistentOperand(const Kernel &k, const std::optional<StagedStore> &s) {
  return persistentLoop(k) && prefetchable(k, s);
}

// The bytes of k's staged tile s.
int64_t stagedTileBytes(const Kernel &k, const StagedStore &s) {
  return k.params.Nb * s.pitch * elementBytes(k.exit.buffer(s.buffer).type);
}

// Whether k's staged tile lies beside the stages rather than in them.
bool tileBeside(const Kernel &k, const std::optional<StagedStore> &s) {
  return s && (earlyOperand(k, s) || persistentLoop(k) ||
               (k.chain && stagedTileBytes(k, *s) > mmaTiles(k).stageBytes));
}

// The shared memory of k's tensor-core loop and staged tiles, a chained
// product's B excepted.
int64_t mmaSharedBytes(const Kernel &k) {
  int64_t bytes = mmaTiles(k).bytes;
  if (std::optional<StagedStore> s = stagedStore(k); tileBeside(k, s))
    bytes += stagedTileBytes(k, *s);
  else if (s && readsPatch(k))
    bytes = std::max(bytes, stagedTileBytes(k, *s));
  return bytes;
}

// A chained product's staged output tile (0 where it has none).
int64_t chainTileBytes(const Kernel &k) {
  const std::optional<StagedStore> s = stagedStore(*k.chain);
  return s ? stagedTileBytes(*k.chain, *s) : 0;
}

// A chained product's B: N x K, every column and all of K.
int64_t chainBBytes(const Kernel &k) {
  const Kernel &c = *k.chain;
  const int64_t slices = c.mma->wgmma() ? sliceCount(c) : 1;
  return slices * mmaTiles(c).bElems * elementBytes(c.mma->operand);
}

// Where a chained product's B lies (Kernel::chain): past the producer's
// tiles and past the chain's staged tile, which reuses the stages' memory
// from offset 0 (a persistent chain's lies past B: the stages hold the next
// tile's slices meanwhile).
int64_t chainOffset(const Kernel &k) {
  const int64_t bytes = std::max(mmaSharedBytes(k), chainTileBytes(k));
  const int64_t align = k.chain->mma->wgmma() ? 1024 : 128; // a swizzle pattern
  return (bytes + align - 1) / align * align;
}

// One operand's shared tile as its copies see it: rows x cols elements of
// a row-major global tensor (row stride `stride`) from (rowBase, colBase),
// K along the rows or along the columns, rows `ld` apart in shared memory,
// their chunks swizzled for wgmma (`swizzle` > 0). A bound is checked only
// where the tiles overhang the tensor (`ragged`).
struct MmaOperand {
  const char *x = "";         // "a" or "b": the names' prefix
  std::string global, shared; // Ag, sA
  int64_t rows = 0, cols = 0, ld = 0, stride = 0, stageBytes = 0;
  std::string rowBase = "0", colBase = "0"; // the tile's first row, column
  std::string batchOffset; // element offset of product base_h's matrix
  bool kAlongRows = false;
  int64_t swizzle = 0;
  int64_t rowLimit = 0, colLimit = 0;
  bool rowRagged = false, colRagged = false;
  const OpDesc *im2col = nullptr; // A of an implicit GEMM: its conv
};

std::vector<MmaOperand> mmaOperands(const Kernel &k) {
  const TileParams &p = k.params;
  const MmaTiles t = mmaTiles(k);
  const int64_t M = k.desc.N, K = k.desc.C, N = k.desc.K;
  const int64_t eb = elementBytes(k.mma->operand);
  const int64_t swizzle =
      k.mma->instr == MatrixInstr::Wgmma ? mmaSwizzle(k) : 0;
  MmaOperand a;
  a.x = "a", a.global = "Ag", a.shared = "sA";
  a.rows = p.Nb, a.cols = p.Cin, a.ld = t.lda, a.stride = K;
  a.stageBytes = t.aElems * eb, a.rowBase = "base_n", a.swizzle = swizzle;
  a.rowLimit = M, a.colLimit = K;
  a.rowRagged = M % p.Nb != 0, a.colRagged = K % p.Cin != 0;
  a.batchOffset = "base_h * " + std::to_string(M * K) + "LL";
  if (k.desc.im2col)
    a.im2col = &k.desc;
  MmaOperand b;
  b.x = "b", b.global = "Bg", b.shared = "sB", b.ld = t.ldb;
  b.batchOffset = "base_h * " + std::to_string(K * N) + "LL";
  b.stageBytes = t.bElems * eb, b.swizzle = swizzle;
  if (k.desc.transB) { // B is N x K: the tile's rows are along N
    b.rows = p.Kb, b.cols = p.Cin, b.stride = K, b.rowBase = "base_k";
    b.rowLimit = N, b.colLimit = K;
    b.rowRagged = N % p.Kb != 0, b.colRagged = K % p.Cin != 0;
  } else {
    b.rows = p.Cin, b.cols = p.Kb, b.stride = N, b.colBase = "base_k";
    b.kAlongRows = true, b.rowLimit = K, b.colLimit = N;
    b.rowRagged = K % p.Cin != 0, b.colRagged = N % p.Kb != 0;
  }
  // Operands read in place: their own row stride and batch offsets.
  MmaOperand *ops[2] = {&a, &b};
  for (int i = 0; i < 2; ++i)
    if (const auto &v = k.mmaViews[i]) {
      ops[i]->stride = v->rowStride;
      std::string off, idx = "base_h";
      for (size_t j = v->batchExtents.size(); j-- > 0;) {
        off += (off.empty() ? "" : " + ") + std::string("(") + idx + " % " +
               std::to_string(v->batchExtents[j]) + ") * " +
               std::to_string(v->batchStrides[j]) + "LL";
        idx = "(" + idx + " / " + std::to_string(v->batchExtents[j]) + ")";
      }
      if (v->offset)
        off += (off.empty() ? "" : " + ") + std::to_string(v->offset) + "LL";
      ops[i]->batchOffset = off.empty() ? "0" : off;
    }
  return {a, b};
}

// Infinities and NaN are spelled by their bits (no math header in NVRTC).
std::string num(double v) {
  if (std::isinf(v))
    return v < 0 ? "-__uint_as_float(0x7f800000u)"
                 : "__uint_as_float(0x7f800000u)";
  if (std::isnan(v))
    return "__uint_as_float(0x7fc00000u)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos)
    s += ".0";
  return s + "f";
}

// An element of a buffer of type t as the kernel computes on it (16-bit
// floats widened to fp32), and a value as stored into one.
std::string widen(dfg::Type t, const std::string &x) {
  return t == dfg::Type::F16    ? "cuts_h2f(" + x + ")"
         : t == dfg::Type::BF16 ? "cuts_bf2f(" + x + ")"
                                : x;
}
std::string narrow(dfg::Type t, const std::string &x) {
  return t == dfg::Type::F16    ? "cuts_f2h(" + x + ")"
         : t == dfg::Type::BF16 ? "cuts_f2bf(" + x + ")"
                                : x;
}

// Element j of 16-bit elements packed in 32-bit words (`words` an unsigned
// or the lanes of a uint2 / uint4 named `v`), widened: word j / 2, the
// first element in its low half (little-endian, as on the GPU and the host).
std::string unpack16(dfg::Type t, const std::string &v, size_t words,
                     size_t j) {
  static const char lane[] = "xyzw";
  std::string word = words == 1 ? v : v + "." + lane[j / 2];
  return widen(t, "(unsigned short)(" + word + (j % 2 ? " >> 16" : "") + ")");
}

// The unsigned type of `words` 32-bit words: unsigned, uint2 or uint4.
std::string wordVector(size_t words) {
  return words == 1 ? "unsigned" : words == 2 ? "uint2" : "uint4";
}

// 16-bit elements' bits `raw` (unsigned shorts, in order) packed into
// wordVector(raw.size() / 2), the first of each pair in the low half.
std::string pack16(const std::vector<std::string> &raw) {
  const size_t words = raw.size() / 2;
  std::string out;
  for (size_t k = 0; k < words; ++k)
    out += std::string(k ? ", " : "") + "(unsigned)" + raw[2 * k] +
           " | (unsigned)" + raw[2 * k + 1] + " << 16";
  return words == 1 ? "(" + out + ")"
                    : "make_" + wordVector(words) + "(" + out + ")";
}

std::string typedNum(double v, dfg::Type t) {
  switch (t) {
  case dfg::Type::I64:
    return std::to_string(int64_t(v)) + "LL";
  case dfg::Type::I32:
    return std::to_string(int64_t(v));
  case dfg::Type::Bool:
    return v != 0 ? "true" : "false";
  default:
    return num(v);
  }
}

// An integer remainder by 0 is 0, and by -1 too: the generator's integers
// are signed, and INT_MIN % -1 traps on a CPU.
std::string noRemainder(const std::string &y) {
  return y + " == 0 || " + y + " == -1 ? 0 : ";
}

// The expression of a pure scalar node over its inputs' names `x` (the
// first) and in(i); empty for the ops emitGraph writes otherwise.
template <typename In>
std::string scalarExpr(const dfg::Node &n, const std::string &x, In in) {
  switch (n.op) {
  case Op::Fma:
    return "fmaf(" + x + ", " + in(1) + ", " + in(2) + ")";
  case Op::Const:
    return typedNum(n.value, n.type);
  case Op::Add:
    return x + " + " + in(1);
  case Op::Sub:
    return x + " - " + in(1);
  case Op::Mul:
    return x + " * " + in(1);
  case Op::Div:
    return x + " / " + in(1);
  case Op::FMod:
    return n.type == dfg::Type::F32 ? "fmodf(" + x + ", " + in(1) + ")"
                                    : noRemainder(in(1)) + x + " % " + in(1);
  case Op::Mod: { // C's remainder, moved to the divisor's sign
    const bool f = n.type == dfg::Type::F32;
    const std::string r =
        f ? "fmodf(" + x + ", " + in(1) + ")" : "(" + x + " % " + in(1) + ")";
    return (f ? "" : noRemainder(in(1))) + r + " != 0 && (" + r + " < 0) != (" +
           in(1) + " < 0) ? " + r + " + " + in(1) + " : " + r;
  }
  case Op::Max:
    return n.type == dfg::Type::F32
               ? "fmaxf(" + x + ", " + in(1) + ")"
               : x + " > " + in(1) + " ? " + x + " : " + in(1);
  case Op::Min:
    return n.type == dfg::Type::F32
               ? "fminf(" + x + ", " + in(1) + ")"
               : x + " < " + in(1) + " ? " + x + " : " + in(1);
  case Op::Cast:
    if (n.to == dfg::Type::F16 || n.to == dfg::Type::BF16) // round, stay fp32
      return widen(n.to, narrow(n.to, "static_cast<float>(" + x + ")"));
    return std::string("static_cast<") + typeName(n.type) + ">(" + x + ")";
  case Op::Pow:
    return "powf(" + x + ", " + in(1) + ")";
  case Op::Equal:
    return x + " == " + in(1);
  case Op::Less:
    return x + " < " + in(1);
  case Op::And:
    return x + " && " + in(1);
  case Op::Or:
    return x + " || " + in(1);
  case Op::Xor:
    return x + " != " + in(1);
  case Op::Not:
    return "!" + x;
  case Op::Where:
    return x + " ? " + in(1) + " : " + in(2);
  case Op::Neg:
    return "-" + x;
  case Op::Abs: // fabsf: -0 is +0
    return n.type == dfg::Type::F32 ? "fabsf(" + x + ")"
                                    : x + " < 0 ? -" + x + " : " + x;
  case Op::Relu:
    return "fmaxf(" + x + ", 0.0f)";
  case Op::Exp:
    return "expf(" + x + ")";
  case Op::Log:
    return "logf(" + x + ")";
  case Op::Sqrt:
    return "sqrtf(" + x + ")";
  case Op::Erf:
    return "erff(" + x + ")";
  case Op::Tanh:
    return "tanhf(" + x + ")";
  case Op::Sigmoid:
    return "1.0f / (1.0f + expf(-" + x + "))";
  case Op::Recip:
    return "1.0f / " + x;
  case Op::Sin:
    return "sinf(" + x + ")";
  case Op::Cos:
    return "cosf(" + x + ")";
  case Op::Tan:
    return "tanf(" + x + ")";
  case Op::Asin:
    return "asinf(" + x + ")";
  case Op::Acos:
    return "acosf(" + x + ")";
  case Op::Atan:
    return "atanf(" + x + ")";
  case Op::Sinh:
    return "sinhf(" + x + ")";
  case Op::Cosh:
    return "coshf(" + x + ")";
  case Op::Asinh:
    return "asinhf(" + x + ")";
  case Op::Acosh:
    return "acoshf(" + x + ")";
  case Op::Atanh:
    return "atanhf(" + x + ")";
  case Op::Floor:
    return "floorf(" + x + ")";
  case Op::Ceil:
    return "ceilf(" + x + ")";
  case Op::Round:
    return "rintf(" + x + ")";
  case Op::Clip:
    return "fminf(fmaxf(" + x + ", " + num(n.value) + "), " + num(n.value2) +
           ")";
  case Op::LeakyRelu:
    return x + " < 0.0f ? " + num(n.value) + " * " + x + " : " + x;
  case Op::HardSigmoid:
    return "fminf(fmaxf(" + num(n.value) + " * " + x + " + " + num(n.value2) +
           ", 0.0f), 1.0f)";
  case Op::HardSwish:
    return x + " * fminf(fmaxf(" + x + " / 6.0f + 0.5f, 0.0f), 1.0f)";
  case Op::Gelu:
    return "0.5f * " + x + " * (1.0f + erff(" + x + " * 0.70710678f))";
  case Op::GeluTanh:
    return "0.5f * " + x + " * (1.0f + tanhf(0.79788456f * (" + x +
           " + 0.044715f * " + x + " * " + x + " * " + x + ")))";
  default:
    return "";
  }
}

class Emitter {
public:
  Emitter(const Kernel &k, Target t) : top(k), target(t) {}

  std::string run();

private:
  // What differs between the phases of a kernel: a shared-memory-level
  // producer (Kernel::producer) has its own tiles, thread tiles, block
  // origin and accumulators, and stores its output into the consumer's tile.
  struct Phase {
    const Kernel *k = nullptr;
    int64_t threadExt[4] = {1, 1, 1, 1};
    std::string base[4];  // the block's first output along n, k, h, w
    std::string coord[4]; // this thread's tile coordinates
    // A producer's tile starts before the tensor (a halo): every global
    // position gets a lower-bound check.
    bool negativeBases = false;
    // Whether every block's origin is known to lie in [0, baseMax] along
    // each dimension (the consumer's are; a producer's halo is not): what
    // lets a fetch drop the bounds checks that cannot fail.
    bool basesKnown = false;
    int64_t baseMax[4] = {0, 0, 0, 0};
    int64_t smemOffset = 0; // floats of cuts_smem before its tiles
    std::string suffix;     // of its accumulators: one set per round
    int skipFetch = -1;     // the fetch a producer fills
    // A producer's output stores go to the consumer's tile (`tile`: shared,
    // the producer's output map, the tile's strides); positions outside the
    // tensor get `outside`, as the fetch would have read there.
    std::string storeTensor;
    dfg::Buffer tile;
    double outside = 0;
    // A tensor-core kernel's exit: thread-0 positions along N and K are a
    // lane's fragment elements (fragmentOffset), coord the lane's first.
    bool fragment = false;
    // Its output goes through this shared tile (stagedStore).
    std::string stagedTile;
    PositionLoop loop; // Kernel::positions: the DFGs run in loops over lv_d
  };

  void setPhase(const Kernel &k, const std::string &coordPrefix,
                const std::string &basePrefix);
  // Position along buffer dimension d of thread 0's index `i`, for this
  // thread (and block, for global buffers).
  std::string position(const dfg::Buffer &b, size_t d, int64_t i) const {
    const dfg::DimMap &m = b.map[d];
    std::string p = undigited(b, d, i);
    if (m.div != 1)
      p = "(" + p + " / " + std::to_string(m.div) + ")";
    if (m.mod != 0)
      p = "(" + p + " % " + std::to_string(m.mod) + ")";
    return p;
  }
  // Whether this thread's positions along output dimension d (times
  // `scale`) differ from thread 0's by multiples of `width`: its tile's
  // offset and a PositionLoop's.
  bool stepsBy(int d, int64_t scale, int64_t width) const {
    return ph.threadExt[d] * scale % width == 0 &&
           (ph.loop.count[d] == 1 || ph.loop.span[d] * scale % width == 0);
  }
  // position() before DimMap's digit is taken.
  std::string undigited(const dfg::Buffer &b, size_t d, int64_t i) const {
    const dfg::DimMap &m = b.map[d];
    std::string s;
    if (m.outDim != dfg::NoDim) {
      if (b.space == dfg::Space::Global)
        s += ph.base[m.outDim] + " * " + std::to_string(m.scale) + " + ";
      if (ph.fragment && (m.outDim == dfg::DimN || m.outDim == dfg::DimK))
        return "(" + s + ph.coord[m.outDim] + " * " + std::to_string(m.scale) +
               " + " +
               std::to_string(fragmentOffset(*ph.k->mma, m.outDim, i) *
                              m.scale) +
               ")";
      s += ph.coord[m.outDim] + " * " +
           std::to_string(ph.threadExt[m.outDim] * m.scale) + " + ";
      if (ph.loop.count[m.outDim] > 1)
        s += std::string("lv_") + kDimLetter[m.outDim] + " * " +
             std::to_string(ph.loop.span[m.outDim] * m.scale) + " + ";
    }
    if (m.inner)
      s += "ci + "; // the body loop's channel (Kernel::bodyStep)
    if (m.tap != 0) // the body loop's filter row (Kernel::tapStep)
      s += "fr * " + std::to_string(m.tap) + " + ";
    return "(" + s + std::to_string(i) + ")";
  }

  // The offset of `idx` (its dimensions [from, to) only: a Pick's part
  // pointer covers those up to the concat axis, its reads the rest).
  std::string address(const dfg::Buffer &b, const std::vector<int64_t> &idx,
                      size_t from = 0, size_t to = SIZE_MAX) const {
    std::string s;
    for (size_t d = from; d < std::min(to, idx.size()); ++d)
      s += (d > from ? " + " : "") + position(b, d, idx[d]) + " * " +
           std::to_string(b.strides[d]);
    return s;
  }

  // The guard of a global access: every position inside the tensor (along
  // dimensions [from, to), as address).
  std::string inside(const dfg::Buffer &b, const std::vector<int64_t> &idx,
                     size_t from = 0, size_t to = SIZE_MAX) const {
    // Positions only grow from thread 0's, so a lower bound is needed only
    // where thread 0's is negative (an input read shifted, as Concat's) or
    // the block's origin may be (a producer's halo).
    std::string s;
    for (size_t d = from; d < std::min(to, idx.size()); ++d) {
      std::string pos = position(b, d, idx[d]);
      bool lower =
          idx[d] < 0 || (ph.negativeBases && b.map[d].outDim != dfg::NoDim);
      s += (d > from ? " && " : "") + (lower ? pos + " >= 0 && " : "") + pos +
           " < " + std::to_string(b.extents[d]);
    }
    return s;
  }

  std::string nameOf(const dfg::Graph &g, int id);
  // The position a gathered load reads along a dimension: the index value
  // with negative values counted from the end, declared once per value.
  std::string gatherPosition(const dfg::Graph &g, int value, int64_t extent,
                             const std::string &indent);
  void emitGraph(const dfg::Graph &g, const std::string &indent);
  /// The nodes of g to emit, in order (emitGraph).
  std::vector<int> emissionOrder(const dfg::Graph &g) const;
  void emitLoad(const dfg::Graph &g, int id, const std::string &ind);
  void emitStore(const dfg::Graph &g, const dfg::Node &n, const std::string &x,
                 const std::string &ind);
  /// A LaneSum or LaneMax: a butterfly of shuffles over the lanes of a row.
  void emitLaneReduce(const dfg::Graph &g, int id, const std::string &ind);
  // A Pick: bisects its parts' offsets along the concat axis, so a thread
  // evaluates log2(parts) comparisons and reads one part (the loads in
  // `deferred` are emitted in the branch, the others read by name).
  void emitPick(const dfg::Graph &g, int id, const std::set<int> &deferred,
                const std::string &indent);
  // Where a Pick's parts are read only by Picks and agree past the concat
  // axis (extents, strides, positions: a concat's always do), the name of
  // a pointer to the chosen part's element at the Pick's position with
  // every axis past the concat axis at 0, or null outside every part: one
  // bisection for all the Picks of a thread at the same position up to
  // the axis (declared at the first). Else "".
  std::string pickBase(const dfg::Graph &g, const dfg::Node &n,
                       const std::set<int> &deferred,
                       const std::string &indent);
  // pickBase's key for Pick n (its parts and their positions up to the
  // concat axis, along it rounded down to pickGroup's width), or empty
  // where it does not apply.
  std::vector<int64_t> pickKey(const dfg::Graph &g, const dfg::Node &n,
                               const std::set<int> &deferred) const;
  // Where the concat axis is the parts' unit axis (channels-last), the
  // widest w (8, 4, 2) dividing every part's offset and extent along it and
  // a thread's extent: a thread's w-aligned positions along the axis then
  // lie in one part, and one bisection serves them. 1 otherwise.
  int64_t pickGroup(const dfg::Graph &g, const dfg::Node &n) const;
  // The guard and offset, past the concat axis, of Pick n's element
  // through `base`.
  std::pair<std::string, std::string> pickInner(const dfg::Graph &g,
                                                const dfg::Node &n,
                                                const std::string &base) const;
  // Runs of Picks (of fp32, fp16 or bf16 parts) through one pickBase at
  // consecutive elements of the parts' unit axis (past the concat axis, or
  // the axis itself within a pickGroup), `width`-aligned in every part and
  // thread as vectorRuns's: by their first member in `order`, the members
  // by position.
  std::map<int, std::vector<int>> pickRuns(const dfg::Graph &g,
                                           const std::vector<int> &order,
                                           const std::set<int> &deferred) const;
  void emitPickRun(const dfg::Graph &g, const std::vector<int> &ids,
                   const std::set<int> &deferred, const std::string &indent);
  // The bisection of Pick n's parts by their offsets along the concat axis:
  // `leaf(i, indent)` emits what part i's branch does.
  void
  emitBisection(const dfg::Graph &g, const dfg::Node &n,
                const std::string &indent,
                const std::function<void(size_t, const std::string &)> &leaf);
  // A vector load of the words `ids` (by position) through `ptr` where
  // `all` holds, else each word's `fallback`; the words are named after the
  // vector's lanes.
  void emitVectorLoad(const dfg::Graph &g, const std::vector<int> &ids,
                      const std::string &all, const std::string &ptr,
                      const std::vector<std::string> &fallback,
                      const std::string &indent);
  // The same for 16-bit elements of type `t` (`ptr` the address of the
  // first, `fallback` each element's bits): one 32-, 64- or 128-bit load,
  // each element named after its fp32 value.
  void emitVectorLoad16(const dfg::Graph &g, dfg::Type t,
                        const std::vector<int> &ids, const std::string &all,
                        const std::string &ptr,
                        const std::vector<std::string> &fallback,
                        const std::string &indent);
  // The runs of `width` consecutive positions of `byPos`, each starting at
  // a multiple of it, none of whose members is in `taken` (which gains
  // them): their ids by position.
  static std::vector<std::vector<int>>
  alignedRuns(const std::map<int64_t, int> &byPos, int64_t width,
              std::set<int> &taken);
  // A run of accesses at consecutive elements of a buffer's unit-stride
  // axis whose first element every thread reaches is `width`-aligned, so
  // one 4-, 8- or 16-byte access does them all (`ids` by position).
  struct VectorRun {
    std::vector<int> ids;
    bool store = false;
  };
  // The runs of `order`, keyed by the node whose place emits them: a load
  // run at its first member, a store run at its last (its values are
  // computed by then). fp32 shared tiles get 128-bit loads (§3.4.1);
  // global tensors 128- or 64-bit loads and stores (16-bit ones also
  // 32-bit: a fragment's column pair), which rely on the runtime's
  // contract that every tensor starts 16-byte aligned.
  std::map<int, VectorRun> vectorRuns(const dfg::Graph &g,
                                      const std::vector<int> &order) const;
  // Whether every thread's (and block's) position along unit axis u of b,
  // from thread 0's multiple of `width`, stays a multiple of it.
  bool widthAligned(const dfg::Buffer &b, int u, int64_t width) const;
  void emitVectorRun(const dfg::Graph &g, const VectorRun &r,
                     const std::string &indent);
  void emitVectorRun16(const dfg::Graph &g, const VectorRun &r,
                       const std::string &indent);
  // A run's store of `value` through `ptr` where the whole run is inside
  // the tensor (`all`); with a ragged end, else each element's
  // `elements[j]` where it is.
  void emitVectorStore(const dfg::Graph &g, const VectorRun &r,
                       const std::string &ptr, const std::string &value,
                       const std::string &all,
                       const std::vector<std::string> &elements, bool ragged,
                       const std::string &indent);
  enum class FetchMode { Direct, ToRegisters, FromRegisters };
  // How a fetch is emitted, from the range each global position takes over
  // every block and C_input slice: the bounds checks that can fail, whether
  // 32-bit indices reach every address, and whether a thread moves four
  // consecutive floats at a time (one 128-bit load and store).
  struct FetchPlan {
    // The fetch's axes after merging each run of adjacent axes that are
    // contiguous in both tensor and tile and need no check (a conv's
    // C_input x FH x FW weights: one axis). Axis a reads the global position
    // (base of `dim` + dim.offset) x mul + r, 0 <= r < extent.
    struct Axis {
      FetchDim dim;
      int64_t extent = 1, mul = 1, globalStride = 1, sharedStride = 1;
      bool lower = false, upper = false; // checks that can fail
    };
    std::vector<Axis> axes;
    bool narrow = false;
    int64_t vec = 1;
  };
  FetchPlan planFetch(const Fetch &f) const;
  // Rounds a thread takes to move fetch f, `vec` floats a round.
  int64_t fetchRounds(const Fetch &f, int64_t vec) const {
    int64_t threads = top.params.threads();
    return (fetchElements(f) / vec + threads - 1) / threads;
  }
  void emitFetch(const Fetch &f, const std::string &indent,
                 const std::string &loopBase, FetchMode mode, int fetchIndex);
  void emitFetches(const std::string &indent, const std::string &loopBase,
                   FetchMode mode);
  // Declares the registers each fetch stages into (ToRegisters).
  void declareStaged(const std::string &indent);
  // Floats a thread stages for one iteration's fetches (ToRegisters).
  int64_t stagedFloats() const;
  void declareTiles(const std::string &indent, const std::string &stage);
  // The phase's accumulators, loop and exit; its tile coordinates are those
  // of `tiles` thread tiles swept by the block's threads in rounds (the
  // consumer: one round of one tile each, coordinates set up already).
  void emitPhase(const std::string &indent, int64_t tiles, bool prefetch,
                 bool tilesDeclared);
  // Emits fn(indent) once per round, each in a scope that sets the round's
  // tile coordinates and skips tiles past `tiles`.
  template <typename Fn>
  void forRounds(const std::string &indent, int64_t tiles, Fn fn);
  // Declares this thread's tile coordinates from the int `tile`.
  void tileCoordinates(const std::string &indent);
  // One C_input slice's fetches from `loopBase`: every global load first,
  // then the shared stores, where that fits kMaxStagedFetch.
  void emitSliceFetch(const std::string &indent, const std::string &loopBase);
  // The loop body's DFG, in chunks of bodyStep channels where it has them.
  void emitBody(const std::string &indent);
  /// Emits g, in loops over lv_d where the phase has a PositionLoop.
  void emitPositions(const dfg::Graph &g, const std::string &indent);
  /// "[i]": an accumulator's element in the PositionLoop's iteration i (its
  /// loops' indices, row-major), or "" without one.
  std::string loopIndex() const;
  /// The phase's accumulators (arrays over a PositionLoop), their
  /// names suffixed (a producer's round).
  void declareAccumulators(const std::string &indent,
                           const std::string &suffix);
  // A producer whose loop runs one C_input slice: its fetch, then one
  // runtime loop over the rounds, each computing and storing its tiles.
  void emitRoundsLoop(const std::string &indent, int64_t tiles);
  void emitProducer();
  /// A tensor-core kernel's main loop (Kernel::mma), then its exit DFG on
  /// the lanes' accumulator fragments.
  void emitMma();
  /// cuSync: a TileWait's spins on the producer tiles the block reads (a
  /// semaphore a thread, then the block's barrier), and the TilePost after
  /// the stores.
  void emitWaits();
  void emitDependenceWaits();
  void emitPost();
  void emitTileBases(const std::string &ind, bool declare);
  /// The buffer of B a slice reads: its stage, or its slice (residentB).
  std::string bSlot = "rs";
  /// Where a persistent chain's exit stages its tile (bytes; -1: in the
  /// stages, which it reuses).
  int64_t stagedAt = -1;
  void emitPersistentPipeline(const std::optional<StagedStore> &staged);
  void emitSliceLoopEnd();
  void emitMmaExit(const std::optional<StagedStore> &staged);
  void emitSplitKSum(bool staged);
  void emitMultistagePipeline(const std::optional<StagedStore> &staged);
  void emitStagedTilePointer(dfg::Type type, int64_t offset);
  void emitSpecializedPipeline(bool staged);
  void emitStagedTileCopy(const StagedStore &s, const dfg::Buffer &t, bool out,
                          bool wait = true, bool commit = true);
  void emitChannelVectors();
  // The channels of pixel column iw of the current row into x0.. (floats).
  void emitChannelVectorLoad(const std::string &ind);
  void emitLdmatrixBases();
  void emitMmaSyncSlice();
  // `inFlight`: the commit groups of products left running (0 or 1).
  void emitWgmmaSlice(int64_t inFlight);
  void emitWgmmaHold(const char *indent);
  // The tensor-core accumulators acc[mi][ni][4], zeroed.
  void emitZeroAccumulators();
  void emitThreadCoordinates(const int64_t cnt[4]);
  void emitMmaCopySlots(const MmaOperand &o);
  void emitPatch(const MmaOperand &a);
  void emitPatchOrigin(const std::string &ind);
  void emitPlanarPatch(const MmaOperand &a, const Patch &q);
  void emitPlanarB();
  void emitPlanarFragments(const std::string &ind, const std::string &patch);
  void emitPatchRows(const std::string &ind, const std::string &kk,
                     const std::string &patch = "sA");
  void emitPatchPipeline();
  void emitWgmmaChainProduct(int64_t offset, const std::string &ytile,
                             int64_t pitch);
  void emitRegisterStep(const std::string &ind, const std::string &set,
                        const std::string &b, int64_t sbo);
  void emitPersistentPatchPipeline(const std::optional<StagedStore> &staged);
  void emitPatchSteps(const std::string &patch);
  void emitIm2colSlots(const MmaOperand &o, int64_t count, int64_t perPass);
  std::string emitPooledSlot(const MmaOperand &o, int64_t perPass);
  void emitPooledStores(const StagedStore &s, const dfg::Buffer &out);
  std::string emitPoolStep(dfg::Type t, bool average, int64_t chunk,
                           int64_t pixels);
  void emitConvSumSlots(const MmaOperand &o, int64_t count, int64_t perPass);
  void emitMmaCopies(const MmaOperand &o, const std::string &ind);
  /// A chained product (Kernel::chain), emitted by an Emitter of the chain
  /// into the producer's source: its B's copies, with the first slice's,
  /// and after the producer's exit its product from the staged tile `ytile`
  /// and its own exit.
  void emitChainCopies(int64_t offset);
  void emitChainProduct(int64_t offset, const std::string &ytile);
  void emitChain(bool product);

  const Kernel &top;
  Target target;
  Phase ph;
  std::ostringstream os;
  std::map<std::pair<const dfg::Graph *, int>, std::string> names;
  std::map<std::tuple<const dfg::Graph *, int, int64_t>, std::string> positions;
  // pickBase's pointers of the graph being emitted, by the parts and their
  // positions up to the concat axis.
  // pickBase's pointers by key, and the position along the concat axis
  // (part 0's) of the Pick each points at.
  std::map<std::vector<int64_t>, std::pair<std::string, int64_t>> pickBases;
  int counter = 0;
};

std::string opName(Op op) {
  switch (op) {
  case Op::Add:
    return "sum";
  case Op::Sub:
    return "diff";
  case Op::Mul:
    return "prod";
  case Op::Div:
    return "quot";
  case Op::Mod:
  case Op::FMod:
    return "rem";
  case Op::Max:
    return "maxv";
  case Op::Min:
    return "minv";
  case Op::Neg:
    return "neg";
  case Op::Abs:
    return "absv";
  case Op::Relu:
    return "relu";
  case Op::Exp:
    return "ex";
  case Op::Log:
    return "lg";
  case Op::Sqrt:
    return "root";
  case Op::Erf:
    return "erfv";
  case Op::Tanh:
    return "th";
  case Op::Sigmoid:
    return "sig";
  case Op::Recip:
    return "rcp";
  case Op::Clip:
    return "clip";
  case Op::LeakyRelu:
    return "lrelu";
  case Op::HardSigmoid:
    return "hsig";
  case Op::HardSwish:
    return "hswish";
  case Op::Gelu:
  case Op::GeluTanh:
    return "gelu";
  case Op::Const:
    return "cst";
  case Op::Cast:
    return "cvt";
  case Op::Pow:
    return "pw";
  case Op::Equal:
  case Op::Less:
    return "cmp";
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Not:
    return "pred";
  case Op::Where:
    return "sel";
  case Op::InBounds:
    return "in";
  case Op::Pick:
    return "cat";
  case Op::LaneSum:
    return "rowsum";
  case Op::LaneMax:
    return "rowmax";
  default:
    return "v";
  }
}

std::string Emitter::nameOf(const dfg::Graph &g, int id) {
  auto key = std::make_pair(&g, id);
  auto it = names.find(key);
  if (it != names.end())
    return it->second;
  const dfg::Node &n = g.node(id);
  std::string name;
  if (n.op == Op::Value || (n.op != Op::Load && !n.name.empty()))
    name = n.name + ph.suffix + loopIndex(); // a register accumulator
  else if (n.op == Op::Load && !n.indexFrom.empty()) {
    name = g.buffer(n.buffer).name + "_at" + std::to_string(counter++);
  } else if (n.op == Op::Load) {
    name = g.buffer(n.buffer).name;
    for (int64_t i : n.index) // a negative position reads "m3"
      name += "_" + (i < 0 ? "m" + std::to_string(-i) : std::to_string(i));
    if (!n.in.empty()) // a re-read in a later pass
      name += "_again" + std::to_string(counter++);
  } else
    name = opName(n.op) + std::to_string(counter++);
  names[key] = name;
  return name;
}

std::string Emitter::gatherPosition(const dfg::Graph &g, int value,
                                    int64_t extent, const std::string &ind) {
  auto key = std::make_tuple(&g, value, extent);
  auto it = positions.find(key);
  if (it != positions.end())
    return it->second;
  std::string v = nameOf(g, value);
  std::string name = v + "_pos" + std::to_string(counter++);
  os << ind << "const long long " << name << " = " << v << " < 0 ? " << v
     << " + " << extent << "LL : (long long)" << v << ";\n";
  positions[key] = name;
  return name;
}

// The axis of a buffer whose consecutive positions are consecutive words,
// if any (an axis of extent 1 is no run).
int unitAxis(const dfg::Buffer &b) {
  for (size_t d = 0; d < b.strides.size(); ++d)
    if (b.strides[d] == 1 && b.extents[d] > 1)
      return int(d);
  return -1;
}

bool Emitter::widthAligned(const dfg::Buffer &b, int u, int64_t width) const {
  // The other axes' offsets: multiples of width (an axis of extent 1 is
  // always at 0 where the access happens: shared tiles by construction,
  // global tensors behind their guard).
  for (size_t d = 0; d < b.strides.size(); ++d)
    if (int(d) != u && b.strides[d] % width != 0 && b.extents[d] != 1)
      return false;
  const dfg::DimMap &m = b.map[u];
  if (m.digit())
    return false;
  if (m.outDim != dfg::NoDim) {
    if (!stepsBy(m.outDim, m.scale, width))
      return false;
    if (b.space == dfg::Space::Global) {
      const TileParams &p = ph.k->params;
      const int64_t block[4] = {p.Nb, p.Kb, p.Hb, p.Wb};
      if (block[m.outDim] * m.scale % width != 0)
        return false;
    }
  }
  return (!m.inner || ph.k->bodyStep % width == 0) &&
         ph.k->tapStep * m.tap % width == 0;
}

std::map<int, Emitter::VectorRun>
Emitter::vectorRuns(const dfg::Graph &g, const std::vector<int> &order) const {
  // A global tensor both read and written here keeps its scalar accesses:
  // a run moves a store later and a load earlier. A producer phase's
  // global accesses too: its block origin need not be aligned.
  std::set<std::string> loaded, stored;
  for (int id : order) {
    const dfg::Node &n = g.node(id);
    if (n.op == Op::Load || n.op == Op::Store)
      (n.op == Op::Load ? loaded : stored).insert(g.buffer(n.buffer).name);
  }
  // Accesses by (store?, buffer, ordering operands, index off the unit
  // axis), then their position along it.
  using Key = std::tuple<bool, int, std::vector<int>, std::vector<int64_t>>;
  std::map<Key, std::map<int64_t, int>> runs;
  for (int id : order) {
    const dfg::Node &n = g.node(id);
    bool store = n.op == Op::Store;
    if ((n.op != Op::Load && !store) || !n.indexFrom.empty() || n.index.empty())
      continue;
    const dfg::Buffer &b = g.buffer(n.buffer);
    int u = unitAxis(b);
    const bool half = b.type == dfg::Type::F16 || b.type == dfg::Type::BF16;
    if ((b.type != dfg::Type::F32 && !half) || u < 0 || n.index[u] < 0)
      continue;
    const bool staged = b.name == ph.stagedTile;
    if (half && b.space != dfg::Space::Global && !staged)
      continue;
    if (b.space == dfg::Space::Global &&
        (ph.k != &top || (loaded.count(b.name) && stored.count(b.name))))
      continue;
    if (b.space == dfg::Space::Shared && store && !staged)
      continue;
    std::vector<int64_t> rest = n.index;
    rest[u] = 0;
    runs[Key{store, n.buffer, store ? std::vector<int>{} : n.in, rest}]
        [n.index[u]] = id;
  }
  std::map<int, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i)
    rank[order[i]] = i;
  auto byRank = [&](int x, int y) { return rank[x] < rank[y]; };
  std::map<int, VectorRun> result;
  std::set<int> inRun;
  for (const auto &[key, byPos] : runs) {
    const dfg::Buffer &b = g.buffer(std::get<1>(key));
    bool store = std::get<0>(key);
    int u = unitAxis(b);
    // fp32 shared tiles: 128-bit loads only; global tensors: 128 or 64
    // bits, and 32 for 16-bit elements.
    std::vector<int64_t> widths{4};
    if (b.type != dfg::Type::F32)
      widths = {8, 4, 2};
    else if (b.space == dfg::Space::Global)
      widths.push_back(2);
    if (ph.fragment) {
      // A lane's fragment holds pairs of adjacent columns (fragmentOffset):
      // 64-bit (32-bit for 16-bit elements) accesses where the unit axis is
      // K itself, else none.
      const dfg::DimMap &m = b.map[u];
      bool pairs = (b.space == dfg::Space::Global || b.name == ph.stagedTile) &&
                   m.outDim == dfg::DimK && m.scale == 1 && !m.loops();
      widths = pairs ? std::vector<int64_t>{2} : std::vector<int64_t>{};
    }
    for (int64_t w : widths) {
      if (!widthAligned(b, u, w))
        continue;
      for (std::vector<int> &ids : alignedRuns(byPos, w, inRun)) {
        int at = store ? *std::max_element(ids.begin(), ids.end(), byRank)
                       : *std::min_element(ids.begin(), ids.end(), byRank);
        result[at] = VectorRun{std::move(ids), store};
      }
    }
  }
  return result;
}

void Emitter::emitVectorRun(const dfg::Graph &g, const VectorRun &r,
                            const std::string &ind) {
  const dfg::Node &head = g.node(r.ids.front());
  const dfg::Node &last = g.node(r.ids.back());
  const dfg::Buffer &b = g.buffer(head.buffer);
  if (b.type != dfg::Type::F32) {
    emitVectorRun16(g, r, ind);
    return;
  }
  size_t w = r.ids.size();
  std::string vec = w == 4 ? "float4" : "float2";
  std::string ptr = "reinterpret_cast<" + std::string(r.store ? "" : "const ") +
                    vec + " *>(&" + b.name + "[" + address(b, head.index) +
                    "])";
  const char *lane = "xyzw";
  if (b.space == dfg::Space::Shared && r.store) { // the staged output tile
    std::string list;
    for (size_t j = 0; j < w; ++j)
      list += (j ? ", " : "") + nameOf(g, g.node(r.ids[j]).in[0]);
    os << ind << "*" << ptr << " = make_" << vec << "(" << list << ");\n";
    return;
  }
  if (b.space == dfg::Space::Shared) {
    // §3.4.1's 128-bit shared-memory load: four consecutive words (a staged
    // residual's fragment: a pair).
    std::string v = nameOf(g, r.ids[0]) + "_x" + std::to_string(w);
    os << ind << "const " << vec << " " << v << " = *" << ptr << ";\n";
    for (size_t j = 0; j < w; ++j)
      names[{&g, r.ids[j]}] = v + "." + lane[j];
    return;
  }
  // Global: the whole run inside the tensor, or (where the unit axis's
  // extent is no multiple of the width, a ragged end) each word checked.
  int u = unitAxis(b);
  bool ragged = b.extents[u] % int64_t(w) != 0;
  std::string all = inside(b, ragged ? last.index : head.index);
  auto scalar = [&](size_t j) {
    const dfg::Node &n = g.node(r.ids[j]);
    return b.name + "[" + address(b, n.index) + "]";
  };
  if (r.store) {
    std::vector<std::string> values;
    std::string list;
    for (size_t j = 0; j < w; ++j) {
      values.push_back(nameOf(g, g.node(r.ids[j]).in[0]));
      list += (j ? ", " : "") + values.back();
    }
    emitVectorStore(g, r, ptr, "make_" + vec + "(" + list + ")", all, values,
                    ragged, ind);
    return;
  }
  std::vector<std::string> fallback;
  for (size_t j = 0; j < w; ++j)
    fallback.push_back(ragged ? "(" + inside(b, g.node(r.ids[j]).index) +
                                    ") ? " + scalar(j) + " : 0.0f"
                              : "0.0f");
  emitVectorLoad(g, r.ids, all, ptr, fallback, ind);
}

void Emitter::emitVectorStore(const dfg::Graph &g, const VectorRun &r,
                              const std::string &ptr, const std::string &value,
                              const std::string &all,
                              const std::vector<std::string> &elements,
                              bool ragged, const std::string &ind) {
  const dfg::Buffer &b = g.buffer(g.node(r.ids.front()).buffer);
  if (b.space == dfg::Space::Shared) { // the staged output tile
    os << ind << "*" << ptr << " = " << value << ";\n";
    return;
  }
  // NVVM (CUDA 13.0) splits some of these stores, often a kernel's first,
  // into scalar ones (seen in the PTX): four times the store requests.
  // __stwb, a store with the default write-back policy, keeps the vector.
  os << ind << "if (" << all << ")\n"
     << ind << "  "
     << (target == Target::Cuda ? "__stwb(" + ptr + ", " + value + ");"
                                : "*" + ptr + " = " + value + ";")
     << "\n";
  if (!ragged)
    return;
  os << ind << "else {\n";
  for (size_t j = 0; j < r.ids.size(); ++j) {
    const std::vector<int64_t> &at = g.node(r.ids[j]).index;
    os << ind << "  if (" << inside(b, at) << ")\n"
       << ind << "    " << b.name << "[" << address(b, at)
       << "] = " << elements[j] << ";\n";
  }
  os << ind << "}\n";
}

// A run of 2, 4 or 8 16-bit elements of a global tensor moves as 1, 2 or 4
// 32-bit words (unsigned, uint2, uint4), each two elements, the first in
// its low half (little-endian, as on the GPU and the host).
void Emitter::emitVectorRun16(const dfg::Graph &g, const VectorRun &r,
                              const std::string &ind) {
  const dfg::Node &head = g.node(r.ids.front());
  const dfg::Node &last = g.node(r.ids.back());
  const dfg::Buffer &b = g.buffer(head.buffer);
  const size_t w = r.ids.size();
  std::string first = "&" + b.name + "[" + address(b, head.index) + "]";
  const int u = unitAxis(b);
  const bool ragged = b.extents[u] % int64_t(w) != 0;
  const std::string all = inside(b, ragged ? last.index : head.index);
  auto index = [&](size_t j) { return g.node(r.ids[j]).index; };
  auto scalar = [&](size_t j) {
    return b.name + "[" + address(b, index(j)) + "]";
  };
  if (r.store) {
    std::vector<std::string> raw;
    for (size_t j = 0; j < w; ++j)
      raw.push_back(narrow(b.type, nameOf(g, g.node(r.ids[j]).in[0])));
    emitVectorStore(
        g, r, "reinterpret_cast<" + wordVector(w / 2) + " *>(" + first + ")",
        pack16(raw), all, raw, ragged, ind);
    return;
  }
  // Outside the tensor an element reads as +0 (all bits clear).
  std::vector<std::string> fallback;
  for (size_t j = 0; j < w; ++j)
    fallback.push_back(ragged ? "((" + inside(b, index(j)) + ") ? " +
                                    scalar(j) + " : (unsigned short)0)"
                              : "0u");
  emitVectorLoad16(g, b.type, r.ids, all, first, fallback, ind);
}

void Emitter::emitVectorLoad16(const dfg::Graph &g, dfg::Type t,
                               const std::vector<int> &ids,
                               const std::string &all, const std::string &ptr,
                               const std::vector<std::string> &fallback,
                               const std::string &ind) {
  const size_t w = ids.size(), words = w / 2;
  const std::string vec = wordVector(words);
  const std::string v = nameOf(g, ids[0]) + "_w" + std::to_string(w);
  os << ind << "const " << vec << " " << v << " = (" << all
     << ") ? *reinterpret_cast<const " << vec << " *>(" << ptr
     << ") : " << pack16(fallback) << ";\n";
  for (size_t j = 0; j < w; ++j) {
    std::string e = v + "_" + std::to_string(j);
    os << ind << "const float " << e << " = " << unpack16(t, v, words, j)
       << ";\n";
    names[{&g, ids[j]}] = e;
  }
}

void Emitter::emitVectorLoad(const dfg::Graph &g, const std::vector<int> &ids,
                             const std::string &all, const std::string &ptr,
                             const std::vector<std::string> &fallback,
                             const std::string &ind) {
  size_t w = ids.size();
  std::string vec = w == 4 ? "float4" : "float2";
  std::string v = nameOf(g, ids[0]) + "_x" + std::to_string(w), rest;
  for (size_t j = 0; j < w; ++j)
    rest += (j ? ", " : "") + fallback[j];
  os << ind << "const " << vec << " " << v << " = (" << all << ") ? *" << ptr
     << " : make_" << vec << "(" << rest << ");\n";
  const char *lane = "xyzw";
  for (size_t j = 0; j < w; ++j)
    names[{&g, ids[j]}] = v + "." + lane[j];
}

std::vector<std::vector<int>>
Emitter::alignedRuns(const std::map<int64_t, int> &byPos, int64_t width,
                     std::set<int> &taken) {
  std::vector<std::vector<int>> runs;
  for (const auto &[i, first] : byPos) {
    std::vector<int> ids;
    for (int64_t j = 0; j < width && i % width == 0; ++j) {
      auto at = byPos.find(i + j);
      if (at == byPos.end() || taken.count(at->second))
        break;
      ids.push_back(at->second);
    }
    if (int64_t(ids.size()) != width)
      continue;
    taken.insert(ids.begin(), ids.end());
    runs.push_back(std::move(ids));
  }
  return runs;
}

void Emitter::emitBisection(
    const dfg::Graph &g, const dfg::Node &n, const std::string &ind,
    const std::function<void(size_t, const std::string &)> &leaf) {
  // Parts [lo, hi): at one, its leaf; else the position's side of the
  // middle part's offset.
  size_t axis = size_t(n.value);
  std::function<void(size_t, size_t, const std::string &)> part =
      [&](size_t lo, size_t hi, const std::string &in) {
        if (hi - lo == 1)
          return leaf(lo, in);
        size_t mid = (lo + hi) / 2;
        const dfg::Node &m = g.node(n.in[mid]);
        os << in << "if (" << position(g.buffer(m.buffer), axis, m.index[axis])
           << " >= 0) {\n";
        part(mid, hi, in + "  ");
        os << in << "} else {\n";
        part(lo, mid, in + "  ");
        os << in << "}\n";
      };
  part(0, n.in.size(), ind);
}

std::vector<int64_t> Emitter::pickKey(const dfg::Graph &g, const dfg::Node &n,
                                      const std::set<int> &deferred) const {
  size_t axis = size_t(n.value);
  const dfg::Node &first = g.node(n.in[0]);
  const dfg::Buffer &fb = g.buffer(first.buffer);
  std::vector<int64_t> key{int64_t(axis)};
  std::vector<size_t> along; // the key's positions along the axis
  for (int in : n.in) {
    const dfg::Node &l = g.node(in);
    const dfg::Buffer &b = g.buffer(l.buffer);
    if (!deferred.count(in) || l.op != Op::Load || !l.indexFrom.empty() ||
        b.space != dfg::Space::Global || l.index.size() != first.index.size())
      return {};
    for (size_t d = axis + 1; d < l.index.size(); ++d) {
      if (l.index[d] != first.index[d] || b.strides[d] != fb.strides[d] ||
          b.extents[d] != fb.extents[d] || b.map[d] != fb.map[d])
        return {};
    }
    key.push_back(l.buffer);
    key.insert(key.end(), l.index.begin(), l.index.begin() + axis + 1);
    along.push_back(key.size() - 1);
  }
  const int64_t lead = first.index[axis] % pickGroup(g, n);
  for (size_t k : along)
    key[k] -= lead;
  return key;
}

int64_t Emitter::pickGroup(const dfg::Graph &g, const dfg::Node &n) const {
  const size_t axis = size_t(n.value);
  const dfg::Node &first = g.node(n.in[0]);
  for (int64_t w : {8, 4, 2}) {
    bool whole = first.index[axis] >= 0;
    for (int in : n.in) {
      const dfg::Node &l = g.node(in);
      const dfg::Buffer &b = g.buffer(l.buffer);
      const dfg::DimMap &m = b.map[axis];
      whole = whole && b.strides[axis] == 1 && m.outDim != dfg::NoDim &&
              m.scale == 1 && !m.loops() && b.extents[axis] % w == 0 &&
              (first.index[axis] - l.index[axis]) % w == 0 &&
              stepsBy(m.outDim, 1, w);
    }
    if (whole)
      return w;
  }
  return 1;
}

std::string Emitter::pickBase(const dfg::Graph &g, const dfg::Node &n,
                              const std::set<int> &deferred,
                              const std::string &ind) {
  size_t axis = size_t(n.value);
  const dfg::Buffer &fb = g.buffer(g.node(n.in[0]).buffer);
  std::vector<int64_t> key = pickKey(g, n, deferred);
  if (key.empty())
    return "";
  const int64_t pos = g.node(n.in[0]).index[axis];
  auto [at, fresh] = pickBases.emplace(
      key, std::make_pair("pick_base" + std::to_string(counter), pos));
  if (!fresh) { // the element pos - at's along the axis (pickGroup)
    const std::string &b = at->second.first;
    const int64_t d = pos - at->second.second;
    return d == 0 ? b
                  : "(" + b + " ? " + b + " + " + std::to_string(d) +
                        " : nullptr)";
  }
  ++counter;
  const std::string &base = at->second.first;
  os << ind << "const " << typeName(fb.type) << " *" << base << ";\n";
  // Part i's element if the position lies inside it up to the axis.
  emitBisection(g, n, ind, [&](size_t i, const std::string &in) {
    const dfg::Node &l = g.node(n.in[i]);
    const dfg::Buffer &b = g.buffer(l.buffer);
    os << in << base << " = (" << inside(b, l.index, 0, axis + 1) << ") ? "
       << b.name << " + " << address(b, l.index, 0, axis + 1)
       << " : nullptr;\n";
  });
  return base;
}

std::pair<std::string, std::string>
Emitter::pickInner(const dfg::Graph &g, const dfg::Node &n,
                   const std::string &base) const {
  // The rest of the position (past the axis, the same in every part).
  size_t axis = size_t(n.value);
  const dfg::Node &l = g.node(n.in[0]);
  const dfg::Buffer &b = g.buffer(l.buffer);
  std::string guard = inside(b, l.index, axis + 1);
  std::string offset = address(b, l.index, axis + 1);
  return {base + (guard.empty() ? "" : " && " + guard),
          "0" + (offset.empty() ? "" : " + " + offset)};
}

std::map<int, std::vector<int>>
Emitter::pickRuns(const dfg::Graph &g, const std::vector<int> &order,
                  const std::set<int> &deferred) const {
  // Picks by (pickKey, position past the axis off the unit axis), then
  // their position along it.
  std::map<std::vector<int64_t>, std::map<int64_t, int>> byRow;
  for (int id : order) {
    const dfg::Node &n = g.node(id);
    if (n.op != Op::Pick || n.type != dfg::Type::F32 || ph.k != &top)
      continue;
    std::vector<int64_t> key = pickKey(g, n, deferred);
    if (key.empty())
      continue;
    const dfg::Node &l = g.node(n.in[0]);
    int u = unitAxis(g.buffer(l.buffer));
    const dfg::Type part = g.buffer(l.buffer).type;
    if (u < int(n.value) || (part != dfg::Type::F32 && part != dfg::Type::F16 &&
                             part != dfg::Type::BF16))
      continue;
    std::vector<int64_t> row = key;
    for (size_t d = size_t(n.value) + 1; d < l.index.size(); ++d)
      row.push_back(int(d) == u ? 0 : l.index[d]);
    byRow[row][l.index[u]] = id;
  }
  std::map<int, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i)
    rank[order[i]] = i;
  std::map<int, std::vector<int>> result;
  for (const auto &[row, byPos] : byRow) {
    const dfg::Node &n = g.node(byPos.begin()->second);
    const dfg::Buffer &b = g.buffer(g.node(n.in[0]).buffer);
    int u = unitAxis(b);
    std::set<int> taken;
    // 128-, 64- and (16-bit elements) 32-bit loads, as vectorRuns's.
    const std::vector<int64_t> widths = b.type == dfg::Type::F32
                                            ? std::vector<int64_t>{4, 2}
                                            : std::vector<int64_t>{8, 4, 2};
    // Along the concat axis itself (channels-last), a run stays inside
    // one pickBase's group, so in one part.
    const int64_t group = u == int(n.value) ? pickGroup(g, n) : 0;
    for (int64_t w : widths) {
      if (group % w != 0)
        continue;
      // Every part's element at a thread's first position: w-aligned.
      bool aligned = true;
      for (int in : n.in)
        aligned &= widthAligned(g.buffer(g.node(in).buffer), u, w);
      if (!aligned)
        continue;
      for (std::vector<int> &ids : alignedRuns(byPos, w, taken)) {
        int first =
            *std::min_element(ids.begin(), ids.end(),
                              [&](int x, int y) { return rank[x] < rank[y]; });
        result[first] = std::move(ids);
      }
    }
  }
  return result;
}

void Emitter::emitPickRun(const dfg::Graph &g, const std::vector<int> &ids,
                          const std::set<int> &deferred,
                          const std::string &ind) {
  // As emitVectorRun's global loads, through the run's part pointer.
  const dfg::Node &head = g.node(ids.front());
  std::string base = pickBase(g, head, deferred, ind);
  const dfg::Buffer &b = g.buffer(g.node(head.in[0]).buffer);
  const bool half = b.type != dfg::Type::F32;
  size_t w = ids.size();
  bool ragged = b.extents[size_t(unitAxis(b))] % int64_t(w) != 0;
  std::string all =
      pickInner(g, ragged ? g.node(ids.back()) : head, base).first;
  // Outside the parts an element reads as 0 (16-bit: its bits clear).
  const std::string zero = half ? "(unsigned short)0" : "0.0f";
  std::vector<std::string> fallback;
  for (size_t j = 0; j < w; ++j) {
    auto [guard, offset] = pickInner(g, g.node(ids[j]), base);
    fallback.push_back(ragged ? "((" + guard + ") ? " + base + "[" + offset +
                                    "] : " + zero + ")"
                       : half ? "0u"
                              : zero);
  }
  std::string first = base + " + " + pickInner(g, head, base).second;
  if (half)
    return emitVectorLoad16(g, b.type, ids, all, first, fallback, ind);
  std::string vec = w == 4 ? "float4" : "float2";
  emitVectorLoad(g, ids, all,
                 "reinterpret_cast<const " + vec + " *>(" + first + ")",
                 fallback, ind);
}

void Emitter::emitPick(const dfg::Graph &g, int id,
                       const std::set<int> &deferred, const std::string &ind) {
  const dfg::Node &n = g.node(id);
  std::string v = nameOf(g, id), zero = typedNum(0, n.type);
  if (std::string base = pickBase(g, n, deferred, ind); !base.empty()) {
    auto [guard, offset] = pickInner(g, n, base);
    const dfg::Type part = g.buffer(g.node(n.in[0]).buffer).type;
    os << ind << "const " << typeName(n.type) << " " << v << " = (" << guard
       << ") ? " << widen(part, base + "[" + offset + "]") << " : " << zero
       << ";\n";
    return;
  }
  os << ind << typeName(n.type) << " " << v << ";\n";
  // Part i's value (0 outside it, as every global load).
  emitBisection(g, n, ind, [&](size_t i, const std::string &in) {
    const dfg::Node &l = g.node(n.in[i]);
    const dfg::Buffer &b = g.buffer(l.buffer);
    std::string value =
        deferred.count(n.in[i])
            ? "(" + inside(b, l.index) + ") ? " +
                  widen(b.type, b.name + "[" + address(b, l.index) + "]") +
                  " : " + zero
            : nameOf(g, n.in[i]);
    os << in << v << " = " << value << ";\n";
  });
}

std::vector<int> Emitter::emissionOrder(const dfg::Graph &g) const {
  // §3.3.3: thread 0's chunk of the final stores and results, and what it
  // reaches; every thread runs the same code shifted by its coordinates.
  std::vector<int> finals = g.nodesWith(Op::Store);
  for (int r : g.nodesWith(Op::Result))
    finals.push_back(r);
  std::vector<int> chunk = dfg::threadZeroChunk(g, finals, ph.threadExt);
  std::vector<int> order = g.reachedFrom(chunk);
  // A kernel without a loop (elementwise chains, batch norm) issues all of
  // a thread's loads before its first store, so they wait together. In
  // position order a load followed the previous position's store across
  // the branches of bounds checks and Picks, which ptxas does not hoist it
  // over: a 56x56 concat with one element along W a thread ran 1.4x slower
  // than with four (H200, ncu: same sectors, instructions and DRAM bytes,
  // more time stalled on loads). Nothing reads a store, so the order stays
  // topological.
  // Only global stores move, and not where the graph also reads the
  // tensor (no edge orders those accesses).
  std::set<int> loadedBuffers;
  for (int id : order)
    if (g.node(id).op == Op::Load)
      loadedBuffers.insert(g.node(id).buffer);
  if (ph.k == &top && &g == &top.exit && top.loopExtent == 0)
    std::stable_partition(order.begin(), order.end(), [&](int id) {
      const dfg::Node &n = g.node(id);
      return n.op != Op::Store ||
             g.buffer(n.buffer).space != dfg::Space::Global ||
             loadedBuffers.count(n.buffer);
    });
  return order;
}

// The loads only Picks read are emitted by them (so only the part a
// position falls in is read: through pickBase's pointer, or inside the
// bisection's branches), not in order nor in runs.
std::set<int> deferredLoads(const dfg::Graph &g,
                            const std::vector<int> &order) {
  std::map<int, int> readers, pickReaders;
  for (int id : order)
    for (int in : g.node(id).in) {
      ++readers[in];
      pickReaders[in] += g.node(id).op == Op::Pick;
    }
  std::set<int> deferred;
  for (const auto &[id, n] : pickReaders)
    if (n > 0 && n == readers[id] && g.node(id).op == Op::Load)
      deferred.insert(id);
  return deferred;
}

void Emitter::emitLoad(const dfg::Graph &g, int id, const std::string &ind) {
  const dfg::Node &n = g.node(id);
  const dfg::Buffer &b = g.buffer(n.buffer);
  std::string zero = typedNum(0, n.type);
  if (!n.indexFrom.empty()) {
    // A gathered load: dynamic positions are checked both ways (an
    // index outside the extent reads 0 rather than faulting).
    std::string addr, guard;
    for (size_t d = 0; d < n.index.size(); ++d) {
      std::string pos;
      if (n.indexFrom[d] >= 0) {
        pos = gatherPosition(g, n.indexFrom[d], b.extents[d], ind);
        guard += (guard.empty() ? "" : " && ") + std::string("(") + pos +
                 " >= 0 && " + pos + " < " + std::to_string(b.extents[d]) + ")";
      } else {
        pos = position(b, d, n.index[d]);
        guard += (guard.empty() ? "" : " && ") + pos + " < " +
                 std::to_string(b.extents[d]);
      }
      addr += (d ? " + " : "") + pos + " * " + std::to_string(b.strides[d]);
    }
    os << ind << "const " << typeName(n.type) << " " << nameOf(g, id) << " = ("
       << guard << ") ? " << widen(b.type, b.name + "[" + addr + "]") << " : "
       << zero << ";\n";
    return;
  }
  std::string a = widen(b.type, b.name + "[" + address(b, n.index) + "]");
  if (b.space == dfg::Space::Global || b.guarded)
    a = "(" + inside(b, n.index) + ") ? " + a + " : " + zero;
  os << ind << "const " << typeName(n.type) << " " << nameOf(g, id) << " = "
     << a << ";\n";
}

void Emitter::emitStore(const dfg::Graph &g, const dfg::Node &n,
                        const std::string &x, const std::string &ind) {
  const dfg::Buffer &b = g.buffer(n.buffer);
  if (b.space == dfg::Space::Global && b.name == ph.storeTensor) {
    // A producer's output: into the consumer's tile, which holds the
    // fetch's `outside` value where the tile overhangs the tensor.
    os << ind << ph.tile.name << "[" << address(ph.tile, n.index) << "] = ("
       << inside(b, n.index) << ") ? " << x << " : " << num(ph.outside)
       << ";\n";
    return;
  }
  std::string a =
      b.name + "[" + address(b, n.index) + "] = " + narrow(b.type, x) + ";";
  if (b.space == dfg::Space::Global)
    os << ind << "if (" << inside(b, n.index) << ")\n"
       << ind << "  " << a << "\n";
  else
    os << ind << a << "\n";
}

void Emitter::emitLaneReduce(const dfg::Graph &g, int id,
                             const std::string &ind) {
  const dfg::Node &n = g.node(id);
  std::string x = nameOf(g, n.in[0]);
  // Butterfly over the lanes sharing a row: after log2(G) exchanges
  // every lane holds the whole row's result.
  std::string r = nameOf(g, id);
  int64_t lanes = int64_t(n.value);
  std::string shfl =
      target == Target::Hip
          ? "__shfl_xor(" + r + ", o, " + std::to_string(lanes) + ")"
          : "__shfl_xor_sync(0xffffffffu, " + r + ", o, " +
                std::to_string(lanes) + ")";
  os << ind << "float " << r << " = " << x << ";\n"
     << ind << "for (int o = " << lanes / 2 << "; o > 0; o >>= 1)\n"
     << ind << "  " << r << " = "
     << (n.op == Op::LaneSum ? r + " + " + shfl
                             : "fmaxf(" + r + ", " + shfl + ")")
     << ";\n";
}

void Emitter::emitGraph(const dfg::Graph &g, const std::string &ind) {
  std::vector<int> order = emissionOrder(g);
  pickBases.clear();
  std::set<int> deferred = deferredLoads(g, order);
  std::vector<int> eager;
  for (int id : order)
    if (!deferred.count(id))
      eager.push_back(id);
  std::map<int, VectorRun> runs = vectorRuns(g, eager);
  std::set<int> inRun; // emitted with their run, at another node's place
  for (const auto &[at, r] : runs)
    for (int id : r.ids)
      if (id != at)
        inRun.insert(id);
  std::map<int, std::vector<int>> picks = pickRuns(g, order, deferred);
  for (const auto &[at, ids] : picks)
    for (int id : ids)
      if (id != at)
        inRun.insert(id);
  for (int id : order) {
    const dfg::Node &n = g.node(id);
    if (inRun.count(id) || deferred.count(id))
      continue;
    if (auto r = runs.find(id); r != runs.end()) {
      emitVectorRun(g, r->second, ind);
      continue;
    }
    auto in = [&](int i) { return nameOf(g, n.in[i]); };
    std::string x = n.in.empty() ? "" : in(0);
    switch (n.op) {
    case Op::Value:
    case Op::Result:
      continue; // registers: named, declared before the loop
    case Op::Barrier:
      os << ind << "__syncthreads();\n";
      continue;
    case Op::Load:
      emitLoad(g, id, ind);
      continue;
    case Op::Store:
      emitStore(g, n, x, ind);
      continue;
    case Op::Pick:
      if (auto r = picks.find(id); r != picks.end())
        emitPickRun(g, r->second, deferred, ind);
      else
        emitPick(g, id, deferred, ind);
      continue;
    case Op::LaneSum:
    case Op::LaneMax:
      emitLaneReduce(g, id, ind);
      continue;
    case Op::InBounds: {
      const dfg::Node &l = g.node(n.in[0]);
      os << ind << "const bool " << nameOf(g, id) << " = "
         << inside(g.buffer(l.buffer), l.index) << ";\n";
      continue;
    }
    default:
      break;
    }
    std::string expr = scalarExpr(n, x, in);
    if (!n.name.empty()) // an accumulator updated in place
      os << ind << nameOf(g, id) << " = " << expr << ";\n";
    else
      os << ind << "const " << typeName(n.type) << " " << nameOf(g, id) << " = "
         << expr << ";\n";
  }
}

Emitter::FetchPlan Emitter::planFetch(const Fetch &f) const {
  const Kernel &k = *ph.k;
  const TileParams &p = k.params;
  const int64_t blockExt[4] = {p.Nb, p.Kb, p.Hb, p.Wb};
  FetchPlan plan;
  // The last slice's c0: the loop steps C_input from 0 below loopExtent
  // (the prefetch of the slice after the last is skipped).
  int64_t loopMax = k.loopExtent > 0 ? (k.loopExtent - 1) / p.Cin * p.Cin : 0;
  double maxIndex = 0;
  for (const FetchDim &d : f.dims) {
    int64_t lo = d.offset, hi = d.offset + d.extent - 1;
    if (d.fromLoop)
      hi += loopMax;
    else if (d.outDim != dfg::NoDim)
      hi += ph.baseMax[d.outDim] * d.scale;
    if (d.groupK > 0)
      hi += ph.baseMax[dfg::DimK] / d.groupK * d.groupC;
    FetchPlan::Axis a;
    a.dim = d, a.extent = d.extent;
    a.globalStride = d.globalStride, a.sharedStride = d.sharedStride;
    a.lower = !ph.basesKnown || lo < 0;
    a.upper = !ph.basesKnown || hi >= d.globalExtent;
    plan.axes.push_back(a);
    maxIndex += double(std::max(-lo, hi)) * double(d.globalStride);
  }
  if (!ph.basesKnown)
    return plan;
  plan.narrow = maxIndex < 2147483647.0;
  // Merge, from the innermost out, an axis into the one after it where that
  // one starts at 0 in every block and slice and both are contiguous.
  for (size_t i = plan.axes.size() - 1; i-- > 0;) {
    FetchPlan::Axis &o = plan.axes[i], &n = plan.axes[i + 1];
    bool zeroBase = !n.dim.fromLoop && n.dim.outDim == dfg::NoDim &&
                    n.dim.groupK == 0 && n.dim.offset == 0;
    if (!zeroBase || o.lower || o.upper || n.lower || n.upper ||
        o.globalStride != n.extent * n.globalStride ||
        o.sharedStride != n.extent * n.sharedStride)
      continue;
    o.mul *= n.extent;
    o.extent *= n.extent;
    o.globalStride = n.globalStride, o.sharedStride = n.sharedStride;
    plan.axes.erase(plan.axes.begin() + i + 1);
  }
  // Four floats at a time: the unit axis starts at a multiple of four in
  // every block and slice and steps in fours, the other axes keep 16-byte
  // alignment in the tensor (whose start the runtime aligns to 16 bytes)
  // and in the tile, and a quad lies wholly inside the tensor or outside.
  const FetchPlan::Axis &u = plan.axes.back();
  int64_t step = u.dim.fromLoop               ? p.Cin
                 : u.dim.outDim == dfg::NoDim ? 0
                 : ph.baseMax[u.dim.outDim] > 0
                     ? blockExt[u.dim.outDim] * u.dim.scale
                     : 0;
  bool quads = u.globalStride == 1 && u.sharedStride == 1 &&
               u.extent % 4 == 0 && u.dim.offset * u.mul % 4 == 0 &&
               step * u.mul % 4 == 0 && u.dim.groupK == 0 &&
               (!u.upper || u.dim.globalExtent % 4 == 0);
  for (size_t i = 0; i + 1 < plan.axes.size(); ++i)
    quads = quads && plan.axes[i].globalStride % 4 == 0 &&
            plan.axes[i].sharedStride % 4 == 0;
  if (quads && !f.mask && f.tensor >= 0 &&
      k.tensors[f.tensor].type == dfg::Type::F32)
    plan.vec = 4;
  return plan;
}

void Emitter::emitFetch(const Fetch &f, const std::string &ind,
                        const std::string &loopBase, FetchMode mode,
                        int fetchIndex) {
  const Kernel &k = *ph.k;
  const dfg::Buffer &b = k.body.buffer(f.buffer);
  FetchPlan plan = planFetch(f);
  bool quads = plan.vec > 1;
  int64_t total = fetchElements(f) / plan.vec;
  int64_t rounds = fetchRounds(f, plan.vec);
  std::string in = ind + "  ";
  auto narrowed = [&](const std::string &x) {
    return plan.narrow ? "int(" + x + ")" : x;
  };
  // Consecutive threads take consecutive elements (or quads) of the last
  // axis.
  if (mode == FetchMode::Direct) {
    os << ind << "for (int e = tid; e < " << total << "; e += kThreads) {\n";
  } else {
    // Unrolled, so the staged values live in registers.
    os << ind << "#pragma unroll\n"
       << ind << "for (int round = 0; round < " << rounds << "; ++round) {\n"
       << in << "const int e = tid + round * kThreads;\n";
    if (rounds * top.params.threads() > total)
      os << in << "if (e >= " << total << ")\n" << in << "  break;\n";
  }
  std::string rest = "e", guard, global, shared;
  for (size_t i = plan.axes.size(); i-- > 0;) {
    const FetchPlan::Axis &x = plan.axes[i];
    const FetchDim &d = x.dim;
    bool unit = i + 1 == plan.axes.size();
    int64_t extent = unit ? x.extent / plan.vec : x.extent;
    std::string r = "r" + std::to_string(i);
    os << in << "const int " << r << " = " << rest << " % " << extent
       << (unit && quads ? " * 4" : "") << ";\n";
    if (i > 0) {
      os << in << "const int q" << i << " = " << rest << " / " << extent
         << ";\n";
      rest = "q" + std::to_string(i);
    }
    std::string base =
        d.fromLoop ? narrowed(loopBase)
        : d.outDim == dfg::NoDim
            ? "0"
            : narrowed(ph.base[d.outDim]) + " * " + std::to_string(d.scale);
    if (d.groupK > 0)
      base = "(" + base + " + " + narrowed(ph.base[dfg::DimK]) + " / " +
             std::to_string(d.groupK) + " * " + std::to_string(d.groupC) + ")";
    std::string start = base + " + " + std::to_string(d.offset);
    if (x.mul > 1)
      start = "(" + start + ") * " + std::to_string(x.mul);
    std::string g = "g" + std::to_string(i);
    if (mode != FetchMode::FromRegisters)
      os << in << "const " << (plan.narrow ? "int" : "long long") << " " << g
         << " = " << start << " + " << r << ";\n";
    // Only the checks that can fail (planFetch).
    std::string check = x.lower ? g + " >= 0" : "";
    if (x.upper)
      check += (check.empty() ? "" : " && ") + g + " < " +
               std::to_string(d.globalExtent);
    if (!check.empty())
      guard = guard.empty() ? check : check + " && " + guard;
    global = g + " * " + std::to_string(x.globalStride) +
             (global.empty() ? "" : " + " + global);
    shared = r + " * " + std::to_string(x.sharedStride) +
             (shared.empty() ? "" : " + " + shared);
  }
  std::string inside, outside = num(f.outside);
  // A waited tensor is read through L2: L1 may hold a line read early
  // (HIP: cuts_wait's acquire fence has dropped the CU's L1 instead).
  const bool l2 =
      f.tensor >= 0 && k.waitsFor(f.tensor) && target == Target::Cuda;
  if (f.mask) {
    inside = "1.0f";
  } else if (quads) {
    std::string p = "reinterpret_cast<const float4 *>(" +
                    k.tensors[f.tensor].name + " + " + global + ")";
    inside = l2 ? "__ldcg(" + p + ")" : "*" + p;
  } else {
    std::string e = k.tensors[f.tensor].name + "[" + global + "]";
    inside = widen(k.tensors[f.tensor].type, l2 ? "__ldcg(&" + e + ")" : e);
  }
  if (quads)
    outside = "make_float4(" + outside + ", " + outside + ", " + outside +
              ", " + outside + ")";
  std::string value =
      guard.empty() ? inside : "(" + guard + ") ? " + inside + " : " + outside;
  std::string tile =
      quads ? "*reinterpret_cast<float4 *>(" + b.name + " + " + shared + ")"
            : b.name + "[" + shared + "]";
  std::string reg = "staged" + std::to_string(fetchIndex) + "[round]";
  if (mode == FetchMode::Direct)
    os << in << tile << " = " << value << ";\n";
  else if (mode == FetchMode::ToRegisters)
    os << in << reg << " = " << value << ";\n";
  else
    os << in << tile << " = " << reg << ";\n";
  os << ind << "}\n";
}

int64_t Emitter::stagedFloats() const {
  int64_t n = 0;
  for (size_t i = 0; i < ph.k->fetches.size(); ++i)
    if (int(i) != ph.skipFetch) {
      const Fetch &f = ph.k->fetches[i];
      int64_t vec = planFetch(f).vec;
      n += fetchRounds(f, vec) * vec;
    }
  return n;
}

void Emitter::declareStaged(const std::string &ind) {
  for (size_t i = 0; i < ph.k->fetches.size(); ++i)
    if (int(i) != ph.skipFetch) {
      const Fetch &f = ph.k->fetches[i];
      int64_t vec = planFetch(f).vec;
      os << ind << (vec > 1 ? "float4" : "float") << " staged" << i << "["
         << fetchRounds(f, vec) << "];\n";
    }
}

void Emitter::emitFetches(const std::string &ind, const std::string &loopBase,
                          FetchMode mode) {
  for (size_t i = 0; i < ph.k->fetches.size(); ++i)
    if (int(i) != ph.skipFetch)
      emitFetch(ph.k->fetches[i], ind, loopBase, mode, int(i));
}

void Emitter::declareTiles(const std::string &ind, const std::string &stage) {
  int64_t offset = ph.smemOffset;
  for (const dfg::Buffer &b : ph.k->body.allBuffers())
    if (b.space == dfg::Space::Shared) {
      os << ind << "float *const " << b.name << " = cuts_smem + " << stage
         << offset << ";\n";
      offset += bufferFloats(b);
    }
}

void Emitter::setPhase(const Kernel &k, const std::string &coordPrefix,
                       const std::string &basePrefix) {
  ph = Phase();
  ph.k = &k;
  const TileParams &p = k.params;
  const int64_t t[4] = {p.Nt, p.Kt, p.Ht, p.Wt};
  for (int d = 0; d < 4; ++d) {
    ph.threadExt[d] = t[d];
    ph.coord[d] = coordPrefix + kDimLetter[d];
    ph.base[d] = basePrefix + kDimLetter[d];
  }
  ph.loop = k.positions;
  if (&k == &top) {
    // Block origins are (block index) x (block extent), from 0 to the
    // last block's (see run()).
    const std::array<int64_t, 4> dims = gridExtents(k.desc);
    const int64_t ext[4] = {p.Nb, p.Kb, p.Hb, p.Wb};
    ph.basesKnown = true;
    for (int d = 0; d < 4; ++d)
      ph.baseMax[d] = (dims[d] + ext[d] - 1) / ext[d] * ext[d] - ext[d];
  }
  names.clear();
  positions.clear();
}

template <typename Fn>
void Emitter::forRounds(const std::string &ind, int64_t tiles, Fn fn) {
  int64_t threads = top.params.threads();
  if (ph.k == &top) { // the consumer: one tile a thread, coordinates set up
    fn(ind);
    return;
  }
  int64_t rounds = (tiles + threads - 1) / threads;
  for (int64_t r = 0; r < rounds; ++r) {
    std::string in = ind + "  ";
    os << ind << "{\n"
       << in << "const int tile = tid"
       << (r ? " + " + std::to_string(r * threads) : "") << ";\n";
    if ((r + 1) * threads > tiles) {
      os << in << "if (tile < " << tiles << ") {\n";
      in += "  ";
    }
    tileCoordinates(in);
    ph.suffix = rounds > 1 ? "_r" + std::to_string(r) : "";
    names.clear(); // this scope's values are its own
    positions.clear();
    fn(in);
    if ((r + 1) * threads > tiles)
      os << ind << "  }\n";
    os << ind << "}\n";
  }
  ph.suffix.clear();
}

void Emitter::tileCoordinates(const std::string &in) {
  const TileParams &p = ph.k->params;
  int64_t cnt[4] = {p.Nb / p.Nt, p.Kb / p.Kt, p.Hb / p.Ht, p.Wb / p.Wt};
  os << in << "const int " << ph.coord[3] << " = tile % " << cnt[3] << ";\n"
     << in << "const int " << ph.coord[2] << " = (tile / " << cnt[3] << ") % "
     << cnt[2] << ";\n"
     << in << "const int " << ph.coord[1] << " = (tile / " << cnt[3] * cnt[2]
     << ") % " << cnt[1] << ";\n"
     << in << "const int " << ph.coord[0] << " = tile / "
     << cnt[3] * cnt[2] * cnt[1] << ";\n";
}

void Emitter::emitSliceFetch(const std::string &in,
                             const std::string &loopBase) {
  if (stagedFloats() > kMaxStagedFetch)
    return emitFetches(in, loopBase, FetchMode::Direct);
  os << in << "{\n";
  declareStaged(in + "  ");
  emitFetches(in + "  ", loopBase, FetchMode::ToRegisters);
  emitFetches(in + "  ", "", FetchMode::FromRegisters);
  os << in << "}\n";
}

void Emitter::emitBody(const std::string &in) {
  const Kernel &k = *ph.k;
  // Not unrolled: the point is a source NVRTC compiles quickly, and a
  // chunk of kMaxUnrolledFma FMAs has ILP enough.
  std::string ind = in;
  auto open = [&](const char *v, int64_t extent, int64_t step) {
    os << ind << "#pragma unroll 1\n"
       << ind << "for (int " << v << " = 0; " << v << " < " << extent << "; "
       << v << " += " << step << ") {\n";
    ind += "  ";
  };
  if (k.bodyStep > 0)
    open("ci", k.params.Cin, k.bodyStep);
  if (k.tapStep > 0)
    open("fr", k.taps, k.tapStep);
  emitPositions(k.body, ind);
  while (ind.size() > in.size()) {
    ind.resize(ind.size() - 2);
    os << ind << "}\n";
  }
}

void Emitter::emitPositions(const dfg::Graph &g, const std::string &in) {
  if (!ph.loop.active())
    return emitGraph(g, in);
  // Unrolled by nvcc, so the accumulators stay registers; loads the
  // iterations share are one after it (no store between them).
  std::string ind = in;
  for (int d = 0; d < 4; ++d)
    if (ph.loop.count[d] > 1) {
      const std::string v = std::string("lv_") + kDimLetter[d];
      os << ind << "#pragma unroll\n"
         << ind << "for (int " << v << " = 0; " << v << " < "
         << ph.loop.count[d] << "; ++" << v << ") {\n";
      ind += "  ";
    }
  emitGraph(g, ind);
  while (ind.size() > in.size()) {
    ind.resize(ind.size() - 2);
    os << ind << "}\n";
  }
}

std::string Emitter::loopIndex() const {
  if (!ph.loop.active())
    return "";
  std::string index;
  for (int d = 0; d < 4; ++d)
    if (ph.loop.count[d] > 1)
      index = (index.empty() ? ""
               : index.find('+') == std::string::npos
                   ? index + " * " + std::to_string(ph.loop.count[d]) + " + "
                   : "(" + index + ") * " + std::to_string(ph.loop.count[d]) +
                         " + ") +
              "lv_" + kDimLetter[d];
  return "[" + index + "]";
}

void Emitter::declareAccumulators(const std::string &in,
                                  const std::string &suffix) {
  const std::string init = num(ph.k->accumulatorInit);
  for (const std::string &a : ph.k->accumulators) {
    os << in << "float " << a << suffix;
    if (!ph.loop.active()) {
      os << " = " << init << ";\n";
      continue;
    }
    os << "[" << ph.loop.iterations() << "] = {";
    for (int64_t i = 0; i < ph.loop.iterations(); ++i)
      os << (i ? ", " : "") << init;
    os << "};\n";
  }
}

void Emitter::emitRoundsLoop(const std::string &ind, int64_t tiles) {
  const Kernel &k = *ph.k;
  int64_t threads = top.params.threads();
  int64_t rounds = (tiles + threads - 1) / threads;
  declareTiles(ind, "");
  std::string in = ind + "  ";
  if (k.loopExtent > 0) {
    os << ind << "{\n" << in << "const long long c0 = 0;\n";
    emitSliceFetch(in, "c0");
    os << ind << "}\n" << ind << "__syncthreads();\n";
  }
  os << ind << "#pragma unroll 1\n"
     << ind << "for (int tileRound = 0; tileRound < " << rounds
     << "; ++tileRound) {\n"
     << in << "const int tile = tid + tileRound * " << threads << ";\n";
  if (rounds * threads > tiles)
    os << in << "if (tile >= " << tiles << ")\n" << in << "  break;\n";
  tileCoordinates(in);
  ph.suffix.clear();
  names.clear();
  positions.clear();
  declareAccumulators(in, "");
  emitBody(in);
  names.clear(); // the exit's loads are its own
  positions.clear();
  emitPositions(k.exit, in);
  os << ind << "}\n";
}

void Emitter::emitPhase(const std::string &ind, int64_t tiles, bool prefetch,
                        bool tilesDeclared) {
  const Kernel &k = *ph.k;
  const TileParams &p = k.params;
  int64_t threads = top.params.threads();
  int64_t rounds = ph.k == &top ? 1 : (tiles + threads - 1) / threads;
  // A producer of one C_input slice keeps no accumulator across slices, so
  // its rounds need not each be a copy in the source: MobileNetV2's
  // depthwise producer of 1x32x16x16 outputs with 64 threads was 128
  // copies, 650 KB of source and 17 s of NVRTC for one tuning candidate.
  if (ph.k != &top && rounds > kMaxUnrolledRounds && k.loopExtent <= p.Cin &&
      !tilesDeclared)
    return emitRoundsLoop(ind, tiles);
  if (!prefetch && !tilesDeclared)
    declareTiles(ind, "");
  for (int64_t r = 0; r < rounds; ++r)
    declareAccumulators(ind, rounds > 1 ? "_r" + std::to_string(r) : "");
  auto compute = [&](const std::string &in) {
    os << in << "// Compute: this thread's sub-DFG in reverse post-order.\n";
    forRounds(in, tiles, [&](const std::string &i2) { emitBody(i2); });
  };
  std::string in = ind + "  ";
  if (k.loopExtent > 0 && !prefetch) {
    os << "\n"
       << ind << "for (long long c0 = 0; c0 < " << k.loopExtent
       << "; c0 += " << p.Cin << ") {\n"
       << in << "// Fetch: global -> shared, all threads cooperating.\n";
    emitSliceFetch(in, "c0");
    os << in << "__syncthreads();\n";
    compute(in);
    os << in << "__syncthreads();\n" << ind << "}\n\n";
  } else if (k.loopExtent > 0) {
    // §3.4.1's prefetching variant: the next slice's global loads are
    // issued before this slice's compute and land in the other stage after
    // it, so their latency hides behind the compute; one barrier a slice.
    std::string stage = std::to_string(sharedFloats(k));
    os << "\n"
       << ind << "{\n"
       << in << "// Prologue: the first slice into stage 0.\n";
    declareTiles(in, "");
    emitFetches(in, "0LL", FetchMode::Direct);
    os << ind << "}\n"
       << ind << "__syncthreads();\n"
       << ind << "for (long long c0 = 0; c0 < " << k.loopExtent
       << "; c0 += " << p.Cin << ") {\n"
       << in << "const int stage = int(c0 / " << p.Cin << ") & 1;\n"
       << in << "const bool more = c0 + " << p.Cin << " < " << k.loopExtent
       << ";\n"
       << in << "// Prefetch the next slice into registers.\n";
    declareStaged(in);
    os << in << "if (more) {\n";
    emitFetches(in + "  ", "(c0 + " + std::to_string(p.Cin) + ")",
                FetchMode::ToRegisters);
    os << in << "}\n" << in << "{\n";
    declareTiles(in + "  ", "stage * " + stage + " + ");
    compute(in + "  ");
    os << in << "}\n" << in << "if (more) {\n";
    declareTiles(in + "  ", "(stage ^ 1) * " + stage + " + ");
    emitFetches(in + "  ", "", FetchMode::FromRegisters);
    os << in << "}\n" << in << "__syncthreads();\n" << ind << "}\n\n";
  }
  os << ind << "// Loop exit: epilogue and stores.\n";
  forRounds(ind, tiles,
            [&](const std::string &i2) { emitPositions(k.exit, i2); });
}

void Emitter::emitProducer() {
  const Kernel &pk = *top.producer;
  const Fetch &f = top.fetches[top.producedFetch];
  const dfg::Buffer &tile = top.body.buffer(f.buffer);
  // The producer's output tensor and the map its exit stores it with.
  const TensorArg *out = nullptr;
  for (const TensorArg &t : pk.tensors)
    if (t.output)
      out = &t;
  const dfg::Buffer *y = nullptr;
  for (const dfg::Buffer &b : pk.exit.allBuffers())
    if (b.space == dfg::Space::Global && b.name == out->name)
      y = &b;
  // The producer's block starts where the consumer's tile does, axis by
  // axis of its output (fuseShared checked they line up).
  std::string origin[4] = {"0", "0", "0", "0"};
  for (size_t i = 0; i < f.dims.size(); ++i) {
    const FetchDim &d = f.dims[i];
    std::string o = d.fromLoop || d.outDim == dfg::NoDim
                        ? "0"
                        : ph.base[d.outDim] + " * " + std::to_string(d.scale);
    origin[y->map[i].outDim] = o + " + " + std::to_string(d.offset);
  }
  const TileParams &p = pk.params;
  os << "  {\n"
     << "    // Phase 1 (shared-memory-level fusion): " << pk.summary << ",\n"
     << "    // block " << p.Nb << "x" << p.Kb << "x" << p.Hb << "x" << p.Wb
     << " = the tile of " << tile.name << ", computed into it.\n";
  setPhase(pk, "pre_t_", "pre_base_");
  for (int d = 0; d < 4; ++d)
    os << "    const long long " << ph.base[d] << " = " << origin[d] << ";\n";
  ph.negativeBases = true;
  ph.smemOffset = sharedFloats(top);
  ph.storeTensor = out->name;
  ph.tile = tile;
  ph.tile.map = y->map;
  ph.tile.extents = y->extents;
  ph.tile.strides.clear();
  for (const FetchDim &d : f.dims)
    ph.tile.strides.push_back(d.sharedStride);
  ph.outside = f.outside;
  emitPhase("    ", p.threads(), top.prefetch, false);
  os << "  }\n"
     << "  __syncthreads(); // the tile is complete\n\n";
}

// Thread tid's coordinates t_n, t_k, t_h, t_w among the block's cnt[d]
// threads along each dimension: W fastest, then H, K, N; K fastest, then
// W, H, N in a channels-last kernel, whose tensors hold K innermost (so a
// warp's accesses run along the channels).
void Emitter::emitThreadCoordinates(const int64_t cnt[4]) {
  static const char *const kName[4] = {"N", "K", "H", "W"};
  const int fastestFirst[2][4] = {{3, 2, 1, 0}, {1, 3, 2, 0}};
  const int *order = fastestFirst[top.desc.channelsLast];
  os << "  // Thread coordinates (" << kName[order[0]] << " fastest, then "
     << kName[order[1]] << ", " << kName[order[2]] << ", " << kName[order[3]]
     << ") and the block's\n"
     << "  // first output along each dimension.\n"
     << "  const int tid = threadIdx.x;\n";
  int64_t below = 1; // threads along the dimensions faster than d
  for (int i = 0; i < 4; ++i) {
    const int d = order[i];
    os << "  const int t_" << kDimLetter[d] << " = ";
    if (i == 0)
      os << "tid % " << cnt[d];
    else if (i == 3)
      os << "tid / " << below;
    else
      os << "(tid / " << below << ") % " << cnt[d];
    os << ";\n";
    below *= cnt[d];
  }
  if (top.post && top.post->order) {
    // T: blocks take their tiles in the order they start, so the consumer's
    // first tiles' producer tiles run first whatever order the GPU
    // dispatches blocks in. atomicInc wraps to 0 after the last slot, ready
    // for the next run.
    os << "  // cuSync (T): the k-th block to start runs slot k, tile "
       << top.post->order->text(top.post->grid) << " (fastest first).\n"
       << "  __shared__ unsigned cuts_slot;\n"
       << "  if (tid == 0)\n"
       << "    cuts_slot = atomicInc(cuts_next, " << top.post->grid.blocks() - 1
       << "u);\n"
       << "  __syncthreads();\n"
       << "  long long block = cuts_slot;\n";
    return;
  }
  os << "  long long block = blockIdx.x;\n";
}

namespace {
// Whether conv d's windows stay inside its input (no zero padding read).
bool windowsInside(const OpDesc &d) {
  return d.PH == 0 && d.PW == 0 &&
         (d.OH - 1) * d.SH + (d.FH - 1) * d.DH < d.IH &&
         (d.OW - 1) * d.SW + (d.FW - 1) * d.DW < d.IW;
}
} // namespace

// An implicit GEMM's A copies: for each of this thread's rows (output
// pixels), the input offset of its window's origin and the origin's row
// and column (out of range for rows past the GEMM's).
void Emitter::emitIm2colSlots(const MmaOperand &o, int64_t count,
                              int64_t perPass) {
  const OpDesc &d = *o.im2col;
  const int64_t pixels = d.OH * d.OW;
  const bool wide = (d.N / pixels) * d.IH * d.IW * d.IC >= (int64_t(1) << 31);
  os << "  " << (wide ? "long long " : "int ") << o.x << "_off[" << count
     << "];\n"
     << "  int " << o.x << "_ih[" << count << "], " << o.x << "_iw[" << count
     << "];\n"
     << "#pragma unroll\n"
     << "  for (int i = 0; i < " << count << "; ++i) {\n";
  // Each row's image, output pixel (oh, ow) and whether it is one.
  std::string image, oh, ow, inside;
  if (top.pooled) {
    inside = emitPooledSlot(o, perPass);
    image = "image", oh = "oh", ow = "ow";
  } else {
    os << "    const int row = " << o.rowBase << " + " << o.x << "_r + i * "
       << perPass << ", q = row % " << pixels << ";\n";
    image = "(row / " + std::to_string(pixels) + ")";
    oh = "q / " + std::to_string(d.OW), ow = "q % " + std::to_string(d.OW);
    inside = "row < " + std::to_string(d.N);
  }
  os << "    const int ih = " << oh << " * " << d.SH << " - " << d.PH << ";\n"
     << "    " << o.x << "_iw[i] = " << ow << " * " << d.SW << " - " << d.PW
     << ";\n"
     << "    " << o.x << "_off[i] = ((" << (wide ? "(long long)" : "") << image
     << " * " << d.IH << " + ih) * " << d.IW << " + " << o.x << "_iw[i]) * "
     << d.IC
     << (d.im2colChunks(top.params.Cin) ? "" : std::string(" + ") + o.x + "_e")
     << ";\n"
     << "    " << o.x << "_ih[i] = " << inside << " ? ih : -(1 << 20);\n"
     << "  }\n";
  if (d.IC2)
    emitConvSumSlots(o, count, perPass);
}

// A conv_sum's second input: each row's pixel (oh SH2, ow SW2) there, for
// the slices past the first input's IC channels (1 x 1, never outside).
void Emitter::emitConvSumSlots(const MmaOperand &o, int64_t count,
                               int64_t perPass) {
  const OpDesc &d = *o.im2col;
  const int64_t pixels = d.OH * d.OW;
  const bool wide =
      (d.N / pixels) * d.IH2 * d.IW2 * d.IC2 >= (int64_t(1) << 31);
  os << "  " << (wide ? "long long " : "int ") << o.x << "_off2[" << count
     << "];\n"
     << "#pragma unroll\n"
     << "  for (int i = 0; i < " << count << "; ++i) {\n"
     << "    const int row = " << o.rowBase << " + " << o.x << "_r + i * "
     << perPass << ", q = row % " << pixels << ";\n"
     << "    " << o.x << "_off2[i] = ((" << (wide ? "(long long)" : "")
     << "(row / " << pixels << ") * " << d.IH2 << " + q / " << d.OW << " * "
     << d.SH2 << ") * " << d.IW2 << " + q % " << d.OW << " * " << d.SW2
     << ") * " << d.IC2 << " + " << o.x << "_e;\n"
     << "  }\n";
}

// A pooled implicit GEMM's row (Kernel::pooled) in emitIm2colSlots' loop:
// row r of block b is pixel (oh, ow), (r / boxW, r % boxW) of the box of
// b's tile in `image`. Returns whether the row is one of the box's.
std::string Emitter::emitPooledSlot(const MmaOperand &o, int64_t perPass) {
  const OpDesc &pool = top.pooled->pool;
  const PoolBox &b = top.pooled->box;
  const int64_t rows = top.params.Nb, tiles = b.tilesH * b.tilesW;
  os << "    const long long row = " << o.rowBase << " + " << o.x << "_r + i * "
     << perPass << ";\n"
     << "    const int r = int(row % " << rows << "), t = int(row / " << rows
     << " % " << tiles << "), image = int(row / " << rows * tiles << ");\n"
     << "    const int oh = t / " << b.tilesW << " * " << b.tileH * pool.SH
     << " - " << pool.PH << " + r / " << b.boxW << ";\n"
     << "    const int ow = t % " << b.tilesW << " * " << b.tileW * pool.SW
     << " - " << pool.PW << " + r % " << b.boxW << ";\n";
  return "r < " + std::to_string(b.boxH * b.boxW);
}

// One window pixel's step of a pooled kernel's reduction of 16 bytes of
// channels (`v`, into `m`), and the expression of the result's 16 bytes:
// a max on packed 16-bit lanes as they are, else fp32 lane by lane (an
// average of `pixels`).
std::string Emitter::emitPoolStep(dfg::Type t, bool average, int64_t chunk,
                                  int64_t pixels) {
  static const char lane[] = "xyzw";
  if (!average && pixels == 1) { // a box of plain conv outputs: a copy
    os << "          m = v;\n";
    return "m";
  }
  if (!average && t != dfg::Type::F32) {
    const std::string f = t == dfg::Type::BF16 ? "bf16x2" : "f16x2";
    os << "#ifdef __CUDA_ARCH__\n"
       << "          asm(\"max." << f << " %0, %0, %4;\\n\\tmax." << f
       << " %1, %1, %5;\\n\\tmax." << f << " %2, %2, %6;\\n\\tmax." << f
       << " %3, %3, %7;\"\n"
       << "              : \"+r\"(m.x), \"+r\"(m.y), \"+r\"(m.z), "
          "\"+r\"(m.w)\n"
       << "              : \"r\"(v.x), \"r\"(v.y), \"r\"(v.z), "
          "\"r\"(v.w));\n"
       << "#else\n";
    for (int j = 0; j < 4; ++j)
      os << "          m." << lane[j] << " = cuts_max_" << f << "(m." << lane[j]
         << ", v." << lane[j] << ");\n";
    os << "#endif\n";
    return "m";
  }
  const std::string scale =
      average ? " * " + num(1.0 / double(pixels)) : std::string();
  std::vector<std::string> raw;
  for (int64_t j = 0; j < chunk; ++j) {
    const std::string m = "m[" + std::to_string(j) + "]";
    const std::string x =
        t == dfg::Type::F32 ? std::string("__uint_as_float(v.") + lane[j] + ")"
                            : unpack16(t, "v", 4, size_t(j));
    os << "          " << m << " = "
       << (average ? m + " + " + x : "fmaxf(" + m + ", " + x + ")") << ";\n";
    raw.push_back(t == dfg::Type::F32 ? "__float_as_uint(" + m + scale + ")"
                                      : narrow(t, m + scale));
  }
  if (t != dfg::Type::F32)
    return pack16(raw);
  std::string packed = "make_uint4(";
  for (size_t j = 0; j < raw.size(); ++j)
    packed += (j ? ", " : "") + raw[j];
  return packed + ")";
}

// A pooled kernel's stores (Kernel::pooled): each thread takes 16 bytes of
// channels of a pooled output at a time and reduces its window's pixels
// inside the conv's output from the staged tile: a max on the packed 16-bit
// lanes as they are (max.f16x2: exact), else in fp32 lane by lane.
void Emitter::emitPooledStores(const StagedStore &s, const dfg::Buffer &out) {
  const OpDesc &pool = top.pooled->pool;
  const PoolBox &b = top.pooled->box;
  const TileParams &p = top.params;
  const int64_t perRow = p.Kb / s.chunk, tiles = b.tilesH * b.tilesW;
  const dfg::Type t = out.type;
  const bool average = top.pooled->average;
  const bool packedMax = !average && t != dfg::Type::F32;
  const bool copy = !average && pool.FH * pool.FW == 1; // emitPoolStep
  std::string name;
  for (const TensorArg &a : top.tensors)
    if (a.output)
      name = a.name;
  os << "  __syncthreads(); // the tile is in\n"
     << "  {\n"
     << "    const int t = int(base_n / " << p.Nb << " % " << tiles
     << "), image = int(base_n / " << p.Nb * tiles << ");\n"
     << "    const int y0 = t / " << b.tilesW << " * " << b.tileH
     << ", x0 = t % " << b.tilesW << " * " << b.tileW << ";\n"
     << "    for (int c = tid; c < " << b.tileH * b.tileW * perRow
     << "; c += kThreads) {\n"
     << "      const int o = c / " << perRow << ", q = c % " << perRow << " * "
     << s.chunk << ";\n"
     << "      const int y = y0 + o / " << b.tileW << ", x = x0 + o % "
     << b.tileW << ";\n"
     << "      if (y >= " << pool.H << " || x >= " << pool.W
     << " || base_k + q >= " << pool.K << ")\n"
     << "        continue;\n";
  if (copy) {
    os << "      uint4 m;\n";
  } else if (packedMax) {
    // Two 16-bit -infinities a word.
    const std::string neg =
        t == dfg::Type::BF16 ? "0xff80ff80u" : "0xfc00fc00u";
    os << "      uint4 m = make_uint4(" << neg << ", " << neg << ", " << neg
       << ", " << neg << ");\n";
  } else {
    os << "      float m[" << s.chunk << "];\n"
       << "#pragma unroll\n"
       << "      for (int j = 0; j < " << s.chunk << "; ++j)\n"
       << "        m[j] = " << (average ? "0.0f" : num(-INFINITY)) << ";\n";
  }
  // Every window pixel is read, one outside the conv's output (always
  // inside the staged box) then replaced by the reduction's identity: with
  // the reads unconditional, nvcc issues a window's loads together rather
  // than each after the last one's max (the stem's pooling, H200 SASS).
  const char *outside = average || copy        ? "0u"
                        : t == dfg::Type::BF16 ? "0xff80ff80u"
                        : t == dfg::Type::F16  ? "0xfc00fc00u"
                                               : "0xff800000u";
  os << "#pragma unroll\n"
     << "      for (int fy = 0; fy < " << pool.FH << "; ++fy)\n"
     << "#pragma unroll\n"
     << "        for (int fx = 0; fx < " << pool.FW << "; ++fx) {\n"
     << "          const int r = o / " << b.tileW << " * " << pool.SH
     << " + fy, col = o % " << b.tileW << " * " << pool.SW << " + fx;\n"
     << "          uint4 v = *reinterpret_cast<const uint4 *>("
     << "&cuts_ytile[(r * " << b.boxW << " + col) * " << s.pitch << " + q]);\n"
     << "          if (unsigned(y0 * " << pool.SH << " - " << pool.PH
     << " + r) >= " << pool.IH << "u || unsigned(x0 * " << pool.SW << " - "
     << pool.PW << " + col) >= " << pool.IW << "u)\n"
     << "            v = make_uint4(" << outside << ", " << outside << ", "
     << outside << ", " << outside << "); // outside the conv's output\n";
  const std::string packed =
      emitPoolStep(t, average, s.chunk, pool.FH * pool.FW);
  const std::string dst = "reinterpret_cast<uint4 *>(&" + name + "[((image * " +
                          std::to_string(pool.H) + "LL + y) * " +
                          std::to_string(pool.W) + " + x) * " +
                          std::to_string(pool.K) + " + base_k + q])";
  os << "        }\n"
     << "      "
     << (target == Target::Cuda ? "__stwb(" + dst + ", " + packed + ");"
                                : "*" + dst + " = " + packed + ";")
     << "\n    }\n"
     << "  }\n";
}

// This thread's first copy of operand o (16 bytes, or 8): its row and
// column in the tile, its global source and its shared destination. Copy i
// is i x rows-per-pass rows further on, a compile-time offset in both.
void Emitter::emitMmaCopySlots(const MmaOperand &o) {
  const int64_t ch = copyElements(top), cpr = o.cols / ch;
  const int64_t eb = elementBytes(top.mma->operand);
  os << "  const int " << o.x << "_r = tid / " << cpr << ", " << o.x
     << "_e = (tid % " << cpr << ") * " << ch << ";\n";
  if (o.im2col) {
    const int64_t threads = top.mma->copyThreads();
    emitIm2colSlots(o, (o.rows * cpr + threads - 1) / threads, threads / cpr);
  } else {
    os << "  const " << typeName(top.mma->operand) << " *const " << o.x
       << "_g = " << o.global << " + (" << o.rowBase << " + " << o.x << "_r) * "
       << o.stride << "LL + " << o.colBase << " + " << o.x << "_e;\n";
  }
  os << "  const cuts_sptr " << o.x << "_s = " << o.shared;
  if (o.swizzle && ch * eb < 16) // an 8-byte copy: half a swizzled chunk
    os << " + " << o.x << "_r * " << o.ld * eb << " + ((" << o.x << "_e / "
       << 16 / eb << ") ^ (" << o.x << "_r % 8 >> " << 3 - o.swizzle
       << ")) * 16 + " << o.x << "_e % " << 16 / eb << " * " << eb << ";\n";
  else if (o.swizzle) // chunk e / ch of row r, swizzled by r
    os << " + " << o.x << "_r * " << o.ld * eb << " + ((" << o.x << "_e / "
       << ch << ") ^ (" << o.x << "_r % 8 >> " << 3 - o.swizzle << ")) * 16;\n";
  else
    os << " + (" << o.x << "_r * " << o.ld << " + " << o.x << "_e) * " << eb
       << ";\n";
}

// Ak: where the lane's 8 elements of k-step `kk` of slice kt lie in the
// patch, a_pix[i] bytes before its row's: channels of one window position,
// or a stem's pixel pair.
void Emitter::emitPatchRows(const std::string &ind, const std::string &kk,
                            const std::string &patch) {
  const OpDesc &d = top.desc;
  const Patch q = *patchOf(top);
  os << ind << "const int kx = kt * " << top.params.Cin << " + " << kk
     << " + (lane / 16) * 8, wp = kx / " << d.IC << ";\n"
     << ind << "const cuts_sptr Ak = " << patch << " + ((wp / " << d.FW << " * "
     << d.DH * q.cols << " + wp % " << d.FW << " * " << d.DW << ") * "
     << q.pitch << " + kx % " << d.IC << ") * 2;\n";
}

// The first input pixel (p_ih0, p_iw0) and image p_n of the patch of the
// tile from row bn (its base_n), where a copyPatch or patchShift begins.
void Emitter::emitPatchOrigin(const std::string &ind) {
  const OpDesc &d = top.desc, &pool = top.pooled->pool;
  const PoolBox &b = top.pooled->box;
  const int64_t rows = top.params.Nb, tiles = b.tilesH * b.tilesW;
  os << ind << "const int p_t = int(bn / " << rows << " % " << tiles
     << "), p_n = int(bn / " << rows * tiles << ");\n"
     << ind << "const int p_ih0 = (p_t / " << b.tilesW << " * "
     << b.tileH * pool.SH << " - " << pool.PH << ") * " << d.SH << " - " << d.PH
     << ";\n"
     << ind << "const int p_iw0 = (p_t % " << b.tilesW << " * "
     << b.tileW * pool.SW << " - " << pool.PW << ") * " << d.SW << " - " << d.PW
     << ";\n";
}

// A pooled implicit GEMM's A read from its input patch (Kernel::patchA):
// each lane's ldmatrix rows' pixels in it (a_pix, bytes; 0 past the box,
// whose rows are not pooled) and the patch's copies (copyPatch, zero
// outside the input), issued once with the first slice's.
void Emitter::emitPatch(const MmaOperand &a) {
  const OpDesc &d = *a.im2col;
  const PoolBox &b = top.pooled->box;
  const Patch q = *patchOf(top);
  const MmaLoop &m = *top.mma;
  const int64_t rows = top.params.Nb;
  if (q.planes) {
    emitPlanarPatch(a, q);
    return;
  }
  // The block row of the lane's ldmatrix row in tile i (a warp's 16 rows).
  const std::string lane =
      m.wgmma()
          ? "wg * " + std::to_string(64 * m.mi) +
                " + i * 64 + (warp % 4) * 16 + lane % 16"
          : "wm * " + std::to_string(rows / m.warpsM) + " + i * 16 + lane % 16";
  os << "  int a_pix[" << m.mi << "];\n"
     << "#pragma unroll\n"
     << "  for (int i = 0; i < " << m.mi << "; ++i) {\n"
     << "    const int r = " << lane << ";\n"
     << "    a_pix[i] = r < " << b.boxH * b.boxW << " ? (r / " << b.boxW
     << " * " << d.SH * q.cols << " + r % " << b.boxW << " * " << d.SW << ") * "
     << q.pitch * 2 << " : 0;\n"
     << "  }\n"
     << "  // The patch of the tile from row bn (its base_n) into dst: "
     << q.rows << " rows\n"
     << "  // of " << q.cols << " pixels, " << q.pitch
     << " elements apart, from (p_ih0, p_iw0).\n"
     << "  auto copyPatch = [&](cuts_sptr dst, long long bn) {\n";
  emitPatchOrigin("    ");
  os << "    for (int e = tid; e < " << q.rows * q.chunks
     << "; e += kThreads) {\n"
     << "      const int j = e / " << q.chunks << ", x = e % " << q.chunks
     << ";\n";
  if (q.paired)
    os << "      const int px = x * 2, c = 0;\n";
  else
    os << "      const int px = x / " << d.IC / 8 << ", c = x % " << d.IC / 8
       << " * 8;\n";
  os << "      const int ih = p_ih0 + j, iw = p_iw0 + px;\n"
     << "      const bool in = unsigned(ih) < " << d.IH
     << "u && unsigned(iw) < " << d.IW << "u;\n"
     << "      cuts_cp_async16(dst + ((j * " << q.cols << " + px) * " << q.pitch
     << " + c) * 2, in ? " << a.global << " + ((long long)(p_n * " << d.IH
     << " + ih) * " << d.IW << " + iw) * " << d.IC << " + c : " << a.global
     << ", in ? 16 : 0);\n"
     << "    }\n"
     << "  };\n";
}

// A planar input's patch (OpDesc::planarC): each lane's fragment rows'
// pixels in it, its column pair included (a_pix[i][h] for rows g + 8h of
// tile i, bytes; 0 past the box), the copies (copyPatch) of each plane's
// rows in runs (zeros outside the input: a run is inside it or outside it
// whole), and the shift of a tile's first column in its run (patchShift).
void Emitter::emitPlanarPatch(const MmaOperand &a, const Patch &q) {
  const OpDesc &d = *a.im2col;
  const PoolBox &b = top.pooled->box;
  const MmaLoop &m = *top.mma;
  const int64_t bytes = q.run * q.elementBytes;
  os << "  int a_pix[" << m.mi << "][2];\n"
     << "#pragma unroll\n"
     << "  for (int i = 0; i < " << m.mi << "; ++i)\n"
     << "#pragma unroll\n"
     << "    for (int h = 0; h < 2; ++h) {\n"
     << "      const int r = wg * " << 64 * m.mi
     << " + i * 64 + (warp % 4) * 16 + g + 8 * h;\n"
     << "      a_pix[i][h] = ((r < " << b.boxH * b.boxW << " ? r / " << b.boxW
     << " * " << d.SH * q.pitch << " + r % " << b.boxW << " * " << d.SW
     << " : 0) + tq * 2) * " << q.elementBytes << ";\n"
     << "    }\n"
     << "  auto patchShift = [&](long long bn) {\n";
  emitPatchOrigin("    ");
  os << "    (void)p_n, (void)p_ih0;\n"
     << "    return (p_iw0 & " << q.run - 1 << ") * " << q.elementBytes << ";\n"
     << "  };\n"
     << "  // The planar patch into dst: " << q.planes << " planes of "
     << q.rows << " rows of " << q.chunks << " runs of " << q.run
     << " pixels.\n"
     << "  auto copyPatch = [&](cuts_sptr dst, long long bn) {\n";
  emitPatchOrigin("    ");
  os << "    const int p_c0 = p_iw0 & ~" << q.run - 1 << ";\n"
     << "    for (int e = tid; e < " << q.planes * q.rows * q.chunks
     << "; e += kThreads) {\n"
     << "      const int c = e / " << q.rows * q.chunks << ", j = e / "
     << q.chunks << " % " << q.rows << ", px = e % " << q.chunks << " * "
     << q.run << ";\n"
     << "      const int ih = p_ih0 + j, iw = p_c0 + px;\n"
     << "      const bool in = unsigned(ih) < " << d.IH
     << "u && unsigned(iw) < " << d.IW << "u;\n"
     << "      cuts_cp_async" << bytes << (bytes == 16 ? "_ca" : "")
     << "(dst + ((c * " << q.rows << " + j) * " << q.pitch << " + px) * "
     << q.elementBytes << ", in ? " << a.global << " + ((long long)(p_n * "
     << d.planarC << " + c) * " << d.IH << " + ih) * " << d.IW
     << " + iw : " << a.global << ", in ? " << bytes << " : 0);\n"
     << "    }\n"
     << "  };\n";
}

// B of a planar input's kernel, whole: K in (channel, r, s) order, slice s
// in stage s, swizzled as wgmma reads it, gathered from the FH x FW x IC
// weight (zeros past planarK). A thread's 8-byte loads go out in batches
// before their stores: one by one, they left the stem waiting on L2.
void Emitter::emitPlanarB() {
  const Kernel &k = top;
  const OpDesc &d = k.desc;
  const TileParams &p = k.params;
  const int64_t window = d.FH * d.FW, eb = elementBytes(k.mma->operand);
  const int64_t pairs = p.Kb * window, threads = k.mma->threads();
  const int64_t loads = (pairs + threads - 1) / threads;
  const int64_t batch = std::min<int64_t>(loads, 16); // registers it holds
  const int64_t pad = sliceCount(k) * p.Cin - d.planarK();
  auto slot = [&](const std::string &ind) {
    os << ind << "const int st = kx / " << p.Cin << ", kk = kx % " << p.Cin
       << ";\n"
       << ind << "const cuts_sptr to = sB + st * " << mmaTiles(k).bElems * eb
       << " + n * " << p.Cin * eb << " + ((kk / 8) ^ (n % 8 >> "
       << 3 - mmaSwizzle(k) << ")) * 16 + kk % 8 * 2;\n";
  };
  os << "  // All of B in (channel, r, s) order, slice s in stage s.\n"
     << "  for (int b = 0; b < " << loads << "; b += " << batch << ") {\n"
     << "  unsigned long long bw[" << batch << "];\n"
     << "#pragma unroll\n"
     << "  for (int i = 0; i < " << batch << "; ++i) {\n"
     << "    const int e = tid + (b + i) * kThreads, n = e / " << window
     << ";\n"
     << "    bw[i] = e < " << pairs << " && base_k + n < " << d.K
     << " ? *(const unsigned long long *)(Bg + (base_k + n) * " << d.C
     << "LL + e % " << window << " * " << d.IC << ") : 0ull;\n"
     << "  }\n"
     << "#pragma unroll\n"
     << "  for (int i = 0; i < " << batch << "; ++i) {\n"
     << "    const int e = tid + (b + i) * kThreads, n = e / " << window
     << ";\n"
     << "    if (e >= " << pairs << ")\n"
     << "      break;\n"
     << "#pragma unroll\n"
     << "    for (int c = 0; c < " << d.planarC << "; ++c) {\n"
     << "      const int kx = c * " << window << " + e % " << window << ";\n";
  slot("      ");
  os << "      cuts_sts_b16(to, (unsigned short)(bw[i] >> 16 * c));\n"
     << "    }\n"
     << "  }\n"
     << "  }\n";
  if (pad > 0) {
    os << "  for (int e = tid; e < " << p.Kb * pad << "; e += kThreads) {\n"
       << "    const int n = e / " << pad << ", kx = " << d.planarK()
       << " + e % " << pad << ";\n";
    slot("    ");
    os << "    cuts_sts_b16(to, 0);\n"
       << "  }\n";
  }
  os << "  cuts_fence_proxy_async(); // before wgmma reads them\n";
}

// Operand o's copies of the K slice from k0 into stage st (cp.async, zero
// where the tile overhangs the tensor).
void Emitter::emitMmaCopies(const MmaOperand &o, const std::string &ind) {
  const int64_t threads = top.mma->copyThreads();
  const int64_t ch = copyElements(top), cpr = o.cols / ch;
  const int64_t eb = elementBytes(top.mma->operand);
  const int64_t total = o.rows * cpr, perPass = threads / cpr;
  const int64_t count = (total + threads - 1) / threads;
  std::string k0 = o.kAlongRows ? "k0 * " + std::to_string(o.stride) + "LL"
                                : std::string("k0");
  if (o.im2col) {
    // Slice k0's window position, or this thread's chunk's where a slice
    // spans several positions (fewer channels than the slice is wide).
    const OpDesc &d = *o.im2col;
    const std::string kk = d.im2colChunks(top.params.Cin)
                               ? std::string("(k0 + ") + o.x + "_e)"
                               : "k0";
    os << ind << "const int wpos = " << kk << " / " << d.IC << ", dh = wpos / "
       << d.FW << " * " << d.DH << ", dw = wpos % " << d.FW << " * " << d.DW
       << ";\n"
       << ind << "const int kofs = (dh * " << d.IW << " + dw) * " << d.IC
       << " + " << kk << " % " << d.IC << ";\n";
  }
  os << ind << "#pragma unroll\n"
     << ind << "for (int i = 0; i < " << count << "; ++i) {\n";
  if (total % threads) // the last pass covers part of the tile
    os << ind << "  if (" << o.x << "_r + i * " << perPass << " >= " << o.rows
       << ")\n"
       << ind << "    break;\n";
  std::vector<std::string> in;
  if (o.rowRagged)
    in.push_back(o.rowBase + " + " + o.x + "_r + i * " +
                 std::to_string(perPass) + (o.kAlongRows ? " + k0" : "") +
                 " < " + std::to_string(o.rowLimit));
  if (o.colRagged)
    in.push_back(o.colBase + " + " + o.x + "_e" +
                 (o.kAlongRows ? "" : " + k0") + " < " +
                 std::to_string(o.colLimit));
  std::string src = o.x + std::string("_g + ") + k0 + " + i * " +
                    std::to_string(perPass * o.stride) + "LL";
  if (o.im2col) { // the window position and channels of slice k0
    const OpDesc &d = *o.im2col;
    in.clear();
    if (!windowsInside(d) || top.pooled)
      in.push_back(std::string("unsigned(") + o.x + "_ih[i] + dh) < " +
                   std::to_string(d.IH) + "u && unsigned(" + o.x +
                   "_iw[i] + dw) < " + std::to_string(d.IW) + "u");
    else if (o.rowRagged)
      in.push_back(o.x + std::string("_ih[i] >= 0"));
    if (o.colRagged) // the last slice past the window's channels
      in.push_back(o.x + std::string("_e + k0 < ") +
                   std::to_string(o.colLimit));
    src = o.global + std::string(" + ") + o.x + "_off[i] + kofs";
    if (d.IC2) // a conv_sum's slices past IC read its second input
      src = "(k0 < " + std::to_string(d.IC) + " ? " + src + " : " + o.global +
            "2 + " + o.x + "_off2[i] + (k0 - " + std::to_string(d.IC) + "))";
  }
  // A pass moves whole 8-row swizzle patterns (threads / cpr rows).
  const int64_t passBytes = perPass * o.ld * eb;
  std::string dst = o.x + std::string("_s + st * ") +
                    std::to_string(o.stageBytes) + " + i * " +
                    std::to_string(passBytes);
  const std::string bytes = std::to_string(ch * eb);
  // A stem's pixel pairs through L1, where the block's rows re-read them.
  const bool l1 = o.im2col && o.im2col->pairedPixels();
  const std::string copy = "cuts_cp_async" + bytes + (l1 ? "_ca" : "");
  if (in.empty()) {
    os << ind << "  " << copy << "(" << dst << ", " << src << ", " << bytes
       << ");\n";
  } else {
    os << ind << "  const bool in = " << in[0]
       << (in.size() > 1 ? " && " + in[1] : std::string()) << ";\n"
       << ind << "  " << copy << "(" << dst << ", in ? " << src << " : "
       << o.global << ", in ? " << bytes << " : 0);\n";
  }
  os << ind << "}\n";
}

void Emitter::emitMma() {
  const Kernel &k = top;
  const TileParams &p = k.params;
  const MmaLoop &m = *k.mma;
  const MmaTiles t = mmaTiles(k);
  const int64_t eb = elementBytes(m.operand);
  const bool wgmma = m.instr == MatrixInstr::Wgmma;
  const std::string MI = std::to_string(m.mi), NI = std::to_string(m.ni);
  const std::vector<MmaOperand> ops = mmaOperands(k);
  const bool patch = readsPatch(k);
  if (k.desc.planarC && !patch) // slices would read NCHW as channels-last
    os << "#error \"a planar input is read through a patch alone\"\n";
  os << "  const int lane = tid % 32, warp = tid / 32;\n"
     << "  const int g = lane / 4, tq = lane % 4;\n";
  if (wgmma)
    os << "  // Tensor cores: warpgroup wg of the block"
       << (m.warpSpecialized ? "'s consumers (the producer's\n"
                               "  // wg is -1)"
                             : "")
       << ", each of its m64\n"
       << "  // tiles giving warp warp % 4 rows 16 (warp % 4) + g (+ 8).\n"
       << "  const int wg = tid / 128" << (m.warpSpecialized ? " - 1" : "")
       << ";\n"
       << "  const int mma_row = wg * " << 64 * m.mi
       << " + (warp % 4) * 16 + g, mma_col = tq * 2;\n";
  else
    os << "  // Tensor cores: warp (wm, wn) of the block, lane (g, tq) of the\n"
       << "  // warp; its accumulators are 16 x 8 tiles' fragments.\n"
       << "  const int wm = warp / " << m.warpsN << ", wn = warp % " << m.warpsN
       << ";\n"
       << "  const int mma_row = wm * " << p.Nb / m.warpsM
       << " + g, mma_col = wn * " << p.Kb / m.warpsN << " + tq * 2;\n";
  os << "  const cuts_sptr sA = cuts_saddr(cuts_smem);\n"
     << "  const cuts_sptr sB = sA + "
     << t.patchBytes + stagesFilled(k) * t.aElems * eb << ";\n";
  // The operands' matrices and this thread's copies: a persistent loop's
  // per fetch, of the tile the fetch is for.
  auto operandPointers = [&](const std::string &ind) {
    // A planar input's type is the model input's (OpDesc::planarC).
    const dfg::Type aType = k.desc.planarC ? k.tensors[0].type : m.operand;
    os << ind << "const " << typeName(aType) << " *Ag = A + "
       << ops[0].batchOffset << ";\n"
       << ind << "const " << typeName(m.operand) << " *Bg = B + "
       << ops[1].batchOffset << ";\n";
    if (k.desc.IC2)
      os << ind << "const " << typeName(m.operand) << " *Ag2 = A2;\n";
    for (const MmaOperand &o : ops)
      if (&o == &ops[0] && patch)
        emitPatch(o);
      else
        emitMmaCopySlots(o);
  };
  if (!persistentLoop(k) || patch) // a patch's tiles share the pointers
    operandPointers("  ");
  if (!wgmma)
    emitLdmatrixBases();
  os << "  float acc[" << MI << "][" << NI << "][4];\n";
  emitZeroAccumulators();
  if (prefetchesWeights(k)) { // the operands apart: B before the waits
    for (size_t i = 0; i < ops.size(); ++i) {
      os << "  auto fetch" << (i ? "B" : "A") << " = [&](int st, int k0) {\n";
      if (splitsK(k))
        os << "    k0 += cuts_k_begin;\n";
      if (i || !patch)
        emitMmaCopies(ops[i], "    ");
      else
        os << "    (void)st, (void)k0; // A is the patch\n";
      os << "  };\n";
    }
    os << "  auto fetch = [&](int st, int k0) { fetchA(st, k0); "
          "fetchB(st, k0); };\n";
  } else if (persistentLoop(k) && !patch) {
    os << "  auto fetch = [&](int st, int k0, long long tile) {\n"
       << "    long long block = tile;\n";
    emitTileBases("    ", true);
    os << "    (void)base_w; (void)base_h; (void)base_k; (void)base_n;\n";
    operandPointers("    ");
    emitMmaCopies(ops[0], "    ");
    if (residentB(k)) {
      os << "    if (tile == blockIdx.x) { // B, once: slice k0 into its own\n"
         << "      const int st = k0 / " << p.Cin << ";\n";
      emitMmaCopies(ops[1], "      ");
      os << "    }\n";
      bSlot = "kt";
    } else {
      emitMmaCopies(ops[1], "    ");
    }
    os << "  };\n";
  } else {
    os << "  auto fetch = [&](int st, int k0) {\n";
    if (splitsK(k))
      os << "    k0 += cuts_k_begin;\n";
    for (const MmaOperand &o : ops)
      if (&o != &ops[0] || !patch)
        emitMmaCopies(o, "    ");
    os << "  };\n";
  }
  os << "  constexpr int kTiles = " << sliceCount(k) << ";\n";
  const std::optional<StagedStore> staged = stagedStore(k);
  if (k.pooled &&
      ((persistentLoop(k) && !patch) || !staged || staged->operand >= 0))
    os << "#error \"a pooled kernel stages its own tile, one tile a "
          "block\"\n";
  if (k.chain)
    emitChain(false);
  if (m.warpSpecialized) {
    emitSpecializedPipeline(staged.has_value());
  } else if (persistentLoop(k) && patch) {
    emitPersistentPatchPipeline(staged);
    return; // each tile's exit is in the loop
  } else if (persistentLoop(k)) {
    emitPersistentPipeline(staged);
    return;
  } else if (wgmma && patch) {
    emitPatchPipeline();
  } else {
    emitMultistagePipeline(staged);
  }
  if (splitsK(k))
    emitSplitKSum(staged.has_value());
  emitMmaExit(staged);
  if (k.chain)
    emitChain(true);
}

// The chain's parts, from an Emitter of its own (its tiles, names, phase).
void Emitter::emitChain(bool product) {
  if (!stagedStore(top)) {
    os << "#error \"a chained product needs its producer's output staged\"\n";
    return;
  }
  Emitter sub(*top.chain, target);
  sub.setPhase(*top.chain, "t_", "base_");
  const int64_t offset = chainOffset(top);
  if (persistentLoop(top))
    sub.stagedAt = offset + chainBBytes(top);
  if (product && top.chain->mma->wgmma())
    sub.emitWgmmaChainProduct(offset, "cuts_ytile", stagedStore(top)->pitch);
  else if (product)
    sub.emitChainProduct(offset, "cuts_ytile");
  else
    sub.emitChainCopies(offset);
  os << sub.os.str();
}

// The chain's B (N x K, every column and all of K) into shared memory at
// `offset`, committed with the producer's first slice.
void Emitter::emitChainCopies(int64_t offset) {
  const MmaOperand b = mmaOperands(top)[1];
  os << "  { // The chained product's B, whole, with the first slice's "
        "copies.\n"
     << "  const cuts_sptr sB = cuts_saddr(cuts_smem) + " << offset << ";\n"
     << "  const " << typeName(top.mma->operand) << " *Bg = " << kChainPrefix
     << "B;\n"
     << "  const long long base_k = 0;\n";
  emitMmaCopySlots(b);
  if (top.mma->wgmma()) { // K-major slices of C_input, swizzled, one a stage
    os << "#pragma unroll\n"
       << "  for (int st = 0; st < " << sliceCount(top) << "; ++st) {\n"
       << "    const int k0 = st * " << top.params.Cin << ";\n";
    emitMmaCopies(b, "    ");
    os << "  }\n";
  } else {
    os << "  const int st = 0, k0 = 0;\n";
    emitMmaCopies(b, "  ");
  }
  os << "  }\n";
}

// One k-step on wgmma from registers (A fragments just loaded into set
// `set`): the fence for them, B's descriptor at `b` (rows `sbo` bytes
// apart in 8-row groups), the mi products, and the wait that leaves this
// step's running and frees the set the step before read.
void Emitter::emitRegisterStep(const std::string &ind, const std::string &set,
                               const std::string &b, int64_t sbo) {
  const MmaLoop &m = *top.mma;
  emitWgmmaHold(ind.c_str());
  os << ind << "cuts_wgmma_fence();\n"
     << ind << "const cuts_gdesc db = cuts_wgmma_desc(" << b << ", " << sbo
     << ", " << mmaSwizzle(top) << ");\n"
     << "#pragma unroll\n"
     << ind << "for (int i = 0; i < " << m.mi << "; ++i)\n"
     << ind << "  cuts_wgmma_rs_m64n" << 8 * m.ni << "k16_"
     << (m.operand == dfg::Type::BF16 ? "bf16" : "f16") << "(&acc[i][0][0], a["
     << set << "][i], db);\n"
     << ind << "cuts_wgmma_commit();\n"
     << ind << "cuts_wgmma_wait<1>(); // the step before's set is free\n";
  emitWgmmaHold(ind.c_str());
}

// The chained product on wgmma: per 16-deep step, each warp's A fragments
// from the staged tile (`pitch` elements a row) by ldmatrix into one of
// two register sets while the step before's products run, times the
// resident B's slices; then its exit. Its warpgroups and row tiles are
// the producer's, whose accumulators are done with by then.
void Emitter::emitWgmmaChainProduct(int64_t offset, const std::string &ytile,
                                    int64_t pitch) {
  const Kernel &k = top;
  const MmaLoop &m = *k.mma;
  const int64_t eb = elementBytes(m.operand), cin = k.params.Cin;
  const std::string MI = std::to_string(m.mi), NI = std::to_string(m.ni),
                    S = std::to_string(cin / 16);
  os << "  { // The chained product: the staged tile, its A, times its B.\n"
     << "  const cuts_sptr sA = cuts_saddr(" << ytile
     << "), sB = cuts_saddr(cuts_smem) + " << offset << ";\n"
     << "  const int mma_row = wg * " << 64 * m.mi
     << " + (warp % 4) * 16 + g, mma_col = tq * 2;\n"
     << "  cuts_sptr a_row[" << MI << "]; // the lane's ldmatrix row\n"
     << "#pragma unroll\n"
     << "  for (int i = 0; i < " << MI << "; ++i)\n"
     << "    a_row[i] = sA + (wg * " << 64 * m.mi
     << " + i * 64 + (warp % 4) * 16 + lane % 16) * " << pitch * eb
     << " + (lane / 16) * 16;\n"
     << "  float acc[" << MI << "][" << NI << "][4];\n";
  emitZeroAccumulators();
  os << "  unsigned a[2][" << MI << "][4];\n"
     << "#pragma unroll\n"
     << "  for (int q = 0; q < " << k.desc.C / 16 << "; ++q) {\n"
     << "#pragma unroll\n"
     << "    for (int i = 0; i < " << MI << "; ++i)\n"
     << "      cuts_ldmatrix_x4(a[q % 2][i], a_row[i] + q * 32);\n";
  emitRegisterStep("    ", "q % 2",
                   "sB + q / " + S + " * " +
                       std::to_string(mmaTiles(k).bElems * eb) + " + q % " + S +
                       " * 32",
                   8 * cin * eb);
  os << "  }\n"
     << "  cuts_wgmma_wait<0>();\n";
  emitWgmmaHold("  ");
  emitMmaExit(stagedStore(top));
  os << "  }\n";
}

// After the producer's exit (its tile stored from `ytile`): the chain's
// warps multiply that tile by the resident B on mma.sync, then its exit.
void Emitter::emitChainProduct(int64_t offset, const std::string &ytile) {
  const TileParams &p = top.params;
  const MmaLoop &m = *top.mma;
  const std::string MI = std::to_string(m.mi), NI = std::to_string(m.ni);
  os << "  { // The chained product: the staged tile, its A, times its B.\n"
     << "  const cuts_sptr sA = cuts_saddr(" << ytile
     << "), sB = cuts_saddr(cuts_smem) + " << offset << ";\n"
     << "  const int wm = warp / " << m.warpsN << ", wn = warp % " << m.warpsN
     << ";\n"
     << "  const int mma_row = wm * " << p.Nb / m.warpsM
     << " + g, mma_col = wn * " << p.Kb / m.warpsN << " + tq * 2;\n";
  emitLdmatrixBases();
  os << "  float acc[" << MI << "][" << NI << "][4];\n";
  emitZeroAccumulators();
  os << "  const int rs = 0;\n";
  bSlot = "0";
  emitMmaSyncSlice();
  emitMmaExit(stagedStore(top));
  os << "  }\n";
}

// A multistage loop's slice products, its stages' rotation and the end of
// its slice loop (then, with one slice's products in flight, their wait).
void Emitter::emitSliceLoopEnd() {
  const TileParams &p = top.params;
  const int64_t S = p.stages;
  if (top.mma->wgmma())
    emitWgmmaSlice(p.overlapsSlices() ? 1 : 0);
  else
    emitMmaSyncSlice();
  os << "    rs = rs == " << S - 1 << " ? 0 : rs + 1;\n"
     << "    ws = ws == " << S - 1 << " ? 0 : ws + 1;\n"
     << "  }\n";
  if (p.overlapsSlices()) {
    os << "  cuts_wgmma_wait<0>(); // the last slice's products\n";
    emitWgmmaHold("  ");
  }
}

// The multistage pipeline over this block's tiles' slices in turn, each
// tile's exit after its last slice while the next tile's first slices load.
void Emitter::emitPersistentPipeline(const std::optional<StagedStore> &staged) {
  const TileParams &p = top.params;
  const int64_t S = p.stages, ahead = p.slicesAhead();
  os << "  // A pipeline of " << S << " stages through this block's tiles' "
     << "slices: slice i + " << ahead << "\n"
     << "  // loads while slice i computes (the next tile's while this one's "
        "exit runs).\n"
     << "  // Launched with " << launchShape(top).blocks
     << " blocks (part of the tuning key).\n"
     << "  constexpr long long kTileCount = " << tileCount(top) << ";\n"
     << "  long long ftile = blockIdx.x; // the tile and slice fetched next\n"
     << "  int fkt = 0;\n"
     << "  auto fetchNext = [&](int st) {\n"
     << "    if (ftile < kTileCount)\n"
     << "      fetch(st, fkt * " << p.Cin << ", ftile);\n"
     << "    if (++fkt == kTiles)\n"
     << "      fkt = 0, ftile += gridDim.x;\n"
     << "  };\n"
     << "  for (int s = 0; s < " << ahead << "; ++s) {\n"
     << "    fetchNext(s);\n"
     << "    cuts_cp_async_commit();\n"
     << "  }\n"
     << "  int rs = 0, ws = " << ahead << "; // the stages read and written\n";
  const bool operand = persistentOperand(top, staged);
  if (operand)
    emitStagedTilePointer(top.exit.buffer(staged->buffer).type,
                          mmaTiles(top).bytes);
  os << "  for (long long tile = blockIdx.x; tile < kTileCount; "
        "tile += gridDim.x) {\n"
     << "  setTile(tile);\n";
  emitZeroAccumulators();
  os << "  for (int kt = 0; kt < kTiles; ++kt) {\n"
     << "    cuts_cp_async_wait<" << ahead - 1 << ">();\n"
     << "    __syncthreads(); // slice i is in; slice i - " << S - ahead
     << " is done with\n"
     << "    fetchNext(ws);\n";
  if (operand) {
    // The previous tile's exit is done with the staged tile (the barrier).
    os << "    if (kt == 0) { // the tile's residual, with this group\n";
    emitStagedTileCopy(*staged, top.exit.buffer(staged->operand), false, false,
                       false);
    os << "    }\n";
  }
  os << "    cuts_cp_async_commit();\n";
  emitSliceLoopEnd();
  emitMmaExit(staged);
  if (top.chain)
    emitChain(true);
  os << "  }\n";
}

// The exit DFG on the lanes' accumulator fragments, its stores through the
// shared tile where `staged` (warp-specialised: the consumers'; the
// producer joins the barriers and the copies).
void Emitter::emitMmaExit(const std::optional<StagedStore> &staged) {
  const Kernel &k = top;
  const MmaLoop &m = *k.mma;
  std::string in = "  ";
  const dfg::Type outType =
      staged ? k.exit.buffer(staged->buffer).type : dfg::Type::F32;
  if (staged && earlyOperand(k, staged)) {
    os << "  cuts_cp_async_wait<0>();\n"
       << "  __syncthreads(); // the operand's tile is in\n";
  } else if (staged && persistentOperand(k, staged)) {
    // Its copies joined the tile's first slice's group: kTiles - 1 later.
    os << "  cuts_cp_async_wait<kTiles - 1>();\n"
       << "  __syncthreads(); // the operand's tile is in\n";
  } else if (staged) {
    os << "  __syncthreads(); // every product is done with the stages\n";
    // A persistent loop's stages hold the next tile's slices.
    emitStagedTilePointer(outType, stagedAt >= 0 ? stagedAt
                                   : tileBeside(top, staged)
                                       ? mmaTiles(top).bytes
                                       : 0);
    if (staged->operand >= 0)
      emitStagedTileCopy(*staged, k.exit.buffer(staged->operand), false);
  }
  if (staged && m.warpSpecialized)
    os << "  if (tid >= 128) { // the consumers' fragments\n", in = "    ";
  os << in
     << "// The exit DFG's accumulators: fragment element (i, e) of tile\n"
     << in << "// (mi, ni) is position (2 mi + e / 2, 2 ni + e % 2).\n";
  for (int64_t n = 0; n < 2 * m.mi; ++n)
    for (int64_t c = 0; c < 2 * m.ni; ++c) {
      const int64_t local[4] = {n, c, 0, 0};
      os << in << "float " << accName(local) << " = acc[" << n / 2 << "]["
         << c / 2 << "][" << (n % 2) * 2 + c % 2 << "];\n";
    }
  ph.fragment = true;
  ph.coord[dfg::DimN] = "mma_row";
  ph.coord[dfg::DimK] = "mma_col";
  os << in << "// Loop exit: epilogue and stores.\n";
  if (!staged) {
    emitGraph(k.exit, in);
    return;
  }
  dfg::Graph exit = k.exit;
  const dfg::Buffer &out = k.exit.buffer(staged->buffer);
  dfg::Buffer tile = out;
  tile.name = ph.stagedTile = "cuts_ytile";
  tile.space = dfg::Space::Shared;
  for (size_t d = 0; d < tile.map.size(); ++d) {
    const bool n = int(d) == staged->nAxis, kx = int(d) == staged->kAxis;
    tile.strides[d] = n ? staged->pitch : kx ? 1 : 0;
    tile.extents[d] = n ? k.params.Nb : kx ? k.params.Kb : 1;
  }
  auto same = [](const std::vector<int64_t> &i) { return i; };
  exit.relayoutStores(staged->buffer, tile, same);
  if (staged->operand >= 0) // read where the lane's outputs go
    exit.relayoutStores(staged->operand, tile, same);
  emitGraph(exit, in);
  if (m.warpSpecialized)
    os << "  }\n";
  if (k.pooled)
    emitPooledStores(*staged, out);
  else if (k.storesOutput)
    emitStagedTileCopy(*staged, out, true);
  else // a chained product alone reads it
    os << "  __syncthreads(); // the tile is in\n";
}

// Split-K (Kernel::splitK): the block's partial sums out, its arrival
// counted; the tile's last block to arrive sums every part in part order
// into its accumulators (so the sums do not depend on the order of arrival)
// and goes on to the exit, the others return. The partials are written with
// plain stores and read through L2 (__ldcg) after the count.
void Emitter::emitSplitKSum(bool staged) {
  const Kernel &k = top;
  const MmaLoop &m = *k.mma;
  const TileParams &p = k.params;
  const std::string tileFloats = std::to_string(p.Nb * p.Kb);
  const bool holds = m.warpSpecialized; // only the consumers hold acc
  // A lane's fragment, a column pair at a time (8 bytes: mma_col and Kb are
  // even). Unrolled: an accumulator indexed at run time would put acc, the
  // main loop's too, in local memory.
  auto each = [&](const std::string &ind, const std::string &body) {
    os << ind << "#pragma unroll\n"
       << ind << "for (int a = 0; a < " << m.mi << "; ++a)\n"
       << ind << "#pragma unroll\n"
       << ind << "  for (int b = 0; b < " << m.ni << "; ++b)\n"
       << ind << "#pragma unroll\n"
       << ind << "    for (int h = 0; h < 2; ++h) {\n"
       << ind << "      const long long at = (long long)(mma_row + "
       << m.rowStep() << " * a + 8 * h) * " << p.Kb << " + mma_col + 8 * b;\n"
       << body << ind << "    }\n";
  };
  const std::string part = "cuts_partials + ((long long)";
  const std::string tileAt =
      " * " + std::to_string(tileCount(k)) + " + cuts_tile) * " + tileFloats;
  os << "  // Split-K: this part's sums out; the tile's last block adds them.\n"
     << "  const long long cuts_tile = blockIdx.x % " << tileCount(k) << ";\n"
     << (holds ? "  if (tid >= 128) {\n" : "  {\n")
     << "    float *const mine = " << part << "cuts_part" << tileAt << ";\n";
  each("    ", "          *(float2 *)(mine + at) =\n"
               "              make_float2(acc[a][b][2 * h], acc[a][b][2 * h + "
               "1]);\n");
  // One thread fences and counts, as a cooperative grid sync does: the
  // fence is cumulative over the block's stores the barrier ordered before
  // it, and one fence a block rather than one a thread shortens the chain
  // the last block waits through.
  os << "  }\n"
     << "  __syncthreads();\n"
     << "  __shared__ unsigned cuts_last;\n"
     << "  if (tid == kThreads - 1) {\n"
     << "    __threadfence(); // the block's partials, then its count\n"
     << "    const unsigned arrived = atomicAdd(cuts_arrived + cuts_tile, "
        "1u);\n"
     << "    cuts_last = arrived == " << k.splitK - 1 << ";\n"
     << "    if (cuts_last) // every part is in: the next run counts from 0\n"
     << "      cuts_arrived[cuts_tile] = 0u;\n"
     << "    __threadfence(); // the other parts' partials after the count\n"
     << "  }\n"
     << "  __syncthreads();\n"
     << "  if (!cuts_last)\n"
     << "    return;\n";
  if (m.warpSpecialized && !staged)
    os << "  if (tid < 128) // the producer warpgroup: no fragments to store\n"
       << "    return;\n";
  // Part by part, its own included (as stored), each part's loads issued
  // together: the sums in part order.
  os << (holds ? "  if (tid >= 128) {\n" : "  {\n") << "#pragma unroll\n"
     << "    for (int q = 0; q < " << k.splitK << "; ++q) {\n"
     << "      const float *const part = " << part << "q" << tileAt << ";\n";
  each("      ",
       "            const float2 v = __ldcg((const float2 *)(part + "
       "at));\n"
       "            acc[a][b][2 * h] = q ? acc[a][b][2 * h] + v.x : "
       "v.x;\n"
       "            acc[a][b][2 * h + 1] = q ? acc[a][b][2 * h + 1] + "
       "v.y : v.y;\n");
  os << "    }\n"
     << "  }\n";
}

// Between a staged tile and tensor t (the output, or the operand read in
// its place): 16 bytes a thread, a row's copies by consecutive threads,
// rows outside the tensor skipped.
void Emitter::emitStagedTileCopy(const StagedStore &s, const dfg::Buffer &t,
                                 bool out, bool wait, bool commit) {
  const TileParams &p = top.params;
  const int64_t perRow = p.Kb / s.chunk;
  const Phase saved = ph;
  ph.fragment = false;
  ph.threadExt[dfg::DimN] = ph.threadExt[dfg::DimK] = 1;
  ph.coord[dfg::DimN] = "r", ph.coord[dfg::DimK] = "q";
  std::vector<int64_t> first(t.map.size(), 0), last = first;
  last[size_t(s.kAxis)] = s.chunk - 1;
  const std::string global =
      "reinterpret_cast<uint4 *>(&" + t.name + "[" + address(t, first) + "])";
  const std::string tile = "reinterpret_cast<const uint4 *>(&cuts_ytile[r * " +
                           std::to_string(s.pitch) + " + q])";
  if (out)
    os << "  __syncthreads(); // the tile is in\n";
  os << "  for (int c = tid; c < " << p.Nb * perRow << "; c += kThreads) {\n"
     << "    const int r = c / " << perRow << ", q = c % " << perRow << " * "
     << s.chunk << ";\n";
  if (!out) {
    // cp.async: every thread's loads in flight at once, not one per
    // iteration behind its store.
    os << "    const bool in = " << inside(t, last) << ";\n"
       << "    cuts_cp_async16(cuts_saddr(&cuts_ytile[r * " << s.pitch
       << " + q]), in ? " << t.name << " + " << address(t, first) << " : "
       << t.name << ", in ? 16 : 0);\n"
       << "  }\n";
    if (commit)
      os << "  cuts_cp_async_commit();\n";
    if (wait)
      os << "  cuts_cp_async_wait<0>();\n"
         << "  __syncthreads(); // the operand's tile is in\n";
  } else {
    os << "    if (" << inside(t, last) << ")\n"
       << "      "
       << (target == Target::Cuda ? "__stwb(" + global + ", *" + tile + ");"
                                  : "*" + global + " = *" + tile + ";")
       << "\n  }\n";
  }
  ph = saved;
}

// cuts_ytile, the staged tile, `offset` bytes into the shared memory.
void Emitter::emitStagedTilePointer(dfg::Type type, int64_t offset) {
  os << "  " << typeName(type) << " *const cuts_ytile = reinterpret_cast<"
     << typeName(type) << " *>(";
  if (offset == 0)
    os << "cuts_smem);\n";
  else
    os << "reinterpret_cast<unsigned char *>(cuts_smem) + " << offset << ");\n";
}

// Every thread copies and computes: slice kt + ahead loads while slice kt
// computes, a block barrier between slices.
void Emitter::emitMultistagePipeline(const std::optional<StagedStore> &staged) {
  const TileParams &p = top.params;
  const int64_t S = p.stages, ahead = p.slicesAhead();
  os << "  // A pipeline of " << S << " stages: slice kt + " << ahead
     << " loads while slice kt computes";
  if (p.overlapsSlices())
    os << "\n  // (and slice kt - 1's products finish)";
  os << ".\n"
     << "  for (int s = 0; s < " << ahead << "; ++s) {\n";
  if (prefetchesWeights(top)) {
    // The weights' first slices fly while the previous kernel finishes; they
    // join slice 0's group, which the first wait retires.
    os << "    if (s < kTiles)\n"
       << "      fetchB(s, s * " << p.Cin << ");\n"
       << "  }\n";
    emitDependenceWaits();
    if (readsPatch(top))
      os << "  copyPatch(sA, base_n); // with slice 0's copies\n";
    os << "  for (int s = 0; s < " << ahead << "; ++s) {\n"
       << "    if (s < kTiles)\n"
       << "      fetchA(s, s * " << p.Cin << ");\n";
  } else {
    os << "    if (s < kTiles)\n"
       << "      fetch(s, s * " << p.Cin << ");\n";
    if (readsPatch(top))
      os << "    if (s == 0)\n"
         << "      copyPatch(sA, base_n);\n";
  }
  os << "    cuts_cp_async_commit();\n"
     << "  }\n";
  if (earlyOperand(top, staged)) {
    // Its own group, after the prologue's: the loop's waits retire it with
    // the first slices at the latest, which only makes them wait longer.
    emitStagedTilePointer(top.exit.buffer(staged->buffer).type,
                          mmaTiles(top).bytes);
    emitStagedTileCopy(*staged, top.exit.buffer(staged->operand), false, false);
  }
  os << "  int rs = 0, ws = " << ahead << "; // the stages read and written\n"
     << "  for (int kt = 0; kt < kTiles; ++kt) {\n"
     << "    cuts_cp_async_wait<" << ahead - 1 << ">();\n";
  // No proxy fence for wgmma's reads of cp.async's writes: the fence
  // (MEMBAR.ALL.CTA) would also wait for the later stages' copies in flight,
  // undoing the pipeline; CUTLASS's cp.async + GMMA mainloops order them by
  // the barrier alone, as here.
  os << "    __syncthreads(); // slice kt is in; slice kt - " << S - ahead
     << " is done with\n"
     << "    if (kt + " << ahead << " < kTiles)\n"
     << "      fetch(ws, (kt + " << ahead << ") * " << p.Cin << ");\n"
     << "    cuts_cp_async_commit();\n";
  emitSliceLoopEnd();
}

// Warpgroup 0 only copies and the others only compute; per stage, a full
// mbarrier (the producers' 128 copy arrivals) and an empty one (every
// consumer thread, once the products that read the stage are done). The
// producer returns after its copies unless it helps store a staged tile.
void Emitter::emitSpecializedPipeline(bool staged) {
  const TileParams &p = top.params;
  const int64_t S = p.stages, consumers = 128 * top.mma->warpsM;
  const std::string full = "bars + 8 * ",
                    empty = "bars + 8 * (" + std::to_string(S) + " + ";
  os << "  // " << S << " stages, each with a full and an empty mbarrier.\n"
     << "  const cuts_sptr bars = sA + " << mmaTiles(top).stageBytes << ";\n"
     << "  if (tid == 0)\n"
     << "    for (int s = 0; s < " << S << "; ++s) {\n"
     << "      cuts_mbar_init(" << full << "s, 128);\n"
     << "      cuts_mbar_init(" << empty << "s), " << consumers << ");\n"
     << "    }\n"
     << "  __syncthreads();\n"
     << "  if (tid < 128) { // the producer: slice kt into stage kt % " << S
     << " once it is free\n"
     << "    for (int kt = 0; kt < kTiles; ++kt) {\n"
     << "      const int st = kt % " << S << ";\n"
     << "      cuts_mbar_wait(" << empty << "st), (kt / " << S
     << " + 1) & 1);\n"
     << "      fetch(st, kt * " << p.Cin << ");\n"
     << "      cuts_cp_async_mbar_arrive(" << full << "st);\n"
     << "    }\n"
     << (copiersReturn(top) ? "    return;\n" : "") << "  } else {\n"
     << "  for (int kt = 0; kt < kTiles; ++kt) {\n"
     << "    const int rs = kt % " << S << ";\n"
     << "    cuts_mbar_wait(" << full << "rs, (kt / " << S << ") & 1);\n"
     << "    cuts_fence_proxy_async(); // the copies, before wgmma reads "
        "them\n";
  emitWgmmaSlice(1);
  os << "    if (kt > 0) // slice kt - 1's products are done with its stage\n"
     << "      cuts_mbar_arrive(" << empty << "(kt + " << S - 1 << ") % " << S
     << "));\n"
     << "  }\n"
     << "  cuts_wgmma_wait<0>(); // the last slice's products\n";
  emitWgmmaHold("  ");
  os << "  }\n";
}

// One 16-byte load of `width` channels at column iw of the row, widened
// to floats x0, x1, ... (halves: the low one first, as in memory).
void Emitter::emitChannelVectorLoad(const std::string &ind) {
  const dfg::Type t = top.tensors[0].type;
  const int64_t v = top.vec->width;
  const std::string at = "row + (long long)iw * " + std::to_string(top.desc.K);
  if (t == dfg::Type::F32) {
    os << ind << "const float4 u = __ldg(reinterpret_cast<const float4 *>("
       << at << "));\n"
       << ind << "const float x0 = u.x, x1 = u.y, x2 = u.z, x3 = u.w;\n";
    return;
  }
  os << ind << "const uint4 u = __ldg(reinterpret_cast<const uint4 *>(" << at
     << "));\n";
  for (int64_t j = 0; j < v; ++j)
    os << ind << "const float x" << j << " = " << unpack16(t, "u", 4, size_t(j))
       << ";\n";
}

// A channel-vector main loop (ChannelVectorLoop): this thread's channels
// c0 .. c0 + width - 1 of output pixels ow0 .. ow0 + Wt - 1 of row oh. Each
// window row's input columns are loaded once and added to every pixel
// whose window holds them.
void Emitter::emitChannelVectors() {
  using Reduce = ChannelVectorLoop::Reduce;
  const Kernel &k = top;
  const OpDesc &d = k.desc;
  const ChannelVectorLoop &m = *k.vec;
  const int64_t v = m.width, wt = k.params.Wt;
  const bool max = m.reduce == Reduce::Max;
  const bool counted = m.reduce == Reduce::Average;
  const bool depthwise = m.reduce == Reduce::Depthwise;
  os << "  const int c0 = int(base_k) + t_k * " << v << ";\n"
     << "  const long long n = base_n + t_n;\n"
     << "  const int oh = int(base_h) + t_h, ow0 = int(base_w) + t_w * " << wt
     << ";\n";
  for (int64_t w = 0; w < wt; ++w) {
    for (int64_t j = 0; j < v; ++j) {
      const int64_t local[4] = {0, j, 0, w};
      os << "  float " << accName(local) << " = "
         << (max ? num(-INFINITY) : "0.0f") << ";\n";
    }
    if (counted)
      os << "  float inside_" << w << " = 0.0f;\n";
  }
  os << "  if (n < " << d.N << " && oh < " << d.H << " && c0 < " << d.K
     << ") {\n"
     << "#pragma unroll\n"
     << "    for (int r = 0; r < " << d.FH << "; ++r) {\n"
     << "      const int ih = oh * " << d.SH << " - " << d.PH << " + r * "
     << d.DH << ";\n"
     << "      if (unsigned(ih) >= " << d.IH << "u)\n"
     << "        continue;\n"
     << "      const " << typeName(k.tensors[0].type)
     << " *const row = X + ((n * " << d.IH << " + ih) * " << d.IW << "LL) * "
     << d.K << " + c0;\n";
  if (depthwise)
    for (int64_t s = 0; s < d.FW; ++s)
      for (int64_t j = 0; j < v; ++j)
        os << "      const float w" << s << "_" << j << " = "
           << widen(k.tensors[1].type,
                    "Wt[(c0 + " + std::to_string(j) + ") * " +
                        std::to_string(d.FH * d.FW) + " + r * " +
                        std::to_string(d.FW) + " + " + std::to_string(s) + "]")
           << ";\n";
  const int64_t span = (wt - 1) * d.SW + (d.FW - 1) * d.DW + 1;
  for (int64_t q = 0; q < span; ++q) {
    std::vector<std::pair<int64_t, int64_t>> users; // (pixel, window column)
    for (int64_t w = 0; w < wt; ++w)
      for (int64_t s = 0; s < d.FW; ++s)
        if (w * d.SW + s * d.DW == q)
          users.push_back({w, s});
    if (users.empty())
      continue;
    os << "      {\n"
       << "        const int iw = ow0 * " << d.SW << " - " << d.PW << " + " << q
       << ";\n"
       << "        if (unsigned(iw) < " << d.IW << "u) {\n";
    emitChannelVectorLoad("          ");
    for (auto [w, s] : users) {
      for (int64_t j = 0; j < v; ++j) {
        const int64_t local[4] = {0, j, 0, w};
        const std::string a = accName(local), x = "x" + std::to_string(j);
        os << "          " << a << " = "
           << (max         ? "fmaxf(" + a + ", " + x + ")"
               : depthwise ? "fmaf(" + x + ", w" + std::to_string(s) + "_" +
                                 std::to_string(j) + ", " + a + ")"
                           : a + " + " + x)
           << ";\n";
      }
      if (counted)
        os << "          inside_" << w << " += 1.0f;\n";
    }
    os << "        }\n"
       << "      }\n";
  }
  os << "    }\n"
     << "  }\n";
  if (!max && !depthwise)
    for (int64_t w = 0; w < wt; ++w)
      for (int64_t j = 0; j < v; ++j) {
        const int64_t local[4] = {0, j, 0, w};
        os << "  " << accName(local) << " /= "
           << (counted ? "inside_" + std::to_string(w)
                       : num(double(d.FH * d.FW)))
           << ";\n";
      }
  os << "  // Loop exit: epilogue and stores.\n";
  emitGraph(k.exit, "  ");
}

// ldmatrix rows: lanes 0-15 give A's 16 rows at k and lanes 16-31 the same
// rows at k + h, h half the k-step (8 elements: 16 bytes of 16-bit ones, 4
// of tf32's 32-bit words, each of which ldmatrix moves as two halves); B's
// four 8x8 matrices are (n, k), (n, k+h), (n+8, k), (n+8, k+h) when
// transposed, else the trans loads of rows k..k+15.
void Emitter::emitLdmatrixBases() {
  const Kernel &k = top;
  const MmaTiles t = mmaTiles(k);
  const int64_t wm = k.params.Nb / k.mma->warpsM;
  const int64_t wn = k.params.Kb / k.mma->warpsN;
  const int64_t eb = elementBytes(k.mma->operand), h = k.mma->kStep() / 2;
  if (!readsPatch(k)) // else each slice finds its rows in the patch
    os << "  const cuts_sptr a_ld = sA + ((wm * " << wm << " + lane % 16) * "
       << t.lda << " + (lane / 16) * " << h << ") * " << eb << ";\n";
  if (k.desc.transB)
    os << "  const cuts_sptr b_ld = sB + ((wn * " << wn
       << " + lane % 8 + (lane / 16) * 8) * " << t.ldb
       << " + ((lane / 8) % 2) * " << h << ") * " << eb << ";\n";
  else
    os << "  const cuts_sptr b_ld = sB + ((lane % 16) * " << t.ldb << " + wn * "
       << wn << " + (lane / 16) * 8) * " << eb << ";\n";
}

// One slice on mma.sync: per k-step (16 deep, tf32's 8), the warp's A and B
// fragments by ldmatrix (tf32's rounded to nearest, as cuBLAS and CUTLASS
// round, where the tensor core would drop the low 13 bits), then mi x ni
// products.
void Emitter::emitMmaSyncSlice() {
  const Kernel &k = top;
  const MmaLoop &m = *k.mma;
  const MmaTiles t = mmaTiles(k);
  const int64_t eb = elementBytes(m.operand);
  const bool tf32 = m.operand == dfg::Type::F32;
  const char *mma = tf32                           ? "cuts_mma_tf32"
                    : m.operand == dfg::Type::BF16 ? "cuts_mma_bf16"
                                                   : "cuts_mma_f16";
  const std::string MI = std::to_string(m.mi), NI = std::to_string(m.ni);
  // B's step between 8-column tiles j and between the k-steps.
  const std::string bj = std::to_string((k.desc.transB ? 8 * t.ldb : 8) * eb);
  const std::string bk = std::to_string((k.desc.transB ? 1 : t.ldb) * eb);
  const bool patch = readsPatch(k);
  if (!patch)
    os << "    const cuts_sptr At = a_ld + rs * " << t.aElems * eb << ";\n";
  os << "    const cuts_sptr Bt = b_ld + " << bSlot << " * " << t.bElems * eb
     << ";\n"
     << "#pragma unroll\n"
     << "    for (int kk = 0; kk < " << k.params.Cin << "; kk += " << m.kStep()
     << ") {\n"
     << "      unsigned a[" << MI << "][4], b[" << NI << "][2], r[4];\n";
  if (patch) {
    if (k.desc.C % k.params.Cin) // the last slice's k-steps past K
      os << "      if (kt * " << k.params.Cin << " + kk >= " << k.desc.C
         << ")\n"
         << "        break;\n";
    emitPatchRows("      ", "kk");
    os << "#pragma unroll\n"
       << "      for (int i = 0; i < " << MI << "; ++i)\n"
       << "        cuts_ldmatrix_x4(a[i], Ak + a_pix[i]);\n";
  } else {
    os << "#pragma unroll\n"
       << "      for (int i = 0; i < " << MI << "; ++i)\n"
       << "        cuts_ldmatrix_x4(a[i], At + i * " << 16 * t.lda * eb
       << " + kk * " << eb << ");\n";
  }
  os << "#pragma unroll\n"
     << "      for (int j = 0; j < " << NI << "; j += 2) {\n"
     << "        cuts_ldmatrix_x4" << (k.desc.transB ? "" : "_trans")
     << "(r, Bt + j * " << bj << " + kk * " << bk << ");\n"
     << "        b[j][0] = r[0], b[j][1] = r[1];\n"
     << "        b[j + 1][0] = r[2], b[j + 1][1] = r[3];\n"
     << "      }\n";
  if (tf32)
    os << "      cuts_round_tf32(&a[0][0], " << 4 * m.mi << ");\n"
       << "      cuts_round_tf32(&b[0][0], " << 2 * m.ni << ");\n";
  os << "#pragma unroll\n"
     << "      for (int i = 0; i < " << MI << "; ++i)\n"
     << "#pragma unroll\n"
     << "        for (int j = 0; j < " << NI << "; ++j)\n"
     << "          " << mma << "(acc[i][j], a[i], b[j], acc[i][j]);\n"
     << "    }\n";
}

void Emitter::emitZeroAccumulators() {
  os << "#pragma unroll\n"
     << "  for (int i = 0; i < " << top.mma->mi << "; ++i)\n"
     << "#pragma unroll\n"
     << "    for (int j = 0; j < " << top.mma->ni << "; ++j)\n"
     << "#pragma unroll\n"
     << "      for (int e = 0; e < 4; ++e)\n"
     << "        acc[i][j][e] = 0.0f;\n";
}

// Keeps the compiler from moving the accumulators across an asynchronous
// product's issue and wait (CUTLASS's warpgroup_fence_operand).
void Emitter::emitWgmmaHold(const char *ind) {
  const MmaLoop &m = *top.mma;
  os << ind << "#pragma unroll\n"
     << ind << "for (int i = 0; i < " << m.mi << "; ++i)\n"
     << ind << "#pragma unroll\n"
     << ind << "  for (int j = 0; j < " << m.ni << "; ++j)\n"
     << ind << "#pragma unroll\n"
     << ind << "    for (int e = 0; e < 4; ++e)\n"
     << ind << "      cuts_wgmma_hold(acc[i][j][e]);\n";
}

// One slice on wgmma: per 16-deep step, mi products m64 x n(8 ni) x k16
// from the swizzled tiles (the step moves the start 32 bytes along the
// rows; the hardware swizzles the address), then a wait for all but
// `inFlight` commit groups: with one, this slice's products run on while
// the next iteration waits at its barrier and issues its copies, and the
// wait lets the previous slice's stage be refilled after that barrier.
void Emitter::emitWgmmaSlice(int64_t inFlight) {
  const Kernel &k = top;
  const MmaLoop &m = *k.mma;
  const MmaTiles t = mmaTiles(k);
  const int64_t eb = elementBytes(m.operand);
  const int64_t row = k.params.Cin * eb, sbo = 8 * row, sw = mmaSwizzle(k);
  const std::string fn = "cuts_wgmma_m64n" + std::to_string(8 * m.ni) + "k16_" +
                         (m.operand == dfg::Type::BF16 ? "bf16" : "f16");
  const std::string MI = std::to_string(m.mi);
  if (readsPatch(k)) { // its A is no stage: emitPatchSteps
    os << "#error \"a wgmma patch kernel has no slices of A\"\n";
    return;
  }
  os << "    const cuts_sptr At = sA + rs * " << t.aElems * eb << " + wg * "
     << m.mi * 64 * row << ";\n"
     << "    const cuts_sptr Bt = sB + " << bSlot << " * " << t.bElems * eb
     << ";\n";
  emitWgmmaHold("    ");
  os << "    cuts_wgmma_fence();\n"
     << "#pragma unroll\n"
     << "    for (int kk = 0; kk < " << k.params.Cin << "; kk += 16) {\n"
     << "      const cuts_gdesc db = cuts_wgmma_desc(Bt + kk * " << eb << ", "
     << sbo << ", " << sw << ");\n"
     << "#pragma unroll\n"
     << "      for (int i = 0; i < " << MI << "; ++i)\n"
     << "        " << fn << "(&acc[i][0][0], cuts_wgmma_desc(At + i * "
     << 64 * row << " + kk * " << eb << ", " << sbo << ", " << sw << "), db);\n"
     << "    }\n"
     << "    cuts_wgmma_commit();\n"
     << "    cuts_wgmma_wait<" << inFlight << ">();\n";
  emitWgmmaHold("    ");
}

// A wgmma implicit GEMM reading A from its input patch (Kernel::patchA):
// the patch and all of B (a stage a slice) copied at once, one barrier,
// then every k-step with no other (emitPatchSteps).
void Emitter::emitPatchPipeline() {
  const Kernel &k = top;
  const std::string fetchB = prefetchesWeights(k) ? "fetchB" : "fetch";
  // A planar B's gather runs during the patch's copies where no
  // dependence wait comes between them.
  const bool patchFirst = k.desc.planarC && !prefetchesWeights(k);
  if (patchFirst)
    os << "  copyPatch(sA, base_n);\n"
       << "  cuts_cp_async_commit();\n";
  if (k.desc.planarC)
    emitPlanarB();
  else
    os << "  // All of B, slice s in stage s, and the patch; then every "
          "k-step.\n"
       << "  for (int s = 0; s < kTiles; ++s)\n"
       << "    " << fetchB << "(s, s * " << k.params.Cin << ");\n";
  if (prefetchesWeights(k))
    emitDependenceWaits();
  if (!patchFirst)
    os << "  copyPatch(sA, base_n);\n"
       << "  cuts_cp_async_commit();\n";
  os << "  cuts_cp_async_wait<0>();\n"
     << "  __syncthreads();\n";
  emitPatchSteps("sA");
}

// The persistent form of emitPatchPipeline: B copied once, and each tile's
// patch read from one of two buffers while the block's next tile's patch
// loads into the other, so that a tile's copies wait on no one.
void Emitter::emitPersistentPatchPipeline(
    const std::optional<StagedStore> &staged) {
  const Kernel &k = top;
  const int64_t patch = patchOf(k)->bytes;
  os << "  // Launched with " << launchShape(k).blocks << " blocks over "
     << tileCount(k) << " tiles (part of the tuning key).\n"
     << "  constexpr long long kTileCount = " << tileCount(k) << ";\n";
  if (k.desc.planarC) { // the first patch's copies run during B's gather
    os << "  copyPatch(sA, base_n);\n"
       << "  cuts_cp_async_commit();\n";
    emitPlanarB();
  } else {
    os << "  for (int s = 0; s < kTiles; ++s) // all of B, slice s in stage s\n"
       << "    fetch(s, s * " << k.params.Cin << ");\n"
       << "  copyPatch(sA, base_n);\n"
       << "  cuts_cp_async_commit();\n";
  }
  os << "  int pb = 0; // the patch buffer this tile reads\n"
     << "  for (long long tile = blockIdx.x; tile < kTileCount; "
        "tile += gridDim.x) {\n"
     << "  setTile(tile);\n";
  emitZeroAccumulators();
  os << "  cuts_cp_async_wait<0>();\n"
     << "  __syncthreads(); // the tile's patch is in; the last exit is done\n"
     << "  if (tile + gridDim.x < kTileCount) {\n"
     << "    setTile(tile + gridDim.x);\n"
     << "    copyPatch(sA + (pb ^ 1) * " << patch << ", base_n);\n"
     << "    setTile(tile);\n"
     << "  }\n"
     << "  cuts_cp_async_commit();\n";
  emitPatchSteps("sA + pb * " + std::to_string(patch));
  emitMmaExit(staged);
  os << "  pb ^= 1;\n"
     << "  }\n";
}

// Every 16-deep k-step of a wgmma patch kernel, its B resident and A read
// from `patch`: a step's A fragments go by ldmatrix into one of two
// register sets while the step before's products run (waiting for all but
// one group frees the set two steps back). A barrier a slice and a wait
// for each slice's products left the tensor cores a third busy in
// ResNet-50's pooled stem (H200, Nsight Compute).
void Emitter::emitPatchSteps(const std::string &patch) {
  const Kernel &k = top;
  const MmaLoop &m = *k.mma;
  const int64_t eb = elementBytes(m.operand), row = k.params.Cin * eb;
  const int64_t steps = k.params.Cin / 16;
  const std::string MI = std::to_string(m.mi), S = std::to_string(steps);
  os << "  unsigned a[2][" << MI << "][4];\n";
  if (k.desc.planarC)
    os << "  const cuts_sptr pp = " << patch << " + patchShift(base_n);\n";
  os << "#pragma unroll\n"
     << "  for (int kt = 0; kt < kTiles; ++kt) {\n"
     << "    const cuts_sptr Bt = sB + kt * " << mmaTiles(k).bElems * eb
     << ";\n"
     << "#pragma unroll\n"
     << "    for (int s = 0; s < " << S << "; ++s) {\n";
  // The last slice's k-steps past K issue nothing (B is zero there, and A
  // would be other pixels).
  if (gemmK(k.desc) % k.params.Cin)
    os << "      if (kt * " << k.params.Cin << " + s * 16 >= " << gemmK(k.desc)
       << ")\n"
       << "        break;\n";
  os << "      const int buf = (kt * " << S << " + s) % 2;\n";
  if (k.desc.planarC) {
    emitPlanarFragments("      ", "pp");
  } else {
    emitPatchRows("      ", "s * 16", patch);
    os << "#pragma unroll\n"
       << "      for (int i = 0; i < " << MI << "; ++i)\n"
       << "        cuts_ldmatrix_x4(a[buf][i], Ak + a_pix[i]);\n";
  }
  emitRegisterStep("      ", "buf", "Bt + s * " + std::to_string(16 * eb),
                   8 * row);
  os << "    }\n"
     << "  }\n"
     << "  cuts_wgmma_wait<0>(); // the last step's products\n";
  emitWgmmaHold("  ");
}

// A k-step's A fragments from a planar patch: register pairs hold columns
// kx + 2 tq (kx = step + 8 x), pixels s and s + 1 of window row r of
// channel c (kx = (c FH + r) FW + s). FW is 8 or 16, so x and the step fix
// (c, r) and tq moves along the row only (a_pix holds it): every offset
// here is a constant once the steps are unrolled. Columns past planarK
// read row 0 (B is zero there). `patch` is the tile's patch, its shift
// included.
void Emitter::emitPlanarFragments(const std::string &ind,
                                  const std::string &patch) {
  const Kernel &k = top;
  const OpDesc &d = k.desc;
  const Patch q = *patchOf(k);
  const std::string load = q.elementBytes == 2 ? "cuts_lds_b32"
                           : k.mma->operand == dfg::Type::BF16
                               ? "cuts_lds_f32x2_bf16x2"
                               : "cuts_lds_f32x2_f16x2";
  os << ind << "cuts_sptr Ak[2];\n"
     << "#pragma unroll\n"
     << ind << "for (int x = 0; x < 2; ++x) {\n"
     << ind << "  const int kx = kt * " << k.params.Cin
     << " + s * 16 + x * 8, w = kx / " << d.FW << " < " << d.planarC * d.FH
     << " ? kx / " << d.FW << " : 0;\n"
     << ind << "  Ak[x] = " << patch << " + ((w / " << d.FH << " * " << q.rows
     << " + w % " << d.FH << " * " << d.DH << ") * " << q.pitch << " + kx % "
     << d.FW << ") * " << q.elementBytes << ";\n"
     << ind << "}\n"
     << "#pragma unroll\n"
     << ind << "for (int i = 0; i < " << k.mma->mi << "; ++i)\n"
     << "#pragma unroll\n"
     << ind << "  for (int r = 0; r < 4; ++r)\n"
     << ind << "    a[buf][i][r] = " << load
     << "(Ak[r / 2] + a_pix[i][r % 2]);\n";
}

// The semaphore helpers of cuSync's waits and posts.
std::string syncPrelude(Target target) {
  std::string s =
      "// cuSync: semaphores count posts since allocation and are never\n"
      "// reset; run r (the epoch: runs finished) waits for (r + 1) x its\n"
      "// posts (wrap-safe compare).\n";
  if (target == Target::Hip)
    // An agent-scope atomic load sees other CUs' posts (L2); the acquire
    // fence then drops this CU's L1, so the block's plain loads after the
    // barrier read what the producer stored. s_sleep 1 is 64 clocks.
    return s + "__device__ __forceinline__ void cuts_wait(const unsigned *s, "
               "unsigned target) {\n"
               "  while ((int)(__hip_atomic_load(s, __ATOMIC_RELAXED,\n"
               "                                  __HIP_MEMORY_SCOPE_AGENT) -\n"
               "               target) < 0)\n"
               "    __builtin_amdgcn_s_sleep(1);\n"
               "  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"agent\");\n"
               "}\n";
  return s + "// A short fixed sleep: backing off to 1 us found tiles late\n"
             "// (GEMM chains on an H200: 3-4% of the gain lost).\n"
             "__device__ __forceinline__ void cuts_wait(const unsigned *s, "
             "unsigned target) {\n"
             "  while ((int)(*(const volatile unsigned *)s - target) < 0)\n"
             "    __nanosleep(64);\n"
             "}\n";
}

// "((c0 * 4 + c1) * 2 + c3)": semaphore index of coordinates `c` (names)
// over the dimensions p does not merge.
std::string semaphoreExpr(const sync::Policy &p, const sync::TileGrid &g,
                          const std::array<std::string, 4> &c) {
  std::string s;
  for (int d = 0; d < 4; ++d)
    if (!p.merged[d] && g.tiles[d] > 1) {
      const int64_t n = p.stride[d] ? p.stride[d] : g.tiles[d];
      const std::string x =
          p.stride[d] ? "(" + c[d] + ") % " + std::to_string(n) : c[d];
      s = s.empty() ? x : "(" + s + ") * " + std::to_string(n) + " + " + x;
    }
  return s.empty() ? "0" : s;
}

void Emitter::emitWaits() {
  for (size_t i = 0; i < top.waits.size(); ++i) {
    const TileWait &w = top.waits[i];
    const sync::TileGrid &g = w.dep.producer;
    os << "  // cuSync (" << w.policy.name << "): wait for the tiles of "
       << top.tensors[w.tensor].name << " this block reads, a semaphore a\n"
       << "  // thread (their latencies overlap), then the block's barrier.\n"
       << "  {\n"
       << "    const unsigned target = (cuts_epoch[0] + 1u) * "
       << w.policy.postsPerSemaphore(g) << "u;\n";
    // The range of producer tiles along each dimension: lo_d and n_d.
    std::array<std::string, 4> coord;
    std::string count;
    for (int d = 0; d < 4; ++d) {
      const sync::DimRead &r = w.dep.read[d];
      if (w.policy.merged[d] || g.tiles[d] == 1)
        continue;
      const std::string v = std::string("p") + kDimLetter[d];
      const std::string ext = std::to_string(g.extent[d]);
      const std::string last = std::to_string(g.tiles[d] - 1);
      coord[d] = v;
      if (r.all) {
        os << "    const long long lo_" << v << " = 0, n_" << v << " = "
           << (w.policy.stride[d] ? w.policy.stride[d] : g.tiles[d]) << ";\n";
        continue;
      }
      // Global positions [s, s + span) of the producer's axis, clipped to
      // the tensor [a, e); its tiles from a / extent to (e - 1) / extent.
      std::string start = std::to_string(r.add);
      if (r.consumerDim >= 0)
        start = "base_" + std::string(1, kDimLetter[r.consumerDim]) + " / " +
                std::to_string(w.dep.consumer.extent[r.consumerDim]) + " * " +
                std::to_string(r.mul) + " + " + start;
      const std::string s0 = "s_" + v, a = "a_" + v, e = "e_" + v;
      os << "    const long long " << s0 << " = " << start << ";\n"
         << "    const long long " << a << " = " << s0 << " < 0 ? 0 : " << s0
         << ", " << e << " = " << s0 << " + " << r.span << " < "
         << r.globalExtent << " ? " << s0 << " + " << r.span << " : "
         << r.globalExtent << ";\n"
         << "    const long long lo_" << v << " = " << a << " / " << ext
         << ", hi_" << v << " = (" << e << " - 1) / " << ext << " < " << last
         << " ? (" << e << " - 1) / " << ext << " : " << last << ";\n"
         << "    const long long n_" << v << " = " << a << " < " << e
         << " ? hi_" << v << " - lo_" << v << " + 1 : 0;\n";
      if (const int64_t st = w.policy.stride[d]) {
        // StridedSync: the range's residues, all of them where it wraps.
        const std::string S = std::to_string(st);
        os << "    const bool w_" << v << " = n_" << v << " >= " << S
           << " || lo_" << v << " % " << S << " + n_" << v << " > " << S
           << ";\n"
           << "    const long long lo_" << v << "s = w_" << v << " ? 0 : lo_"
           << v << " % " << S << ", n_" << v << "s = n_" << v
           << " == 0 ? 0 : w_" << v << " ? " << S << " : n_" << v << ";\n";
        coord[d] = v + "s";
      }
    }
    for (const std::string &c : coord)
      if (!c.empty())
        count += (count.empty() ? "" : " * ") + ("n_" + c);
    // Thread t waits for the box's semaphores t, t + kThreads, ...
    os << "    for (long long i = tid; i < " << (count.empty() ? "1" : count)
       << "; i += kThreads) {\n";
    std::string rest = "i";
    for (int d = 3; d >= 0; --d)
      if (!coord[d].empty()) {
        os << "      const long long " << coord[d] << " = lo_" << coord[d]
           << " + " << rest << " % n_" << coord[d] << ";\n";
        rest = "(" + rest + " / n_" + coord[d] + ")";
      }
    os << "      cuts_wait(&cuts_ready" << i << "["
       << semaphoreExpr(w.policy, g, coord) << "], target);\n"
       << "      __threadfence();\n"
       << "    }\n"
       << "  }\n"
       << "  __syncthreads();\n";
  }
}

// PTX's griddepcontrol.`op` ("wait", "launch_dependents"), on sm_90 and
// later; elsewhere nothing.
std::string griddepcontrol(const char *op) {
  return std::string(
             "#if __CUDA_ARCH__ >= 900\n  asm volatile(\"griddepcontrol.") +
         op + ";\" ::: \"memory\");\n#endif\n";
}

// Before anything another kernel writes is read: the previous kernel's
// completion (PDL) and this block's producer tiles (cuSync). A dependent
// launched at the start of our blocks packed its blocks onto the SMs ours
// left free (18-65% slower at batch 1 on an H200); so the trigger is early
// only where both grids fit the SMs side by side
// (Kernel::launchesDependentEarly), else at our blocks' exit.
//
// A cuSync pair may run over PDL (rt::Step::overPdl): the consumer, the
// producer's programmatic dependent, launches once every producer block has
// passed its own griddepcontrol.wait, so all kernels before the producer
// are done, and no consumer block can take an SM before a producer block
// (what the wait kernel ensures on two streams). The consumer then waits
// for its producer tiles alone, and for the producer's end only as it
// exits; on two streams, after the wait kernel, griddepcontrol.wait
// returns at once.
void Emitter::emitDependenceWaits() {
  if (target == Target::Cuda && top.waits.empty())
    os << "  // Programmatic dependent launch (sm_90): nothing the previous "
          "kernel\n"
       << "  // writes is read before it has finished.\n"
       << griddepcontrol("wait");
  if (target == Target::Cuda && (top.post || top.launchesDependentEarly))
    os << griddepcontrol("launch_dependents");
  emitWaits();
}

void Emitter::emitPost() {
  if (!top.post)
    return;
  const sync::TileGrid &g = top.post->grid;
  std::array<std::string, 4> coord;
  for (int d = 0; d < 4; ++d)
    coord[d] = "base_" + std::string(1, kDimLetter[d]) + " / " +
               std::to_string(g.extent[d]);
  os << "  // cuSync (" << top.post->policy.name
     << "): the tile's stores reach global memory before its semaphore\n"
     << "  // counts it.\n";
  // Where the copying warpgroup has returned, the consumers meet at a named
  // barrier of their own (the host's barrier counts the threads still
  // running).
  const bool consumersOnly = copiersReturn(top);
  if (consumersOnly)
    os << "#if defined(__CUDA_ARCH__)\n"
       << "  asm volatile(\"bar.sync 1, " << top.params.threads() - 128
       << ";\" ::: \"memory\");\n"
       << "#else\n"
       << "  __syncthreads();\n"
       << "#endif\n";
  else
    os << "  __syncthreads();\n";
  os << "  if (tid == " << (consumersOnly ? 128 : 0) << ") {\n"
     << "    __threadfence();\n"
     << "    atomicAdd(&cuts_posted["
     << semaphoreExpr(top.post->policy, g, coord) << "], 1u);\n"
     << "  }\n";
}

// base_w, base_h, base_k, base_n of tile `block` (which it divides away),
// declared constant or assigned.
void Emitter::emitTileBases(const std::string &ind, bool declare) {
  const TileParams &p = top.params;
  const std::array<int64_t, 4> dims = gridExtents(top.desc);
  const int64_t blockExt[4] = {p.Nb, p.Kb, p.Hb, p.Wb};
  const sync::TileOrder order =
      top.post && top.post->order ? *top.post->order : sync::TileOrder{};
  for (int d : order.fastest) {
    int64_t tiles = (dims[d] + blockExt[d] - 1) / blockExt[d];
    os << ind << (declare ? "const long long " : "") << "base_" << kDimLetter[d]
       << " = (block % " << tiles << ") * " << blockExt[d] << ";\n"
       << ind << "block /= " << tiles << ";\n";
  }
}

std::string Emitter::run() {
  const TileParams &p = top.params;
  int64_t threads = p.threads();
  int64_t cnt[4] = {p.Nb / p.Nt, p.Kb / p.Kt, p.Hb / p.Ht, p.Wb / p.Wt};
  os << "// " << top.name << ": " << top.summary << "\n// " << paramsText(p)
     << ", " << threads << " threads";
  if (persistentLoop(top))
    os << ", persistent: " << launchShape(top).blocks << " blocks over "
       << tileCount(top) << " tiles";
  if (splitsK(top))
    os << ", split-K: " << top.splitK << " parts of " << sliceCount(top)
       << " slices";
  if (top.pul > 0)
    os << ", PUL " << top.pul;
  if (top.producer) {
    os << "\n// phase 1: " << paramsText(top.producer->params);
  }
  if (top.chain)
    os << "\n// chained: " << paramsText(top.chain->params);
  os << "\n// generated by cuts; do not edit\n";
  if (target == Target::Hip)
    os << "#include <hip/hip_runtime.h>\n";
  // The producer's tensors are among the kernel's (Kernel::producer).
  const bool half = std::any_of(
      top.tensors.begin(), top.tensors.end(), [](const TensorArg &t) {
        return t.type == dfg::Type::F16 || t.type == dfg::Type::BF16;
      });
  if ((top.mma || half) && target == Target::Hip)
    os << "#error \"fp16, bf16 and tensor-core kernels are generated for CUDA "
          "only\"\n";
  if (top.mma || half)
    os << tensorCorePrelude();
  if (top.post || !top.waits.empty())
    os << syncPrelude(target);
  if (top.mma && top.mma->instr == MatrixInstr::Wgmma)
    os << wgmmaPrelude()
       << (readsPatch(top) ? wgmmaRegisterFunction : wgmmaFunction)(
              int(8 * top.mma->ni), top.mma->operand == dfg::Type::BF16);
  if (top.chain && top.chain->mma->wgmma()) // its A from registers
    os << wgmmaRegisterFunction(int(8 * top.chain->mma->ni),
                                top.chain->mma->operand == dfg::Type::BF16);
  os << "\n"
     << "extern \"C\" __global__ void __launch_bounds__(" << threads;
  if (persistentLoop(top) && top.blocksPerSM > 1)
    os << ", " << top.blocksPerSM;
  os << ")\n" << top.name << "(";
  const auto params = kernelParams(top);
  for (size_t i = 0; i < params.size(); ++i)
    os << (i ? ", " : "") << params[i].second << " " << params[i].first;
  os << ") {\n"
     << "  constexpr int kThreads = " << threads << ";\n";
  emitThreadCoordinates(cnt);
  if (persistentLoop(top)) {
    os << "  // The first output of tile `block` along each dimension: this\n"
       << "  // block's tiles are blockIdx.x, then every gridDim.x-th.\n"
       << "  long long base_w, base_h, base_k, base_n;\n"
       << "  auto setTile = [&](long long block) {\n";
    emitTileBases("    ", false);
    os << "  };\n"
       << "  setTile(block);\n";
  } else {
    emitTileBases("  ", true);
  }
  if (splitsK(top))
    os << "  // Split-K: the block sums part `block` of K's slices.\n"
       << "  const int cuts_part = int(block);\n"
       << "  const int cuts_k_begin = cuts_part * "
       << sliceCount(top) * top.params.Cin << ";\n";
  os << "  (void)t_w; (void)t_h; (void)t_k; (void)t_n;\n";
  if (top.post) // see syncWaitKernel
    os << "  // cuSync: the producer has started.\n"
       << "  if (blockIdx.x == 0 && tid == 0)\n"
       << "    atomicAdd(cuts_started, 1u);\n";
  if (!prefetchesWeights(top))
    emitDependenceWaits();
  // Shared tiles live in dynamic shared memory: a block may use more than
  // the 48 KB static limit (up to the GPU's opt-in maximum). The
  // prefetching variant keeps two stages of them.
  if (launchShape(top).sharedBytes > 0)
    os << "  extern __shared__ __align__("
       << (top.mma && top.mma->instr == MatrixInstr::Wgmma ? 1024 : 16)
       << ") float cuts_smem[];\n";
  setPhase(top, "t_", "base_");
  if (top.mma) {
    emitMma();
  } else if (top.vec) {
    emitChannelVectors();
  } else if (!top.producer) {
    emitPhase("  ", threads, top.prefetch, false);
  } else {
    // The consumer's tiles first: the producer stores into one of them.
    declareTiles("  ", "");
    emitProducer();
    setPhase(top, "t_", "base_");
    ph.skipFetch = top.producedFetch;
    emitPhase("  ", threads, false, true);
  }
  emitPost();
  if (target == Target::Cuda && !top.waits.empty())
    // Over PDL the consumer is done only once its producer is: a kernel
    // after it then never meets a producer tile no consumer tile waited
    // for, nor a producer still reading what it overwrites.
    os << griddepcontrol("wait");
  os << "}\n";
  return os.str();
}

} // namespace

std::string emitSource(const Kernel &kernel, Target target) {
  return Emitter(kernel, target).run();
}

std::string syncWaitKernel(Target target) {
  return std::string(target == Target::Hip ? "#include <hip/hip_runtime.h>\n"
                                           : "") +
         syncPrelude(target) +
         "\nextern \"C\" __global__ void cuts_sync_wait(const unsigned "
         "*started, const unsigned *cuts_epoch) {\n"
         "  cuts_wait(started, cuts_epoch[0] + 1u);\n"
         "}\n";
}

std::string syncEpochKernel(Target target) {
  return std::string(target == Target::Hip ? "#include <hip/hip_runtime.h>\n"
                                           : "") +
         "extern \"C\" __global__ void cuts_sync_epoch(unsigned "
         "*cuts_epoch) {\n"
         "  cuts_epoch[0] += 1u;\n"
         "}\n";
}

bool keepsB(const Kernel &k) { return residentB(k); }

bool stagesOutput(const Kernel &k) {
  return k.mma && !k.mma->warpSpecialized && stagedStore(k).has_value();
}

bool poolsStagedTile(const Kernel &k) {
  const std::optional<StagedStore> s = k.mma ? stagedStore(k) : std::nullopt;
  return s && s->operand < 0 && !persistentLoop(k);
}

bool prefetchesOperand(const Kernel &k) {
  return prefetchable(k, stagedStore(k));
}

bool patchable(const Kernel &k, int64_t limit) {
  Kernel with = k;
  with.patchA = true;
  return patchOf(with) && launchShape(with).sharedBytes <= limit;
}

bool canSplitK(const Kernel &k, int64_t parts) {
  // A prefetched residual's copies would still be in flight when the
  // blocks that are not last return.
  if (!k.mma || parts < 2 || persistentLoop(k) || k.patchA || k.pooled ||
      k.chain || k.producer || k.post || !k.waits.empty() || k.desc.im2col ||
      k.desc.planarC || k.prefetch)
    return false;
  const int64_t slices = gemmSlices(k);
  return slices % parts == 0 && slices / parts >= 2;
}

SplitKWorkspace splitKWorkspace(const Kernel &k) {
  if (!splitsK(k))
    return {};
  return {k.splitK * tileCount(k) * k.params.Nb * k.params.Kb, tileCount(k)};
}

LaunchShape launchShape(const Kernel &k) {
  // The prefetching variant doubles the tiles of the looped phase: the
  // producer's where there is one (the consumer then runs one iteration).
  int64_t stages = k.prefetch ? 2 : 1;
  int64_t bytes = k.mma ? mmaSharedBytes(k) : 0;
  if (k.mma && k.chain)
    bytes = chainOffset(k) + chainBBytes(k) +
            (persistentLoop(k) ? chainTileBytes(k) : 0);
  int64_t floats = k.producer
                       ? sharedFloats(k) + sharedFloats(*k.producer) * stages
                       : sharedFloats(k) * stages;
  int64_t blocks = tileCount(k) * (splitsK(k) ? k.splitK : 1);
  if (persistentLoop(k))
    blocks = std::min(blocks, k.persistentBlocks);
  return {blocks, k.params.threads(),
          k.mma ? bytes : floats * int64_t(sizeof(float))};
}

} // namespace cuts::codegen

//===- Kernel.h - a kernel as the emitters see it ---------------*- C++ -*-===//
//
// What an op family (codegen/ops) hands the emitters (codegen/emit): the
// global tensors, the cooperative fetches of each loop iteration (global ->
// shared tile in FORMAT_shared), the loop-body DFG (compute phase), the
// loop-exit DFG (epilogue and global stores), and the tile parameters.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_OPS_KERNEL_H
#define CUTS_CODEGEN_OPS_KERNEL_H

#include "codegen/dfg/Dfg.h"
#include "codegen/sync/Policy.h"
#include "perfmodel/Roofline.h"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cuts::codegen {

struct TensorArg {
  std::string name;
  std::vector<int64_t> shape; // row-major in global memory
  bool output = false;
  dfg::Type type = dfg::Type::F32;
};

/// Bytes of one element of type t in global memory.
inline int64_t elementBytes(dfg::Type t) {
  switch (t) {
  case dfg::Type::I64:
    return 8;
  case dfg::Type::Bool:
    return 1;
  case dfg::Type::F16:
  case dfg::Type::BF16:
    return 2;
  default:
    return 4;
  }
}

/// One axis of a tile fetch: the tile's local index r along this axis reads
/// the global position base + offset + r, where base is the block's first
/// output along `outDim` times `scale` (or the reduction loop's c0, or 0).
/// Positions outside [0, globalExtent) read 0 (padding and ragged edges).
struct FetchDim {
  int64_t extent = 1;      // tile extent
  int outDim = dfg::NoDim; // follows the block along this output dim
  int64_t scale = 1;       // e.g. the stride of a convolution
  int64_t offset = 0;      // e.g. minus the begin padding
  bool fromLoop = false;   // follows the C_input loop instead
  int64_t globalExtent = 1;
  int64_t globalStride = 1; // element stride in the global tensor
  int64_t sharedStride = 1; // element stride in the shared tile
  /// A grouped convolution's input channels (> 0): the block's outputs
  /// from base_k on lie in group base_k / groupK, whose groupC input
  /// channels start at that times groupC.
  int64_t groupK = 0, groupC = 0;
};

inline FetchDim fetchDim(int64_t extent, int outDim, int64_t scale,
                         int64_t offset, bool fromLoop, int64_t globalExtent,
                         int64_t globalStride, int64_t sharedStride) {
  FetchDim d;
  d.extent = extent, d.outDim = outDim, d.scale = scale, d.offset = offset;
  d.fromLoop = fromLoop, d.globalExtent = globalExtent;
  d.globalStride = globalStride, d.sharedStride = sharedStride;
  return d;
}

/// One iteration's cooperative copy of a global tile into a shared buffer;
/// the last axis varies fastest across threads, so when it is the global
/// tensor's innermost axis the reads coalesce.
struct Fetch {
  int tensor = 0; // index into Kernel::tensors (-1: none, see Kernel::producer)
  int buffer = 0; // shared buffer in the body graph
  std::vector<FetchDim> dims;
  double outside = 0; // what positions outside the tensor read
  bool mask = false;  // write 1 inside the tensor instead of its values
};

/// One axis of a tensor the exit reads or writes, as a digit of axis `axis`
/// of buildExit's output: position (p / div) % mod (mod 0: no remainder).
/// A batched matmul's output merges its batch axes into one; a tensor that
/// broadcasts along some of them, or a transposed store, reads them apart.
struct OutputDigit {
  int axis = 0;
  int64_t div = 1, mod = 0;
  bool digit() const { return div != 1 || mod != 0; }
};

/// An elementwise op fused after the anchor at the register level (thesis
/// Fig. 3.4(c)): op(value[, operand]). The operand, if any, is a global
/// tensor: a scalar (shape [1]), a per-channel vector (shape [extent along
/// K], e.g. a bias), a tensor of the output's shape (e.g. a residual), or
/// one whose axes are `digits` of the output's.
struct EpilogueOp {
  dfg::Op op;
  double value = 0, value2 = 0;
  std::string operand; // empty: a unary op
  std::vector<int64_t> operandShape;
  std::vector<OutputDigit> digits; // per operand axis; empty: by shape

  static EpilogueOp unary(dfg::Op op, double value = 0, double value2 = 0) {
    return {op, value, value2, "", {}, {}};
  }
  static EpilogueOp binary(dfg::Op op, std::string operand,
                           std::vector<int64_t> shape,
                           std::vector<OutputDigit> digits = {}) {
    return {op, 0, 0, std::move(operand), std::move(shape), std::move(digits)};
  }
};

/// A tensor-core main loop (buildMmaMatMul) instead of the body DFG, K in
/// slices of params.Cin through `stages` shared buffers that cp.async
/// fills: the view of TileParams' tensor-core knobs (mmaLoopOf) the emitter
/// reads. With mma.sync, a block's Nb x Kb outputs are warpsM x warpsN
/// warps', each `mi` x `ni` tiles of 16 x 8 (m16n8k16 for fp16 and bf16
/// operands, m16n8k8 for tf32). With wgmma (sm_90a), warpsM warpgroups of 4
/// warps stack along M, each issuing `mi` m64 x n(8 ni) x k16 products
/// (warpsN = 1). The exit DFG's thread tile (params.Nt x Kt = 2 mi x 2 ni)
/// is a lane's accumulator fragment: rows 8 apart within a tile and
/// rowStep() between tiles, columns 1 apart within a pair and 8 between
/// pairs (fragmentOffset).
struct MmaLoop {
  MatrixInstr instr = MatrixInstr::MmaSync;
  dfg::Type operand = dfg::Type::F16; // F16, BF16, or F32 computed as tf32
  int64_t warpsM = 2, warpsN = 2, mi = 2, ni = 4;
  int64_t stages = 3;
  bool warpSpecialized = false; // TileParams::warpSpecialized
  bool wgmma() const { return instr == MatrixInstr::Wgmma; }
  /// The product's k-step: 16 (fp16, bf16) or 8 (tf32).
  int64_t kStep() const { return operand == dfg::Type::F32 ? 8 : 16; }
  /// Rows between a warp's consecutive tiles: a warp's tiles are adjacent
  /// with mma.sync; with wgmma each m64 tile gives a warp 16 of its rows.
  int64_t rowStep() const { return wgmma() ? 64 : 16; }
  /// The block's rows and columns.
  int64_t blockRows() const { return (wgmma() ? 64 : 16) * warpsM * mi; }
  int64_t blockCols() const { return 8 * warpsN * ni; }
  int64_t threads() const {
    return wgmma() ? 128 * (warpsM + warpSpecialized) : 32 * warpsM * warpsN;
  }
  /// The threads that copy slices: the producer warpgroup (threads 0-127)
  /// of a warp-specialised loop, else all.
  int64_t copyThreads() const { return warpSpecialized ? 128 : threads(); }
};

/// A tensor-core operand read in place from `shape` (slices and transposes
/// of it that keep the innermost axis whole and innermost): product b of the
/// batch sits at offset + sum_i (b's index along batchExtents[i]) x
/// batchStrides[i], row r at r x rowStride, columns contiguous.
struct MmaView {
  std::vector<int64_t> shape;
  std::vector<int64_t> batchExtents, batchStrides; // outermost first
  int64_t rowStride = 0;
  int64_t offset = 0;
};

/// The loop of tensor-core parameters p (p.tensorCore()) on operands of
/// type `operand`.
inline MmaLoop mmaLoopOf(const TileParams &p, dfg::Type operand) {
  MmaLoop m;
  m.instr = p.instr, m.operand = operand;
  m.warpsM = p.warpsM, m.warpsN = p.warpsN;
  m.mi = p.Nt / 2, m.ni = p.Kt / 2, m.stages = p.stages;
  m.warpSpecialized = p.warpSpecialized;
  return m;
}

/// The elements one cp.async of a tensor-core loop on `operand` moves: 16
/// bytes, or 8 for a stem's 4-channel pixels (OpDesc::copyElements; the
/// operand's type, not d's, for a plain product).
inline int64_t mmaCopyElements(const OpDesc &d, dfg::Type operand) {
  return d.im2col ? d.copyElements() : 16 / elementBytes(operand);
}

/// The tensor-core parameters of loop m with C_input `cin` (mmaLoopOf's
/// inverse).
inline TileParams mmaParams(const MmaLoop &m, int64_t cin) {
  TileParams p;
  p.Nb = m.blockRows(), p.Kb = m.blockCols();
  p.Nt = 2 * m.mi, p.Kt = 2 * m.ni, p.Cin = cin;
  p.instr = m.instr, p.warpsM = m.warpsM, p.warpsN = m.warpsN;
  p.stages = m.stages;
  p.warpSpecialized = m.warpSpecialized;
  return p;
}

/// The offset of a lane's fragment element `i` (its exit-DFG position)
/// from the lane's first along dimension N (rows) or K (columns).
inline int64_t fragmentOffset(const MmaLoop &m, int dim, int64_t i) {
  return dim == dfg::DimN ? m.rowStep() * (i / 2) + 8 * (i % 2)
                          : 8 * (i / 2) + i % 2;
}

/// A channels-last depthwise conv or pooling as channel vectors
/// (OpDesc::channelVector): a thread reads `width` channels of a pixel as
/// one 16-byte load straight from global memory and reduces them over the
/// windows of its Wt output pixels along W (each input column once), in
/// registers; no shared tile. The exit DFG takes the accumulators
/// (0, c, 0, w) of its Kt = width x Wt tile.
struct ChannelVectorLoop {
  enum class Reduce { Max, Average, AverageWithPad, Depthwise };
  Reduce reduce = Reduce::Max;
  int64_t width = 8;
};

/// Thread-tile positions swept by loops rather than unrolled, which keeps
/// the source bounded: the body and exit DFGs cover positions [0, span[d])
/// along each output dimension d, and the emitter runs them in nested loops
/// over lv_n, lv_k, lv_h, lv_w (those of count[d] > 1; `#pragma unroll`,
/// the same code once nvcc unrolls them), shifting positions along d by
/// lv_d x span[d]; each accumulator is an array over the loops.
struct PositionLoop {
  int64_t span[4] = {1, 1, 1, 1}, count[4] = {1, 1, 1, 1};
  int64_t iterations() const {
    return count[0] * count[1] * count[2] * count[3];
  }
  bool active() const { return iterations() > 1; }
};

/// cuSync (codegen/sync): once its stores are done, a producer's tile posts
/// to its semaphore under `policy`.
struct TilePost {
  sync::TileGrid grid;
  sync::Policy policy;
  /// T: the order its tiles run in where not blockIdx's (a slot counter
  /// "cuts_next" hands each starting block its tile).
  std::optional<sync::TileOrder> order;
};

/// A consumer's wait, before its first fetch, for the producer tiles of
/// tensor `tensor` (an index into Kernel::tensors) that its block reads.
struct TileWait {
  int tensor = -1;
  sync::Dependence dep;
  sync::Policy policy;
};

/// A pooling fused after an implicit GEMM's exit (fusePooled, the
/// tensor-core form of a conv -> pooling pair at the shared-memory level):
/// each block computes `box`'s conv output pixels (its first boxH x boxW
/// rows; the others read nothing and are not pooled) and pools them from
/// its staged tile. Block b is tile (b / tilesW % tilesH, b % tilesW) of
/// image b / (tilesH x tilesW).
struct PooledExit {
  OpDesc pool; // its window, output H x W and input (the conv's) IH x IW
  PoolBox box;
  /// An average pooling (unpadded, its windows inside the image: every one
  /// FH x FW pixels) rather than a max.
  bool average = false;
};

struct Kernel {
  std::string name;
  std::string summary; // ops and parameters, for the header comment
  OpDesc desc;
  TileParams params;
  std::vector<TensorArg> tensors;
  std::vector<Fetch> fetches;
  int64_t loopExtent = 0; // the reduction extent C iterated in C_input steps
  dfg::Graph body;        // one iteration's compute (shared -> registers)
  /// When > 0, `body` covers only channels [0, bodyStep) of the C_input
  /// slice and runs in a loop over the slice in bodyStep steps, shifting the
  /// buffer dimensions marked DimMap::inner (see planBody).
  int64_t bodyStep = 0;
  /// When > 0, `body` covers only filter rows [0, tapStep) of one channel
  /// and runs in a loop over all `taps` rows in tapStep steps (inside the
  /// channel loop), shifting the dimensions with a DimMap::tap.
  int64_t tapStep = 0, taps = 0;
  PositionLoop positions; // of the body and the exit
  dfg::Graph exit;        // after the loop (registers -> global)
  /// Register accumulators the body carries across iterations, and their
  /// initial value (0 for sums, -inf for a max).
  std::vector<std::string> accumulators;
  double accumulatorInit = 0;
  /// Emit the prefetching (double-buffered) variant of the loop (§3.4.1);
  /// tuning picks the faster of the two. With a producer, its loop's. A
  /// tensor-core loop's instead copies its residual in at the start
  /// (prefetchesOperand).
  bool prefetch = false;
  /// A multistage tensor-core loop run by this many blocks, each looping
  /// over the tiles blockIdx.x + i gridDim.x, its pipeline running on from
  /// one tile's last slice into the next one's first: the next tile's
  /// copies fly during this one's exit (a short-K GEMM's epilogue would
  /// otherwise leave the copies idle). 0: a block a tile.
  int64_t persistentBlocks = 0;
  /// Split-K: a plain multistage tensor-core product whose tiles are too few
  /// to fill the GPU, its K slices in this many parts, a block each (grid
  /// tiles x splitK; block b sums part b / tiles of tile b % tiles). Each
  /// block writes its partial sums to `cuts_partials` (fp32, a tile's
  /// Nb x Kb a part) and counts itself in `cuts_arrived` (a word a tile,
  /// zero before a run and after it); the tile's last block to arrive sums
  /// the parts in part order, the same sums whichever arrives last, and runs
  /// the epilogue. One kernel, where the graph's split (cuts-split-k) adds a
  /// second for the sum. 0 or 1: K whole.
  int64_t splitK = 0;
  /// The blocks an SM that count assumes (> 1: the launch bounds' minimum,
  /// so that ptxas keeps the registers to it rather than leaving the
  /// blocks past one an SM to a second wave).
  int64_t blocksPerSM = 0;
  /// A persistent loop whose tiles all read the same B (a conv's weights,
  /// the block spanning every output channel) keeps B in shared memory, a
  /// buffer a slice, copied with the first tile only.
  bool residentB = false;
  double pul = 0;
  /// Shared-memory-level fusion (§3.3.2, Fig. 3.4(d)): a first phase that
  /// computes, in every block, the tile that fetch `producedFetch` would read
  /// from global memory and stores it straight into that fetch's shared
  /// buffer; a barrier; then this kernel's own loop without that fetch. The
  /// producer's tensors (its output excepted) are among this kernel's.
  std::shared_ptr<const Kernel> producer;
  int producedFetch = -1;
  /// PDL: each block lets the next kernel, its programmatic dependent,
  /// launch once past its own griddepcontrol.wait, not at its exit: where
  /// both grids fit the SMs side by side (the driver's rule), the
  /// dependent's blocks wait on SMs this kernel leaves idle.
  bool launchesDependentEarly = false;
  /// Tile synchronisation with the kernels before and after (cuSync).
  std::optional<TilePost> post;
  std::vector<TileWait> waits;
  bool waitsFor(int tensor) const {
    for (const TileWait &w : waits)
      if (w.tensor == tensor)
        return true;
    return false;
  }
  /// A tensor-core main loop (then `body` and `fetches` are empty).
  std::optional<MmaLoop> mma;
  /// Its operands A and B read in place from a tensor they are a
  /// row-preserving transpose of (MmaView); dense where absent.
  std::array<std::optional<MmaView>, 2> mmaViews;
  /// B is a weight, which no kernel writes: a multistage loop copies its
  /// first slices before waiting for the previous kernel (PDL, cuSync).
  bool weightB = false;
  /// A channel-vector main loop (then `body` and `fetches` are empty).
  std::optional<ChannelVectorLoop> vec;
  /// A chained product (fuseChained): an mma.sync product whose A is this
  /// kernel's output tile, read from the staged tile after this kernel's
  /// exit has stored it (the block spans every output column), its B
  /// resident in shared memory from the first slice on; in a persistent
  /// loop, after each tile's exit. Its tensors (A excepted) are among this
  /// kernel's.
  std::shared_ptr<const Kernel> chain;
  /// Whether this kernel's output leaves the chip: with a chain that alone
  /// reads it, it stays in the staged tile.
  bool storesOutput = true;
  /// A pooling of the staged tile stored in place of the output.
  std::optional<PooledExit> pooled;
  /// A pooled implicit GEMM reading A from a patch of its input in shared
  /// memory (the pixels under its box's windows, copied once) rather than
  /// im2col slices: each input pixel crosses L2 once a block instead of
  /// once for each window position over it. With wgmma, A's fragments go
  /// from the patch to registers (ldmatrix), the products read them there.
  bool patchA = false;
};

/// The most rounds of thread tiles a shared-memory-level producer is
/// emitted with as copies in the source; past this, a producer of one
/// C_input slice loops over its rounds at run time (its source and NVRTC
/// time grow with each copy).
constexpr int64_t kMaxUnrolledRounds = 4;

/// The most floats a thread stages in registers for one iteration's fetch
/// (every fetch's rounds together). Up to this, the loop's fetch issues all
/// its global loads before its first shared store, so their latencies
/// overlap; a fetch loop storing as it loads had nvcc wait for each group
/// of four loads in turn (SASS of a BERT projection on sm_90). Past it the
/// registers would cost occupancy: the loop stores as it loads.
constexpr int64_t kMaxStagedFetch = 16;
static_assert(kMaxStagedFetch == kStagedFetchLimit,
              "the performance model prices the fetch this generator emits");

/// The most FMAs a body DFG is emitted with, which bounds the source NVRTC
/// compiles (about 100 bytes an FMA with its loads). A chunk still runs up
/// to kMaxUnrolledFma: the DFG's, repeated by its PositionLoop.
constexpr int64_t kMaxBodyDfgFma = 256;

/// Plans k's body over its shared `tiles`: where the whole slice's DFG
/// (`fmaPerPosition` FMAs a channel for each of the thread's positions)
/// passes kMaxBodyDfgFma, a PositionLoop whose span along a dimension keeps
/// a vector access whole in the DFG: 4 where a tile's unit axis runs along
/// it (a 128-bit shared load), 4 or 2 along `outUnit`, the output's unit
/// dimension (its stores), else 1. Returns the channels of one body chunk:
/// the largest divisor of `channels` whose DFG keeps to kMaxBodyDfgFma and
/// whose chunk keeps to kMaxUnrolledFma, at least 1; a smaller chunk than
/// `channels` is also set as k.bodyStep (the body loops over the slice).
/// Where one channel's DFG still passes kMaxBodyDfgFma, its `taps` filter
/// rows (each fmaPerPosition / taps FMAs) loop too: k.tapStep rows, the
/// largest divisor of `taps` that keeps the DFG to kMaxBodyDfgFma.
int64_t planBody(Kernel &k, const std::vector<const dfg::Buffer *> &tiles,
                 int outUnit, int64_t channels, int64_t fmaPerPosition,
                 int64_t taps = 1);

/// Strides of a 2-D shared tile (a matmul operand, a reduction's rows):
/// rows follow `rowLetter` of the FORMAT_shared order, columns `colLetter`;
/// the inner extent is padded by paddedPitch (`rowRun`, `colRun`: the
/// elements a thread reads consecutively along each axis), which the
/// performance model prices the fetch by too.
std::vector<int64_t> tileStrides(const SharedFormat &f, char rowLetter,
                                 char colLetter, int64_t rows, int64_t cols,
                                 int64_t rowRun, int64_t colRun);

/// Builds k.exit: for every output of the block, the accumulator
/// `accName(thread-local position)`, the epilogue, and the store into the
/// output tensor `out` (added to k.tensors, with the epilogue operands).
/// `outDims[d]` is the output dimension (dfg::OutDim) that axis d of the
/// output tensor follows. Fails when an operand's shape fits neither form.
bool buildExit(Kernel &k, const std::string &out,
               const std::vector<int64_t> &outShape,
               const std::vector<int> &outDims,
               const std::vector<EpilogueOp> &epilogue, std::string &error);

/// Stores k's output "Y" (of buildExit's shape) as a tensor of `shape`
/// whose axis j is digits[j] of it: a transpose fused after the anchor.
/// Fails where the innermost axis moves (the stores would not coalesce).
bool storeDigits(Kernel &k, const std::vector<int64_t> &shape,
                 const std::vector<OutputDigit> &digits, std::string &error);

/// Calls fn(pos) for every output position (n, k, h, w) of thread 0's chunk
/// of k's block that its DFGs hold (a PositionLoop's spans).
/// The thesis duplicates an output's DFG over the whole block (Fig. 3.3(c))
/// and then keeps what thread 0's final nodes reach (§3.3.3); duplicating
/// over thread 0's outputs only yields that same sub-DFG (loads merge by
/// address either way) without building the block's, which has millions of
/// nodes for large tiles.
template <typename Fn> void forEachChunkPosition(const Kernel &k, Fn fn) {
  const TileParams &p = k.params;
  int64_t ext[4] = {p.Nt, p.Kt, p.Ht, p.Wt};
  for (int d = 0; d < 4; ++d)
    ext[d] /= k.positions.count[d];
  int64_t pos[4];
  for (pos[0] = 0; pos[0] < ext[0]; ++pos[0])
    for (pos[1] = 0; pos[1] < ext[1]; ++pos[1])
      for (pos[2] = 0; pos[2] < ext[2]; ++pos[2])
        for (pos[3] = 0; pos[3] < ext[3]; ++pos[3])
          fn(static_cast<const int64_t *>(pos));
}

/// The register accumulator of thread-local output (n, k, h, w).
std::string accName(const int64_t local[4]);

/// Declares the accumulators of a thread's outputs in k's DFGs (all Nt x Kt
/// x Ht x Wt, or a PositionLoop's span of them, each an array).
void declareAccumulators(Kernel &k);

/// Ends the chain of block output `pos` in the body: the accumulator `acc`
/// (named `name`) is carried out of the iteration.
void addResult(Kernel &k, int acc, const std::string &name, const int64_t *pos);

/// The output extents (N, K, H, W) a kernel's blocks tile: the op's, with
/// a grouped conv's groups side by side along K and a batched product's
/// products one grid row (H) each.
inline std::array<int64_t, 4> gridExtents(const OpDesc &d) {
  int64_t k = d.kind == OpKind::Conv ? d.K * d.batch : d.K;
  int64_t h = d.kind == OpKind::MatMul ? d.H * d.batch : d.H;
  return {d.N, k, h, d.W};
}

/// Stores tensor `name` of k (and of its producer) as type t in global
/// memory: its loads widen to fp32 and its stores round (F16, BF16), the
/// kernel's compute and shared tiles unchanged. False if k has no such
/// tensor.
bool setTensorType(Kernel &k, const std::string &name, dfg::Type t);

/// The element strides of a dense row-major tensor of `shape`.
std::vector<int64_t> denseStrides(const std::vector<int64_t> &shape);

/// The layout of a windowed op's image tensors (convs, poolings): NCHW, or
/// channels-last N x H x W x C (OpDesc::channelsLast).
struct ImageLayout {
  bool channelsLast = false;
  /// Four things of axes N, C, H, W in the tensor's order, outermost
  /// first: its shape, buildExit's output dims, or a fetch's dims (the
  /// innermost last, so that consecutive threads read along it).
  template <typename T> std::vector<T> order(T n, T c, T h, T w) const {
    return channelsLast ? std::vector<T>{n, h, w, c}
                        : std::vector<T>{n, c, h, w};
  }
  /// The element strides of axes N, C, H, W of a tensor of c x h x w
  /// images.
  std::array<int64_t, 4> strides(int64_t c, int64_t h, int64_t w) const {
    return channelsLast ? std::array<int64_t, 4>{c * h * w, 1, w * c, c}
                        : std::array<int64_t, 4>{c * h * w, h * w, w, 1};
  }
  /// The output dimension along the innermost axis: K or W.
  int unitDim() const { return channelsLast ? dfg::DimK : dfg::DimW; }
};

/// True when every block extent of p is a multiple of its thread extent.
inline bool threadsTileBlock(const TileParams &p) {
  return p.Nb % p.Nt == 0 && p.Kb % p.Kt == 0 && p.Hb % p.Ht == 0 &&
         p.Wb % p.Wt == 0;
}

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_KERNEL_H

//===- Params.h - an op and the tiles that implement it ---------*- C++ -*-===//
//
// Thesis Table 3.2 (OpDesc: what an op is) and Table 3.3 (TileParams: how a
// kernel tiles it). Every tuning knob is defined here once and flows
// unchanged from the performance model to the code generator.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_PARAMS_H
#define CUTS_PERFMODEL_PARAMS_H

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuts {

/// Op families of the model. Complex ops (Table 3.1) are direct convolution
/// and matrix multiplication; the others are simple.
enum class OpKind {
  Conv,          // direct convolution (groups > 1: `batch` counts groups)
  DepthwiseConv, // one input channel per output channel (simple, Table 3.1)
  MatMul,        // matmul, gemm, matmul_add: a conv with H = W = 1
  Pool,          // max / average pooling
  BatchNorm,     // inference batch normalisation (not folded into a conv)
  Elementwise,   // unary/binary/ternary elementwise and data movement
  Reduction,     // softmax, layer normalisation, reduce_*, global pooling
};

bool isComplex(OpKind k);
const char *opKindName(OpKind k);

/// Table 3.2: the fixed parameters an op defines. The output is viewed as
/// N x K x H x W (NCHW); C is the reduction length (input channels per group
/// for a conv, the inner dimension for a matmul, the reduced extent for a
/// reduction). `batch` counts independent instances that share nothing
/// (conv groups, batched matmul with per-batch operands). This is the one
/// description of an op: the performance model bounds it and the code
/// generator's builders (codegen/ops) generate it.
struct OpDesc {
  OpKind kind = OpKind::Elementwise;
  int64_t N = 1, C = 1, K = 1, H = 1, W = 1;
  int64_t FH = 1, FW = 1, PH = 0, PW = 0, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t batch = 1;
  int inputs = 1;            // tensors read per output element (elementwise)
  int elementBytes = 4;      // SIZE_element
  double compPerElement = 1; // simple ops: operations per output element
  // What the code generator needs beyond Table 3.2 (the bound reads none of
  // it): a conv's input channels, a windowed op's input extents, a
  // product's transposed operands.
  int64_t IC = 1, IH = 1, IW = 1;
  bool transA = false, transB = false;
  /// fp32 operands whose products may run on tensor cores in tf32
  /// (--precision tf32).
  bool tf32 = false;
  /// A channels-last conv on tensor cores is the implicit GEMM of its
  /// output pixels (kind MatMul): N = images x OH x OW rows, K output
  /// channels, C = FH x FW x IC, B the weight M x FH x FW x IC (transB).
  /// Row (n, oh, ow)'s K slice at window position (r, s) is IC-contiguous
  /// input at pixel (oh SH - PH + r DH, ow SW - PW + s DW); outside the
  /// input it reads zeros.
  bool im2col = false;
  int64_t OH = 1, OW = 1;
  /// A sum of two 1 x 1 implicit GEMMs (cuts.conv_sum): K continues past
  /// IC into IC2 channels of a second input (IH2 x IW2, read at strides
  /// SH2, SW2), so C = IC + IC2; IC2 is 0 for one input.
  int64_t IC2 = 0, IH2 = 1, IW2 = 1, SH2 = 1, SW2 = 1;
  /// A stem conv reading its input planar, in place: the NCHW tensor that
  /// a transpose to channels-last and a zero channel pad (and a cast) made
  /// its input, of planarC channels (the rest of IC zeros). Its implicit
  /// GEMM's K runs over (channel, r, s) instead, planarK() long; B stays
  /// the FH x FW x IC weight. 0: the input is channels-last.
  int64_t planarC = 0;
  int64_t planarK() const { return planarC * FH * FW; }
  /// Whether a planar input suits this conv: 8-byte pixel pairs and a
  /// window 8 or 16 wide (a k-step's pixel pairs then lie in rows it fixes).
  bool planarWindow() const {
    return pairedPixels() && FW % 8 == 0 && 16 % FW == 0;
  }
  /// Whether an implicit GEMM's K slices of `cin` channels span several
  /// window positions (fewer input channels than cin: a padded stem's 4 or 8),
  /// each copy at its own; else a slice is at one (cin dividing
  /// IC; a 1 x 1 conv's last one may be ragged).
  bool im2colChunks(int64_t cin) const { return IC % cin != 0 && FH * FW != 1; }
  /// Whether an implicit GEMM can read K slices of `cin` channels: at one
  /// window position, or in 16-byte chunks of channels at their own.
  bool im2colSlices(int64_t cin) const {
    if (IC2) // a slice reads one input
      return IC % cin == 0 && IC2 % cin == 0;
    return !im2colChunks(cin) || IC % copyElements() == 0 || pairedPixels();
  }
  /// 8-byte pixels (a 16-bit stem padded to 4 channels) whose 16-byte
  /// copies are two window positions of one row: an even window width at
  /// an even stride and begin padding over an even input width (what
  /// cuts-channels-last arranges), so a pair starts at an even input
  /// column and is inside the input or outside it whole.
  bool pairedPixels() const {
    return im2col && IC * elementBytes == 8 && FW % 2 == 0 && SW % 2 == 0 &&
           PW % 2 == 0 && IW % 2 == 0 && DW == 1 && IC2 == 0;
  }
  /// The elements of one cp.async of a tensor-core product: 16 bytes, or 8
  /// for an implicit GEMM whose input pixels are 8 bytes (a 16-bit stem
  /// padded to 4 channels: half the 8-channel one's K and its re-reads),
  /// whose rows (K = FH x FW x 4) are then whole 8-byte copies only.
  int64_t copyElements() const {
    return im2col && IC * elementBytes == 8 && !pairedPixels()
               ? IC
               : 16 / elementBytes;
  }
  /// A depthwise conv of channels-last tensors (x N x H x W x C, w
  /// M x FH x FW x 1, y N x OH x OW x M): the same op, read and written
  /// channels innermost.
  bool channelsLast = false;
  /// Such an op (or a channels-last pooling) whose channels split into
  /// 16-byte vectors runs as channel vectors: a thread reads this many
  /// channels of a pixel at once, straight from global memory (no shared
  /// tile); 0 otherwise.
  int64_t channelVector() const {
    const int64_t v = 16 / elementBytes;
    return channelsLast && K % v == 0 ? v : 0;
  }

  /// Total operations of the op (all blocks): COMP_block summed.
  double totalComp() const;
  /// The fields the bound reads, as text: equal keys mean the same op for
  /// the model (what searches are memoised by).
  std::string key() const;
};

/// The shared-memory layouts of §3.2.1: the 24 orders of N, C, H, W
/// (outermost first); index 0 is NCHW.
using SharedFormat = std::array<char, 4>;
const std::vector<SharedFormat> &sharedFormats();
std::string formatName(int format);

/// The row pitch of a 2-D shared tile whose inner extent is `inner`, read
/// by a thread in runs of `run` words: padded where `inner` is a multiple of
/// the bank count (bank-conflict-aware padding, §3.4.2), by four words
/// where the runs are 128-bit loads (so they stay aligned), else by one.
inline int64_t paddedPitch(int64_t inner, int64_t run) {
  return inner % 32 == 0 ? inner + (run % 4 == 0 ? 4 : 1) : inner;
}

/// The matrix instruction of a tensor-core tiling (not in the thesis):
/// none (SIMT FMAs), mma.sync (sm_80 on; a warp's 16 x 8 tiles) or wgmma
/// (sm_90a; a warpgroup's 64-row tiles).
enum class MatrixInstr : int8_t { None, MmaSync, Wgmma };

/// Table 3.3: the parameters searched for.
struct TileParams {
  int64_t Nb = 1, Kb = 1, Hb = 1, Wb = 1; // per thread block
  int64_t Nt = 1, Kt = 1, Ht = 1, Wt = 1; // per thread
  int64_t Cin = 1;                        // C_input per iteration
  int format = 0;                         // FORMAT_shared (sharedFormats())
  /// Tensor cores (matmuls with 16-bit operands): the instruction, the
  /// warps (wgmma: warpgroups) along the block's rows and columns, and the
  /// stages of the cp.async pipeline. The thread tile Nt x Kt is then a
  /// lane's accumulator fragment, 2 mi x 2 ni for mi x ni tiles a warp, and
  /// FORMAT_shared is unused (the tiles are K-major, padded or swizzled).
  MatrixInstr instr = MatrixInstr::None;
  int64_t warpsM = 1, warpsN = 1, stages = 0;
  /// wgmma, warp-specialised: one more warpgroup only copies (cp.async
  /// into stages that mbarriers guard) while the others only compute, so
  /// no block-wide barrier stalls the tensor cores between slices.
  bool warpSpecialized = false;

  bool tensorCore() const { return instr != MatrixInstr::None; }
  /// Slices a tensor-core pipeline loads ahead of the one it computes:
  /// stages - 1, but with wgmma and 4 stages 2, as each slice's products
  /// run on across the next barrier (the tensor cores stay busy through
  /// it) and keep their stage read until the slice after. On an H100 that
  /// ran BERT's b32 GEMMs 5-18 % faster in 4-stage 128 x 256 blocks, and 3
  /// stages 2 ahead ran 128 x 128 blocks (2 a SM) faster than 1 ahead.
  int64_t slicesAhead() const { return stages - (overlapsSlices() ? 2 : 1); }
  /// Whether a slice's products run on across the next barrier (wgmma with
  /// 4 stages), one commit group left in flight.
  bool overlapsSlices() const {
    return instr == MatrixInstr::Wgmma && stages >= 4;
  }
  int64_t threads() const {
    return (Nb / Nt) * (Kb / Kt) * (Hb / Ht) * (Wb / Wt) +
           (warpSpecialized ? 128 : 0);
  }
  /// The threads that copy a tensor-core slice: the producer warpgroup, or
  /// every thread.
  int64_t copyThreads() const { return warpSpecialized ? 128 : threads(); }
};

/// "block 32x16x1x1, thread 2x1x1x1 (N x K x H x W), C_input 64,
/// FORMAT_shared CHNW": how kernel headers and validation samples name p.
std::string paramsText(const TileParams &p);

/// A conv's or pooling's per-axis strides, pads (begin pads first, as ONNX
/// orders them) and dilations; absent axes take 1, 0 and 1.
struct Window {
  std::vector<int64_t> strides, pads, dilations;
};

// The descriptions of ops given by their shapes and attributes: what
// describeOp (Describe.h) builds from a cuts op, and tools without MLIR
// from shapes alone. Spatial axes beyond two fold into W.

/// A conv of x[N, C, spatial] by w[M, C / group, kernel] into y: depthwise
/// (C = 1, K = M) when each group has one input channel, else `group` convs
/// of M / group outputs each.
OpDesc describeConv(const std::vector<int64_t> &x,
                    const std::vector<int64_t> &w,
                    const std::vector<int64_t> &y, int64_t group,
                    const Window &win);
/// A channels-last 2-D conv of x[N, H, W, C] by w[M, FH, FW, C] into
/// y[N, OH, OW, M] (one group) as its implicit GEMM (OpDesc::im2col).
OpDesc describeImplicitGemm(const std::vector<int64_t> &x,
                            const std::vector<int64_t> &w,
                            const std::vector<int64_t> &y, const Window &win);
/// y = conv(x, w[..., :C]) + conv(x2, w[..., C:]), both 1 x 1 unpadded and
/// channels-last, x at `strides`, x2 at `strides2` (cuts.conv_sum).
OpDesc describeConvSum(const std::vector<int64_t> &x,
                       const std::vector<int64_t> &x2,
                       const std::vector<int64_t> &w,
                       const std::vector<int64_t> &y,
                       const std::vector<int64_t> &strides,
                       const std::vector<int64_t> &strides2);
/// Max or average pooling of x[N, C, spatial] into y with `kernel`.
OpDesc describePool(const std::vector<int64_t> &x,
                    const std::vector<int64_t> &y,
                    const std::vector<int64_t> &kernel, const Window &win);
/// y = A B (A or B transposed: Gemm's transA, transB); B of rank 2 is one
/// matrix for all of A's rows, else both carry y's batch axes.
OpDesc describeMatMul(const std::vector<int64_t> &a,
                      const std::vector<int64_t> &b,
                      const std::vector<int64_t> &y, bool transA, bool transB);
/// An elementwise op (or a fused chain) with result y (leading axes folded
/// into N), reading `inputs` full-size tensors an element.
OpDesc describeElementwise(const std::vector<int64_t> &y, int inputs);
/// A reduction over `rows` rows of `length` elements, `comp` operations an
/// element (softmax 5, layer normalisation 6: Describe.cpp).
OpDesc describeRows(int64_t rows, int64_t length, double comp = 1);

/// The conv output pixels a block of an implicit GEMM computes for a
/// pooling fused after it (codegen's PooledExit): a boxH x boxW box holding
/// the windows of a tileH x tileW tile of pooled outputs, halos included
/// (recomputed by the neighbouring tiles' blocks too); tilesH x tilesW
/// tiles an image.
struct PoolBox {
  int64_t tileH = 1, tileW = 1, boxH = 1, boxW = 1, tilesH = 1, tilesW = 1;
  /// The implicit GEMM's rows: a block of `rows` a tile.
  int64_t gemmRows(int64_t images, int64_t rows) const {
    return images * tilesH * tilesW * rows;
  }
};
/// Whether pooling `pool`'s windows lie inside its input, unpadded (each
/// averages FH x FW pixels whatever count_include_pad says).
inline bool poolWindowsInside(const OpDesc &pool) {
  return pool.PH == 0 && pool.PW == 0 &&
         (pool.H - 1) * pool.SH + (pool.FH - 1) * pool.DH < pool.IH &&
         (pool.W - 1) * pool.SW + (pool.FW - 1) * pool.DW < pool.IW;
}
/// The box for pooling `pool` (describePool's) in blocks of `rows` rows
/// with the fewest tiles an image, the fewest rows in all (ties: the wider
/// tile, whose stores run longer); nullopt where not one window fits or
/// the pooling dilates.
std::optional<PoolBox> poolBox(const OpDesc &pool, int64_t rows);
/// The box of conv `conv`'s output pixels (an implicit GEMM's, no pooling:
/// tile = box) in blocks of `rows` rows with the fewest tiles an image,
/// then the fewest input pixels under its windows (the patch a block
/// reads; ties: the wider box).
PoolBox convBox(const OpDesc &conv, int64_t rows);

/// The most FMAs a thread's body is emitted with straight, unrolled. NVRTC's
/// time grows with the source: a fused ResNet-50 conv with C_input 64 and
/// 4608 FMAs a thread was 600 KB and 11 s, and a batch-64 tuning round
/// compiles a thousand candidates. Past this, the C_input slice is swept by
/// a loop over chunks of this many FMAs, still wide enough for ILP. A conv
/// thread's FMAs for one channel (its outputs x the filter taps) are not
/// split: the search keeps no set past this (ViT's 16 x 16 patch conv with
/// 8 outputs a thread was 2048 FMAs, 388 KB of source and 18 s of NVRTC).
constexpr int64_t kMaxUnrolledFma = 1024;

/// A reduction's row is walked by one thread only up to this length; longer
/// rows are shared by a warp's lanes (a thread alone would serialise them).
constexpr int64_t kMaxThreadRow = 32;
/// The most row elements a thread holds in registers (its share of each of
/// its Nt rows), unrolled: rows of 2048 over 32 lanes, the longest softmax
/// or layer norm cuts-split-reductions leaves whole. More passes 64 KB of
/// source (a layer norm over 8192, 256 elements a lane, was 131 KB).
constexpr int64_t kMaxRowElements = 64;
/// The elements of a row of `length` each of `lanes` lanes holds: the last
/// lanes overhang a length they do not divide.
inline int64_t laneShare(int64_t length, int64_t lanes) {
  return (length + lanes - 1) / lanes;
}

/// The smallest parameter set of op d: one output a block and a thread,
/// C_input what the op iterates by (1 where there is no C loop, a
/// reduction's whole row; one warp's lanes a row past kMaxThreadRow). What
/// the code generator's rules are probed with.
TileParams smallestParams(const OpDesc &d);

} // namespace cuts

#endif // CUTS_PERFMODEL_PARAMS_H

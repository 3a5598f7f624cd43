//===- MatMul.cpp - matmul / gemm kernels from DFGs -----------------------===//
//
// The baseline DFG of one output of a matmul iteration is a chain of
// C_input fused multiply-adds over a row of A's tile and a column of B's
// tile; it is duplicated over the Nb x Kb outputs of the block, with loads
// of the same shared-memory word merged (thesis Fig. 3.3). The accumulators
// are registers carried across iterations of the looped op; the loop-exit
// DFG applies the fused epilogue and stores to global memory.
//
//===----------------------------------------------------------------------===//
#include "codegen/ops/MatMul.h"

#include <algorithm>

namespace cuts::codegen {
namespace {

// Loop exit: the epilogue on each accumulator, then the global store of Y
// (batch x M x N, or M x N); and the header's summary.
bool exitAndSummary(Kernel &k, const std::string &what,
                    const std::vector<EpilogueOp> &epilogue,
                    std::string &error) {
  const int64_t M = k.desc.N, K = k.desc.C, N = k.desc.K, batch = k.desc.batch;
  bool ok =
      batch > 1
          ? buildExit(k, "Y", {batch, M, N}, {dfg::DimH, dfg::DimN, dfg::DimK},
                      epilogue, error)
          : buildExit(k, "Y", {M, N}, {dfg::DimN, dfg::DimK}, epilogue, error);
  k.summary = (batch > 1 ? std::to_string(batch) + " x " : "") + what +
              std::to_string(M) + "x" + std::to_string(K) + " * " +
              std::to_string(K) + "x" + std::to_string(N);
  for (const EpilogueOp &e : epilogue)
    k.summary += e.operand.empty() ? " + unary" : " + " + e.operand;
  return ok;
}

} // namespace

std::optional<Kernel> buildMatMul(const std::string &name, const OpDesc &d,
                                  const TileParams &p,
                                  const std::vector<EpilogueOp> &epilogue,
                                  std::string &error) {
  const int64_t M = d.N, K = d.C, N = d.K, batch = d.batch;
  const bool transA = d.transA, transB = d.transB;
  if (d.kind != OpKind::MatMul || p.Hb != 1 || p.Wb != 1 || p.Ht != 1 ||
      p.Wt != 1 || p.Nb % p.Nt || p.Kb % p.Kt || p.Cin < 1 || K % p.Cin) {
    error = "parameters do not describe a matmul tiling (H = W = 1, block "
            "extents multiples of thread extents, C_input dividing K)";
    return std::nullopt;
  }
  Kernel k;
  k.name = name;
  k.desc = d;
  k.params = p;
  k.loopExtent = K;
  auto shape = [&](std::vector<int64_t> s) {
    if (batch > 1)
      s.insert(s.begin(), batch);
    return s;
  };
  k.tensors = {
      {"A",
       shape(transA ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}),
       false},
      {"B",
       shape(transB ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}),
       false}};

  // Shared tiles: A's in FORMAT_shared (N = rows, C = columns), B's
  // row-major (C x K).
  const SharedFormat &f = sharedFormats()[p.format];
  dfg::Buffer as{"As",
                 dfg::Space::Shared,
                 {p.Nb, p.Cin},
                 tileStrides(f, 'N', 'C', p.Nb, p.Cin, p.Nt, p.Cin),
                 {{dfg::DimN, 1}, {dfg::NoDim, 1}}};
  dfg::Buffer bs{
      "Bs",
      dfg::Space::Shared,
      {p.Cin, p.Kb},
      tileStrides({'C', 'K', 'H', 'W'}, 'C', 'K', p.Cin, p.Kb, p.Cin, p.Kt),
      {{dfg::NoDim, 1}, {dfg::DimK, 1}}};
  // A body past planBody's bounds covers `step` columns of the slice and
  // loops.
  int64_t step = planBody(k, {&as, &bs}, dfg::DimK, p.Cin, 1);
  as.map[1].inner = bs.map[0].inner = k.bodyStep > 0;
  int a = k.body.addBuffer(as), b = k.body.addBuffer(bs);
  // Each tile is fetched with the operand's contiguous global axis last,
  // so consecutive threads read consecutive words (a transposed operand
  // swaps the order of the tile's axes in the fetch, not in shared memory).
  FetchDim rowsA =
      fetchDim(p.Nb, dfg::DimN, 1, 0, false, M, transA ? 1 : K, as.strides[0]);
  FetchDim colsA =
      fetchDim(p.Cin, dfg::NoDim, 1, 0, true, K, transA ? M : 1, as.strides[1]);
  FetchDim rowsB =
      fetchDim(p.Cin, dfg::NoDim, 1, 0, true, K, transB ? 1 : N, bs.strides[0]);
  FetchDim colsB =
      fetchDim(p.Kb, dfg::DimK, 1, 0, false, N, transB ? K : 1, bs.strides[1]);
  std::vector<FetchDim> fa = transA ? std::vector<FetchDim>{colsA, rowsA}
                                    : std::vector<FetchDim>{rowsA, colsA};
  std::vector<FetchDim> fb = transB ? std::vector<FetchDim>{colsB, rowsB}
                                    : std::vector<FetchDim>{rowsB, colsB};
  if (batch > 1) {
    // The block's product: an extent-1 axis following output dimension H.
    fa.insert(fa.begin(), fetchDim(1, dfg::DimH, 1, 0, false, batch, M * K, 0));
    fb.insert(fb.begin(), fetchDim(1, dfg::DimH, 1, 0, false, batch, K * N, 0));
  }
  k.fetches.push_back({0, a, fa});
  k.fetches.push_back({1, b, fb});

  // Loop body: acc(i, j) += As[i][c] * Bs[c][j] for c < C_input, over
  // thread 0's outputs (see forEachChunkPosition).
  forEachChunkPosition(k, [&](const int64_t *pos) {
    const int64_t i = pos[dfg::DimN], j = pos[dfg::DimK];
    dfg::Node in{dfg::Op::Value, {}};
    in.name = accName(pos);
    int acc = k.body.add(in);
    for (int64_t c = 0; c < step; ++c) {
      int x = k.body.load(a, {i, c});
      int y = k.body.load(b, {c, j});
      dfg::Node fma{dfg::Op::Fma, {x, y, acc}};
      fma.name = in.name; // accumulate in place
      acc = k.body.add(fma);
    }
    addResult(k, acc, in.name, pos);
  });
  declareAccumulators(k);

  if (!exitAndSummary(k, "matmul ", epilogue, error))
    return std::nullopt;
  return k;
}

std::optional<Kernel>
buildMmaMatMul(const std::string &name, const OpDesc &d, const TileParams &p,
               dfg::Type operand, const std::vector<EpilogueOp> &epilogue,
               std::string &error,
               const std::array<std::optional<MmaView>, 2> &views) {
  const int64_t M = d.N, K = d.C, N = d.K, batch = d.batch;
  if (operand != dfg::Type::F16 && operand != dfg::Type::BF16 &&
      operand != dfg::Type::F32) {
    error = "tensor-core products take fp16, bf16 or fp32 (as tf32) operands";
    return std::nullopt;
  }
  // A copy moves 16 bytes of a row (8 of a stem's): rows of A, and of B,
  // start aligned.
  const int64_t perCopy = mmaCopyElements(d, operand);
  if (d.kind != OpKind::MatMul || d.transA || K % perCopy ||
      (!d.transB && N % perCopy)) {
    error = "tensor-core products take A untransposed, and K (and N where "
            "B is not transposed) in whole 16-byte copies";
    return std::nullopt;
  }
  const MmaLoop m = mmaLoopOf(p, operand);
  const bool wgmma = m.wgmma();
  if (!p.tensorCore() || m.warpsM < 1 || m.warpsN < 1 || m.mi < 1 || m.ni < 1 ||
      m.stages < 2 || p.Nb != m.blockRows() || p.Kb != m.blockCols() ||
      p.Nt % 2 || p.Kt % 2 || p.Hb != 1 || p.Wb != 1 || p.Ht != 1 ||
      p.Wt != 1 || p.Cin < 16 || p.Cin % 16 || (!wgmma && m.ni % 2)) {
    error = "parameters are not a tensor-core tiling (block blockRows() by "
            "blockCols(), thread 2 mi x 2 ni, C_input a multiple of 16, at "
            "least 2 stages; mma.sync: ni even)";
    return std::nullopt;
  }
  // tf32 fragments are 32-bit words, which ldmatrix cannot transpose: B
  // must be K-major (N x K) as a Linear layer's or a conv's weight is.
  if (operand == dfg::Type::F32 && (wgmma || !d.transB)) {
    error = "tf32 products run on mma.sync with B transposed (N x K)";
    return std::nullopt;
  }
  // wgmma reads both operands K-major from shared memory, B as its N x K
  // transpose (a Linear layer's weight), n = 8 ni up to 256.
  if (wgmma && (!d.transB || m.warpsN != 1 || m.ni > 32 ||
                (p.Cin != 16 && p.Cin != 32 && p.Cin != 64))) {
    error = "wgmma products take B transposed (N x K), one warpgroup "
            "across N, at most 256 columns and C_input 16, 32 or 64 (one "
            "swizzled row of 32, 64 or 128 bytes)";
    return std::nullopt;
  }
  if (m.warpSpecialized && !wgmma) {
    error = "only wgmma loops are warp-specialised";
    return std::nullopt;
  }
  // Each thread's copies start at one column of the slice (Cuda.cpp's
  // copy slots): a row of 16-byte copies must divide the copying threads,
  // and for wgmma's 8-row core matrices, a pass of copies whole ones.
  const int64_t threads = m.copyThreads();
  const int64_t cprA = p.Cin / perCopy;
  const int64_t cprB = (d.transB ? p.Cin : p.Kb) / perCopy;
  if (threads % cprA || threads % cprB || (wgmma && (threads / cprA) % 8)) {
    error = "a tile row's 16-byte copies do not divide the block's threads";
    return std::nullopt;
  }
  Kernel k;
  k.name = name;
  k.desc = d;
  k.params = p;
  k.mma = m;
  k.loopExtent = K;
  auto shape = [&](std::vector<int64_t> s) {
    if (batch > 1)
      s.insert(s.begin(), batch);
    return s;
  };
  // A view's rows start 16-byte aligned where its row stride and every
  // batch stride are whole copies.
  for (const auto &v : views)
    if (v) {
      bool aligned = v->rowStride % perCopy == 0 && v->offset % perCopy == 0;
      for (int64_t st : v->batchStrides)
        aligned = aligned && st % perCopy == 0;
      if (!aligned) {
        error = "an operand read in place needs rows of whole 16-byte copies";
        return std::nullopt;
      }
    }
  if (d.im2col && (views[0] || views[1] || !d.im2colSlices(p.Cin))) {
    error = "an implicit GEMM reads its own operands, in slices of whole "
            "16-byte chunks of channels (OpDesc::im2colSlices)";
    return std::nullopt;
  }
  k.mmaViews = views;
  if (d.planarC && (!d.im2col || !d.planarWindow() || d.planarC > d.IC)) {
    error = "a planar input is a stem's: 8-byte pixel pairs "
            "(OpDesc::pairedPixels), a window 8 or 16 wide";
    return std::nullopt;
  }
  const std::vector<int64_t> a =
      d.planarC ? std::vector<int64_t>{M / (d.OH * d.OW), d.planarC, d.IH, d.IW}
      : d.im2col ? std::vector<int64_t>{M / (d.OH * d.OW), d.IH, d.IW, d.IC}
      : views[0] ? views[0]->shape
                 : shape({M, K});
  k.tensors = {{"A", a, false, operand},
               {"B",
                views[1] ? views[1]->shape
                         : shape(d.transB ? std::vector<int64_t>{N, K}
                                          : std::vector<int64_t>{K, N}),
                false, operand}};
  if (d.IC2) // a conv_sum's second input, after B in the args
    k.tensors.push_back(
        {"A2", {M / (d.OH * d.OW), d.IH2, d.IW2, d.IC2}, false, operand});
  if (!exitAndSummary(
          k, d.im2col ? "tensor-core implicit GEMM " : "tensor-core matmul ",
          epilogue, error))
    return std::nullopt;
  return k;
}

} // namespace cuts::codegen

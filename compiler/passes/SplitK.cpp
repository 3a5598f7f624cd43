//===- SplitK.cpp - long products over few tiles, split along K -----------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"

namespace cuts {
#define GEN_PASS_DEF_SPLITK
#include "compiler/passes/Passes.h.inc"

namespace {

mlir::RankedTensorType rankedType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

// The smallest tensor-core tile the parameter search considers on a side:
// a product whose grid of these fills less than half the SMs leaves most
// of the GPU idle however it is tiled.
constexpr int64_t kMinTile = 64;
// Each part keeps a main loop long enough for the copy pipeline to fill.
constexpr int64_t kMinPartK = 512;
constexpr int64_t kMaxParts = 8;

// The number of parts K is split into for an M x N product on `numSM` SMs:
// the most (up to kMaxParts) whose tiles still fit one wave, each part's
// K a multiple of kMinTile and at least kMinPartK; 1 where the product
// already fills half the SMs or no split qualifies.
int64_t partsOf(int64_t M, int64_t N, int64_t K, int64_t numSM) {
  const int64_t tiles = ((M + kMinTile - 1) / kMinTile) *
                        ((N + kMinTile - 1) / kMinTile);
  if (numSM <= 0 || 2 * tiles > numSM)
    return 1;
  for (int64_t s = std::min(kMaxParts, numSM / tiles); s >= 2; --s)
    if (K % s == 0 && (K / s) % kMinTile == 0 && K / s >= kMinPartK)
      return s;
  return 1;
}

// The constant `c` (its elements in order) as a tensor of `shape`.
mlir::Value reshapedConstant(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Attribute c, mlir::RankedTensorType from,
                             llvm::ArrayRef<int64_t> shape) {
  auto to = mlir::RankedTensorType::get(shape, from.getElementType());
  mlir::ElementsAttr value;
  if (auto res = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(c)) {
    mlir::AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return nullptr;
    value = rawAttr(to, blob->getData(), "split_k_weight");
  } else {
    auto host = toHost(c);
    if (!host)
      return nullptr;
    host->type = to;
    value = toAttr(*host, "split_k_weight");
  }
  return b.create<ConstantOp>(loc, to, value);
}

// matmul(A, B) or matmul_add(A, B, C), B a 2-D constant [K, N] of
// tensor-core operands: S partial products over K / S each, batched
// ([S, M, K/S] x [S, K/S, N], A read in place through a transpose), in
// fp32, then their sum (+ C) cast back. False where it does not apply.
bool split(mlir::Operation *mm, int64_t numSM) {
  mlir::Value A = mm->getOperand(0), B = mm->getOperand(1);
  mlir::Value C = mm->getNumOperands() > 2 ? mm->getOperand(2) : nullptr;
  auto at = rankedType(A), bt = rankedType(B), yt = rankedType(mm->getResult(0));
  mlir::Attribute weights;
  if (bt.getRank() != 2 || at.getRank() < 2 ||
      !tensorCoreElement(at.getElementType(), mm) ||
      at.getElementType() != bt.getElementType() ||
      !mlir::matchPattern(B, mlir::m_Constant(&weights)))
    return false;
  const int64_t K = bt.getDimSize(0), N = bt.getDimSize(1);
  const int64_t M = at.getNumElements() / K;
  const int64_t S = partsOf(M, N, K, numSM), Ks = K / S;
  if (S < 2)
    return false;
  mlir::OpBuilder b(mm);
  mlir::Location loc = mm->getLoc();
  mlir::Type element = at.getElementType(), f32 = b.getF32Type();
  auto type = [&](llvm::ArrayRef<int64_t> s, mlir::Type e) {
    return mlir::RankedTensorType::get(s, e);
  };
  mlir::Value bs = reshapedConstant(b, loc, weights, bt, {S, Ks, N});
  if (!bs)
    return false;
  mlir::Value a3 = b.create<ReshapeOp>(loc, type({M, S, Ks}, element), A,
                                       b.getDenseI64ArrayAttr({M, S, Ks}));
  mlir::Value as = b.create<TransposeOp>(loc, type({S, M, Ks}, element), a3,
                                         b.getDenseI64ArrayAttr({1, 0, 2}));
  mlir::Value parts =
      b.create<MatMulOp>(loc, type({S, M, N}, f32), as, bs, nullptr);
  auto outF32 = type(yt.getShape(), f32);
  mlir::Value sum;
  for (int64_t s = 0; s < S; ++s) {
    mlir::Value part = b.create<SliceOp>(
        loc, type({1, M, N}, f32), parts, b.getDenseI64ArrayAttr({s, 0, 0}),
        b.getDenseI64ArrayAttr({s + 1, M, N}),
        b.getDenseI64ArrayAttr({1, 1, 1}));
    part = b.create<ReshapeOp>(loc, outF32, part,
                               b.getDenseI64ArrayAttr(yt.getShape()));
    sum = sum ? b.create<AddOp>(loc, outF32, sum, part).getResult() : part;
  }
  if (C) {
    auto ct = rankedType(C);
    if (!ct.getElementType().isF32())
      C = b.create<CastOp>(loc, ct.clone(f32), C, mlir::TypeAttr::get(f32));
    sum = b.create<AddOp>(loc, outF32, sum, C);
  }
  if (element != f32)
    sum = b.create<CastOp>(loc, yt, sum, mlir::TypeAttr::get(element));
  mm->getResult(0).replaceAllUsesWith(sum);
  mm->erase();
  return true;
}

struct SplitKPass : impl::SplitKBase<SplitKPass> {
  using SplitKBase::SplitKBase;

  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> products;
    getOperation().walk([&](mlir::Operation *op) {
      if (auto mm = llvm::dyn_cast<MatMulOp>(op); mm && !mm.getTransB())
        products.push_back(op);
      else if (auto ma = llvm::dyn_cast<MatMulAddOp>(op); ma && !ma.getTransB())
        products.push_back(op);
    });
    for (mlir::Operation *op : products)
      (void)split(op, numSM);
  }
};

} // namespace
} // namespace cuts

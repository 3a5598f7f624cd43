//===- SplitReductions.cpp - long rows reduced in two steps ---------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"

namespace cuts {
#define GEN_PASS_DEF_SPLITREDUCTIONS
#include "compiler/passes/Passes.h.inc"

namespace {

mlir::RankedTensorType rankedType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

// The inner factor of a row of `length`: the largest divisor up to maxRow,
// a multiple of a warp's 32 lanes where one is; 0 where none splits it.
int64_t innerFactor(int64_t length, int64_t maxRow) {
  int64_t best = 0, lanes = 0;
  for (int64_t b = 2; b <= maxRow && b < length; ++b)
    if (length % b == 0) {
      best = b;
      if (b % 32 == 0)
        lanes = b;
    }
  return lanes ? lanes : best;
}

// op(v) over v's last axis, that axis dropped.
mlir::Value reduceLast(mlir::OpBuilder &b, mlir::Operation *op, mlir::Value v) {
  auto t = rankedType(v);
  auto shape = llvm::to_vector(t.getShape().drop_back());
  auto type = mlir::RankedTensorType::get(shape, t.getElementType());
  auto axes = b.getDenseI64ArrayAttr({t.getRank() - 1});
  auto keep = b.getBoolAttr(false);
  mlir::Location loc = op->getLoc();
  if (llvm::isa<ReduceSumOp>(op))
    return b.create<ReduceSumOp>(loc, type, v, axes, keep);
  if (llvm::isa<ReduceMaxOp>(op))
    return b.create<ReduceMaxOp>(loc, type, v, axes, keep);
  return b.create<ReduceMeanOp>(loc, type, v, axes, keep);
}

mlir::Value reshape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                    llvm::ArrayRef<int64_t> shape) {
  auto t = mlir::RankedTensorType::get(shape, rankedType(v).getElementType());
  return b.create<ReshapeOp>(loc, t, v, b.getDenseI64ArrayAttr(shape));
}

// A global average pool or a reduction over v's last k axes, whose rows
// are longer than maxRow: rows of B = innerFactor elements reduced first,
// then the A = length / B partial results of each row. Means of equal
// parts average to the mean; sums and maxima compose as they are. Integer
// means are left alone (their parts would truncate).
void split(mlir::Operation *op, int64_t maxRow) {
  mlir::Value x = op->getOperand(0);
  auto xs = rankedType(x).getShape();
  size_t k = xs.size() - 2;
  if (!llvm::isa<GlobalAveragePoolOp>(op)) {
    auto axes = op->getAttrOfType<mlir::DenseI64ArrayAttr>("axes").asArrayRef();
    k = axes.size();
    for (size_t i = 0; i < k; ++i)
      if (axes[i] != int64_t(xs.size() - k + i))
        return; // not the trailing axes: no row kernel either way
    if (llvm::isa<ReduceMeanOp>(op) &&
        !llvm::isa<mlir::FloatType>(rankedType(x).getElementType()))
      return;
  }
  int64_t length = 1;
  for (int64_t e : xs.take_back(k))
    length *= e;
  int64_t inner = length > maxRow ? innerFactor(length, maxRow) : 0;
  if (inner == 0)
    return;
  mlir::OpBuilder b(op);
  auto lead = llvm::to_vector(xs.drop_back(k));
  auto parts = lead;
  parts.append({length / inner, inner});
  mlir::Value v = reshape(b, op->getLoc(), x, parts);
  v = reduceLast(b, op, reduceLast(b, op, v));
  auto out = rankedType(op->getResult(0)).getShape();
  if (out != llvm::ArrayRef<int64_t>(lead))
    v = reshape(b, op->getLoc(), v, out);
  op->getResult(0).replaceAllUsesWith(v);
  op->erase();
  // The outer step may itself be long: it is split again in turn.
  if (auto *outer = v.getDefiningOp(); outer && llvm::isa<ReshapeOp>(outer))
    v = outer->getOperand(0);
  split(v.getDefiningOp(), maxRow);
}

struct SplitReductionsPass : impl::SplitReductionsBase<SplitReductionsPass> {
  using SplitReductionsBase::SplitReductionsBase;

  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> ops;
    getOperation().walk([&](mlir::Operation *op) {
      if (llvm::isa<GlobalAveragePoolOp, ReduceMeanOp, ReduceSumOp,
                    ReduceMaxOp>(op))
        ops.push_back(op);
    });
    for (mlir::Operation *op : ops)
      split(op, maxRow);
  }
};

} // namespace
} // namespace cuts

//===- SliceHeads.cpp - slice whole heads after the split into heads ------===//
//
// GPT-2 computes Q, K and V in one product, slices it in three along its
// columns and splits each slice into heads: reshape(slice(x)). A tensor-core
// product reads a slice and a transpose of its operand in place
// (readInPlace), but not a reshape between them, so each slice would be a
// copy kernel (36 of GPT-2's 159 at batch 1). Splitting x into heads first
// puts the reshape, a view, before the slice.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace cuts {
#define GEN_PASS_DEF_SLICEHEADS
#include "compiler/passes/Passes.h.inc"

namespace {

/// The one axis op slices (unit step, every other axis whole); -1 if none
/// or several.
int64_t slicedAxis(SliceOp op) {
  auto shape =
      llvm::cast<mlir::RankedTensorType>(op.getData().getType()).getShape();
  int64_t axis = -1;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    if (op.getStarts()[d] != 0 || op.getEnds()[d] != shape[d] ||
        op.getSteps()[d] != 1) {
      if (axis >= 0 || op.getSteps()[d] != 1)
        return -1;
      axis = d;
    }
  return axis;
}

/// reshape(slice(x)) whose reshape splits the sliced axis a into factors
/// F, the slice's start and x's axis multiples of the inner ones
/// (product(F[1:])), as slice(reshape(x)) on the outer factor.
bool sliceAfterReshape(SliceOp op) {
  const int64_t a = slicedAxis(op);
  if (a < 0 || !op->hasOneUse())
    return false;
  auto reshape = llvm::dyn_cast<ReshapeOp>(*op->getUsers().begin());
  if (!reshape)
    return false;
  auto xt = llvm::cast<mlir::RankedTensorType>(op.getData().getType());
  llvm::ArrayRef<int64_t> X = xt.getShape(), S = op.getType().getShape(),
                          R = reshape.getType().getShape();
  const int64_t r = int64_t(X.size()), tail = r - a - 1;
  const int64_t factors = int64_t(R.size()) - r + 1;
  if (factors < 2 || R.take_front(a) != S.take_front(a) ||
      R.take_back(tail) != S.take_back(tail))
    return false;
  const int64_t inner =
      mlir::ShapedType::getNumElements(R.slice(a + 1, factors - 1));
  const int64_t start = op.getStarts()[a], end = op.getEnds()[a];
  if (inner <= 0 || start % inner || X[a] % inner) // an empty factor
    return false;
  llvm::SmallVector<int64_t> shape(X.take_front(a));
  shape.push_back(X[a] / inner);
  shape.append(R.begin() + a + 1, R.end());
  mlir::OpBuilder b(reshape);
  auto heads = b.create<ReshapeOp>(
      op.getLoc(), mlir::RankedTensorType::get(shape, xt.getElementType()),
      op.getData(), b.getDenseI64ArrayAttr(shape));
  llvm::SmallVector<int64_t> starts(shape.size(), 0), ends(shape);
  starts[a] = start / inner, ends[a] = end / inner;
  auto slice = b.create<SliceOp>(
      op.getLoc(), reshape.getType(), heads.getResult(),
      b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(ends),
      b.getDenseI64ArrayAttr(llvm::SmallVector<int64_t>(shape.size(), 1)));
  reshape.getResult().replaceAllUsesWith(slice.getResult());
  reshape->erase();
  op->erase();
  return true;
}

struct SliceHeadsPass : impl::SliceHeadsBase<SliceHeadsPass> {
  void runOnOperation() override {
    llvm::SmallVector<SliceOp> slices;
    getOperation().walk([&](SliceOp op) { slices.push_back(op); });
    for (SliceOp op : slices)
      (void)sliceAfterReshape(op);
  }
};

} // namespace
} // namespace cuts

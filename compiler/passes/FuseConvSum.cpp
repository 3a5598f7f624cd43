//===- FuseConvSum.cpp - a block's last conv and its shortcut as one ------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"

namespace cuts {
#define GEN_PASS_DEF_FUSECONVSUM
#include "compiler/passes/Passes.h.inc"

namespace {

// A channels-last 1 x 1 conv, unpadded, of group 1, with a constant weight
// and no user but `add`, whose input channels fill whole slices of 16.
bool pointwise(ConvOp c, AddOp add) {
  if (!c || !c.getChannelsLast() || c.getGroup() != 1 || !c->hasOneUse() ||
      *c->user_begin() != add.getOperation() ||
      !c.getW().getDefiningOp<ConstantOp>() ||
      (c.getB() && !c.getB().getDefiningOp<ConstantOp>()))
    return false;
  auto w = llvm::cast<mlir::RankedTensorType>(c.getW().getType()).getShape();
  auto all = [](llvm::ArrayRef<int64_t> v, int64_t x) {
    return llvm::all_of(v, [&](int64_t e) { return e == x; });
  };
  return w.size() == 4 && w[1] == 1 && w[2] == 1 && w[3] % 16 == 0 &&
         all(c.getPads(), 0) && all(c.getDilations(), 1);
}

// The pair's operations per byte of the first conv's result stored and
// read back, which fusing saves.
double opsPerSavedByte(ConvOp c1, ConvOp c2) {
  auto y = llvm::cast<mlir::RankedTensorType>(c1.getType());
  double pixels = double(y.getNumElements()) / double(y.getShape().back());
  double k = 0;
  for (ConvOp c : {c1, c2})
    k += double(
        llvm::cast<mlir::RankedTensorType>(c.getW().getType()).getShape()[3]);
  double bytes = 2.0 * double(y.getNumElements()) *
                 double(y.getElementType().getIntOrFloatBitWidth() / 8);
  return 2.0 * pixels * double(y.getShape().back()) * k / bytes;
}

bool fuse(AddOp add, double balance) {
  auto c1 = add.getA().getDefiningOp<ConvOp>();
  auto c2 = add.getB().getDefiningOp<ConvOp>();
  if (c1 == c2 || !pointwise(c1, add) || !pointwise(c2, add) ||
      c1.getType() != add.getType() || c2.getType() != add.getType() ||
      (balance > 0 && opsPerSavedByte(c1, c2) >= balance))
    return false;
  mlir::OpBuilder b(add);
  mlir::Location loc = add.getLoc();
  // The weights side by side along the input channels (folded).
  mlir::Value w = b.create<ConcatOp>(
      loc, mlir::ValueRange{c1.getW(), c2.getW()}, b.getI64IntegerAttr(3));
  mlir::Value bias = c1.getB();
  if (c1.getB() && c2.getB())
    bias = b.create<AddOp>(loc, c1.getB().getType(), c1.getB(), c2.getB());
  else if (!bias)
    bias = c2.getB();
  auto sum =
      b.create<ConvSumOp>(loc, add.getType(), c1.getX(), c2.getX(), w, bias,
                          c1.getStridesAttr(), c2.getStridesAttr());
  add.getC().replaceAllUsesWith(sum.getY());
  add->erase();
  c1->erase();
  c2->erase();
  return true;
}

struct FuseConvSumPass : impl::FuseConvSumBase<FuseConvSumPass> {
  using FuseConvSumBase::FuseConvSumBase;
  void runOnOperation() override {
    llvm::SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds)
      fuse(add, balance);
  }
};

} // namespace
} // namespace cuts

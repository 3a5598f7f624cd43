//===- FuseMatMulAdd.cpp - MatMul + Add as one Gemm-like op ---------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"

namespace cuts {
#define GEN_PASS_DEF_FUSEMATMULADD
#include "compiler/passes/Passes.h.inc"

namespace {

bool fuse(AddOp add) {
  for (unsigned k = 0; k < 2; ++k) {
    auto mm = add->getOperand(k).getDefiningOp<MatMulOp>();
    mlir::Value c = add->getOperand(1 - k);
    if (!mm || !mm->hasOneUse() || mm.getType() != add.getType() ||
        !llvm::isa<mlir::FloatType>(add.getType().getElementType()))
      continue;
    auto product = mm.getType().getShape();
    auto cShape = llvm::cast<mlir::RankedTensorType>(c.getType()).getShape();
    auto b = broadcastShapes(product, cShape);
    if (!b || llvm::ArrayRef<int64_t>(*b) != product)
      continue;
    mlir::OpBuilder builder(add);
    auto fused = builder.create<MatMulAddOp>(
        add.getLoc(), add.getType(), mlir::ValueRange{mm.getA(), mm.getB(), c},
        mm->getAttrs());
    add.getC().replaceAllUsesWith(fused.getY());
    add->erase();
    mm->erase();
    return true;
  }
  return false;
}

struct FuseMatMulAddPass : impl::FuseMatMulAddBase<FuseMatMulAddPass> {
  void runOnOperation() override {
    llvm::SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (auto add : adds)
      (void)fuse(add);
  }
};
} // namespace
} // namespace cuts

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

mlir::RankedTensorType rankedType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

// reshape(gemm(A, B, C), [..., N]) with A [M, K] (GPT-2's Conv1D as both
// exporters write it, A a flattening reshape), plain alpha and beta, A
// untransposed and C a bias: the batched matmul_add(reshape(A, [..., K]),
// B, C) it is, whose epilogue can then take the residual add or GELU after
// it, as BERT's does.
bool unflatten(ReshapeOp out) {
  auto gemm = out.getData().getDefiningOp<GemmOp>();
  if (!gemm || !gemm->hasOneUse() || gemm.getTransA() ||
      gemm.getAlpha().convertToFloat() != 1.0f ||
      (gemm.getC() && gemm.getBeta().convertToFloat() != 1.0f))
    return false;
  auto ys = rankedType(out).getShape();
  auto as = rankedType(gemm.getA()).getShape();
  if (ys.size() < 3 || ys.back() != rankedType(gemm).getShape().back())
    return false;
  if (gemm.getC()) {
    auto c = rankedType(gemm.getC()).getShape();
    if (c.size() > 1 && c.front() != 1)
      return false; // a full [M, N] addend, not a bias
  }
  mlir::OpBuilder b(out);
  llvm::SmallVector<int64_t> shape(ys.drop_back());
  shape.push_back(as.back());
  mlir::Value x = b.create<ReshapeOp>(out.getLoc(), gemm.getA(),
                                      b.getDenseI64ArrayAttr(shape));
  auto transB = gemm.getTransB() ? b.getUnitAttr() : mlir::UnitAttr();
  mlir::Value y = gemm.getC()
                      ? b.create<MatMulAddOp>(out.getLoc(), out.getType(), x,
                                              gemm.getB(), gemm.getC(), transB)
                            .getY()
                      : b.create<MatMulOp>(out.getLoc(), out.getType(), x,
                                           gemm.getB(), transB)
                            .getY();
  out.getReshaped().replaceAllUsesWith(y);
  out->erase();
  gemm->erase();
  return true;
}

struct FuseMatMulAddPass : impl::FuseMatMulAddBase<FuseMatMulAddPass> {
  void runOnOperation() override {
    llvm::SmallVector<ReshapeOp> reshapes;
    getOperation().walk([&](ReshapeOp r) { reshapes.push_back(r); });
    for (auto r : reshapes)
      (void)unflatten(r);
    llvm::SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (auto add : adds)
      (void)fuse(add);
  }
};
} // namespace
} // namespace cuts

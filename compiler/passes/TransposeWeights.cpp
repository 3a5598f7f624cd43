//===- TransposeWeights.cpp - 16-bit matmul weights as Gemm's B^T ---------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"

#include <cstring>
#include <vector>

namespace cuts {
#define GEN_PASS_DEF_TRANSPOSEWEIGHTS
#include "compiler/passes/Passes.h.inc"

namespace {

mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

// W [K, N] as its transpose [N, K]; null unless W is a 2-D 16-bit float
// constant used once.
mlir::ElementsAttr transposedWeight(mlir::Value w) {
  mlir::Attribute attr;
  auto t = tensorType(w);
  if (t.getRank() != 2 || !w.hasOneUse() ||
      !(t.getElementType().isF16() || t.getElementType().isBF16()) ||
      !mlir::matchPattern(w, mlir::m_Constant(&attr)))
    return nullptr;
  const int64_t K = t.getDimSize(0), N = t.getDimSize(1);
  auto type = mlir::RankedTensorType::get({N, K}, t.getElementType());
  // Weights: their 16-bit words moved as they are.
  if (auto res = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(attr)) {
    mlir::AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob || int64_t(blob->getData().size()) != 2 * K * N)
      return nullptr;
    const char *in = blob->getData().data();
    std::vector<char> out(size_t(2 * K * N));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        std::memcpy(&out[size_t(2 * (n * K + k))], in + 2 * (k * N + n), 2);
    return rawAttr(type, out, "transposed_weight");
  }
  auto host = toHost(attr);
  if (!host)
    return nullptr;
  HostTensor out(type);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      out.f[n * K + k] = host->f[k * N + n]; // already of the element type
  return toAttr(out, "transposed_weight");
}

// C of matmul_add as Gemm's C for the product's [M, N] view: a scalar or a
// per-column vector as it is, Y's shape viewed as [M, N]; null otherwise.
mlir::Value gemmAddend(mlir::OpBuilder &b, mlir::Value c,
                       mlir::RankedTensorType y, int64_t M) {
  auto t = tensorType(c);
  auto shape = t.getShape();
  const int64_t N = y.getShape().back();
  if (t.getNumElements() == 1 ||
      (t.getNumElements() == N && !shape.empty() && shape.back() == N))
    return t.getRank() <= 1
               ? c
               : b.create<ReshapeOp>(
                     c.getLoc(),
                     mlir::RankedTensorType::get(
                         {t.getNumElements() == 1 ? 1 : N}, t.getElementType()),
                     c,
                     b.getDenseI64ArrayAttr({t.getNumElements() == 1 ? 1 : N}));
  if (shape == y.getShape())
    return y.getRank() == 2
               ? c
               : b.create<ReshapeOp>(
                     c.getLoc(),
                     mlir::RankedTensorType::get({M, N}, t.getElementType()), c,
                     b.getDenseI64ArrayAttr({M, N}));
  return nullptr;
}

// matmul(A, W) or matmul_add(A, W, C) as reshape(gemm(reshape(A), W^T, C',
// transB = 1)); false where the pattern does not hold.
bool rewrite(mlir::Operation *op) {
  mlir::Value a = op->getOperand(0), w = op->getOperand(1);
  mlir::Value c = op->getNumOperands() > 2 ? op->getOperand(2) : nullptr;
  auto at = tensorType(a);
  auto y = llvm::cast<mlir::RankedTensorType>(op->getResult(0).getType());
  if (at.getRank() < 2 || at.getElementType() != y.getElementType())
    return false;
  mlir::ElementsAttr wt = transposedWeight(w);
  if (!wt)
    return false;
  const int64_t K = at.getShape().back(), N = y.getShape().back();
  const int64_t M = at.getNumElements() / std::max<int64_t>(K, 1);
  mlir::OpBuilder b(op);
  auto loc = op->getLoc();
  auto elem = y.getElementType();
  mlir::Value cc;
  if (c && !(cc = gemmAddend(b, c, y, M)))
    return false;
  mlir::Value a2 = a;
  if (at.getRank() != 2)
    a2 = b.create<ReshapeOp>(loc, mlir::RankedTensorType::get({M, K}, elem), a,
                             b.getDenseI64ArrayAttr({M, K}));
  mlir::Value wT = b.create<ConstantOp>(loc, wt.getShapedType(), wt);
  auto gemm =
      b.create<GemmOp>(loc, mlir::RankedTensorType::get({M, N}, elem), a2, wT,
                       cc, b.getF32FloatAttr(1.0f), b.getF32FloatAttr(1.0f),
                       b.getBoolAttr(false), b.getBoolAttr(true));
  mlir::Value out = gemm.getY();
  if (y.getRank() != 2)
    out =
        b.create<ReshapeOp>(loc, y, out, b.getDenseI64ArrayAttr(y.getShape()));
  op->getResult(0).replaceAllUsesWith(out);
  mlir::Operation *weight = w.getDefiningOp();
  op->erase();
  if (weight && weight->use_empty())
    weight->erase();
  return true;
}

struct TransposeWeightsPass : impl::TransposeWeightsBase<TransposeWeightsPass> {
  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> ops;
    getOperation().walk([&](mlir::Operation *op) {
      if (llvm::isa<MatMulOp, MatMulAddOp>(op))
        ops.push_back(op);
    });
    for (mlir::Operation *op : ops)
      (void)rewrite(op);
  }
};

} // namespace
} // namespace cuts

//===- TransposeWeights.cpp - 16-bit matmul weights stored transposed -----===//
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

// W [..., K, N] as its transpose [..., N, K] (each matrix of a batch);
// null unless W is a constant of tensor-core operands used once.
mlir::ElementsAttr transposedWeight(mlir::Value w, mlir::Operation *user) {
  mlir::Attribute attr;
  auto t = tensorType(w);
  const int64_t r = t.getRank();
  if (r < 2 || !w.hasOneUse() || !tensorCoreElement(t.getElementType(), user) ||
      !mlir::matchPattern(w, mlir::m_Constant(&attr)))
    return nullptr;
  const int64_t K = t.getDimSize(r - 2), N = t.getDimSize(r - 1);
  const int64_t batch = t.getNumElements() / (K * N);
  llvm::SmallVector<int64_t> shape(t.getShape());
  std::swap(shape[r - 2], shape[r - 1]);
  auto type = mlir::RankedTensorType::get(shape, t.getElementType());
  // Weights: their words moved as they are.
  if (auto res = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(attr)) {
    const int64_t eb = t.getElementTypeBitWidth() / 8;
    mlir::AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob || int64_t(blob->getData().size()) != eb * batch * K * N)
      return nullptr;
    const char *in = blob->getData().data();
    std::vector<char> out(size_t(eb * batch * K * N));
    for (int64_t m = 0; m < batch; ++m)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          std::memcpy(&out[size_t(eb * ((m * N + n) * K + k))],
                      in + eb * ((m * K + k) * N + n), eb);
    return rawAttr(type, out, "transposed_weight");
  }
  auto host = toHost(attr);
  if (!host)
    return nullptr;
  HostTensor out(type);
  for (int64_t m = 0; m < batch; ++m)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) // already of the element type
        out.f[(m * N + n) * K + k] = host->f[(m * K + k) * N + n];
  return toAttr(out, "transposed_weight");
}

// The product `op` reading bt as its B stored N x K: bt as operand 1,
// transB set.
void readTransposed(mlir::Operation *op, mlir::Value bt) {
  op->setOperand(1, bt);
  if (auto gemm = llvm::dyn_cast<GemmOp>(op))
    gemm.setTransB(true);
  else
    op->setAttr("transB", mlir::UnitAttr::get(op->getContext()));
}

// The product `op` reading W transposed: W replaced by its transpose and
// transB set; false where the pattern does not hold.
bool rewrite(mlir::Operation *op) {
  mlir::Value w = op->getOperand(1);
  mlir::ElementsAttr wt = transposedWeight(w, op);
  if (!wt)
    return false;
  mlir::OpBuilder b(op);
  readTransposed(op,
                 b.create<ConstantOp>(op->getLoc(), wt.getShapedType(), wt));
  if (mlir::Operation *weight = w.getDefiningOp();
      weight && weight->use_empty())
    weight->erase();
  return true;
}

// B = transpose(X, p) whose permutation puts X's innermost axis on B's
// rows: read as B^T = transpose(X, p with its last two entries swapped),
// which keeps the innermost axis innermost (rows move whole), or X itself
// where that permutation is the identity. BERT's K^T ([0, 2, 3, 1] of
// [B, S, H, D]) becomes the row move [0, 2, 1, 3] and a wgmma operand.
bool rewriteTransposeB(mlir::Operation *op) {
  auto t = op->getOperand(1).getDefiningOp<TransposeOp>();
  if (!t || !t->hasOneUse())
    return false;
  auto type = tensorType(t.getTransposed());
  llvm::SmallVector<int64_t> perm(t.getPerm());
  const size_t r = perm.size();
  if (r < 2 || perm[r - 2] != int64_t(r - 1) ||
      !tensorCoreElement(type.getElementType(), op))
    return false;
  std::swap(perm[r - 1], perm[r - 2]);
  llvm::SmallVector<int64_t> shape(type.getShape());
  std::swap(shape[r - 1], shape[r - 2]);
  bool identity = true;
  for (size_t i = 0; i < r; ++i)
    identity = identity && perm[i] == int64_t(i);
  mlir::OpBuilder b(op);
  mlir::Value bt = t.getData();
  if (!identity)
    bt = b.create<TransposeOp>(
        t.getLoc(), mlir::RankedTensorType::get(shape, type.getElementType()),
        t.getData(), b.getDenseI64ArrayAttr(perm));
  readTransposed(op, bt);
  t->erase();
  return true;
}

bool transposes(mlir::Operation *op) {
  if (auto mm = llvm::dyn_cast<MatMulOp>(op))
    return !mm.getTransB();
  if (auto mm = llvm::dyn_cast<MatMulAddOp>(op))
    return !mm.getTransB();
  if (auto gemm = llvm::dyn_cast<GemmOp>(op))
    return !gemm.getTransB();
  return false;
}

struct TransposeWeightsPass : impl::TransposeWeightsBase<TransposeWeightsPass> {
  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> ops;
    getOperation().walk([&](mlir::Operation *op) {
      if (transposes(op))
        ops.push_back(op);
    });
    for (mlir::Operation *op : ops)
      if (!rewrite(op))
        (void)rewriteTransposeB(op);
  }
};

} // namespace
} // namespace cuts

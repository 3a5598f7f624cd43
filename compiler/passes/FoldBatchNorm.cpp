//===- FoldBatchNorm.cpp - fold BatchNormalization into Conv --------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

namespace cuts {
#define GEN_PASS_DEF_FOLDBATCHNORM
#include "compiler/passes/Passes.h.inc"

namespace {

std::optional<HostTensor> constant(mlir::Value v) {
  mlir::Attribute attr;
  if (!v || !mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return std::nullopt;
  return toHost(attr);
}

// Folds bn(conv(X, W, B)) into conv(X, W', B'); false if the pattern or the
// constants are not there.
bool fold(BatchNormalizationOp bn) {
  auto conv = bn.getX().getDefiningOp<ConvOp>();
  if (!conv || !conv->hasOneUse() || conv.getChannelsLast())
    return false;
  auto w = constant(conv.getW());
  auto scale = constant(bn.getScale()), beta = constant(bn.getB());
  auto mean = constant(bn.getMean()), var = constant(bn.getVar());
  std::optional<HostTensor> b;
  if (conv.getB() && !(b = constant(conv.getB())))
    return false;
  if (!w || !scale || !beta || !mean || !var)
    return false;
  int64_t m = w->shape()[0], per = w->numel() / std::max<int64_t>(m, 1);
  double eps = bn.getEpsilon().convertToDouble();
  auto biasType = mlir::RankedTensorType::get({m}, w->type.getElementType());
  HostTensor newB(biasType);
  for (int64_t oc = 0; oc < m; ++oc) {
    double s = scale->f[oc] / std::sqrt(var->f[oc] + eps);
    for (int64_t k = 0; k < per; ++k)
      w->set(oc * per + k, w->f[oc * per + k] * s);
    double b0 = b ? b->f[oc] : 0.0;
    newB.set(oc, (b0 - mean->f[oc]) * s + beta->f[oc]);
  }
  mlir::OpBuilder builder(bn);
  auto loc = conv.getLoc();
  mlir::Value newW =
      builder.create<ConstantOp>(loc, w->type, toAttr(*w, "bn_folded_weight"));
  mlir::Value newBias =
      builder.create<ConstantOp>(loc, biasType, toAttr(newB, "bn_folded_bias"));
  auto fused = builder.create<ConvOp>(
      loc, bn.getType(), mlir::ValueRange{conv.getX(), newW, newBias},
      conv->getAttrs());
  bn.getY().replaceAllUsesWith(fused.getY());
  bn->erase();
  conv->erase();
  return true;
}

// A batch normalization no conv absorbs (DenseNet's, after a concat):
// x * s + t with s = scale / sqrt(var + eps), t = B - mean * s, both
// per-channel constants of shape [C, 1, ...] (channels on axis 1), which
// the code generator fuses like any elementwise chain.
bool toScaleShift(BatchNormalizationOp bn) {
  auto scale = constant(bn.getScale()), beta = constant(bn.getB());
  auto mean = constant(bn.getMean()), var = constant(bn.getVar());
  auto type = llvm::cast<mlir::RankedTensorType>(bn.getX().getType());
  if (!scale || !beta || !mean || !var || type.getRank() < 2 ||
      !llvm::isa<mlir::FloatType>(type.getElementType()))
    return false;
  int64_t c = type.getDimSize(1);
  llvm::SmallVector<int64_t> shape(type.getRank() - 1, 1);
  shape[0] = c;
  auto vt = mlir::RankedTensorType::get(shape, type.getElementType());
  HostTensor s(vt), t(vt);
  double eps = bn.getEpsilon().convertToDouble();
  for (int64_t k = 0; k < c; ++k) {
    double sk = scale->getF(k) / std::sqrt(var->getF(k) + eps);
    s.set(k, sk);
    t.set(k, beta->getF(k) - mean->getF(k) * sk);
  }
  mlir::OpBuilder b(bn);
  auto loc = bn.getLoc();
  mlir::Value sv = b.create<ConstantOp>(loc, vt, toAttr(s, "bn_scale"));
  mlir::Value tv = b.create<ConstantOp>(loc, vt, toAttr(t, "bn_shift"));
  mlir::Value y = b.create<MulOp>(loc, type, bn.getX(), sv);
  y = b.create<AddOp>(loc, type, y, tv);
  bn.getY().replaceAllUsesWith(y);
  bn->erase();
  return true;
}

struct FoldBatchNormPass : impl::FoldBatchNormBase<FoldBatchNormPass> {
  void runOnOperation() override {
    llvm::SmallVector<BatchNormalizationOp> bns;
    getOperation().walk([&](BatchNormalizationOp bn) { bns.push_back(bn); });
    for (auto bn : bns)
      if (!fold(bn))
        (void)toScaleShift(bn);
  }
};
} // namespace
} // namespace cuts

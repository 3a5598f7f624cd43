//===- ConvertPrecision.cpp - fp16 / bf16 storage of a model --------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <sstream>

namespace cuts {
#define GEN_PASS_DEF_CONVERTPRECISION
#include "compiler/passes/Passes.h.inc"

namespace {

/// t with its fp32 elements as `half`; other types unchanged.
mlir::Type narrowed(mlir::Type t, mlir::Type half) {
  auto r = llvm::dyn_cast<mlir::RankedTensorType>(t);
  return r && r.getElementType().isF32() ? r.clone(half) : t;
}

std::string nameOf(mlir::Operation *op) {
  if (auto loc = llvm::dyn_cast<mlir::NameLoc>(op->getLoc()))
    return op->getName().getStringRef().str() + " (node " +
           loc.getName().str() + ")";
  return op->getName().getStringRef().str();
}

/// Statistics an op defines as fp32 whatever its input (ONNX
/// LayerNormalization's mean and inverse standard deviation).
bool keepsF32(mlir::OpResult r) {
  return llvm::isa<LayerNormalizationOp>(r.getOwner()) &&
         r.getResultNumber() > 0;
}

struct ConvertPrecisionPass : impl::ConvertPrecisionBase<ConvertPrecisionPass> {
  using ConvertPrecisionBase::ConvertPrecisionBase;

  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    mlir::MLIRContext *ctx = &getContext();
    // tf32 keeps every tensor fp32: the function only allows its products
    // to round their operands (kTf32Attr).
    if (precision == "tf32" && ioPrecision.empty()) {
      func->setAttr(kTf32Attr, mlir::UnitAttr::get(ctx));
      return;
    }
    mlir::Type half;
    if (precision == "fp16")
      half = mlir::Float16Type::get(ctx);
    else if (precision == "bf16")
      half = mlir::BFloat16Type::get(ctx);
    if (!half ||
        (!ioPrecision.empty() && ioPrecision != precision.getValue())) {
      func.emitError("precision must be fp16, bf16 or tf32 and io-precision "
                     "empty or (fp16, bf16) the same");
      return signalPassFailure();
    }
    bool ok = true;
    func.walk([&](mlir::Operation *op) {
      if (ok && !convertAttributes(op, half))
        ok = false;
      for (mlir::OpResult r : op->getResults())
        if (!keepsF32(r))
          r.setType(narrowed(r.getType(), half));
    });
    if (!ok)
      return signalPassFailure();
    convertSignature(func, half);
  }

  /// Constants' values, constant_of_shape's value and casts' targets.
  bool convertAttributes(mlir::Operation *op, mlir::Type half) {
    if (auto cast = llvm::dyn_cast<CastOp>(op)) {
      if (cast.getTo().isF32())
        cast.setToAttr(mlir::TypeAttr::get(half));
      return true;
    }
    mlir::Attribute value = op->getAttr("value");
    if (!llvm::isa<ConstantOp, ConstantOfShapeOp>(op) || !value)
      return true;
    auto type = llvm::cast<mlir::ElementsAttr>(value).getShapedType();
    if (!type.getElementType().isF32())
      return true;
    auto to = llvm::cast<mlir::RankedTensorType>(narrowed(type, half));
    auto converted = convertValues(op, value, to);
    if (!converted)
      return false;
    op->setAttr("value", *converted);
    return true;
  }

  /// The values rounded to nearest even; +-FLT_MAX (a mask's "minus
  /// infinity" as exporters write it) to the format's largest value.
  std::optional<mlir::ElementsAttr> convertValues(mlir::Operation *op,
                                                  mlir::Attribute value,
                                                  mlir::RankedTensorType to) {
    if (auto res = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(value))
      return convertBlob(op, res, to);
    auto host = toHost(value);
    if (!host) {
      op->emitError("cannot read the constant's values");
      return std::nullopt;
    }
    const auto &sem =
        llvm::cast<mlir::FloatType>(to.getElementType()).getFloatSemantics();
    double largest = llvm::APFloat::getLargest(sem).convertToDouble();
    HostTensor out(to);
    for (int64_t k = 0; k < host->numel(); ++k) {
      double v = host->getF(k);
      if (std::fabs(v) == double(FLT_MAX))
        v = std::copysign(largest, v);
      double r = roundToType(to.getElementType(), v);
      if (std::isinf(r) && std::isfinite(v)) {
        overflow(op, v, largest);
        return std::nullopt;
      }
      out.set(k, r);
    }
    return toAttr(out, "converted");
  }

  /// convertValues for weights: fp32 words straight to 16-bit ones.
  std::optional<mlir::ElementsAttr>
  convertBlob(mlir::Operation *op, mlir::DenseResourceElementsAttr value,
              mlir::RankedTensorType to) {
    mlir::AsmResourceBlob *blob = value.getRawHandle().getBlob();
    const int64_t n = to.getNumElements();
    if (!blob || int64_t(blob->getData().size()) != 4 * n) {
      op->emitError("cannot read the constant's values");
      return std::nullopt;
    }
    const auto &sem =
        llvm::cast<mlir::FloatType>(to.getElementType()).getFloatSemantics();
    const float largest =
        float(llvm::APFloat::getLargest(sem).convertToDouble());
    const uint16_t infinity = *halfBits(to.getElementType(), INFINITY);
    const char *in = blob->getData().data();
    std::vector<char> out(size_t(2 * n));
    for (int64_t k = 0; k < n; ++k) {
      float v;
      std::memcpy(&v, in + 4 * k, 4);
      if (std::fabs(v) == FLT_MAX)
        v = std::copysign(largest, v);
      uint16_t bits = *halfBits(to.getElementType(), v);
      if ((bits & 0x7fffu) == infinity && std::isfinite(v)) {
        overflow(op, v, largest);
        return std::nullopt;
      }
      std::memcpy(out.data() + 2 * k, &bits, 2);
    }
    return rawAttr(to, out, "converted");
  }

  void overflow(mlir::Operation *op, double v, double largest) {
    std::ostringstream msg;
    msg << "--precision " << precision.getValue() << " cannot hold a constant "
        << v << " (largest " << largest << ")";
    for (mlir::Operation *user : op->getUsers()) {
      msg << ", read by " << nameOf(user);
      break;
    }
    op->emitError(msg.str());
  }

  /// fp32 inputs and outputs stay fp32 behind casts, or (io-precision)
  /// become the 16-bit type.
  void convertSignature(mlir::func::FuncOp func, mlir::Type half) {
    mlir::Block &body = func.getBody().front();
    mlir::OpBuilder b(func.getContext());
    b.setInsertionPointToStart(&body);
    for (mlir::BlockArgument arg : body.getArguments()) {
      mlir::Type t = narrowed(arg.getType(), half);
      if (t == arg.getType())
        continue;
      if (!ioPrecision.empty()) {
        arg.setType(t);
        continue;
      }
      auto cast =
          b.create<CastOp>(func.getLoc(), t, arg, mlir::TypeAttr::get(half));
      arg.replaceAllUsesExcept(cast.getResult(), cast);
    }
    auto ret = llvm::cast<mlir::func::ReturnOp>(body.getTerminator());
    b.setInsertionPoint(ret);
    llvm::SmallVector<mlir::Type> results;
    for (mlir::OpOperand &o : ret->getOpOperands()) {
      mlir::Type declared =
          func.getFunctionType().getResult(o.getOperandNumber());
      mlir::Type f32 = mlir::Float32Type::get(func.getContext());
      if (ioPrecision.empty() && narrowed(declared, half) != declared) {
        auto t = llvm::cast<mlir::RankedTensorType>(o.get().getType());
        o.set(b.create<CastOp>(ret.getLoc(), t.clone(f32), o.get(),
                               mlir::TypeAttr::get(f32)));
      }
      results.push_back(o.get().getType());
    }
    func.setType(b.getFunctionType(body.getArgumentTypes(), results));
  }
};

} // namespace
} // namespace cuts

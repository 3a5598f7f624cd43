//===- CutsDialect.h - the cuts graph dialect -------------------*- C++ -*-===//
#ifndef CUTS_DIALECT_CUTS_CUTSDIALECT_H
#define CUTS_DIALECT_CUTS_CUTSDIALECT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include "cuts/Dialect/Cuts/CutsDialect.h.inc"

namespace cuts {

/// A function's unit attribute (--precision tf32, cuts-convert-precision):
/// its fp32 products may round their operands to tf32 and run on tensor
/// cores. The tensors stay fp32.
inline constexpr llvm::StringLiteral kTf32Attr = "cuts.tf32";

/// Whether op's function carries kTf32Attr.
inline bool allowsTf32(mlir::Operation *op) {
  for (; op; op = op->getParentOp())
    if (op->hasAttr(kTf32Attr))
      return true;
  return false;
}

/// Whether elements of type t are tensor-core operands in op's function:
/// 16-bit floats, or fp32 where the function allows tf32.
inline bool tensorCoreElement(mlir::Type t, mlir::Operation *op) {
  return t.isF16() || t.isBF16() || (t.isF32() && allowsTf32(op));
}

} // namespace cuts

#endif // CUTS_DIALECT_CUTS_CUTSDIALECT_H

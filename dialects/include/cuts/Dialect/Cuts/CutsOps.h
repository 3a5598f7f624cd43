//===- CutsOps.h - ops of the cuts graph dialect ----------------*- C++ -*-===//
#ifndef CUTS_DIALECT_CUTS_CUTSOPS_H
#define CUTS_DIALECT_CUTS_CUTSOPS_H

#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace cuts::OpTrait {

/// The traits CutsOps.td declares; their meaning is documented there.
template <typename Op>
class Elementwise : public mlir::OpTrait::TraitBase<Op, Elementwise> {};
template <typename Op>
class DataMovement : public mlir::OpTrait::TraitBase<Op, DataMovement> {};
template <typename Op>
class View : public mlir::OpTrait::TraitBase<Op, View> {};

} // namespace cuts::OpTrait

#define GET_OP_CLASSES
#include "cuts/Dialect/Cuts/CutsOps.h.inc"

#endif // CUTS_DIALECT_CUTS_CUTSOPS_H

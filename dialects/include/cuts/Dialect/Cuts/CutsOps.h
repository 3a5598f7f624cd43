//===- CutsOps.h - ops of the cuts graph dialect ----------------*- C++ -*-===//
#ifndef CUTS_DIALECT_CUTS_CUTSOPS_H
#define CUTS_DIALECT_CUTS_CUTSOPS_H

#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "cuts/Dialect/Cuts/CutsOps.h.inc"

#endif // CUTS_DIALECT_CUTS_CUTSOPS_H

//===- CutsDialect.h - the cuts graph dialect -------------------*- C++ -*-===//
#ifndef CUTS_DIALECT_CUTS_CUTSDIALECT_H
#define CUTS_DIALECT_CUTS_CUTSDIALECT_H

#include "mlir/IR/Dialect.h"

#include "cuts/Dialect/Cuts/CutsDialect.h.inc"

#endif // CUTS_DIALECT_CUTS_CUTSDIALECT_H

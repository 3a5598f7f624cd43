//===- CutsDialect.cpp - the cuts graph dialect ---------------------------===//
#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "cuts/Dialect/Cuts/CutsOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

#include "cuts/Dialect/Cuts/CutsDialect.cpp.inc"

namespace cuts {

void CutsDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "cuts/Dialect/Cuts/CutsOps.cpp.inc"
      >();
}

Operation *CutsDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

} // namespace cuts

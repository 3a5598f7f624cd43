//===- Passes.h - graph clean-up passes of cuts -----------------*- C++ -*-===//
#ifndef CUTS_COMPILER_PASSES_PASSES_H
#define CUTS_COMPILER_PASSES_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace cuts {

#define GEN_PASS_DECL
#include "compiler/passes/Passes.h.inc"

/// The clean-up `cuts import` runs: remove Identity and Dropout, fold
/// constants, simplify data movement (gather_nd / and / or that only reshape
/// or broadcast), fold BatchNormalization into Conv, fuse MatMul + Add,
/// recognise decomposed GELUs, fold again and erase dead code.
void buildCleanupPipeline(mlir::OpPassManager &pm);

/// Registers every pass and the `cuts-cleanup` pipeline (for cuts-opt).
void registerPasses();

} // namespace cuts

#endif // CUTS_COMPILER_PASSES_PASSES_H

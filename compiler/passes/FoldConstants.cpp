//===- FoldConstants.cpp - evaluate ops with constant operands ------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace cuts {
#define GEN_PASS_DEF_FOLDCONSTANTS
#include "compiler/passes/Passes.h.inc"

namespace {
struct FoldConstantsPass : impl::FoldConstantsBase<FoldConstantsPass> {
  void runOnOperation() override {
    // No patterns: the greedy driver folds every op through its folder (and
    // the dialect's constant materialiser) and erases what became dead.
    mlir::RewritePatternSet none(&getContext());
    if (failed(mlir::applyPatternsAndFoldGreedily(getOperation(),
                                                  std::move(none))))
      signalPassFailure();
  }
};
} // namespace
} // namespace cuts

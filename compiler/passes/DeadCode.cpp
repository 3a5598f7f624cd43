//===- DeadCode.cpp - erase unused ops ------------------------------------===//
#include "compiler/passes/Passes.h"

#include "mlir/Transforms/RegionUtils.h"

namespace cuts {
#define GEN_PASS_DEF_DEADCODE
#include "compiler/passes/Passes.h.inc"

namespace {
struct DeadCodePass : impl::DeadCodeBase<DeadCodePass> {
  void runOnOperation() override {
    // Walk backwards so that an op's producers see it gone.
    auto &body = getOperation().getBody();
    for (mlir::Block &block : body)
      for (mlir::Operation &op :
           llvm::make_early_inc_range(llvm::reverse(block)))
        if (mlir::isOpTriviallyDead(&op))
          op.erase();
  }
};
} // namespace
} // namespace cuts

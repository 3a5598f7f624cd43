//===- RemoveIdentity.cpp - drop Identity and inference Dropout -----------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/CutsOps.h"

namespace cuts {
#define GEN_PASS_DEF_REMOVEIDENTITY
#include "compiler/passes/Passes.h.inc"

namespace {
struct RemoveIdentityPass : impl::RemoveIdentityBase<RemoveIdentityPass> {
  void runOnOperation() override {
    getOperation().walk([](mlir::Operation *op) {
      if (!llvm::isa<IdentityOp, DropoutOp>(op))
        return;
      op->getResult(0).replaceAllUsesWith(op->getOperand(0));
      op->erase();
    });
  }
};
} // namespace
} // namespace cuts

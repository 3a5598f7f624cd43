//===- Pipeline.cpp - the clean-up pipeline and pass registration ---------===//
#include "compiler/passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"

namespace cuts {
namespace {
#define GEN_PASS_REGISTRATION
#include "compiler/passes/Passes.h.inc"
} // namespace

void buildCleanupPipeline(mlir::OpPassManager &pm) {
  auto &fn = pm.nest<mlir::func::FuncOp>();
  fn.addPass(createRemoveIdentity());
  fn.addPass(createFoldConstants());
  fn.addPass(createSimplifyDataMovement());
  fn.addPass(createFoldBatchNorm());
  fn.addPass(createFuseMatMulAdd());
  fn.addPass(createFuseGelu());
  fn.addPass(createSplitReductions());
  fn.addPass(createFoldConstants());
  fn.addPass(createDeadCode());
}

void registerPasses() {
  registerCutsPasses();
  mlir::PassPipelineRegistration<>("cuts-cleanup",
                                   "The graph clean-up that `cuts import` runs",
                                   buildCleanupPipeline);
}

} // namespace cuts

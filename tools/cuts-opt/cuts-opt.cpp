//===- cuts-opt.cpp - run cuts passes on MLIR files (for lit tests) -------===//
#include "compiler/passes/Passes.h"
#include "cuts/Dialect/Cuts/CutsDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<cuts::CutsDialect, mlir::func::FuncDialect>();
  cuts::registerPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "cuts pass driver\n", registry));
}

//===- fuzz_import.cpp - libFuzzer target: ONNX bytes -> cleaned graph ----===//
//
// Any byte string must either import (and survive the clean-up passes) or
// be rejected with a message: never crash, hang, leak or abort.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxImporter.h"
#include "compiler/passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  std::string error;
  auto module = cuts::importOnnxBytes(
      ctx, llvm::StringRef(reinterpret_cast<const char *>(data), size), "", {},
      error);
  if (!module) {
    if (error.empty())
      std::abort(); // a rejection must say why
    return 0;
  }
  mlir::PassManager pm(&ctx);
  cuts::buildCleanupPipeline(pm);
  (void)pm.run(*module);
  return 0;
}

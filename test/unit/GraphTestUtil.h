// A cuts graph parsed from MLIR text for the tests of the model and the
// driver: the module, and its non-constant cuts ops in program order.
#ifndef CUTS_TEST_UNIT_GRAPHTESTUTIL_H
#define CUTS_TEST_UNIT_GRAPHTESTUTIL_H

#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "cuts/Dialect/Cuts/CutsOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <initializer_list>
#include <vector>

namespace cuts::test {

struct Graph {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<mlir::Operation *> ops; // non-constant ops, program order
  explicit Graph(const char *text) {
    ctx.loadDialect<CutsDialect, mlir::func::FuncDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
    REQUIRE(module);
    module->walk([&](mlir::Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "cuts" &&
          !llvm::isa<ConstantOp>(op))
        ops.push_back(op);
    });
  }
  std::vector<mlir::Operation *> pick(std::initializer_list<int> idx) const {
    std::vector<mlir::Operation *> v;
    for (int i : idx)
      v.push_back(ops[i]);
    return v;
  }
};

} // namespace cuts::test

#endif // CUTS_TEST_UNIT_GRAPHTESTUTIL_H

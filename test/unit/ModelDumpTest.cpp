//===- ModelDumpTest.cpp - every parameter set's bound, for offline study -===//
//
// Not a test (hidden: it runs only when asked for by its tag): dumps every
// parameter set of a model's distinct convs and matmuls with the bound's
// factors, so scripts/validate_rerank.py can re-rank an earlier GPU
// validation's timed sets under the current model without a GPU. An op of
// a shape dumped before gets one "#alias<TAB>op<TAB>first op" line.
//
//   EXP_MODEL=model.onnx EXP_OUT=sets.tsv [EXP_ARCH=h200] (then)
//     build/test/cuts-unit-tests "[.dump]"
//
// With EXP_SETS=FILE (lines "op<TAB>params", the timed sets of a
// validation), only those sets are written, each with its rank among all
// of its op's sets (best PUL first) and the op's total: at batch 64 a full
// dump of MobileNetV2 is tens of gigabytes.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxImporter.h"
#include "compiler/passes/Passes.h"
#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "perfmodel/Arch.h"
#include "perfmodel/Describe.h"
#include "perfmodel/Params.h"
#include "perfmodel/Roofline.h"
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace cuts;

TEST_CASE("dump every parameter set of a model's convs and matmuls",
          "[.dump]") {
  const char *path = std::getenv("EXP_MODEL");
  const char *outPath = std::getenv("EXP_OUT");
  if (!path || !outPath)
    return; // run by hand only
  mlir::MLIRContext ctx;
  ctx.loadDialect<CutsDialect, mlir::func::FuncDialect>();
  std::string err;
  ImportOptions io;
  auto module = importOnnxFile(ctx, path, io, err);
  REQUIRE(module);
  mlir::PassManager pm(&ctx);
  buildCleanupPipeline(pm);
  REQUIRE(succeeded(pm.run(*module)));
  // A copy: findArch returns an optional by value.
  std::optional<GpuArch> found =
      findArch(std::getenv("EXP_ARCH") ? std::getenv("EXP_ARCH") : "h200");
  REQUIRE(found);
  const GpuArch &arch = *found;
  FILE *f = std::fopen(outPath, "w");
  REQUIRE(f);
  std::fprintf(f,
               "op\tparams\tthreads\tblocks\tresident\tperSM\tpul\tgm\tsm\tw"
               "b\tcoefR\tcoefBc\tnLoad\tcompThread\tcompBlock\tnumTrans\toi"
               "TB\theadroom\ttlb\tregs\tsmem\tC\tlat\tchain\twork%s\n",
               std::getenv("EXP_SETS") ? "\trank\ttotal" : "");
  // EXP_SETS: op name -> the parameter sets to write.
  std::map<std::string, std::set<std::string>> only;
  if (const char *setsPath = std::getenv("EXP_SETS")) {
    std::ifstream in(setsPath);
    std::string line;
    while (std::getline(in, line)) {
      size_t tab = line.find('\t');
      if (tab != std::string::npos)
        only[line.substr(0, tab)].insert(line.substr(tab + 1));
    }
    REQUIRE(!only.empty());
  }
  std::map<std::string, std::string> seen; // op key -> the first op's name
  module->walk([&](mlir::Operation *op) {
    auto d = describeOp(op);
    // With EXP_SETS every kind (the named ops only); else the complex ops
    // and depthwise convs.
    if (!d || (only.empty() &&
               !(d->kind == OpKind::MatMul || d->kind == OpKind::Conv ||
                 d->kind == OpKind::DepthwiseConv)))
      return;
    std::string name = op->getName().getStringRef().str();
    if (auto l = llvm::dyn_cast<mlir::NameLoc>(op->getLoc()))
      name += " (" + l.getName().str() + ")";
    if (!only.empty()) {
      auto wanted = only.find(name);
      if (wanted == only.end())
        return;
      struct Key {
        double pul, headroom;
        size_t index;
      };
      std::vector<Key> keys;
      std::vector<std::pair<size_t, std::pair<TileParams, Bound>>> rows;
      forEachParams(*d, arch, [&](const TileParams &p) {
        Bound b = evaluateBound(*d, p, arch);
        keys.push_back({b.pul, b.headroom, keys.size()});
        if (wanted->second.count(paramsText(p)))
          rows.push_back({keys.size() - 1, {p, b}});
      });
      std::vector<size_t> rankOf(keys.size());
      std::stable_sort(
          keys.begin(), keys.end(), [](const Key &a, const Key &b) {
            return a.pul != b.pul ? a.pul > b.pul : a.headroom > b.headroom;
          });
      for (size_t r = 0; r < keys.size(); ++r)
        rankOf[keys[r].index] = r;
      for (auto &[index, pb] : rows) {
        const Bound &b = pb.second;
        std::fprintf(f,
                     "%s\t%s\t%lld\t%lld\t%lld\t%lld\t%g\t%g\t%g\t%g\t%g\t%g\t%"
                     "g\t%g\t%g\t%g\t%g\t%g\t%g\t%lld\t%lld\t%lld\t%g\t%g\t%"
                     "g\t%zu\t%zu\n",
                     name.c_str(), paramsText(pb.first).c_str(),
                     (long long)pb.first.threads(), (long long)b.numBlocks,
                     (long long)b.residentBlocks, (long long)b.blocksPerSM,
                     b.pul, b.gmRatio, b.smRatio, b.wbRatio, b.coefR, b.coefBc,
                     b.nLoad, b.compThread, b.compBlock, b.numTrans, b.oiTB,
                     b.headroom, b.timeLowerBound * 1e6, (long long)b.registers,
                     (long long)b.sharedBytes, (long long)d->C, b.latRatio,
                     b.latencyChainSeconds * 1e6, b.totalComp, rankOf[index],
                     keys.size());
      }
      return;
    }
    // An op of a shape already dumped: one line naming the op whose rows
    // it shares, so a validation that timed this op finds them.
    auto [it, fresh] = seen.emplace(d->key(), name);
    if (!fresh) {
      std::fprintf(f, "#alias\t%s\t%s\n", name.c_str(), it->second.c_str());
      return;
    }
    forEachParams(*d, arch, [&](const TileParams &p) {
      Bound b = evaluateBound(*d, p, arch);
      std::fprintf(f,
                   "%s\t%s\t%lld\t%lld\t%lld\t%lld\t%g\t%g\t%g\t%g\t%g\t%g\t%"
                   "g\t%g\t%g\t%g\t%g\t%g\t%g\t%lld\t%lld\t%lld\t%g\t%g\t%g\n",
                   name.c_str(), paramsText(p).c_str(), (long long)p.threads(),
                   (long long)b.numBlocks, (long long)b.residentBlocks,
                   (long long)b.blocksPerSM, b.pul, b.gmRatio, b.smRatio,
                   b.wbRatio, b.coefR, b.coefBc, b.nLoad, b.compThread,
                   b.compBlock, b.numTrans, b.oiTB, b.headroom,
                   b.timeLowerBound * 1e6, (long long)b.registers,
                   (long long)b.sharedBytes, (long long)d->C, b.latRatio,
                   b.latencyChainSeconds * 1e6, b.totalComp);
    });
  });
  std::fclose(f);
}

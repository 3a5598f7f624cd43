//===- cuts-dump-sets - every parameter set's bound, for offline study ----===//
//
// Writes every parameter set of a model's distinct convs, matmuls and
// depthwise convs with the bound's factors, one TSV row each, so that
// scripts/validate_rerank.py and validate_variants.py re-rank a GPU
// validation's timed sets under the current model without a GPU. An op of a
// shape written before gets one "#alias<TAB>op<TAB>first op" line.
//
//   cuts-dump-sets MODEL.onnx -o SETS.tsv [--arch h200] [--sets FILE]
//                  [--input-shape NAME=D0xD1x...]...
//
// With --sets FILE (lines "op<TAB>params", a validation's timed sets) only
// those sets are written, of any op kind, each with its rank among all of
// its op's sets (best PUL first) and the op's total: at batch 64 a full dump
// of MobileNetV2 is tens of gigabytes.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxImporter.h"
#include "compiler/passes/Passes.h"
#include "cuts/Dialect/Cuts/CutsDialect.h"
#include "perfmodel/Describe.h"
#include "perfmodel/ParamSearch.h"
#include "tools/support/Options.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace cuts;
using cuts::cli::error;

namespace {

// "cuts.conv (layer1.0.conv1)": how validation.json names an op.
std::string opLabel(mlir::Operation *op) {
  std::string name = op->getName().getStringRef().str();
  if (auto l = llvm::dyn_cast<mlir::NameLoc>(op->getLoc()))
    name += " (" + l.getName().str() + ")";
  return name;
}

void writeRow(FILE *f, const std::string &name, const OpDesc &d,
              const TileParams &p, const Bound &b) {
  std::fprintf(f,
               "%s\t%s\t%lld\t%lld\t%lld\t%lld\t%g\t%g\t%g\t%g\t%g\t%g\t%"
               "g\t%g\t%g\t%g\t%g\t%g\t%g\t%lld\t%lld\t%lld\t%g\t%g\t%g",
               name.c_str(), paramsText(p).c_str(), (long long)p.threads(),
               (long long)b.numBlocks, (long long)b.residentBlocks,
               (long long)b.blocksPerSM, b.pul, b.gmRatio, b.smRatio, b.wbRatio,
               b.coefR, b.coefBc, b.nLoad, b.compThread, b.compBlock,
               b.numTrans, b.oiTB, b.headroom, b.timeLowerBound * 1e6,
               (long long)b.registers, (long long)b.sharedBytes, (long long)d.C,
               b.latRatio, b.latencyChainSeconds * 1e6, b.totalComp);
}

// The named sets of op d, each with its rank among all of d's sets.
void writeRanked(FILE *f, const std::string &name, const OpDesc &d,
                 const std::set<std::string> &wanted, const GpuArch &arch) {
  struct Key {
    double pul, headroom;
    size_t index;
  };
  std::vector<Key> keys;
  std::vector<std::pair<size_t, std::pair<TileParams, Bound>>> rows;
  forEachParams(d, arch, [&](const TileParams &p) {
    Bound b = evaluateBound(d, p, arch);
    keys.push_back({b.pul, b.headroom, keys.size()});
    if (wanted.count(paramsText(p)))
      rows.push_back({keys.size() - 1, {p, b}});
  });
  std::vector<size_t> rankOf(keys.size());
  std::stable_sort(keys.begin(), keys.end(), [](const Key &a, const Key &b) {
    return a.pul != b.pul ? a.pul > b.pul : a.headroom > b.headroom;
  });
  for (size_t r = 0; r < keys.size(); ++r)
    rankOf[keys[r].index] = r;
  for (auto &[index, pb] : rows) {
    writeRow(f, name, d, pb.first, pb.second);
    std::fprintf(f, "\t%zu\t%zu\n", rankOf[index], keys.size());
  }
}

// Lines "op<TAB>params" of FILE: op name -> the parameter sets to write.
bool readSets(const std::string &path,
              std::map<std::string, std::set<std::string>> &only) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t tab = line.find('\t');
    if (tab != std::string::npos)
      only[line.substr(0, tab)].insert(line.substr(tab + 1));
  }
  return !only.empty();
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string model, out, archName = "h200", setsPath;
  ImportOptions io;
  for (cli::ArgList a(args); a.next();) {
    if (a.is("-o")) {
      if (!a.value(out))
        return error("", "-o needs a file name");
    } else if (a.is("--arch")) {
      if (!a.value(archName))
        return error("", "--arch needs a GPU name");
    } else if (a.is("--sets")) {
      if (!a.value(setsPath))
        return error("", "--sets needs a file (op<TAB>params lines)");
    } else if (int r = cli::parseInputShape(a, io.inputShapes)) {
      if (r < 0)
        return 1;
    } else if (int rc = cli::positional(a, model, "cuts-dump-sets", "model")) {
      return rc;
    }
  }
  if (model.empty() || out.empty())
    return error("", "usage: cuts-dump-sets MODEL.onnx -o SETS.tsv "
                     "[--arch ARCH] [--sets FILE] [--input-shape NAME=DIMS]");
  std::optional<GpuArch> arch = findArch(archName);
  if (!arch)
    return error("", "unknown --arch '" + archName + "'");
  std::map<std::string, std::set<std::string>> only;
  if (!setsPath.empty() && !readSets(setsPath, only))
    return error(setsPath, "no op<TAB>params lines");
  mlir::MLIRContext ctx;
  ctx.loadDialect<CutsDialect, mlir::func::FuncDialect>();
  std::string err;
  auto module = importOnnxFile(ctx, model, io, err);
  if (!module)
    return error(model, err);
  mlir::PassManager pm(&ctx);
  buildCleanupPipeline(pm);
  if (failed(pm.run(*module)))
    return error(model, "the clean-up passes failed");
  FILE *f = std::fopen(out.c_str(), "w");
  if (!f)
    return error(out, "cannot write");
  std::fprintf(f,
               "op\tparams\tthreads\tblocks\tresident\tperSM\tpul\tgm\tsm\tw"
               "b\tcoefR\tcoefBc\tnLoad\tcompThread\tcompBlock\tnumTrans\toi"
               "TB\theadroom\ttlb\tregs\tsmem\tC\tlat\tchain\twork%s\n",
               only.empty() ? "" : "\trank\ttotal");
  std::map<std::string, std::string> seen; // op key -> the first op's name
  module->walk([&](mlir::Operation *op) {
    auto d = describeOp(op);
    // With --sets every kind (the named ops only); else the complex ops and
    // depthwise convs.
    if (!d || (only.empty() &&
               !(d->kind == OpKind::MatMul || d->kind == OpKind::Conv ||
                 d->kind == OpKind::DepthwiseConv)))
      return;
    std::string name = opLabel(op);
    if (!only.empty()) {
      auto wanted = only.find(name);
      if (wanted != only.end())
        writeRanked(f, name, *d, wanted->second, *arch);
      return;
    }
    // An op of a shape already written: one line naming the op whose rows
    // it shares, so a validation that timed this op finds them.
    auto [it, fresh] = seen.emplace(d->key(), name);
    if (!fresh) {
      std::fprintf(f, "#alias\t%s\t%s\n", name.c_str(), it->second.c_str());
      return;
    }
    forEachParams(*d, *arch, [&](const TileParams &p) {
      writeRow(f, name, *d, p, evaluateBound(*d, p, *arch));
      std::fputc('\n', f);
    });
  });
  return std::fclose(f) == 0 ? 0 : error(out, "cannot write");
}

//===- Compile.cpp - the compile pipeline: graph to artifact --------------===//
//
// The stages, in order: every op checked against the code generator;
// candidates and the partition search with tuning (Candidates.h, Search.h);
// lowering the chosen groups into plan steps over a tensor table and NVRTC
// (Package.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Compile.h"

#include "compiler/driver/Package.h"
#include "compiler/driver/Search.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "perfmodel/Describe.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>

namespace cuts::driver {
namespace {

/// Every op must be one the code generator can make a kernel of on its own.
bool checkCoverage(mlir::func::FuncOp func, std::string &error) {
  for (mlir::Operation &op : func.getBody().front()) {
    // An all-reduce is a step of its own (Packager::addGroup).
    if (llvm::isa<ConstantOp, mlir::func::ReturnOp, AllReduceOp>(op) ||
        isViewOp(&op))
      continue;
    std::string why;
    if (!canGenerate({&op}, &why)) {
      error = opName(&op) + " cannot be compiled yet: " + why;
      return false;
    }
  }
  return true;
}

} // namespace

bool canGenerateGroup(llvm::ArrayRef<mlir::Operation *> ops) {
  return canGenerate(ops);
}

bool notCoveredYet(const std::string &error) {
  return error.find(" cannot be compiled yet: ") != std::string::npos ||
         error.find(", which an artifact cannot hold") != std::string::npos;
}

std::string syncJson(const std::vector<SyncDecision> &all) {
  auto us = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nullptr;
  };
  nlohmann::json syncs = nlohmann::json::array();
  for (const SyncDecision &d : all)
    syncs.push_back(
        {{"producer", d.producer},
         {"consumer", d.consumer},
         {"chosen", d.chosen},
         {"policy", d.policy},
         {"order", d.order},
         {"overPdl", d.overPdl},
         {"why", d.why},
         {"streamUs", d.streamUs},
         {"syncUs", d.syncUs},
         {"earlyTiles", d.earlyTiles},
         {"key", d.key},
         {"measured", d.measured
                          ? nlohmann::json{{"streamUs", d.measuredStreamUs},
                                           {"pdlUs", us(d.measuredPdlUs > 0
                                                            ? d.measuredPdlUs
                                                            : NAN)},
                                           {"syncUs", d.measuredSyncUs}}
                          : nlohmann::json(nullptr)}});
  return syncs.dump();
}

namespace {

nlohmann::json timingsObject(const CompileResult &r) {
  nlohmann::json groups = nlohmann::json::array();
  auto us = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nullptr;
  };
  for (const GroupTiming &t : r.timings)
    groups.push_back({{"ops", t.ops},
                      {"fusion", t.fusion},
                      {"boundUs", us(t.boundUs)},
                      {"generatedUs", us(t.generatedUs)},
                      {"libraryUs", us(t.libraryUs)},
                      {"library", t.library},
                      {"variant", t.variant},
                      {"chosen", t.chosenLibrary ? "library" : "generated"}});
  nlohmann::json syncs = nlohmann::json::parse(syncJson(r.syncs));
  return {{"groups", groups}, {"sync", syncs}};
}

} // namespace

std::string timingsJson(const std::vector<const CompileResult *> &results,
                        const std::vector<int64_t> &batches,
                        const std::string &arch) {
  nlohmann::json j =
      batches.empty() ? timingsObject(*results[0]) : nlohmann::json::object();
  j["arch"] = arch;
  if (!batches.empty()) {
    j["profiles"] = nlohmann::json::array();
    for (size_t p = 0; p < results.size(); ++p) {
      nlohmann::json one = timingsObject(*results[p]);
      one["batch"] = batches[p];
      j["profiles"].push_back(one);
    }
  }
  return j.dump(1) + "\n";
}

std::optional<CompileResult> compileModule(mlir::ModuleOp module,
                                           const CompileOptions &opts,
                                           std::string &error) {
  auto func = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!func) {
    error = "the module has no @main function";
    return std::nullopt;
  }
  if (!checkCoverage(func, error))
    return std::nullopt;
  CompileResult res;
  tune::Cache cache;
  if (!opts.tuningCache.empty() && !cache.load(opts.tuningCache, error))
    return std::nullopt;
  CandidateTable candidates(opts);
  auto report = searchAndTune(func, opts, candidates, cache, res, error);
  if (!report)
    return std::nullopt;

  auto codegenStart = std::chrono::steady_clock::now();
  Packager pkg(module, opts,
               opts.cost == CostSource::Model ? nullptr : &candidates, cache,
               res);
  if (!pkg.addInputs(error))
    return std::nullopt;
  {
    tune::Progress progress(opts.progress, "codegen", report->groups.size());
    for (size_t i = 0; i < report->groups.size(); ++i) {
      if (!pkg.addGroup(report->groups[i], error))
        return std::nullopt;
      progress.step(i + 1);
    }
  }
  if (!pkg.addOutputs(error) || !pkg.addSync(error))
    return std::nullopt;
  res.codegenSeconds = secondsSince(codegenStart);

  if (!opts.buildKernels)
    return res;
  auto nvrtcStart = std::chrono::steady_clock::now();
  if (!pkg.compileKernels(error))
    return std::nullopt;
  // A compile with a cache records the binaries it ships there, so the
  // next compile from that cache ships the same bytes.
  if (opts.cost != CostSource::Model && !opts.tuningCache.empty()) {
    pkg.recordBinaries(cache);
    if (!cache.save(opts.tuningCache, error))
      return std::nullopt;
  }
  res.nvrtcSeconds = secondsSince(nvrtcStart);
  return res;
}

} // namespace cuts::driver

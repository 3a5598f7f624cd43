//===- Validate.cpp - sample parameter sets to check the model on a GPU ---===//
#include "compiler/driver/Validate.h"

#include "codegen/emit/Nvrtc.h"
#include "compiler/driver/Lower.h"
#include "cuts/Dialect/Cuts/CutsOps.h"
#include "perfmodel/Describe.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace cuts::driver {

std::optional<std::vector<ValidationSample>>
sampleForValidation(mlir::ModuleOp module, const GpuArch &arch,
                    const std::string &computeArch, const PruneOptions &prune,
                    int samples, const std::vector<OpKind> &kinds,
                    const std::vector<std::string> &names, std::string &error) {
  auto func = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!func) {
    error = "the module has no @main function";
    return std::nullopt;
  }
  std::string toolkit = nvrtcVersion();
  std::vector<ValidationSample> out;
  std::set<std::string> seen;
  for (mlir::Operation &op : func.getBody().front()) {
    auto d = describeOp(&op);
    if (!d || std::find(kinds.begin(), kinds.end(), d->kind) == kinds.end())
      continue;
    if (!canGenerate({&op}))
      continue;
    auto loc = llvm::dyn_cast<mlir::NameLoc>(op.getLoc());
    std::string node = loc ? loc.getName().str() : "";
    if (!names.empty() &&
        std::none_of(names.begin(), names.end(), [&](const std::string &n) {
          return node.find(n) != std::string::npos;
        }))
      continue;
    // One op of each shape: the model's repeated layers are one sample.
    if (!seen.insert(d->key()).second)
      continue;
    // Every set scored, best PUL first.
    std::vector<Candidate> all;
    forEachParams(*d, arch, [&](const TileParams &p) {
      all.push_back({p, evaluateBound(*d, p, arch)});
    });
    std::stable_sort(all.begin(), all.end(),
                     [](const Candidate &a, const Candidate &b) {
                       return betterBound(a.bound, b.bound);
                     });
    int64_t n = int64_t(all.size());
    int64_t kept = keepCount(n, prune);
    // Half the samples from the kept sets and half from the pruned ones
    // (more from one side when the other has too few), each half at evenly
    // spaced ranks starting with the side's best.
    int64_t pruned = n - kept;
    int64_t fromKept =
        std::min(kept, std::max<int64_t>(samples / 2, samples - pruned));
    int64_t fromPruned = std::min(pruned, samples - fromKept);
    std::vector<int64_t> ranks;
    for (int64_t i = 0; i < fromKept; ++i)
      ranks.push_back(i * kept / fromKept);
    for (int64_t i = 0; i < fromPruned; ++i)
      ranks.push_back(kept + i * pruned / fromPruned);
    std::string name = op.getName().getStringRef().str();
    if (auto l = llvm::dyn_cast<mlir::NameLoc>(op.getLoc()))
      name += " (" + l.getName().str() + ")";
    for (int64_t r : ranks) {
      std::string why;
      auto gk = lowerGroup({&op}, all[r].params, "cuts_kernel", why);
      if (!gk)
        continue; // a set the generator refuses: not timed
      ValidationSample s;
      s.op = name + ": " + gk->kernel.summary;
      s.enumerated = n;
      s.rank = r;
      s.kept = r < kept;
      s.pul = all[r].bound.pul;
      s.timeLowerBoundUs = all[r].bound.timeLowerBound * 1e6;
      s.params = paramsText(all[r].params);
      s.candidate = tuneCandidate(gk->kernel, computeArch, toolkit);
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::string validationJson(const std::vector<ValidationSample> &s,
                           const std::string &arch) {
  nlohmann::json list = nlohmann::json::array();
  for (const ValidationSample &v : s)
    list.push_back({{"op", v.op},
                    {"enumerated", v.enumerated},
                    {"rank", v.rank},
                    {"kept", v.kept},
                    {"pul", v.pul},
                    {"timeLowerBoundUs", v.timeLowerBoundUs},
                    {"params", v.params},
                    {"key", v.candidate.key}});
  return nlohmann::json({{"arch", arch}, {"samples", list}}).dump(1) + "\n";
}

} // namespace cuts::driver

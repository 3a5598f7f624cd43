//===- Search.cpp - the partition search, tuned ---------------------------===//
#include "compiler/driver/Search.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace cuts::driver {
namespace {

using Clock = std::chrono::steady_clock;

/// Evaluate's cost from measured times: a group's fastest measured
/// candidate. What a search looks at and the cache lacks is `pending`.
class MeasuredCost {
public:
  MeasuredCost(CandidateTable &candidates, const tune::Cache &cache,
               double launch)
      : candidates(candidates), cache(cache), launch(launch) {}

  double operator()(llvm::ArrayRef<mlir::Operation *> ops,
                    const GroupEstimate &e);

  /// Before each search.
  void reset() {
    pending.clear();
    pendingKeys.clear();
    worstAchieved = INFINITY;
  }

  std::vector<tune::Candidate> pending;
  /// The smallest fraction of its bound a measured group achieved in the
  /// current search; the work above a kernel's launch (which is known: it
  /// is added back, not scaled).
  double worstAchieved = INFINITY;
  /// Unmeasured groups are priced at this fraction of their bound; at the
  /// bound when 0.
  double pricedAt = 0;

private:
  CandidateTable &candidates;
  const tune::Cache &cache;
  const double launch;
  std::map<std::string, bool> pendingKeys;
};

double MeasuredCost::operator()(llvm::ArrayRef<mlir::Operation *> ops,
                                const GroupEstimate &e) {
  const auto &list = candidates.of(ops, e);
  // No candidate, and the bound's set does not lower either: no kernel.
  if (list.empty() && !std::isfinite(boundCost(ops, e)))
    return INFINITY;
  bool any = false;
  for (const GroupCandidate &c : list) {
    if (cache.find(c.tc.key))
      any = true;
    else if (pendingKeys.emplace(c.tc.key, true).second)
      pending.push_back(c.tc);
  }
  if (!any)
    // Nothing measured: the lower bound, which sends the group to be
    // measured next round; when no round follows, the bound scaled as if
    // the group did as badly as the worst measured one, so an unmeasured
    // fusion (a ResNet-50 b64 3x3+1x1 pair: bound 323 us, measured 3815 us)
    // does not displace measured kernels merely for being unknown.
    return pricedAt > 0 ? launch + (e.time - launch) / pricedAt : e.time;
  double us;
  fastestMeasured(list, cache, us);
  if (std::isfinite(us) && us * 1e-6 > launch)
    worstAchieved =
        std::min(worstAchieved, (e.time - launch) / (us * 1e-6 - launch));
  return us * 1e-6; // +inf if every candidate failed
}

/// Times `pending` on this machine's GPU within what is left of the budget
/// and saves the cache.
bool measureRound(const std::vector<tune::Candidate> &pending,
                  const CompileOptions &opts, const std::string &arch,
                  double secondsLeft, int round, tune::Cache &cache,
                  CompileResult &res, std::string &error) {
  tune::MeasureOptions mo;
  mo.jobs = opts.jobs;
  mo.nvrtcWorker = opts.nvrtcWorker;
  mo.progress = opts.progress;
  mo.stats = &res.measureStats;
  if (opts.tuneSeconds > 0)
    mo.maxSeconds = secondsLeft;
  if (opts.progress != tune::ProgressMode::Off)
    std::fprintf(stderr, "tuning round %d: %zu candidates\n", round + 1,
                 pending.size());
  if (!tune::measure(pending, arch, cache, mo, error))
    return false;
  int measured = 0;
  for (const tune::Candidate &c : pending)
    measured += cache.find(c.key) != nullptr;
  res.measured += measured;
  if (measured < int(pending.size()))
    res.tuneBudgetSpent = true; // measure() stopped at maxSeconds
  return opts.tuningCache.empty() || cache.save(opts.tuningCache, error);
}

} // namespace

// A chained product is chosen only by measurement: on an H200 all but one
// the tuner timed lost to their two kernels apart (their chained part ran
// latency-bound, which the bound does not price). The model checks a
// shared pair's and a pooled GEMM's shapes, not their tile layouts.
double boundCost(llvm::ArrayRef<mlir::Operation *> ops,
                 const GroupEstimate &e) {
  if (e.fusion == "chain")
    return INFINITY;
  std::string why;
  if ((e.predecessor || e.fusion == "pooled") &&
      !lowerGroup(ops, e.best.params, "cuts_kernel", why,
                  e.predecessor ? &e.predecessorBest.params : nullptr))
    return INFINITY;
  return e.time;
}

std::optional<ExplainReport>
searchAndTune(mlir::func::FuncOp func, const CompileOptions &opts,
              CandidateTable &candidates, tune::Cache &cache,
              CompileResult &res, std::string &error) {
  ExplainOptions eo;
  eo.prune = opts.prune;
  eo.fusion = opts.fusion;
  eo.jobs = opts.jobs;
  // The rounds of search share one model: the parameter searches do not
  // depend on the costs (at batch 64 they are most of a search).
  FusionModel model(opts.arch, opts.prune, opts.fusion);
  eo.model = &model;
  eo.canFuse = [](llvm::ArrayRef<mlir::Operation *> ops) {
    return canGenerate(ops);
  };
  MeasuredCost measured(candidates, cache, opts.arch.launchSeconds);
  if (opts.cost == CostSource::Model)
    eo.cost = boundCost;
  else
    eo.cost = [&measured](llvm::ArrayRef<mlir::Operation *> ops,
                          const GroupEstimate &e) { return measured(ops, e); };
  auto search = [&]() -> std::optional<ExplainReport> {
    measured.reset();
    auto report = explainFunction(func, opts.arch, eo, error);
    if (report)
      res.searchSeconds += report->searchSeconds;
    return report;
  };

  auto tuneStart = Clock::now();
  std::optional<ExplainReport> report;
  const int maxRounds = 5;
  for (int round = 0; round < maxRounds; ++round) {
    // The last search: nothing it leaves unmeasured will be measured.
    if (opts.tuneSeconds > 0 && opts.tuneSeconds - secondsSince(tuneStart) <= 0)
      res.tuneBudgetSpent = true;
    bool last = opts.cost != CostSource::Measure || round + 1 == maxRounds ||
                res.tuneBudgetSpent;
    if (!(report = search()))
      return std::nullopt;
    // A last search that left groups unmeasured is redone with them priced
    // pessimistically (by what the first pass measured: the same cache
    // gives the same price, so a compile from the cache chooses the same).
    if (last && !measured.pending.empty() &&
        std::isfinite(measured.worstAchieved)) {
      measured.pricedAt = measured.worstAchieved;
      if (!(report = search()))
        return std::nullopt;
      res.unmeasuredPricedAt = measured.pricedAt;
      measured.pricedAt = 0;
    }
    res.tuneRounds = round + 1;
    if (measured.pending.empty() || last)
      break;
    if (!measureRound(measured.pending, opts, candidates.arch(),
                      opts.tuneSeconds - secondsSince(tuneStart), round, cache,
                      res, error))
      return std::nullopt;
  }
  res.unmeasured = int(measured.pending.size());
  if (!opts.candidatesOut.empty()) {
    std::ofstream f(opts.candidatesOut);
    f << tune::candidatesToJson(measured.pending, candidates.arch());
    if (!f) {
      error = opts.candidatesOut + ": cannot write";
      return std::nullopt;
    }
  }
  res.tuneSeconds = secondsSince(tuneStart) - res.searchSeconds;
  return report;
}

} // namespace cuts::driver

//===- PlanSync.cpp - cuSync pairs chosen by the performance model --------===//
//
// After the plan's steps exist: each two consecutive generated kernels where
// the second reads the first's output through a fetch the tile analysis
// follows (codegen/sync/TileSync.h) are a candidate pair. The model's
// estimate (wave quantisation against the pair's fixed cost) picks the
// pairs; each becomes the producer on the session's stream and the wait
// kernel and consumer on the side stream, forked after the last stream-0
// step before the producer and joined by the next stream-0 step (the run's
// last step counts the run: cuts_sync_epoch).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Package.h"

#include "codegen/emit/Cuda.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/sync/TileSync.h"
#include "perfmodel/Roofline.h"

#include <algorithm>

namespace cuts::driver {
namespace {

/// A pair is made where the model predicts at least this fraction of the
/// two kernels' time saved (about the estimate's error on the GPT-3 and
/// conv chains of cuts-sync-bench, where 2% picked only winners).
constexpr double kMinSyncGain = 0.02;
/// With the tuner's times, a policy must beat stream order and PDL by this
/// fraction, about the spread of the pair's replays.
constexpr double kMinMeasuredGain = 0.01;

// Whether kernel k reads its tensor `t` through fetch `f` only: a waited
// tensor read elsewhere (an epilogue operand) would not be waited for.
bool readsOnlyThrough(const codegen::Kernel &k, int t, int f) {
  for (size_t i = 0; i < k.fetches.size(); ++i)
    if (int(i) != f && k.fetches[i].tensor == t)
      return false;
  for (const dfg::Graph *g : {&k.body, &k.exit})
    for (int id : g->nodesWith(dfg::Op::Load)) {
      const dfg::Buffer &b = g->buffer(g->node(id).buffer);
      if (b.space == dfg::Space::Global && b.name == k.tensors[t].name)
        return false;
    }
  return true;
}

} // namespace

bool Packager::generatedStep(const rt::Step &s) const {
  return s.kernel >= 0 && uniqueOfKernel[size_t(s.kernel)] >= 0 &&
         !rawSources.count(uniqueOfKernel[size_t(s.kernel)]);
}

// A generated kernel after another or after a library call (cuBLASLt and
// cuDNN end in kernels, whose completion griddepcontrol.wait awaits), not
// after a copy or cuSync's wait and epoch kernels.
void Packager::markProgrammaticLaunches() {
  for (size_t i = 1; i < m.steps.size(); ++i) {
    rt::Step &s = m.steps[i];
    const rt::Step &before = m.steps[i - 1];
    const bool launched =
        generatedStep(before) ||
        (before.kernel >= 0 && m.kernels[size_t(before.kernel)].isLibrary());
    s.pdl = generatedStep(s) && launched && before.stream == s.stream &&
            s.after < 0 && !noPdl.count(s.kernel);
  }
  // Where a kernel's blocks and its dependent's fit the SMs side by side,
  // the dependent launches once each of the kernel's blocks is past its own
  // griddepcontrol.wait: its blocks wait on idle SMs, none packed onto SMs
  // that a later wave of either would need. On an H200 at batch 1 (fp16,
  // tuned) that made ResNet-50 4.6 % faster than stream order, against 3.3 %
  // with dependents launched at the blocks' exit; MobileNetV2 10.4 against
  // 7.4 %.
  for (size_t i = 0; i + 1 < m.steps.size(); ++i) {
    const rt::Step &s = m.steps[i], &next = m.steps[i + 1];
    if (!next.pdl || !generatedStep(s) ||
        m.kernels[size_t(s.kernel)].grid + m.kernels[size_t(next.kernel)].grid >
            opts.arch.numSM)
      continue;
    const int u = uniqueOfKernel[size_t(s.kernel)];
    if (unique[size_t(u)].post) // a cuSync producer lets its consumer launch
      continue;
    codegen::Kernel k = unique[size_t(u)];
    k.launchesDependentEarly = true;
    uniqueOfKernel[size_t(s.kernel)] = addUnique(k, "_early");
    m.kernels[size_t(s.kernel)].name =
        unique[size_t(uniqueOfKernel[size_t(s.kernel)])].name;
  }
}

namespace {
/// SyncDecision::order: T's order, "" for blockIdx order.
std::string orderText(const std::optional<codegen::sync::TileOrder> &o,
                      const codegen::sync::TileGrid &g) {
  return o ? o->text(g) : "";
}
} // namespace

int Packager::addStateTensor(const std::string &name, int64_t words) {
  rt::Tensor t;
  t.name = name;
  t.shape = {words};
  t.dtype = "int32";
  t.kind = rt::TensorKind::State;
  m.tensors.push_back(t);
  return int(m.tensors.size() - 1);
}

int Packager::addRawKernel(const std::string &name, const std::string &cuda,
                           const std::string &hip) {
  for (const auto &[u, src] : rawSources)
    if (unique[size_t(u)].name == name)
      return u;
  codegen::Kernel k;
  k.name = name;
  rawSources[int(unique.size())] = {cuda, hip};
  unique.push_back(k);
  return int(unique.size() - 1);
}

int Packager::addUnique(codegen::Kernel k, const std::string &suffix) {
  auto [it, fresh] =
      uniqueOf.emplace(kernelCode(codegen::emitSource(k)), int(unique.size()));
  if (fresh) {
    k.name += suffix + std::to_string(unique.size());
    unique.push_back(k);
  }
  return it->second;
}

std::optional<Packager::SyncPair> Packager::syncCandidate(size_t i,
                                                          SyncDecision &d) {
  const rt::Step &sp = m.steps[i], &sc = m.steps[i + 1];
  if (!generatedStep(sp) || !generatedStep(sc))
    return std::nullopt; // a copy or a library call: nothing to report
  const rt::KernelLaunch &lp = m.kernels[sp.kernel], &lc = m.kernels[sc.kernel];
  const codegen::Kernel &kp = unique[uniqueOfKernel[sp.kernel]];
  const codegen::Kernel &kc = unique[uniqueOfKernel[sc.kernel]];
  d.producer = lp.name, d.consumer = lc.name;
  // Arguments in the output's memory (it, or a view of it).
  auto reads = [&](size_t a) {
    return lp.outputs.size() == 1 &&
           rt::rootTensor(m, lc.args[a]) == rt::rootTensor(m, lp.outputs[0]);
  };
  std::vector<size_t> args;
  for (size_t a = 0; a < lc.args.size(); ++a)
    if (reads(a))
      args.push_back(a);
  if (args.empty()) {
    d.why = "the consumer does not read the producer's one output";
    return std::nullopt;
  }
  // Each argument that is the output, or a view of it, is a tensor the
  // consumer reads only through a tiled fetch (a product's A and B may
  // both be: Q and K of a fused Q|K|V product).
  std::vector<int> fetches;
  std::vector<codegen::sync::Dependence> deps;
  for (size_t a : args) {
    int fetch = -1;
    for (int f = 0; f < std::max<int>(kc.mma ? 2 : 1, int(kc.fetches.size()));
         ++f) {
      auto tf = codegen::sync::tiledFetch(kc, f);
      if (tf && tf->tensor == int(a) && !tf->mask)
        fetch = f;
    }
    if (fetch < 0 || !readsOnlyThrough(kc, int(a), fetch)) {
      d.why = "the consumer reads the producer's output outside its tiled "
              "fetch";
      return std::nullopt;
    }
    std::string why;
    auto dep = codegen::sync::dependence(kp, kc, fetch, why);
    if (!dep) {
      d.why = why;
      return std::nullopt;
    }
    fetches.push_back(fetch);
    deps.push_back(*dep);
  }
  auto timing = [&](const codegen::Kernel &k, int launch) {
    return codegen::sync::KernelTiming{
        kernelUs[size_t(launch)],
        std::max<int64_t>(1, blocksPerSM(k.desc, k.params, opts.arch))};
  };
  // Untimed, a pair runs over PDL wherever the GPU has it.
  const bool overPdl = opts.arch.hasPdl();
  std::optional<SyncPair> best;
  std::map<std::string, std::optional<codegen::sync::TileOrder>> orders;
  for (const codegen::sync::Policy &p : codegen::sync::policies(deps)) {
    const auto tp = timing(kp, sp.kernel), tc = timing(kc, sc.kernel);
    const codegen::sync::TileOrder order =
        codegen::sync::bestOrder(deps, p, tp, tc, opts.arch.numSM);
    if (!order.natural(deps[0].producer))
      orders[p.name] = order;
    auto e =
        codegen::sync::estimate(deps, p, tp, tc, opts.arch.numSM,
                                overPdl ? codegen::sync::kSyncOverPdlOverheadUs
                                        : codegen::sync::kSyncOverheadUs,
                                order);
    if (!best || e.gain() > best->estimate.gain())
      best = SyncPair{i, args, fetches, deps, p, e, {}, {}, overPdl};
    best->policies.push_back(p);
  }
  best->orders = std::move(orders);
  d.policy = best->policy.name, d.overPdl = overPdl;
  d.order = orderText(best->orders[best->policy.name], deps[0].producer);
  d.streamUs = best->estimate.streamUs, d.syncUs = best->estimate.syncUs;
  d.earlyTiles = best->estimate.earlyTiles;
  return best;
}

std::pair<codegen::Kernel, codegen::Kernel>
Packager::pairKernels(const SyncPair &p,
                      const codegen::sync::Policy &policy) const {
  codegen::Kernel post = unique[size_t(uniqueOfKernel[m.steps[p.step].kernel])];
  codegen::Kernel wait =
      unique[size_t(uniqueOfKernel[m.steps[p.step + 1].kernel])];
  auto order = p.orders.find(policy.name);
  post.post =
      codegen::TilePost{p.producer(), policy,
                        order != p.orders.end() ? order->second : std::nullopt};
  wait.waits.clear();
  for (size_t i = 0; i < p.fetches.size(); ++i)
    wait.waits.push_back(
        codegen::TileWait{codegen::sync::tiledFetch(wait, p.fetches[i])->tensor,
                          p.dependences[i], policy});
  return {post, wait};
}

namespace {

/// The tuning cache's name for a pair: its two kernels' code on one arch.
std::string pairSignature(const std::string &producerSource,
                          const std::string &consumerSource,
                          const std::string &arch, const std::string &toolkit) {
  return tune::signature(
      kernelCode(producerSource) + kernelCode(consumerSource), arch, toolkit);
}

} // namespace

tune::PairCandidate Packager::pairCandidate(const SyncPair &p) const {
  const std::string arch = candidates->arch(), toolkit = nvrtcVersion();
  const rt::KernelLaunch &lp = m.kernels[m.steps[p.step].kernel];
  tune::PairCandidate c;
  c.producer = tuneCandidate(
      unique[size_t(uniqueOfKernel[m.steps[p.step].kernel])], arch, toolkit);
  c.consumer =
      tuneCandidate(unique[size_t(uniqueOfKernel[m.steps[p.step + 1].kernel])],
                    arch, toolkit);
  c.key = pairSignature(c.producer.source, c.consumer.source, arch, toolkit);
  c.producerWrites =
      int(std::find(lp.args.begin(), lp.args.end(), lp.outputs[0]) -
          lp.args.begin());
  c.consumerReads.assign(p.args.begin(), p.args.end());
  for (const codegen::sync::Policy &policy : p.policies) {
    auto [post, wait] = pairKernels(p, policy);
    c.policies.push_back({policy.name, tuneCandidate(post, arch, toolkit),
                          tuneCandidate(wait, arch, toolkit),
                          policy.semaphores(p.producer()),
                          post.post->order.has_value()});
  }
  c.hold = codegen::syncWaitKernel();
  c.epoch = codegen::syncEpochKernel();
  return c;
}

bool Packager::decide(SyncPair &p, SyncDecision &d) {
  const bool tuned = opts.cost != CostSource::Model && candidates;
  // The pair's key alone: not every policy's kernels, as pairCandidate has.
  const std::string key =
      tuned
          ? pairSignature(
                codegen::emitSource(
                    unique[size_t(uniqueOfKernel[m.steps[p.step].kernel])]),
                codegen::emitSource(
                    unique[size_t(uniqueOfKernel[m.steps[p.step + 1].kernel])]),
                candidates->arch(), nvrtcVersion())
          : "";
  d.key = key;
  auto timed = [&](const std::string &way) -> std::optional<double> {
    const tune::Cache::Entry *e =
        tuned ? cache.find(tune::pairKey(key, way)) : nullptr;
    return e ? e->us : std::nullopt;
  };
  auto stream = timed("stream");
  const codegen::sync::Policy *fastest = nullptr;
  double syncUs = 0;
  bool overPdl = false;
  for (const codegen::sync::Policy &policy : p.policies)
    for (bool pdl : {false, true})
      if (auto us = timed(pdl ? tune::overPdlWay(policy.name) : policy.name);
          us && (!fastest || *us < syncUs))
        fastest = &policy, syncUs = *us, overPdl = pdl;
  if (stream && fastest) {
    // The tuner's word: a policy is kept only where it beats stream order
    // and PDL, by more than the replays' spread.
    auto pdl = timed("pdl");
    d.measured = true;
    d.measuredStreamUs = *stream, d.measuredPdlUs = pdl.value_or(0);
    d.measuredSyncUs = syncUs, d.policy = fastest->name;
    d.order = orderText(p.orders[fastest->name], p.producer());
    p.policy = *fastest, p.overPdl = d.overPdl = overPdl;
    const double best = std::min(*stream, pdl.value_or(*stream));
    if (pdl && *pdl > *stream * (1 + kMinMeasuredGain))
      noPdl.insert(m.steps[p.step + 1].kernel);
    d.chosen = opts.sync == CompileOptions::Sync::All ||
               syncUs < best * (1 - kMinMeasuredGain);
    if (!d.chosen)
      d.why = "the tuner measured no gain";
    return d.chosen;
  }
  d.chosen = opts.sync == CompileOptions::Sync::All ||
             p.estimate.gain() >= kMinSyncGain * p.estimate.streamUs;
  if (!d.chosen)
    d.why = "the model predicts no gain";
  return d.chosen;
}

bool Packager::addSync(std::string &error) {
  if (opts.sync == CompileOptions::Sync::Off)
    return true;
  if (!addSyncPairs(error))
    return false;
  markProgrammaticLaunches();
  return true;
}

int Packager::addHelperLaunch(int u, std::vector<int> args,
                              std::vector<int> outputs, std::string summary) {
  rt::KernelLaunch l;
  l.name = unique[size_t(u)].name;
  l.summary = std::move(summary);
  l.args = std::move(args);
  l.outputs = std::move(outputs);
  l.bytes = 8; // two counters read, or one read and written
  m.kernels.push_back(l);
  res.contents.sources.push_back("");
  uniqueOfKernel.push_back(u);
  kernelUs.push_back(0);
  return int(m.kernels.size() - 1);
}

int Packager::synchronise(const SyncPair &p, size_t n, int epoch, int wait) {
  const int kp = m.steps[p.step].kernel, kc = m.steps[p.step + 1].kernel;
  const std::string tag = "cuts_sync" + std::to_string(n);
  const int sems =
      addStateTensor(tag + "_semaphores", p.policy.semaphores(p.producer()));
  const int started = addStateTensor(tag + "_started", 1);
  auto [post, wait4] = pairKernels(p, p.policy);
  uniqueOfKernel[size_t(kp)] = addUnique(post, "_post");
  uniqueOfKernel[size_t(kc)] = addUnique(wait4, "_wait");
  rt::KernelLaunch &lp = m.kernels[size_t(kp)], &lc = m.kernels[size_t(kc)];
  lp.name = unique[size_t(uniqueOfKernel[size_t(kp)])].name;
  lc.name = unique[size_t(uniqueOfKernel[size_t(kc)])].name;
  lp.args.insert(lp.args.end(), {sems, started});
  lp.outputs.insert(lp.outputs.end(), {sems, started});
  if (post.post->order) { // T's slot counter
    const int next = addStateTensor(tag + "_next", 1);
    lp.args.push_back(next);
    lp.outputs.push_back(next);
  }
  lc.args.insert(lc.args.end(), p.fetches.size(), sems); // one per wait
  lc.args.push_back(epoch);
  lp.summary += "; cuSync producer (" + p.policy.name + ")";
  lc.summary += "; cuSync consumer (" + p.policy.name + ")";
  return addHelperLaunch(wait, {started, epoch}, {},
                         "cuSync: holds " + lc.name + " until " + lp.name +
                             " has started");
}

bool Packager::addSyncPairs(std::string &error) {
  // Every pair the analysis follows; a tuned compile on a GPU times those
  // the model expects anything of (every one with --sync-all); then
  // disjoint pairs,
  // in order, each the producer after some stream-0 step to fork from.
  std::vector<std::optional<SyncPair>> found(m.steps.size());
  std::vector<SyncDecision> decisions(m.steps.size());
  std::vector<tune::PairCandidate> toTime;
  for (size_t i = 1; i + 1 < m.steps.size(); ++i) {
    found[i] = syncCandidate(i, decisions[i]);
    if (found[i] && opts.cost == CostSource::Measure && candidates &&
        (opts.sync == CompileOptions::Sync::All ||
         found[i]->estimate.gain() > 0))
      toTime.push_back(pairCandidate(*found[i]));
  }
  if (!toTime.empty()) {
    tune::MeasureOptions mo;
    mo.progress = opts.progress;
    if (!tune::measurePairs(toTime, candidates->arch(), cache, mo, error))
      return false;
  }
  std::vector<SyncPair> pairs;
  for (size_t i = 1; i + 1 < m.steps.size(); ++i) {
    SyncDecision &d = decisions[i];
    const bool made = found[i] && decide(*found[i], d);
    if (!d.producer.empty())
      res.syncs.push_back(d);
    if (made) {
      pairs.push_back(*found[i]);
      ++i;
    }
  }
  if (pairs.empty())
    return true;
  const int epoch = addStateTensor("cuts_sync_epoch", 1);
  using codegen::Target;
  const int wait =
      addRawKernel("cuts_sync_wait", codegen::syncWaitKernel(Target::Cuda),
                   codegen::syncWaitKernel(Target::Hip));
  const int count =
      addRawKernel("cuts_sync_epoch", codegen::syncEpochKernel(Target::Cuda),
                   codegen::syncEpochKernel(Target::Hip));
  std::vector<rt::Step> steps;
  int lastMain = -1, join = -1;     // in `steps`
  auto pushMain = [&](rt::Step s) { // the first after a side run joins it
    s.after = join, join = -1;
    steps.push_back(s);
    lastMain = int(steps.size() - 1);
  };
  size_t next = 0;
  for (size_t n = 0; n < pairs.size(); ++n) {
    const SyncPair &p = pairs[n];
    for (; next < p.step; ++next)
      pushMain(m.steps[next]);
    const int hold = synchronise(p, n, epoch, wait);
    // The consumer's stream forks after everything before the producer.
    const int fork = lastMain;
    pushMain(m.steps[p.step]);
    steps.push_back({hold, -1, -1, 1, fork});
    steps.push_back(m.steps[p.step + 1]);
    steps.back().stream = 1, steps.back().overPdl = p.overPdl;
    join = int(steps.size() - 1);
    next = p.step + 2;
  }
  for (; next < m.steps.size(); ++next)
    pushMain(m.steps[next]);
  pushMain({addHelperLaunch(count, {epoch}, {epoch}, "cuSync: counts the run"),
            -1, -1, 0, -1});
  m.steps = std::move(steps);
  return true;
}

} // namespace cuts::driver

//===- MeasurePair.cpp - cuSync pairs timed each way on the GPU -----------===//
//
// The tuner's half of the cuSync decision: a pair the model proposes is
// run in stream order, as a programmatic dependent and under each policy,
// and the driver keeps a policy only where it wins. Producer and consumer
// share the intermediate; their other arguments rotate over copies past
// twice the L2, as measure()'s do. Each way is `iters` iterations captured
// into one CUDA graph; the ways are replayed in turn, round by round, so
// clock and thermal drift fall on all of them alike. The synchronised ways
// run as the runtime runs them: the consumer on a side stream of the
// lowest priority forked before the producer, or over PDL (where the GPU
// has it) the consumer the producer's programmatic dependent on its
// stream; the epoch kernel last.
//
//===----------------------------------------------------------------------===//
#include "compiler/tune/Tuner.h"

#include "codegen/emit/Nvrtc.h"
#include "cuts/rt/CudaDriver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

namespace cuts::tune {
namespace {

namespace cu = rt::cuda;
using Clock = std::chrono::steady_clock;

constexpr int kRounds = 5;     // replays of each way's graph, timed
constexpr double kGraphMs = 3; // what one replay should take
constexpr double kDeadlockSeconds = 10;

struct Function {
  cu::CUmodule mod = nullptr;
  cu::CUfunction fn = nullptr;
  unsigned grid = 1, block = 1, shared = 0;
};

/// One way to run the pair: what it enqueues for one iteration on buffer
/// set `set`, and whether it uses the state (zeroed before each replay).
struct Way {
  Way(std::string name, std::function<cu::CUresult(size_t)> enqueue,
      bool synchronised = false)
      : name(std::move(name)), enqueue(std::move(enqueue)),
        synchronised(synchronised) {}
  std::string name;
  std::function<cu::CUresult(size_t set)> enqueue;
  bool synchronised = false;
  cu::CUgraphExec exec = nullptr;
  std::vector<float> ms;
};

/// GPU 0's context, streams and events for timing pairs; everything a pair
/// loads or allocates is released with it.
class PairBench {
public:
  ~PairBench();
  bool open(std::string &error);
  bool time(const PairCandidate &p, const std::string &arch, Cache &cache,
            std::string &error);

private:
  bool fail(cu::CUresult r, const std::string &what, std::string &error);
  cu::CUresult launch(const Function &f, cu::CUstream s,
                      std::vector<cu::CUdeviceptr> args, bool pdl = false);
  /// Waits for the main stream (which joins the side stream), giving up
  /// after kDeadlockSeconds: a consumer waiting for a tile never posted.
  cu::CUresult finish(bool &hung);
  cu::CUresult replay(Way &w, bool timed);
  bool load(const Candidate &c, const std::optional<NvrtcResult> &cubin,
            Function &f);
  bool measureWays(const PairCandidate &p, size_t copies,
                   cu::CUdeviceptr intermediate,
                   const std::vector<cu::CUdeviceptr> &outputs, Cache &cache,
                   std::string &error);
  cu::CUresult capture(Way &w, int iters, size_t copies);
  void release();

  const cu::Driver *d = nullptr;
  int l2 = 0;
  bool pdl = false;
  cu::CUstream main = nullptr, side = nullptr;
  cu::CUevent e0 = nullptr, e1 = nullptr, fork = nullptr, join = nullptr;
  std::vector<cu::CUmodule> modules;
  cu::CUdeviceptr slab = 0;
  cu::CUdeviceptr state = 0;
  size_t stateWords = 0;
  std::vector<Way> ways;
};

bool PairBench::open(std::string &error) {
  if (!(d = cu::driver(error)))
    return false;
  cu::CUdevice dev;
  cu::CUcontext ctx;
  int major = 0, least = 0, greatest = 0;
  if (d->cuDeviceGet(&dev, 0) || d->cuDevicePrimaryCtxRetain(&ctx, dev) ||
      d->cuCtxSetCurrent(ctx) || !d->hasGraphs()) {
    error = "no usable GPU 0 (with CUDA graphs) to time cuSync pairs on";
    d = nullptr;
    return false;
  }
  d->cuDeviceGetAttribute(&l2, 38 /* CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE */, dev);
  d->cuDeviceGetAttribute(
      &major, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  pdl = major >= 9 && d->cuLaunchKernelEx;
  if (cu::CUresult r = d->cuCtxGetStreamPriorityRange(&least, &greatest))
    return fail(r, "cuCtxGetStreamPriorityRange", error);
  if (cu::CUresult r = d->cuStreamCreate(&main, cu::CU_STREAM_NON_BLOCKING))
    return fail(r, "cuStreamCreate", error);
  if (cu::CUresult r = d->cuStreamCreateWithPriority(
          &side, cu::CU_STREAM_NON_BLOCKING, least))
    return fail(r, "cuStreamCreateWithPriority", error);
  for (cu::CUevent *e : {&e0, &e1})
    if (cu::CUresult r = d->cuEventCreate(e, cu::CU_EVENT_DEFAULT))
      return fail(r, "cuEventCreate", error);
  for (cu::CUevent *e : {&fork, &join})
    if (cu::CUresult r = d->cuEventCreate(e, cu::CU_EVENT_DISABLE_TIMING))
      return fail(r, "cuEventCreate", error);
  return true;
}

void PairBench::release() {
  for (Way &w : ways)
    if (w.exec)
      d->cuGraphExecDestroy(w.exec);
  ways.clear();
  for (cu::CUmodule m : modules)
    d->cuModuleUnload(m);
  modules.clear();
  if (slab)
    d->cuMemFree(slab);
  slab = state = 0;
}

PairBench::~PairBench() {
  if (!d)
    return;
  release();
  for (cu::CUevent e : {e0, e1, fork, join})
    if (e)
      d->cuEventDestroy(e);
  for (cu::CUstream s : {main, side})
    if (s)
      d->cuStreamDestroy(s);
}

bool PairBench::fail(cu::CUresult r, const std::string &what,
                     std::string &error) {
  error = "timing a cuSync pair: " + what + ": " + cu::errorString(r);
  return false;
}

cu::CUresult PairBench::launch(const Function &f, cu::CUstream s,
                               std::vector<cu::CUdeviceptr> args, bool asPdl) {
  std::vector<void *> params;
  for (cu::CUdeviceptr &a : args)
    params.push_back(&a);
  if (!asPdl)
    return d->cuLaunchKernel(f.fn, f.grid, 1, 1, f.block, 1, 1, f.shared, s,
                             params.data(), nullptr);
  cu::CUlaunchAttribute attr{};
  attr.id = cu::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value = 1;
  cu::CUlaunchConfig c{f.grid, 1, 1, f.block, 1, 1, f.shared, s, &attr, 1};
  return d->cuLaunchKernelEx(&c, f.fn, params.data(), nullptr);
}

cu::CUresult PairBench::finish(bool &hung) {
  auto start = Clock::now();
  cu::CUresult r;
  while ((r = d->cuStreamQuery(main)) == cu::CUDA_ERROR_NOT_READY) {
    if (std::chrono::duration<double>(Clock::now() - start).count() >
        kDeadlockSeconds) {
      hung = true;
      return r;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return r;
}

bool PairBench::load(const Candidate &c,
                     const std::optional<NvrtcResult> &cubin, Function &f) {
  if (!cubin || d->cuModuleLoadData(&f.mod, cubin->cubin.data()))
    return false;
  modules.push_back(f.mod);
  if (d->cuModuleGetFunction(&f.fn, f.mod, c.name.c_str()))
    return false;
  if (c.sharedBytes > 48 * 1024 &&
      d->cuFuncSetAttribute(f.fn,
                            cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            int(c.sharedBytes)))
    return false;
  f.grid = unsigned(c.grid), f.block = unsigned(c.block);
  f.shared = unsigned(c.sharedBytes);
  return true;
}

// The state zeroed before a synchronised way's replay (each way counts
// its own posts from zero), then the graph, timed or not.
cu::CUresult PairBench::replay(Way &w, bool timed) {
  cu::CUresult r = cu::CUDA_SUCCESS;
  if (w.synchronised)
    r = d->cuMemsetD32Async(state, 0, stateWords, main);
  if (!r && timed)
    r = d->cuEventRecord(e0, main);
  if (!r)
    r = d->cuGraphLaunch(w.exec, main);
  if (!r && timed)
    r = d->cuEventRecord(e1, main);
  return r;
}

} // namespace

bool PairBench::time(const PairCandidate &p, const std::string &arch,
                     Cache &cache, std::string &error) {
  release();
  // Compile: producer, consumer, hold, epoch, then each policy's two.
  std::vector<const std::string *> sources = {
      &p.producer.source, &p.consumer.source, &p.hold, &p.epoch};
  for (const PairCandidate::Synchronised &s : p.policies)
    sources.insert(sources.end(), {&s.post.source, &s.wait.source});
  std::vector<std::string> errors;
  int jobs = int(std::clamp<size_t>(std::thread::hardware_concurrency(), 1,
                                    sources.size()));
  auto cubins = compileAllWithNvrtc(sources, arch, jobs, errors);
  Candidate holdC, epochC;
  holdC.name = "cuts_sync_wait", epochC.name = "cuts_sync_epoch";
  Function P, C, hold, epoch;
  if (!load(p.producer, cubins[0], P) || !load(p.consumer, cubins[1], C)) {
    cache.put(pairKey(p.key, "stream"),
              {std::nullopt, "the pair does not compile or load: " +
                                 (errors[0] + errors[1]).substr(0, 300)});
    return true;
  }
  const bool helpers =
      load(holdC, cubins[2], hold) && load(epochC, cubins[3], epoch);

  // Buffers: one set is the producer's arguments and the consumer's but
  // those it reads the intermediate through; the state after the sets.
  auto reads = [&](size_t a) {
    return std::count(p.consumerReads.begin(), p.consumerReads.end(), int(a));
  };
  auto padded = [](uint64_t b) { return (b + 255) / 256 * 256; };
  uint64_t setBytes = 0;
  for (uint64_t b : p.producer.argBytes)
    setBytes += padded(b);
  for (size_t a = 0; a < p.consumer.argBytes.size(); ++a)
    if (!reads(a))
      setBytes += padded(p.consumer.argBytes[a]);
  setBytes = std::max<uint64_t>(setBytes, 256);
  size_t copies = size_t(std::clamp<uint64_t>(
      (2 * uint64_t(std::max(l2, 0)) + setBytes - 1) / setBytes, 1, 8));
  while (copies > 1 && setBytes * copies > (uint64_t(4) << 30))
    --copies;
  // The semaphores, then T's slot counter, cuts_started and the epoch.
  stateWords = 3;
  for (const PairCandidate::Synchronised &s : p.policies)
    stateWords = std::max<size_t>(stateWords, size_t(s.semaphores) + 3);
  if (cu::CUresult r = d->cuMemAlloc(&slab, setBytes * copies + stateWords * 4))
    return fail(r, "cuMemAlloc", error);
  state = slab + setBytes * copies;
  const cu::CUdeviceptr sems = state, next = state + 4 * (stateWords - 3),
                        started = next + 4, epochWord = started + 4;
  std::vector<std::vector<cu::CUdeviceptr>> pa(copies), ca(copies);
  for (size_t k = 0; k < copies; ++k) {
    cu::CUdeviceptr at = slab + k * setBytes;
    for (uint64_t b : p.producer.argBytes)
      pa[k].push_back(at), at += padded(b);
    for (size_t a = 0; a < p.consumer.argBytes.size(); ++a)
      if (reads(a)) {
        ca[k].push_back(pa[k][size_t(p.producerWrites)]);
      } else {
        ca[k].push_back(at), at += padded(p.consumer.argBytes[a]);
      }
  }
  // 0.5f everywhere: finite inputs for every op.
  if (cu::CUresult r =
          d->cuMemsetD32Async(slab, 0x3f000000u, setBytes * copies / 4, main))
    return fail(r, "cuMemsetD32Async", error);

  ways.emplace_back("stream", [&, this](size_t k) {
    cu::CUresult r = launch(P, main, pa[k]);
    return r ? r : launch(C, main, ca[k]);
  });
  if (pdl)
    ways.emplace_back("pdl", [&, this](size_t k) {
      cu::CUresult r = launch(P, main, pa[k]);
      return r ? r : launch(C, main, ca[k], true);
    });
  else
    cache.put(pairKey(p.key, "pdl"),
              {std::nullopt, "no programmatic dependent launch on this GPU"});
  std::vector<Function> posts(p.policies.size()), waits(p.policies.size());
  for (size_t i = 0; i < p.policies.size(); ++i) {
    const PairCandidate::Synchronised &s = p.policies[i];
    if (!helpers || !load(s.post, cubins[4 + 2 * i], posts[i]) ||
        !load(s.wait, cubins[5 + 2 * i], waits[i])) {
      cache.put(pairKey(p.key, s.policy),
                {std::nullopt, "does not compile or load: " +
                                   (errors[2] + errors[3] + errors[4 + 2 * i] +
                                    errors[5 + 2 * i])
                                       .substr(0, 300)});
      continue;
    }
    // The post's and the wait's arguments: the set's, then their state.
    auto postArgs = [&, i](size_t k) {
      auto pp = pa[k];
      pp.insert(pp.end(), {sems, started});
      if (p.policies[i].ordered) // T's slot counter
        pp.push_back(next);
      return pp;
    };
    auto waitArgs = [&](size_t k) {
      auto cc = ca[k];
      cc.insert(cc.end(), p.consumerReads.size(), sems); // one per wait
      cc.push_back(epochWord);
      return cc;
    };
    ways.emplace_back(
        s.policy,
        [&, this, i, postArgs, waitArgs](size_t k) {
          const auto pp = postArgs(k), cc = waitArgs(k);
          cu::CUresult r = d->cuEventRecord(fork, main);
          r = r ? r : d->cuStreamWaitEvent(side, fork, 0);
          r = r ? r : launch(posts[i], main, pp);
          r = r ? r : launch(hold, side, {started, epochWord});
          r = r ? r : launch(waits[i], side, cc);
          r = r ? r : d->cuEventRecord(join, side);
          r = r ? r : d->cuStreamWaitEvent(main, join, 0);
          return r ? r : launch(epoch, main, {epochWord});
        },
        true);
    if (pdl) // over PDL: one stream, no wait kernel, fork or join
      ways.emplace_back(
          overPdlWay(s.policy),
          [&, this, i, postArgs, waitArgs](size_t k) {
            const auto pp = postArgs(k), cc = waitArgs(k);
            cu::CUresult r = launch(posts[i], main, pp);
            r = r ? r : launch(waits[i], main, cc, true);
            return r ? r : launch(epoch, main, {epochWord});
          },
          true);
  }
  std::vector<cu::CUdeviceptr> outputs;
  for (size_t a = 0; a < ca[0].size(); ++a)
    if (p.consumer.argOutput[a])
      outputs.push_back(ca[0][a]);
  return measureWays(p, copies, pa[0][size_t(p.producerWrites)], outputs, cache,
                     error);
}

cu::CUresult PairBench::capture(Way &w, int iters, size_t copies) {
  cu::CUresult r =
      d->cuStreamBeginCapture(main, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r)
    return r;
  for (int it = 0; it < iters && !r; ++it)
    r = w.enqueue(size_t(it) % copies);
  cu::CUgraph g = nullptr;
  cu::CUresult er = d->cuStreamEndCapture(main, &g);
  r = r ? r : er;
  if (!r)
    r = d->cuGraphInstantiateWithFlags(&w.exec, g, 0);
  if (g)
    d->cuGraphDestroy(g);
  return r;
}

bool PairBench::measureWays(const PairCandidate &p, size_t copies,
                            cu::CUdeviceptr intermediate,
                            const std::vector<cu::CUdeviceptr> &outputs,
                            Cache &cache, std::string &error) {
  const std::string pair = p.producer.name + " + " + p.consumer.name;
  bool hung = false;
  auto done = [&](cu::CUresult r, const std::string &way) {
    if (!r)
      r = finish(hung);
    if (hung)
      error = "cuSync pair " + pair + " run " + way + " did not finish in " +
              std::to_string(int(kDeadlockSeconds)) + " s (a deadlock)";
    else if (r)
      fail(r, pair + " run " + way, error);
    return !r && !hung;
  };
  // Size the graphs from one eager run in stream order.
  float ms = 0;
  cu::CUresult r = ways[0].enqueue(0);
  if (!done(r, "in stream order"))
    return false;
  r = d->cuEventRecord(e0, main);
  r = r ? r : ways[0].enqueue(0);
  r = r ? r : d->cuEventRecord(e1, main);
  if (!done(r, "in stream order") || (r = d->cuEventElapsedTime(&ms, e0, e1)))
    return r ? fail(r, "cuEventElapsedTime", error) : false;
  const int iters =
      int(std::clamp(kGraphMs / std::max(double(ms), 1e-3), 2.0, 64.0));
  for (Way &w : ways)
    if ((r = capture(w, iters, copies)))
      return fail(r, "capturing " + pair + " run " + w.name, error);
  for (Way &w : ways) // the first replay uploads the graph
    if (!done(replay(w, false), w.name))
      return false;
  for (int round = 0; round < kRounds; ++round)
    for (Way &w : ways) {
      if (!done(replay(w, true), w.name))
        return false;
      if ((r = d->cuEventElapsedTime(&ms, e0, e1)))
        return fail(r, "cuEventElapsedTime", error);
      w.ms.push_back(ms / float(iters));
    }
  // Each way once more eagerly on the first set, the intermediate and the
  // outputs poisoned first: its outputs must be stream order's, bit for bit.
  std::vector<std::vector<char>> reference;
  for (Way &w : ways) {
    r = w.synchronised ? d->cuMemsetD32Async(state, 0, stateWords, main) : 0;
    r = r ? r
          : d->cuMemsetD32Async(
                intermediate, 0xffffffffu,
                p.producer.argBytes[size_t(p.producerWrites)] / 4, main);
    for (size_t o = 0, a = 0; a < p.consumer.argBytes.size(); ++a)
      if (p.consumer.argOutput[a] && !r)
        r = d->cuMemsetD32Async(outputs[o++], 0x7fbfffffu,
                                p.consumer.argBytes[a] / 4, main);
    if (!done(r ? r : w.enqueue(0), w.name))
      return false;
    std::vector<std::vector<char>> got;
    for (size_t o = 0, a = 0; a < p.consumer.argBytes.size(); ++a)
      if (p.consumer.argOutput[a]) {
        got.emplace_back(p.consumer.argBytes[a]);
        if ((r = d->cuMemcpyDtoH(got.back().data(), outputs[o++],
                                 got.back().size())))
          return fail(r, "cuMemcpyDtoH", error);
      }
    if (reference.empty())
      reference = std::move(got);
    else if (got != reference)
      w.ms.clear(); // recorded as failed below
  }
  for (Way &w : ways) {
    if (w.ms.empty()) {
      cache.put(pairKey(p.key, w.name),
                {std::nullopt, "its outputs differ from stream order's"});
      continue;
    }
    std::sort(w.ms.begin(), w.ms.end());
    char note[128];
    std::snprintf(note, sizeof note,
                  "median of %d graph replays of %d iterations, %zu buffer "
                  "sets",
                  kRounds, iters, copies);
    cache.put(pairKey(p.key, w.name),
              {double(w.ms[w.ms.size() / 2]) * 1e3, note});
  }
  return true;
}

bool measurePairs(const std::vector<PairCandidate> &pairs,
                  const std::string &arch, Cache &cache,
                  const MeasureOptions &opts, std::string &error) {
  std::vector<const PairCandidate *> todo;
  for (const PairCandidate &p : pairs)
    if (!cache.find(pairKey(p.key, "stream")))
      todo.push_back(&p);
  if (todo.empty())
    return true;
  PairBench bench;
  if (!bench.open(error))
    return false;
  Progress progress(opts.progress, "timing cuSync pairs", todo.size());
  for (size_t i = 0; i < todo.size(); ++i) {
    progress.step(i);
    if (!bench.time(*todo[i], arch, cache, error))
      return false;
  }
  progress.step(todo.size());
  return true;
}

} // namespace cuts::tune

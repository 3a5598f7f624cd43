//===- Measure.cpp - compile and time candidates on the GPU ---------------===//
//
// NVRTC runs on every core (CompileAhead) while GPU 0 times what is ready
// (Bench), candidate by candidate in level order; each result, a time or
// the reason there is none, goes into the tuning cache.
//
//===----------------------------------------------------------------------===//
#include "compiler/tune/NvrtcWorker.h"
#include "compiler/tune/Tuner.h"

#include "codegen/emit/Nvrtc.h"
#include "cuts/rt/Blas.h"
#include "cuts/rt/CudaDriver.h"
#include "cuts/rt/GraphMemsets.h"
#include "cuts/rt/Library.h"

#ifdef CUTS_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace cuts::tune {

std::vector<const Candidate *> measureOrder(const std::vector<Candidate> &all,
                                            const Cache &cache) {
  std::vector<const Candidate *> todo;
  std::map<std::string, bool> seen;
  for (const Candidate &c : all)
    if (!cache.find(c.key) && seen.emplace(c.key, true).second)
      todo.push_back(&c);
  std::stable_sort(todo.begin(), todo.end(),
                   [](const Candidate *a, const Candidate *b) {
                     return a->level < b->level;
                   });
  return todo;
}

void MeasureStats::add(const MeasureStats &o) {
  waitNvrtc += o.waitNvrtc;
  setup += o.setup;
  timing += o.timing;
  finish += o.finish;
  if (o.slowest > slowest) {
    slowest = o.slowest;
    slowestName = o.slowestName;
  }
}

namespace {

namespace cu = rt::cuda;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Runs fn when the scope ends, however it ends.
template <typename Fn> struct OnExit {
  Fn fn;
  ~OnExit() { fn(); }
};
template <typename Fn> OnExit(Fn) -> OnExit<Fn>;

/// An NVTX range named "cuts-tune:<key>" ('/' -> ':', which NVTX filters
/// read as nesting) around a candidate's one sizing launch, so a profiler
/// reads exactly one launch per candidate and names it:
///   ncu --nvtx --nvtx-include "regex:cuts-tune:.*/" --print-nvtx-rename kernel
/// (scripts/gpu_profile.sh). Free when no tool is attached.
struct NvtxRange {
  explicit NvtxRange(std::string name) {
#ifdef CUTS_HAVE_NVTX
    std::replace(name.begin(), name.end(), '/', ':');
    nvtxRangePushA(("cuts-tune:" + name).c_str());
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#ifdef CUTS_HAVE_NVTX
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange &) = delete;
  NvtxRange &operator=(const NvtxRange &) = delete;
};

/// Idle NVRTC workers, kept for the process's next measure() (`cuts tune`
/// measures in slices of 16 candidates).
class WorkerPool {
public:
  std::unique_ptr<NvrtcWorker> acquire(const std::string &exe,
                                       std::string &error) {
    {
      std::lock_guard<std::mutex> lock(m);
      if (!idle.empty()) {
        std::unique_ptr<NvrtcWorker> w = std::move(idle.back());
        idle.pop_back();
        return w;
      }
    }
    return NvrtcWorker::start(exe, error);
  }
  void release(std::unique_ptr<NvrtcWorker> w) {
    if (!w || !w->alive())
      return;
    std::lock_guard<std::mutex> lock(m);
    idle.push_back(std::move(w));
  }

private:
  std::mutex m;
  std::vector<std::unique_ptr<NvrtcWorker>> idle;
};

WorkerPool &workerPool() {
  static WorkerPool pool;
  return pool;
}

/// NVRTC on `jobs` threads, each through a worker process where there is
/// one (NvrtcWorker.h), ahead of the GPU. Once `overTime` holds, compiles
/// not yet started are skipped: left unmeasured, not recorded as failures.
class CompileAhead {
public:
  CompileAhead(const std::vector<const Candidate *> &todo,
               const std::string &arch, const MeasureOptions &opts,
               std::function<bool()> overTime)
      : todo(todo), arch(arch), workerExe(opts.nvrtcWorker),
        overTime(std::move(overTime)), compiled(todo.size()),
        errors(todo.size()), ready(todo.size()), skip(todo.size(), 0) {
    int jobs = opts.jobs > 0
                   ? opts.jobs
                   : int(std::max(1u, std::thread::hardware_concurrency()));
    for (int t = 0; t < jobs; ++t)
      pool.emplace_back([this] { work(); });
  }
  ~CompileAhead() { finish(); }

  /// Waits for candidate i; returns the seconds waited.
  double wait(size_t i) const {
    auto start = Clock::now();
    while (!ready[i])
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return since(start);
  }
  bool skipped(size_t i) const { return skip[i]; }
  const std::optional<NvrtcResult> &result(size_t i) const {
    return compiled[i];
  }
  const std::string &error(size_t i) const { return errors[i]; }

  /// Starts nothing more and joins the threads; the seconds that took.
  double finish() {
    auto start = Clock::now();
    stop = true;
    for (std::thread &t : pool)
      t.join();
    pool.clear();
    return since(start);
  }

private:
  void work() {
    std::unique_ptr<NvrtcWorker> worker;
    bool inProcess = workerExe.empty();
    for (size_t i; (i = next++) < todo.size();) {
      if (stop || overTime()) {
        stop = true;
        skip[i] = 1;                         // published by `ready`
      } else if (todo[i]->library.empty()) { // library calls compile nothing
        NvrtcOptions no;
        no.sourceName = todo[i]->name + ".cu";
        if (!inProcess && !worker) {
          std::string why;
          worker = workerPool().acquire(workerExe, why);
          inProcess = !worker; // it cannot start: compile here
        }
        if (worker) {
          compiled[i] = worker->compile(todo[i]->source, arch, errors[i], no);
          if (!worker->alive())
            worker.reset(); // it died on this source: failed; a new one next
        } else {
          compiled[i] = compileWithNvrtc(todo[i]->source, arch, errors[i], no);
        }
      }
      ready[i] = true;
    }
    workerPool().release(std::move(worker));
  }

  const std::vector<const Candidate *> &todo;
  const std::string &arch;
  std::string workerExe;
  std::function<bool()> overTime;
  std::vector<std::optional<NvrtcResult>> compiled;
  std::vector<std::string> errors;
  std::vector<std::atomic<bool>> ready;
  std::vector<char> skip;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
};

/// A candidate as something to launch: a generated kernel (its loaded
/// module) or a cuDNN / cuBLASLt call with its workspace size.
struct Launchable {
  const cu::Driver *d = nullptr;
  cu::CUmodule mod = nullptr;
  cu::CUfunction fn = nullptr;
  std::unique_ptr<rt::CudnnConv> conv;
  std::unique_ptr<rt::CublasLtGemm> gemm;
  size_t workspace = 0;
  bool library() const { return conv || gemm; }
  ~Launchable() {
    if (mod)
      d->cuModuleUnload(mod);
  }
};

/// How a candidate's launches were timed.
struct Timing {
  std::vector<float> ms; // per launch
  const char *how = "launches";
  bool slow = false; // one launch only: too slow to win
};

/// GPU 0 as the tuner uses it: a stream, one slab for the candidates'
/// arguments and one library workspace (both grown as needed), and the
/// cuDNN and cuBLASLt handles (created for the first library call).
class Bench {
public:
  explicit Bench(const MeasureOptions &opts) : opts(opts) {}
  ~Bench();
  bool open(std::string &error);

  /// Readies c to launch; false with the note the cache records for it.
  bool prepare(const Candidate &c, const std::optional<NvrtcResult> &cubin,
               const std::string &compileError, Launchable &l,
               std::string &note);
  /// Points `sets` at `copies` copies of c's arguments in the slab; false
  /// (with `error`) when device memory runs out.
  bool argumentSets(const Candidate &c,
                    std::vector<std::vector<cu::CUdeviceptr>> &sets,
                    std::string &error);
  /// Warms up, then times c's launches (tooSlowUs > 0: a first launch slower
  /// than that is the only one).
  cu::CUresult time(const Candidate &c, Launchable &l,
                    std::vector<std::vector<cu::CUdeviceptr>> &sets,
                    double tooSlowUs, Timing &t, std::string &note);

private:
  bool prepareLibrary(const Candidate &c, Launchable &l, std::string &why);
  cu::CUresult launch(const Candidate &c, Launchable &l,
                      std::vector<cu::CUdeviceptr> &args,
                      cu::CUdeviceptr workspace = 0);
  cu::CUresult timeOne(const Candidate &c, Launchable &l,
                       std::vector<cu::CUdeviceptr> &args, float &ms);
  cu::CUresult timeGraph(const Candidate &c, Launchable &l,
                         std::vector<std::vector<cu::CUdeviceptr>> &sets,
                         int iters, Timing &t, bool &captured);
  /// `buf` (of `bytes`) replaced by one of `need` bytes where it is smaller;
  /// false, with nothing held, where the device has no such memory.
  bool grow(cu::CUdeviceptr &buf, size_t &bytes, size_t need);
  /// Past this a graph's launches share the workspace (their memsets then
  /// stay in the chain): a model's session makes the same choice at 256 MiB.
  static constexpr size_t kMaxGraphRegionBytes = size_t(64) << 20;

  const MeasureOptions &opts;
  const cu::Driver *d = nullptr;
  int l2 = 0;
  cu::CUstream stream = nullptr;
  cu::CUevent e0 = nullptr, e1 = nullptr;
  cu::CUdeviceptr slab = 0, workspaceBuf = 0;
  size_t slabBytes = 0, workspaceBytes = 0;
  // A graph's launches' own workspaces (timeGraph), grown as needed.
  cu::CUdeviceptr regions = 0;
  size_t regionBytes = 0;
  std::unique_ptr<rt::CudnnHandle> cudnn;
  std::unique_ptr<rt::CublasLtHandle> lt;
};

bool Bench::open(std::string &error) {
  if (!(d = cu::driver(error)))
    return false;
  cu::CUdevice dev;
  cu::CUcontext ctx;
  if (d->cuDeviceGet(&dev, 0) != cu::CUDA_SUCCESS ||
      d->cuDevicePrimaryCtxRetain(&ctx, dev) != cu::CUDA_SUCCESS ||
      d->cuCtxSetCurrent(ctx) != cu::CUDA_SUCCESS) {
    error = "no usable GPU 0 for tuning";
    d = nullptr;
    return false;
  }
  d->cuDeviceGetAttribute(&l2, 38 /* CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE */, dev);
  d->cuStreamCreate(&stream, cu::CU_STREAM_NON_BLOCKING);
  d->cuEventCreate(&e0, cu::CU_EVENT_DEFAULT);
  d->cuEventCreate(&e1, cu::CU_EVENT_DEFAULT);
  return true;
}

Bench::~Bench() {
  if (!d)
    return;
  if (slab)
    d->cuMemFree(slab);
  if (workspaceBuf)
    d->cuMemFree(workspaceBuf);
  if (regions)
    d->cuMemFree(regions);
  cudnn.reset();
  lt.reset();
  if (e0)
    d->cuEventDestroy(e0);
  if (e1)
    d->cuEventDestroy(e1);
  if (stream)
    d->cuStreamDestroy(stream);
}

bool Bench::prepareLibrary(const Candidate &c, Launchable &l,
                           std::string &why) {
  std::optional<size_t> workspace;
  if (c.library == rt::kCublasGemm) {
    auto spec = rt::decodeGemmSpec(c.libraryParams, why);
    if (spec && !lt && !(lt = rt::CublasLtHandle::create(why)))
      spec.reset();
    if (spec && (l.gemm = rt::CublasLtGemm::create(*spec, *lt, why)))
      workspace = l.gemm->workspaceBytes();
  } else {
    auto spec = c.library == rt::kCudnnConv
                    ? rt::decodeConvSpec(c.libraryParams, why)
                    : std::nullopt;
    if (!spec && why.empty())
      why = "unknown library";
    if (spec && !cudnn && !(cudnn = rt::CudnnHandle::create(why)))
      spec.reset();
    if (spec && (l.conv = rt::CudnnConv::create(*spec, why)))
      workspace = l.conv->workspaceBytes(*cudnn, why);
  }
  if (!workspace) {
    l.conv.reset();
    l.gemm.reset();
    return false;
  }
  l.workspace = *workspace;
  return true;
}

bool Bench::prepare(const Candidate &c, const std::optional<NvrtcResult> &cubin,
                    const std::string &compileError, Launchable &l,
                    std::string &note) {
  l.d = d;
  if (!c.library.empty()) {
    std::string why;
    if (!prepareLibrary(c, l, why)) {
      note = c.library + ": " + why.substr(0, 300);
      return false;
    }
    if (!grow(workspaceBuf, workspaceBytes, l.workspace)) {
      note = "no device memory for the workspace";
      return false;
    }
    return true;
  }
  if (!cubin) {
    note = "NVRTC: " + compileError.substr(0, 300);
    return false;
  }
  if (d->cuModuleLoadData(&l.mod, cubin->cubin.data()) != cu::CUDA_SUCCESS ||
      d->cuModuleGetFunction(&l.fn, l.mod, c.name.c_str()) !=
          cu::CUDA_SUCCESS) {
    note = "the CUBIN does not load";
    return false;
  }
  if (c.sharedBytes > 48 * 1024)
    d->cuFuncSetAttribute(l.fn,
                          cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          int(c.sharedBytes));
  return true;
}

bool Bench::argumentSets(const Candidate &c,
                         std::vector<std::vector<cu::CUdeviceptr>> &sets,
                         std::string &error) {
  // Arguments rotate over copies that together exceed twice the L2, so
  // each timed launch reads from DRAM as it would in the model.
  uint64_t setBytes = 0;
  for (uint64_t b : c.argBytes)
    setBytes += (b + 255) / 256 * 256;
  setBytes = std::max<uint64_t>(setBytes, 256);
  int copies = int(std::clamp<uint64_t>(
      (2 * uint64_t(std::max(l2, 0)) + setBytes - 1) / setBytes, 1, 8));
  while (copies > 1 && setBytes * copies > (uint64_t(4) << 30))
    --copies;
  size_t need = size_t(setBytes * copies);
  if (need > slabBytes) {
    if (!grow(slab, slabBytes, need)) {
      error = "out of device memory for tuning buffers (" +
              std::to_string(need >> 20) + " MiB)";
      return false;
    }
    // 0.5f everywhere: finite inputs for every op.
    d->cuMemsetD32Async(slab, 0x3f000000u, need / 4, stream);
  }
  sets.assign(size_t(copies), {});
  for (int k = 0; k < copies; ++k) {
    uint64_t off = uint64_t(k) * setBytes;
    for (size_t a = 0; a < c.argBytes.size(); ++a) {
      sets[size_t(k)].push_back(slab + off);
      // State a kernel counts in starts at zero (a previous candidate's
      // outputs lie there); the kernel leaves it zero for its next launch.
      if (a < c.argZeroed.size() && c.argZeroed[a])
        d->cuMemsetD32Async(slab + off, 0, c.argBytes[a] / 4, stream);
      off += (c.argBytes[a] + 255) / 256 * 256;
    }
  }
  return true;
}

bool Bench::grow(cu::CUdeviceptr &buf, size_t &bytes, size_t need) {
  if (need <= bytes)
    return true;
  if (buf)
    d->cuMemFree(buf);
  buf = 0, bytes = 0;
  if (d->cuMemAlloc(&buf, need) != cu::CUDA_SUCCESS) {
    buf = 0;
    return false;
  }
  bytes = need;
  return true;
}

cu::CUresult Bench::launch(const Candidate &c, Launchable &l,
                           std::vector<cu::CUdeviceptr> &a,
                           cu::CUdeviceptr workspace) {
  std::string why;
  // A workspace of its own is l.workspace bytes; the shared one, all of it.
  const cu::CUdeviceptr ws = workspace ? workspace : workspaceBuf;
  const size_t wsBytes = workspace ? l.workspace : workspaceBytes;
  if (l.gemm) {
    const rt::GemmSpec &sp = l.gemm->spec();
    bool ran = l.gemm->run(*lt, stream, a[0], a[1], sp.bias ? a[2] : 0,
                           sp.residual ? a[2 + sp.bias] : 0, a.back(), ws,
                           wsBytes, why);
    return ran ? cu::CUDA_SUCCESS : cu::CUresult(999);
  }
  if (l.conv) {
    const rt::ConvSpec &sp = l.conv->spec();
    bool ran = l.conv->run(*cudnn, stream, a[0], a[1], sp.bias ? a[2] : 0,
                           sp.residual ? a[2 + sp.bias] : 0, a.back(), ws,
                           wsBytes, why);
    return ran ? cu::CUDA_SUCCESS : cu::CUresult(999);
  }
  std::vector<void *> params;
  for (cu::CUdeviceptr &p : a)
    params.push_back(&p);
  return d->cuLaunchKernel(l.fn, unsigned(c.grid), 1, 1, unsigned(c.block), 1,
                           1, unsigned(c.sharedBytes), stream, params.data(),
                           nullptr);
}

cu::CUresult Bench::timeOne(const Candidate &c, Launchable &l,
                            std::vector<cu::CUdeviceptr> &args, float &ms) {
  d->cuEventRecord(e0, stream);
  cu::CUresult lr = launch(c, l, args);
  d->cuEventRecord(e1, stream);
  cu::CUresult sr = d->cuEventSynchronize(e1);
  if (lr != cu::CUDA_SUCCESS)
    return lr;
  if (sr != cu::CUDA_SUCCESS)
    return sr;
  return d->cuEventElapsedTime(&ms, e0, e1);
}

// Replayed as a CUDA graph of `iters` launches, the time is the GPU's
// alone, as in a model run under a graph: a library call's host work
// (cuDNN's is tens of microseconds) and launch gaps do not count, and as
// there each call has a workspace of its own and its memsets run at the
// graph's start (rt::hoistWorkspaceMemsets; in the chain they added 2-6 us
// a conv on an H200). `captured` false: the driver could not capture,
// nothing was timed.
cu::CUresult Bench::timeGraph(const Candidate &c, Launchable &l,
                              std::vector<std::vector<cu::CUdeviceptr>> &sets,
                              int iters, Timing &t, bool &captured) {
  cu::CUgraph graph = nullptr;
  cu::CUgraphExec exec = nullptr;
  const size_t own = (l.workspace + 255) / 256 * 256;
  const bool regioned = !c.library.empty() && own > 0 &&
                        own * size_t(iters) <= kMaxGraphRegionBytes &&
                        grow(regions, regionBytes, own * size_t(iters));
  captured = d->hasGraphs() &&
             d->cuStreamBeginCapture(stream,
                                     cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) ==
                 cu::CUDA_SUCCESS;
  if (captured) {
    cu::CUresult lr = cu::CUDA_SUCCESS;
    for (int it = 0; it < iters && lr == cu::CUDA_SUCCESS; ++it)
      lr = launch(c, l, sets[size_t(it) % sets.size()],
                  regioned ? regions + own * size_t(it) : 0);
    std::string why;
    captured =
        d->cuStreamEndCapture(stream, &graph) == cu::CUDA_SUCCESS &&
        lr == cu::CUDA_SUCCESS &&
        (!regioned || rt::hoistWorkspaceMemsets(
                          *d, graph, regions, own * size_t(iters), why) >= 0) &&
        d->cuGraphInstantiateWithFlags(&exec, graph, 0) == cu::CUDA_SUCCESS;
  }
  cu::CUresult r = cu::CUDA_SUCCESS;
  if (captured) {
    t.how = "graph-replayed launches";
    for (int rep = 0; rep < 4 && r == cu::CUDA_SUCCESS; ++rep) {
      d->cuEventRecord(e0, stream);
      r = d->cuGraphLaunch(exec, stream);
      d->cuEventRecord(e1, stream);
      cu::CUresult sr = d->cuEventSynchronize(e1);
      float ms = 0;
      if (r == cu::CUDA_SUCCESS)
        r = sr == cu::CUDA_SUCCESS ? d->cuEventElapsedTime(&ms, e0, e1) : sr;
      if (rep > 0) // the first replay uploads the graph
        t.ms.push_back(ms / float(iters));
    }
  }
  if (exec)
    d->cuGraphExecDestroy(exec);
  if (graph)
    d->cuGraphDestroy(graph);
  return r;
}

cu::CUresult Bench::time(const Candidate &c, Launchable &l,
                         std::vector<std::vector<cu::CUdeviceptr>> &sets,
                         double tooSlowUs, Timing &t, std::string &note) {
  const size_t copies = sets.size();
  cu::CUresult r = cu::CUDA_SUCCESS;
  for (int w = 0; w < opts.warmup && r == cu::CUDA_SUCCESS; ++w)
    r = launch(c, l, sets[size_t(w) % copies]);
  if (r != cu::CUDA_SUCCESS) {
    note = "launch: " + cu::errorString(r);
    return r;
  }
  // One timed launch to size the run, then up to maxIters. A library
  // call's is GPU time too (a short graph): between two events its host
  // work counts, and put cuDNN's 15-50 us convs at 150-4500 us, past the
  // slow factor, so the tuner never timed them properly.
  float first = 0;
  {
    NvtxRange range(c.key);
    Timing probe;
    bool captured = false;
    if (!c.library.empty())
      r = timeGraph(c, l, sets, 3, probe, captured);
    if (r == cu::CUDA_SUCCESS && captured && !probe.ms.empty())
      first = *std::min_element(probe.ms.begin(), probe.ms.end());
    // The least of two launches: the GPU counts the host's time between
    // the first event and the launch, and 5 of 3737 candidates (NVRTC
    // workers on every core) took one 4 ms scheduler tick more, too slow.
    float again = 0;
    if (r == cu::CUDA_SUCCESS && !captured &&
        (r = timeOne(c, l, sets[0], first)) == cu::CUDA_SUCCESS &&
        (r = timeOne(c, l, sets[0], again)) == cu::CUDA_SUCCESS)
      first = std::min(first, again);
  }
  if (r != cu::CUDA_SUCCESS)
    return r;
  double firstUs = double(first) * 1e3;
  if (tooSlowUs > 0 && firstUs > opts.slowMinUs && firstUs > tooSlowUs) {
    t.ms.push_back(first);
    t.slow = true;
    t.how = "launch, too slow to win (over the slow factor times its group's "
            "fastest)";
    return r;
  }
  int iters = int(std::clamp(opts.targetMs / std::max(first, 1e-3f), 3.0,
                             double(opts.maxIters)));
  bool captured = false;
  r = timeGraph(c, l, sets, iters, t, captured);
  for (int it = 0; !captured && it < iters && r == cu::CUDA_SUCCESS; ++it) {
    float ms = 0;
    r = timeOne(c, l, sets[size_t(it + 1) % copies], ms);
    t.ms.push_back(ms);
  }
  return r;
}

} // namespace

bool measure(const std::vector<Candidate> &all, const std::string &arch,
             Cache &cache, const MeasureOptions &opts, std::string &error) {
  MeasureStats stats;
  OnExit report{[&] {
    if (opts.stats)
      opts.stats->add(stats);
  }};
  std::vector<const Candidate *> todo = measureOrder(all, cache);
  if (todo.empty())
    return true;
  auto start = Clock::now();
  auto overTime = [&] {
    return opts.maxSeconds > 0 && since(start) > opts.maxSeconds;
  };
  Bench bench(opts);
  if (!bench.open(error))
    return false;
  CompileAhead compiles(todo, arch, opts, overTime);
  Progress progress(opts.progress, "measuring", todo.size());
  std::map<int, double> groupBest; // the fastest median so far of each group
  bool ok = true;
  for (size_t i = 0; i < todo.size() && ok; ++i) {
    // Past maxSeconds nothing more is timed, not even kernels already
    // compiled (nor is a compile under way waited for): with compiles in
    // worker processes, hundreds can be ready ahead of the GPU, and timing
    // them overran a large-batch model's --tune-seconds 60 by 10 s.
    if (overTime())
      break;
    stats.waitNvrtc += compiles.wait(i);
    if (compiles.skipped(i))
      continue;
    const Candidate &c = *todo[i];
    // Set-up up to the first launch, timing after it.
    auto candidateStart = Clock::now();
    Clock::time_point timingStart;
    OnExit account{[&] {
      double total = since(candidateStart);
      double timed =
          timingStart == Clock::time_point() ? 0 : since(timingStart);
      stats.timing += timed;
      stats.setup += total - timed;
      if (total > stats.slowest) {
        stats.slowest = total;
        stats.slowestName = c.name + (c.library.empty() ? "" : " " + c.library);
      }
    }};
    progress.step(i);
    Launchable l;
    std::string note;
    if (!bench.prepare(c, compiles.result(i), compiles.error(i), l, note)) {
      cache.put(c.key, {std::nullopt, note});
      continue;
    }
    std::vector<std::vector<cu::CUdeviceptr>> sets;
    if (!(ok = bench.argumentSets(c, sets, error)))
      break;
    auto best = groupBest.find(c.group);
    double tooSlowUs =
        c.group >= 0 && opts.slowFactor > 0 && best != groupBest.end()
            ? opts.slowFactor * best->second
            : 0;
    Timing t;
    timingStart = Clock::now();
    cu::CUresult r = bench.time(c, l, sets, tooSlowUs, t, note);
    if (!note.empty()) { // the warm-up failed
      cache.put(c.key, {std::nullopt, note});
      continue;
    }
    if (r != cu::CUDA_SUCCESS) {
      // An error while running is sticky: the context is lost.
      error = "kernel " + c.name +
              " failed on the GPU while tuning: " + cu::errorString(r);
      ok = false;
      break;
    }
    std::sort(t.ms.begin(), t.ms.end());
    double us = double(t.ms[t.ms.size() / 2]) * 1e3;
    if (c.group >= 0 && !t.slow &&
        (best == groupBest.end() || us < best->second))
      groupBest[c.group] = us;
    char text[192];
    std::snprintf(text, sizeof text, "median of %zu %s, %zu buffer sets",
                  t.ms.size(), t.how, sets.size());
    cache.put(c.key, {us, text});
  }
  progress.step(todo.size());
  // After an error, or at maxSeconds: compile nothing more.
  stats.finish = compiles.finish();
  return ok;
}

} // namespace cuts::tune

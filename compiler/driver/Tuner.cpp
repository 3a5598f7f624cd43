//===- Tuner.cpp - measure candidate kernels on the GPU; the tuning cache -===//
#include "compiler/driver/Tuner.h"
#include "compiler/driver/NvrtcWorker.h"

#include "codegen/emit/Nvrtc.h"
#include "runtime/Blas.h"
#include "runtime/CudaDriver.h"
#include "runtime/Library.h"

#include <nlohmann/json.hpp>
#ifdef CUTS_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace cuts::tune {
namespace {

using nlohmann::json;
namespace cu = rt::cuda;

uint64_t fnv1a(const std::string &s) {
  uint64_t h = 0xcbf29ce484222325ull; // FNV-1a 64
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Progress {
public:
  Progress(bool on, size_t total) : on(on && isatty(2)), total(total) {
    start = now();
  }
  void step(const char *what, size_t done) {
    if (!on)
      return;
    double t = now() - start;
    double eta = done ? t / double(done) * double(total - done) : 0;
    std::fprintf(stderr, "\rtuning: %s %zu/%zu, %.0f s, ETA %.0f s   ", what,
                 done, total, t, eta);
    std::fflush(stderr);
  }
  ~Progress() {
    if (on)
      std::fprintf(stderr, "\n");
  }

private:
  bool on;
  size_t total;
  double start;
};

const char *kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string toBase64(const std::vector<char> &in) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16 |
                 uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int k = 3; k >= 0; --k)
      out += kBase64[(v >> (6 * k)) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size())
      v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kBase64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool fromBase64(const std::string &in, std::vector<char> &out) {
  out.clear();
  uint32_t v = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=')
      break;
    const char *p = std::strchr(kBase64, c);
    if (!p || !c)
      return false;
    v = v << 6 | uint32_t(p - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((v >> bits) & 0xff));
    }
  }
  return true;
}

} // namespace

std::string signature(const std::string &code, const std::string &arch,
                      const std::string &toolkit) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a(code)));
  return arch + "/" + toolkit + "/" + hex;
}

std::string librarySignature(const std::string &library,
                             const std::vector<int64_t> &params,
                             const std::string &arch) {
  std::string s = library + "/" + arch + "/";
  for (size_t i = 0; i < params.size(); ++i)
    s += (i ? "," : "") + std::to_string(params[i]);
  return s;
}

bool Cache::load(const std::string &path, std::string &error) {
  std::ifstream f(path);
  if (!f)
    return true; // no cache yet
  try {
    json j = json::parse(f);
    if (j.value("format", 0) != 1) {
      error = path + ": not a cuts tuning cache (format 1)";
      return false;
    }
    for (const auto &[key, e] : j.at("entries").items()) {
      Entry x;
      if (e.contains("us") && !e["us"].is_null())
        x.us = e["us"].get<double>();
      x.note = e.value("note", "");
      entries[key] = x;
    }
    if (j.contains("binaries"))
      for (const auto &[key, b] : j["binaries"].items()) {
        std::vector<char> bytes;
        if (!fromBase64(b.get<std::string>(), bytes)) {
          error = path + ": binary " + key + " is not base64";
          return false;
        }
        binaries[key] = std::move(bytes);
      }
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
  return true;
}

bool Cache::save(const std::string &path, std::string &error) const {
  json entriesJson = json::object();
  for (const auto &[key, e] : entries) {
    json x = {{"note", e.note}};
    x["us"] = e.us ? json(*e.us) : json(nullptr);
    entriesJson[key] = x;
  }
  json bins = json::object();
  for (const auto &[key, b] : binaries)
    bins[key] = toBase64(b);
  json j = {{"format", 1}, {"entries", entriesJson}, {"binaries", bins}};
  std::ofstream f(path);
  f << j.dump(1) << "\n";
  if (!f) {
    error = path + ": cannot write";
    return false;
  }
  return true;
}

const std::vector<char> *Cache::binary(const std::string &key) const {
  auto it = binaries.find(key);
  return it == binaries.end() ? nullptr : &it->second;
}

const Cache::Entry *Cache::find(const std::string &key) const {
  auto it = entries.find(key);
  return it == entries.end() ? nullptr : &it->second;
}

std::string candidatesToJson(const std::vector<Candidate> &cs,
                             const std::string &arch) {
  json list = json::array();
  for (const Candidate &c : cs) {
    std::vector<int> outs;
    for (bool o : c.argOutput)
      outs.push_back(o);
    list.push_back({{"key", c.key},
                    {"name", c.name},
                    {"source", c.source},
                    {"grid", c.grid},
                    {"block", c.block},
                    {"sharedBytes", c.sharedBytes},
                    {"argBytes", c.argBytes},
                    {"argOutput", outs},
                    {"library", c.library},
                    {"libraryParams", c.libraryParams},
                    {"group", c.group},
                    {"level", c.level}});
  }
  return json({{"format", 1}, {"arch", arch}, {"candidates", list}}).dump(1) +
         "\n";
}

bool candidatesFromJson(const std::string &text, std::vector<Candidate> &cs,
                        std::string &arch, std::string &error) {
  try {
    json j = json::parse(text);
    arch = j.at("arch").get<std::string>();
    for (const json &x : j.at("candidates")) {
      Candidate c;
      c.key = x.at("key").get<std::string>();
      c.name = x.at("name").get<std::string>();
      c.source = x.at("source").get<std::string>();
      c.grid = x.at("grid").get<int64_t>();
      c.block = x.at("block").get<int64_t>();
      c.sharedBytes = x.at("sharedBytes").get<int64_t>();
      c.argBytes = x.at("argBytes").get<std::vector<uint64_t>>();
      for (int o : x.at("argOutput").get<std::vector<int>>())
        c.argOutput.push_back(o != 0);
      c.library = x.value("library", "");
      c.libraryParams = x.value("libraryParams", std::vector<int64_t>{});
      c.group = x.value("group", -1);
      c.level = x.value("level", 0);
      if (c.argOutput.size() != c.argBytes.size() || c.grid < 1 ||
          c.block < 1 || c.sharedBytes < 0) {
        error = "candidate " + c.name + " is malformed";
        return false;
      }
      cs.push_back(std::move(c));
    }
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
  return true;
}

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
} // namespace

bool measure(const std::vector<Candidate> &all, const std::string &arch,
             Cache &cache, const MeasureOptions &opts, std::string &error) {
  MeasureStats stats;
  OnExit report{[&] {
    if (opts.stats)
      opts.stats->add(stats);
  }};
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  std::vector<const Candidate *> todo = measureOrder(all, cache);
  if (todo.empty())
    return true;
  auto start = Clock::now();
  auto overTime = [&] {
    return opts.maxSeconds > 0 && since(start) > opts.maxSeconds;
  };
  std::atomic<bool> stop{false};
  // The fastest median so far of each group.
  std::map<int, double> groupBest;
  const cu::Driver *d = cu::driver(error);
  if (!d)
    return false;
  cu::CUdevice dev;
  cu::CUcontext ctx;
  if (d->cuDeviceGet(&dev, 0) != cu::CUDA_SUCCESS ||
      d->cuDevicePrimaryCtxRetain(&ctx, dev) != cu::CUDA_SUCCESS ||
      d->cuCtxSetCurrent(ctx) != cu::CUDA_SUCCESS) {
    error = "no usable GPU 0 for tuning";
    return false;
  }
  int l2 = 0;
  d->cuDeviceGetAttribute(&l2, 38 /* CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE */, dev);

  // NVRTC on every core while the GPU times what is ready, each thread
  // through a worker process where there is one (NvrtcWorker.h).
  std::vector<std::optional<NvrtcResult>> compiled(todo.size());
  std::vector<std::string> compileErrors(todo.size());
  std::vector<std::atomic<bool>> ready(todo.size());
  // Past maxSeconds, compiles not yet started are skipped (left
  // unmeasured, not recorded as failures).
  std::vector<char> skipped(todo.size(), 0);
  std::atomic<size_t> next{0};
  int jobs = opts.jobs > 0
                 ? opts.jobs
                 : int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 0; t < jobs; ++t)
    pool.emplace_back([&] {
      std::unique_ptr<NvrtcWorker> worker;
      bool inProcess = opts.nvrtcWorker.empty();
      for (size_t i; (i = next++) < todo.size();) {
        if (stop || overTime()) {
          stop = true;
          skipped[i] = 1; // published by `ready`
          ready[i] = true;
          continue;
        }
        if (!todo[i]->library.empty()) { // nothing to compile
          ready[i] = true;
          continue;
        }
        NvrtcOptions no;
        no.sourceName = todo[i]->name + ".cu";
        if (!inProcess && !worker) {
          std::string why;
          worker = workerPool().acquire(opts.nvrtcWorker, why);
          inProcess = !worker; // it cannot start: compile here
        }
        if (worker) {
          compiled[i] =
              worker->compile(todo[i]->source, arch, compileErrors[i], no);
          if (!worker->alive())
            worker.reset(); // it died on this source: failed; a new one next
        } else {
          compiled[i] =
              compileWithNvrtc(todo[i]->source, arch, compileErrors[i], no);
        }
        ready[i] = true;
      }
      workerPool().release(std::move(worker));
    });

  Progress progress(opts.progress, todo.size());
  std::unique_ptr<rt::CudnnHandle> cudnn; // created for the first library call
  std::unique_ptr<rt::CublasLtHandle> lt;
  cu::CUdeviceptr workspaceBuf = 0;
  size_t workspaceBytes = 0;
  cu::CUstream stream = nullptr;
  d->cuStreamCreate(&stream, cu::CU_STREAM_NON_BLOCKING);
  cu::CUdeviceptr slab = 0;
  size_t slabBytes = 0;
  bool ok = true;
  Clock::time_point candidateStart, timingStart;
  // Closes candidate i's accounting: set-up up to the first launch, timing
  // after it (`timingStart` unset: no launch).
  auto account = [&](const Candidate &c) {
    double total = since(candidateStart);
    double timed = timingStart == Clock::time_point() ? 0 : since(timingStart);
    stats.timing += timed;
    stats.setup += total - timed;
    if (total > stats.slowest) {
      stats.slowest = total;
      stats.slowestName = c.name + (c.library.empty() ? "" : " " + c.library);
    }
  };
  for (size_t i = 0; i < todo.size() && ok; ++i) {
    // Past maxSeconds nothing more is timed, not even kernels already
    // compiled (nor is a compile under way waited for): with compiles in
    // worker processes, hundreds can be ready ahead of the GPU, and timing
    // them overran a large-batch model's --tune-seconds 60 by 10 s
    // (DenseNet-121 at batch 64). `stop` is set after the loop.
    if (overTime())
      break;
    auto waitStart = Clock::now();
    while (!ready[i])
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    stats.waitNvrtc += since(waitStart);
    const Candidate &c = *todo[i];
    if (skipped[i])
      continue;
    candidateStart = Clock::now();
    timingStart = Clock::time_point();
    OnExit close{[&] { account(c); }}; // however the iteration ends
    progress.step("timed", i);
    std::unique_ptr<rt::CudnnConv> conv;
    std::unique_ptr<rt::CublasLtGemm> gemm;
    std::optional<size_t> workspace;
    if (c.library == rt::kCublasGemm) {
      std::string why;
      auto spec = rt::decodeGemmSpec(c.libraryParams, why);
      if (spec && !lt && !(lt = rt::CublasLtHandle::create(why)))
        spec.reset();
      if (spec && (gemm = rt::CublasLtGemm::create(*spec, *lt, why)))
        workspace = gemm->workspaceBytes();
      if (!workspace) {
        cache.put(c.key, {std::nullopt, c.library + ": " + why.substr(0, 300)});
        continue;
      }
    } else if (!c.library.empty()) {
      std::string why;
      auto spec = c.library == rt::kCudnnConv
                      ? rt::decodeConvSpec(c.libraryParams, why)
                      : std::nullopt;
      if (!spec && why.empty())
        why = "unknown library";
      if (spec && !cudnn && !(cudnn = rt::CudnnHandle::create(why)))
        spec.reset();
      if (spec && (conv = rt::CudnnConv::create(*spec, why)))
        workspace = conv->workspaceBytes(*cudnn, why);
      if (!workspace) {
        cache.put(c.key, {std::nullopt, c.library + ": " + why.substr(0, 300)});
        conv.reset();
        continue;
      }
    } else if (!compiled[i]) {
      cache.put(c.key,
                {std::nullopt, "NVRTC: " + compileErrors[i].substr(0, 300)});
      continue;
    }
    cu::CUmodule mod = nullptr;
    cu::CUfunction fn = nullptr;
    bool library = conv || gemm;
    if (!library && (d->cuModuleLoadData(&mod, compiled[i]->cubin.data()) !=
                         cu::CUDA_SUCCESS ||
                     d->cuModuleGetFunction(&fn, mod, c.name.c_str()) !=
                         cu::CUDA_SUCCESS)) {
      if (mod)
        d->cuModuleUnload(mod);
      cache.put(c.key, {std::nullopt, "the CUBIN does not load"});
      continue;
    }
    if (library && *workspace > workspaceBytes) {
      if (workspaceBuf)
        d->cuMemFree(workspaceBuf);
      workspaceBuf = 0;
      workspaceBytes = 0;
      if (d->cuMemAlloc(&workspaceBuf, *workspace) != cu::CUDA_SUCCESS) {
        cache.put(c.key, {std::nullopt, "no device memory for the workspace"});
        continue;
      }
      workspaceBytes = *workspace;
    }
    if (fn && c.sharedBytes > 48 * 1024)
      d->cuFuncSetAttribute(fn,
                            cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            int(c.sharedBytes));
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
      if (slab)
        d->cuMemFree(slab);
      slab = 0;
      if (d->cuMemAlloc(&slab, need) != cu::CUDA_SUCCESS) {
        error = "out of device memory for tuning buffers (" +
                std::to_string(need >> 20) + " MiB)";
        ok = false;
        slabBytes = 0;
        if (mod)
          d->cuModuleUnload(mod);
        break;
      }
      slabBytes = need;
      // 0.5f everywhere: finite inputs for every op.
      d->cuMemsetD32Async(slab, 0x3f000000u, need / 4, stream);
    }
    std::vector<std::vector<cu::CUdeviceptr>> sets(copies);
    for (int k = 0; k < copies; ++k) {
      uint64_t off = uint64_t(k) * setBytes;
      for (uint64_t b : c.argBytes) {
        sets[k].push_back(slab + off);
        off += (b + 255) / 256 * 256;
      }
    }
    auto launch = [&](int k) -> cu::CUresult {
      if (gemm) {
        const rt::GemmSpec &sp = gemm->spec();
        const auto &a = sets[k];
        std::string why;
        bool ran = gemm->run(*lt, stream, a[0], a[1], sp.bias ? a[2] : 0,
                             sp.residual ? a[2 + sp.bias] : 0, a.back(),
                             workspaceBuf, workspaceBytes, why);
        return ran ? cu::CUDA_SUCCESS : cu::CUresult(999);
      }
      if (conv) {
        const rt::ConvSpec &sp = conv->spec();
        const auto &a = sets[k];
        std::string why;
        bool ran = conv->run(*cudnn, stream, a[0], a[1], sp.bias ? a[2] : 0,
                             sp.residual ? a[2 + sp.bias] : 0, a.back(),
                             workspaceBuf, workspaceBytes, why);
        return ran ? cu::CUDA_SUCCESS : cu::CUresult(999);
      }
      std::vector<void *> params;
      for (cu::CUdeviceptr &p : sets[k])
        params.push_back(&p);
      return d->cuLaunchKernel(fn, unsigned(c.grid), 1, 1, unsigned(c.block), 1,
                               1, unsigned(c.sharedBytes), stream,
                               params.data(), nullptr);
    };
    cu::CUresult r = cu::CUDA_SUCCESS;
    timingStart = Clock::now();
    for (int w = 0; w < opts.warmup && r == cu::CUDA_SUCCESS; ++w)
      r = launch(w % copies);
    if (r != cu::CUDA_SUCCESS) {
      cache.put(c.key, {std::nullopt, "launch: " + cu::errorString(r)});
      if (mod)
        d->cuModuleUnload(mod);
      continue;
    }
    // One timed launch to size the run, then up to maxIters.
    cu::CUevent e0, e1;
    d->cuEventCreate(&e0, cu::CU_EVENT_DEFAULT);
    d->cuEventCreate(&e1, cu::CU_EVENT_DEFAULT);
    auto timeOne = [&](int k, float &ms) {
      d->cuEventRecord(e0, stream);
      cu::CUresult lr = launch(k);
      d->cuEventRecord(e1, stream);
      cu::CUresult sr = d->cuEventSynchronize(e1);
      if (lr != cu::CUDA_SUCCESS)
        return lr;
      if (sr != cu::CUDA_SUCCESS)
        return sr;
      return d->cuEventElapsedTime(&ms, e0, e1);
    };
    float first = 0;
    {
      NvtxRange range(c.key);
      r = timeOne(0, first);
    }
    std::vector<float> times;
    const char *how = "launches";
    auto best = groupBest.find(c.group);
    double firstUs = double(first) * 1e3;
    bool slow = r == cu::CUDA_SUCCESS && c.group >= 0 && opts.slowFactor > 0 &&
                best != groupBest.end() && firstUs > opts.slowMinUs &&
                firstUs > opts.slowFactor * best->second;
    if (slow) {
      times.push_back(first);
      how = "launch, too slow to win (over the slow factor times its group's "
            "fastest)";
    } else if (r == cu::CUDA_SUCCESS) {
      int iters = int(std::clamp(opts.targetMs / std::max(first, 1e-3f), 3.0,
                                 double(opts.maxIters)));
      // Replayed as a CUDA graph of `iters` launches, the time is the GPU's
      // alone, as in a model run under a graph: a library call's host work
      // (cuDNN's is tens of microseconds) and launch gaps do not count.
      cu::CUgraph graph = nullptr;
      cu::CUgraphExec exec = nullptr;
      bool captured = d->hasGraphs() &&
                      d->cuStreamBeginCapture(
                          stream, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) ==
                          cu::CUDA_SUCCESS;
      if (captured) {
        cu::CUresult lr = cu::CUDA_SUCCESS;
        for (int it = 0; it < iters && lr == cu::CUDA_SUCCESS; ++it)
          lr = launch(it % copies);
        captured =
            d->cuStreamEndCapture(stream, &graph) == cu::CUDA_SUCCESS &&
            lr == cu::CUDA_SUCCESS &&
            d->cuGraphInstantiateWithFlags(&exec, graph, 0) == cu::CUDA_SUCCESS;
      }
      if (captured) {
        how = "graph-replayed launches";
        for (int rep = 0; rep < 4 && r == cu::CUDA_SUCCESS; ++rep) {
          d->cuEventRecord(e0, stream);
          r = d->cuGraphLaunch(exec, stream);
          d->cuEventRecord(e1, stream);
          cu::CUresult sr = d->cuEventSynchronize(e1);
          float ms = 0;
          if (r == cu::CUDA_SUCCESS)
            r = sr == cu::CUDA_SUCCESS ? d->cuEventElapsedTime(&ms, e0, e1)
                                       : sr;
          if (rep > 0) // the first replay uploads the graph
            times.push_back(ms / float(iters));
        }
      } else {
        for (int it = 0; it < iters && r == cu::CUDA_SUCCESS; ++it) {
          float ms = 0;
          r = timeOne((it + 1) % copies, ms);
          times.push_back(ms);
        }
      }
      if (exec)
        d->cuGraphExecDestroy(exec);
      if (graph)
        d->cuGraphDestroy(graph);
    }
    d->cuEventDestroy(e0);
    d->cuEventDestroy(e1);
    if (mod)
      d->cuModuleUnload(mod);
    if (r != cu::CUDA_SUCCESS) {
      // An error while running is sticky: the context is lost.
      error = "kernel " + c.name +
              " failed on the GPU while tuning: " + cu::errorString(r);
      ok = false;
      break;
    }
    std::sort(times.begin(), times.end());
    double us = double(times[times.size() / 2]) * 1e3;
    if (c.group >= 0 && !slow && (best == groupBest.end() || us < best->second))
      groupBest[c.group] = us;
    char note[192];
    std::snprintf(note, sizeof note, "median of %zu %s, %d buffer sets",
                  times.size(), how, copies);
    cache.put(c.key, {us, note});
  }
  progress.step("timed", todo.size());
  stop = true; // after an error, or at maxSeconds: compile nothing more
  auto finishStart = Clock::now();
  for (std::thread &t : pool)
    t.join();
  stats.finish = since(finishStart);
  if (slab)
    d->cuMemFree(slab);
  if (workspaceBuf)
    d->cuMemFree(workspaceBuf);
  cudnn.reset();
  lt.reset();
  if (stream)
    d->cuStreamDestroy(stream);
  return ok;
}

} // namespace cuts::tune

//===- Collectives.cpp - cuts collectives: copy engines against NCCL ------===//
//
// ConCCL's Figure 9 on this machine: each collective's time and bandwidth
// by size, on copy engines (cuts/rt/Collectives.h) and through NCCL where
// the device list has distinct devices. The size is what each rank
// receives; chunks are size / ranks. Every engine's result is checked
// against the host's expectation once per size before it is timed.
//
//===----------------------------------------------------------------------===//
#include "tools/cuts-run/Collectives.h"
#include "tools/cuts-run/KernelModule.h"

#include "codegen/emit/Collective.h"
#include "cuts/rt/Collectives.h"
#include "cuts/rt/CudaDriver.h"
#include "cuts/rt/Nccl.h"
#include "tools/support/Options.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

namespace cuts::cli {
namespace {

namespace cu = rt::cuda;
using rt::Collective;

/// The device list's contexts, streams, events and buffers (sized for the
/// largest collective), released with it.
struct Ranks {
  const cu::Driver *d = nullptr;
  std::vector<int> devices;
  std::vector<cu::CUcontext> ctx;
  std::vector<cu::CUstream> stream;
  std::vector<cu::CUevent> start, stop;
  std::vector<cu::CUdeviceptr> send, recv, out;
  std::vector<cu::CUfunction> reduceOf; // f32 sums, in each rank's context
  std::vector<cu::CUmodule> modules;
  ~Ranks() {
    for (size_t e = 0; e < ctx.size(); ++e) {
      d->cuCtxSetCurrent(ctx[e]);
      for (cu::CUdeviceptr p : {send[e], recv[e], out[e]})
        if (p)
          d->cuMemFree(p);
      if (stream[e])
        d->cuStreamDestroy(stream[e]);
      for (cu::CUevent ev : {start[e], stop[e]})
        if (ev)
          d->cuEventDestroy(ev);
    }
    for (size_t e = 0; e < modules.size(); ++e) {
      d->cuCtxSetCurrent(ctx[e]);
      d->cuModuleUnload(modules[e]);
    }
  }
  bool open(uint64_t largest, std::string &err);
};

bool Ranks::open(uint64_t largest, std::string &err) {
  const size_t n = devices.size();
  ctx.assign(n, nullptr), stream.assign(n, nullptr);
  start.assign(n, nullptr), stop.assign(n, nullptr);
  send.assign(n, 0), recv.assign(n, 0), out.assign(n, 0);
  std::string source = codegen::reduceChunksSource();
  for (size_t e = 0; e < n; ++e) {
    cu::CUdevice dev = 0;
    if (d->cuDeviceGet(&dev, devices[e]) ||
        d->cuDevicePrimaryCtxRetain(&ctx[e], dev) ||
        d->cuCtxSetCurrent(ctx[e])) {
      err = "CUDA device " + std::to_string(devices[e]) + " cannot be opened";
      return false;
    }
    cu::CUmodule mod = nullptr;
    std::vector<cu::CUfunction> f;
    if (!loadKernels(d, dev, source, {"cuts_reduce_chunks_f32"}, mod, f, err)) {
      err = "reduce-scatter's sum kernel: " + err;
      return false;
    }
    modules.push_back(mod), reduceOf.push_back(f[0]);
    if (d->cuStreamCreate(&stream[e], cu::CU_STREAM_NON_BLOCKING) ||
        d->cuEventCreate(&start[e], cu::CU_EVENT_DEFAULT) ||
        d->cuEventCreate(&stop[e], cu::CU_EVENT_DEFAULT) ||
        d->cuMemAlloc(&send[e], largest) || d->cuMemAlloc(&recv[e], largest) ||
        d->cuMemAlloc(&out[e], largest)) {
      err = "device " + std::to_string(devices[e]) + ": out of memory for " +
            std::to_string(largest) + "-byte buffers";
      return false;
    }
  }
  return true;
}

/// Rank r's send buffer: float values that name the rank and position
/// (exact sums in fp32).
std::vector<float> pattern(int r, uint64_t bytes) {
  std::vector<float> v(bytes / 4);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(r * 1000 + int(i % 977));
  return v;
}

/// What rank r must hold after `c` (reduce-scatter: its summed chunk).
std::vector<float> expected(Collective c, int ranks, int r, uint64_t chunk) {
  const uint64_t n = chunk / 4;
  std::vector<float> want;
  if (c == Collective::ReduceScatter) {
    want.assign(n, 0.f);
    for (int s = 0; s < ranks; ++s) {
      std::vector<float> x = pattern(s, uint64_t(ranks) * chunk);
      for (uint64_t i = 0; i < n; ++i)
        want[i] += x[r * n + i];
    }
    return want;
  }
  for (int s = 0; s < ranks; ++s) {
    std::vector<float> x = pattern(s, rt::sendBytes(c, ranks, chunk));
    const uint64_t from = c == Collective::AllGather ? 0 : r * n;
    want.insert(want.end(), x.begin() + long(from), x.begin() + long(from + n));
  }
  return want;
}

struct Options {
  std::vector<int> gpus;
  std::vector<uint64_t> sizes;
  std::vector<Collective> collectives;
  bool ce = true, nccl = true, json = false;
  int iters = 20;
};

/// One engine's run of `c` at `chunk` over every rank (the sum included
/// for reduce-scatter on copy engines).
using Launch = std::function<bool(Collective, uint64_t, std::string &)>;

/// Checks one run's result, then times `iters` runs; the milliseconds a
/// collective, the slowest rank's.
bool measure(Ranks &k, Collective c, uint64_t chunk, int iters,
             const Launch &launch, double &ms, std::string &err) {
  const cu::Driver *d = k.d;
  const int n = int(k.ctx.size());
  for (int e = 0; e < n; ++e) {
    std::vector<float> x = pattern(e, rt::sendBytes(c, n, chunk));
    d->cuCtxSetCurrent(k.ctx[size_t(e)]);
    d->cuMemcpyHtoD(k.send[size_t(e)], x.data(), x.size() * 4);
    // On the rank's stream: the copy streams do not wait for the legacy
    // one, where cuMemsetD8 would run.
    d->cuMemsetD8Async(k.out[size_t(e)], 0, rt::recvBytes(c, n, chunk),
                       k.stream[size_t(e)]);
  }
  auto wait = [&] {
    for (int e = 0; e < n; ++e) {
      d->cuCtxSetCurrent(k.ctx[size_t(e)]);
      if (d->cuStreamSynchronize(k.stream[size_t(e)]))
        return false;
    }
    return true;
  };
  if (!launch(c, chunk, err) || !wait()) {
    err = err.empty() ? "the collective failed on the GPU" : err;
    return false;
  }
  for (int e = 0; e < n; ++e) {
    std::vector<float> want = expected(c, n, e, chunk), got(want.size());
    d->cuCtxSetCurrent(k.ctx[size_t(e)]);
    d->cuMemcpyDtoH(got.data(), k.out[size_t(e)], got.size() * 4);
    if (std::memcmp(got.data(), want.data(), got.size() * 4) != 0) {
      err = std::string(rt::collectiveName(c)) + ": rank " + std::to_string(e) +
            " holds a wrong result";
      return false;
    }
  }
  for (int e = 0; e < n; ++e) {
    d->cuCtxSetCurrent(k.ctx[size_t(e)]);
    d->cuEventRecord(k.start[size_t(e)], k.stream[size_t(e)]);
  }
  for (int i = 0; i < iters; ++i)
    if (!launch(c, chunk, err))
      return false;
  ms = 0;
  for (int e = 0; e < n; ++e) {
    d->cuCtxSetCurrent(k.ctx[size_t(e)]);
    d->cuEventRecord(k.stop[size_t(e)], k.stream[size_t(e)]);
  }
  if (!wait()) {
    err = "the collective failed on the GPU";
    return false;
  }
  for (int e = 0; e < n; ++e) {
    float t = 0;
    d->cuEventElapsedTime(&t, k.start[size_t(e)], k.stop[size_t(e)]);
    ms = std::max(ms, double(t) / iters);
  }
  return true;
}

bool parseOptions(const std::vector<std::string> &args, Options &o) {
  std::string list;
  for (ArgList a(args); a.next();) {
    if (a.is("--gpus")) {
      if (!a.value(list) || !parseOrdinals(list, o.gpus))
        return !error("", "--gpus needs device ordinals, e.g. 0,1");
    } else if (a.is("--sizes")) {
      if (!a.value(list))
        return !error("", "--sizes needs sizes, e.g. 64K,16M,1G");
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        std::string item = list.substr(at, comma - at);
        uint64_t scale = 1;
        if (!item.empty() && std::strchr("KMG", item.back()))
          scale = item.back() == 'K'   ? 1ull << 10
                  : item.back() == 'M' ? 1ull << 20
                                       : 1ull << 30;
        if (scale > 1)
          item.pop_back();
        char *end = nullptr;
        const double v = std::strtod(item.c_str(), &end);
        if (item.empty() || *end || !(v >= 1) || v * scale > double(1ull << 40))
          return !error("", "--sizes needs sizes, e.g. 64K,16M,1G");
        o.sizes.push_back(uint64_t(v * double(scale)));
        at = comma + 1;
      }
    } else if (a.is("--collective")) {
      std::string v;
      a.value(v);
      o.collectives.clear();
      for (Collective c : {Collective::AllGather, Collective::AllToAll,
                           Collective::ReduceScatter})
        if (v == "all" || v == rt::collectiveName(c))
          o.collectives.push_back(c);
      if (o.collectives.empty())
        return !error("", "--collective needs all-gather, all-to-all, "
                          "reduce-scatter or all");
    } else if (a.is("--engine")) {
      std::string v;
      a.value(v);
      if (v != "ce" && v != "nccl" && v != "both")
        return !error("", "--engine needs ce, nccl or both");
      o.ce = v != "nccl", o.nccl = v != "ce";
    } else if (a.is("--iters")) {
      if (!a.integer(o.iters, 1, 100000))
        return !error("", "--iters needs a count >= 1");
    } else if (a.is("--json")) {
      o.json = true;
    } else {
      return !error("", "collectives: unknown argument '" + a.arg() + "'");
    }
  }
  if (o.gpus.empty())
    return !error("", "collectives: --gpus is required (e.g. --gpus 0,1)");
  if (o.sizes.empty())
    o.sizes = {64ull << 10, 1ull << 20, 16ull << 20, 256ull << 20};
  if (o.collectives.empty())
    o.collectives = {Collective::AllGather, Collective::AllToAll,
                     Collective::ReduceScatter};
  return true;
}

} // namespace

int cmdCollectives(const std::vector<std::string> &args) {
  Options o;
  if (!parseOptions(args, o))
    return 1;
  std::string err;
  Ranks k;
  k.d = cu::driver(err);
  if (!k.d)
    return error("", err);
  k.devices = o.gpus;
  const int n = int(o.gpus.size());
  if (!k.open(*std::max_element(o.sizes.begin(), o.sizes.end()), err))
    return error("", err);
  rt::CopyEngineComm ce(k.d, k.ctx);
  if (ce.init() != CUTS_OK)
    return error("", cuts_last_error());
  rt::NcclComms nccl;
  std::string ncclWhy;
  const bool haveNccl = o.nccl && nccl.init(o.gpus, ncclWhy);
  if (o.nccl && !haveNccl)
    std::fprintf(stderr, "cuts: NCCL not measured: %s\n", ncclWhy.c_str());
  auto ptrs = [](const std::vector<cu::CUdeviceptr> &v) {
    std::vector<void *> p;
    for (cu::CUdeviceptr x : v)
      p.push_back(reinterpret_cast<void *>(uintptr_t(x)));
    return p;
  };
  std::vector<void *> streams(k.stream.begin(), k.stream.end());
  // Copy engines: the copies land in `out`, or for reduce-scatter in
  // `recv`, which the sum kernel reads.
  Launch onCe = [&](Collective c, uint64_t chunk, std::string &why) {
    const bool rs = c == Collective::ReduceScatter;
    if (ce.run(c, chunk, k.send, rs ? k.recv : k.out, k.stream) != CUTS_OK) {
      why = cuts_last_error();
      return false;
    }
    for (int e = 0; rs && e < n; ++e) {
      unsigned ranks = unsigned(n);
      unsigned long long values = chunk / 4;
      std::vector<void *> a = {&k.recv[size_t(e)], &ranks, &values,
                               &k.out[size_t(e)]};
      k.d->cuCtxSetCurrent(k.ctx[size_t(e)]);
      const unsigned blocks =
          unsigned(std::min<uint64_t>((values + 255) / 256, 65535));
      if (k.d->cuLaunchKernel(k.reduceOf[size_t(e)], blocks, 1, 1, 256, 1, 1, 0,
                              k.stream[size_t(e)], a.data(), nullptr)) {
        why = "launching reduce-scatter's sum failed";
        return false;
      }
    }
    return true;
  };
  Launch onNccl = [&](Collective c, uint64_t chunk, std::string &why) {
    return nccl.run(c, chunk, ptrs(k.send), ptrs(k.out), streams, "f32", why);
  };
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json)
    std::printf("%-15s %12s %-6s %10s %10s %10s\n", "collective", "bytes",
                "engine", "time us", "algbw GB/s", "busbw GB/s");
  for (Collective c : o.collectives)
    for (uint64_t size : o.sizes) {
      const uint64_t chunk = size / uint64_t(n) / 16 * 16;
      if (chunk == 0)
        continue;
      for (int engine = 0; engine < 2; ++engine) {
        if (engine == 0 ? !o.ce : !haveNccl)
          continue;
        double ms = 0;
        if (!measure(k, c, chunk, o.iters, engine == 0 ? onCe : onNccl, ms,
                     err))
          return error("",
                       std::string(engine ? "NCCL " : "copy engines ") + err);
        // NCCL's convention: algorithm bandwidth is what a rank receives
        // over the time, bus bandwidth its (n-1)/n that crosses links.
        const double bytes = double(chunk) * n, alg = bytes / (ms * 1e6),
                     bus = alg * (n - 1) / n;
        rows.push_back({{"collective", rt::collectiveName(c)},
                        {"bytes", bytes},
                        {"engine", engine ? "nccl" : "ce"},
                        {"ranks", n},
                        {"time_us", ms * 1e3},
                        {"algbw_gbs", alg},
                        {"busbw_gbs", bus}});
        if (!o.json)
          std::printf("%-15s %12.0f %-6s %10.1f %10.1f %10.1f\n",
                      rt::collectiveName(c), bytes, engine ? "nccl" : "ce",
                      ms * 1e3, alg, bus);
      }
    }
  if (o.json)
    std::printf(
        "%s\n",
        nlohmann::json({{"gpus", o.gpus}, {"rows", rows}}).dump(1).c_str());
  return 0;
}

} // namespace cuts::cli

//===- C3.cpp - cuts c3: a GEMM beside a collective, ConCCL's study
//--------===//
//
// ConCCL's characterisation on this GPU (../shared/papers/conccl-dma-
// collectives.txt §IV-VI): Table I's GEMMs (cuBLASLt, fp16) beside
// Table II's all-gathers and all-to-alls among the ranks of a repeated
// device list, the collective's copies done by the SMs (a copy kernel, as
// NCCL's) or by the copy engines (rt::CopyEngineComm). It measures the
// slowdown tables once (a GEMM on fewer SMs, the collective on few), then
// per scenario the isolated times, the taxonomy, and every configuration:
// c3_base, c3_sp (collective first, high priority), c3_rp (green-context
// SM partitions), ConCCL and ConCCL_rp; each as % of the ideal speedup,
// and perfmodel/C3.h's choice against the best measured.
//
//===----------------------------------------------------------------------===//
#include "tools/cuts-run/C3.h"
#include "tools/cuts-run/KernelModule.h"

#include "codegen/emit/Collective.h"
#include "cuts/rt/Blas.h"
#include "cuts/rt/Collectives.h"
#include "cuts/rt/CudaDriver.h"
#include "perfmodel/Arch.h"
#include "perfmodel/C3.h"
#include "tools/support/Options.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

namespace cuts::cli {
namespace {

namespace cu = rt::cuda;
using rt::Collective;

/// Table I: M x N x K.
struct Gemm {
  const char *tag;
  int64_t m, n, k;
};
const Gemm kGemms[] = {
    {"cb1", 8192, 8192, 8192},    {"cb2", 16384, 8192, 16384},
    {"cb3", 16384, 16384, 8192},  {"cb4", 18432, 8192, 16384},
    {"cb5", 106496, 8192, 16384}, {"mb1", 8192, 57344, 8192},
    {"mb2", 16384, 106496, 8192}};

/// Table II: the scenario's name, its GEMM and the collective's size
/// (what a rank ends with for all-gather, starts with for all-to-all) in
/// GiB.
struct Pair {
  const char *name, *gemm;
  double gib;
};
const Pair kPairs[] = {{"mb1_896M", "mb1", 0.875}, {"mb2_3.25G", "mb2", 3.25},
                       {"mb1_4G", "mb1", 4},       {"mb1_6G", "mb1", 6},
                       {"cb3_512M", "cb3", 0.5},   {"cb4_512M", "cb4", 0.5},
                       {"cb5_1.63G", "cb5", 1.63}, {"cb4_1G", "cb4", 1},
                       {"mb1_13G", "mb1", 13},     {"cb2_3.25G", "cb2", 3.25},
                       {"cb4_2.5G", "cb4", 2.5},   {"cb1_896M", "cb1", 0.875},
                       {"cb5_20G", "cb5", 20},     {"mb2_26.5G", "mb2", 26.5},
                       {"cb5_13G", "cb5", 13}};

const Gemm &gemmNamed(const std::string &tag) {
  for (const Gemm &g : kGemms)
    if (tag == g.tag)
      return g;
  return kGemms[0];
}

struct Options {
  std::vector<int> gpus = {0, 0}; // a rank an entry
  int iters = 5, blocks = 0;      // 0: calibrated
  std::vector<Collective> collectives = {Collective::AllGather,
                                         Collective::AllToAll};
  std::vector<int> splits = {8, 16, 32, 64};
  std::vector<std::string> only; // scenario names ("mb1_896M")
  double scale = 0;              // of the sizes; 0: the most that fits
  bool json = false;
};

std::string pairName(const Pair &p) { return p.name; }

/// Work enqueued on one stream of one context, timed by its done event.
struct Job {
  cu::CUcontext ctx = nullptr;
  cu::CUstream stream = nullptr;
  cu::CUevent done = nullptr;
  std::function<bool(cu::CUstream)> enqueue;
};

/// A configuration's work: each GPU's GEMM and its part of the collective,
/// launched GEMMs first unless `commFirst`.
struct Jobs {
  std::vector<Job> gemm, comm;
  bool commFirst = false;
  std::vector<Job> launch() const {
    std::vector<Job> all = commFirst ? comm : gemm;
    for (const Job &j : commFirst ? gemm : comm)
      all.push_back(j);
    return all;
  }
};

/// An SM partition of a GPU (green contexts): `commSms` for the
/// collective, the rest for the GEMM, each with a stream, an event and the
/// copy kernel loaded.
struct Partition {
  int commSms = 0, gemmSms = 0;
  cu::CUgreenCtx green[2] = {};
  cu::CUcontext ctx[2] = {}; // 0: the collective's, 1: the GEMM's
  cu::CUstream stream[2] = {};
  cu::CUevent done[2] = {};
  cu::CUfunction copy = nullptr;
  cu::CUmodule module = nullptr;
};

/// One GPU of the study: its streams, GEMMs and operands, the SM
/// collective's kernel and copy table (the copies into its ranks), and its
/// green-context partitions. A device list that repeats one GPU has one.
struct Unit {
  int ordinal = 0; // in the device list
  cu::CUdevice dev = 0;
  cu::CUcontext ctx = nullptr;
  cu::CUstream gemmStream = nullptr, commLow = nullptr, commHigh = nullptr;
  cu::CUevent gemmDone = nullptr, commDone = nullptr;
  cu::CUmodule module = nullptr;
  cu::CUfunction copy = nullptr;
  std::unique_ptr<rt::CublasLtHandle> lt;
  std::map<std::string, std::unique_ptr<rt::CublasLtGemm>> gemms;
  cu::CUdeviceptr a = 0, b = 0, y = 0, ws = 0, items = 0;
  uint64_t wsBytes = 0;
  Collective tableFor = Collective::AllGather; // what `items` holds
  uint64_t tableChunk = 0;
  unsigned tableCount = 0;
  std::vector<Partition> parts;
};

/// The GPUs, the ranks' buffers (rank r's on units[unitOf[r]]), the copy
/// engines' communicator, and the timing stream and events (on the first).
struct Bench {
  const cu::Driver *d = nullptr;
  int sms = 0, ranks = 0, blocks = 32;
  std::vector<Unit> units;
  std::vector<size_t> unitOf;
  cu::CUstream root = nullptr;
  cu::CUevent start = nullptr, stop = nullptr;
  std::vector<cu::CUdeviceptr> send, recv;
  std::unique_ptr<rt::CopyEngineComm> ce;

  ~Bench();
  bool open(const Options &o, uint64_t commBytes, std::string &err);
  bool openUnit(Unit &u, std::string &err);
  bool partition(Unit &u, int k, std::string &err);
  bool runGemm(Unit &u, const Gemm &g, cu::CUcontext c, cu::CUstream s);
  bool runSmComm(Unit &u, cu::CUfunction f, Collective c, uint64_t chunk,
                 cu::CUstream s);
  bool runCe(Collective c, uint64_t chunk);
  int ranksPerUnit() const { return ranks / int(units.size()); }
  double time(const std::vector<Job> &jobs, int iters);
};

/// `u`'s resources, its streams already synchronised (~Bench).
void release(const cu::Driver *d, Unit &u) {
  for (Partition &p : u.parts)
    for (int i = 0; i < 2; ++i) {
      if (p.stream[i])
        d->cuStreamDestroy(p.stream[i]);
      if (p.done[i])
        d->cuEventDestroy(p.done[i]);
      if (i == 0 && p.module) {
        d->cuCtxSetCurrent(p.ctx[0]);
        d->cuModuleUnload(p.module);
      }
      if (p.green[i])
        d->cuGreenCtxDestroy(p.green[i]);
    }
  d->cuCtxSetCurrent(u.ctx);
  u.gemms.clear();
  u.lt.reset();
  for (cu::CUdeviceptr p : {u.a, u.b, u.y, u.ws, u.items})
    if (p)
      d->cuMemFree(p);
  for (cu::CUstream s : {u.gemmStream, u.commLow, u.commHigh})
    if (s)
      d->cuStreamDestroy(s);
  for (cu::CUevent e : {u.gemmDone, u.commDone})
    if (e)
      d->cuEventDestroy(e);
  if (u.module)
    d->cuModuleUnload(u.module);
}

Bench::~Bench() {
  if (!d)
    return;
  // Nothing may still read a buffer (a peer's, over the links) once freed.
  for (Unit &u : units) {
    d->cuCtxSetCurrent(u.ctx);
    for (cu::CUstream s : {u.gemmStream, u.commLow, u.commHigh})
      if (s)
        d->cuStreamSynchronize(s);
    for (Partition &p : u.parts)
      for (cu::CUstream s : p.stream)
        if (s)
          d->cuStreamSynchronize(s);
  }
  if (!units.empty()) {
    d->cuCtxSetCurrent(units[0].ctx);
    if (root)
      d->cuStreamSynchronize(root);
  }
  ce.reset();
  for (size_t r = 0; r < send.size(); ++r) {
    d->cuCtxSetCurrent(units[unitOf[r]].ctx);
    for (cu::CUdeviceptr p : {send[r], recv[r]})
      if (p)
        d->cuMemFree(p);
  }
  for (Unit &u : units)
    release(d, u);
  if (!units.empty()) {
    d->cuCtxSetCurrent(units[0].ctx);
    if (root)
      d->cuStreamDestroy(root);
    for (cu::CUevent e : {start, stop})
      if (e)
        d->cuEventDestroy(e);
  }
}

/// A GPU's streams, copy kernel, GEMMs and their operands (fp16 1.06).
bool Bench::openUnit(Unit &u, std::string &err) {
  d->cuCtxSetCurrent(u.ctx);
  int least = 0, greatest = 0;
  d->cuCtxGetStreamPriorityRange(&least, &greatest);
  std::vector<cu::CUfunction> f;
  if (!loadKernels(d, u.dev, codegen::copyChunksSource(), {"cuts_copy_chunks"},
                   u.module, f, err))
    return false;
  u.copy = f[0];
  if (d->cuStreamCreate(&u.gemmStream, cu::CU_STREAM_NON_BLOCKING) ||
      d->cuStreamCreateWithPriority(&u.commLow, cu::CU_STREAM_NON_BLOCKING,
                                    least) ||
      d->cuStreamCreateWithPriority(&u.commHigh, cu::CU_STREAM_NON_BLOCKING,
                                    greatest))
    return !(err = "creating streams failed").empty();
  for (cu::CUevent *e : {&u.gemmDone, &u.commDone})
    if (d->cuEventCreate(e, cu::CU_EVENT_DEFAULT))
      return !(err = "cuEventCreate failed").empty();
  uint64_t aMax = 0, bMax = 0, yMax = 0;
  for (const Gemm &g : kGemms) {
    aMax = std::max<uint64_t>(aMax, uint64_t(g.m * g.k) * 2);
    bMax = std::max<uint64_t>(bMax, uint64_t(g.k * g.n) * 2);
    yMax = std::max<uint64_t>(yMax, uint64_t(g.m * g.n) * 2);
  }
  u.lt = rt::CublasLtHandle::create(err);
  if (!u.lt)
    return false;
  for (const Gemm &g : kGemms) {
    rt::GemmSpec s;
    s.M = g.m, s.N = g.n, s.K = g.k, s.math = rt::LibraryMath::Fp16;
    auto gemm = rt::CublasLtGemm::create(s, *u.lt, err);
    if (!gemm)
      return false;
    u.wsBytes = std::max<uint64_t>(u.wsBytes, gemm->workspaceBytes());
    u.gemms[g.tag] = std::move(gemm);
  }
  if (d->cuMemAlloc(&u.a, aMax) || d->cuMemAlloc(&u.b, bMax) ||
      d->cuMemAlloc(&u.y, yMax) ||
      d->cuMemAlloc(&u.ws, std::max<uint64_t>(u.wsBytes, 16)) ||
      d->cuMemAlloc(&u.items, 4096))
    return !(err = "out of device memory for the GEMMs' operands").empty();
  d->cuMemsetD8(u.a, 0x3c, aMax), d->cuMemsetD8(u.b, 0x3c, bMax);
  return true;
}

bool Bench::open(const Options &o, uint64_t chunk, std::string &err) {
  ranks = int(o.gpus.size()), blocks = o.blocks ? o.blocks : 32;
  // One unit per distinct GPU, in the list's order.
  for (int g : o.gpus) {
    auto it = std::find_if(units.begin(), units.end(),
                           [&](const Unit &u) { return u.ordinal == g; });
    if (it == units.end()) {
      Unit u;
      u.ordinal = g;
      if (d->cuDeviceGet(&u.dev, g) ||
          d->cuDevicePrimaryCtxRetain(&u.ctx, u.dev)) {
        err = "CUDA device " + std::to_string(g) + " cannot be opened";
        return false;
      }
      units.push_back(std::move(u));
      it = units.end() - 1;
    }
    unitOf.push_back(size_t(it - units.begin()));
  }
  for (Unit &u : units)
    if (!openUnit(u, err))
      return false;
  // The SM collective's kernel on a GPU reads its peers' send buffers.
  std::vector<cu::CUcontext> unitCtxs;
  for (const Unit &u : units) {
    unitCtxs.push_back(u.ctx);
    for (const Unit &v : units) {
      int can = 0;
      if (&u != &v && (d->cuDeviceCanAccessPeer(&can, u.dev, v.dev) || !can)) {
        err = "device " + std::to_string(u.ordinal) + " cannot read device " +
              std::to_string(v.ordinal) + "'s memory (peer access)";
        return false;
      }
    }
  }
  rt::enablePeerAccess(d, unitCtxs);
  d->cuCtxSetCurrent(units[0].ctx);
  d->cuDeviceGetAttribute(&sms, 16 /*MULTIPROCESSOR_COUNT*/, units[0].dev);
  if (d->cuStreamCreate(&root, cu::CU_STREAM_NON_BLOCKING) ||
      d->cuEventCreate(&start, cu::CU_EVENT_DEFAULT) ||
      d->cuEventCreate(&stop, cu::CU_EVENT_DEFAULT))
    return !(err = "creating the timing stream failed").empty();
  send.assign(size_t(ranks), 0), recv.assign(size_t(ranks), 0);
  const uint64_t sendMax =
      std::max(rt::sendBytes(Collective::AllGather, ranks, chunk),
               rt::sendBytes(Collective::AllToAll, ranks, chunk));
  std::vector<cu::CUcontext> ctxs;
  for (int r = 0; r < ranks; ++r) {
    ctxs.push_back(units[unitOf[size_t(r)]].ctx);
    d->cuCtxSetCurrent(ctxs.back());
    if (d->cuMemAlloc(&send[size_t(r)], sendMax) ||
        d->cuMemAlloc(&recv[size_t(r)], uint64_t(ranks) * chunk))
      return !(err = "out of device memory for the collective's buffers "
                     "(--scale smaller)")
                  .empty();
  }
  ce = std::make_unique<rt::CopyEngineComm>(d, ctxs);
  if (ce->init() != CUTS_OK)
    return !(err = cuts_last_error()).empty();
  return true;
}

/// A green-context split of `u`: `k` SMs (or the driver's nearest) for the
/// collective, the rest for the GEMM.
bool Bench::partition(Unit &u, int k, std::string &err) {
  cu::CUdevResource all{}, group{}, rest{};
  unsigned n = 1;
  if (d->cuDeviceGetDevResource(u.dev, &all, cu::CU_DEV_RESOURCE_TYPE_SM) ||
      d->cuDevSmResourceSplitByCount(&group, &n, &all, &rest, 0, unsigned(k)) ||
      n != 1) {
    err = "splitting " + std::to_string(k) + " SMs off (green contexts)";
    return false;
  }
  Partition p;
  p.commSms = int(group.sm.smCount), p.gemmSms = int(rest.sm.smCount);
  cu::CUdevResource *res[2] = {&group, &rest};
  for (int i = 0; i < 2; ++i) {
    cu::CUdevResourceDesc desc = nullptr;
    if (d->cuDevResourceGenerateDesc(&desc, res[i], 1) ||
        d->cuGreenCtxCreate(&p.green[i], desc, u.dev,
                            cu::CU_GREEN_CTX_DEFAULT_STREAM) ||
        d->cuCtxFromGreenCtx(&p.ctx[i], p.green[i]) ||
        d->cuGreenCtxStreamCreate(&p.stream[i], p.green[i],
                                  cu::CU_STREAM_NON_BLOCKING, 0) ||
        d->cuCtxSetCurrent(p.ctx[i]) ||
        d->cuEventCreate(&p.done[i], cu::CU_EVENT_DEFAULT)) {
      u.parts.push_back(p); // released with the rest
      err = "creating a green context of " +
            std::to_string(i ? p.gemmSms : p.commSms) + " SMs";
      return false;
    }
  }
  std::vector<cu::CUfunction> f;
  d->cuCtxSetCurrent(p.ctx[0]);
  const bool ok = loadKernels(d, u.dev, codegen::copyChunksSource(),
                              {"cuts_copy_chunks"}, p.module, f, err);
  p.copy = ok ? f[0] : nullptr;
  u.parts.push_back(p);
  d->cuCtxSetCurrent(u.ctx);
  return ok;
}

bool Bench::runGemm(Unit &u, const Gemm &g, cu::CUcontext c, cu::CUstream s) {
  std::string err;
  d->cuCtxSetCurrent(c);
  return u.gemms.at(g.tag)->run(*u.lt, s, u.a, u.b, 0, 0, u.y, u.ws, u.wsBytes,
                                err);
}

/// In the current context (u's, or a green one of its device).
bool Bench::runSmComm(Unit &u, cu::CUfunction f, Collective c, uint64_t chunk,
                      cu::CUstream s) {
  // The copies into u's ranks (a GPU pulls its own), uploaded when the
  // collective changes (no kernel runs then: every timed run ends
  // synchronised), not in every timed launch.
  if (c != u.tableFor || chunk != u.tableChunk || u.tableCount == 0) {
    std::vector<unsigned long long> table;
    for (const rt::PeerCopy &p : rt::copyPlan(c, ranks, chunk)) {
      if (&units[unitOf[size_t(p.dst)]] != &u)
        continue;
      table.push_back(send[size_t(p.src)] + p.srcOffset);
      table.push_back(recv[size_t(p.dst)] + p.dstOffset);
      table.push_back(p.bytes);
    }
    // On the kernel's stream (pageable memory: staged before it returns),
    // so that the kernel reads it whatever stream it runs on.
    if (table.size() * 8 > 4096 ||
        d->cuMemcpyHtoDAsync(u.items, table.data(), table.size() * 8, s))
      return false;
    u.tableFor = c, u.tableChunk = chunk,
    u.tableCount = unsigned(table.size() / 3);
  }
  unsigned count = u.tableCount;
  void *args[] = {&u.items, &count};
  return d->cuLaunchKernel(f, unsigned(blocks), 1, 1, 512, 1, 1, 0, s, args,
                           nullptr) == cu::CUDA_SUCCESS;
}

/// The copy engines' collective after, and before, the work on each GPU's
/// low-priority collective stream.
bool Bench::runCe(Collective c, uint64_t chunk) {
  std::vector<cu::CUstream> streams;
  for (size_t r = 0; r < size_t(ranks); ++r)
    streams.push_back(units[unitOf[r]].commLow);
  return ce->run(c, chunk, send, recv, streams) == CUTS_OK;
}

/// The median over `iters` (after one warm-up) of the time from the start
/// of the first job to the end of the last, the jobs launched in order
/// (every stream waits for the start before any job is enqueued).
double Bench::time(const std::vector<Job> &jobs, int iters) {
  std::vector<float> ms;
  for (int it = 0; it <= iters; ++it) {
    d->cuCtxSetCurrent(units[0].ctx);
    d->cuEventRecord(start, root);
    for (const Job &j : jobs) {
      d->cuCtxSetCurrent(j.ctx);
      d->cuStreamWaitEvent(j.stream, start, 0);
    }
    for (const Job &j : jobs) {
      d->cuCtxSetCurrent(j.ctx);
      if (!j.enqueue(j.stream))
        return -1;
    }
    for (const Job &j : jobs) {
      d->cuCtxSetCurrent(j.ctx);
      if (d->cuEventRecord(j.done, j.stream))
        return -1;
    }
    d->cuCtxSetCurrent(units[0].ctx);
    for (const Job &j : jobs)
      d->cuStreamWaitEvent(root, j.done, 0);
    d->cuEventRecord(stop, root);
    if (d->cuEventSynchronize(stop))
      return -1;
    float t = 0;
    d->cuEventElapsedTime(&t, start, stop);
    if (it > 0)
      ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// Bytes the collective reads and writes on one GPU: each of its ranks
/// receives every rank's chunk.
double commBytes(const Bench &b, uint64_t chunk) {
  return 2.0 * b.ranks * b.ranksPerUnit() * double(chunk);
}

/// Every GPU's part of `c`, on the SMs (each GPU's low-priority stream) or
/// on the copy engines.
Jobs commJobs(Bench &b, bool copyEngines, Collective c, uint64_t chunk) {
  Jobs j;
  for (Unit &u : b.units) {
    Job job{u.ctx, u.commLow, u.commDone, nullptr};
    if (!copyEngines)
      job.enqueue = [&b, &u, c, chunk](cu::CUstream st) {
        return b.runSmComm(u, u.copy, c, chunk, st);
      };
    else if (&u == &b.units[0]) // one call enqueues every GPU's copies
      job.enqueue = [&b, c, chunk](cu::CUstream) { return b.runCe(c, chunk); };
    else
      job.enqueue = [](cu::CUstream) { return true; };
    j.comm.push_back(std::move(job));
  }
  return j;
}

/// Runs `c` once both ways on `chunk` and compares every rank's buffer
/// with the copy plan done on the host.
bool checkCollectives(Bench &b, Collective c, uint64_t chunk,
                      std::string &err) {
  const cu::Driver *d = b.d;
  const int n = b.ranks;
  std::vector<std::vector<uint8_t>> send(static_cast<size_t>(n)),
      want(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    send[size_t(r)].resize(rt::sendBytes(c, n, chunk));
    for (size_t i = 0; i < send[size_t(r)].size(); ++i)
      send[size_t(r)][i] = uint8_t(r * 31 + i * 7 + 3);
    want[size_t(r)].assign(rt::recvBytes(c, n, chunk), 0);
  }
  for (const rt::PeerCopy &p : rt::copyPlan(c, n, chunk))
    std::memcpy(want[size_t(p.dst)].data() + p.dstOffset,
                send[size_t(p.src)].data() + p.srcOffset, p.bytes);
  for (int engine = 0; engine < 2; ++engine) {
    for (int r = 0; r < n; ++r) {
      d->cuCtxSetCurrent(b.units[b.unitOf[size_t(r)]].ctx);
      d->cuMemcpyHtoD(b.send[size_t(r)], send[size_t(r)].data(),
                      send[size_t(r)].size());
      d->cuMemsetD8(b.recv[size_t(r)], 0, want[size_t(r)].size());
    }
    // The uploads ran on each GPU's null stream: done before any GPU reads.
    for (const Unit &u : b.units) {
      d->cuCtxSetCurrent(u.ctx);
      d->cuStreamSynchronize(nullptr);
    }
    bool ok = true;
    for (const Job &j : commJobs(b, engine == 1, c, chunk).comm) {
      d->cuCtxSetCurrent(j.ctx);
      ok = ok && j.enqueue(j.stream);
    }
    for (const Unit &u : b.units) {
      d->cuCtxSetCurrent(u.ctx);
      ok = ok && !d->cuStreamSynchronize(u.commLow);
    }
    if (!ok) {
      err = std::string(rt::collectiveName(c)) + " failed on the GPU";
      return false;
    }
    for (int r = 0; r < n; ++r) {
      std::vector<uint8_t> got(want[size_t(r)].size());
      d->cuCtxSetCurrent(b.units[b.unitOf[size_t(r)]].ctx);
      d->cuMemcpyDtoH(got.data(), b.recv[size_t(r)], got.size());
      if (got != want[size_t(r)]) {
        err = std::string(rt::collectiveName(c)) +
              (engine ? " (copy engines)" : " (SMs)") + ": rank " +
              std::to_string(r) + " holds a wrong result";
        return false;
      }
    }
  }
  return true;
}

const Partition *partitionFor(const Unit &u, int commSms) {
  for (const Partition &p : u.parts)
    if (p.commSms == commSms)
      return &p;
  return nullptr;
}

/// The jobs of `c` for GEMM `g` beside `coll` of `chunk`: on every GPU.
Jobs jobsFor(Bench &b, const C3Config &c, const Gemm &g, Collective coll,
             uint64_t chunk) {
  const bool onCe = c.strategy == C3Strategy::CopyEngine ||
                    c.strategy == C3Strategy::CopyEnginePartitioned;
  Jobs j = commJobs(b, onCe, coll, chunk);
  j.commFirst = c.strategy != C3Strategy::Base;
  for (size_t i = 0; i < b.units.size(); ++i) {
    Unit &u = b.units[i];
    const Partition *p = partitionFor(u, c.commSms);
    Job gemm{u.ctx, u.gemmStream, u.gemmDone, nullptr};
    Job &comm = j.comm[i];
    if (c.strategy == C3Strategy::Prioritised)
      comm.stream = u.commHigh;
    if (p && (c.strategy == C3Strategy::Partitioned ||
              c.strategy == C3Strategy::CopyEnginePartitioned))
      gemm = Job{p->ctx[1], p->stream[1], p->done[1], nullptr};
    if (p && c.strategy == C3Strategy::Partitioned)
      comm = Job{p->ctx[0], p->stream[0], p->done[0],
                 [&b, &u, f = p->copy, coll, chunk](cu::CUstream st) {
                   return b.runSmComm(u, f, coll, chunk, st);
                 }};
    gemm.enqueue = [&b, &u, gp = &g, ctx = gemm.ctx](cu::CUstream st) {
      return b.runGemm(u, *gp, ctx, st);
    };
    j.gemm.push_back(std::move(gemm));
  }
  return j;
}

/// The slowdown tables and the copy engines' rate (§V-C: measured once a
/// GPU): cb1 and mb1 on all but k SMs, the SM collective on k, against
/// each on the whole GPU.
bool calibrate(Bench &b, const Options &o, uint64_t chunk, uint64_t maxChunk,
               C3Machine &m, nlohmann::json &out, std::string &err) {
  const Collective ag = Collective::AllGather;
  const Gemm &cb = gemmNamed("cb1"), &mb = gemmNamed("mb1");
  const C3Config none{C3Strategy::Base, 0};
  auto one = [&](const std::vector<Job> &j) { return b.time(j, o.iters); };
  // The SM collective's grid: the fewest blocks within 10 % of its best
  // time alone, as NCCL sizes its channels to the link (unless --blocks).
  nlohmann::json grid = nlohmann::json::array();
  if (o.blocks == 0) {
    std::vector<std::pair<int, double>> times;
    for (int blocks = 16; blocks <= 4 * b.sms; blocks *= 2) {
      b.blocks = blocks;
      times.push_back({blocks, one(jobsFor(b, none, cb, ag, chunk).comm)});
      grid.push_back({{"blocks", blocks}, {"ms", times.back().second}});
    }
    double least = 1e30;
    for (const auto &t : times)
      least = std::min(least, t.second);
    for (auto it = times.rbegin(); it != times.rend(); ++it)
      if (it->second <= 1.1 * least)
        b.blocks = it->first;
  }
  const double cbAll = one(jobsFor(b, none, cb, ag, chunk).gemm),
               mbAll = one(jobsFor(b, none, mb, ag, chunk).gemm),
               commAll = one(jobsFor(b, none, cb, ag, chunk).comm),
               ceAll = one(
                   jobsFor(b, {C3Strategy::CopyEngine, 0}, cb, ag, chunk).comm);
  if (cbAll <= 0 || mbAll <= 0 || commAll <= 0 || ceAll <= 0)
    return !(err = "timing the isolated kernels failed").empty();
  m.copyEngineBandwidth = commBytes(b, chunk) / (ceAll * 1e-3);
  // Across GPUs the SM collective's pace is its links', not HBM's.
  if (b.units.size() > 1)
    m.commBandwidth = commBytes(b, chunk) / (commAll * 1e-3);
  // The GEMM slowed by a collective beside it: mb1, the longer, with the
  // collective started together. The slowdown is C / (G + C - both): the
  // collective is sized to about half of mb1 (as the buffers allow), as a
  // short one leaves it the small difference of two long, noisy times.
  const uint64_t ceChunk = std::min<uint64_t>(
      maxChunk,
      uint64_t(double(chunk) * std::max(1.0, 0.5 * mbAll / ceAll)) / 16 * 16);
  const double
      ceLong =
          one(jobsFor(b, {C3Strategy::CopyEngine, 0}, mb, ag, ceChunk).comm),
      ceBoth = one(
          jobsFor(b, {C3Strategy::CopyEngine, 0}, mb, ag, ceChunk).launch());
  m.gemmBesideCe = gemmSlowdownBeside(mbAll, ceLong, ceBoth);
  m.commSmsFirst = std::min(b.blocks, b.sms);
  out = {{"gemm_all_ms", {{"cb1", cbAll}, {"mb1", mbAll}}},
         {"comm_sm_ms", commAll},
         {"comm_ce_ms", ceAll},
         {"copy_engine_gbs", m.copyEngineBandwidth / 1e9},
         {"comm_blocks", b.blocks},
         {"mb1_beside_ce", m.gemmBesideCe},
         {"ce_calibration_ms", ceLong},
         {"comm_grid_sweep", grid},
         {"splits", nlohmann::json::array()}};
  for (const Partition &p : b.units[0].parts) {
    const C3Config at{C3Strategy::Partitioned, p.commSms};
    const Jobs cbJobs = jobsFor(b, at, cb, ag, chunk),
               mbJobs = jobsFor(b, at, mb, ag, chunk);
    const double cbLess = one(cbJobs.gemm), mbLess = one(mbJobs.gemm),
                 commFew = one(cbJobs.comm), both = one(mbJobs.launch());
    if (cbLess <= 0 || mbLess <= 0 || commFew <= 0 || both <= 0)
      return !(err = "timing on green contexts failed").empty();
    m.splits.push_back(p.commSms);
    m.comm.push_back(commFew / commAll);
    m.gemmBeside.push_back(gemmSlowdownBeside(mbLess, commFew, both));
    out["splits"].push_back({{"comm_sms", p.commSms},
                             {"gemm_sms", p.gemmSms},
                             {"cb1_slowdown", cbLess / cbAll},
                             {"mb1_slowdown", mbLess / mbAll},
                             {"comm_slowdown", commFew / commAll},
                             {"mb1_beside_comm", m.gemmBeside.back()}});
  }
  return true;
}

/// One scenario: the isolated times, every configuration's, and the
/// heuristic's pick against the best.
nlohmann::json runScenario(Bench &b, const Options &o, const C3Machine &m,
                           const Pair &pair, Collective coll, uint64_t chunk,
                           std::string &err) {
  const Gemm &g = gemmNamed(pair.gemm);
  const C3Config none{C3Strategy::Base, 0};
  const Jobs base = jobsFor(b, none, g, coll, chunk);
  const double gemm = b.time(base.gemm, o.iters),
               comm = b.time(base.comm, o.iters),
               ce = b.time(
                   jobsFor(b, {C3Strategy::CopyEngine, 0}, g, coll, chunk).comm,
                   o.iters);
  C3Scenario sc;
  sc.gemmFlops = 2.0 * double(g.m) * double(g.n) * double(g.k);
  sc.gemmBytes = 2.0 * double(g.m * g.k + g.k * g.n + g.m * g.n);
  sc.commBytes = commBytes(b, chunk);
  nlohmann::json configs = nlohmann::json::array();
  double best = 1e30;
  std::string bestName;
  std::map<std::string, double> measured;
  for (const C3Config &c : c3Configs(m)) {
    const double t = b.time(jobsFor(b, c, g, coll, chunk).launch(), o.iters);
    if (t <= 0 || gemm <= 0 || comm <= 0 || ce <= 0) {
      err = pairName(pair) + ": " + describeC3(c) + " failed on the GPU";
      return nullptr;
    }
    measured[describeC3(c)] = t;
    if (t < best)
      best = t, bestName = describeC3(c);
    // Against the serial run with the collective the configuration uses.
    const bool onCe = c.strategy == C3Strategy::CopyEngine ||
                      c.strategy == C3Strategy::CopyEnginePartitioned;
    configs.push_back({{"config", describeC3(c)},
                       {"ms", t},
                       {"predicted_ms", 1e3 * predictC3(m, sc, c)},
                       {"pct_ideal", percentOfIdeal(gemm, onCe ? ce : comm, t)},
                       {"speedup_vs_sm_serial", (gemm + comm) / t}});
  }
  const std::string pick = describeC3(chooseC3(m, sc));
  return {{"scenario", pairName(pair)},
          {"collective", rt::collectiveName(coll)},
          {"bytes", uint64_t(b.ranks) * chunk},
          {"type", c3TypeName(classifyC3(gemm, comm))},
          {"type_predicted",
           c3TypeName(classifyC3(rooflineGemm(m, sc), rooflineComm(m, sc)))},
          {"gemm_ms", gemm},
          {"comm_sm_ms", comm},
          {"comm_ce_ms", ce},
          {"ideal_speedup", idealSpeedup(gemm, comm)},
          {"ideal_speedup_ce", idealSpeedup(gemm, ce)},
          {"configs", configs},
          {"best", bestName},
          {"pick", pick},
          {"pick_over_best", measured[pick] / best},
          {"pick_within_10pct", measured[pick] <= 1.1 * best}};
}

/// Best % of ideal among configurations whose name starts with `prefix`.
double bestPct(const nlohmann::json &row, const std::string &prefix) {
  double pct = -1e9;
  for (const nlohmann::json &c : row["configs"])
    if (c["config"].get<std::string>().rfind(prefix, 0) == 0)
      pct = std::max(pct, c["pct_ideal"].get<double>());
  return pct;
}

double pctOf(const nlohmann::json &row, const std::string &name) {
  for (const nlohmann::json &c : row["configs"])
    if (c["config"] == name)
      return c["pct_ideal"];
  return 0;
}

void printReport(const nlohmann::json &j) {
  std::printf(
      "%-12s %-10s %-8s %8s %8s %8s %6s %6s %6s %6s %6s %6s  %-18s %s\n",
      "scenario", "coll", "type", "G ms", "C sm", "C ce", "ideal", "base%",
      "sp%", "rp%", "ce%", "cerp%", "pick", "pick/best");
  for (const nlohmann::json &r : j["scenarios"])
    std::printf("%-12s %-10s %-8s %8.2f %8.2f %8.2f %6.2f %6.0f %6.0f %6.0f "
                "%6.0f %6.0f  %-18s %.3f%s\n",
                r["scenario"].get<std::string>().c_str(),
                r["collective"].get<std::string>().c_str(),
                r["type"].get<std::string>().c_str(), double(r["gemm_ms"]),
                double(r["comm_sm_ms"]), double(r["comm_ce_ms"]),
                double(r["ideal_speedup"]), pctOf(r, "c3_base"),
                pctOf(r, "c3_sp"), bestPct(r, "c3_rp"), pctOf(r, "conccl"),
                bestPct(r, "conccl_rp"), r["pick"].get<std::string>().c_str(),
                double(r["pick_over_best"]),
                r["pick_within_10pct"].get<bool>() ? "" : "  (miss)");
  const nlohmann::json &s = j["summary"];
  std::printf("mean %% of ideal: c3_base %.0f, c3_sp %.0f, c3_rp %.0f, conccl "
              "%.0f, conccl_rp %.0f, heuristic %.0f; heuristic within 10%% of "
              "the best in %d of %d scenarios\n",
              double(s["c3_base"]), double(s["c3_sp"]), double(s["c3_rp"]),
              double(s["conccl"]), double(s["conccl_rp"]),
              double(s["heuristic"]), int(s["hits"]), int(s["scenarios"]));
}

nlohmann::json summarise(const nlohmann::json &rows) {
  double sum[6] = {};
  int hits = 0, n = 0;
  for (const nlohmann::json &r : rows) {
    const double pct[6] = {pctOf(r, "c3_base"),     pctOf(r, "c3_sp"),
                           bestPct(r, "c3_rp"),     pctOf(r, "conccl"),
                           bestPct(r, "conccl_rp"), pctOf(r, r["pick"])};
    for (int i = 0; i < 6; ++i)
      sum[i] += pct[i];
    hits += r["pick_within_10pct"].get<bool>();
    ++n;
  }
  auto mean = [&](int i) { return n ? sum[i] / n : 0.0; };
  return {{"c3_base", mean(0)}, {"c3_sp", mean(1)},     {"c3_rp", mean(2)},
          {"conccl", mean(3)},  {"conccl_rp", mean(4)}, {"heuristic", mean(5)},
          {"hits", hits},       {"scenarios", n}};
}

bool parseOptions(const std::vector<std::string> &args, Options &o) {
  std::string list;
  for (ArgList a(args); a.next();) {
    std::vector<int> ints;
    if (a.is("--gpus")) {
      if (!a.value(list) || !parseOrdinals(list, ints))
        return !error("", "--gpus needs device ordinals, e.g. 0,0");
      // Each GPU holds as many ranks as the others (0,0 or 0,1 or 0,0,1,1).
      if (std::any_of(ints.begin(), ints.end(), [&](int x) {
            return std::count(ints.begin(), ints.end(), x) !=
                   std::count(ints.begin(), ints.end(), ints[0]);
          }))
        return !error("", "--gpus: every device must hold as many ranks as "
                          "the others (0,0 or 0,1 or 0,0,1,1)");
      o.gpus = ints;
    } else if (a.is("--splits")) {
      if (!a.value(list) || !parseOrdinals(list, o.splits) || o.splits.empty())
        return !error("", "--splits needs SM counts, e.g. 8,16,32");
    } else if (a.is("--scenarios")) {
      a.value(list);
      o.only.clear();
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        o.only.push_back(list.substr(at, comma - at));
        at = comma + 1;
      }
    } else if (a.is("--collective")) {
      std::string v;
      a.value(v);
      o.collectives.clear();
      for (Collective c : {Collective::AllGather, Collective::AllToAll})
        if (v == "both" || v == rt::collectiveName(c))
          o.collectives.push_back(c);
      if (o.collectives.empty())
        return !error("", "--collective needs all-gather, all-to-all or both");
    } else if (a.is("--scale")) {
      std::string v;
      char *end = nullptr;
      if (!a.value(v) || !((o.scale = std::strtod(v.c_str(), &end)) > 0) ||
          *end || o.scale > 1)
        return !error("", "--scale needs a factor in (0, 1]");
    } else if (a.is("--iters")) {
      if (!a.integer(o.iters, 1, 1000))
        return !error("", "--iters needs a count >= 1");
    } else if (a.is("--blocks")) {
      if (!a.integer(o.blocks, 1, 4096))
        return !error("", "--blocks needs a count >= 1");
    } else if (a.is("--json")) {
      o.json = true;
    } else {
      return !error("", "c3: unknown argument '" + a.arg() + "'");
    }
  }
  for (const std::string &name : o.only)
    if (std::none_of(std::begin(kPairs), std::end(kPairs),
                     [&](const Pair &p) { return pairName(p) == name; }))
      return !error("", "--scenarios: no scenario '" + name +
                            "' (Table II's, e.g. mb1_896M,cb5_1.63G)");
  if (o.gpus.size() < 2 || o.gpus.size() > 8)
    return !error("", "cuts c3 takes 2 to 8 ranks (--gpus 0,0)");
  return true;
}

/// The largest scale of Table II's sizes whose buffers fit in half the
/// free memory after the GEMMs' (at most 1).
double fitScale(const Options &o, size_t freeBytes) {
  double most = 0;
  for (const Pair &p : kPairs)
    most = std::max(most, p.gib * double(1ull << 30));
  // Per rank: all-to-all sends `size`, and every rank receives `size`; a
  // GPU holds its share of the ranks.
  const double perGpu =
                   double(std::count(o.gpus.begin(), o.gpus.end(), o.gpus[0])),
               need = 2.0 * perGpu * most, gemms = 6.0 * double(1ull << 30);
  return std::min(1.0, std::max(0.0, (0.5 * double(freeBytes) - gemms) / need));
}

} // namespace

int cmdC3(const std::vector<std::string> &args) {
  Options o;
  if (!parseOptions(args, o))
    return 1;
  std::string err;
  Bench b;
  b.d = cu::driver(err);
  if (!b.d)
    return error("", err);
  if (!b.d->hasGreenContexts())
    return error("", "this CUDA driver has no green contexts (CUDA 12.4+)");
  // The sizes fit the GPU with the least free memory.
  size_t freeBytes = SIZE_MAX;
  for (int g : o.gpus) {
    cu::CUdevice dev = 0;
    cu::CUcontext ctx = nullptr;
    size_t free = 0, total = 0;
    if (b.d->cuDeviceGet(&dev, g) || b.d->cuDevicePrimaryCtxRetain(&ctx, dev) ||
        b.d->cuCtxSetCurrent(ctx) || b.d->cuMemGetInfo(&free, &total))
      return error("",
                   "CUDA device " + std::to_string(g) + " cannot be opened");
    freeBytes = std::min(freeBytes, free);
  }
  const double scale = o.scale > 0 ? o.scale : fitScale(o, freeBytes);
  double most = 0;
  for (const Pair &p : kPairs)
    most = std::max(most, p.gib * double(1ull << 30) * scale);
  const int ranks = int(o.gpus.size());
  const uint64_t maxChunk = uint64_t(most / ranks) / 16 * 16;
  if (maxChunk < (1u << 20))
    return error("", "too little device memory for the collectives");
  if (!b.open(o, maxChunk, err))
    return error("", err);
  for (Unit &u : b.units)
    for (int k : o.splits)
      if (!b.partition(u, k, err))
        return error("", err);
  // A configuration names its split by the first GPU's SM counts.
  for (const Unit &u : b.units)
    for (size_t i = 0; i < u.parts.size(); ++i)
      if (u.parts[i].commSms != b.units[0].parts[i].commSms)
        return error("", "the GPUs split their SMs differently (" +
                             std::to_string(u.parts[i].commSms) + " and " +
                             std::to_string(b.units[0].parts[i].commSms) +
                             " for --splits' entry " + std::to_string(i) +
                             "): one kind of GPU only");
  for (Collective c : o.collectives)
    if (!checkCollectives(b, c, 1 << 16, err))
      return error("", err);
  // The heuristic's peaks: the descriptor of this GPU, or sm_90's.
  char name[128] = {};
  b.d->cuDeviceGetName(name, sizeof name, b.units[0].dev);
  const std::string dn = name;
  auto arch = findArch(dn.find("H200") != std::string::npos   ? "h200"
                       : dn.find("H100") != std::string::npos ? "h100"
                                                              : dn);
  if (!arch)
    return error("", "no GPU descriptor for " + dn +
                         " (perfmodel/arch): the heuristic needs its peaks");
  C3Machine m;
  m.sms = b.sms, m.peakFlops = arch->perfPeakFp16, m.bandwidth = arch->bwGlobal;
  nlohmann::json tables;
  const uint64_t calib = std::min<uint64_t>(maxChunk, (1ull << 30) / ranks);
  if (!calibrate(b, o, calib, maxChunk, m, tables, err))
    return error("", err);
  nlohmann::json rows = nlohmann::json::array();
  for (Collective c : o.collectives)
    for (const Pair &p : kPairs) {
      if (!o.only.empty() &&
          std::find(o.only.begin(), o.only.end(), pairName(p)) == o.only.end())
        continue;
      const uint64_t chunk =
          uint64_t(p.gib * double(1ull << 30) * scale / ranks) / 16 * 16;
      nlohmann::json row = runScenario(b, o, m, p, c, chunk, err);
      if (row.is_null())
        return error("", err);
      rows.push_back(std::move(row));
    }
  nlohmann::json j = {{"device", dn},       {"sms", b.sms},
                      {"ranks", ranks},     {"gpus", b.units.size()},
                      {"scale", scale},     {"iters", o.iters},
                      {"blocks", b.blocks}, {"tables", tables},
                      {"scenarios", rows},  {"summary", summarise(rows)}};
  if (o.json)
    std::printf("%s\n", j.dump(1).c_str());
  else
    printReport(j);
  return 0;
}

} // namespace cuts::cli

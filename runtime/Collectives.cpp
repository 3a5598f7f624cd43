//===- Collectives.cpp - copy-engine collectives over a device list -------===//
#include "cuts/rt/Collectives.h"

#include "Session.h"

namespace cuts::rt {

const char *collectiveName(Collective c) {
  switch (c) {
  case Collective::AllGather:
    return "all-gather";
  case Collective::AllToAll:
    return "all-to-all";
  case Collective::ReduceScatter:
    return "reduce-scatter";
  }
  return "?";
}

uint64_t sendBytes(Collective c, int ranks, uint64_t chunk) {
  return c == Collective::AllGather ? chunk : uint64_t(ranks) * chunk;
}

uint64_t recvBytes(Collective, int ranks, uint64_t chunk) {
  return uint64_t(ranks) * chunk;
}

std::vector<PeerCopy> copyPlan(Collective c, int ranks, uint64_t chunk) {
  std::vector<PeerCopy> plan;
  for (int src = 0; src < ranks; ++src)
    for (int k = 1; k <= ranks; ++k) {
      const int dst = (src + k) % ranks; // the source itself last
      PeerCopy p;
      p.src = src, p.dst = dst, p.bytes = chunk;
      p.srcOffset = c == Collective::AllGather ? 0 : uint64_t(dst) * chunk;
      p.dstOffset = uint64_t(src) * chunk;
      plan.push_back(p);
    }
  return plan;
}

AllReducePlan allReducePlan(int ranks, uint64_t elems, uint64_t elemBytes) {
  AllReducePlan p;
  p.elemBytes = elemBytes;
  const uint64_t n = uint64_t(ranks);
  const uint64_t chunk = (elems + n - 1) / n;
  for (uint64_t c = 0; c < n; ++c) {
    const uint64_t begin = std::min(elems, c * chunk);
    p.begin.push_back(begin);
    p.count.push_back(std::min(elems, begin + chunk) - begin);
  }
  p.scratchBytes = n * chunk * elemBytes;
  // As copyPlan orders them: by source, the destination from its
  // right-hand neighbour round to itself.
  for (int src = 0; src < ranks; ++src)
    for (int k = 1; k <= ranks; ++k) {
      const int c = (src + k) % ranks;
      const uint64_t bytes = p.count[c] * elemBytes;
      if (bytes == 0)
        continue;
      p.scatter.push_back(
          {src, c, p.begin[c] * elemBytes, uint64_t(src) * bytes, bytes});
      if (c != src) // rank c's sum to rank src
        p.gather.push_back(
            {c, src, p.begin[c] * elemBytes, p.begin[c] * elemBytes, bytes});
    }
  return p;
}

CopyEngineComm::CopyEngineComm(const cuda::Driver *d,
                               std::vector<cuda::CUcontext> ctx)
    : d(d), ctx(std::move(ctx)) {}

CopyEngineComm::~CopyEngineComm() {
  for (size_t s = 0; s < copy.size(); ++s) {
    d->cuCtxSetCurrent(ctx[s]);
    for (CUstream st : copy[s])
      if (st)
        d->cuStreamDestroy(st);
    for (CUevent e : done[s])
      if (e)
        d->cuEventDestroy(e);
    if (ready[s])
      d->cuEventDestroy(ready[s]);
  }
}

void enablePeerAccess(const cuda::Driver *d,
                      const std::vector<CUcontext> &ctx) {
  CUcontext current = nullptr;
  d->cuCtxGetCurrent(&current);
  for (CUcontext from : ctx)
    for (CUcontext to : ctx)
      if (from != to) {
        d->cuCtxSetCurrent(from);
        d->cuCtxEnablePeerAccess(to, 0); // an error leaves copies staged
      }
  d->cuCtxSetCurrent(current);
}

cuts_status CopyEngineComm::init(int priority) {
  const size_t n = ctx.size();
  enablePeerAccess(d, ctx);
  copy.assign(n, std::vector<CUstream>(n, nullptr));
  done.assign(n, std::vector<CUevent>(n, nullptr));
  ready.assign(n, nullptr);
  for (size_t s = 0; s < n; ++s) {
    if (CUresult r = d->cuCtxSetCurrent(ctx[s]))
      return cudaFail(r, "cuCtxSetCurrent");
    if (CUresult r = d->cuEventCreate(&ready[s], cuda::CU_EVENT_DISABLE_TIMING))
      return cudaFail(r, "cuEventCreate");
    for (size_t t = 0; t < n; ++t) {
      if (CUresult r = d->cuStreamCreateWithPriority(
              &copy[s][t], cuda::CU_STREAM_NON_BLOCKING, priority))
        return cudaFail(r, "creating a copy stream (cuStreamCreate)");
      if (CUresult r =
              d->cuEventCreate(&done[s][t], cuda::CU_EVENT_DISABLE_TIMING))
        return cudaFail(r, "cuEventCreate");
    }
  }
  return CUTS_OK;
}

cuts_status CopyEngineComm::run(Collective c, uint64_t chunk,
                                const std::vector<CUdeviceptr> &send,
                                const std::vector<CUdeviceptr> &recv,
                                const std::vector<CUstream> &streams) {
  const size_t n = ctx.size();
  if (copy.size() != n || send.size() != n || recv.size() != n ||
      streams.size() != n)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                std::string(collectiveName(c)) + ": " + std::to_string(n) +
                    " ranks, but buffers or streams for another count");
  if (cuts_status st = record(ready, streams))
    return st;
  // A copy waits for its source's and its destination's stream.
  const std::vector<PeerCopy> plan = copyPlan(c, int(n), chunk);
  if (cuts_status st = copyAll(plan, send, recv, collectiveName(c)))
    return st;
  return waitCopies(plan, streams);
}

cuts_status CopyEngineComm::record(std::vector<CUevent> &events,
                                   const std::vector<CUstream> &streams) {
  for (size_t e = 0; e < ctx.size(); ++e) {
    d->cuCtxSetCurrent(ctx[e]);
    if (CUresult r = d->cuEventRecord(events[e], streams[e]))
      return cudaFail(r, "cuEventRecord");
  }
  return CUTS_OK;
}

/// Each transfer of `copies` (from rank src's `from` buffer to rank dst's
/// `to`) on its copy stream, after the events of its source and
/// destination, recording done[src][dst].
cuts_status CopyEngineComm::copyAll(const std::vector<PeerCopy> &copies,
                                    const std::vector<CUdeviceptr> &from,
                                    const std::vector<CUdeviceptr> &to,
                                    const char *what) {
  for (const PeerCopy &p : copies) {
    CUstream st = copy[p.src][p.dst];
    d->cuCtxSetCurrent(ctx[p.src]);
    for (int who : {p.src, p.dst})
      if (CUresult r = d->cuStreamWaitEvent(st, ready[who], 0))
        return cudaFail(r, "cuStreamWaitEvent");
    const CUdeviceptr src = from[p.src] + p.srcOffset,
                      dst = to[p.dst] + p.dstOffset;
    CUresult r = ctx[p.src] == ctx[p.dst]
                     ? d->cuMemcpyDtoDAsync(dst, src, p.bytes, st)
                     : d->cuMemcpyPeerAsync(dst, ctx[p.dst], src, ctx[p.src],
                                            p.bytes, st);
    if (r)
      return cudaFail(r, std::string(what) + ": copying rank " +
                             std::to_string(p.src) + "'s chunk to rank " +
                             std::to_string(p.dst));
    if (CUresult x = d->cuEventRecord(done[p.src][p.dst], st))
      return cudaFail(x, "cuEventRecord");
  }
  return CUTS_OK;
}

/// Each rank's stream waits for the copies of `copies` into it and out of
/// it: after that it may overwrite what they read or wrote.
cuts_status CopyEngineComm::waitCopies(const std::vector<PeerCopy> &copies,
                                       const std::vector<CUstream> &streams) {
  for (const PeerCopy &p : copies)
    for (int rank : {p.dst, p.src}) {
      d->cuCtxSetCurrent(ctx[size_t(rank)]);
      if (CUresult r = d->cuStreamWaitEvent(streams[size_t(rank)],
                                            done[p.src][p.dst], 0))
        return cudaFail(r, "cuStreamWaitEvent");
    }
  return CUTS_OK;
}

cuts_status CopyEngineComm::allReduce(const AllReducePlan &plan,
                                      const std::vector<CUdeviceptr> &data,
                                      const std::vector<CUdeviceptr> &scratch,
                                      const std::vector<CUstream> &streams,
                                      const std::vector<CUfunction> &reduce) {
  const size_t n = ctx.size();
  if (copy.size() != n || data.size() != n || scratch.size() != n ||
      streams.size() != n || reduce.size() != n || plan.count.size() != n)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "all-reduce: " + std::to_string(n) +
                    " ranks, but buffers or streams for another count");
  if (cuts_status st = record(ready, streams))
    return st;
  if (cuts_status st = copyAll(plan.scatter, data, scratch, "all-reduce"))
    return st;
  // Rank c's sum once every slot of its chunk has arrived; `ready` then
  // marks it, for the gather's copies to wait on.
  if (cuts_status st = waitCopies(plan.scatter, streams))
    return st;
  for (size_t c = 0; c < n; ++c) {
    d->cuCtxSetCurrent(ctx[c]);
    if (plan.count[c] == 0)
      continue;
    CUdeviceptr in = scratch[c], out = data[c] + plan.begin[c] * plan.elemBytes;
    unsigned ranks = unsigned(n);
    unsigned long long count = plan.count[c];
    void *args[] = {&in, &ranks, &count, &out};
    const unsigned block = 256;
    const unsigned grid =
        unsigned(std::min<uint64_t>((count + block - 1) / block, 1024));
    if (CUresult r = d->cuLaunchKernel(reduce[c], grid, 1, 1, block, 1, 1, 0,
                                       streams[c], args, nullptr))
      return cudaFail(r, "all-reduce: rank " + std::to_string(c) +
                             "'s sum (cuLaunchKernel)");
  }
  if (cuts_status st = record(ready, streams))
    return st;
  if (cuts_status st = copyAll(plan.gather, data, data, "all-reduce"))
    return st;
  return waitCopies(plan.gather, streams);
}

} // namespace cuts::rt

//===- DataParallel.cpp - host runs over a device list (ScaleDNN) ---------===//
//
// A host run's batch is split across the entries of the session's device
// list in proportion to their shares, CPU-centric: each slice goes from the
// caller's memory straight to its device and its outputs straight back. The
// master-GPU baseline (the whole batch through the first device) is here
// too, for the comparison.
//
// Host runs are pipelined per entry (a Lane): while one run computes on the
// session's stream, the next one's inputs are copied in on a copy stream
// into the other buffer set (pre-loading), and the outputs go back on a
// second. Every phase is bracketed by events, which give the data-movement
// breakdown (cuts_session_movement) once the run is waited for.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "cuts/rt/Binding.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

using namespace cuts::rt;
using namespace cuts::rt::cuda;

namespace cuts::rt {

Lane::~Lane() {
  if (!d)
    return;
  d->cuCtxSetCurrent(ctx);
  for (CUstream s : {in, out})
    if (s)
      d->cuStreamSynchronize(s);
  for (Slot &slot : slots) {
    for (const std::vector<CUdeviceptr> *bufs : {&slot.in, &slot.out})
      for (CUdeviceptr p : *bufs)
        if (p)
          d->cuMemFree(p);
    for (const std::vector<void *> *stage : {&slot.stageIn, &slot.stageOut})
      for (void *p : *stage)
        if (p)
          d->cuMemFreeHost(p);
  }
  for (CUevent e : events)
    if (e)
      d->cuEventDestroy(e);
  for (CUstream s : {in, out})
    if (s)
      d->cuStreamDestroy(s);
}

} // namespace cuts::rt

namespace {

using Clock = std::chrono::steady_clock;

/// The session of each entry of the device list, the first's first.
std::vector<cuts_session *> entries(cuts_session &s) {
  std::vector<cuts_session *> all = {&s};
  for (const auto &r : s.replicas)
    all.push_back(r.get());
  return all;
}

/// body(e, session) for each active entry, in its context: inline for one,
/// else one host thread each; the first failure, naming its entry.
template <typename Body>
cuts_status onEntries(cuts_session &s, const std::vector<bool> &active,
                      Body body) {
  std::vector<cuts_session *> all = entries(s);
  std::vector<cuts_status> status(all.size(), CUTS_OK);
  std::vector<std::string> errors(all.size());
  auto one = [&](size_t e) {
    cuts_session &x = *all[e];
    cuts_status st = enter(*x.model);
    if (st == CUTS_OK)
      st = body(e, x);
    status[e] = st;
    if (st != CUTS_OK)
      errors[e] = lastError;
  };
  if (std::count(active.begin(), active.end(), true) == 1) {
    one(size_t(std::find(active.begin(), active.end(), true) - active.begin()));
  } else {
    std::vector<std::thread> threads;
    for (size_t e = 0; e < all.size(); ++e)
      if (active[e])
        threads.emplace_back(one, e);
    for (std::thread &t : threads)
      t.join();
  }
  for (size_t e = 0; e < all.size(); ++e)
    if (status[e] != CUTS_OK)
      return fail(status[e], all.size() == 1
                                 ? errors[e]
                                 : "device list entry " + std::to_string(e) +
                                       ": " + errors[e]);
  return CUTS_OK;
}

/// The entry's lane, made on its first pipelined run.
cuts_status openLane(cuts_session &x) {
  if (x.lane)
    return CUTS_OK;
  const Driver *d = x.model->d;
  auto l = std::make_unique<Lane>();
  l->d = d;
  l->ctx = x.model->ctx;
  for (CUstream *s : {&l->in, &l->out})
    if (CUresult r = d->cuStreamCreate(s, CU_STREAM_NON_BLOCKING)) {
      *s = nullptr;
      return cudaFail(r, "creating a copy stream (cuStreamCreate)");
    }
  l->events.assign(size_t(Lane::kMarkSets) * Lane::kMarks, nullptr);
  for (CUevent &e : l->events)
    if (CUresult r = d->cuEventCreate(&e, CU_EVENT_DEFAULT)) {
      e = nullptr;
      return cudaFail(r, "cuEventCreate");
    }
  x.lane = std::move(l);
  return CUTS_OK;
}

/// Whether the driver knows `p` as page-locked host memory (copied by DMA,
/// asynchronously).
bool pinned(const Driver *d, const void *p) {
  unsigned type = 0;
  int attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
  void *data[] = {&type};
  return d->cuPointerGetAttributes(1, &attr, data, CUdeviceptr(uintptr_t(p))) ==
             CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_HOST;
}

/// Pinned staging of at least `bytes` in `stage[i]`.
cuts_status ensureStage(const Driver *d, std::vector<void *> &stage,
                        std::vector<size_t> &have, size_t i, size_t bytes) {
  stage.resize(std::max(stage.size(), i + 1), nullptr);
  have.resize(stage.size(), 0);
  if (have[i] >= bytes)
    return CUTS_OK;
  if (stage[i])
    d->cuMemFreeHost(stage[i]);
  stage[i] = nullptr, have[i] = 0;
  if (CUresult r = d->cuMemHostAlloc(&stage[i], bytes, 0)) {
    stage[i] = nullptr;
    return cudaFail(r, "allocating " + std::to_string(bytes) +
                           " bytes of pinned staging (cuMemHostAlloc)");
  }
  have[i] = bytes;
  return CUTS_OK;
}

cuts_status record(const Lane &l, uint64_t ticket, Lane::Mark m, CUstream s) {
  if (CUresult r = l.d->cuEventRecord(l.mark(ticket, m), s))
    return cudaFail(r, "cuEventRecord");
  return CUTS_OK;
}

cuts_status waitFor(const Lane &l, CUstream s, uint64_t ticket, Lane::Mark m) {
  if (CUresult r = l.d->cuStreamWaitEvent(s, l.mark(ticket, m), 0))
    return cudaFail(r, "cuStreamWaitEvent");
  return CUTS_OK;
}

/// Bytes of one batch row of tensor `t` (0: unbatched).
uint64_t rowBytes(const Manifest &man, int t) {
  const Tensor &x = man.tensors[size_t(t)];
  return x.batchAxis >= 0 && x.shape[0] > 0 ? x.bytes() / uint64_t(x.shape[0])
                                            : 0;
}

/// What one entry's part of a pipelined run reads and writes: its rows of
/// the caller's buffers.
struct Part {
  int64_t rows = 0;       // 0: the whole of a model without batch profiles
  int64_t offset = 0;     // its first row in the caller's batch
  bool unbatched = false; // it writes the unbatched outputs
};

/// Copies a part's inputs into the lane's slot on its copy stream, through
/// pinned staging where the caller's memory is pageable; the padding rows
/// zeroed.
cuts_status copyIn(cuts_session &x, PendingRun &run, size_t e, const Part &p,
                   const std::vector<void *> &in) {
  Lane &l = *x.lane;
  Lane::Slot &slot = l.slots[run.ticket % Lane::kSlots];
  const Manifest &man = x.plan->manifest();
  const Driver *d = l.d;
  if (!x.preload && l.lastTicket)
    if (cuts_status st = waitFor(l, l.in, l.lastTicket, Lane::ComputeEnd))
      return st;
  if (cuts_status st = record(l, run.ticket, Lane::H2dBegin, l.in))
    return st;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor &t = man.tensors[man.inputs[i]];
    const uint64_t bytes = bytesAtBatch(t, p.rows);
    if (bytes == 0)
      continue;
    const void *from = static_cast<const uint8_t *>(in[i]) +
                       uint64_t(p.offset) * rowBytes(man, man.inputs[i]);
    if (!pinned(d, from)) {
      auto t0 = Clock::now();
      if (cuts_status st =
              ensureStage(d, slot.stageIn, slot.stageInBytes, i, bytes))
        return st;
      std::memcpy(slot.stageIn[i], from, bytes);
      from = slot.stageIn[i];
      run.stageMs[e] += msSince(t0);
    }
    if (CUresult r = d->cuMemcpyHtoDAsync(slot.in[i], from, bytes, l.in))
      return cudaFail(r,
                      "copying input \"" + t.name + "\" (cuMemcpyHtoDAsync)");
    if (bytes < t.bytes())
      if (CUresult r = d->cuMemsetD8Async(slot.in[i] + bytes, 0,
                                          t.bytes() - bytes, l.in))
        return cudaFail(r,
                        "padding input \"" + t.name + "\" (cuMemsetD8Async)");
  }
  return record(l, run.ticket, Lane::H2dEnd, l.in);
}

/// Copies a part's output rows back on the lane's second copy stream once
/// the run has computed, into pinned staging where the caller's memory is
/// pageable (copied out at the wait).
cuts_status copyOut(cuts_session &x, PendingRun &run, size_t e, const Part &p,
                    const std::vector<void *> &out) {
  Lane &l = *x.lane;
  Lane::Slot &slot = l.slots[run.ticket % Lane::kSlots];
  const Manifest &man = x.plan->manifest();
  const Driver *d = l.d;
  if (cuts_status st = waitFor(l, l.out, run.ticket, Lane::ComputeEnd))
    return st;
  if (cuts_status st = record(l, run.ticket, Lane::D2hBegin, l.out))
    return st;
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor &t = man.tensors[man.outputs[i]];
    const uint64_t row = rowBytes(man, man.outputs[i]);
    const uint64_t bytes = bytesAtBatch(t, p.rows);
    if (bytes == 0 || (row == 0 && !p.unbatched))
      continue;
    void *to = static_cast<uint8_t *>(out[i]) + uint64_t(p.offset) * row;
    void *into = to;
    if (!pinned(d, to)) {
      if (cuts_status st =
              ensureStage(d, slot.stageOut, slot.stageOutBytes, i, bytes))
        return st;
      into = slot.stageOut[i];
      run.unstage[e].push_back({to, into, size_t(bytes)});
    }
    if (CUresult r = d->cuMemcpyDtoHAsync(into, slot.out[i], bytes, l.out))
      return cudaFail(r,
                      "copying output \"" + t.name + "\" (cuMemcpyDtoHAsync)");
  }
  return record(l, run.ticket, Lane::D2hEnd, l.out);
}

/// Enqueues one entry's part of a pipelined run: inputs in, the plan that
/// serves its rows on the session's stream, outputs out.
cuts_status enqueuePart(cuts_session &x, PendingRun &run, size_t e,
                        const Part &p, const std::vector<void *> &in,
                        const std::vector<void *> &out) {
  const ModelImpl &m = *x.model;
  if (cuts_status st = openLane(x))
    return st;
  Lane &l = *x.lane;
  Lane::Slot &slot = l.slots[run.ticket % Lane::kSlots];
  if (slot.in.empty() && slot.out.empty())
    if (cuts_status st = allocIo(m, 0, slot.in, slot.out))
      return st;
  x.plan = &m.plans[choosePlan(m.batches, p.rows)];
  x.batch = p.rows;
  x.profileBatch = x.plan->batch();
  if (cuts_status st = copyIn(x, run, e, p, in))
    return st;
  if (cuts_status st = waitFor(l, x.stream, run.ticket, Lane::H2dEnd))
    return st;
  if (cuts_status st = record(l, run.ticket, Lane::ComputeBegin, x.stream))
    return st;
  if (cuts_status st = runDevice(x, slot.in, slot.out))
    return st;
  if (cuts_status st = record(l, run.ticket, Lane::ComputeEnd, x.stream))
    return st;
  if (cuts_status st = copyOut(x, run, e, p, out))
    return st;
  run.prior[e] = l.lastTicket;
  l.lastTicket = run.ticket;
  return CUTS_OK;
}

/// Milliseconds from event mark `a` of run `ta` to mark `b` of run `tb`,
/// negative where b came first.
cuts_status elapsed(const Lane &l, uint64_t ta, Lane::Mark a, uint64_t tb,
                    Lane::Mark b, double &ms) {
  float v = 0;
  if (CUresult r = l.d->cuEventElapsedTime(&v, l.mark(ta, a), l.mark(tb, b)))
    return cudaFail(r, "cuEventElapsedTime");
  ms = v;
  return CUTS_OK;
}

/// Adds a finished pipelined run's phases to the lane's totals: the input
/// copy's time, and how much of it the lane's run before was computing.
cuts_status account(Lane &l, const PendingRun &run, size_t e) {
  const uint64_t t = run.ticket;
  double h2d = 0, compute = 0, d2h = 0, hidden = 0;
  if (cuts_status st = elapsed(l, t, Lane::H2dBegin, t, Lane::H2dEnd, h2d))
    return st;
  if (cuts_status st =
          elapsed(l, t, Lane::ComputeBegin, t, Lane::ComputeEnd, compute))
    return st;
  if (cuts_status st = elapsed(l, t, Lane::D2hBegin, t, Lane::D2hEnd, d2h))
    return st;
  // The run before's events are intact while fewer than kMarkSets runs
  // followed it (at most one more than this one is in flight).
  const uint64_t p = run.prior[e];
  if (p && p + Lane::kMarkSets > t + 1) {
    double a = 0, b = 0;
    if (cuts_status st =
            elapsed(l, t, Lane::H2dBegin, p, Lane::ComputeBegin, a))
      return st;
    if (cuts_status st = elapsed(l, t, Lane::H2dBegin, p, Lane::ComputeEnd, b))
      return st;
    hidden = std::max(0.0, std::min(h2d, b) - std::max(0.0, a));
  }
  cuts_movement &m = l.totals;
  m.runs += 1;
  m.h2d_ms += h2d, m.h2d_hidden_ms += hidden;
  m.compute_ms += compute, m.d2h_ms += d2h;
  m.gather_ms += run.stageMs[e];
  return CUTS_OK;
}

/// Waits for the oldest run in flight: its outputs in the caller's memory,
/// its phases accounted.
cuts_status retire(cuts_session &s) {
  PendingRun run = std::move(s.pending.front());
  s.pending.pop_front();
  if (run.master)
    return CUTS_OK; // it ran to the end at submission
  std::vector<cuts_session *> all = entries(s);
  for (size_t e = 0; e < all.size(); ++e) {
    if (!run.active[e])
      continue;
    cuts_session &x = *all[e];
    Lane &l = *x.lane;
    cuts_status st = enter(*x.model);
    if (st == CUTS_OK)
      if (CUresult r =
              l.d->cuEventSynchronize(l.mark(run.ticket, Lane::D2hEnd)))
        st = cudaFail(r, "running the model (cuEventSynchronize)");
    if (st == CUTS_OK) {
      auto t0 = Clock::now();
      for (const HostCopy &c : run.unstage[e])
        std::memcpy(c.to, c.from, c.bytes);
      run.stageMs[e] += msSince(t0);
      st = account(l, run, e);
    }
    if (st != CUTS_OK) {
      s.failedTicket = run.ticket;
      s.failedError =
          (all.size() > 1 ? "device list entry " + std::to_string(e) + ": "
                          : std::string()) +
          lastError;
      return fail(st, s.failedError);
    }
  }
  return CUTS_OK;
}

/// Every stream of the active entries drained (after a failed submission:
/// nothing may still touch the caller's memory).
void drain(cuts_session &s, const std::vector<bool> &active) {
  std::vector<cuts_session *> all = entries(s);
  for (size_t e = 0; e < all.size(); ++e) {
    if (!active[e])
      continue;
    cuts_session &x = *all[e];
    const Driver *d = x.model->d;
    d->cuCtxSetCurrent(x.model->ctx);
    d->cuStreamSynchronize(x.stream);
    if (x.lane)
      for (CUstream st : {x.lane->in, x.lane->out})
        d->cuStreamSynchronize(st);
  }
}

} // namespace

namespace {

/// Adds a master-GPU run's phases on entry e (all finished) to its totals.
cuts_status accountMaster(Lane &l, uint64_t t, size_t e) {
  auto span = [&](Lane::Mark a, Lane::Mark b, double &sum) {
    double ms = 0;
    if (cuts_status st = elapsed(l, t, a, t, b, ms))
      return st;
    sum += ms;
    return CUTS_OK;
  };
  cuts_movement &m = l.totals;
  m.runs += 1;
  if (cuts_status st = span(Lane::ComputeBegin, Lane::ComputeEnd, m.compute_ms))
    return st;
  if (e == 0) {
    if (cuts_status st = span(Lane::H2dBegin, Lane::H2dEnd, m.h2d_ms))
      return st;
    return span(Lane::D2hBegin, Lane::D2hEnd, m.d2h_ms);
  }
  if (cuts_status st = span(Lane::PeerBegin, Lane::PeerEnd, m.peer_ms))
    return st;
  return span(Lane::GatherBegin, Lane::GatherEnd, m.gather_ms);
}

/// A copy between two entries' contexts on `stream`.
cuts_status peerCopy(const cuts_session &to, CUdeviceptr dst,
                     const cuts_session &from, CUdeviceptr src, uint64_t bytes,
                     CUstream stream, const char *what) {
  if (CUresult r = to.model->d->cuMemcpyPeerAsync(
          dst, to.model->ctx, src, from.model->ctx, bytes, stream))
    return cudaFail(r, std::string(what) + " (cuMemcpyPeerAsync)");
  return CUTS_OK;
}

/// The parts of a host run at `batch` on each entry: the split's rows
/// (none for an entry whose share rounds to no row), or the whole run on
/// the one entry of a model without batch profiles.
std::vector<Part> partsOf(const cuts_session &s, int64_t batch,
                          std::vector<bool> &active) {
  std::vector<int64_t> rows = s.replicas.empty() ? std::vector<int64_t>{batch}
                                                 : splitBatch(batch, s.shares);
  std::vector<Part> parts(rows.size());
  active.assign(rows.size(), false);
  int64_t offset = 0;
  bool first = true;
  for (size_t e = 0; e < rows.size(); ++e) {
    active[e] = rows[e] > 0 || batch == 0;
    parts[e] = {rows[e], offset, active[e] && first};
    offset += rows[e];
    first = first && !active[e];
  }
  return parts;
}

/// The master-GPU baseline: the whole batch to the first device; each
/// other device's slice sent from there (a peer copy), run, and its rows
/// gathered back there; then the outputs copied out from there. Each phase
/// is bracketed by the lanes' events of run `t`.
cuts_status runMaster(cuts_session &s, uint64_t t, int64_t batch,
                      const std::vector<void *> &in,
                      const std::vector<void *> &out,
                      const std::vector<Part> &parts,
                      const std::vector<bool> &active) {
  const std::vector<cuts_session *> all = entries(s);
  const ModelImpl &m0 = *s.model;
  const Manifest &man = m0.manifest();
  const Driver *d = m0.d;
  for (size_t e = 0; e < all.size(); ++e)
    if (active[e])
      if (cuts_status st = enter(*all[e]->model);
          st || (st = openLane(*all[e])))
        return st;
  if (cuts_status st = enter(m0))
    return st;
  if (s.wholeIn.empty())
    if (cuts_status st = allocIo(m0, 0, s.wholeIn, s.wholeOut))
      return st;
  auto io = [&](bool input, size_t i) -> const Tensor & {
    return man.tensors[size_t((input ? man.inputs : man.outputs)[i])];
  };
  const Lane &l0 = *s.lane;
  if (cuts_status st = record(l0, t, Lane::H2dBegin, s.stream))
    return st;
  for (size_t i = 0; i < in.size(); ++i)
    if (uint64_t b = bytesAtBatch(io(true, i), batch))
      if (CUresult r = d->cuMemcpyHtoDAsync(s.wholeIn[i], in[i], b, s.stream))
        return cudaFail(r, "copying inputs to the first device");
  if (cuts_status st = record(l0, t, Lane::H2dEnd, s.stream))
    return st;
  if (CUresult r = d->cuStreamSynchronize(s.stream))
    return cudaFail(r, "cuStreamSynchronize");
  cuts_status st = onEntries(s, active, [&](size_t e, cuts_session &x) {
    const Lane &l = *x.lane;
    auto at = [&](CUdeviceptr base, bool input, size_t i) {
      return base + CUdeviceptr(parts[e].offset) *
                        rowBytes(man, (input ? man.inputs : man.outputs)[i]);
    };
    auto ptr = [](CUdeviceptr p) { return reinterpret_cast<void *>(p); };
    std::vector<void *> xin, xout;
    if (e == 0) { // its rows in place on the first device
      for (size_t i = 0; i < in.size(); ++i)
        xin.push_back(ptr(at(s.wholeIn[i], true, i)));
      for (size_t i = 0; i < out.size(); ++i)
        xout.push_back(ptr(at(s.wholeOut[i], false, i)));
    } else {
      if (cuts_status st = ensureUserBuffers(x, parts[e].rows))
        return st;
      if (cuts_status st = record(l, t, Lane::PeerBegin, x.stream))
        return st;
      for (size_t i = 0; i < in.size(); ++i)
        if (uint64_t b = bytesAtBatch(io(true, i), parts[e].rows))
          if (cuts_status st =
                  peerCopy(x, x.userIn[i], s, at(s.wholeIn[i], true, i), b,
                           x.stream, "sending a slice"))
            return st;
      if (cuts_status st = record(l, t, Lane::PeerEnd, x.stream))
        return st;
      for (CUdeviceptr p : x.userIn)
        xin.push_back(ptr(p));
      for (CUdeviceptr p : x.userOut)
        xout.push_back(ptr(p));
    }
    if (cuts_status st = record(l, t, Lane::ComputeBegin, x.stream))
      return st;
    if (cuts_status st = runAt(x, parts[e].rows, xin, xout))
      return st;
    if (cuts_status st = record(l, t, Lane::ComputeEnd, x.stream))
      return st;
    if (e > 0) {
      if (cuts_status st = record(l, t, Lane::GatherBegin, x.stream))
        return st;
      for (size_t i = 0; i < out.size(); ++i)
        if (io(false, i).batchAxis >= 0)
          if (uint64_t b = bytesAtBatch(io(false, i), parts[e].rows))
            if (cuts_status st =
                    peerCopy(s, at(s.wholeOut[i], false, i), x, x.userOut[i], b,
                             x.stream, "gathering a slice"))
              return st;
      if (cuts_status st = record(l, t, Lane::GatherEnd, x.stream))
        return st;
    }
    if (CUresult r = x.model->d->cuStreamSynchronize(x.stream))
      return cudaFail(r, "running the model (cuStreamSynchronize)");
    return CUTS_OK;
  });
  s.batch = batch;
  if (st != CUTS_OK)
    return st;
  if (cuts_status st = enter(m0))
    return st;
  if (cuts_status st = record(l0, t, Lane::D2hBegin, s.stream))
    return st;
  for (size_t i = 0; i < out.size(); ++i)
    if (uint64_t b = bytesAtBatch(io(false, i), batch))
      if (CUresult r = d->cuMemcpyDtoHAsync(out[i], s.wholeOut[i], b, s.stream))
        return cudaFail(r, "copying outputs from the first device");
  if (cuts_status st = record(l0, t, Lane::D2hEnd, s.stream))
    return st;
  if (CUresult r = d->cuStreamSynchronize(s.stream))
    return cudaFail(r, "cuStreamSynchronize");
  for (size_t e = 0; e < all.size(); ++e)
    if (active[e])
      if (cuts_status st = accountMaster(*all[e]->lane, t, e))
        return st;
  return CUTS_OK;
}

/// The weights each active entry's part of the next run adopts, all of
/// one swap's generation (the others keep none: a set held here would stay
/// alive, and be adopted late).
void chooseWeights(cuts_session &s, const std::vector<bool> &active) {
  std::shared_lock<std::shared_mutex> lock(*s.model->publishing);
  std::vector<cuts_session *> all = entries(s);
  for (size_t e = 0; e < all.size(); ++e)
    all[e]->target =
        active[e] ? std::atomic_load(&all[e]->model->weights) : nullptr;
}

/// Submits a host run (see cuts_session_submit_host), first waiting for
/// the oldest run where two are in flight.
cuts_status submit(cuts_session &s, int64_t batch,
                   const std::vector<void *> &in,
                   const std::vector<void *> &out, uint64_t &ticket) {
  if (tensorParallel(*s.model)) {
    if (cuts_status st = runTensorParallelHost(s, in, out))
      return st;
    ticket = s.nextTicket++; // done already: its wait returns at once
    return CUTS_OK;
  }
  while (s.pending.size() >= size_t(Lane::kSlots))
    if (cuts_status st = retire(s))
      return st;
  PendingRun run;
  run.ticket = s.nextTicket;
  std::vector<Part> parts = partsOf(s, batch, run.active);
  chooseWeights(s, run.active);
  const size_t n = parts.size();
  run.prior.assign(n, 0);
  run.unstage.assign(n, {});
  run.stageMs.assign(n, 0.0);
  cuts_status st;
  if (s.masterGpu) {
    run.master = true;
    st = runMaster(s, run.ticket, batch, in, out, parts, run.active);
  } else {
    st = onEntries(s, run.active, [&](size_t e, cuts_session &x) {
      return enqueuePart(x, run, e, parts[e], in, out);
    });
  }
  if (st != CUTS_OK) {
    const std::string why = lastError;
    drain(s, run.active);
    std::vector<cuts_session *> all = entries(s);
    for (cuts_session *x : all)
      x->target.reset();
    for (size_t e = 0; e < n; ++e)
      if (run.active[e] && all[e]->lane &&
          all[e]->lane->lastTicket == run.ticket)
        all[e]->lane->lastTicket = run.prior[e];
    return fail(st, why);
  }
  s.batch = batch;
  ticket = run.ticket;
  ++s.nextTicket;
  s.pending.push_back(std::move(run));
  return CUTS_OK;
}

/// Waits for run `ticket` and every earlier one.
cuts_status waitTicket(cuts_session &s, uint64_t ticket) {
  if (ticket == 0 || ticket >= s.nextTicket)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "ticket " + std::to_string(ticket) +
                    " was never given by cuts_session_submit_host");
  while (!s.pending.empty() && s.pending.front().ticket <= ticket)
    if (cuts_status st = retire(s))
      return st;
  if (ticket == s.failedTicket)
    return fail(CUTS_ERROR_CUDA, s.failedError);
  return CUTS_OK;
}

/// Binds host inputs and outputs of a host run.
cuts_status bindHost(cuts_session *session, const cuts_binding *inputs,
                     int numInputs, const cuts_binding *outputs, int numOutputs,
                     int64_t &batch, std::vector<void *> &in,
                     std::vector<void *> &out) {
  if (cuts_status st = checkSession(session))
    return st;
  return bindAll(*session->model, inputs, numInputs, outputs, numOutputs, batch,
                 in, out);
}

/// Page-locked host allocations, with the device whose primary context
/// they hold (released when freed).
struct HostAllocations {
  std::mutex mu;
  std::map<void *, CUdevice> device;
};

HostAllocations &hostAllocations() {
  static HostAllocations *a = new HostAllocations; // outlives static dtors
  return *a;
}

} // namespace

//===- The C API ----------------------------------------------------------===//

cuts_status cuts_session_submit_host(cuts_session *session,
                                     const cuts_binding *inputs, int num_inputs,
                                     const cuts_binding *outputs,
                                     int num_outputs, uint64_t *ticket) {
  return guarded([&] {
    if (!ticket)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "ticket (the result) is NULL");
    *ticket = 0;
    std::vector<void *> in, out;
    int64_t batch = 0;
    if (cuts_status st = bindHost(session, inputs, num_inputs, outputs,
                                  num_outputs, batch, in, out))
      return st;
    return submit(*session, batch, in, out, *ticket);
  });
}

cuts_status cuts_session_wait(cuts_session *session, uint64_t ticket) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    return waitTicket(*session, ticket);
  });
}

cuts_status cuts_session_run_host(cuts_session *session,
                                  const cuts_binding *inputs, int num_inputs,
                                  const cuts_binding *outputs,
                                  int num_outputs) {
  return guarded([&] {
    std::vector<void *> in, out;
    int64_t batch = 0;
    if (cuts_status st = bindHost(session, inputs, num_inputs, outputs,
                                  num_outputs, batch, in, out))
      return st;
    uint64_t ticket = 0;
    if (cuts_status st = submit(*session, batch, in, out, ticket))
      return st;
    return waitTicket(*session, ticket);
  });
}

cuts_status cuts_session_set_preload(cuts_session *session, int on) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    for (cuts_session *x : entries(*session))
      x->preload = on != 0;
    return CUTS_OK;
  });
}

cuts_status cuts_session_movement(const cuts_session *session, int entry,
                                  cuts_movement *movement) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    if (!movement)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "movement is NULL");
    std::vector<cuts_session *> all =
        entries(const_cast<cuts_session &>(*session));
    if (entry < 0 || size_t(entry) >= all.size())
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "entry " + std::to_string(entry) + " is out of 0.." +
                      std::to_string(all.size() - 1));
    const cuts_session &x = *all[size_t(entry)];
    *movement = x.lane ? x.lane->totals : cuts_movement{};
    const auto w = std::atomic_load(&x.model->weights);
    movement->broadcast_ms = w->ms;
    movement->codec_ms = w->codecMs;
    movement->broadcast_bytes = w->sentBytes;
    if (x.streamed)
      movement->streamed_bytes = x.streamed->readBytes,
      movement->stream_read_ms = x.streamed->readMs;
    return CUTS_OK;
  });
}

cuts_status cuts_session_reset_movement(cuts_session *session) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    for (cuts_session *x : entries(*session)) {
      if (x->lane)
        x->lane->totals = cuts_movement{};
      if (x->streamed)
        x->streamed->readBytes = 0, x->streamed->readMs = 0;
    }
    return CUTS_OK;
  });
}

cuts_status cuts_device_count(int *count) {
  return guarded([&] {
    if (!count)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "count (the result) is NULL");
    *count = 0;
    std::string err;
    const Driver *d = driver(err);
    if (!d)
      return fail(CUTS_ERROR_NO_DEVICE, err);
    if (CUresult r = d->cuDeviceGetCount(count))
      return r == CUDA_ERROR_NO_DEVICE ? CUTS_OK
                                       : cudaFail(r, "cuDeviceGetCount");
    return CUTS_OK;
  });
}

cuts_status cuts_host_alloc(size_t bytes, void **ptr) {
  return guarded([&] {
    if (!ptr)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "ptr (the result) is NULL");
    *ptr = nullptr;
    if (bytes == 0)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "bytes is 0");
    std::string err;
    const Driver *d = driver(err);
    if (!d)
      return fail(CUTS_ERROR_NO_DEVICE, err);
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    if (CUresult r = d->cuDeviceGet(&dev, 0))
      return cudaFail(r, "cuDeviceGet");
    if (CUresult r = d->cuDevicePrimaryCtxRetain(&ctx, dev))
      return cudaFail(r, "cuDevicePrimaryCtxRetain");
    CUresult r = d->cuCtxSetCurrent(ctx);
    if (!r)
      r = d->cuMemHostAlloc(ptr, bytes, CU_MEMHOSTALLOC_PORTABLE);
    if (r) {
      *ptr = nullptr;
      d->cuDevicePrimaryCtxRelease(dev);
      return cudaFail(r, "allocating " + std::to_string(bytes) +
                             " bytes of page-locked host memory "
                             "(cuMemHostAlloc)");
    }
    HostAllocations &a = hostAllocations();
    std::lock_guard<std::mutex> lock(a.mu);
    a.device[*ptr] = dev;
    return CUTS_OK;
  });
}

void cuts_host_free(void *ptr) {
  if (!ptr)
    return;
  HostAllocations &a = hostAllocations();
  CUdevice dev = 0;
  {
    std::lock_guard<std::mutex> lock(a.mu);
    auto it = a.device.find(ptr);
    if (it == a.device.end())
      return; // not ours: nothing to free
    dev = it->second;
    a.device.erase(it);
  }
  std::string err;
  const Driver *d = driver(err);
  CUcontext ctx = nullptr;
  d->cuDevicePrimaryCtxRetain(&ctx, dev);
  d->cuCtxSetCurrent(ctx);
  d->cuMemFreeHost(ptr);
  d->cuDevicePrimaryCtxRelease(dev);
  d->cuDevicePrimaryCtxRelease(dev);
}

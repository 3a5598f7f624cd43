//===- TensorParallel.cpp - a model's ranks on a device list --------------===//
//
// A tensor-parallel artifact (cuts compile --tensor-parallel N) holds one
// plan per rank. Loaded on a device list of N entries, entry e runs rank
// e's plan with its own weights only. A run enqueues every rank's steps
// from one thread, rank by rank up to the next all-reduce, then the
// all-reduce on the copy engines (Collectives.h: reduce-scatter into each
// rank's scratch, the sum kernel, all-gather); the first entry's stream
// waits for every rank at the end, so that it alone orders the run.
//
//===----------------------------------------------------------------------===//
#include "Session.h"

#include "cuts/rt/Collectives.h"
#include "cuts/rt/Pipeline.h"

namespace cuts::rt {

using namespace cuda;

namespace {

/// The all-reduce sum kernel for a tensor's dtype (cuts_reduce_chunks_*),
/// or null.
CUfunction reduceFor(const ModelImpl &m, const std::string &dtype) {
  if (dtype == "float32")
    return m.reduce[0];
  if (dtype == "float16")
    return m.reduce[1];
  return dtype == "bfloat16" ? m.reduce[2] : nullptr;
}

std::vector<cuts_session *> ranksOf(cuts_session &s) {
  std::vector<cuts_session *> all = {&s};
  for (const auto &r : s.replicas)
    all.push_back(r.get());
  return all;
}

/// The copy engines over the ranks, each rank's scratch for the largest
/// all-reduce, and the events that join a rank's streams: made on the
/// first run.
cuts_status ensureTensorParallel(cuts_session &s) {
  if (s.comm)
    return CUTS_OK;
  std::vector<cuts_session *> ranks = ranksOf(s);
  std::vector<CUcontext> ctx;
  for (cuts_session *x : ranks)
    ctx.push_back(x->model->ctx);
  auto comm = std::make_unique<CopyEngineComm>(s.model->d, ctx);
  if (cuts_status st = comm->init())
    return st;
  for (cuts_session *x : ranks) {
    const ModelImpl &m = *x->model;
    uint64_t scratch = 0;
    for (const Step &step : m.manifest().steps)
      if (!step.collective.empty()) {
        const Tensor &t = m.manifest().tensors[step.from];
        const uint64_t size = dtypeBytes(t.dtype);
        scratch = std::max(
            scratch, allReducePlan(int(ranks.size()), t.bytes() / size, size)
                         .scratchBytes);
      }
    if (cuts_status st = x->reduceScratch.alloc(m.d, m.ctx, scratch,
                                                "the all-reduce's scratch"))
      return st;
    if (!x->joined)
      if (CUresult r = m.d->cuEventCreate(&x->joined, CU_EVENT_DISABLE_TIMING))
        return cudaFail(r, "cuEventCreate");
  }
  s.comm = std::move(comm);
  // NCCL where the plan asks for it and can have it; else copy engines.
  std::vector<int> devices;
  bool wanted = false;
  for (cuts_session *x : ranks) {
    devices.push_back(int(x->model->device));
    for (const Step &step : x->model->manifest().steps)
      wanted = wanted || step.engine == "nccl";
  }
  std::string why;
  auto nccl = std::make_unique<NcclComms>();
  if (wanted && nccl->init(devices, why))
    s.nccl = std::move(nccl);
  return enter(*s.model);
}

/// `from`'s stream waits for the work enqueued on `to`'s so far.
cuts_status join(cuts_session &from, CUstream fromStream, cuts_session &to,
                 CUstream toStream) {
  const Driver *d = from.model->d;
  d->cuCtxSetCurrent(from.model->ctx);
  if (CUresult r = d->cuEventRecord(from.joined, fromStream))
    return cudaFail(r, "cuEventRecord");
  d->cuCtxSetCurrent(to.model->ctx);
  if (CUresult r = d->cuStreamWaitEvent(toStream, from.joined, 0))
    return cudaFail(r, "cuStreamWaitEvent");
  return CUTS_OK;
}

/// Each rank r's step at[r], an all-reduce, on the copy engines.
cuts_status allReduceStep(std::vector<cuts_session *> &ranks,
                          const std::vector<size_t> &at) {
  std::vector<CUdeviceptr> data, scratch;
  std::vector<CUstream> streams;
  std::vector<CUfunction> reduce;
  const Manifest &first = ranks[0]->plan->manifest();
  const Tensor &t = first.tensors[first.steps[at[0]].from];
  for (size_t r = 0; r < ranks.size(); ++r) {
    cuts_session *x = ranks[r];
    const Manifest &man = x->plan->manifest();
    const Step &step = man.steps[at[r]];
    const Tensor &mine = man.tensors[step.from];
    if (step.collective != "all-reduce" || mine.bytes() != t.bytes() ||
        mine.dtype != t.dtype)
      return fail(CUTS_ERROR_BAD_ARTIFACT,
                  "rank " + std::to_string(r) + "'s step " +
                      std::to_string(at[r]) + " is not rank 0's step " +
                      std::to_string(at[0]) +
                      ": the ranks' plans reach "
                      "different collectives");
    // The side stream's work (cuSync consumers) is in the sum too.
    if (x->plan->hasSide)
      if (cuts_status st = join(*x, x->side, *x, x->stream))
        return st;
    data.push_back(x->ptr[step.from]);
    scratch.push_back(x->reduceScratch.ptr);
    streams.push_back(x->stream);
    reduce.push_back(reduceFor(*x->model, t.dtype));
    if (!reduce.back())
      return fail(CUTS_ERROR_BAD_ARTIFACT, "step " + std::to_string(at[r]) +
                                               ": no all-reduce for \"" +
                                               t.name + "\" (" + t.dtype + ")");
  }
  const uint64_t size = dtypeBytes(t.dtype);
  const Step &step = first.steps[at[0]];
  if (step.engine == "nccl" && ranks[0]->nccl) {
    std::vector<void *> ptrs, ncclStreams;
    for (size_t r = 0; r < ranks.size(); ++r) {
      ptrs.push_back(reinterpret_cast<void *>(uintptr_t(data[r])));
      ncclStreams.push_back(streams[r]);
    }
    const char *type = t.dtype == "float16"    ? "f16"
                       : t.dtype == "bfloat16" ? "bf16"
                                               : "f32";
    std::string why;
    if (!ranks[0]->nccl->allReduce(ptrs, t.bytes() / size, type, ncclStreams,
                                   why))
      return fail(CUTS_ERROR_CUDA,
                  "step " + std::to_string(at[0]) + ": " + why);
    return CUTS_OK;
  }
  return ranks[0]->comm->allReduce(
      allReducePlan(int(ranks.size()), t.bytes() / size, size), data, scratch,
      streams, reduce);
}

/// Every rank's steps from `next[r]` up to its next all-reduce.
cuts_status runSegment(std::vector<cuts_session *> &ranks,
                       std::vector<size_t> &next) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    cuts_session &x = *ranks[r];
    if (cuts_status st = enter(*x.model))
      return st;
    const std::vector<Step> &steps = x.plan->manifest().steps;
    // The first step follows copies the host issued: not a programmatic
    // dependent of the kernel before them.
    for (size_t first = next[r];
         next[r] < steps.size() && steps[next[r]].collective.empty(); ++next[r])
      if (cuts_status st = runStep(x, next[r], next[r] != first))
        return st;
  }
  return CUTS_OK;
}

} // namespace

cuts_status takeRank(Artifact &a, int rank, size_t entries,
                     const std::string &label, std::vector<uint8_t> &weights) {
  const int64_t ranks = a.manifest.ranks;
  if (rank < 0 || int64_t(entries) != ranks)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                label + " is a tensor-parallel model of " +
                    std::to_string(ranks) +
                    " ranks: it runs on a device "
                    "list of " +
                    std::to_string(ranks) +
                    " entries, one a rank (e.g. cuts run --gpus 0,1; a "
                    "device may repeat)");
  if (rank > 0) {
    if (size_t(rank) > a.rankPlans.size() ||
        a.rankPlans[size_t(rank - 1)].rank != rank)
      return fail(CUTS_ERROR_BAD_ARTIFACT,
                  label + " has no plan for rank " + std::to_string(rank));
    a.manifest = std::move(a.rankPlans[size_t(rank - 1)]);
  }
  a.rankPlans.clear();
  a.profiles.clear();
  // Only this rank's weights go to its device, packed.
  packWeights(a.manifest, a.section("weights", nullptr), weights);
  return CUTS_OK;
}

cuts_status loadReduceKernels(ModelImpl &m, const std::string &label) {
  const std::string section = "collective." + m.arch;
  if (!m.artifact.section(section, nullptr))
    return fail(CUTS_ERROR_BAD_ARTIFACT,
                label +
                    " is tensor-parallel but has no all-reduce kernels "
                    "for " +
                    m.arch + " (section " + section + "): compile it again");
  return loadSectionKernels(m, section, "the all-reduce kernels",
                            {{&m.reduce[0], "cuts_reduce_chunks_f32"},
                             {&m.reduce[1], "cuts_reduce_chunks_f16"},
                             {&m.reduce[2], "cuts_reduce_chunks_bf16"}});
}

namespace {

/// Every rank's run enqueued (runTensorParallel's body).
cuts_status enqueueRanks(cuts_session &s, const std::vector<CUdeviceptr> &in,
                         const std::vector<CUdeviceptr> &out) {
  std::vector<cuts_session *> ranks = ranksOf(s);
  const Manifest &man = s.model->manifest();
  // Rank 0 reads the caller's inputs and writes its outputs; the others
  // get copies of the inputs and write their own buffers.
  for (size_t r = 0; r < ranks.size(); ++r) {
    cuts_session &x = *ranks[r];
    if (cuts_status st = enter(*x.model))
      return st;
    if (cuts_status st = adoptWeights(x))
      return st;
    x.plan = &x.model->largest();
    x.batch = x.profileBatch = 0;
    if (r == 0) {
      resolve(x, in, out);
      continue;
    }
    if (cuts_status st = ensureBuffers(x))
      return st;
    if (cuts_status st = join(s, s.stream, x, x.stream))
      return st;
    for (size_t i = 0; i < in.size(); ++i) {
      const uint64_t bytes = man.tensors[man.inputs[i]].bytes();
      if (bytes == 0)
        continue;
      CUresult e =
          x.model->ctx == s.model->ctx
              ? x.model->d->cuMemcpyDtoDAsync(x.bufIn[i], in[i], bytes,
                                              x.stream)
              : x.model->d->cuMemcpyPeerAsync(x.bufIn[i], x.model->ctx, in[i],
                                              s.model->ctx, bytes, x.stream);
      if (e)
        return cudaFail(e, "copying input \"" +
                               man.tensors[man.inputs[i]].name + "\" to rank " +
                               std::to_string(r));
    }
    resolve(x, x.bufIn, x.bufOut);
  }
  std::vector<size_t> next(ranks.size(), 0);
  for (;;) {
    if (cuts_status st = runSegment(ranks, next))
      return st;
    bool allDone = true, anyDone = false;
    for (size_t r = 0; r < ranks.size(); ++r) {
      const bool done = next[r] == ranks[r]->plan->manifest().steps.size();
      allDone = allDone && done, anyDone = anyDone || done;
    }
    if (allDone)
      break;
    if (anyDone)
      return fail(CUTS_ERROR_BAD_ARTIFACT,
                  "the ranks' plans reach different collectives");
    if (cuts_status st = allReduceStep(ranks, next))
      return st;
    // A side-stream step reading the sum waits for the all-reduce step.
    for (size_t r = 0; r < ranks.size(); ++r) {
      cuts_session &x = *ranks[r];
      if (cuts_status st = enter(*x.model))
        return st;
      if (x.plan->recorded[next[r]])
        if (CUresult e =
                x.model->d->cuEventRecord(x.stepEvent[0][next[r]], x.stream))
          return cudaFail(e, "cuEventRecord");
      ++next[r];
    }
  }
  // The first entry's stream ends the run once every rank has.
  for (cuts_session *x : ranks) {
    if (x->plan->hasSide)
      if (cuts_status st = join(*x, x->side, s, s.stream))
        return st;
    if (x != &s)
      if (cuts_status st = join(*x, x->stream, s, s.stream))
        return st;
  }
  return enter(*s.model);
}

} // namespace

cuts_status runTensorParallel(cuts_session &s,
                              const std::vector<CUdeviceptr> &in,
                              const std::vector<CUdeviceptr> &out) {
  if (cuts_status st = ensureTensorParallel(s))
    return st;
  const cuts_status st = enqueueRanks(s, in, out);
  if (st != CUTS_OK) { // nothing may run on once the caller is told
    const std::string why = lastError;
    for (cuts_session *x : ranksOf(s)) {
      x->model->d->cuCtxSetCurrent(x->model->ctx);
      for (CUstream t : {x->stream, x->side})
        if (t)
          x->model->d->cuStreamSynchronize(t);
    }
    enter(*s.model);
    return fail(st, why);
  }
  return CUTS_OK;
}

cuts_status runTensorParallelHost(cuts_session &s,
                                  const std::vector<void *> &in,
                                  const std::vector<void *> &out) {
  const ModelImpl &m = *s.model;
  const Manifest &man = m.manifest();
  if (cuts_status st = enter(m))
    return st;
  if (cuts_status st = ensureBuffers(s))
    return st;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor &t = man.tensors[man.inputs[i]];
    if (t.bytes() > 0)
      if (CUresult r =
              m.d->cuMemcpyHtoDAsync(s.bufIn[i], in[i], t.bytes(), s.stream))
        return cudaFail(r, "copying input \"" + t.name +
                               "\" to the device (cuMemcpyHtoDAsync)");
  }
  if (cuts_status st = runTensorParallel(s, s.bufIn, s.bufOut))
    return st;
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor &t = man.tensors[man.outputs[i]];
    if (t.bytes() > 0)
      if (CUresult r =
              m.d->cuMemcpyDtoHAsync(out[i], s.bufOut[i], t.bytes(), s.stream))
        return cudaFail(r, "copying output \"" + t.name +
                               "\" to the host (cuMemcpyDtoHAsync)");
  }
  if (CUresult r = m.d->cuStreamSynchronize(s.stream))
    return cudaFail(r, "running the ranks (cuStreamSynchronize)");
  return CUTS_OK;
}

} // namespace cuts::rt

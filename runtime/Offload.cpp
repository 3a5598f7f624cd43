//===- Offload.cpp - weights streamed from storage under a budget ---------===//
#include "cuts/rt/Offload.h"

#include <algorithm>
#include <map>
#include <set>

namespace cuts::rt {

namespace {

constexpr uint64_t kSlotAlign = 256; // as the weights section aligns them

uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/// Lays out chunk `c`'s tensors in its slot and the aligned file spans
/// that cover them in its staging buffer (overlapping spans merged).
void layOut(const Manifest &m, uint64_t sectionOffset, StreamChunk &c) {
  std::vector<int> order = c.tensors; // by file offset, for merged reads
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return m.tensors[size_t(a)].weightOffset <
           m.tensors[size_t(b)].weightOffset;
  });
  c.tensors = order;
  c.slotOffset.clear(), c.stageOffset.clear(), c.spans.clear();
  c.slotBytes = c.stageBytes = 0;
  for (int t : order) {
    const Tensor &w = m.tensors[size_t(t)];
    c.slotOffset.push_back(c.slotBytes);
    c.slotBytes = alignUp(c.slotBytes + w.bytes(), kSlotAlign);
    const uint64_t begin = sectionOffset + w.weightOffset,
                   end = begin + w.bytes();
    const uint64_t from = begin / kReadAlign * kReadAlign,
                   to = alignUp(end, kReadAlign);
    if (!c.spans.empty() &&
        from <= c.spans.back().fileOffset + c.spans.back().bytes) {
      FileSpan &s = c.spans.back(); // extend the last read
      const uint64_t last = std::max(s.fileOffset + s.bytes, to);
      c.stageBytes += last - (s.fileOffset + s.bytes);
      s.bytes = last - s.fileOffset;
    } else {
      c.spans.push_back({from, to - from, c.stageBytes});
      c.stageBytes += to - from;
    }
    const FileSpan &s = c.spans.back();
    c.stageOffset.push_back(s.stageOffset + (begin - s.fileOffset));
  }
}

} // namespace

std::vector<int> weightsOfStep(const Manifest &m, size_t i) {
  const Step &s = m.steps[i];
  std::vector<int> read;
  if (s.kernel >= 0)
    read = m.kernels[size_t(s.kernel)].args;
  else
    read = {s.from};
  if (s.hostKernel >= 0) // the alternative's weights too
    for (int t : m.kernels[size_t(s.hostKernel)].args)
      read.push_back(t);
  std::vector<int> out;
  for (int t : read) {
    const int root = rootTensor(m, t);
    if (m.tensors[size_t(root)].kind == TensorKind::Weight &&
        std::find(out.begin(), out.end(), root) == out.end())
      out.push_back(root);
  }
  return out;
}

std::vector<StreamChunk> streamChunks(const Manifest &m, uint64_t slotBytes,
                                      uint64_t sectionOffset,
                                      std::string &error,
                                      const std::vector<int> &resident) {
  std::vector<StreamChunk> chunks(1);
  uint64_t used = 0;
  auto streamed = [&](size_t i) {
    std::vector<int> w = weightsOfStep(m, i);
    w.erase(std::remove_if(w.begin(), w.end(),
                           [&](int t) {
                             return std::count(resident.begin(), resident.end(),
                                               t) > 0;
                           }),
            w.end());
    return w;
  };
  for (size_t i = 0; i < m.steps.size(); ++i) {
    std::vector<int> fresh;
    uint64_t more = 0, alone = 0;
    for (int t : streamed(i)) {
      const uint64_t b = alignUp(m.tensors[size_t(t)].bytes(), kSlotAlign);
      alone += b;
      StreamChunk &c = chunks.back();
      if (std::find(c.tensors.begin(), c.tensors.end(), t) == c.tensors.end())
        fresh.push_back(t), more += b;
    }
    if (alone > slotBytes) {
      error = "step " + std::to_string(i) + " reads " + std::to_string(alone) +
              " bytes of weights, more than a slot of " +
              std::to_string(slotBytes) + " (half the weight budget)";
      return {};
    }
    if (used + more > slotBytes) { // a new chunk from this step on
      chunks.back().endStep = i;
      chunks.push_back({});
      chunks.back().firstStep = i;
      fresh = streamed(i), used = alone;
    } else {
      used += more;
    }
    for (int t : fresh)
      chunks.back().tensors.push_back(t);
  }
  chunks.back().endStep = m.steps.size();
  for (StreamChunk &c : chunks)
    layOut(m, sectionOffset, c);
  return chunks;
}

std::vector<int> sharedWeights(const Manifest &m,
                               const std::vector<StreamChunk> &chunks) {
  std::map<uint64_t, std::set<size_t>> readers; // offset -> chunks
  for (size_t c = 0; c < chunks.size(); ++c)
    for (int t : chunks[c].tensors)
      readers[m.tensors[size_t(t)].weightOffset].insert(c);
  std::vector<int> out;
  for (int t = 0; t < int(m.tensors.size()); ++t) {
    const Tensor &w = m.tensors[size_t(t)];
    auto it = readers.find(w.weightOffset);
    if (w.kind == TensorKind::Weight && it != readers.end() &&
        it->second.size() > 1)
      out.push_back(t);
  }
  return out;
}

} // namespace cuts::rt

//===- Running with streamed weights
//---------------------------------------===//

#include "Session.h"
#include "cuts/rt/Pipeline.h"

#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cuts::rt {

using namespace cuda;

WeightStream::~WeightStream() {
  if (!d)
    return;
  d->cuCtxSetCurrent(ctx);
  if (copy)
    d->cuStreamSynchronize(copy);
  for (CUevent e : {copied[0], copied[1], computed[0], computed[1], side})
    if (e)
      d->cuEventDestroy(e);
  for (void *p : stage)
    if (p)
      d->cuMemFreeHost(p);
  if (copy)
    d->cuStreamDestroy(copy);
}

void ModelImpl::closeWeightsFile() {
  if (weightsFd >= 0)
    close(weightsFd);
  weightsFd = -1;
}

int openUncached(const std::string &path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECT);
  return fd >= 0 ? fd : open(path.c_str(), O_RDONLY); // some refuse O_DIRECT
}

namespace {

uint64_t residentBytes(const std::map<uint64_t, uint64_t> &keep) {
  uint64_t n = 0;
  for (const auto &[offset, bytes] : keep)
    n += alignUp(bytes, kSlotAlign);
  return n;
}

/// Every plan's chunks under the slots `keep`'s resident weights leave.
bool chunkPlans(ModelImpl &m, const std::map<uint64_t, uint64_t> &keep,
                uint64_t at, std::string &err) {
  const uint64_t kept = residentBytes(keep);
  m.slot = kept < m.weightBudget ? (m.weightBudget - kept) / 2 : 0;
  for (PlanImpl &p : m.plans) {
    std::vector<int> ids;
    for (size_t t = 0; t < p.manifest().tensors.size(); ++t) {
      const Tensor &w = p.manifest().tensors[t];
      if (w.kind == TensorKind::Weight && keep.count(w.weightOffset))
        ids.push_back(int(t));
    }
    p.chunks = streamChunks(p.manifest(), m.slot, at, err, ids);
    if (p.chunks.empty())
      return false;
  }
  return true;
}

/// `keep`'s weights read once (buffered: they are few) and put on the
/// device, laid out as m.residentAt says.
cuts_status loadResident(ModelImpl &m, const std::map<uint64_t, uint64_t> &keep,
                         uint64_t at) {
  if (keep.empty())
    return CUTS_OK;
  std::vector<uint8_t> host;
  std::FILE *f = std::fopen(m.weightsPath.c_str(), "rb");
  const bool ok = f && packSpans(keep, fileSection(f, at), host, m.residentAt);
  if (f)
    std::fclose(f);
  if (!ok)
    return fail(CUTS_ERROR_IO, "reading the weights several chunks share "
                               "from " +
                                   m.weightsPath);
  if (cuts_status st = m.resident.alloc(m.d, m.ctx, host.size(),
                                        "the weights several chunks share"))
    return st;
  if (CUresult r = m.d->cuMemcpyHtoD(m.resident.ptr, host.data(), host.size()))
    return cudaFail(r, "uploading the weights several chunks share");
  return CUTS_OK;
}

} // namespace

cuts_status planStreaming(ModelImpl &m, const std::string &label) {
  // Where the file has them: the artifact's bytes may leave them out.
  auto it = m.artifact.sections.find("weights");
  const Blob inFile = m.artifact.weightsInFile.size > 0
                          ? m.artifact.weightsInFile
                      : it == m.artifact.sections.end() ? Blob{}
                                                        : it->second;
  const uint64_t at = inFile.offset;
  m.weightsEnd = at + inFile.size;
  m.weightsFd = openUncached(label);
  struct stat st {};
  if (m.weightsFd < 0 || fstat(m.weightsFd, &st) != 0)
    return fail(CUTS_ERROR_IO,
                "cannot open " + label + " to stream its weights");
  if (uint64_t(st.st_size) < m.weightsEnd)
    return fail(CUTS_ERROR_IO, label + " is " + std::to_string(st.st_size) +
                                   " bytes, shorter than its weights' end at " +
                                   std::to_string(m.weightsEnd));
  std::map<uint64_t, uint64_t> keep; // resident: weight offset -> bytes
  std::string err;
  if (!chunkPlans(m, keep, at, err))
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                label + ": weight_budget " + std::to_string(m.weightBudget) +
                    " bytes: " + err);
  // Weights two chunks read stay resident while they take at most a
  // quarter of the budget and every step still fits the smaller slots.
  for (int round = 0; round < 3; ++round) {
    std::map<uint64_t, uint64_t> more = keep;
    for (const PlanImpl &p : m.plans)
      for (int t : sharedWeights(p.manifest(), p.chunks))
        more[p.manifest().tensors[size_t(t)].weightOffset] =
            p.manifest().tensors[size_t(t)].bytes();
    if (more.size() == keep.size() || residentBytes(more) > m.weightBudget / 4)
      break;
    if (!chunkPlans(m, more, at, err)) {
      chunkPlans(m, keep, at, err); // as it was
      break;
    }
    keep = std::move(more);
  }
  for (const PlanImpl &p : m.plans)
    for (const StreamChunk &c : p.chunks)
      m.stageBytes = std::max(m.stageBytes, c.stageBytes);
  return loadResident(m, keep, at);
}

namespace {

/// The session's slots, staging buffers, file and events, made on its
/// first streamed run.
cuts_status openStream(cuts_session &s) {
  if (s.streamed)
    return CUTS_OK;
  const ModelImpl &m = *s.model;
  auto w = std::make_unique<WeightStream>();
  w->d = m.d, w->ctx = m.ctx;
  for (int j = 0; j < 2; ++j) {
    if (cuts_status st =
            w->slot[j].alloc(m.d, m.ctx, m.slotBytes(), "a weight slot"))
      return st;
    if (CUresult r = m.d->cuMemHostAlloc(&w->stage[j],
                                         std::max<uint64_t>(m.stageBytes, 1),
                                         CU_MEMHOSTALLOC_PORTABLE)) {
      w->stage[j] = nullptr;
      return cudaFail(r, "allocating pinned staging for streamed weights "
                         "(cuMemHostAlloc)");
    }
  }
  for (CUevent *e : {&w->copied[0], &w->copied[1], &w->computed[0],
                     &w->computed[1], &w->side})
    if (CUresult r = m.d->cuEventCreate(e, CU_EVENT_DISABLE_TIMING))
      return cudaFail(r, "cuEventCreate");
  if (CUresult r = m.d->cuStreamCreate(&w->copy, CU_STREAM_NON_BLOCKING))
    return cudaFail(r, "creating the weight stream (cuStreamCreate)");
  s.streamed = std::move(w);
  return CUTS_OK;
}

/// Chunk `c`'s spans read into staging `j`, then copied into slot `j` once
/// the chunk that used it last has run.
cuts_status loadChunk(cuts_session &s, const StreamChunk &c, int j) {
  WeightStream &w = *s.streamed;
  const Manifest &man = s.plan->manifest();
  // The staging buffer's last copy out must be done before it is refilled.
  if (CUresult r = w.d->cuEventSynchronize(w.copied[j]))
    return cudaFail(r, "streaming weights (cuEventSynchronize)");
  auto *stage = static_cast<uint8_t *>(w.stage[j]);
  const auto t0 = std::chrono::steady_clock::now();
  for (const FileSpan &sp : c.spans)
    for (uint64_t done = 0; done < sp.bytes;) {
      const ssize_t n = pread(s.model->weightsFd, stage + sp.stageOffset + done,
                              sp.bytes - done, off_t(sp.fileOffset + done));
      // Only the alignment past the weights' end may be missing.
      if (n == 0 && sp.fileOffset + done >= s.model->weightsEnd)
        break;
      if (n <= 0)
        return fail(CUTS_ERROR_IO, "reading " + std::to_string(sp.bytes) +
                                       " bytes of weights at " +
                                       std::to_string(sp.fileOffset) + " of " +
                                       s.model->weightsPath);
      done += uint64_t(n);
      w.readBytes += uint64_t(n);
    }
  w.readMs += msSince(t0);
  if (CUresult r = w.d->cuStreamWaitEvent(w.copy, w.computed[j], 0))
    return cudaFail(r, "cuStreamWaitEvent");
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const Tensor &t = man.tensors[size_t(c.tensors[i])];
    if (CUresult r =
            w.d->cuMemcpyHtoDAsync(w.slot[j].ptr + c.slotOffset[i],
                                   stage + c.stageOffset[i], t.bytes(), w.copy))
      return cudaFail(r, "copying weight \"" + t.name +
                             "\" in (cuMemcpyHtoDAsync)");
  }
  if (CUresult r = w.d->cuEventRecord(w.copied[j], w.copy))
    return cudaFail(r, "cuEventRecord");
  // Both streams: cuSync's consumers on the side read weights too.
  for (CUstream st : {s.stream, s.side})
    if (st)
      if (CUresult r = w.d->cuStreamWaitEvent(st, w.copied[j], 0))
        return cudaFail(r, "cuStreamWaitEvent");
  return CUTS_OK;
}

/// Every tensor whose root is a resident weight addresses it.
void pointAtResident(cuts_session &s) {
  const ModelImpl &m = *s.model;
  if (m.residentAt.empty())
    return;
  const PlanImpl &p = *s.plan;
  for (size_t t = 0; t < p.root.size(); ++t) {
    const Tensor &w = p.manifest().tensors[size_t(p.root[t])];
    if (w.kind != TensorKind::Weight)
      continue;
    auto it = m.residentAt.find(w.weightOffset);
    if (it != m.residentAt.end())
      s.ptr[t] = m.resident.ptr + it->second;
  }
}

/// Every tensor whose root chunk `c` holds now addresses slot `j`.
void pointAtSlot(cuts_session &s, const StreamChunk &c, int j) {
  const PlanImpl &p = *s.plan;
  for (size_t t = 0; t < p.root.size(); ++t)
    for (size_t i = 0; i < c.tensors.size(); ++i)
      if (p.root[t] == c.tensors[i])
        s.ptr[t] = s.streamed->slot[j].ptr + c.slotOffset[i];
}

} // namespace

/// Chunk `c`'s steps on slot `j`, its first launched after the host's
/// copies (not as a programmatic dependent).
cuts_status runChunk(cuts_session &s, const StreamChunk &c, int j) {
  pointAtSlot(s, c, j);
  for (size_t i = c.firstStep; i < c.endStep; ++i)
    if (cuts_status st = runStep(s, i, i != c.firstStep))
      return st;
  return CUTS_OK;
}

cuts_status enqueueStreamed(cuts_session &s, const std::vector<CUdeviceptr> &in,
                            const std::vector<CUdeviceptr> &out) {
  if (cuts_status st = openStream(s))
    return st;
  WeightStream &w = *s.streamed;
  const PlanImpl &p = *s.plan;
  resolve(s, in, out);
  pointAtResident(s);
  for (size_t k = 0; k < p.chunks.size(); ++k) {
    const int j = int(k % 2);
    if (cuts_status st = loadChunk(s, p.chunks[k], j))
      return st;
    const cuts_status ran = runChunk(s, p.chunks[k], j);
    // The slot is free again once every step enqueued on it has run (the
    // side stream's too), even where the chunk failed halfway.
    if (p.hasSide) {
      w.d->cuEventRecord(w.side, s.side);
      w.d->cuStreamWaitEvent(s.stream, w.side, 0);
    }
    if (CUresult r = w.d->cuEventRecord(w.computed[j], s.stream))
      return ran ? ran : cudaFail(r, "cuEventRecord");
    if (ran)
      return ran;
  }
  return CUTS_OK;
}

} // namespace cuts::rt

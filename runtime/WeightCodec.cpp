//===- WeightCodec.cpp - weights sent encoded between devices -------------===//
//
// The first entry encodes its weights into a staging buffer (the codec's
// kernels over the fp32 ranges, copies of the rest), the buffer goes to
// every other entry by peer copies or one NCCL broadcast, and every entry,
// the first too, decodes it into its weight set: all then hold the same
// values, so the slices of a batch see one model.
//
//===----------------------------------------------------------------------===//
#include "cuts/rt/WeightCodec.h"

#include "Session.h"

#include <algorithm>
#include <chrono>

namespace cuts::rt {

uint64_t CodecRanges::packedBytes() const {
  uint64_t n = 0;
  for (const ByteRange &r : packed)
    n += r.bytes;
  return n;
}

uint64_t CodecRanges::rawBytes() const {
  uint64_t n = 0;
  for (const ByteRange &r : raw)
    n += r.bytes;
  return n;
}

namespace {

// Sorted, with ranges that overlap (or, where `touching`, meet) made one.
std::vector<ByteRange> merged(std::vector<ByteRange> v, bool touching) {
  std::sort(v.begin(), v.end(), [](const ByteRange &x, const ByteRange &y) {
    return x.offset < y.offset;
  });
  std::vector<ByteRange> out;
  for (const ByteRange &r : v) {
    if (!out.empty() &&
        (r.offset < out.back().offset + out.back().bytes ||
         (touching && r.offset == out.back().offset + out.back().bytes))) {
      ByteRange &b = out.back();
      b.bytes = std::max(b.offset + b.bytes, r.offset + r.bytes) - b.offset;
      continue;
    }
    out.push_back(r);
  }
  return out;
}

// 16 bytes: the compress kernel's uint4 stores of words.
uint64_t alignUp(uint64_t x) { return (x + 15) / 16 * 16; }

} // namespace

CodecRanges codecRanges(const Artifact &a) {
  std::vector<ByteRange> fp32, other;
  std::vector<const Manifest *> plans = a.plans();
  for (const Manifest &r : a.rankPlans) // a tensor-parallel model's ranks
    plans.push_back(&r);
  for (const Manifest *m : plans)
    for (const Tensor &t : m->tensors)
      if (t.kind == TensorKind::Weight && t.bytes() > 0)
        (t.dtype == "float32" ? fp32 : other)
            .push_back({t.weightOffset, t.bytes()});
  other = merged(std::move(other), true);
  CodecRanges r;
  r.raw = other;
  // fp32 weights that meet stay apart: a group of three never spans two,
  // so a weight's encoding does not depend on its neighbour's.
  for (const ByteRange &f : merged(std::move(fp32), false)) {
    const bool shared =
        std::any_of(other.begin(), other.end(), [&](const ByteRange &o) {
          return o.offset < f.offset + f.bytes && f.offset < o.offset + o.bytes;
        });
    (shared ? r.raw : r.packed).push_back(f);
  }
  r.raw = merged(std::move(r.raw), true);
  return r;
}

uint64_t encodedBytes(uint64_t values, WeightCodec codec) {
  switch (codec) {
  case WeightCodec::ThreeToOne:
    return 4 * ((values + 2) / 3);
  case WeightCodec::Bf16:
    return 2 * values;
  case WeightCodec::None:
    break;
  }
  return 4 * values;
}

StagingLayout stagingLayout(const CodecRanges &r, WeightCodec codec) {
  StagingLayout l;
  uint64_t at = sizeof(CodecTableEntry) * r.packed.size();
  for (const ByteRange &x : r.raw) {
    l.raw.push_back(at = alignUp(at));
    at += x.bytes;
  }
  for (const ByteRange &x : r.packed) {
    l.packed.push_back(at = alignUp(at));
    at += encodedBytes(x.bytes / 4, codec);
  }
  l.side = alignUp(at);
  return l;
}

std::vector<CodecTableEntry> codecTable(const CodecRanges &r,
                                        const StagingLayout &l,
                                        WeightCodec codec, uint64_t &items) {
  std::vector<CodecTableEntry> t;
  items = 0;
  for (size_t i = 0; i < r.packed.size(); ++i) {
    const uint64_t values = r.packed[i].bytes / 4;
    items = (items + kCodecItemsPerThread - 1) / kCodecItemsPerThread *
            kCodecItemsPerThread;
    t.push_back({r.packed[i].offset, l.packed[i], values, items});
    items += codec == WeightCodec::ThreeToOne ? (values + 2) / 3 : values;
  }
  return t;
}

namespace {

constexpr unsigned kThreads = 256;

// The grid-stride kernels need no more blocks than their items take.
cuts_status launch(const ModelImpl &m, CUfunction f, uint64_t items,
                   std::vector<void *> args, const char *what) {
  const uint64_t perBlock = uint64_t(kCodecItemsPerThread) * kThreads;
  const unsigned blocks = unsigned(
      std::clamp<uint64_t>((items + perBlock - 1) / perBlock, 1, 65535));
  if (CUresult r = m.d->cuLaunchKernel(f, blocks, 1, 1, kThreads, 1, 1, 0,
                                       nullptr, args.data(), nullptr))
    return cudaFail(r, std::string(what) + " (cuLaunchKernel)");
  return CUTS_OK;
}

cuts_status synchronize(const ModelImpl &m, const char *what) {
  if (CUresult r = m.d->cuStreamSynchronize(nullptr))
    return cudaFail(r, std::string(what) + " (cuStreamSynchronize)");
  return CUTS_OK;
}

/// One launch of a codec over every packed range (the table in staging).
struct CodecLaunch {
  std::vector<CodecTableEntry> table;
  uint64_t items = 0;
  unsigned count() const { return unsigned(table.size()); }
};

/// The first entry's weights into `staging` (the layout `l`); the 3:1
/// side array grows until every escaped group has its slot.
cuts_status encode(const ModelImpl &m, CUdeviceptr weights,
                   const StagingLayout &l, const CodecLaunch &c,
                   WeightCodec codec, DeviceBytes &staging,
                   uint64_t &sideGroups) {
  const CodecRanges &cr = m.codecRanges;
  const Driver *d = m.d;
  if (codec == WeightCodec::ThreeToOne && c.items >= (1ull << 31))
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "the 3:1 codec indexes 2^31 groups of three weights; this "
                "model has " +
                    std::to_string(c.items));
  uint64_t capacity = codec == WeightCodec::ThreeToOne
                          ? std::max<uint64_t>(1024, c.items / 64)
                          : 0;
  DeviceBytes counter;
  if (cuts_status st = counter.alloc(m.d, m.ctx, 4, "the escape counter"))
    return st;
  for (;;) {
    if (cuts_status st = staging.alloc(m.d, m.ctx, l.bytes(capacity),
                                       "the weights' staging"))
      return st;
    if (CUresult r = d->cuMemcpyHtoD(staging.ptr + l.table, c.table.data(),
                                     c.table.size() * sizeof(CodecTableEntry)))
      return cudaFail(r, "staging the codec's table (cuMemcpyHtoD)");
    if (CUresult r = d->cuMemsetD8Async(counter.ptr, 0, 4, nullptr))
      return cudaFail(r, "cuMemsetD8Async");
    for (size_t i = 0; i < cr.raw.size(); ++i)
      if (CUresult r = d->cuMemcpyDtoDAsync(staging.ptr + l.raw[i],
                                            weights + cr.raw[i].offset,
                                            cr.raw[i].bytes, nullptr))
        return cudaFail(r, "staging the weights (cuMemcpyDtoDAsync)");
    CUdeviceptr table = staging.ptr + l.table;
    unsigned count = c.count(), cap = unsigned(capacity);
    unsigned long long items = c.items, side = l.side;
    if (count > 0) {
      cuts_status st =
          codec == WeightCodec::ThreeToOne
              ? launch(m, m.codecs.compress, items,
                       {&weights, &staging.ptr, &table, &count, &items,
                        &counter.ptr, &cap, &side},
                       "compressing the weights")
              : launch(m, m.codecs.truncate, items,
                       {&weights, &staging.ptr, &table, &count, &items},
                       "truncating the weights to bf16");
      if (st)
        return st;
    }
    unsigned escaped = 0;
    if (cuts_status st = synchronize(m, "encoding the weights"))
      return st;
    if (CUresult r = d->cuMemcpyDtoH(&escaped, counter.ptr, 4))
      return cudaFail(r, "reading the escape counter (cuMemcpyDtoH)");
    if (escaped <= capacity) {
      sideGroups = escaped;
      return CUTS_OK;
    }
    capacity = escaped;
  }
}

/// `staging` (the layout `l`, its table as sent) decoded into entry m's
/// `weights`.
cuts_status decode(const ModelImpl &m, CUdeviceptr staging, CUdeviceptr weights,
                   const StagingLayout &l, const CodecLaunch &c,
                   WeightCodec codec) {
  const CodecRanges &cr = m.codecRanges;
  for (size_t i = 0; i < cr.raw.size(); ++i)
    if (CUresult r = m.d->cuMemcpyDtoDAsync(weights + cr.raw[i].offset,
                                            staging + l.raw[i], cr.raw[i].bytes,
                                            nullptr))
      return cudaFail(r, "unstaging the weights (cuMemcpyDtoDAsync)");
  CUdeviceptr table = staging + l.table;
  unsigned count = c.count();
  unsigned long long items = c.items, side = l.side;
  if (count > 0) {
    cuts_status st =
        codec == WeightCodec::ThreeToOne
            ? launch(m, m.codecs.decompress, items,
                     {&staging, &weights, &table, &count, &items, &side},
                     "decompressing the weights")
            : launch(m, m.codecs.expand, items,
                     {&staging, &weights, &table, &count, &items},
                     "expanding the bf16 weights");
    if (st)
      return st;
  }
  return synchronize(m, "decoding the weights");
}

} // namespace

cuts_status loadCodecs(ModelImpl &m, const std::string &label) {
  if (!m.artifact.section("codec." + m.arch, nullptr))
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                label + " has no weight codecs for " + m.arch +
                    ": compile it with --weight-codecs to send weights "
                    "encoded (weight_codec)");
  if (cuts_status st =
          loadSectionKernels(m, "codec." + m.arch, "the weight codecs",
                             {{&m.codecs.compress, "cuts_compress3to1"},
                              {&m.codecs.decompress, "cuts_decompress3to1"},
                              {&m.codecs.truncate, "cuts_truncate_bf16"},
                              {&m.codecs.expand, "cuts_expand_bf16"}}))
    return st;
  m.codecRanges = codecRanges(m.artifact);
  return CUTS_OK;
}

cuts_status distributeEncoded(const std::vector<std::shared_ptr<ModelImpl>> &r,
                              const std::vector<DeviceWeights *> &w,
                              const std::vector<int> &devices, int source,
                              WeightCodec codec) {
  const StagingLayout l = stagingLayout(r[0]->codecRanges, codec);
  CodecLaunch c;
  c.table = codecTable(r[0]->codecRanges, l, codec, c.items);
  std::vector<DeviceBytes> staging(r.size());
  uint64_t sideGroups = 0;
  auto t0 = std::chrono::steady_clock::now();
  if (cuts_status st = enter(*r[0]))
    return st;
  if (cuts_status st =
          encode(*r[0], w[0]->ptr, l, c, codec, staging[0], sideGroups))
    return st;
  const double encodeMs = msSince(t0);
  const uint64_t bytes = l.bytes(sideGroups);
  for (size_t e = 1; e < r.size(); ++e)
    if (cuts_status st =
            staging[e].alloc(r[e]->d, r[e]->ctx, bytes, "the weights' staging"))
      return st;
  std::vector<CUdeviceptr> ptrs;
  for (const DeviceBytes &s : staging)
    ptrs.push_back(s.ptr);
  std::vector<double> sendMs;
  if (cuts_status st = sendFromFirst(r, ptrs, devices, source, bytes, sendMs,
                                     "the encoded weights"))
    return st;
  for (size_t e = 0; e < r.size(); ++e) {
    const auto t = std::chrono::steady_clock::now();
    if (cuts_status st = enter(*r[e]))
      return st;
    if (cuts_status st = decode(*r[e], staging[e].ptr, w[e]->ptr, l, c, codec))
      return st;
    const double decodeMs = msSince(t);
    // Entry e waited for the encoding, its share of the sending and its
    // decoding; the first's own upload is already in its ms.
    w[e]->codecMs = encodeMs + decodeMs;
    w[e]->ms = (e == 0 ? w[e]->ms : 0) + encodeMs + sendMs[e] + decodeMs;
    w[e]->sentBytes = e == 0 ? 0 : bytes;
  }
  return CUTS_OK;
}

} // namespace cuts::rt

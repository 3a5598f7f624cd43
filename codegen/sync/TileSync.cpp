//===- TileSync.cpp - producer tiles of a consumer tile, and policies -----===//
#include "codegen/sync/TileSync.h"

#include <algorithm>

namespace cuts::codegen::sync {

std::array<int64_t, 4> TileGrid::coords(int64_t block) const {
  std::array<int64_t, 4> c{};
  for (int d = 3; d >= 0; --d) {
    c[d] = block % tiles[d];
    block /= tiles[d];
  }
  return c;
}

int64_t TileGrid::linear(const std::array<int64_t, 4> &c) const {
  int64_t b = 0;
  for (int d = 0; d < 4; ++d)
    b = b * tiles[d] + c[d];
  return b;
}

int64_t TileOrder::position(const TileGrid &g,
                            const std::array<int64_t, 4> &c) const {
  int64_t s = 0;
  for (int i = 3; i >= 0; --i)
    s = s * g.tiles[fastest[i]] + c[fastest[i]];
  return s;
}

std::array<int64_t, 4> TileOrder::coords(const TileGrid &g,
                                         int64_t slot) const {
  std::array<int64_t, 4> c{};
  for (int i = 0; i < 4; ++i) {
    c[fastest[i]] = slot % g.tiles[fastest[i]];
    slot /= g.tiles[fastest[i]];
  }
  return c;
}

bool TileOrder::natural(const TileGrid &g) const {
  return text(g) == TileOrder{}.text(g);
}

std::string TileOrder::text(const TileGrid &g) const {
  std::string s;
  for (int d : fastest)
    if (g.tiles[d] > 1)
      s += std::string(s.empty() ? "" : ",") + "NKHW"[d];
  return s;
}

TileGrid tileGrid(const Kernel &k) {
  const TileParams &p = k.params;
  const std::array<int64_t, 4> dims = gridExtents(k.desc);
  TileGrid g;
  g.extent = {p.Nb, p.Kb, p.Hb, p.Wb};
  for (int d = 0; d < 4; ++d)
    g.tiles[d] = (dims[d] + g.extent[d] - 1) / g.extent[d];
  return g;
}

std::optional<Fetch> tiledFetch(const Kernel &k, int fetch) {
  if (!k.mma)
    return fetch >= 0 && fetch < int(k.fetches.size())
               ? std::optional<Fetch>(k.fetches[size_t(fetch)])
               : std::nullopt;
  if (fetch != 0 || k.desc.im2col || k.mmaViews[0] || k.desc.batch > 1)
    return std::nullopt;
  const int64_t M = k.desc.N, K = k.desc.C;
  Fetch f;
  f.tensor = 0;
  f.dims = {fetchDim(k.params.Nb, dfg::DimN, 1, 0, false, M, K, 0),
            fetchDim(k.params.Cin, dfg::NoDim, 1, 0, true, K, 1, 0)};
  return f;
}

bool Box::empty() const {
  for (int d = 0; d < 4; ++d)
    if (lo[d] > hi[d])
      return true;
  return false;
}

Box Dependence::box(const std::array<int64_t, 4> &c) const {
  Box b;
  for (int d = 0; d < 4; ++d) {
    const DimRead &r = read[d];
    b.lo[d] = 0, b.hi[d] = producer.tiles[d] - 1;
    if (r.all)
      continue;
    int64_t start = r.add + (r.consumerDim >= 0 ? c[r.consumerDim] * r.mul : 0);
    int64_t s = std::max<int64_t>(start, 0);
    int64_t e = std::min(start + r.span, r.globalExtent);
    if (s >= e) { // all padding: nothing of the producer read
      b.lo[d] = 1, b.hi[d] = 0;
      continue;
    }
    b.lo[d] = s / producer.extent[d];
    b.hi[d] = std::min((e - 1) / producer.extent[d], producer.tiles[d] - 1);
  }
  return b;
}

namespace {

// The global buffer the exit stores into, if it stores into one only.
const dfg::Buffer *storedBuffer(const Kernel &k) {
  const dfg::Buffer *out = nullptr;
  for (int id : k.exit.nodesWith(dfg::Op::Store)) {
    const dfg::Buffer &b = k.exit.buffer(k.exit.node(id).buffer);
    if (out && out->name != b.name)
      return nullptr;
    out = &b;
  }
  return out;
}

// The tensor axis a fetch dimension reads: the one of its global extent and
// stride in the dense tensor, or -1.
int axisOf(const FetchDim &f, const std::vector<int64_t> &shape) {
  const std::vector<int64_t> strides = denseStrides(shape);
  for (size_t a = 0; a < shape.size(); ++a)
    if (shape[a] == f.globalExtent && strides[a] == f.globalStride &&
        shape[a] > 1)
      return int(a);
  return -1;
}

} // namespace

std::optional<Dependence> dependence(const Kernel &producer,
                                     const Kernel &consumer, int fetch,
                                     std::string &why) {
  auto fail = [&](const std::string &w) {
    why = w;
    return std::nullopt;
  };
  if (producer.vec || consumer.vec || producer.producer || consumer.producer ||
      producer.chain || consumer.chain || producer.pooled || consumer.pooled)
    return fail("a channel-vector, shared-memory-fused, chained or pooled "
                "kernel (its tile maps are not followed yet)");
  // A warp-specialised loop's copying warps return before the post.
  if (producer.mma && producer.mma->warpSpecialized)
    return fail("a warp-specialised producer");
  // A persistent block's tiles are not its blockIdx: its posts and waits
  // would need the tile loop's coordinates.
  if (producer.persistentBlocks || consumer.persistentBlocks)
    return fail("a persistent kernel (its blocks loop over tiles)");
  // A split-K tile is done by whichever of its blocks arrives last.
  if (producer.splitK > 1 || consumer.splitK > 1)
    return fail("a split-K kernel (its tiles' blocks sum each other's parts)");
  const dfg::Buffer *out = storedBuffer(producer);
  if (!out)
    return fail("the producer stores into more than one tensor");
  const std::optional<Fetch> tiled = tiledFetch(consumer, fetch);
  if (!tiled)
    return fail("the consumer reads the tensor in no tiles this analysis "
                "follows (an implicit GEMM's windows, a view, a batch)");
  const Fetch &f = *tiled;
  if (f.tensor < 0 || f.mask)
    return fail("the fetch reads no tensor's values");
  const TensorArg &t = consumer.tensors[f.tensor];
  if (t.shape != out->extents)
    return fail("the consumer reads '" + t.name +
                "' in another shape than the producer stores it");

  Dependence d;
  d.producer = tileGrid(producer);
  d.consumer = tileGrid(consumer);
  d.tensor = t.name;
  // Producer: output axis a holds producer dimension map[a].outDim, a
  // block's extent of it.
  std::array<int, 4> axisOfDim{-1, -1, -1, -1};
  for (size_t a = 0; a < out->map.size(); ++a) {
    const dfg::DimMap &m = out->map[a];
    if (out->extents[a] == 1)
      continue;
    if (m.outDim == dfg::NoDim || m.scale != 1 || m.digit() || m.loops() ||
        axisOfDim[m.outDim] >= 0)
      return fail("the producer's store is not one output dimension an axis");
    axisOfDim[m.outDim] = int(a);
  }
  // Consumer: the fetch dimension of each of the tensor's axes.
  std::vector<const FetchDim *> fetchOfAxis(t.shape.size(), nullptr);
  for (const FetchDim &fd : f.dims) {
    int a = axisOf(fd, t.shape);
    if (a >= 0)
      fetchOfAxis[a] = &fd;
  }
  for (int pd = 0; pd < 4; ++pd) {
    DimRead &r = d.read[pd];
    int a = axisOfDim[pd];
    if (a < 0) {
      if (d.producer.tiles[pd] > 1)
        return fail("producer blocks along a dimension no axis follows");
      continue;
    }
    const FetchDim *fd = fetchOfAxis[a];
    if (!fd)
      return fail("the fetch does not read axis " + std::to_string(a));
    r.globalExtent = t.shape[a];
    if (fd->fromLoop || fd->groupK > 0)
      continue; // the reduction loop reads the whole axis (a group: at most)
    r.all = false;
    r.consumerDim = fd->outDim;
    r.mul = fd->outDim == dfg::NoDim
                ? 0
                : d.consumer.extent[fd->outDim] * fd->scale;
    r.add = fd->offset;
    r.span = fd->extent;
  }
  return d;
}

int64_t Policy::semaphores(const TileGrid &g) const {
  int64_t n = 1;
  for (int d = 0; d < 4; ++d)
    n *= merged[d] ? 1 : g.tiles[d];
  return n;
}

int64_t Policy::postsPerSemaphore(const TileGrid &g) const {
  int64_t n = 1;
  for (int d = 0; d < 4; ++d)
    n *= merged[d] ? g.tiles[d] : 1;
  return n;
}

int64_t Policy::semaphore(const TileGrid &g,
                          const std::array<int64_t, 4> &c) const {
  int64_t s = 0;
  for (int d = 0; d < 4; ++d)
    if (!merged[d])
      s = s * g.tiles[d] + c[d];
  return s;
}

std::vector<Policy> policies(const Dependence &d) {
  std::vector<Policy> out{{"TileSync", {false, false, false, false}}};
  // RowSync: the dimensions every consumer tile reads whole (a GEMM
  // chain's columns: the consumer's A tile is a whole row of the producer).
  Policy row{"RowSync", {false, false, false, false}};
  bool any = false;
  for (int pd = 0; pd < 4; ++pd) {
    if (d.producer.tiles[pd] < 2)
      continue;
    bool whole = true;
    for (int64_t b = 0; b < d.consumer.blocks() && whole; ++b) {
      Box x = d.box(d.consumer.coords(b));
      whole =
          x.empty() || (x.lo[pd] == 0 && x.hi[pd] == d.producer.tiles[pd] - 1);
    }
    row.merged[pd] = whole;
    any = any || whole;
  }
  if (any)
    out.push_back(row);
  return out;
}

std::vector<Wait> waitsOf(const Dependence &d, const Policy &p,
                          const std::array<int64_t, 4> &c) {
  std::vector<Wait> out;
  Box b = d.box(c);
  if (b.empty())
    return out;
  for (int dim = 0; dim < 4; ++dim)
    if (p.merged[dim])
      b.lo[dim] = b.hi[dim] = 0;
  const int64_t posts = p.postsPerSemaphore(d.producer);
  std::array<int64_t, 4> x{};
  for (x[0] = b.lo[0]; x[0] <= b.hi[0]; ++x[0])
    for (x[1] = b.lo[1]; x[1] <= b.hi[1]; ++x[1])
      for (x[2] = b.lo[2]; x[2] <= b.hi[2]; ++x[2])
        for (x[3] = b.lo[3]; x[3] <= b.hi[3]; ++x[3])
          out.push_back({p.semaphore(d.producer, x), posts});
  return out;
}

SyncEstimate estimate(const Dependence &d, const Policy &p,
                      const KernelTiming &producer,
                      const KernelTiming &consumer, int64_t sms,
                      double overheadUs, const TileOrder &order) {
  const int64_t bp = d.producer.blocks(), bc = d.consumer.blocks();
  const int64_t slotsP = sms * std::max<int64_t>(producer.perSM, 1);
  const int64_t slotsC = sms * std::max<int64_t>(consumer.perSM, 1);
  const int64_t wavesP = (bp + slotsP - 1) / slotsP;
  const int64_t wavesC = (bc + slotsC - 1) / slotsC;
  const double waveC = consumer.us / double(wavesC);
  // Producer tiles done when its last wave starts, and that wave's empty
  // slots in consumer blocks.
  const int64_t done = (wavesP - 1) * slotsP;
  const int64_t idle = (wavesP * slotsP - bp) * slotsC / slotsP;
  // The consumer's first tiles whose semaphores are then complete: the
  // last producer tile of each one's box (merged dimensions whole), the
  // latest in any order (a slot grows with each coordinate).
  int64_t ready = 0;
  for (; ready < bc && ready < idle; ++ready) {
    Box b = d.box(d.consumer.coords(ready));
    if (b.empty())
      continue;
    for (int dim = 0; dim < 4; ++dim)
      if (p.merged[dim])
        b.hi[dim] = d.producer.tiles[dim] - 1;
    if (order.position(d.producer, b.hi) >= done)
      break;
  }
  SyncEstimate e;
  e.streamUs = producer.us + consumer.us;
  e.earlyTiles = ready;
  e.syncUs = producer.us + double((bc - ready + slotsC - 1) / slotsC) * waveC +
             overheadUs;
  return e;
}

TileOrder bestOrder(const Dependence &d, const Policy &p,
                    const KernelTiming &producer, const KernelTiming &consumer,
                    int64_t sms) {
  TileOrder best;
  double fastest = estimate(d, p, producer, consumer, sms, 0, best).syncUs;
  TileOrder o;
  std::sort(o.fastest.begin(), o.fastest.end());
  do {
    const double us = estimate(d, p, producer, consumer, sms, 0, o).syncUs;
    if (us < fastest && !o.natural(d.producer))
      best = o, fastest = us;
  } while (std::next_permutation(o.fastest.begin(), o.fastest.end()));
  return best;
}

} // namespace cuts::codegen::sync

//===- TileSync.cpp - producer tiles of a consumer tile, and policies -----===//
#include "codegen/sync/TileSync.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace cuts::codegen::sync {

std::array<int64_t, 4> TileGrid::coords(int64_t block) const {
  return TileOrder{}.coords(*this, block);
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

namespace {

/// Tensor-core operand `operand` (0: A, 1: B) of k as a fetch of its
/// tensor: the block's product (grid H) along its one batch axis of more
/// than one product, its rows and columns, each an axis of the tensor at
/// its stride, from the view's offset (MmaView: a slice of the tensor).
std::optional<Fetch> mmaFetch(const Kernel &k, int operand) {
  const OpDesc &d = k.desc;
  const TileParams &p = k.params;
  const int64_t M = d.N, K = d.C, N = d.K;
  // A is M x K; B is N x K (transB) or K x N. The K loop reads its axis.
  struct Axis {
    int64_t extent, tile;
    int outDim;
  };
  const Axis loop{K, p.Cin, dfg::NoDim};
  Axis rows = loop, cols = loop;
  if (operand == 0)
    rows = {M, p.Nb, dfg::DimN};
  else if (d.transB)
    rows = {N, p.Kb, dfg::DimK};
  else
    cols = {N, p.Kb, dfg::DimK};
  const std::vector<int64_t> &shape = k.tensors[size_t(operand)].shape;
  const std::vector<int64_t> strides = denseStrides(shape);
  MmaView v;
  if (const auto &view = k.mmaViews[size_t(operand)]) {
    v = *view;
  } else {
    v.rowStride = cols.extent;
    if (d.batch > 1)
      v.batchExtents = {d.batch}, v.batchStrides = {rows.extent * cols.extent};
  }
  Fetch f;
  f.tensor = operand;
  // The tensor axis of `stride`, and the view's offset along it.
  auto add = [&](int64_t stride, int64_t tile, int outDim, bool fromLoop) {
    for (size_t a = 0; a < shape.size(); ++a)
      if (strides[a] == stride && shape[a] > 1) {
        const int64_t at = v.offset / stride % shape[a];
        f.dims.push_back(
            fetchDim(tile, outDim, 1, at, fromLoop, shape[a], stride, 0));
        return true;
      }
    return false;
  };
  int batched = 0;
  for (size_t j = 0; j < v.batchExtents.size(); ++j)
    if (v.batchExtents[j] > 1 &&
        (++batched > 1 || !add(v.batchStrides[j], 1, dfg::DimH, false)))
      return std::nullopt; // the product's digits along several axes
  if ((rows.extent > 1 &&
       !add(v.rowStride, rows.tile, rows.outDim, rows.outDim == dfg::NoDim)) ||
      (cols.extent > 1 &&
       !add(1, cols.tile, cols.outDim, cols.outDim == dfg::NoDim)))
    return std::nullopt;
  return f;
}

} // namespace

std::optional<Fetch> tiledFetch(const Kernel &k, int fetch) {
  if (!k.mma)
    return fetch >= 0 && fetch < int(k.fetches.size())
               ? std::optional<Fetch>(k.fetches[size_t(fetch)])
               : std::nullopt;
  if ((fetch != 0 && fetch != 1) || k.desc.im2col)
    return std::nullopt;
  return mmaFetch(k, fetch);
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

// Fetch f of a tensor of `shape` as a fetch of the same memory in `target`
// shape, each of whose axes is a run of shape's axes (a reshape that splits
// axes: GPT-2's Q|K|V columns read as heads). Along a run, the positions
// its outer axis reads, each with every position of the inner ones: what
// is read, or more. Nullopt where the runs do not line up.
std::optional<Fetch> reshaped(const Fetch &f, const std::vector<int64_t> &shape,
                              const std::vector<int64_t> &target) {
  std::vector<const FetchDim *> of(shape.size(), nullptr);
  for (const FetchDim &fd : f.dims) {
    const int a = axisOf(fd, shape);
    if (a < 0)
      return std::nullopt;
    of[size_t(a)] = &fd;
  }
  const std::vector<int64_t> inner = denseStrides(shape),
                             innerT = denseStrides(target);
  Fetch out = f;
  out.dims.clear();
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 1)
      continue;
    // The run: axes whose step lies in [innerT, innerT x target), the
    // outer first (steps fall along the axes).
    int outer = -1;
    int64_t n = 1;
    bool aligned = false;
    for (size_t a = 0; a < shape.size(); ++a)
      if (shape[a] > 1 && inner[a] >= innerT[i] &&
          inner[a] < innerT[i] * target[i]) {
        outer = outer < 0 ? int(a) : outer;
        n *= shape[a];
        aligned = aligned || inner[a] == innerT[i];
      }
    if (outer < 0 || n != target[i] || !aligned || !of[size_t(outer)])
      return std::nullopt;
    FetchDim m = *of[size_t(outer)];
    const int64_t runs = inner[size_t(outer)] / innerT[i];
    m.extent *= runs, m.scale *= runs, m.offset *= runs;
    m.globalExtent = target[i], m.globalStride = innerT[i];
    out.dims.push_back(m);
  }
  return out;
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
  if (tiled->tensor < 0 || tiled->mask)
    return fail("the fetch reads no tensor's values");
  const TensorArg &t = consumer.tensors[tiled->tensor];
  const std::optional<Fetch> merged =
      t.shape == out->extents ? tiled : reshaped(*tiled, t.shape, out->extents);
  if (!merged)
    return fail("the consumer reads '" + t.name +
                "' in another shape than the producer stores it, not a "
                "split of its axes whose inner ones it reads whole");
  const Fetch &f = *merged;

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
  std::vector<const FetchDim *> fetchOfAxis(out->extents.size(), nullptr);
  for (const FetchDim &fd : f.dims) {
    int a = axisOf(fd, out->extents);
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
    r.globalExtent = out->extents[a];
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
    n *= merged[d] ? 1 : stride[d] ? stride[d] : g.tiles[d];
  return n;
}

int64_t Policy::postsPerSemaphore(const TileGrid &g) const {
  int64_t n = 1;
  for (int d = 0; d < 4; ++d)
    n *= merged[d] ? g.tiles[d] : stride[d] ? g.tiles[d] / stride[d] : 1;
  return n;
}

int64_t Policy::semaphore(const TileGrid &g,
                          const std::array<int64_t, 4> &c) const {
  int64_t s = 0;
  for (int d = 0; d < 4; ++d)
    if (!merged[d])
      s = stride[d] ? s * stride[d] + c[d] % stride[d] : s * g.tiles[d] + c[d];
  return s;
}

Box Policy::waited(Box b) const {
  for (int d = 0; d < 4; ++d)
    if (merged[d]) {
      b.lo[d] = b.hi[d] = 0;
    } else if (int64_t s = stride[d]) {
      const bool wraps =
          b.hi[d] - b.lo[d] + 1 >= s || b.lo[d] % s > b.hi[d] % s;
      b.lo[d] = wraps ? 0 : b.lo[d] % s;
      b.hi[d] = wraps ? s - 1 : b.hi[d] % s;
    }
  return b;
}

namespace {

/// The stride, in tiles of producer dimension pd, between the positions
/// the dependences read along it (Q's columns and K's of one head in a
/// fused Q|K|V product): each reads one range that follows the same
/// consumer dimension, at offsets a multiple of the stride apart that
/// divides the dimension's tiles. 0 if none.
int64_t strideOf(const std::vector<Dependence> &deps, int pd) {
  const DimRead &r0 = deps[0].read[pd];
  const TileGrid &g = deps[0].producer;
  int64_t gap = 0;
  for (const Dependence &d : deps) {
    const DimRead &r = d.read[pd];
    if (r.all || r.consumerDim != r0.consumerDim || r.mul != r0.mul ||
        r.span != r0.span)
      return 0;
    gap = std::gcd(gap, std::abs(r.add - r0.add));
  }
  if (gap == 0 || gap % g.extent[pd])
    return 0;
  const int64_t s = gap / g.extent[pd];
  return s < g.tiles[pd] && g.tiles[pd] % s == 0 ? s : 0;
}

} // namespace

std::vector<Policy> policies(const std::vector<Dependence> &deps) {
  std::vector<Policy> out{{"TileSync", {false, false, false, false}}};
  // RowSync: the dimensions every consumer tile reads whole (a GEMM
  // chain's columns: the consumer's A tile is a whole row of the producer).
  Policy row{"RowSync", {false, false, false, false}};
  Policy strided{"StridedSync", {false, false, false, false}};
  const TileGrid &g = deps[0].producer;
  bool any = false, anyStride = false;
  for (int pd = 0; pd < 4; ++pd) {
    if (g.tiles[pd] < 2)
      continue;
    bool whole = true;
    for (const Dependence &d : deps)
      for (int64_t b = 0; b < d.consumer.blocks() && whole; ++b) {
        Box x = d.box(d.consumer.coords(b));
        whole = x.empty() || (x.lo[pd] == 0 && x.hi[pd] == g.tiles[pd] - 1);
      }
    row.merged[pd] = strided.merged[pd] = whole;
    any = any || whole;
    if (deps.size() > 1 && !whole)
      strided.stride[pd] = strideOf(deps, pd);
    anyStride = anyStride || strided.stride[pd];
  }
  if (any)
    out.push_back(row);
  if (anyStride)
    out.push_back(strided);
  return out;
}

std::vector<Policy> policies(const Dependence &d) {
  return policies(std::vector<Dependence>{d});
}

std::vector<Wait> waitsOf(const Dependence &d, const Policy &p,
                          const std::array<int64_t, 4> &c) {
  std::vector<Wait> out;
  Box b = d.box(c);
  if (b.empty())
    return out;
  b = p.waited(b);
  const int64_t posts = p.postsPerSemaphore(d.producer);
  std::array<int64_t, 4> x{};
  for (x[0] = b.lo[0]; x[0] <= b.hi[0]; ++x[0])
    for (x[1] = b.lo[1]; x[1] <= b.hi[1]; ++x[1])
      for (x[2] = b.lo[2]; x[2] <= b.hi[2]; ++x[2])
        for (x[3] = b.lo[3]; x[3] <= b.hi[3]; ++x[3])
          out.push_back({p.semaphore(d.producer, x), posts});
  return out;
}

namespace {

/// The producer tile a consumer tile's waits under p complete with, the
/// latest in `order` of those they count; -1 if it waits for none.
int64_t lastWaited(const std::vector<Dependence> &deps, const Policy &p,
                   const TileOrder &order, int64_t block) {
  const TileGrid &g = deps[0].producer;
  int64_t last = -1;
  for (const Dependence &d : deps) {
    Box b = d.box(d.consumer.coords(block));
    if (b.empty())
      continue;
    b = p.waited(b);
    // A semaphore's last tile: merged dimensions' last, a strided one's
    // last tile of the residue (a slot grows with each coordinate).
    for (int dim = 0; dim < 4; ++dim)
      if (p.merged[dim])
        b.hi[dim] = g.tiles[dim] - 1;
      else if (p.stride[dim])
        b.hi[dim] += g.tiles[dim] - p.stride[dim];
    last = std::max(last, order.position(g, b.hi));
  }
  return last;
}

} // namespace

SyncEstimate estimate(const std::vector<Dependence> &deps, const Policy &p,
                      const KernelTiming &producer,
                      const KernelTiming &consumer, int64_t sms,
                      double overheadUs, const TileOrder &order) {
  const Dependence &d = deps[0];
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
  // The consumer's first tiles whose semaphores are then complete.
  int64_t ready = 0;
  for (; ready < bc && ready < idle; ++ready)
    if (lastWaited(deps, p, order, ready) >= done)
      break;
  SyncEstimate e;
  e.streamUs = producer.us + consumer.us;
  e.earlyTiles = ready;
  e.syncUs = producer.us + double((bc - ready + slotsC - 1) / slotsC) * waveC +
             overheadUs;
  return e;
}

SyncEstimate estimate(const Dependence &d, const Policy &p,
                      const KernelTiming &producer,
                      const KernelTiming &consumer, int64_t sms,
                      double overheadUs, const TileOrder &order) {
  return estimate(std::vector<Dependence>{d}, p, producer, consumer, sms,
                  overheadUs, order);
}

TileOrder bestOrder(const std::vector<Dependence> &deps, const Policy &p,
                    const KernelTiming &producer, const KernelTiming &consumer,
                    int64_t sms) {
  const TileGrid &g = deps[0].producer;
  TileOrder best;
  double fastest = estimate(deps, p, producer, consumer, sms, 0, best).syncUs;
  TileOrder o;
  std::sort(o.fastest.begin(), o.fastest.end());
  do {
    const double us = estimate(deps, p, producer, consumer, sms, 0, o).syncUs;
    if (us < fastest && !o.natural(g))
      best = o, fastest = us;
  } while (std::next_permutation(o.fastest.begin(), o.fastest.end()));
  return best;
}

TileOrder bestOrder(const Dependence &d, const Policy &p,
                    const KernelTiming &producer, const KernelTiming &consumer,
                    int64_t sms) {
  return bestOrder(std::vector<Dependence>{d}, p, producer, consumer, sms);
}

} // namespace cuts::codegen::sync

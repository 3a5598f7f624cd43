//===- ParamSearch.cpp - enumerate and prune tile parameters --------------===//
#include "perfmodel/ParamSearch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <queue>
#include <string>

namespace cuts {
namespace {

int64_t nextPow2(int64_t x) {
  int64_t p = 1;
  while (p < x)
    p <<= 1;
  return p;
}

std::vector<int64_t> pow2UpTo(int64_t limit) {
  std::vector<int64_t> v;
  for (int64_t p = 1; p <= limit; p <<= 1)
    v.push_back(p);
  return v;
}

// Per-thread extent caps (N, K, H, W) and the accumulator budget: a thread
// owns at most this many outputs, so its accumulators stay in registers.
struct Caps {
  int64_t ext[4];
  int64_t product;
};

Caps capsFor(OpKind k) {
  switch (k) {
  case OpKind::Conv:
  case OpKind::MatMul:
    return {{4, 16, 8, 8}, 64};
  case OpKind::Reduction:
    return {{4, 1, 1, 1}, 4};
  default:
    return {{2, 4, 4, 8}, 16};
  }
}

// C_input: a power of two that divides C, or C itself (Conv and MatMul;
// a reduction holds whole rows; the other ops have nothing to iterate over).
std::vector<int64_t> cinputOptions(const OpDesc &d) {
  if (d.kind == OpKind::Reduction)
    return {d.C}; // whole rows in shared memory
  if (!isComplex(d.kind))
    return {1};
  std::vector<int64_t> cins;
  for (int64_t c = 1; c <= std::min<int64_t>(d.C, 64); c <<= 1)
    if (d.C % c == 0)
      cins.push_back(c);
  if (d.C <= 64 && (d.C & (d.C - 1)) != 0)
    cins.push_back(d.C);
  return cins;
}

// Extents of the shared tile along N, C, H, W, for telling which
// FORMAT_shared orders are the same layout.
void tileExtents(const OpDesc &d, const TileParams &p, int64_t ext[4]) {
  auto in = [](int64_t out, int64_t f, int64_t s, int64_t dl) {
    return (out - 1) * s + (f - 1) * dl + 1;
  };
  ext[0] = p.Nb;
  ext[2] = in(p.Hb, d.FH, d.SH, d.DH);
  ext[3] = in(p.Wb, d.FW, d.SW, d.DW);
  switch (d.kind) {
  case OpKind::Conv:
  case OpKind::MatMul:
    ext[1] = p.Cin;
    break;
  case OpKind::Reduction:
    ext[1] = d.C;
    break;
  default:
    ext[1] = p.Kb;
    break;
  }
}

// One representative format per distinct layout: orders that agree on the
// axes of extent > 1. Depends only on which axes are > 1: 16 cached lists.
const std::vector<int> &distinctFormats(const int64_t ext[4]) {
  static const std::array<std::vector<int>, 16> byMask = [] {
    std::array<std::vector<int>, 16> out;
    const auto &formats = sharedFormats();
    for (int mask = 0; mask < 16; ++mask) {
      std::vector<std::string> seen;
      for (size_t f = 0; f < formats.size(); ++f) {
        std::string key;
        for (char c : formats[f]) {
          int dim = c == 'N' ? 0 : c == 'C' ? 1 : c == 'H' ? 2 : 3;
          if (mask & (1 << dim))
            key += c;
        }
        if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
          seen.push_back(key);
          out[mask].push_back(int(f));
        }
      }
    }
    return out;
  }();
  int mask = 0;
  for (int d = 0; d < 4; ++d)
    mask |= (ext[d] > 1) << d;
  return byMask[mask];
}

// Calls fn(p) for every C_input and distinct FORMAT_shared of p's tiles.
template <typename Fn>
void forEachCinputAndFormat(const OpDesc &d, TileParams p,
                            const std::vector<int64_t> &cins, Fn &&fn) {
  for (int64_t cin : cins) {
    p.Cin = cin;
    // Elementwise and batch-norm kernels stage nothing in shared memory:
    // FORMAT_shared changes neither their code nor their bound.
    if (streamingRoofline(d.kind)) {
      p.format = 0;
      fn(p);
      continue;
    }
    int64_t ext[4];
    tileExtents(d, p, ext);
    for (int f : distinctFormats(ext)) {
      p.format = f;
      fn(p);
    }
  }
}

// Channel vectors (OpDesc::channelVector): a thread takes V channels of
// Wt output pixels along W (Nt = Ht = 1), blocks of 64 to 512 threads. A
// block's threads span a pixel's channels first, up to a warp of them and
// dividing them where they can (Inception's 288 = 2 x 18 x 8: 256 a block
// left the second block's threads mostly idle), so that a warp reads whole
// pixels: 16 bytes a lane at a pixel stride read half of each sector.
void forEachChannelVectorParams(
    const OpDesc &d, const std::function<void(const TileParams &)> &fn) {
  const int64_t v = d.channelVector(), vectors = d.K / v;
  int64_t kb = std::min<int64_t>(vectors, 32);
  while (vectors % kb)
    --kb;
  if (kb < 8 && kb < vectors)
    kb = std::min<int64_t>(nextPow2(vectors), 32);
  // At least 64 threads, or as many as a small image gives.
  const int64_t least = std::min<int64_t>(
      64, kb * nextPow2(d.W) * std::min<int64_t>(8, nextPow2(d.H)));
  TileParams p;
  p.Nt = p.Ht = p.Nb = 1, p.Kt = v, p.Cin = 1, p.format = 0;
  for (int64_t wt : {1, 2, 4})
    for (int64_t wb : pow2UpTo(nextPow2(d.W) / std::min<int64_t>(wt, d.W)))
      for (int64_t hb : {1, 2, 4, 8}) {
        const int64_t threads = kb * wb * hb;
        if (threads < least || threads > 512 || hb > nextPow2(d.H))
          continue;
        p.Kb = kb * v, p.Wt = wt, p.Wb = wb * wt, p.Hb = hb;
        fn(p);
      }
}

// Reductions also split rows over lanes: Wb = G lanes of a warp share a
// row, each holding ceil(length / G) of its elements in registers (at most
// kMaxRowElements over its rows; fewer than half the lanes idle) and
// combining them by warp shuffles; Wt = 1. Whole warps only (every lane
// takes part in the shuffles), no shared memory.
void forEachRowLanesParams(const OpDesc &d, const GpuArch &arch,
                           const std::function<void(const TileParams &)> &fn) {
  int64_t span = nextPow2(std::max<int64_t>(d.N, 1));
  for (int64_t g = 2; g <= arch.warpSize && g / 2 < d.C; g <<= 1) {
    int64_t per = laneShare(d.C, g);
    for (int64_t t0 : pow2UpTo(std::min<int64_t>(capsFor(d.kind).ext[0], span)))
      for (int64_t n0 : pow2UpTo(span / t0)) {
        if (t0 * per > kMaxRowElements)
          continue;
        int64_t threads = n0 * g;
        if (threads % arch.warpSize || threads > arch.maxThreadsPerBlock)
          continue;
        TileParams p;
        p.Nt = t0, p.Nb = t0 * n0;
        p.Wb = g, p.Wt = 1;
        p.Cin = d.C;
        fn(p);
      }
  }
}

} // namespace

void forEachParams(const OpDesc &d, const GpuArch &arch,
                   const std::function<void(const TileParams &)> &fn) {
  // An implicit GEMM has tensor-core kernels only.
  if (d.im2col)
    return forEachTensorCoreParams(d, arch, fn);
  if (d.channelVector())
    return forEachChannelVectorParams(d, fn);
  // A row longer than kMaxThreadRow is never one thread's.
  if (d.kind == OpKind::Reduction && d.C > kMaxThreadRow)
    return forEachRowLanesParams(d, arch, fn);
  const int64_t dims[4] = {d.N, d.K, d.H, d.W};
  Caps caps = capsFor(d.kind);
  int64_t span[4];
  for (int i = 0; i < 4; ++i)
    span[i] = nextPow2(std::max<int64_t>(dims[i], 1));
  int64_t maxThreads = 1;
  for (int i = 0; i < 4; ++i)
    maxThreads *= span[i];
  std::vector<int64_t> cins = cinputOptions(d);

  TileParams p;
  int64_t t[4], n[4];
  // Thread extents (powers of two), then thread counts (powers of two).
  for (int64_t t0 : pow2UpTo(std::min(caps.ext[0], span[0])))
    for (int64_t t1 : pow2UpTo(std::min(caps.ext[1], span[1])))
      for (int64_t t2 : pow2UpTo(std::min(caps.ext[2], span[2])))
        for (int64_t t3 : pow2UpTo(std::min(caps.ext[3], span[3]))) {
          if (t0 * t1 * t2 * t3 > caps.product)
            continue;
          t[0] = t0, t[1] = t1, t[2] = t2, t[3] = t3;
          int64_t possible = maxThreads / (t0 * t1 * t2 * t3);
          int64_t minThreads = std::min<int64_t>(arch.warpSize, possible);
          for (int64_t n0 : pow2UpTo(span[0] / t0))
            for (int64_t n1 : pow2UpTo(span[1] / t1))
              for (int64_t n2 : pow2UpTo(span[2] / t2))
                for (int64_t n3 : pow2UpTo(span[3] / t3)) {
                  int64_t threads = n0 * n1 * n2 * n3;
                  if (threads < minThreads || threads > arch.maxThreadsPerBlock)
                    continue;
                  n[0] = n0, n[1] = n1, n[2] = n2, n[3] = n3;
                  p.Nt = t[0], p.Kt = t[1], p.Ht = t[2], p.Wt = t[3];
                  p.Nb = t[0] * n[0], p.Kb = t[1] * n[1];
                  p.Hb = t[2] * n[2], p.Wb = t[3] * n[3];
                  // A grouped conv's block computes outputs of one group.
                  if (d.kind == OpKind::Conv && d.batch > 1 && d.K % p.Kb)
                    continue;
                  if (d.kind == OpKind::Reduction &&
                      p.Nt * d.C > kMaxRowElements)
                    continue;
                  if ((d.kind == OpKind::Conv ||
                       d.kind == OpKind::DepthwiseConv) &&
                      t0 * t1 * t2 * t3 * d.FH * d.FW > kMaxUnrolledFma)
                    continue;
                  forEachCinputAndFormat(d, p, cins, fn);
                }
        }
  // Matmuls of 16-bit operands also run on tensor cores (one layout each).
  forEachTensorCoreParams(d, arch, fn);
  if (d.kind == OpKind::Reduction)
    forEachRowLanesParams(d, arch, fn);
}

int64_t keepCount(int64_t n, const PruneOptions &opts) {
  int64_t k = int64_t(std::ceil(double(n) * opts.topPercent / 100.0));
  k = std::min<int64_t>(std::max<int64_t>(k, opts.minKeep), opts.maxKeep);
  return std::min(n, std::max<int64_t>(k, opts.minKeep));
}

namespace {

// The sets that differ only in FORMAT_shared. A format changes COEF_bc and,
// for matmuls and rows, N_load (its 128-bit runs); nothing else in the bound.
struct FormatGroup {
  TileParams p;       // the set of its first format
  Bound base;         // COEF_bc = 1 at p's N_load
  Bound optimistic;   // COEF_bc = 1 at the group's least N_load
  uint32_t formats{}; // bit f: format f is in the group
  int64_t first = 0;  // the enumeration index of its first set
};

bool sameGroup(const TileParams &a, const TileParams &b) {
  return a.Nb == b.Nb && a.Kb == b.Kb && a.Hb == b.Hb && a.Wb == b.Wb &&
         a.Nt == b.Nt && a.Kt == b.Kt && a.Ht == b.Ht && a.Wt == b.Wt &&
         a.Cin == b.Cin && a.instr == b.instr && a.warpsM == b.warpsM &&
         a.warpsN == b.warpsN && a.stages == b.stages &&
         a.warpSpecialized == b.warpSpecialized;
}

// The sets op d may take with inputs from `input`: a complex successor reads
// its whole input from shared memory (C_input = C). And the GMRatio the
// bound is given: 1 from shared memory (NUM_trans = 0), else its own (-1).
// Tensor-core main loops read global memory only.
bool allowedFor(const OpDesc &d, InputFrom input, const TileParams &p) {
  return input != InputFrom::SharedMemory ||
         (!p.tensorCore() && (!isComplex(d.kind) || p.Cin == d.C));
}
double gmFor(InputFrom input) {
  return input == InputFrom::SharedMemory ? 1.0 : -1.0;
}

/// Calls fn once per format group of the sets `allowed` lets through, in
/// enumeration order, with the count of sets before it.
template <typename Allowed, typename Fn>
void forEachFormatGroup(const OpDesc &d, const GpuArch &arch, double gm,
                        Allowed &&allowed, Fn &&fn) {
  FormatGroup g;
  double leastNLoad = 0;
  int64_t index = 0;
  bool open = false;
  const bool byFormat = nLoadByFormat(d.kind);
  auto finish = [&] {
    g.optimistic = g.base;
    if (leastNLoad < g.base.nLoad) {
      g.optimistic.nLoad = leastNLoad;
      setCoefBc(g.optimistic, 1.0, d, g.p, arch);
    }
    fn(g);
  };
  forEachParams(d, arch, [&](const TileParams &p) {
    if (!allowed(p))
      return;
    if (open && sameGroup(g.p, p)) {
      g.formats |= 1u << p.format;
      if (byFormat)
        leastNLoad = std::min(leastNLoad, nLoad(d, p));
    } else {
      if (open)
        finish();
      g.p = p;
      g.base = evaluateBound(d, p, arch, gm, nullptr, /*knownCoefBc=*/1.0);
      g.formats = 1u << p.format;
      g.first = index;
      leastNLoad = g.base.nLoad;
      open = true;
    }
    ++index;
  });
  if (open)
    finish();
}

// A total order on candidates: the better bound, then the earlier set, so
// the kept sets do not depend on the order they are scored in.
struct Ranked {
  Candidate c;
  int64_t index;
};
bool better(const Bound &a, int64_t ia, const Bound &b, int64_t ib) {
  return betterBound(a, b) || (!betterBound(b, a) && ia < ib);
}

// Groups in the order of their COEF_bc = 1 bound: true if a ranks ahead of
// b (as a heap comparator it keeps the worst at the front).
bool groupWorse(const FormatGroup &a, const FormatGroup &b) {
  return better(a.optimistic, a.first, b.optimistic, b.first);
}

/// The bound of format q.format of a group whose bound with COEF_bc = 1 is
/// `base`: its own N_load where the format changes it, and its COEF_bc.
Bound withFormat(const OpDesc &d, Bound b, const TileParams &q,
                 const GpuArch &arch) {
  if (nLoadByFormat(d.kind))
    b.nLoad = nLoad(d, q);
  setCoefBc(b, coefBc(d, q, arch), d, q, arch);
  return b;
}

/// Calls fn with each format of group g scored (its COEF_bc counted), as a
/// Ranked numbered from the group's first set.
template <typename Fn>
void forEachScored(const OpDesc &d, const GpuArch &arch, const FormatGroup &g,
                   Fn &&fn) {
  int64_t index = g.first;
  for (int f = 0; f < 32; ++f) {
    if (!(g.formats >> f & 1))
      continue;
    TileParams q = g.p;
    q.format = f;
    fn(Ranked{{q, withFormat(d, g.base, q, arch)}, index++});
  }
}

// One tiling for distinctTilingsFirst: a format group, or for tensor cores
// one block of warps (C_input and the stages vary the pipeline only).
bool sameTiling(const TileParams &a, const TileParams &b) {
  if (!a.tensorCore() || !b.tensorCore())
    return sameGroup(a, b);
  return a.instr == b.instr && a.Nb == b.Nb && a.Kb == b.Kb && a.Nt == b.Nt &&
         a.Kt == b.Kt && a.warpsM == b.warpsM && a.warpsN == b.warpsN;
}

} // namespace

std::vector<size_t> distinctTilingsFirst(const std::vector<Candidate> &ranked,
                                         size_t n) {
  n = std::min(n, ranked.size());
  std::vector<size_t> picked, later;
  for (size_t i = 0; i < ranked.size() && picked.size() < n; ++i) {
    bool seen = false;
    for (size_t j : picked)
      seen = seen || sameTiling(ranked[j].params, ranked[i].params);
    (seen ? later : picked).push_back(i);
  }
  for (size_t i = 0; picked.size() < n; ++i)
    picked.push_back(later[i]);
  return picked;
}

std::optional<size_t> pipelineAlternative(const std::vector<Candidate> &ranked,
                                          size_t i) {
  const Candidate &c = ranked[i];
  if (!c.params.tensorCore())
    return std::nullopt;
  for (size_t j = 0; j < ranked.size(); ++j) {
    const Candidate &o = ranked[j];
    if (j != i && sameTiling(o.params, c.params) &&
        (o.params.overlapsSlices() != c.params.overlapsSlices() ||
         o.bound.residentBlocks != c.bound.residentBlocks))
      return j;
  }
  return std::nullopt;
}

namespace {

// The top-k sets (searchParams without the tilings it adds).
SearchResult topSets(const OpDesc &d, const GpuArch &arch,
                     const PruneOptions &opts, InputFrom input) {
  SearchResult r;
  double gm = gmFor(input);
  auto allowed = [&](const TileParams &p) { return allowedFor(d, input, p); };
  // Counting bank conflicts (COEF_bc) is most of the cost of scoring a set,
  // and COEF_bc = 1 bounds every format of a group from above. So the groups
  // are scored best-first by that bound, and a group is counted only while
  // it can still beat the worst kept set. Pass 1 keeps the G best groups by
  // their bound (G: as many as sets can be kept, at most 65536 groups, about
  // 40 MB) and what the best of the rest could reach; pass 2, over every
  // group again, runs only when that could still enter the kept sets. The
  // kept sets are exactly the top k of scoring every set.
  const size_t G = size_t(std::min<int64_t>(
      std::max<int64_t>(opts.maxKeep, opts.minKeep), int64_t(1) << 16));
  std::vector<FormatGroup> best;  // a heap whose front is the worst
  std::optional<FormatGroup> cut; // the best group left out of `best`
  auto leaveOut = [&](const FormatGroup &g) {
    if (!cut || groupWorse(g, *cut))
      cut = g;
  };
  forEachFormatGroup(d, arch, gm, allowed, [&](const FormatGroup &g) {
    r.enumerated = g.first + __builtin_popcount(g.formats);
    if (G == 0)
      return leaveOut(g);
    if (best.size() < G) {
      best.push_back(g);
    } else if (groupWorse(g, best.front())) {
      std::pop_heap(best.begin(), best.end(), groupWorse);
      leaveOut(best.back());
      best.back() = g;
    } else {
      return leaveOut(g);
    }
    std::push_heap(best.begin(), best.end(), groupWorse);
  });
  int64_t k = keepCount(r.enumerated, opts);
  if (k == 0)
    return r;

  // Min-heap of the best k sets: the root is the worst kept one.
  auto worse = [](const Ranked &a, const Ranked &b) {
    return better(a.c.bound, a.index, b.c.bound, b.index);
  };
  std::priority_queue<Ranked, std::vector<Ranked>, decltype(worse)> heap(worse);
  // Whether a group whose bound is `g.optimistic` can still enter the heap.
  auto canEnter = [&](const FormatGroup &g) {
    return int64_t(heap.size()) < k ||
           better(g.optimistic, g.first, heap.top().c.bound, heap.top().index);
  };
  auto score = [&](const FormatGroup &g) {
    forEachScored(d, arch, g, [&](const Ranked &c) {
      if (int64_t(heap.size()) < k) {
        heap.push(c);
      } else if (worse(c, heap.top())) {
        heap.pop();
        heap.push(c);
      }
    });
  };
  std::sort(best.begin(), best.end(), groupWorse); // best first
  std::vector<int64_t> scored; // their first indices, ascending
  for (const FormatGroup &g : best) {
    if (!canEnter(g))
      break;
    score(g);
    scored.push_back(g.first);
  }
  std::sort(scored.begin(), scored.end());
  if (cut && canEnter(*cut))
    forEachFormatGroup(d, arch, gm, allowed, [&](const FormatGroup &g) {
      if (canEnter(g) &&
          !std::binary_search(scored.begin(), scored.end(), g.first))
        score(g);
    });
  for (; !heap.empty(); heap.pop())
    r.kept.push_back(heap.top().c);
  std::reverse(r.kept.begin(), r.kept.end());
  return r;
}

} // namespace

SearchResult searchParams(const OpDesc &d, const GpuArch &arch,
                          const PruneOptions &opts, InputFrom input) {
  SearchResult r = topSets(d, arch, opts, input);
  // Tensor-core sets of one block shape (their C_input, stages and warp
  // specialisation tying on the bound) can fill the kept sets and leave
  // the tuner one tiling to time. The best set of each next tiling is
  // kept too, up to kKeptTilings: on an H200 ResNet-50's memory-bound 1 x 1
  // convs ran 8-20 % faster in 128 x 128 blocks than in the 256 x 128 ones
  // that filled their kept sets.
  if (r.kept.empty() || !r.kept.front().params.tensorCore() ||
      input != InputFrom::Global)
    return r;
  std::vector<TileParams> seen;
  auto unseen = [&](const TileParams &p) {
    return std::none_of(seen.begin(), seen.end(),
                        [&](const TileParams &t) { return sameTiling(t, p); });
  };
  for (const Candidate &c : r.kept)
    if (unseen(c.params))
      seen.push_back(c.params);
  if (int64_t(seen.size()) >= kKeptTilings)
    return r;
  std::vector<Candidate> more;
  forEachTensorCoreParams(d, arch, [&](const TileParams &p) {
    if (allowedFor(d, input, p))
      more.push_back({p, evaluateBound(d, p, arch)});
  });
  std::stable_sort(more.begin(), more.end(),
                   [](const Candidate &a, const Candidate &b) {
                     return betterBound(a.bound, b.bound);
                   });
  for (size_t i = 0; i < more.size() && int64_t(seen.size()) < kKeptTilings;
       ++i)
    if (unseen(more[i].params)) {
      seen.push_back(more[i].params);
      r.kept.push_back(more[i]);
    }
  return r;
}

std::vector<Candidate>
bestPerBlockKey(const OpDesc &d, const GpuArch &arch, InputFrom input,
                const std::function<BlockKey(const TileParams &)> &key,
                int64_t *enumerated) {
  auto allowed = [&](const TileParams &p) { return allowedFor(d, input, p); };
  // Every group, by key; then per key the groups best-first by their
  // COEF_bc = 1 bound, formats scored only while a group can still win.
  std::map<BlockKey, std::vector<FormatGroup>> groups;
  int64_t n = 0;
  forEachFormatGroup(d, arch, gmFor(input), allowed, [&](const FormatGroup &g) {
    n = g.first + __builtin_popcount(g.formats);
    groups[key(g.p)].push_back(g);
  });
  if (enumerated)
    *enumerated = n;
  std::vector<Ranked> best;
  for (auto &entry : groups) {
    std::vector<FormatGroup> &gs = entry.second;
    std::sort(gs.begin(), gs.end(), groupWorse);
    std::optional<Ranked> top;
    for (const FormatGroup &g : gs) {
      if (top && !better(g.optimistic, g.first, top->c.bound, top->index))
        break;
      forEachScored(d, arch, g, [&](const Ranked &c) {
        if (!top || better(c.c.bound, c.index, top->c.bound, top->index))
          top = c;
      });
    }
    if (top)
      best.push_back(*top);
  }
  std::sort(best.begin(), best.end(), [](const Ranked &a, const Ranked &b) {
    return better(a.c.bound, a.index, b.c.bound, b.index);
  });
  std::vector<Candidate> out;
  out.reserve(best.size());
  for (const Ranked &r : best)
    out.push_back(r.c);
  return out;
}

std::optional<Candidate> bestForBlock(const OpDesc &d, const GpuArch &arch,
                                      const TileParams &block,
                                      int64_t threads) {
  std::optional<Candidate> best;
  const int64_t ext[4] = {block.Nb, block.Kb, block.Hb, block.Wb};
  Caps caps = capsFor(d.kind);
  std::vector<int64_t> cins = cinputOptions(d);
  const int64_t regLimit = registerCap(threads, arch);
  // Thread extents: powers of two dividing the block extents, with the
  // block's thread count fixed by the fused kernel.
  std::vector<int64_t> opts[4];
  for (int i = 0; i < 4; ++i)
    for (int64_t t = 1; t <= std::min(caps.ext[i], ext[i]); t <<= 1)
      if (ext[i] % t == 0)
        opts[i].push_back(t);
  TileParams p = block;
  p.instr = MatrixInstr::None; // a predecessor's phase runs on SIMT units
  for (int64_t t0 : opts[0])
    for (int64_t t1 : opts[1])
      for (int64_t t2 : opts[2])
        for (int64_t t3 : opts[3]) {
          if (t0 * t1 * t2 * t3 > caps.product)
            continue;
          p.Nt = t0, p.Kt = t1, p.Ht = t2, p.Wt = t3;
          // The block's threads sweep the tile's thread-tiles in rounds;
          // threads idle in the last round are lost.
          int64_t tiles = p.threads();
          double rounds = std::ceil(double(tiles) / double(threads));
          double roundEff = double(tiles) / (rounds * double(threads));
          // Each round keeps its own accumulators in registers, within
          // what a block of `threads` threads may hold per thread (the
          // kernel's __launch_bounds__: ptxas spills past it). Checked
          // against MAX_regs alone, MobileNetV2 b64's features.2 pair took
          // 3 rounds of 32 accumulators at 512 threads: 128 registers and
          // 10 M local-memory spill requests on the H200 (ncu), 733 us
          // against a bound of 103.
          if (registersPerThread(d, p) +
                  int64_t(rounds - 1) * t0 * t1 * t2 * t3 >
              regLimit)
            continue;
          // As in searchParams: COEF_bc = 1 bounds a format group, so only
          // a group that could beat the best so far counts bank conflicts.
          auto asPredecessor = [&](Bound &b) {
            // The grid and the residency are the successor's: the caller
            // multiplies its WBRatio in and checks the shared memory of
            // both phases together.
            b.wbRatio = roundEff;
            b.coefR = 1;
            b.pul = b.gmRatio * b.smRatio * b.wbRatio;
          };
          for (int64_t cin : cins) {
            p.Cin = cin;
            int64_t ext[4];
            tileExtents(d, p, ext);
            const std::vector<int> &formats = distinctFormats(ext);
            TileParams q = p;
            q.format = formats.front();
            Bound base = evaluateBound(d, q, arch, -1.0, nullptr, 1.0);
            Bound optimistic = base;
            for (int f : formats) {
              q.format = f;
              if (nLoadByFormat(d.kind))
                optimistic.nLoad = std::min(optimistic.nLoad, nLoad(d, q));
            }
            setCoefBc(optimistic, 1.0, d, q, arch);
            asPredecessor(optimistic);
            if (best && !betterBound(optimistic, best->bound))
              continue;
            for (int f : formats) {
              q.format = f;
              Bound b = withFormat(d, base, q, arch);
              asPredecessor(b);
              if (!best || betterBound(b, best->bound))
                best = Candidate{q, b};
            }
          }
        }
  return best;
}

} // namespace cuts

//===- Params.cpp - enumerate and prune implementation parameters ---------===//
#include "perfmodel/Params.h"

#include <algorithm>
#include <array>
#include <cmath>
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
    int64_t ext[4];
    tileExtents(d, p, ext);
    for (int f : distinctFormats(ext)) {
      p.format = f;
      fn(p);
    }
  }
}

} // namespace

void forEachParams(const OpDesc &d, const GpuArch &arch,
                   const std::function<void(const TileParams &)> &fn) {
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
                  forEachCinputAndFormat(d, p, cins, fn);
                }
        }
  // Reductions also split rows over lanes: Wb = G lanes of a warp share a
  // row (G dividing its length), each holding length / G of its elements
  // in registers and combining them by warp shuffles; Wt = 1. Whole warps
  // only (every lane takes part in the shuffles), no shared memory.
  if (d.kind != OpKind::Reduction)
    return;
  for (int64_t g = 2; g <= arch.warpSize && g <= d.C; g <<= 1) {
    if (d.C % g)
      continue;
    for (int64_t t0 : pow2UpTo(std::min(caps.ext[0], span[0])))
      for (int64_t n0 : pow2UpTo(span[0] / t0)) {
        int64_t threads = n0 * g;
        if (threads % arch.warpSize || threads > arch.maxThreadsPerBlock)
          continue;
        p = TileParams();
        p.Nt = t0, p.Nb = t0 * n0;
        p.Wb = g, p.Wt = 1;
        p.Cin = d.C;
        p.format = 0;
        fn(p);
      }
  }
}

int64_t keepCount(int64_t n, const PruneOptions &opts) {
  int64_t k = int64_t(std::ceil(double(n) * opts.topPercent / 100.0));
  k = std::min<int64_t>(std::max<int64_t>(k, opts.minKeep), opts.maxKeep);
  return std::min(n, std::max<int64_t>(k, opts.minKeep));
}

SearchResult searchParams(const OpDesc &d, const GpuArch &arch,
                          const PruneOptions &opts, InputFrom input) {
  SearchResult r;
  bool onChip = input == InputFrom::SharedMemory;
  double gm = onChip ? 1.0 : -1.0;
  // A complex successor reads its whole input from shared memory.
  auto allowed = [&](const TileParams &p) {
    return !onChip || !isComplex(d.kind) || p.Cin == d.C;
  };
  forEachParams(d, arch,
                [&](const TileParams &p) { r.enumerated += allowed(p); });
  int64_t k = keepCount(r.enumerated, opts);
  // Min-heap of the best k by PUL: the root is the worst kept set, so a set
  // is dropped only in favour of one with a higher PUL.
  auto worse = [](const Candidate &a, const Candidate &b) {
    return betterBound(a.bound, b.bound);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> heap(
      worse);
  // Formats are the innermost loop and only change COEF_bc, so the rest of
  // the bound is computed once per format group; with COEF_bc = 1 it bounds
  // every format's PUL, and groups that cannot beat the worst kept set skip
  // the bank-conflict count (the kept set is the same as scoring them all).
  TileParams last;
  bool haveLast = false;
  Bound base;
  forEachParams(d, arch, [&](const TileParams &p) {
    if (k == 0 || !allowed(p))
      return;
    TileParams key = p;
    key.format = last.format;
    bool same = haveLast && key.Nb == last.Nb && key.Kb == last.Kb &&
                key.Hb == last.Hb && key.Wb == last.Wb && key.Nt == last.Nt &&
                key.Kt == last.Kt && key.Ht == last.Ht && key.Wt == last.Wt &&
                key.Cin == last.Cin;
    if (!same) {
      base = evaluateBound(d, p, arch, gm, nullptr, /*knownCoefBc=*/1.0);
      haveLast = true;
    }
    last = p;
    bool full = int64_t(heap.size()) >= k;
    // COEF_bc = 1 bounds PUL and headroom from above.
    if (full && !betterBound(base, heap.top().bound))
      return;
    Bound b = base;
    setCoefBc(b, coefBc(d, p, arch), d, p, arch);
    if (!full)
      heap.push({p, b});
    else if (betterBound(b, heap.top().bound)) {
      heap.pop();
      heap.push({p, b});
    }
  });
  while (!heap.empty()) {
    r.kept.push_back(heap.top());
    heap.pop();
  }
  std::reverse(r.kept.begin(), r.kept.end());
  return r;
}

std::optional<Candidate> bestForBlock(const OpDesc &d, const GpuArch &arch,
                                      const TileParams &block,
                                      int64_t threads) {
  std::optional<Candidate> best;
  const int64_t ext[4] = {block.Nb, block.Kb, block.Hb, block.Wb};
  Caps caps = capsFor(d.kind);
  std::vector<int64_t> cins = cinputOptions(d);
  // Thread extents: powers of two dividing the block extents, with the
  // block's thread count fixed by the fused kernel.
  std::vector<int64_t> opts[4];
  for (int i = 0; i < 4; ++i)
    for (int64_t t = 1; t <= std::min(caps.ext[i], ext[i]); t <<= 1)
      if (ext[i] % t == 0)
        opts[i].push_back(t);
  TileParams p = block;
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
          // Each round keeps its own accumulators in registers.
          if (registersPerThread(d, p) +
                  int64_t(rounds - 1) * t0 * t1 * t2 * t3 >
              arch.maxRegsPerThread)
            continue;
          forEachCinputAndFormat(d, p, cins, [&](const TileParams &q) {
            Bound b = evaluateBound(d, q, arch);
            // The grid and the residency are the successor's: the caller
            // multiplies its WBRatio in and checks the shared memory of
            // both phases together.
            b.wbRatio = roundEff;
            b.coefR = 1;
            b.pul = b.gmRatio * b.smRatio * b.wbRatio;
            if (!best || betterBound(b, best->bound))
              best = Candidate{q, b};
          });
        }
  return best;
}

} // namespace cuts

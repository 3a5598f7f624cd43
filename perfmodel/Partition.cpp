//===- Partition.cpp - the partition search of DeepCuts (Algorithm 1) -----===//
//
// Two phases. The search (Algorithm 1, §3.1) runs on subsets rather than on
// partitions: a partition's cost is the sum of its subsets' costs, so merging
// X and Y improves every partition that holds both exactly when
// cost(X u Y) < cost(X) + cost(Y). The subsets the thesis's partitions can
// contain are then the closure of the singletons under such merges, found with
// a worklist that only pairs subsets touching through an edge.
//
// The selection is exact where the thesis compares the partitions in R: a
// dynamic program over the sets of nodes already run (always predecessor
// closed) picks the cheapest partition into candidate subsets whose groups run
// in some order. The graph is first cut where no candidate spans, so that
// parallel branches add states instead of multiplying them; past a bound on
// states a segment falls back to a beam search (reported as truncated).
//
//===----------------------------------------------------------------------===//

#include "perfmodel/Partition.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <deque>
#include <iterator>
#include <utility>

namespace cuts {
namespace {

//===----------------------------------------------------------------------===//
// Bitsets
//===----------------------------------------------------------------------===//

/// A node set as a bitset: the key of the memo and of the DP states, and
/// cheap to intersect (disjointness, readiness, convexity).
using Bits = std::vector<uint64_t>;

uint64_t mix(uint64_t x) {
  // splitmix64's finaliser: the words of a bitset are far from random.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t hashWords(const uint64_t *w, int words) {
  uint64_t h = 0;
  for (int i = 0; i < words; ++i)
    h = mix(h ^ w[i]);
  return h;
}

void setBit(Bits &b, int i) { b[i >> 6] |= uint64_t(1) << (i & 63); }
bool testBit(const uint64_t *b, int i) { return (b[i >> 6] >> (i & 63)) & 1; }
bool testBit(const Bits &b, int i) { return testBit(b.data(), i); }

bool disjoint(const uint64_t *a, const uint64_t *b, int words) {
  for (int i = 0; i < words; ++i)
    if (a[i] & b[i])
      return false;
  return true;
}

/// a is a subset of b.
bool subsetOf(const uint64_t *a, const uint64_t *b, int words) {
  for (int i = 0; i < words; ++i)
    if (a[i] & ~b[i])
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

struct Dag {
  int n = 0;
  int words = 0;
  std::vector<std::vector<int>> preds, succs;
  /// Strict descendants and ancestors of each node: Z is convex iff no node
  /// outside Z is both a descendant and an ancestor of nodes of Z.
  std::vector<Bits> desc, anc;

  /// False if an edge breaks the contract of PartitionGraph.
  bool build(const PartitionGraph &g) {
    n = g.numNodes;
    words = (n + 63) / 64;
    preds.assign(n, {});
    succs.assign(n, {});
    for (auto [from, to] : g.edges) {
      if (from < 0 || to >= n || from >= to)
        return false;
      succs[from].push_back(to);
      preds[to].push_back(from);
    }
    for (int v = 0; v < n; ++v) {
      // Parallel edges would only repeat work.
      for (auto *list : {&preds[v], &succs[v]}) {
        std::sort(list->begin(), list->end());
        list->erase(std::unique(list->begin(), list->end()), list->end());
      }
    }
    desc.assign(n, Bits(words, 0));
    anc.assign(n, Bits(words, 0));
    // The numbering is topological, so one sweep each way suffices.
    for (int v = n - 1; v >= 0; --v)
      for (int s : succs[v]) {
        setBit(desc[v], s);
        for (int i = 0; i < words; ++i)
          desc[v][i] |= desc[s][i];
      }
    for (int v = 0; v < n; ++v)
      for (int p : preds[v]) {
        setBit(anc[v], p);
        for (int i = 0; i < words; ++i)
          anc[v][i] |= anc[p][i];
      }
    return true;
  }

  Bits bitsOf(const NodeSet &s) const {
    Bits b(words, 0);
    for (int v : s)
      setBit(b, v);
    return b;
  }

  /// Nodes outside S with an edge into S: they must run before S.
  Bits externalPreds(const NodeSet &nodes, const Bits &bits) const {
    Bits b(words, 0);
    for (int v : nodes)
      for (int p : preds[v])
        if (!testBit(bits, p))
          setBit(b, p);
    return b;
  }
};

/// A set of node sets stored flat, each numbered in insertion order, with
/// an open-addressing index: far lighter than a map keyed by vectors. The
/// memo and the DP's states are such sets.
class BitsTable {
public:
  explicit BitsTable(int words) : words(words), slots(1024, -1) {}

  int size() const { return count; }
  const uint64_t *key(int id) const { return pool.data() + size_t(id) * words; }

  /// Returns the id of `k` and whether it was new.
  std::pair<int, bool> insert(const uint64_t *k) {
    if (2 * (count + 1) > static_cast<int>(slots.size()))
      grow();
    size_t slot = slotOf(k);
    if (slots[slot] >= 0)
      return {slots[slot], false};
    slots[slot] = count;
    pool.insert(pool.end(), k, k + words);
    return {count++, true};
  }

  /// The id of `k`, or -1.
  int find(const uint64_t *k) const { return slots[slotOf(k)]; }

private:
  size_t slotOf(const uint64_t *k) const {
    size_t mask = slots.size() - 1;
    size_t slot = hashWords(k, words) & mask;
    while (slots[slot] >= 0 && !std::equal(k, k + words, key(slots[slot])))
      slot = (slot + 1) & mask;
    return slot;
  }

  void grow() {
    slots.assign(slots.size() * 2, -1);
    size_t mask = slots.size() - 1;
    for (int id = 0; id < count; ++id) {
      size_t slot = hashWords(key(id), words) & mask;
      while (slots[slot] >= 0)
        slot = (slot + 1) & mask;
      slots[slot] = id;
    }
  }

  int words;
  int count = 0;
  std::vector<uint64_t> pool;
  std::vector<int> slots;
};

//===----------------------------------------------------------------------===//
// The search: closure of the singletons under beneficial merges
//===----------------------------------------------------------------------===//

struct Candidate {
  NodeSet nodes;
  Bits bits;
  Bits extPreds;
  double cost = 0;
};

class Search {
public:
  Search(const Dag &dag, const SubsetCost &cost, const PartitionOptions &opts)
      : dag(dag), costFn(cost), opts(opts),
        maxSize(static_cast<size_t>(std::max(opts.maxSubsetSize, 1))),
        memo(dag.words), z(dag.words), zDesc(dag.words), zAnc(dag.words) {}

  /// Algorithm 1's initial partition Q. False if a singleton has no cost.
  bool seedSingletons() {
    for (int v = 0; v < dag.n; ++v) {
      NodeSet s{v};
      Bits b = dag.bitsOf(s);
      std::optional<double> c = costFn(s);
      ++evaluations;
      memo.insert(b.data());
      entries.push_back(Entry{c, c.has_value()});
      if (!c)
        return false;
      addCandidate(s, b, dag.desc[v], dag.anc[v], *c);
    }
    return true;
  }

  /// Runs the worklist until no new beneficial subset appears or the
  /// evaluation budget is spent. Every pair of candidates that touch is
  /// tried exactly once: when the later of the two is popped.
  void close() {
    const int words = dag.words;
    // processed[v][k]: the processed candidates of k nodes that hold v. By
    // size, so that once the size bound binds, partners too big for X are
    // never looked at: in dense regions they are most of them.
    std::vector<std::vector<std::vector<int>>> processed(dag.n);
    std::vector<int> stamp;
    int round = 0;
    while (!work.empty() && !stopped) {
      int x = work.front();
      work.pop_front();
      ++round;
      stamp.resize(cands.size(), 0);
      // Copies: tryMerge grows the candidate arrays, which may move them.
      const NodeSet xNodes = cands[x].nodes;
      const Bits xBits = cands[x].bits;
      for (int u : xNodes) {
        for (const auto *list : {&dag.preds[u], &dag.succs[u]})
          for (int v : *list) {
            if (testBit(xBits, v))
              continue;
            size_t sizes = processed[v].size();
            if (truncated)
              sizes = std::min(sizes, maxSize - xNodes.size() + 1);
            for (size_t k = 1; k < sizes; ++k)
              for (int y : processed[v][k]) {
                if (stamp[y] == round)
                  continue;
                stamp[y] = round;
                if (!disjoint(xBits.data(), bitsOf(y), words))
                  continue;
                tryMerge(x, y);
                if (stopped)
                  return;
              }
          }
      }
      for (int u : xNodes) {
        if (processed[u].size() <= xNodes.size())
          processed[u].resize(xNodes.size() + 1);
        processed[u][xNodes.size()].push_back(x);
      }
    }
  }

  std::vector<Candidate> cands;
  int evaluations = 0;
  bool truncated = false;

private:
  /// What the memo knows of an evaluated subset.
  struct Entry {
    std::optional<double> cost;
    bool kept = false; // a candidate (a beneficial merge reached it)
  };

  const uint64_t *bitsOf(int c) const {
    return &pools[size_t(c) * 3 * dag.words];
  }
  const uint64_t *descOf(int c) const { return bitsOf(c) + dag.words; }
  const uint64_t *ancOf(int c) const { return bitsOf(c) + 2 * dag.words; }

  void addCandidate(const NodeSet &nodes, const Bits &bits, const Bits &desc,
                    const Bits &anc, double cost) {
    Candidate c;
    c.extPreds = dag.externalPreds(nodes, bits);
    c.nodes = nodes;
    c.bits = bits;
    c.cost = cost;
    work.push_back(static_cast<int>(cands.size()));
    cands.push_back(std::move(c));
    for (const Bits *b : {&bits, &desc, &anc})
      pools.insert(pools.end(), b->begin(), b->end());
  }

  void tryMerge(int x, int y) {
    const int words = dag.words;
    const Candidate &cx = cands[x], &cy = cands[y];
    const bool tooBig = cx.nodes.size() + cy.nodes.size() > maxSize;
    // Connected by construction (X and Y are, and an edge joins them);
    // convexity must be checked, and a non-convex union is no kernel, so it
    // is not worth an evaluation. Z is convex iff no node outside it is both
    // a descendant and an ancestor of Z; the closures of X and Y give Z's in
    // a few word operations.
    bool convex = true;
    for (int i = 0; i < words; ++i) {
      z[i] = cx.bits[i] | cy.bits[i];
      zDesc[i] = descOf(x)[i] | descOf(y)[i];
      zAnc[i] = ancOf(x)[i] | ancOf(y)[i];
      convex &= !(zDesc[i] & zAnc[i] & ~z[i]);
    }
    if (!convex)
      return;
    if (tooBig) {
      // A merge the thesis would have tried: the search was bounded.
      truncated = true;
      return;
    }
    const double pairCost = cx.cost + cy.cost;
    mergeNodes(x, y);
    int id = memo.find(z.data());
    if (id >= 0) {
      // Evaluated before from another pair, where it may not have paid off;
      // it may against this one.
      Entry &e = entries[id];
      if (!e.kept && e.cost && *e.cost < pairCost) {
        e.kept = true;
        addCandidate(scratchNodes, z, zDesc, zAnc, *e.cost);
      }
      return;
    }
    if (evaluations >= opts.maxEvaluations) {
      truncated = true;
      stopped = true;
      return;
    }
    std::optional<double> c = costFn(scratchNodes);
    ++evaluations;
    bool beneficial = c && *c < pairCost;
    memo.insert(z.data());
    entries.push_back(Entry{c, beneficial});
    if (beneficial)
      addCandidate(scratchNodes, z, zDesc, zAnc, *c);
  }

  /// X u Y into scratchNodes, sorted.
  void mergeNodes(int x, int y) {
    const NodeSet &a = cands[x].nodes, &b = cands[y].nodes;
    scratchNodes.clear();
    std::merge(a.begin(), a.end(), b.begin(), b.end(),
               std::back_inserter(scratchNodes));
  }

  const Dag &dag;
  const SubsetCost &costFn;
  const PartitionOptions &opts;
  const size_t maxSize;
  /// Every evaluated subset, numbered as `entries`. Non-convex unions are
  /// never evaluated, so never stored; re-checking them is cheap.
  BitsTable memo;
  std::vector<Entry> entries;
  /// Per candidate, flat: its bits, and the strict descendants and
  /// ancestors of its nodes. The pairing loop reads them for thousands of
  /// partners per candidate.
  std::vector<uint64_t> pools;
  std::deque<int> work;
  bool stopped = false;
  // Reused, to keep allocation off the pairing loop.
  Bits z, zDesc, zAnc;
  NodeSet scratchNodes;
};

//===----------------------------------------------------------------------===//
// The selection
//===----------------------------------------------------------------------===//

/// Bounds of the exact selection, per segment and in all. On the graphs it
/// is meant for (hundreds of nodes, few parallel branches) a segment has at
/// most thousands of states; many branches side by side multiply them.
constexpr int kMaxStates = 1 << 18;
constexpr int64_t kMaxTotalStates = int64_t(1) << 20;
constexpr int64_t kMaxTransitionChecks = int64_t(1) << 25;
/// States expanded per size once the exact selection has given up.
constexpr size_t kBeamWidth = 256;

struct Selection {
  std::vector<int> groups; // candidate ids in run order
  double cost = 0;
  bool exact = true;
};

/// Chooses the partition from the candidates: the cheapest sequence of
/// candidates covering every node where each candidate's outside
/// predecessors are covered before it (so the group graph is acyclic, and
/// the sequence is a run order).
class Selector {
public:
  Selector(const Dag &dag, const std::vector<Candidate> &cands)
      : dag(dag), cands(cands), byMin(dag.n), byNode(dag.n),
        singles(cands.size(), 0) {
    for (int c = 0; c < static_cast<int>(cands.size()); ++c) {
      byMin[cands[c].nodes.front()].push_back(c);
      for (int v : cands[c].nodes) {
        byNode[v].push_back(c);
        // Singletons come first in `cands`, candidate v being {v}.
        singles[c] += cands[v].cost;
      }
    }
  }

  /// Where no candidate spans a position p (has nodes below and at or above
  /// it), every partition splits there, and all groups below run before all
  /// groups above: the segments between such positions are independent
  /// problems. Parallel branches numbered one after the other, or fused
  /// only within themselves, so cost a sum of states instead of a product.
  Selection select() {
    const int n = dag.n;
    std::vector<int> spanning(n + 1, 0);
    for (const Candidate &c : cands) {
      ++spanning[c.nodes.front() + 1];
      --spanning[c.nodes.back() + 1];
    }
    Selection all;
    int open = 0, start = 0;
    for (int p = 1; p <= n; ++p) {
      open += spanning[p];
      if (p < n && open > 0)
        continue;
      std::optional<Selection> seg;
      if (totalStates < kMaxTotalStates)
        seg = dp(start, p, 0);
      if (!seg) {
        seg = greedy(start, p);
        std::optional<Selection> beam = dp(start, p, kBeamWidth);
        if (beam && beam->cost <= seg->cost)
          seg = std::move(beam);
        all.exact = false;
      }
      all.groups.insert(all.groups.end(), seg->groups.begin(),
                        seg->groups.end());
      all.cost += seg->cost;
      start = p;
    }
    return all;
  }

private:
  /// Dynamic programming over the nodes [start, end), those below being
  /// run already. A state is the set of nodes run so far (always
  /// predecessor closed); a candidate can run next if disjoint from it and
  /// its outside predecessors are in it, and then its minimum node has all
  /// predecessors in it, which bounds the candidates tried. States are
  /// expanded by size, so a state's cost is final when it is expanded.
  /// Exact when beamWidth is 0 (nullopt past the bounds); otherwise only the
  /// beamWidth states of each size that save most over singletons are
  /// expanded.
  std::optional<Selection> dp(int start, int end, size_t beamWidth) {
    const int words = dag.words, len = end - start;
    BitsTable table(words);
    std::vector<double> best, single; // cost so far; same nodes as singletons
    std::vector<int> parent, via;
    std::vector<std::vector<int>> bySize(len + 1);
    Bits key(words, 0);
    for (int v = 0; v < start; ++v)
      setBit(key, v);
    table.insert(key.data());
    best.push_back(0);
    single.push_back(0);
    parent.push_back(-1);
    via.push_back(-1);
    bySize[0].push_back(0);

    int64_t checks = 0;
    auto giveUp = [&]() -> std::optional<Selection> {
      totalStates += table.size();
      return std::nullopt;
    };
    std::vector<int> sources;
    for (int size = 0; size < len; ++size) {
      std::vector<int> &level = bySize[size];
      if (beamWidth && level.size() > beamWidth) {
        std::nth_element(level.begin(), level.begin() + beamWidth, level.end(),
                         [&](int a, int b) {
                           return best[a] - single[a] < best[b] - single[b];
                         });
        level.resize(beamWidth);
      }
      for (int s : level) {
        sources.clear();
        for (int v = start; v < end; ++v) {
          const uint64_t *cov = table.key(s);
          if (testBit(cov, v))
            continue;
          if (std::all_of(dag.preds[v].begin(), dag.preds[v].end(),
                          [&](int p) { return testBit(cov, p); }))
            sources.push_back(v);
        }
        for (int m : sources)
          for (int c : byMin[m]) {
            if (!beamWidth && ++checks > kMaxTransitionChecks)
              return giveUp();
            const Candidate &cand = cands[c];
            // Re-read: inserting may move the table's storage.
            const uint64_t *cov = table.key(s);
            if (!disjoint(cand.bits.data(), cov, words) ||
                !subsetOf(cand.extPreds.data(), cov, words))
              continue;
            for (int i = 0; i < words; ++i)
              key[i] = cov[i] | cand.bits[i];
            double cost = best[s] + cand.cost;
            auto [t, isNew] = table.insert(key.data());
            if (isNew) {
              if (!beamWidth && (table.size() > kMaxStates ||
                                 totalStates + table.size() > kMaxTotalStates))
                return giveUp();
              best.push_back(cost);
              single.push_back(single[s] + singles[c]);
              parent.push_back(s);
              via.push_back(c);
              bySize[size + cand.nodes.size()].push_back(t);
            } else if (cost < best[t]) {
              best[t] = cost;
              parent[t] = s;
              via[t] = c;
            }
          }
      }
    }
    if (!beamWidth)
      totalStates += table.size();

    std::fill(key.begin(), key.end(), 0);
    for (int v = 0; v < end; ++v)
      setBit(key, v);
    int last = table.find(key.data());
    // The lowest node not run yet can always run alone, so the segment is
    // always covered.
    assert(last >= 0 && "segment not covered");
    if (last < 0)
      return std::nullopt;
    Selection sel;
    sel.cost = best[last];
    sel.exact = !beamWidth;
    for (int t = last; parent[t] >= 0; t = parent[t])
      sel.groups.push_back(via[t]);
    std::reverse(sel.groups.begin(), sel.groups.end());
    return sel;
  }

  /// The last resort: run the lowest node not run yet (always ready) inside
  /// the ready candidate that saves most over its singletons. Never worse
  /// than all singletons, as every step saves >= 0.
  Selection greedy(int start, int end) {
    const int words = dag.words;
    Selection sel;
    sel.exact = false;
    Bits covered(words, 0);
    for (int v = 0; v < start; ++v)
      setBit(covered, v);
    for (int u = start; u < end; ++u) {
      if (testBit(covered, u))
        continue;
      int bestC = u;
      double bestSaving = 0;
      for (int c : byNode[u]) {
        const Candidate &cand = cands[c];
        if (!disjoint(cand.bits.data(), covered.data(), words) ||
            !subsetOf(cand.extPreds.data(), covered.data(), words))
          continue;
        double saving = singles[c] - cand.cost;
        if (saving > bestSaving) {
          bestSaving = saving;
          bestC = c;
        }
      }
      for (int i = 0; i < words; ++i)
        covered[i] |= cands[bestC].bits[i];
      sel.groups.push_back(bestC);
      sel.cost += cands[bestC].cost;
    }
    return sel;
  }

  const Dag &dag;
  const std::vector<Candidate> &cands;
  std::vector<std::vector<int>> byMin, byNode;
  std::vector<double> singles; // per candidate: its nodes' singleton costs
  int64_t totalStates = 0;     // of the exact runs so far
};

} // namespace

std::optional<PartitionResult> partitionGraph(const PartitionGraph &graph,
                                              const SubsetCost &cost,
                                              const PartitionOptions &opts) {
  Dag dag;
  if (!dag.build(graph)) {
    assert(false && "PartitionGraph edges must go from lower to higher");
    return std::nullopt;
  }
  Search search(dag, cost, opts);
  if (!search.seedSingletons())
    return std::nullopt;
  search.close();

  PartitionResult result;
  result.evaluations = search.evaluations;
  result.subsetsKept = static_cast<int>(search.cands.size());
  result.truncated = search.truncated;
  Selection sel = Selector(dag, search.cands).select();
  result.truncated |= !sel.exact;
  result.cost = sel.cost;
  for (int c : sel.groups)
    result.groups.push_back(search.cands[c].nodes);
  return result;
}

//===----------------------------------------------------------------------===//
// Brute force
//===----------------------------------------------------------------------===//

namespace {

/// Every partition into valid blocks, as masks: the block holding the lowest
/// unassigned node is chosen first, so each partition is met once.
class BruteForce {
public:
  BruteForce(const PartitionGraph &g, const SubsetCost &cost)
      : n(g.numNodes), costFn(cost), adj(n, 0), succMask(n, 0), desc(n, 0),
        anc(n, 0), state(size_t(1) << n, Unknown), blockCost(size_t(1) << n) {
    for (auto [from, to] : g.edges) {
      adj[from] |= 1u << to;
      adj[to] |= 1u << from;
      succMask[from] |= 1u << to;
    }
    for (int v = n - 1; v >= 0; --v)
      for (int s = 0; s < n; ++s)
        if (succMask[v] >> s & 1)
          desc[v] |= (1u << s) | desc[s];
    for (int v = 0; v < n; ++v)
      for (int s = 0; s < n; ++s)
        if (desc[v] >> s & 1)
          anc[s] |= 1u << v;
  }

  void run() { recurse((1u << n) - 1, 0); }

  int n;
  const SubsetCost &costFn;
  int evaluations = 0;
  int kept = 0;
  bool found = false;
  double bestCost = 0;
  std::vector<uint32_t> bestBlocks; // in a run order

private:
  enum State : uint8_t { Unknown, Invalid, Valid };

  bool valid(uint32_t mask) {
    if (state[mask] != Unknown)
      return state[mask] == Valid;
    state[mask] = Invalid;
    // Weakly connected: flood from the lowest node.
    uint32_t seen = mask & -mask, frontier = seen;
    while (frontier) {
      int v = __builtin_ctz(frontier);
      frontier &= frontier - 1;
      uint32_t fresh = adj[v] & mask & ~seen;
      seen |= fresh;
      frontier |= fresh;
    }
    if (seen != mask)
      return false;
    uint32_t d = 0, a = 0;
    for (uint32_t m = mask; m; m &= m - 1) {
      int v = __builtin_ctz(m);
      d |= desc[v];
      a |= anc[v];
    }
    if (d & a & ~mask)
      return false;
    NodeSet nodes;
    for (uint32_t m = mask; m; m &= m - 1)
      nodes.push_back(__builtin_ctz(m));
    std::optional<double> c = costFn(nodes);
    ++evaluations;
    if (!c)
      return false;
    ++kept;
    blockCost[mask] = *c;
    state[mask] = Valid;
    return true;
  }

  void recurse(uint32_t remaining, double cost) {
    if (!remaining) {
      leaf(cost);
      return;
    }
    uint32_t low = remaining & -remaining;
    uint32_t rest = remaining & ~low;
    // Every subset of `rest`, joined to the lowest remaining node.
    for (uint32_t sub = rest;; sub = (sub - 1) & rest) {
      uint32_t block = sub | low;
      if (valid(block)) {
        blocks.push_back(block);
        recurse(remaining & ~block, cost + blockCost[block]);
        blocks.pop_back();
      }
      if (!sub)
        break;
    }
  }

  /// Keeps the partition if its group graph is acyclic (Kahn's algorithm).
  void leaf(double cost) {
    if (found && !(cost < bestCost))
      return;
    int k = static_cast<int>(blocks.size());
    std::vector<int> groupOf(n);
    for (int g = 0; g < k; ++g)
      for (uint32_t m = blocks[g]; m; m &= m - 1)
        groupOf[__builtin_ctz(m)] = g;
    std::vector<uint32_t> groupSucc(k, 0);
    for (int v = 0; v < n; ++v)
      for (uint32_t m = succMask[v]; m; m &= m - 1) {
        int gs = groupOf[v], gt = groupOf[__builtin_ctz(m)];
        if (gs != gt)
          groupSucc[gs] |= 1u << gt;
      }
    std::vector<int> indeg(k, 0);
    for (int g = 0; g < k; ++g)
      for (uint32_t m = groupSucc[g]; m; m &= m - 1)
        ++indeg[__builtin_ctz(m)];
    std::vector<uint32_t> order;
    std::vector<int> ready;
    for (int g = 0; g < k; ++g)
      if (!indeg[g])
        ready.push_back(g);
    while (!ready.empty()) {
      int g = ready.back();
      ready.pop_back();
      order.push_back(blocks[g]);
      for (uint32_t m = groupSucc[g]; m; m &= m - 1)
        if (!--indeg[__builtin_ctz(m)])
          ready.push_back(__builtin_ctz(m));
    }
    if (static_cast<int>(order.size()) != k)
      return;
    found = true;
    bestCost = cost;
    bestBlocks = std::move(order);
  }

  std::vector<uint32_t> adj, succMask, desc, anc;
  std::vector<State> state;
  std::vector<double> blockCost;
  std::vector<uint32_t> blocks;
};

} // namespace

std::optional<PartitionResult> bruteForcePartition(const PartitionGraph &graph,
                                                   const SubsetCost &cost) {
  // Masks are 32 bits and the tables 2^n entries; past ~12 nodes the
  // enumeration is too slow to be useful anyway.
  if (graph.numNodes < 0 || graph.numNodes > 20)
    return std::nullopt;
  for (auto [from, to] : graph.edges)
    if (from < 0 || to >= graph.numNodes || from >= to)
      return std::nullopt;
  BruteForce bf(graph, cost);
  bf.run();
  if (!bf.found)
    return std::nullopt;
  PartitionResult result;
  result.cost = bf.bestCost;
  result.evaluations = bf.evaluations;
  result.subsetsKept = bf.kept;
  for (uint32_t mask : bf.bestBlocks) {
    NodeSet nodes;
    for (uint32_t m = mask; m; m &= m - 1)
      nodes.push_back(__builtin_ctz(m));
    result.groups.push_back(std::move(nodes));
  }
  return result;
}

} // namespace cuts

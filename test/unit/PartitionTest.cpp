// Tests of the partition search (perfmodel/Partition.h).
#include "perfmodel/Partition.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

using namespace cuts;

namespace {

//===----------------------------------------------------------------------===//
// Independent checks (deliberately naive: they re-derive what the library
// computes with bitsets)
//===----------------------------------------------------------------------===//

/// reach[u][v]: a path of one or more edges goes from u to v.
std::vector<std::vector<bool>> reachability(const PartitionGraph &g) {
  int n = g.numNodes;
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (auto [a, b] : g.edges)
    reach[a][b] = true;
  for (int k = 0; k < n; ++k)
    for (int i = 0; i < n; ++i)
      if (reach[i][k])
        for (int j = 0; j < n; ++j)
          if (reach[k][j])
            reach[i][j] = true;
  return reach;
}

bool isConvex(const PartitionGraph &g, const NodeSet &s) {
  auto reach = reachability(g);
  std::set<int> in(s.begin(), s.end());
  for (int v = 0; v < g.numNodes; ++v) {
    if (in.count(v))
      continue;
    bool fromS = false, toS = false;
    for (int u : s) {
      fromS |= reach[u][v];
      toS |= reach[v][u];
    }
    if (fromS && toS)
      return false;
  }
  return true;
}

bool isConnected(const PartitionGraph &g, const NodeSet &s) {
  if (s.empty())
    return false;
  std::set<int> in(s.begin(), s.end()), seen{s.front()};
  std::vector<int> stack{s.front()};
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    for (auto [a, b] : g.edges) {
      int w = a == v ? b : b == v ? a : -1;
      if (w >= 0 && in.count(w) && seen.insert(w).second)
        stack.push_back(w);
    }
  }
  return seen.size() == in.size();
}

/// Each node in exactly one group, groups sorted, connected and convex, and
/// every edge between groups goes forward in the returned order.
bool isValidPartition(const PartitionGraph &g,
                      const std::vector<NodeSet> &groups) {
  std::vector<int> groupOf(g.numNodes, -1);
  for (int i = 0; i < static_cast<int>(groups.size()); ++i) {
    const NodeSet &s = groups[i];
    if (!std::is_sorted(s.begin(), s.end()) || !isConnected(g, s) ||
        !isConvex(g, s))
      return false;
    for (int v : s) {
      if (v < 0 || v >= g.numNodes || groupOf[v] >= 0)
        return false;
      groupOf[v] = i;
    }
  }
  for (int v = 0; v < g.numNodes; ++v)
    if (groupOf[v] < 0)
      return false;
  for (auto [a, b] : g.edges)
    if (groupOf[a] > groupOf[b])
      return false;
  return true;
}

/// Wraps a cost function: counts calls per subset and notes any call on a
/// subset the contract excludes. (Catch2 assertions throw, and the library is
/// no place to unwind through, so violations are checked afterwards.)
struct Recorder {
  PartitionGraph graph;
  SubsetCost inner;
  std::map<NodeSet, int> calls;
  std::map<NodeSet, double> withCost;
  int badCalls = 0;

  SubsetCost fn() {
    return [this](const NodeSet &s) -> std::optional<double> {
      ++calls[s];
      if (!std::is_sorted(s.begin(), s.end()) || !isConnected(graph, s) ||
          !isConvex(graph, s))
        ++badCalls;
      std::optional<double> c = inner(s);
      if (c)
        withCost[s] = *c;
      return c;
    };
  }

  int maxCallsPerSubset() const {
    int m = 0;
    for (auto &[s, k] : calls)
      m = std::max(m, k);
    return m;
  }
};

/// The optimum over partitions into the given subsets with an acyclic group
/// graph. Unlike the library's DP it does not build a run order while
/// choosing: it picks the block of the lowest uncovered node and checks
/// acyclicity at the end.
std::optional<double>
bestOverSubsets(const PartitionGraph &g,
                const std::map<NodeSet, double> &subsets) {
  int n = g.numNodes;
  std::vector<std::pair<NodeSet, double>> list(subsets.begin(), subsets.end());
  std::vector<int> groupOf(n, -1);
  std::optional<double> best;
  std::function<void(int, double)> go = [&](int groups, double cost) {
    int u = 0;
    while (u < n && groupOf[u] >= 0)
      ++u;
    if (u == n) {
      // Acyclic group graph: repeatedly remove a group with no incoming
      // edge from a remaining group.
      std::vector<bool> done(groups, false);
      for (int round = 0; round < groups; ++round) {
        int pick = -1;
        for (int gi = 0; gi < groups && pick < 0; ++gi) {
          if (done[gi])
            continue;
          bool free = true;
          for (auto [a, b] : g.edges)
            if (groupOf[b] == gi && groupOf[a] != gi && !done[groupOf[a]])
              free = false;
          if (free)
            pick = gi;
        }
        if (pick < 0)
          return;
        done[pick] = true;
      }
      if (!best || cost < *best)
        best = cost;
      return;
    }
    for (auto &[s, c] : list) {
      if (!std::binary_search(s.begin(), s.end(), u))
        continue;
      bool free = true;
      for (int v : s)
        free &= groupOf[v] < 0;
      if (!free)
        continue;
      for (int v : s)
        groupOf[v] = groups;
      go(groups + 1, cost + c);
      for (int v : s)
        groupOf[v] = -1;
    }
  };
  go(0, 0);
  return best;
}

double singletonCost(const PartitionGraph &g, const SubsetCost &cost) {
  double total = 0;
  for (int v = 0; v < g.numNodes; ++v)
    total += *cost({v});
  return total;
}

//===----------------------------------------------------------------------===//
// Graphs and cost functions
//===----------------------------------------------------------------------===//

PartitionGraph chain(int n) {
  PartitionGraph g{n, {}};
  for (int i = 0; i + 1 < n; ++i)
    g.edges.push_back({i, i + 1});
  return g;
}

PartitionGraph randomDag(std::mt19937 &rng, int n, double p) {
  PartitionGraph g{n, {}};
  std::bernoulli_distribution edge(p);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (edge(rng))
        g.edges.push_back({i, j});
  return g;
}

/// Benefits compose: cost(S) = sum of node weights - saving per internal
/// edge; S containing both nodes of a forbidden pair is no kernel.
struct AdditiveCost {
  PartitionGraph graph;
  std::vector<double> weight;
  std::map<std::pair<int, int>, double> saving;
  std::set<std::pair<int, int>> forbidden;

  std::optional<double> operator()(const NodeSet &s) const {
    for (auto [a, b] : forbidden)
      if (std::binary_search(s.begin(), s.end(), a) &&
          std::binary_search(s.begin(), s.end(), b))
        return std::nullopt;
    double c = 0;
    for (int v : s)
      c += weight[v];
    for (auto [a, b] : graph.edges)
      if (std::binary_search(s.begin(), s.end(), a) &&
          std::binary_search(s.begin(), s.end(), b))
        c -= saving.at({a, b});
    return c;
  }
};

AdditiveCost randomAdditive(std::mt19937 &rng, const PartitionGraph &g,
                            double forbidP) {
  AdditiveCost c{g, {}, {}, {}};
  std::uniform_real_distribution<double> w(1, 10), s(0, 1);
  std::bernoulli_distribution forbid(forbidP);
  for (int v = 0; v < g.numNodes; ++v)
    c.weight.push_back(w(rng));
  for (auto e : g.edges)
    c.saving[e] = s(rng);
  for (int a = 0; a < g.numNodes; ++a)
    for (int b = a + 1; b < g.numNodes; ++b)
      if (forbid(rng))
        c.forbidden.insert({a, b});
  return c;
}

/// No structure at all: each subset's cost is its weight scaled by a
/// pseudo-random factor in [0.5, 1.3), fixed per subset; some subsets are no
/// kernel. Merges may help or hurt in any combination.
SubsetCost randomCost(uint32_t seed, const std::vector<double> &weight) {
  return [seed, weight](const NodeSet &s) -> std::optional<double> {
    double w = 0;
    for (int v : s)
      w += weight[v];
    if (s.size() == 1)
      return w;
    std::seed_seq seq(s.begin(), s.end());
    std::vector<uint32_t> h(1);
    seq.generate(h.begin(), h.end());
    uint32_t x = h[0] ^ seed;
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    if (x % 7 == 0)
      return std::nullopt;
    return w * (0.5 + 0.8 * double(x % 1000) / 1000);
  };
}

PartitionGraph diamond() { return {4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}}; }
/// a -> b -> c -> add, a -> add.
PartitionGraph residual() { return {4, {{0, 1}, {1, 2}, {2, 3}, {0, 3}}}; }
/// A split into three branches of different lengths joined by a concat.
PartitionGraph concatBranches() {
  return {
      8,
      {{0, 1}, {0, 2}, {0, 3}, {1, 4}, {4, 6}, {2, 5}, {5, 6}, {3, 6}, {6, 7}}};
}
/// Two residual blocks in a row: like ResNet, with a projection shortcut.
PartitionGraph twoResidualBlocks() {
  return {9,
          {{0, 1},
           {1, 2},
           {2, 3},
           {0, 3},
           {3, 4},
           {4, 5},
           {5, 7},
           {3, 6},
           {6, 7},
           {7, 8}}};
}

/// Runs the search and the checks every graph and cost must pass.
void checkSearch(const PartitionGraph &g, const SubsetCost &cost,
                 bool benefitsCompose) {
  Recorder rec{g, cost, {}, {}, 0};
  auto r = partitionGraph(g, rec.fn());
  REQUIRE(r);
  CHECK(!r->truncated);
  CHECK(rec.badCalls == 0);
  CHECK(rec.maxCallsPerSubset() == 1);
  CHECK(r->evaluations == static_cast<int>(rec.calls.size()));
  CHECK(isValidPartition(g, r->groups));
  double sum = 0;
  for (const NodeSet &s : r->groups) {
    REQUIRE(rec.withCost.count(s));
    sum += rec.withCost[s];
  }
  CHECK(r->cost == Approx(sum));
  // (i) Exact over what the search evaluated. The DP uses only the kept
  // candidates; an evaluated subset that was not kept costs at least as much
  // as the two kept subsets it came from, so the optimum is the same.
  auto overEvaluated = bestOverSubsets(g, rec.withCost);
  REQUIRE(overEvaluated);
  CHECK(r->cost == Approx(*overEvaluated));
  // (iv) Never worse than running every op alone.
  CHECK(r->cost <= singletonCost(g, cost) + 1e-9);
  // (iii) Never better than the true optimum; equal to it when benefits
  // compose: a kernel splits into two connected convex parts joined by an
  // edge, whose saving makes the merge beneficial, so Algorithm 1 reaches
  // every kernel.
  auto optimum = bruteForcePartition(g, cost);
  REQUIRE(optimum);
  CHECK(isValidPartition(g, optimum->groups));
  CHECK(r->cost >= optimum->cost - 1e-9);
  if (benefitsCompose)
    CHECK(r->cost == Approx(optimum->cost));
}

} // namespace

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

TEST_CASE("A -> B -> C fuses completely when every fusion helps",
          "[partition]") {
  // The thesis's example (§3.1): R grows to {A,B},{C} and {A},{B,C}, then
  // {A,B,C}.
  PartitionGraph g = chain(3);
  Recorder rec{g,
               [](const NodeSet &s) -> std::optional<double> {
                 return 1.0 + 0.4 * (s.size() - 1);
               },
               {},
               {},
               0};
  auto r = partitionGraph(g, rec.fn());
  REQUIRE(r);
  CHECK(r->groups == std::vector<NodeSet>{{0, 1, 2}});
  CHECK(r->cost == Approx(1.8));
  CHECK(rec.calls.count({0, 1}));
  CHECK(rec.calls.count({1, 2}));
  CHECK(rec.calls.count({0, 1, 2}));
  // {A, C} is not consecutive, so never a merge.
  CHECK(!rec.calls.count({0, 2}));
  CHECK(rec.calls.size() == 6);
  CHECK(r->evaluations == 6);
  CHECK(r->subsetsKept == 6);
  CHECK(!r->truncated);
}

TEST_CASE("no fusion when every fusion hurts", "[partition]") {
  PartitionGraph g = chain(4);
  auto r = partitionGraph(g, [](const NodeSet &s) -> std::optional<double> {
    return 1.0 + 1.5 * (s.size() - 1);
  });
  REQUIRE(r);
  CHECK(r->groups == std::vector<NodeSet>{{0}, {1}, {2}, {3}});
  CHECK(r->cost == Approx(4));
  // Singletons and the three pairs; nothing larger is reached.
  CHECK(r->evaluations == 7);
  CHECK(r->subsetsKept == 4);
}

TEST_CASE("a singleton without a cost fails the search", "[partition]") {
  PartitionGraph g = chain(3);
  auto r = partitionGraph(g, [](const NodeSet &s) -> std::optional<double> {
    if (s == NodeSet{1})
      return std::nullopt;
    return 1.0;
  });
  CHECK(!r);
}

TEST_CASE("an empty graph has an empty partition", "[partition]") {
  auto r = partitionGraph(PartitionGraph{}, [](const NodeSet &) {
    return std::optional<double>(1.0);
  });
  REQUIRE(r);
  CHECK(r->groups.empty());
  CHECK(r->cost == 0);
}

TEST_CASE("fusion rules that forbid a pair split the chain", "[partition]") {
  // 0 -> 1 -> 2 -> 3 -> 4, with 1 and 3 never in one kernel (two convs).
  PartitionGraph g = chain(5);
  AdditiveCost cost{g, {3, 5, 1, 5, 1}, {}, {{1, 3}}};
  for (auto e : g.edges)
    cost.saving[e] = 0.5;
  cost.saving[{1, 2}] = 0.9;
  auto r = partitionGraph(g, cost);
  REQUIRE(r);
  CHECK(r->groups == std::vector<NodeSet>{{0, 1, 2}, {3, 4}});
  CHECK(r->cost == Approx(15 - 0.5 - 0.9 - 0.5));
}

TEST_CASE("the group of the lowest node need not run first", "[partition]") {
  // 0 -> 2 <- 1: {0, 2} is the good kernel, but it must wait for {1}. A
  // selection that always places the lowest uncovered node's group next
  // would miss it.
  PartitionGraph g{3, {{0, 2}, {1, 2}}};
  AdditiveCost cost{g, {1, 1, 1}, {{{0, 2}, 0.5}, {{1, 2}, 0.1}}, {{1, 2}}};
  auto r = partitionGraph(g, cost);
  REQUIRE(r);
  CHECK(r->groups == std::vector<NodeSet>{{1}, {0, 2}});
  CHECK(r->cost == Approx(2.5));
  checkSearch(g, cost, true);
}

TEST_CASE("small DAGs match the brute force", "[partition]") {
  std::mt19937 rng(7);
  std::vector<PartitionGraph> graphs = {chain(6), diamond(), residual(),
                                        concatBranches(), twoResidualBlocks()};
  for (const PartitionGraph &g : graphs) {
    for (int trial = 0; trial < 10; ++trial) {
      INFO("nodes " << g.numNodes << " trial " << trial);
      checkSearch(g, randomAdditive(rng, g, trial % 2 ? 0.2 : 0.0), true);
      std::vector<double> w(g.numNodes);
      for (double &x : w)
        x = std::uniform_real_distribution<double>(1, 10)(rng);
      checkSearch(g, randomCost(rng(), w), false);
    }
  }
}

TEST_CASE("random DAGs match the brute force", "[partition]") {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 60; ++trial) {
    int n = 6 + trial % 5;
    PartitionGraph g = randomDag(rng, n, trial % 3 == 0 ? 0.5 : 0.3);
    INFO("trial " << trial << " nodes " << n << " edges " << g.edges.size());
    checkSearch(g, randomAdditive(rng, g, 0.15), true);
    std::vector<double> w(n);
    for (double &x : w)
      x = std::uniform_real_distribution<double>(1, 10)(rng);
    checkSearch(g, randomCost(rng(), w), false);
  }
}

TEST_CASE("Algorithm 1 misses X+Y+Z when X+Y and Y+Z both hurt",
          "[partition]") {
  // The thesis's stated limitation (§3.1): three consecutive subsets are
  // fused only if fusing two of them helped first; it observes that the
  // triple "very rarely" helps otherwise and excludes the case.
  PartitionGraph g = chain(3);
  SubsetCost cost = [](const NodeSet &s) -> std::optional<double> {
    switch (s.size()) {
    case 1:
      return 1.0;
    case 2:
      return 2.5;
    default:
      return 2.0;
    }
  };
  auto r = partitionGraph(g, cost);
  REQUIRE(r);
  CHECK(r->groups == std::vector<NodeSet>{{0}, {1}, {2}});
  CHECK(r->cost == Approx(3));
  auto optimum = bruteForcePartition(g, cost);
  REQUIRE(optimum);
  CHECK(optimum->groups == std::vector<NodeSet>{{0, 1, 2}});
  CHECK(optimum->cost == Approx(2));
}

TEST_CASE("non-convex subsets are never evaluated", "[partition]") {
  // a -> b -> c and a -> c: {a} and {c} touch through a -> c, but {a, c}
  // would leave through b and come back.
  PartitionGraph g{3, {{0, 1}, {1, 2}, {0, 2}}};
  Recorder rec{g,
               [](const NodeSet &s) -> std::optional<double> {
                 return 1.0 + 0.5 * (s.size() - 1);
               },
               {},
               {},
               0};
  auto r = partitionGraph(g, rec.fn());
  REQUIRE(r);
  CHECK(rec.badCalls == 0);
  CHECK(!rec.calls.count({0, 2}));
  CHECK(r->groups == std::vector<NodeSet>{{0, 1, 2}});
  // The brute force honours the same contract.
  Recorder bf{g, rec.inner, {}, {}, 0};
  auto opt = bruteForcePartition(g, bf.fn());
  REQUIRE(opt);
  CHECK(bf.badCalls == 0);
  CHECK(!bf.calls.count({0, 2}));
  CHECK(opt->cost == Approx(r->cost));
}

TEST_CASE("each subset is evaluated at most once", "[partition]") {
  // Every fusion helps, so each subset is reachable from many pairs.
  PartitionGraph g = twoResidualBlocks();
  Recorder rec{g,
               [](const NodeSet &s) -> std::optional<double> {
                 return 1.0 + 0.3 * (s.size() - 1);
               },
               {},
               {},
               0};
  auto r = partitionGraph(g, rec.fn());
  REQUIRE(r);
  CHECK(rec.maxCallsPerSubset() == 1);
  CHECK(r->evaluations == static_cast<int>(rec.calls.size()));
  CHECK(r->groups.size() == 1);
}

TEST_CASE("the bounds truncate the search and are reported", "[partition]") {
  PartitionGraph g = chain(10);
  SubsetCost cost = [](const NodeSet &s) -> std::optional<double> {
    return 1.0 + 0.5 * (s.size() - 1);
  };
  SECTION("maxSubsetSize") {
    PartitionOptions opts;
    opts.maxSubsetSize = 3;
    auto r = partitionGraph(g, cost, opts);
    REQUIRE(r);
    CHECK(r->truncated);
    CHECK(isValidPartition(g, r->groups));
    for (const NodeSet &s : r->groups)
      CHECK(s.size() <= 3);
    // Best with groups of at most 3: 3 + 3 + 3 + 1.
    CHECK(r->groups.size() == 4);
    CHECK(r->cost == Approx(3 * 2.0 + 1.0));
  }
  SECTION("maxEvaluations") {
    PartitionOptions opts;
    opts.maxEvaluations = 15;
    Recorder rec{g, cost, {}, {}, 0};
    auto r = partitionGraph(g, rec.fn(), opts);
    REQUIRE(r);
    CHECK(r->truncated);
    CHECK(r->evaluations == 15);
    CHECK(rec.calls.size() == 15);
    CHECK(isValidPartition(g, r->groups));
    CHECK(r->cost < 10);
  }
  SECTION("unbounded") {
    auto r = partitionGraph(g, cost);
    REQUIRE(r);
    CHECK(!r->truncated);
    CHECK(r->groups.size() == 1);
  }
}

/// A source, `branches` chains of `length` ops, and a concat: like an
/// Inception module, with the chains numbered one after the other.
PartitionGraph parallelBranches(int branches, int length) {
  PartitionGraph g{1, {}};
  std::vector<int> tails;
  for (int b = 0; b < branches; ++b) {
    int x = 0;
    for (int k = 0; k < length; ++k) {
      int y = g.numNodes++;
      g.edges.push_back({x, y});
      x = y;
    }
    tails.push_back(x);
  }
  int concat = g.numNodes++;
  for (int t : tails)
    g.edges.push_back({t, concat});
  return g;
}

TEST_CASE("many parallel branches stay exact when fused within branches",
          "[partition]") {
  // Eight branches side by side have 11^8 sets of nodes run so far; the
  // selection must split the graph where no candidate spans, not give up.
  PartitionGraph g = parallelBranches(8, 10);
  const int concat = g.numNodes - 1;
  SubsetCost cost = [&](const NodeSet &s) -> std::optional<double> {
    bool ends = std::binary_search(s.begin(), s.end(), 0) ||
                std::binary_search(s.begin(), s.end(), concat);
    if (s.size() > 1 && ends)
      return std::nullopt;
    return 1.0 + 0.5 * (s.size() - 1);
  };
  auto r = partitionGraph(g, cost);
  REQUIRE(r);
  CHECK(!r->truncated);
  CHECK(isValidPartition(g, r->groups));
  // The source, each branch as one kernel, the concat.
  CHECK(r->groups.size() == 10);
  CHECK(r->cost == Approx(2 + 8 * 5.5));
}

TEST_CASE("the selection falls back when its states explode", "[partition]") {
  // Ten branches of three ops, and kernels that tie the source to a branch
  // head or a branch tail to the concat: no position splits the graph, and
  // the sets of nodes run so far number about 4^10.
  const int branches = 10, length = 3;
  PartitionGraph g = parallelBranches(branches, length);
  const int concat = g.numNodes - 1;
  SubsetCost cost = [&](const NodeSet &s) -> std::optional<double> {
    if (s.size() == 1)
      return 1.0;
    if (s.size() > 2)
      return std::nullopt;
    bool head = s[0] == 0, tail = s[1] == concat;
    return head || tail ? 1.5 : 2.5;
  };
  auto r = partitionGraph(g, cost);
  REQUIRE(r);
  CHECK(r->truncated);
  CHECK(isValidPartition(g, r->groups));
  // One head with the source and one tail with the concat.
  CHECK(r->cost == Approx(g.numNodes - 1.0));
}

TEST_CASE("a 300-node chain with skips completes", "[partition]") {
  // Like a ResNet after clean-up: every op feeds the next, every other op
  // also feeds the one after (residual-style skips), and every fourth op is
  // "complex" (a conv) and two of them never share a kernel.
  const int n = 300;
  PartitionGraph g{n, {}};
  for (int i = 0; i + 1 < n; ++i) {
    g.edges.push_back({i, i + 1});
    if (i % 2 == 0 && i + 2 < n)
      g.edges.push_back({i, i + 2});
  }
  std::mt19937 rng(300);
  AdditiveCost cost = randomAdditive(rng, g, 0);
  // AdditiveCost with the conv pairs forbidden, without its scans over all
  // edges and pairs.
  SubsetCost fast = [&](const NodeSet &s) -> std::optional<double> {
    int complexOps = 0;
    for (int v : s)
      complexOps += v % 4 == 0;
    if (complexOps > 1)
      return std::nullopt;
    double c = 0;
    for (int v : s)
      c += cost.weight[v];
    for (int v : s) {
      if (std::binary_search(s.begin(), s.end(), v + 1))
        c -= cost.saving.at({v, v + 1});
      if (v % 2 == 0 && std::binary_search(s.begin(), s.end(), v + 2))
        c -= cost.saving.at({v, v + 2});
    }
    return c;
  };
  std::map<NodeSet, int> calls;
  SubsetCost counted = [&](const NodeSet &s) {
    ++calls[s];
    return fast(s);
  };
  auto r = partitionGraph(g, counted);
  REQUIRE(r);
  CHECK(!r->truncated);
  CHECK(isValidPartition(g, r->groups));
  int maxCalls = 0;
  for (auto &[s, k] : calls)
    maxCalls = std::max(maxCalls, k);
  CHECK(maxCalls == 1);
  // Every kernel holds at most one conv, and fusing helps.
  double singles = 0;
  for (double w : cost.weight)
    singles += w;
  CHECK(r->cost < singles);
  for (const NodeSet &s : r->groups) {
    int complexOps = 0;
    for (int v : s)
      complexOps += v % 4 == 0;
    CHECK(complexOps <= 1);
  }
}

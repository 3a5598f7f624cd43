// Library memsets moved off a captured graph's chain (GraphMemsets.h): the
// anchor each memset may wait on, and the edges a fake driver's graph ends
// with.
#include "cuts/rt/GraphMemsets.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <utility>

using namespace cuts::rt;
using namespace cuts::rt::cuda;
using Kind = MemsetGraphNode::Kind;

namespace {

// A chain of nodes, each depending on the one before.
std::vector<MemsetGraphNode> chain(std::vector<Kind> kinds) {
  std::vector<MemsetGraphNode> g(kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    g[i].kind = kinds[i];
    if (i > 0) {
      g[i].deps = {int(i - 1)};
      g[i - 1].users = {int(i)};
    }
  }
  return g;
}

} // namespace

TEST_CASE("a workspace memset waits for the last node before it that is not "
          "a generated kernel",
          "[runtime][graph]") {
  const Kind O = MemsetGraphNode::Ours, M = MemsetGraphNode::WorkspaceMemset,
             X = MemsetGraphNode::Other;
  CHECK(memsetAnchor(chain({X, O, O, M, X}), 3) == 0);
  CHECK(memsetAnchor(chain({O, O, M, X}), 2) == -1); // the graph's start
  CHECK(memsetAnchor(chain({X, M, X}), 1) == 0);     // nothing moves
  CHECK(memsetAnchor(chain({X, O, X, O, M, X}), 4) == 2);
  // Not in the workspace, or more than one user: it stays.
  CHECK(memsetAnchor(chain({X, O, X, X}), 2) == 1);
  auto two = chain({X, O, M, X});
  two[2].users.push_back(0);
  CHECK(memsetAnchor(two, 2) == 1);
  // A join of generated kernels stops the walk there.
  auto join = chain({O, O, O, M, X});
  join[2].deps = {0, 1};
  CHECK(memsetAnchor(join, 3) == 2);
}

namespace {

// A graph the fake driver's functions read and edit: node i is
// reinterpret_cast<CUgraphNode>(i + 1).
struct FakeGraph {
  std::vector<int> types;                   // CU_GRAPH_NODE_TYPE_*
  std::vector<CUfunction> funcs;            // kernels
  std::vector<CUdeviceptr> dsts;            // memsets
  std::vector<size_t> widths;               // their bytes (empty: 4 each)
  std::map<std::pair<int, int>, int> edges; // (from, to): edge type
} fake;

constexpr CUresult kLossyQuery = 402; // CUDA_ERROR_LOSSY_QUERY

// The edges without their types.
std::set<std::pair<int, int>> edgeSet() {
  std::set<std::pair<int, int>> out;
  for (const auto &e : fake.edges)
    out.insert(e.first);
  return out;
}

CUgraphNode handle(int i) { return reinterpret_cast<CUgraphNode>(i + 1); }
int id(CUgraphNode n) { return int(reinterpret_cast<intptr_t>(n) - 1); }

CUresult getNodes(CUgraph, CUgraphNode *nodes, size_t *n) {
  if (nodes)
    for (size_t i = 0; i < *n; ++i)
      nodes[i] = handle(int(i));
  *n = fake.types.size();
  return 0;
}
CUresult getType(CUgraphNode n, int *type) {
  *type = fake.types[id(n)];
  return 0;
}
// As the driver: a typed edge asked for without edge data is a lossy query,
// edge data without nodes an invalid value.
CUresult neighbours(CUgraphNode n, CUgraphNode *out, CUgraphEdgeData *data,
                    size_t *count, bool users) {
  if (data && !out)
    return 1; // CUDA_ERROR_INVALID_VALUE
  size_t k = 0;
  for (auto [edge, type] : fake.edges)
    if ((users ? edge.first : edge.second) == id(n)) {
      if (out && !data && type)
        return kLossyQuery;
      if (out)
        out[k] = handle(users ? edge.second : edge.first);
      if (out && data)
        data[k] = CUgraphEdgeData{0, 0, (unsigned char)type, {}};
      ++k;
    }
  *count = k;
  return 0;
}
CUresult getDeps(CUgraphNode n, CUgraphNode *out, CUgraphEdgeData *data,
                 size_t *count) {
  return neighbours(n, out, data, count, false);
}
CUresult getUsers(CUgraphNode n, CUgraphNode *out, CUgraphEdgeData *data,
                  size_t *count) {
  return neighbours(n, out, data, count, true);
}
CUresult addDeps(CUgraph, const CUgraphNode *from, const CUgraphNode *to,
                 const CUgraphEdgeData *data, size_t n) {
  for (size_t i = 0; i < n; ++i)
    fake.edges[{id(from[i]), id(to[i])}] = data ? data[i].type : 0;
  return 0;
}
CUresult removeDeps(CUgraph, const CUgraphNode *from, const CUgraphNode *to,
                    const CUgraphEdgeData *data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    auto e = fake.edges.find({id(from[i]), id(to[i])});
    if (e == fake.edges.end() || e->second != (data ? data[i].type : 0))
      return 1; // CUDA_ERROR_INVALID_VALUE
    fake.edges.erase(e);
  }
  return 0;
}
CUresult kernelParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS *p) {
  p->func = fake.funcs[id(n)];
  return 0;
}
CUresult memsetParams(CUgraphNode n, CUDA_MEMSET_NODE_PARAMS *p) {
  *p = {};
  p->dst = fake.dsts[id(n)];
  p->elementSize = 1, p->width = fake.widths.empty() ? 4 : fake.widths[id(n)];
  p->height = 1;
  return 0;
}
CUresult setMemsetParams(CUgraphNode n, const CUDA_MEMSET_NODE_PARAMS *p) {
  fake.dsts[id(n)] = p->dst;
  fake.widths.resize(fake.dsts.size(), 4);
  fake.widths[id(n)] = p->width * p->elementSize * (p->height ? p->height : 1);
  return 0;
}
// A destroyed node loses its edges and becomes a no-op (type -1).
CUresult destroyNode(CUgraphNode n) {
  for (auto e = fake.edges.begin(); e != fake.edges.end();)
    e = e->first.first == id(n) || e->first.second == id(n)
            ? fake.edges.erase(e)
            : std::next(e);
  fake.types[id(n)] = -1;
  return 0;
}

Driver fakeDriver() {
  Driver d{};
  d.cuGraphGetNodes = getNodes;
  d.cuGraphNodeGetType = getType;
  d.cuGraphNodeGetDependencies = getDeps;
  d.cuGraphNodeGetDependentNodes = getUsers;
  d.cuGraphAddDependencies = addDeps;
  d.cuGraphRemoveDependencies = removeDeps;
  d.cuGraphKernelNodeGetParams = kernelParams;
  d.cuGraphMemsetNodeGetParams = memsetParams;
  return d;
}

// With the functions that merge hoisted memsets.
Driver mergingDriver() {
  Driver d = fakeDriver();
  d.cuGraphMemsetNodeSetParams = setMemsetParams;
  d.cuGraphDestroyNode = destroyNode;
  return d;
}

const CUfunction ours = reinterpret_cast<CUfunction>(0x100),
                 library = reinterpret_cast<CUfunction>(0x200);

// The fake graph's nodes: node i a kernel of funcs[i], or where that is
// null a 4-byte memset at dsts[i]; no edges yet.
void setNodes(std::vector<CUfunction> funcs, std::vector<CUdeviceptr> dsts) {
  fake.types.clear();
  for (CUfunction f : funcs)
    fake.types.push_back(f ? CU_GRAPH_NODE_TYPE_KERNEL
                           : CU_GRAPH_NODE_TYPE_MEMSET);
  fake.funcs = std::move(funcs);
  fake.dsts = std::move(dsts);
  fake.widths.clear();
  fake.edges.clear();
}

// The edges from..to, each full but the one from `programmatic`.
void setEdges(const std::vector<std::pair<int, int>> &edges,
              int programmatic = -1) {
  fake.edges.clear();
  for (auto [from, to] : edges)
    fake.edges[{from, to}] = from == programmatic ? 1 : 0;
}

// The edges of a chain of the fake graph's nodes in index order.
std::vector<std::pair<int, int>> chain() {
  std::vector<std::pair<int, int>> out;
  for (int i = 0; i + 1 < int(fake.funcs.size()); ++i)
    out.push_back({i, i + 1});
  return out;
}

} // namespace

TEST_CASE("workspace memsets of a captured chain move beside the generated "
          "kernels before them",
          "[runtime][graph]") {
  const CUdeviceptr ws = 0x10000;
  // ours, memset, library, ours, ours, memset, library, ours, memset (one
  // past the workspace), library
  setNodes({ours, nullptr, library, ours, ours, nullptr, library, ours, nullptr,
            library},
           {0, ws, 0, 0, 0, ws + 60, 0, 0, ws + 64, 0});
  // The generated kernels 3 -> 4 are a programmatic dependent pair.
  auto reset = [] { setEdges(chain(), 3); };
  reset();
  Driver d = fakeDriver();
  std::string error;
  REQUIRE(moveWorkspaceMemsets(d, nullptr, ws, 64, {ours}, error) == 2);
  const std::set<std::pair<int, int>> expected = {
      {0, 2}, {1, 2},          // the first memset: a root now
      {2, 3}, {3, 4}, {4, 6},  // the generated kernels, then the library's
      {2, 5}, {5, 6},          // the second memset beside them
      {6, 7}, {7, 8}, {8, 9}}; // one past the workspace stays
  CHECK(edgeSet() == expected);
  CHECK(fake.edges.at({3, 4}) == 1); // still programmatic
  CHECK(fake.edges.at({4, 6}) == 0); // a library kernel waits for all of 4
  // Nothing left to move; a driver without the functions moves nothing.
  CHECK(moveWorkspaceMemsets(d, nullptr, ws, 64, {ours}, error) == 0);
  CHECK(moveWorkspaceMemsets(Driver{}, nullptr, ws, 64, {ours}, error) == 0);
  // A failing driver call is an error, never a silently wrong order: the
  // edges added before it keep the chain's order.
  reset();
  d.cuGraphRemoveDependencies = [](CUgraph, const CUgraphNode *,
                                   const CUgraphNode *, const CUgraphEdgeData *,
                                   size_t) -> CUresult { return 700; };
  CHECK(moveWorkspaceMemsets(d, nullptr, ws, 64, {ours}, error) == -1);
  CHECK(error.find("cuGraphRemoveDependencies") != std::string::npos);
  CHECK(edgeSet().count({0, 1}));
  CHECK(edgeSet().count({0, 2}));
}

TEST_CASE("workspace memsets of calls with regions of their own run at the "
          "graph's start",
          "[runtime][graph]") {
  const CUdeviceptr ws = 0x20000;
  // memset, library, ours, memset, library, ours, memset (one past the
  // graph workspace: the shared one's), library
  setNodes({nullptr, library, ours, nullptr, library, ours, nullptr, library},
           {ws + 60, 0, 0, ws, 0, 0, ws + 64, 0});
  auto reset = [] { setEdges(chain(), 1); };
  reset();
  Driver d = fakeDriver();
  std::string error;
  REQUIRE(hoistWorkspaceMemsets(d, nullptr, ws, 64, error) == 2);
  const std::set<std::pair<int, int>> expected = {
      {0, 1}, {3, 1},         // both memsets before the start
      {1, 2}, {2, 4}, {4, 5}, // the chain without the second memset
      {5, 6}, {6, 7}};        // the shared workspace's memset stays
  CHECK(edgeSet() == expected);
  CHECK(fake.edges.at({1, 2}) == 1); // still programmatic
  // Hoisted ones are roots already: nothing moves; no graph edits, none.
  CHECK(hoistWorkspaceMemsets(d, nullptr, ws, 64, error) == 2);
  CHECK(edgeSet() == expected);
  CHECK(hoistWorkspaceMemsets(Driver{}, nullptr, ws, 64, error) == 0);
  CHECK(hoistWorkspaceMemsets(d, nullptr, ws, 0, error) == 0);
  // A failing driver call is an error, and what was done keeps an order in
  // which each memset precedes its call.
  reset();
  d.cuGraphAddDependencies = [](CUgraph, const CUgraphNode *,
                                const CUgraphNode *, const CUgraphEdgeData *,
                                size_t) -> CUresult { return 700; };
  CHECK(hoistWorkspaceMemsets(d, nullptr, ws, 64, error) == -1);
  CHECK(error.find("cuGraphAddDependencies") != std::string::npos);
  CHECK(edgeSet().count({3, 4}));
}

TEST_CASE("hoisted memsets of one value become one over their span",
          "[runtime][graph]") {
  const CUdeviceptr ws = 0x30000;
  // memset, library, memset, library, memset, library
  setNodes({nullptr, library, nullptr, library, nullptr, library},
           {ws + 512, 0, ws, 0, ws + 1024, 0});
  setEdges(chain());
  std::string error;
  REQUIRE(hoistWorkspaceMemsets(mergingDriver(), nullptr, ws, 2048, error) ==
          3);
  // The first covers all three spans; the others are gone.
  CHECK(fake.dsts[0] == ws);
  CHECK(fake.widths[0] == 1028);
  CHECK(fake.types[2] == -1);
  CHECK(fake.types[4] == -1);
  const std::set<std::pair<int, int>> expected = {{0, 1}, {1, 3}, {3, 5}};
  CHECK(edgeSet() == expected);
}

TEST_CASE("memsets back to back before a call are hoisted together",
          "[runtime][graph]") {
  const CUdeviceptr ws = 0x40000;
  // ours, memset, memset, library, ours
  setNodes({ours, nullptr, nullptr, library, ours}, {0, ws, ws + 256, 0, 0});
  setEdges(chain());
  std::string error;
  REQUIRE(hoistWorkspaceMemsets(fakeDriver(), nullptr, ws, 512, error) == 2);
  INFO(error);
  // Both precede the start (node 0); the call waits for node 0 alone.
  const std::set<std::pair<int, int>> expected = {
      {1, 0}, {2, 0}, {0, 3}, {3, 4}};
  CHECK(edgeSet() == expected);
}

TEST_CASE("memsets are hoisted in dependency order, and none where two "
          "overlap",
          "[runtime][graph]") {
  const CUdeviceptr ws = 0x50000;
  // The chain 0 -> 3 -> 2 -> 1 -> 4: ours, two memsets back to back (the
  // later one at the lower index), library, ours.
  setNodes({ours, library, nullptr, nullptr, ours}, {0, 0, ws + 256, ws, 0});
  auto reset = [] { setEdges({{0, 3}, {3, 2}, {2, 1}, {1, 4}}); };
  reset();
  std::string error;
  REQUIRE(hoistWorkspaceMemsets(fakeDriver(), nullptr, ws, 512, error) == 2);
  INFO(error);
  const std::set<std::pair<int, int>> expected = {
      {3, 0}, {2, 0}, {0, 1}, {1, 4}};
  CHECK(edgeSet() == expected);
  // The same bytes memset twice (a call that counts twice): nothing moves.
  reset();
  fake.dsts = {0, 0, ws + 2, ws, 0};
  const auto before = edgeSet();
  CHECK(hoistWorkspaceMemsets(fakeDriver(), nullptr, ws, 512, error) == 0);
  CHECK(edgeSet() == before);
}

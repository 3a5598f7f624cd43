//===- GraphMemsets.cpp - library memsets moved off a graph's chain -------===//
#include "cuts/rt/GraphMemsets.h"

#include <algorithm>
#include <functional>
#include <map>

namespace cuts::rt {

using namespace cuda;

namespace {
bool contains(const std::vector<int> &v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
} // namespace

int memsetAnchor(const std::vector<MemsetGraphNode> &graph, int m) {
  const MemsetGraphNode &node = graph[m];
  if (node.deps.size() != 1)
    return node.deps.empty() ? -1 : node.deps[0];
  if (node.kind != MemsetGraphNode::WorkspaceMemset || node.users.size() != 1)
    return node.deps[0];
  int at = node.deps[0];
  while (graph[at].kind == MemsetGraphNode::Ours) {
    if (graph[at].deps.empty())
      return -1;
    if (graph[at].deps.size() > 1)
      return at;
    at = graph[at].deps[0];
  }
  return at;
}

namespace {

std::string failed(const char *what, CUresult r) {
  return std::string("moving a library memset in the CUDA graph (") + what +
         "): " + errorString(r);
}

// A node's dependencies and their edges' data (or, with `users`, its
// dependents; edge data is asked for, or a programmatic edge is a lossy
// query).
bool edges(const Driver &d, CUgraphNode node,
           const std::map<CUgraphNode, int> &index, bool users,
           std::vector<int> &out, std::vector<CUgraphEdgeData> &data,
           std::string &error) {
  auto get =
      users ? d.cuGraphNodeGetDependentNodes : d.cuGraphNodeGetDependencies;
  const char *what =
      users ? "cuGraphNodeGetDependentNodes" : "cuGraphNodeGetDependencies";
  size_t n = 0;
  if (CUresult r = get(node, nullptr, nullptr, &n))
    return error = failed(what, r), false;
  data.assign(n, CUgraphEdgeData{});
  if (n == 0) // edge data without nodes is an invalid value
    return true;
  std::vector<CUgraphNode> nodes(n);
  if (CUresult r = get(node, nodes.data(), data.data(), &n))
    return error = failed(what, r), false;
  for (CUgraphNode other : nodes)
    out.push_back(index.at(other));
  return true;
}

// One past the last byte memset p sets.
CUdeviceptr memsetEnd(const CUDA_MEMSET_NODE_PARAMS &p) {
  const size_t rows = p.height ? p.height : 1;
  return p.dst + (rows - 1) * p.pitch + p.width * p.elementSize;
}

// Each node's kind: our kernels by function, memsets by their destination
// (a workspace memset's parameters kept in `out`).
bool kindOf(const Driver &d, CUgraphNode node, CUdeviceptr workspace,
            size_t workspaceBytes, const std::set<CUfunction> &ours,
            MemsetGraphNode &out, std::string &error) {
  MemsetGraphNode::Kind &kind = out.kind;
  int type = -1;
  if (CUresult r = d.cuGraphNodeGetType(node, &type))
    return error = failed("cuGraphNodeGetType", r), false;
  kind = MemsetGraphNode::Other;
  if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
    CUDA_KERNEL_NODE_PARAMS p{};
    if (CUresult r = d.cuGraphKernelNodeGetParams(node, &p))
      return error = failed("cuGraphKernelNodeGetParams", r), false;
    if (p.func && ours.count(p.func))
      kind = MemsetGraphNode::Ours;
  } else if (type == CU_GRAPH_NODE_TYPE_MEMSET) {
    CUDA_MEMSET_NODE_PARAMS p{};
    if (CUresult r = d.cuGraphMemsetNodeGetParams(node, &p))
      return error = failed("cuGraphMemsetNodeGetParams", r), false;
    if (p.dst >= workspace && memsetEnd(p) <= workspace + workspaceBytes)
      kind = MemsetGraphNode::WorkspaceMemset, out.memset = p;
  }
  return true;
}

// The graph's nodes and, in g, their kinds and edges (users' edge data in
// userEdges, per node).
bool readGraph(const Driver &d, CUgraph graph, CUdeviceptr workspace,
               size_t workspaceBytes, const std::set<CUfunction> &ours,
               std::vector<CUgraphNode> &nodes, std::vector<MemsetGraphNode> &g,
               std::vector<std::vector<CUgraphEdgeData>> &userEdges,
               std::string &error) {
  size_t n = 0;
  if (CUresult r = d.cuGraphGetNodes(graph, nullptr, &n))
    return error = failed("cuGraphGetNodes", r), false;
  nodes.resize(n);
  if (CUresult r = d.cuGraphGetNodes(graph, nodes.data(), &n))
    return error = failed("cuGraphGetNodes", r), false;
  std::map<CUgraphNode, int> index;
  for (size_t i = 0; i < n; ++i)
    index[nodes[i]] = int(i);
  g.assign(n, MemsetGraphNode{});
  userEdges.assign(n, {});
  for (size_t i = 0; i < n; ++i)
    if (!kindOf(d, nodes[i], workspace, workspaceBytes, ours, g[i], error) ||
        !edges(d, nodes[i], index, false, g[i].deps, g[i].depEdges, error) ||
        !edges(d, nodes[i], index, true, g[i].users, userEdges[i], error))
      return false;
  return true;
}

} // namespace

int moveWorkspaceMemsets(const Driver &d, CUgraph graph, CUdeviceptr workspace,
                         size_t workspaceBytes,
                         const std::set<CUfunction> &ours, std::string &error) {
  if (!d.hasGraphEdits() || workspaceBytes == 0)
    return 0;
  std::vector<CUgraphNode> nodes;
  std::vector<MemsetGraphNode> g;
  std::vector<std::vector<CUgraphEdgeData>> userEdges;
  if (!readGraph(d, graph, workspace, workspaceBytes, ours, nodes, g, userEdges,
                 error))
    return -1;
  const size_t n = nodes.size();
  int moved = 0;
  for (size_t m = 0; m < n; ++m) {
    const int anchor = memsetAnchor(g, int(m));
    if (g[m].deps.empty() || anchor == g[m].deps[0])
      continue;
    // Edges added first, the old one removed last: a failure halfway
    // leaves a valid order.
    CUgraphNode p = nodes[g[m].deps[0]], k = nodes[g[m].users[0]];
    if (CUresult r = d.cuGraphAddDependencies(graph, &p, &k, nullptr, 1))
      return error = failed("cuGraphAddDependencies", r), -1;
    if (anchor >= 0)
      if (CUresult r = d.cuGraphAddDependencies(graph, &nodes[anchor],
                                                &nodes[m], nullptr, 1))
        return error = failed("cuGraphAddDependencies", r), -1;
    if (CUresult r = d.cuGraphRemoveDependencies(graph, &p, &nodes[m],
                                                 &g[m].depEdges[0], 1))
      return error = failed("cuGraphRemoveDependencies", r), -1;
    ++moved;
  }
  return moved;
}

namespace {

// The nodes in an order where each comes after its dependencies (the
// driver's node order is not documented to be one).
std::vector<size_t> topologicalOrder(const std::vector<MemsetGraphNode> &g) {
  std::vector<size_t> order, waiting(g.size());
  for (size_t i = 0; i < g.size(); ++i)
    if ((waiting[i] = g[i].deps.size()) == 0)
      order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k)
    for (int u : g[order[k]].users)
      if (--waiting[size_t(u)] == 0)
        order.push_back(size_t(u));
  return order;
}

// Hoisted memsets of one value and element size within kMergeBytes become
// the first one over their whole span (the bytes between are other calls'
// scratch, whose contents no call relies on), the others destroyed: the
// graph's start ran them one after another, 2.6 us apart on an H200.
constexpr size_t kMergeBytes = size_t(1) << 20;
bool mergeMemsets(const Driver &d, const std::vector<CUgraphNode> &memsets,
                  const std::vector<CUDA_MEMSET_NODE_PARAMS> &p,
                  std::string &error) {
  if (memsets.size() < 2 || !d.cuGraphMemsetNodeSetParams ||
      !d.cuGraphDestroyNode)
    return true;
  CUdeviceptr lo = ~CUdeviceptr(0), hi = 0;
  for (size_t i = 0; i < memsets.size(); ++i) {
    const size_t rows = p[i].height ? p[i].height : 1;
    if (p[i].value != p[0].value || p[i].elementSize != p[0].elementSize ||
        (rows > 1 && p[i].pitch != p[i].width * p[i].elementSize))
      return true; // not one run of one value
    lo = std::min(lo, p[i].dst);
    hi = std::max(hi, memsetEnd(p[i]));
  }
  const unsigned es = p[0].elementSize;
  if (hi - lo > kMergeBytes || lo % es || (hi - lo) % es)
    return true;
  CUDA_MEMSET_NODE_PARAMS all = p[0];
  all.dst = lo, all.width = (hi - lo) / es, all.height = 1, all.pitch = 0;
  // The first one covers them all before any goes: each order is valid.
  if (CUresult r = d.cuGraphMemsetNodeSetParams(memsets[0], &all))
    return error = failed("cuGraphMemsetNodeSetParams", r), false;
  for (size_t i = 1; i < memsets.size(); ++i)
    if (CUresult r = d.cuGraphDestroyNode(memsets[i]))
      return error = failed("cuGraphDestroyNode", r), false;
  return true;
}

} // namespace

int hoistWorkspaceMemsets(const Driver &d, CUgraph graph, CUdeviceptr workspace,
                          size_t workspaceBytes, std::string &error) {
  if (!d.hasGraphEdits() || workspaceBytes == 0)
    return 0;
  std::vector<CUgraphNode> nodes;
  std::vector<MemsetGraphNode> g;
  std::vector<std::vector<CUgraphEdgeData>> userEdges;
  if (!readGraph(d, graph, workspace, workspaceBytes, {}, nodes, g, userEdges,
                 error))
    return -1;
  const size_t n = nodes.size();
  auto hoisted = [&](int i) {
    return g[size_t(i)].kind == MemsetGraphNode::WorkspaceMemset;
  };
  // Each region is a call's own and memset at most once, or a hoisted
  // memset could undo what a kernel after an earlier one of it did: where
  // two overlap, none moves.
  std::vector<std::pair<CUdeviceptr, CUdeviceptr>> ranges;
  for (size_t m = 0; m < n; ++m)
    if (hoisted(int(m)))
      ranges.push_back({g[m].memset.dst, memsetEnd(g[m].memset)});
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return 0;
  // Whether node i waits on anything once the memsets are out: a hoisted
  // memset's users inherit its dependencies.
  std::vector<int> waits(n, -1);
  std::function<bool(int)> waitsOn = [&](int i) -> bool {
    if (waits[size_t(i)] < 0) {
      waits[size_t(i)] = 0;
      for (int p : g[size_t(i)].deps)
        if (!hoisted(p) || waitsOn(p))
          waits[size_t(i)] = 1;
    }
    return waits[size_t(i)] == 1;
  };
  std::vector<int> start; // the nodes that then wait on nothing
  for (size_t i = 0; i < n; ++i)
    if (!hoisted(int(i)) && !waitsOn(int(i)))
      start.push_back(int(i));
  auto edge = [&](int from, int to, const CUgraphEdgeData *data,
                  bool add) -> bool {
    CUresult r = add ? d.cuGraphAddDependencies(graph, &nodes[size_t(from)],
                                                &nodes[size_t(to)], data, 1)
                     : d.cuGraphRemoveDependencies(graph, &nodes[size_t(from)],
                                                   &nodes[size_t(to)], data, 1);
    if (r)
      error = failed(
          add ? "cuGraphAddDependencies" : "cuGraphRemoveDependencies", r);
    return r == CUDA_SUCCESS;
  };
  int count = 0;
  for (size_t m : topologicalOrder(g)) {
    if (!hoisted(int(m)))
      continue;
    // Each step keeps a valid order: its users wait for its dependencies
    // (full edges: a library kernel is no programmatic dependent), it
    // loses those, it precedes the start, and its users lose it.
    // The records follow the edges: a user that is a hoisted memset too
    // (two back to back) later moves the edges it has then.
    for (int u : g[m].users)
      for (int p : g[m].deps)
        if (!contains(g[size_t(u)].deps, p)) {
          if (!edge(p, u, nullptr, true))
            return -1;
          g[size_t(u)].deps.push_back(p);
          g[size_t(u)].depEdges.push_back(CUgraphEdgeData{});
        }
    for (size_t e = 0; e < g[m].deps.size(); ++e)
      if (!edge(g[m].deps[e], int(m), &g[m].depEdges[e], false))
        return -1;
    g[m].deps.clear(), g[m].depEdges.clear();
    for (int s : start)
      if (!contains(g[m].users, s) && !edge(int(m), s, nullptr, true))
        return -1;
    for (size_t e = 0; e < g[m].users.size(); ++e) {
      MemsetGraphNode &u = g[size_t(g[m].users[e])];
      if (contains(start, g[m].users[e]))
        continue;
      if (!edge(int(m), g[m].users[e], &userEdges[m][e], false))
        return -1;
      const size_t at = size_t(std::find(u.deps.begin(), u.deps.end(), int(m)) -
                               u.deps.begin());
      u.deps.erase(u.deps.begin() + long(at));
      u.depEdges.erase(u.depEdges.begin() + long(at));
    }
    ++count;
  }
  std::vector<CUgraphNode> memsets;
  std::vector<CUDA_MEMSET_NODE_PARAMS> params;
  for (size_t m = 0; m < n; ++m)
    if (hoisted(int(m)))
      memsets.push_back(nodes[m]), params.push_back(g[m].memset);
  return mergeMemsets(d, memsets, params, error) ? count : -1;
}

} // namespace cuts::rt

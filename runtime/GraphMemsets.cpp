//===- GraphMemsets.cpp - library memsets moved off a graph's chain -------===//
#include "cuts/rt/GraphMemsets.h"

#include <map>

namespace cuts::rt {

using namespace cuda;

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

// Each node's kind: our kernels by function, memsets by their destination.
bool kindOf(const Driver &d, CUgraphNode node, CUdeviceptr workspace,
            size_t workspaceBytes, const std::set<CUfunction> &ours,
            MemsetGraphNode::Kind &kind, std::string &error) {
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
    const size_t rows = p.height ? p.height : 1;
    const size_t bytes = (rows - 1) * p.pitch + p.width * p.elementSize;
    if (p.dst >= workspace && p.dst + bytes <= workspace + workspaceBytes)
      kind = MemsetGraphNode::WorkspaceMemset;
  }
  return true;
}

} // namespace

int moveWorkspaceMemsets(const Driver &d, CUgraph graph, CUdeviceptr workspace,
                         size_t workspaceBytes,
                         const std::set<CUfunction> &ours, std::string &error) {
  if (!d.hasGraphEdits() || workspaceBytes == 0)
    return 0;
  size_t n = 0;
  if (CUresult r = d.cuGraphGetNodes(graph, nullptr, &n))
    return error = failed("cuGraphGetNodes", r), -1;
  std::vector<CUgraphNode> nodes(n);
  if (CUresult r = d.cuGraphGetNodes(graph, nodes.data(), &n))
    return error = failed("cuGraphGetNodes", r), -1;
  std::map<CUgraphNode, int> index;
  for (size_t i = 0; i < n; ++i)
    index[nodes[i]] = int(i);
  std::vector<MemsetGraphNode> g(n);
  std::vector<CUgraphEdgeData> userEdges;
  for (size_t i = 0; i < n; ++i)
    if (!kindOf(d, nodes[i], workspace, workspaceBytes, ours, g[i].kind,
                error) ||
        !edges(d, nodes[i], index, false, g[i].deps, g[i].depEdges, error) ||
        !edges(d, nodes[i], index, true, g[i].users, userEdges, error))
      return -1;
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

} // namespace cuts::rt

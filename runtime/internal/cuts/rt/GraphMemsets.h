//===- GraphMemsets.h - library memsets moved off the chain -*- C++ -*-===//
//
// cuDNN puts a memset of its workspace before some of its kernels (a
// counter of a persistent kernel's tiles). Captured into a run's graph, the
// memset sits in the chain between the kernel before the call and the
// call's kernel, and its two edges held that kernel back 2-6 us on an H200.
// Only library calls use the session's workspace, so the memset may run as
// soon as the last library node before it is done, beside the generated
// kernels in between; where each call has a region of its own, at the
// graph's start.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_GRAPHMEMSETS_H
#define CUTS_RUNTIME_GRAPHMEMSETS_H

#include "cuts/rt/CudaDriver.h"

#include <set>
#include <string>
#include <vector>

namespace cuts::rt {

/// A captured graph as the move sees it: each node's kind and edges.
struct MemsetGraphNode {
  enum Kind {
    Ours,            // a generated kernel: never touches the workspace
    WorkspaceMemset, // a memset inside the workspace
    Other,           // a library kernel, a copy, anything else
  } kind = Other;
  std::vector<int> deps, users;
  std::vector<cuda::CUgraphEdgeData> depEdges; // per dependency
  cuda::CUDA_MEMSET_NODE_PARAMS memset{};      // a WorkspaceMemset's
};

/// Where memset node `m` may wait instead of its one dependency: the nearest
/// ancestor that is not ours, walking back through nodes of one dependency
/// each (a node with several stops the walk there); -1 for the graph's
/// start. Returns m's dependency itself where nothing moves (m is not a
/// WorkspaceMemset, has not exactly one dependency and one user, or that
/// dependency is not ours).
int memsetAnchor(const std::vector<MemsetGraphNode> &graph, int m);

/// Moves each workspace memset of `graph` to its anchor: its dependency P
/// loses the edge to it and gains a full one to its user K; the anchor, if
/// any, gains a full one to it. `ours` are the generated kernels' functions.
/// Returns the memsets moved, or -1 with `error` where the driver failed (the
/// graph is then unchanged or has only edges added, still a valid order).
int moveWorkspaceMemsets(const cuda::Driver &d, cuda::CUgraph graph,
                         cuda::CUdeviceptr workspace, size_t workspaceBytes,
                         const std::set<cuda::CUfunction> &ours,
                         std::string &error);

/// Where every library call has a workspace region of its own (a session's
/// graph workspace, `workspace`..+`workspaceBytes`), nothing but the call
/// after a memset of it touches those bytes, so the memset may run first of
/// all: each such memset loses its edges and precedes every node that
/// waited on nothing but such memsets (the graph's start). Its user then
/// waits for its kernel alone: on an H200 a node joining the memset's
/// branch started 1.5-3 us late, one after a memset on the chain 4-6 us.
/// Memsets of one value within 1 MiB then become one over their span (the
/// bytes between are other calls' scratch). Returns the memsets hoisted, or
/// -1 with `error` where the driver failed (edges are removed from a memset
/// only once it precedes the start, then from its users, and a merged one
/// covers the others before they go: every order on the way is valid).
int hoistWorkspaceMemsets(const cuda::Driver &d, cuda::CUgraph graph,
                          cuda::CUdeviceptr workspace, size_t workspaceBytes,
                          std::string &error);

} // namespace cuts::rt

#endif // CUTS_RUNTIME_GRAPHMEMSETS_H

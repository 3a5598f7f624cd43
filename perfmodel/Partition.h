//===- Partition.h - the partition search of DeepCuts (Algorithm 1) -*- C++
//-*-//
//
// Groups the ops of a graph into subsets, one kernel each. Algorithm 1 of the
// thesis (§3.1) starts from singletons and merges two consecutive subsets
// (connected by an edge, so residual Adds and Concat branches count) whenever
// the merged partition performs better. Because a partition's cost is the sum
// of its subsets' costs, "Q better than P" is cost(X u Y) < cost(X) + cost(Y)
// and the search can run on subsets: the subsets Algorithm 1 reaches are the
// closure of the singletons under beneficial merges of disjoint adjacent
// subsets. Evaluate(subset) is memoised and its cost comes from a pluggable
// source (the PUL lower bound now, measured times once kernels run).
//
// Beyond the thesis, the final choice is exact: the partition of minimum total
// cost over all evaluated subsets, whose groups can run in some order (the
// graph of groups is acyclic), found by dynamic programming.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_PARTITION_H
#define CUTS_PERFMODEL_PARTITION_H

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace cuts {

/// A DAG of n nodes numbered in a topological order (every edge goes from a
/// lower to a higher number).
struct PartitionGraph {
  int numNodes = 0;
  std::vector<std::pair<int, int>> edges; // (from, to), from < to
};

/// A subset of nodes, sorted ascending.
using NodeSet = std::vector<int>;

/// Evaluate(S): the cost (time, any unit) of running S as one kernel, or
/// nullopt when S cannot be one kernel (the fusion rules forbid it). Only
/// called on non-empty, weakly connected, convex subsets (no path leaves S
/// and re-enters it). Singletons must have a cost.
using SubsetCost = std::function<std::optional<double>(const NodeSet &)>;

struct PartitionOptions {
  /// Bounds that keep the search finite on large graphs; reaching one is
  /// reported in the result (the choice is then exact over what was seen).
  int maxSubsetSize = 16;
  int maxEvaluations = 200000;
};

struct PartitionResult {
  std::vector<NodeSet> groups; // the chosen partition, in a valid run order
  double cost = 0;             // its total cost
  int evaluations = 0;         // calls of the cost function (memoised)
  int subsetsKept = 0;         // subsets with a cost (candidates)
  bool truncated = false;      // a bound of PartitionOptions was hit
};

/// Runs the search. Fails (nullopt) only if some singleton has no cost.
std::optional<PartitionResult>
partitionGraph(const PartitionGraph &graph, const SubsetCost &cost,
               const PartitionOptions &opts = {});

/// For tests: the true optimum over every partition of the graph into
/// convex, weakly connected subsets with an acyclic group graph (exponential;
/// graphs of up to ~12 nodes).
std::optional<PartitionResult> bruteForcePartition(const PartitionGraph &graph,
                                                   const SubsetCost &cost);

} // namespace cuts

#endif // CUTS_PERFMODEL_PARTITION_H

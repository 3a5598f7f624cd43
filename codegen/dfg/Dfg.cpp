//===- Dfg.cpp - the data-flow graph of a thread block --------------------===//
#include "codegen/dfg/Dfg.h"

#include <algorithm>

namespace cuts::dfg {

int Graph::addBuffer(Buffer b) {
  buffers.push_back(std::move(b));
  return int(buffers.size()) - 1;
}

int Graph::add(Node n) {
  if (n.op == Op::Load && n.in.empty()) {
    auto key = std::make_pair(n.buffer, n.index);
    auto it = loads.find(key);
    if (it != loads.end())
      return it->second;
    nodes.push_back(std::move(n));
    loads.emplace(key, int(nodes.size()) - 1);
    return int(nodes.size()) - 1;
  }
  nodes.push_back(std::move(n));
  return int(nodes.size()) - 1;
}

int Graph::load(int buffer, std::vector<int64_t> index) {
  Node n{Op::Load, {}};
  n.buffer = buffer;
  n.index = std::move(index);
  return add(std::move(n));
}

int Graph::op(Op o, std::vector<int> in, double value, double value2) {
  Node n{o, std::move(in)};
  n.value = value;
  n.value2 = value2;
  return add(std::move(n));
}

int Graph::constant(double v) {
  Node n{Op::Const, {}};
  n.value = v;
  return add(std::move(n));
}

std::vector<int> Graph::reachedFrom(const std::vector<int> &roots) const {
  // Iterative post-order over operands; every node lands after its operands.
  std::vector<int> order;
  std::vector<char> state(nodes.size(), 0); // 0 new, 1 open, 2 done
  for (int root : roots) {
    std::vector<std::pair<int, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto &[id, next] = stack.back();
      if (state[id] == 2) {
        stack.pop_back();
        continue;
      }
      state[id] = 1;
      if (next < nodes[id].in.size()) {
        // Last operand first: an accumulator chain (Fma's last operand) is
        // then emitted in the order it was built.
        const auto &in = nodes[id].in;
        int child = in[in.size() - 1 - next++];
        if (state[child] == 0)
          stack.push_back({child, 0});
        continue;
      }
      state[id] = 2;
      order.push_back(id);
      stack.pop_back();
    }
  }
  return order;
}

std::vector<int> Graph::nodesWith(Op o) const {
  std::vector<int> ids;
  for (int i = 0; i < size(); ++i)
    if (nodes[i].op == o)
      ids.push_back(i);
  return ids;
}

std::vector<int> threadZeroChunk(const Graph &g, const std::vector<int> &finals,
                                 const int64_t threadExtent[4]) {
  std::vector<int> chunk;
  for (int id : finals) {
    const auto &out = g.node(id).out;
    bool inside = true;
    for (size_t d = 0; d < out.size() && d < 4; ++d)
      inside &= out[d] >= 0 && out[d] < threadExtent[d];
    if (inside)
      chunk.push_back(id);
  }
  return chunk;
}

} // namespace cuts::dfg

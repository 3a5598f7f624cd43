//===- Dfg.cpp - the data-flow graph of a thread block --------------------===//
#include "codegen/dfg/Dfg.h"

#include <algorithm>

namespace cuts::dfg {

int Graph::addBuffer(Buffer b) {
  buffers.push_back(std::move(b));
  return int(buffers.size()) - 1;
}

Type resultType(Op op, const std::vector<Type> &in, Type cast) {
  switch (op) {
  case Op::Cast:
    return cast;
  case Op::Equal:
  case Op::Less:
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Not:
  case Op::InBounds:
    return Type::Bool;
  case Op::Where:
    return in.size() > 1 ? in[1] : Type::F32;
  default:
    return in.empty() ? Type::F32 : in[0];
  }
}

int Graph::add(Node n) {
  if (n.op == Op::Load)
    n.type = valueType(buffers[n.buffer].type);
  if (n.op == Op::Load && n.in.empty()) {
    auto key = std::make_tuple(n.buffer, n.index, n.indexFrom);
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

int Graph::load(int buffer, std::vector<int64_t> index,
                std::vector<int> indexFrom) {
  Node n{Op::Load, {}};
  n.buffer = buffer;
  n.index = std::move(index);
  n.indexFrom = std::move(indexFrom);
  return add(std::move(n));
}

int Graph::op(Op o, std::vector<int> in, double value, double value2,
              Type cast) {
  std::vector<Type> types;
  for (int i : in)
    types.push_back(nodes[i].type);
  Node n{o, std::move(in)};
  n.value = value;
  n.value2 = value2;
  n.type = valueType(resultType(o, types, cast));
  if (o == Op::Cast)
    n.to = cast;
  return add(std::move(n));
}

int Graph::constant(double v, Type type) {
  Node n{Op::Const, {}};
  n.value = v;
  n.type = valueType(type);
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
      // A gathered load's index values come before its operands.
      const auto &in = nodes[id].in;
      const auto &from = nodes[id].indexFrom;
      if (next < in.size() + from.size()) {
        // Last operand first: an accumulator chain (Fma's last operand) is
        // then emitted in the order it was built.
        size_t k = next++;
        int child = k < in.size() ? in[in.size() - 1 - k]
                                  : from[from.size() - 1 - (k - in.size())];
        if (child >= 0 && state[child] == 0)
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

void Graph::relayoutStores(
    int id, Buffer to,
    const std::function<std::vector<int64_t>(const std::vector<int64_t> &)>
        &index) {
  buffers[id] = std::move(to);
  for (Node &n : nodes)
    if (n.op == Op::Store && n.buffer == id)
      n.index = index(n.index);
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

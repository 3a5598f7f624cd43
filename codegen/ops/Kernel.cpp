//===- Kernel.cpp - what every kernel of a builder can have done ----------===//
#include "codegen/ops/Kernel.h"

namespace cuts::codegen {

bool setTensorType(Kernel &k, const std::string &name, dfg::Type t) {
  bool found = false;
  for (TensorArg &a : k.tensors)
    if (a.name == name && dfg::valueType(a.type) == dfg::valueType(t))
      a.type = t, found = true;
  for (dfg::Graph *g : {&k.body, &k.exit})
    for (size_t b = 0; b < g->allBuffers().size(); ++b)
      if (g->buffer(int(b)).space == dfg::Space::Global &&
          g->buffer(int(b)).name == name)
        g->setBufferType(int(b), t);
  if (k.producer) { // a copy: producers are shared between candidates
    auto p = std::make_shared<Kernel>(*k.producer);
    found = setTensorType(*p, name, t) || found;
    k.producer = std::move(p);
  }
  return found;
}

std::vector<int64_t> denseStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    s[d - 1] = s[d] * shape[d];
  return s;
}

} // namespace cuts::codegen

//===- SharedFusion.cpp - two tiled ops in one kernel ---------------------===//
#include "codegen/ops/SharedFusion.h"

namespace cuts::codegen {
namespace {

std::string extents(const int64_t e[4]) {
  return std::to_string(e[0]) + "x" + std::to_string(e[1]) + "x" +
         std::to_string(e[2]) + "x" + std::to_string(e[3]);
}

} // namespace

std::optional<Kernel> fuseShared(Kernel producer, Kernel consumer,
                                 const std::string &input, std::string &error) {
  if (producer.producer || consumer.producer) {
    error = "a kernel with a producer phase cannot be fused again";
    return std::nullopt;
  }
  // The consumer's fetch of `input` into shared memory.
  int in = -1, fi = -1;
  for (size_t i = 0; i < consumer.tensors.size(); ++i)
    if (consumer.tensors[i].name == input && !consumer.tensors[i].output)
      in = int(i);
  for (size_t j = 0; j < consumer.fetches.size(); ++j)
    if (consumer.fetches[j].tensor == in && !consumer.fetches[j].mask)
      fi = int(j);
  if (in < 0 || fi < 0) {
    error = "the consumer does not fetch '" + input +
            "' into shared memory (a kernel reading it straight into "
            "registers cannot take it from a producer)";
    return std::nullopt;
  }
  if (consumer.loopExtent > consumer.params.Cin) {
    error = "the consumer iterates over its input in C_input slices; it must "
            "hold all of it on chip (C_input = C)";
    return std::nullopt;
  }
  // The producer's output and how its exit stores it.
  int out = -1;
  for (size_t i = 0; i < producer.tensors.size(); ++i)
    if (producer.tensors[i].output)
      out = out < 0 ? int(i) : -2;
  const dfg::Buffer *y = nullptr;
  if (out >= 0)
    for (const dfg::Buffer &b : producer.exit.allBuffers())
      if (b.space == dfg::Space::Global && b.name == producer.tensors[out].name)
        y = &b;
  if (!y) {
    error = "the producer must store exactly one output in its loop exit";
    return std::nullopt;
  }
  if (producer.tensors[out].type != dfg::Type::F32 ||
      consumer.tensors[in].type != dfg::Type::F32) {
    error = "shared-memory-level fusion passes fp32 tiles only";
    return std::nullopt;
  }
  // The tile the fetch would read, axis by axis, must be the producer's
  // block: fetch axis i is the tensor's axis i (row-major strides).
  const Fetch &f = consumer.fetches[fi];
  const std::vector<int64_t> &shape = producer.tensors[out].shape;
  if (f.dims.size() != shape.size()) {
    error = "the consumer's input tile and the producer's output differ in "
            "rank";
    return std::nullopt;
  }
  int64_t need[4] = {1, 1, 1, 1}, stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    const FetchDim &d = f.dims[i];
    int od = y->map[i].outDim;
    if (d.globalExtent != shape[i] || d.globalStride != stride ||
        od == dfg::NoDim || y->map[i].scale != 1) {
      error = "the consumer's input '" + input +
              "' is not read as the producer's output tensor";
      return std::nullopt;
    }
    stride *= shape[i];
    need[od] = d.extent;
  }
  const TileParams &p = producer.params;
  const int64_t block[4] = {p.Nb, p.Kb, p.Hb, p.Wb};
  for (int d = 0; d < 4; ++d)
    if (block[d] != need[d]) {
      error = "the producer's block " + extents(block) +
              " is not the consumer's input tile " + extents(need);
      return std::nullopt;
    }
  if (!threadsTileBlock(p)) {
    error = "the producer's thread tiles do not divide its block";
    return std::nullopt;
  }

  // The producer's names, prefixed, so both phases' tensors are parameters
  // of one kernel and its tiles do not shadow the consumer's.
  for (TensorArg &t : producer.tensors)
    t.name = kProducerPrefix + t.name;
  for (dfg::Graph *g : {&producer.body, &producer.exit})
    for (size_t b = 0; b < g->allBuffers().size(); ++b)
      g->renameBuffer(int(b), kProducerPrefix + g->buffer(int(b)).name);

  Kernel k = std::move(consumer);
  k.tensors.erase(k.tensors.begin() + in);
  for (Fetch &x : k.fetches)
    x.tensor = x.tensor == in ? -1 : x.tensor > in ? x.tensor - 1 : x.tensor;
  for (const TensorArg &t : producer.tensors)
    if (!t.output)
      k.tensors.push_back(t);
  k.summary = producer.summary + ", in shared memory into " + k.summary;
  k.prefetch = producer.prefetch;
  k.producedFetch = fi;
  k.producer = std::make_shared<const Kernel>(std::move(producer));
  return k;
}

} // namespace cuts::codegen

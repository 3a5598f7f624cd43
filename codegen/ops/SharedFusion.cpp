//===- SharedFusion.cpp - two tiled ops in one kernel ---------------------===//
#include "codegen/ops/SharedFusion.h"

#include <algorithm>

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

std::optional<TileParams> chainParams(const TileParams &producer,
                                      const OpDesc &d) {
  if (producer.instr == MatrixInstr::Wgmma) {
    // The producer's warpgroups and row tiles; B's K in swizzled slices.
    MmaLoop m;
    m.instr = MatrixInstr::Wgmma;
    m.warpsM = producer.warpsM, m.warpsN = 1, m.mi = producer.Nt / 2;
    m.ni = (d.K + 7) / 8;
    m.stages = 2;
    const int64_t cin = d.C % 64 == 0 ? 64 : d.C % 32 == 0 ? 32 : 16;
    if (producer.warpSpecialized || d.C % 16 || 8 * m.ni > 256 ||
        4 * m.mi * m.ni > kChainAccumulators)
      return std::nullopt;
    return mmaParams(m, cin);
  }
  const int64_t warps = producer.threads() / 32, rows = producer.Nb;
  if (producer.warpSpecialized || rows % 16 || warps < 1)
    return std::nullopt;
  int64_t warpsM = std::min(warps, rows / 16);
  while (warps % warpsM || rows % (16 * warpsM))
    --warpsM;
  MmaLoop m;
  m.instr = MatrixInstr::MmaSync;
  m.warpsM = warpsM, m.warpsN = warps / warpsM;
  m.mi = rows / (16 * warpsM);
  m.ni = (d.K + 8 * m.warpsN - 1) / (8 * m.warpsN);
  m.ni += m.ni % 2; // ldmatrix loads B's 8-column tiles in pairs
  m.stages = 2;     // one slice: a single stage is filled
  if (4 * m.mi * m.ni > kChainAccumulators)
    return std::nullopt;
  return mmaParams(m, d.C);
}

std::optional<Kernel> fuseChained(Kernel producer, Kernel consumer,
                                  const std::string &input, std::string &error,
                                  bool storeFirst) {
  if (!producer.mma || !consumer.mma || producer.chain || consumer.chain ||
      producer.producer || consumer.producer) {
    error = "a chained product joins two tensor-core products, once";
    return std::nullopt;
  }
  const OpDesc &P = producer.desc, &C = consumer.desc;
  const TileParams &pp = producer.params, &cp = consumer.params;
  const bool wgmma = consumer.mma->wgmma();
  if (producer.mma->warpSpecialized ||
      (wgmma && producer.mma->instr != MatrixInstr::Wgmma)) {
    error = "a chained product follows a multistage loop, on wgmma after "
            "wgmma, else on mma.sync";
    return std::nullopt;
  }
  // Every consumer row reads one whole producer row: the same rows, the
  // producer's columns its K, in one slice.
  const std::array<int64_t, 4> grid = gridExtents(P);
  const bool pointwise = C.im2col ? C.FH == 1 && C.FW == 1 && C.SH == 1 &&
                                        C.SW == 1 && C.PH == 0 && C.PW == 0 &&
                                        C.IC2 == 0
                                  : C.batch == 1 && !consumer.mmaViews[0];
  if (!pointwise || P.batch != 1 || C.N != P.N || C.C != P.K ||
      grid[1] > pp.Kb || grid[2] > pp.Hb || grid[3] > pp.Wb) {
    error = "the consumer's A must be the producer's output row by row, "
            "the producer's block spanning all its columns";
    return std::nullopt;
  }
  if (cp.Nb != pp.Nb || (wgmma ? C.C % cp.Cin : cp.Cin != C.C) ||
      cp.threads() != pp.threads() || cp.Kb < C.K || !C.transB) {
    error = "the consumer must be tiled as chainParams tiles it, with B "
            "transposed (N x K)";
    return std::nullopt;
  }
  int in = -1, out = -1;
  for (size_t i = 0; i < consumer.tensors.size(); ++i)
    if (consumer.tensors[i].name == input && !consumer.tensors[i].output)
      in = int(i);
  for (size_t i = 0; i < producer.tensors.size(); ++i)
    if (producer.tensors[i].output)
      out = out < 0 ? int(i) : -2;
  if (in < 0 || out < 0 ||
      producer.tensors[size_t(out)].type != consumer.mma->operand) {
    error = "the producer must store one output of the consumer's operand "
            "type, which the consumer reads as '" +
            input + "'";
    return std::nullopt;
  }
  consumer.tensors.erase(consumer.tensors.begin() + in);
  for (TensorArg &t : consumer.tensors)
    t.name = kChainPrefix + t.name;
  for (size_t b = 0; b < consumer.exit.allBuffers().size(); ++b)
    consumer.exit.renameBuffer(int(b), kChainPrefix +
                                           consumer.exit.buffer(int(b)).name);
  Kernel k = std::move(producer);
  if (!storeFirst) {
    k.tensors.erase(k.tensors.begin() + out);
    k.storesOutput = false;
  }
  for (const TensorArg &t : consumer.tensors)
    k.tensors.push_back(t);
  k.summary += ", chained into " + consumer.summary;
  k.chain = std::make_shared<const Kernel>(std::move(consumer));
  return k;
}

std::optional<Kernel> fusePooled(Kernel conv, const OpDesc &pool, bool average,
                                 std::string &error) {
  const OpDesc &d = conv.desc;
  if (!conv.mma || !d.im2col || d.IC2 || conv.chain || conv.producer ||
      conv.persistentBlocks || conv.post || !conv.waits.empty()) {
    error = "a pooling fuses after one implicit GEMM's exit (a conv on "
            "tensor cores)";
    return std::nullopt;
  }
  const int64_t images = d.N / (d.OH * d.OW);
  if (pool.kind != OpKind::Pool || pool.IH != d.OH || pool.IW != d.OW ||
      pool.K != d.K || pool.N != images) {
    error = "the pooling does not read the conv's output";
    return std::nullopt;
  }
  if (average && !poolWindowsInside(pool)) {
    error = "an average pooling fuses where its windows lie inside the "
            "image, unpadded";
    return std::nullopt;
  }
  // Without pooling (1 x 1 windows), the boxes of the conv's own pixels
  // whose windows cover the fewest input pixels.
  const bool none = pool.FH * pool.FW == 1 && pool.SH * pool.SW == 1;
  std::optional<PoolBox> box =
      none ? convBox(d, conv.params.Nb) : poolBox(pool, conv.params.Nb);
  if (!box) {
    error = "no window of the pooling fits in a block of " +
            std::to_string(conv.params.Nb) + " rows";
    return std::nullopt;
  }
  int out = -1;
  for (size_t i = 0; i < conv.tensors.size(); ++i)
    if (conv.tensors[i].output)
      out = out < 0 ? int(i) : -2;
  if (out < 0) {
    error = "the conv must store one output";
    return std::nullopt;
  }
  conv.tensors[size_t(out)].shape = {images, pool.H, pool.W, pool.K};
  conv.desc.N = box->gemmRows(images, conv.params.Nb);
  conv.pooled = PooledExit{pool, *box, average};
  if (none) {
    conv.summary += ", in boxes of " + std::to_string(box->boxH) + "x" +
                    std::to_string(box->boxW) + " pixels";
    return conv;
  }
  conv.summary += std::string(average ? ", average" : ", max") + " pool " +
                  std::to_string(pool.FH) + "x" + std::to_string(pool.FW) +
                  " stride " + std::to_string(pool.SH) + " of " +
                  std::to_string(box->boxH) + "x" + std::to_string(box->boxW) +
                  " pixels a block into " + std::to_string(box->tileH) + "x" +
                  std::to_string(box->tileW);
  return conv;
}

} // namespace cuts::codegen

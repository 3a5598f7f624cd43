//===- Epilogue.cpp - the loop-exit DFG shared by the looped ops ----------===//
//
// After the last C_input iteration every output of the block holds its sum
// in a register; the exit DFG applies the register-level fused ops and
// stores to global memory (thesis §3.3.1's loop-exit DFG, §3.3.2's
// register-level concatenation).
//
//===----------------------------------------------------------------------===//
#include "codegen/ops/Kernel.h"

#include <algorithm>

namespace cuts::codegen {

std::string accName(const int64_t local[4]) {
  std::string s = "acc";
  for (int d = 0; d < 4; ++d)
    s += "_" + std::to_string(local[d]);
  return s;
}

std::vector<int64_t> tileStrides(const SharedFormat &f, char rowLetter,
                                 char colLetter, int64_t rows, int64_t cols,
                                 int64_t rowRun, int64_t colRun) {
  auto pos = [&](char c) {
    return std::find(f.begin(), f.end(), c) - f.begin();
  };
  bool rowsOuter = pos(rowLetter) < pos(colLetter);
  int64_t inner = rowsOuter ? cols : rows;
  int64_t run = rowsOuter ? colRun : rowRun;
  int64_t padded = paddedPitch(inner, run);
  return rowsOuter ? std::vector<int64_t>{padded, 1}
                   : std::vector<int64_t>{1, padded};
}

namespace {

// A PositionLoop's span along thread dimension d (planBody), so that the
// emitter's vector accesses along it (widthAligned) stay whole in the DFG.
int64_t spanAlong(const std::vector<const dfg::Buffer *> &tiles, int outUnit,
                  int d, int64_t extent) {
  for (const dfg::Buffer *b : tiles)
    for (size_t a = 0; a < b->strides.size(); ++a)
      if (b->strides[a] == 1 && b->extents[a] > 1 && b->map[a].outDim == d &&
          b->map[a].scale == 1 && !b->map[a].digit() && extent % 4 == 0)
        return 4;
  if (d == outUnit)
    return extent % 4 == 0 ? 4 : extent % 2 == 0 ? 2 : 1;
  return 1;
}

} // namespace

int64_t planBody(Kernel &k, const std::vector<const dfg::Buffer *> &tiles,
                 int outUnit, int64_t channels, int64_t fmaPerPosition,
                 int64_t taps) {
  const TileParams &p = k.params;
  const int64_t ext[4] = {p.Nt, p.Kt, p.Ht, p.Wt};
  const int64_t all = p.Nt * p.Kt * p.Ht * p.Wt;
  // Nested in the order the DFG takes positions (n, k, h, w), the loops
  // once unrolled run the body as the whole DFG would, with the same
  // registers live.
  if (all * fmaPerPosition * channels > kMaxBodyDfgFma)
    for (int d = 0; d < 4; ++d) {
      k.positions.span[d] = spanAlong(tiles, outUnit, d, ext[d]);
      k.positions.count[d] = ext[d] / k.positions.span[d];
    }
  const int64_t inDfg = all / k.positions.iterations();
  int64_t step = channels;
  while (step > 1 && (channels % step != 0 ||
                      step * all * fmaPerPosition > kMaxUnrolledFma ||
                      step * inDfg * fmaPerPosition > kMaxBodyDfgFma))
    --step;
  if (step < channels)
    k.bodyStep = step;
  // A patch embedding (ViT-B/32's 32x32 filter) has 1024 FMAs a channel.
  if (step == 1 && taps > 1 && inDfg * fmaPerPosition > kMaxBodyDfgFma) {
    int64_t rows = taps;
    while (rows > 1 && (taps % rows != 0 ||
                        inDfg * fmaPerPosition / taps * rows > kMaxBodyDfgFma))
      --rows;
    k.tapStep = rows, k.taps = taps;
  }
  return step;
}

void declareAccumulators(Kernel &k) {
  forEachChunkPosition(k, [&](const int64_t *local) {
    k.accumulators.push_back(accName(local));
  });
}

void addResult(Kernel &k, int acc, const std::string &name,
               const int64_t *pos) {
  dfg::Node r(dfg::Op::Result, {acc});
  r.name = name;
  r.out = {pos[0], pos[1], pos[2], pos[3]};
  k.body.add(r);
}

bool buildExit(Kernel &k, const std::string &out,
               const std::vector<int64_t> &outShape,
               const std::vector<int> &outDims,
               const std::vector<EpilogueOp> &epilogue, std::string &error) {
  std::vector<dfg::DimMap> outMap;
  for (int d : outDims)
    outMap.push_back({d, 1});
  int y = k.exit.addBuffer(
      {out, dfg::Space::Global, outShape, denseStrides(outShape), outMap});

  // Operands: a scalar stays at index 0 for every thread and block; a
  // per-channel vector follows K; an operand of the output's rank follows
  // the output, except along its extent-1 axes, which broadcast.
  int64_t channels = 1;
  for (size_t d = 0; d < outDims.size(); ++d)
    if (outDims[d] == dfg::DimK)
      channels = outShape[d];
  struct Operand {
    int buffer = -1;
    std::vector<int> follows; // per operand axis: output axis or -1
  };
  std::vector<Operand> operands;
  for (const EpilogueOp &e : epilogue) {
    Operand o;
    if (e.operand.empty()) {
      operands.push_back(o);
      continue;
    }
    const std::vector<int64_t> &os = e.operandShape;
    dfg::Buffer b{e.operand, dfg::Space::Global, os, denseStrides(os), {}};
    if (!e.digits.empty()) {
      for (size_t d = 0; d < os.size(); ++d) {
        const OutputDigit &g = e.digits[d];
        dfg::DimMap m = outMap[g.axis];
        m.div = g.div, m.mod = g.mod;
        b.map.push_back(m);
        o.follows.push_back(g.axis);
      }
      k.tensors.push_back({e.operand, os, false});
      o.buffer = k.exit.addBuffer(b);
      operands.push_back(o);
      continue;
    }
    if (os.size() == outShape.size()) {
      for (size_t d = 0; d < os.size(); ++d) {
        if (os[d] != outShape[d] && os[d] != 1) {
          error = "epilogue operand '" + e.operand +
                  "' does not broadcast to the output";
          return false;
        }
        o.follows.push_back(os[d] == outShape[d] ? int(d) : -1);
      }
    } else if (os == std::vector<int64_t>{1}) {
      o.follows = {-1};
    } else if (os == std::vector<int64_t>{channels}) {
      o.follows = {-2}; // along K
    } else {
      error = "epilogue operand '" + e.operand +
              "' is neither a scalar, per-channel nor of the output's rank";
      return false;
    }
    for (int f : o.follows)
      b.map.push_back(f == -2  ? dfg::DimMap{dfg::DimK, 1}
                      : f >= 0 ? outMap[f]
                               : dfg::DimMap{dfg::NoDim, 1});
    k.tensors.push_back({e.operand, os, false});
    o.buffer = k.exit.addBuffer(b);
    operands.push_back(o);
  }
  k.tensors.push_back({out, outShape, true});

  forEachChunkPosition(k, [&](const int64_t *pos) {
    dfg::Node in(dfg::Op::Value);
    in.name = accName(pos);
    int v = k.exit.add(in);
    std::vector<int64_t> index;
    for (int d : outDims)
      index.push_back(pos[d]);
    for (size_t e = 0; e < epilogue.size(); ++e) {
      std::vector<int> ins{v};
      const Operand &o = operands[e];
      if (o.buffer >= 0) {
        std::vector<int64_t> at;
        for (int f : o.follows)
          at.push_back(f == -2 ? pos[dfg::DimK] : f >= 0 ? index[f] : 0);
        ins.push_back(k.exit.load(o.buffer, at));
      }
      v = k.exit.op(epilogue[e].op, ins, epilogue[e].value, epilogue[e].value2);
    }
    dfg::Node st(dfg::Op::Store, {v});
    st.buffer = y;
    st.index = index;
    st.out = {pos[0], pos[1], pos[2], pos[3]};
    k.exit.add(st);
  });
  return true;
}

bool storeDigits(Kernel &k, const std::vector<int64_t> &shape,
                 const std::vector<OutputDigit> &digits, std::string &error) {
  const auto &buffers = k.exit.allBuffers();
  auto y = std::find_if(buffers.begin(), buffers.end(),
                        [](const dfg::Buffer &b) { return b.name == "Y"; });
  if (y == buffers.end() || digits.empty() || digits.size() != shape.size() ||
      digits.back().axis != int(y->extents.size()) - 1 ||
      digits.back().digit()) {
    error = "a transposed store must keep the output's innermost axis";
    return false;
  }
  dfg::Buffer to{y->name, y->space, shape, denseStrides(shape), {}, y->type};
  for (const OutputDigit &g : digits) {
    dfg::DimMap m = y->map[g.axis];
    m.div = g.div, m.mod = g.mod;
    to.map.push_back(m);
  }
  for (TensorArg &t : k.tensors)
    if (t.name == "Y")
      t.shape = shape;
  k.exit.relayoutStores(int(y - buffers.begin()), std::move(to),
                        [&](const std::vector<int64_t> &index) {
                          std::vector<int64_t> at;
                          for (const OutputDigit &g : digits)
                            at.push_back(index[g.axis]);
                          return at;
                        });
  return true;
}

} // namespace cuts::codegen

//===- Epilogue.cpp - the loop-exit DFG shared by the looped ops ----------===//
//
// After the last C_input iteration every output of the block holds its sum
// in a register; the exit DFG applies the register-level fused ops and
// stores to global memory (thesis §3.3.1's loop-exit DFG, §3.3.2's
// register-level concatenation).
//
//===----------------------------------------------------------------------===//
#include "codegen/ops/Kernel.h"

namespace cuts::codegen {

std::string accName(const int64_t local[4]) {
  std::string s = "acc";
  for (int d = 0; d < 4; ++d)
    s += "_" + std::to_string(local[d]);
  return s;
}

void declareAccumulators(Kernel &k) {
  const TileParams &p = k.params;
  int64_t local[4];
  for (local[0] = 0; local[0] < p.Nt; ++local[0])
    for (local[1] = 0; local[1] < p.Kt; ++local[1])
      for (local[2] = 0; local[2] < p.Ht; ++local[2])
        for (local[3] = 0; local[3] < p.Wt; ++local[3])
          k.accumulators.push_back(accName(local));
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
  const TileParams &p = k.params;
  auto stridesOf = [](const std::vector<int64_t> &shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
      s[d - 1] = s[d] * shape[d];
    return s;
  };
  std::vector<dfg::DimMap> outMap;
  for (int d : outDims)
    outMap.push_back({d, 1});
  int y = k.exit.addBuffer(
      {out, dfg::Space::Global, outShape, stridesOf(outShape), outMap});

  // Operands: a per-channel vector follows K; a full tensor the output.
  int64_t channels = 1;
  for (size_t d = 0; d < outDims.size(); ++d)
    if (outDims[d] == dfg::DimK)
      channels = outShape[d];
  std::vector<int> operands;
  for (const EpilogueOp &e : epilogue) {
    if (e.operand.empty()) {
      operands.push_back(-1);
      continue;
    }
    bool vector = e.operandShape == std::vector<int64_t>{channels};
    bool scalar = e.operandShape == std::vector<int64_t>{1};
    if (!vector && !scalar && e.operandShape != outShape) {
      error = "epilogue operand '" + e.operand +
              "' is neither a scalar, per-channel nor of the output's shape";
      return false;
    }
    k.tensors.push_back({e.operand, e.operandShape, false});
    // A scalar stays at index 0 for every thread and block.
    operands.push_back(k.exit.addBuffer(
        vector   ? dfg::Buffer{e.operand,
                             dfg::Space::Global,
                             {channels},
                             {1},
                             {{dfg::DimK, 1}}}
        : scalar ? dfg::Buffer{e.operand,
                               dfg::Space::Global,
                               {1},
                               {1},
                               {{dfg::NoDim, 1}}}
                 : dfg::Buffer{e.operand, dfg::Space::Global, outShape,
                               stridesOf(outShape), outMap}));
  }
  k.tensors.push_back({out, outShape, true});

  const int64_t thread[4] = {p.Nt, p.Kt, p.Ht, p.Wt};
  forEachChunkPosition(p, [&](const int64_t *pos) {
    int64_t local[4];
    for (int d = 0; d < 4; ++d)
      local[d] = pos[d] % thread[d];
    dfg::Node in(dfg::Op::Value);
    in.name = accName(local);
    int v = k.exit.add(in);
    std::vector<int64_t> index;
    for (int d : outDims)
      index.push_back(pos[d]);
    for (size_t e = 0; e < epilogue.size(); ++e) {
      std::vector<int> ins{v};
      const std::vector<int64_t> &os = epilogue[e].operandShape;
      if (operands[e] >= 0)
        ins.push_back(k.exit.load(
            operands[e], os == std::vector<int64_t>{1} && os != outShape
                             ? std::vector<int64_t>{0}
                         : os.size() == 1 && os != outShape
                             ? std::vector<int64_t>{pos[dfg::DimK]}
                             : index));
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

} // namespace cuts::codegen

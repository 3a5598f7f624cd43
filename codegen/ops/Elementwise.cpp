//===- Elementwise.cpp - elementwise kernels and fused chains -------------===//
//
// Simple ops need no shared memory: each output's DFG loads its operands
// from global memory (a broadcast axis always reads index 0), applies the
// chain and stores. Duplicated over the block and split per thread as every
// DFG; there is no reduction loop.
//
//===----------------------------------------------------------------------===//
#include "codegen/ops/Elementwise.h"

namespace cuts::codegen {

namespace {

// Input x's index function as `follows` (see ElementwiseInput): given, or
// from its permutation or its broadcast to the output; checked to stay
// inside x for every output position.
bool followsOf(const ElementwiseInput &x,
               const std::vector<ElementwiseInput> &in,
               const std::vector<int64_t> &outShape, std::vector<int> &f,
               std::string &error) {
  const size_t r = outShape.size();
  f = x.follows;
  if (!f.empty()) {
    bool ok = f.size() == x.shape.size() &&
              (x.start.empty() || x.start.size() == f.size()) &&
              (x.step.empty() || x.step.size() == f.size());
    for (size_t d = 0; ok && d < f.size(); ++d) {
      int64_t a = x.start.empty() ? 0 : x.start[d];
      int64_t st = x.step.empty() ? 1 : x.step[d];
      // The last output position must read inside the input.
      if (x.outsideReadsZero) {
        ok = st > 0 && f[d] != ElementwiseInput::kGathered;
        continue;
      }
      ok = a >= 0 && st > 0 &&
           (f[d] == ElementwiseInput::kFixed ? a < x.shape[d]
            : f[d] == ElementwiseInput::kGathered
                ? x.indices >= 0 && x.indices < int(in.size()) &&
                      in[x.indices].indices < 0
                : f[d] >= 0 && f[d] < int(r) &&
                      a + (outShape[f[d]] - 1) * st < x.shape[d]);
    }
    if (!ok) {
      error = "input '" + x.name + "' has an invalid index function";
      return false;
    }
  } else if (!x.perm.empty()) {
    // Input axis perm[d] follows output axis d.
    if (x.perm.size() != r || x.shape.size() != r) {
      error = "transposed input '" + x.name + "' needs the output's rank";
      return false;
    }
    f.assign(r, ElementwiseInput::kFixed);
    for (size_t d = 0; d < r; ++d) {
      int64_t a = x.perm[d];
      if (a < 0 || a >= int64_t(r) || x.shape[a] != outShape[d]) {
        error = "transposed input '" + x.name + "' does not match the output";
        return false;
      }
      f[a] = int(d);
    }
  } else {
    if (x.shape.size() > r) {
      error = "input '" + x.name + "' has a higher rank than the output";
      return false;
    }
    size_t lead = r - x.shape.size();
    for (size_t d = 0; d < x.shape.size(); ++d) {
      int64_t o = outShape[lead + d];
      if (x.shape[d] != o && x.shape[d] != 1) {
        error = "input '" + x.name + "' does not broadcast to the output";
        return false;
      }
      // A broadcast axis stays at index 0 for every thread and block.
      f.push_back(x.shape[d] == 1 && o != 1 ? ElementwiseInput::kFixed
                                            : int(lead + d));
    }
  }
  return true;
}

// Each step's result type, checking that it reads only earlier steps and
// existing inputs (a Pick: concatenated parts in rising offsets).
bool typeSteps(const std::vector<ElementwiseInput> &in,
               const std::vector<ElementwiseStep> &steps, size_t r,
               std::vector<dfg::Type> &stepTypes, std::string &error) {
  for (size_t i = 0; i < steps.size(); ++i) {
    std::vector<dfg::Type> args;
    int64_t lastOffset = -1; // a Pick's parts: offsets rising, as bisected
    if (steps[i].op == dfg::Op::Pick && steps[i].args.empty()) {
      error = "step " + std::to_string(i) + " picks from no inputs";
      return false;
    }
    for (int a : steps[i].args) {
      if (a >= int(i) || -1 - a >= int(in.size())) {
        error = "step " + std::to_string(i) +
                " uses a later step or a missing input";
        return false;
      }
      args.push_back(a >= 0 ? stepTypes[a] : in[-1 - a].type);
      // A Pick reads its parts itself: each an input along the output's
      // axes, the same type, its positions outside it reading 0, each
      // starting along the axis past the one before (the emitter bisects
      // their offsets in argument order).
      if (steps[i].op != dfg::Op::Pick)
        continue;
      size_t axis = size_t(steps[i].value);
      bool part = a < 0 && steps[i].value >= 0 && axis < r &&
                  in[-1 - a].outsideReadsZero && in[-1 - a].shape.size() == r &&
                  args.back() == args.front();
      int64_t offset =
          part && !in[-1 - a].start.empty() ? -in[-1 - a].start[axis] : 0;
      if (!part || offset <= lastOffset) {
        error = "step " + std::to_string(i) +
                " picks from something other than concatenated inputs";
        return false;
      }
      lastOffset = offset;
    }
    stepTypes.push_back(dfg::resultType(steps[i].op, args, steps[i].cast));
  }
  return true;
}

} // namespace

std::optional<Kernel>
buildElementwise(const std::string &name, const OpDesc &d,
                 const std::vector<int64_t> &outShape,
                 const std::vector<ElementwiseInput> &in,
                 const std::vector<ElementwiseStep> &steps, const TileParams &p,
                 std::string &error) {
  if (outShape.size() > 4 || steps.empty()) {
    error = "elementwise kernels take outputs of rank <= 4 and >= 1 step";
    return std::nullopt;
  }
  if (!threadsTileBlock(p) || p.Cin != 1) {
    error = "block extents must be multiples of thread extents, C_input 1";
    return std::nullopt;
  }
  // The output's axes as the last of N, K, H, W.
  size_t r = outShape.size();
  std::vector<int> dims;
  for (size_t d = 0; d < r; ++d)
    dims.push_back(int(4 - r + d));
  int64_t nkhw[4] = {1, 1, 1, 1};
  for (size_t d = 0; d < r; ++d)
    nkhw[dims[d]] = outShape[d];

  if (d.N != nkhw[0] || d.K != nkhw[1] || d.H != nkhw[2] || d.W != nkhw[3]) {
    error = "the description's N x K x H x W is not the output's shape";
    return std::nullopt;
  }
  Kernel k;
  k.name = name;
  k.desc = d;
  k.params = p;
  k.loopExtent = 0; // nothing to iterate: no fetch, no body

  // Every input's index function as `follows` (see ElementwiseInput).
  std::vector<std::vector<int>> follows(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (!followsOf(in[i], in, outShape, follows[i], error))
      return std::nullopt;
  std::vector<int> buffers;
  for (size_t i = 0; i < in.size(); ++i) {
    const ElementwiseInput &x = in[i];
    dfg::Buffer b{
        x.name, dfg::Space::Global, x.shape, denseStrides(x.shape), {}, x.type};
    for (size_t d = 0; d < follows[i].size(); ++d) {
      int f = follows[i][d];
      b.map.push_back(
          {f >= 0 ? dims[f] : int(dfg::NoDim), x.step.empty() ? 1 : x.step[d]});
    }
    buffers.push_back(k.exit.addBuffer(b));
    k.tensors.push_back({x.name, x.shape, false, x.type});
  }
  // The output's type is the last step's.
  std::vector<dfg::Type> stepTypes;
  if (!typeSteps(in, steps, r, stepTypes, error))
    return std::nullopt;
  dfg::Type outType = stepTypes.back();
  int y = k.exit.addBuffer({"Y", dfg::Space::Global, outShape,
                            denseStrides(outShape),
                            [&] {
                              std::vector<dfg::DimMap> m;
                              for (int d : dims)
                                m.push_back({d, 1});
                              return m;
                            }(),
                            outType});
  k.tensors.push_back({"Y", outShape, true, outType});

  forEachChunkPosition(k, [&](const int64_t *pos) {
    // Input i at this output position; a gathered axis first loads its
    // position from the indices input.
    auto read = [&](size_t i) {
      std::vector<int64_t> index;
      std::vector<int> from;
      for (size_t d = 0; d < follows[i].size(); ++d) {
        int f = follows[i][d];
        int64_t a = in[i].start.empty() ? 0 : in[i].start[d];
        int64_t st = in[i].step.empty() ? 1 : in[i].step[d];
        index.push_back(f >= 0 ? a + pos[dims[f]] * st : a);
        from.push_back(-1);
        if (f == ElementwiseInput::kGathered) {
          size_t j = size_t(in[i].indices);
          std::vector<int64_t> at;
          for (int g : follows[j])
            at.push_back(g >= 0 ? pos[dims[g]] : 0);
          from.back() = k.exit.load(buffers[j], at);
        }
      }
      bool gathered = false;
      for (int v : from)
        gathered |= v >= 0;
      return k.exit.load(buffers[i], index,
                         gathered ? from : std::vector<int>{});
    };
    std::vector<int> results;
    for (const ElementwiseStep &s : steps) {
      std::vector<int> args;
      for (int a : s.args)
        args.push_back(a >= 0 ? results[a] : read(size_t(-1 - a)));
      results.push_back(k.exit.op(s.op, args, s.value, s.value2, s.cast));
    }
    std::vector<int64_t> index;
    for (int d : dims)
      index.push_back(pos[d]);
    dfg::Node st(dfg::Op::Store, {results.back()});
    st.buffer = y;
    st.index = index;
    st.out = {pos[0], pos[1], pos[2], pos[3]};
    k.exit.add(st);
  });
  k.summary = "elementwise chain of " + std::to_string(steps.size()) +
              " op(s) over " + std::to_string(in.size()) + " input(s)";
  return k;
}

} // namespace cuts::codegen

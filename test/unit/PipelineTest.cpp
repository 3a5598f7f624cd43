// Pipeline stages (runtime/internal/cuts/rt/Pipeline.h): a plan cut into
// stages that run one after another, each binding the last one's outputs
// as its inputs by position, computes what the whole plan computes. Checked
// by interpreting the manifests symbolically: every kernel's outputs are a
// hash of what it reads, a read of memory no earlier step (or input, or
// weight) of the same stage wrote fails.
#include "cuts/rt/Pipeline.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>

using namespace cuts::rt;

namespace {

int add(Manifest &m, const std::string &name, TensorKind kind, int64_t n,
        int viewOf = -1) {
  Tensor t;
  t.name = name, t.shape = {n}, t.kind = kind, t.viewOf = viewOf;
  if (kind == TensorKind::Weight)
    t.weightOffset = uint64_t(m.tensors.size()) * 4096;
  m.tensors.push_back(t);
  return int(m.tensors.size() - 1);
}

void kernel(Manifest &m, std::vector<int> args, int out, int stream = 0,
            int after = -1) {
  KernelLaunch k;
  k.name = "k" + std::to_string(m.kernels.size());
  k.args = std::move(args), k.outputs = {out};
  m.kernels.push_back(k);
  Step s;
  s.kernel = int(m.kernels.size() - 1), s.stream = stream, s.after = after;
  m.steps.push_back(s);
}

/// Ten layers with a residual (layer 0's output read by layer 5), a
/// concat written by two kernels into views of one buffer, a cuSync pair
/// (a state tensor, the side stream, its join), and a second output taken
/// from the middle.
Manifest model() {
  Manifest m;
  const int x = add(m, "x", TensorKind::Input, 64);
  m.tensors[size_t(x)].index = 0;
  m.inputs = {x};
  // cuSync's epoch (tensor 1): its pairs read it, the plan's last step
  // advances it.
  const int epoch = add(m, "epoch", TensorKind::State, 1);
  m.tensors[size_t(epoch)].dtype = "int32";
  int prev = x, y0 = -1, y3 = -1;
  for (int l = 0; l < 10; ++l) {
    const int w = add(m, "w" + std::to_string(l), TensorKind::Weight, 256);
    const bool last = l == 9, middle = l == 3;
    // y4 shares y0's name: tensors crossing together are renamed alike
    // on both sides of a cut.
    const int y =
        add(m, "y" + std::to_string(l == 4 ? 0 : l),
            last || middle ? TensorKind::Output : TensorKind::Intermediate, 64);
    if (last || middle)
      m.tensors[size_t(y)].index = last ? 0 : 1;
    if (l == 2) { // two halves of a concat, then the layer reads it whole
      const int c = add(m, "c", TensorKind::Intermediate, 64);
      const int ca = add(m, "ca", TensorKind::View, 32, c);
      const int cb = add(m, "cb", TensorKind::View, 32, c);
      kernel(m, {prev, w, ca}, ca);
      kernel(m, {prev, cb}, cb);
      kernel(m, {c, w, y}, y);
    } else if (l == 6) { // a cuSync pair: producer, consumer, join
      const int sem = add(m, "sem", TensorKind::State, 4);
      m.tensors[size_t(sem)].dtype = "int32";
      const int z = add(m, "z", TensorKind::Intermediate, 64);
      kernel(m, {prev, w, sem, epoch, z}, z);
      kernel(m, {z, sem, epoch, y}, y, 1, int(m.steps.size() - 1));
      kernel(m, {y, w, y}, y, 0, int(m.steps.size() - 1));
    } else {
      std::vector<int> args = {prev, w, y};
      if (l == 5)
        args.insert(args.begin() + 1, y0); // the residual
      kernel(m, args, y);
    }
    y0 = l == 0 ? y : y0;
    y3 = middle ? y : y3;
    prev = y;
  }
  kernel(m, {epoch}, epoch); // counts the run
  m.outputs = {prev, y3};
  return m;
}

using Parts = std::map<int, uint64_t>; // a buffer: what each view holds

uint64_t mix(uint64_t h, uint64_t v) {
  return (h ^ v) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
}

/// The plan run on `inputs` (a buffer per input); its outputs' buffers,
/// or nullopt where a step reads memory nothing wrote.
std::optional<std::vector<Parts>> interpret(const Manifest &m,
                                            const std::vector<Parts> &inputs) {
  std::map<int, Parts> mem; // by root
  for (size_t i = 0; i < m.inputs.size(); ++i)
    mem[rootTensor(m, m.inputs[i])] = inputs[i];
  for (size_t t = 0; t < m.tensors.size(); ++t)
    if (m.tensors[t].kind == TensorKind::Weight)
      mem[int(t)] = {{int(t), mix(7, t)}};
  auto read = [&](int t) -> std::optional<uint64_t> {
    const Parts &p = mem[rootTensor(m, t)];
    if (p.empty())
      return std::nullopt;
    uint64_t h = 1;
    for (const auto &[k, v] : p)
      h = mix(mix(h, uint64_t(k)), v);
    return h;
  };
  for (const Step &s : m.steps) {
    if (s.kernel < 0) {
      mem[rootTensor(m, s.to)] = mem[rootTensor(m, s.from)];
      continue;
    }
    const KernelLaunch &k = m.kernels[size_t(s.kernel)];
    uint64_t h = mix(0, uint64_t(s.kernel));
    for (int a : k.args) {
      if (a == k.outputs[0] || m.tensors[size_t(a)].kind == TensorKind::State)
        continue;
      auto v = read(a);
      if (!v)
        return std::nullopt;
      h = mix(h, *v);
    }
    mem[rootTensor(m, k.outputs[0])][k.outputs[0]] = h;
  }
  std::vector<Parts> out;
  for (int t : m.outputs)
    out.push_back(mem[rootTensor(m, t)]);
  return out;
}

} // namespace

TEST_CASE("pipeline stages compute what the whole plan does", "[pipeline]") {
  const Manifest m = model();
  const std::vector<Parts> in = {{{0, 42}}};
  const auto whole = interpret(m, in);
  REQUIRE(whole);
  std::string err;
  for (int stages = 1; stages <= 6; ++stages) {
    INFO(stages << " stages");
    const std::vector<size_t> cuts = pipelineCuts(m, stages, err);
    INFO(err);
    REQUIRE(cuts.size() == size_t(stages) + 1);
    std::vector<Parts> carried = in;
    for (int s = 0; s < stages; ++s) {
      INFO("stage " << s << ": steps " << cuts[s] << " to " << cuts[s + 1]);
      REQUIRE(cuts[s] < cuts[s + 1]);
      // Never inside the concat's writes nor the cuSync pair and its join.
      for (size_t b : {size_t(3), size_t(9), size_t(10)})
        CHECK(cuts[s] != b);
      const Manifest st = pipelineStage(m, cuts[s], cuts[s + 1]);
      REQUIRE(st.inputs.size() == carried.size());
      for (size_t i = 0; i < st.inputs.size(); ++i) {
        const Tensor &t = st.tensors[size_t(rootTensor(st, st.inputs[i]))];
        CHECK(t.kind == TensorKind::Input);
        CHECK(t.index == int(i));
      }
      for (size_t i = 0; i < st.outputs.size(); ++i) {
        const Tensor &t = st.tensors[size_t(rootTensor(st, st.outputs[i]))];
        CHECK(t.kind == TensorKind::Output);
        CHECK(t.index == int(i));
      }
      for (const Step &x : st.steps)
        CHECK(x.after < int(st.steps.size()));
      // A stage whose pairs read the epoch advances it after them.
      int lastRead = -1, advance = -1;
      for (size_t i = 0; i < st.steps.size(); ++i) {
        if (st.steps[i].kernel < 0)
          continue;
        const std::vector<int> &args =
            st.kernels[size_t(st.steps[i].kernel)].args;
        if (args == std::vector<int>{1})
          advance = int(i);
        else if (std::count(args.begin(), args.end(), 1))
          lastRead = int(i);
      }
      CHECK((lastRead < 0 || advance > lastRead));
      if (s > 0) { // this stage's inputs are named as the last one's outputs
        const Manifest prevStage = pipelineStage(m, cuts[s - 1], cuts[s]);
        for (size_t i = 0; i < st.inputs.size(); ++i)
          CHECK(st.tensors[size_t(st.inputs[i])].name ==
                prevStage.tensors[size_t(prevStage.outputs[i])].name);
      }
      auto out = interpret(st, carried);
      REQUIRE(out);
      carried = *out;
    }
    CHECK(carried == *whole);
  }
}

TEST_CASE("pipeline stages: a stage loads only the weights it reads, and "
          "the cuts balance them",
          "[pipeline]") {
  const Manifest m = model();
  std::string err;
  const std::vector<size_t> cuts = pipelineCuts(m, 2, err);
  REQUIRE(cuts.size() == 3);
  size_t weights = 0;
  for (int s = 0; s < 2; ++s) {
    const Manifest st = pipelineStage(m, cuts[s], cuts[s + 1]);
    size_t mine = 0;
    for (const Tensor &t : st.tensors)
      mine += t.kind == TensorKind::Weight;
    // Ten weights, one a layer: five each side, give or take the layer
    // the cut may not split.
    CHECK(mine >= 4);
    CHECK(mine <= 6);
    weights += mine;
  }
  CHECK(weights == 10);
  // The middle output (y3) leaves the model at the last stage, passed on.
  const Manifest last = pipelineStage(m, cuts[1], cuts[2]);
  CHECK(last.outputs.size() == 2);
  CHECK(last.tensors[size_t(last.outputs[1])].name == "y3");
}

TEST_CASE("pipeline stages: what cannot be cut says why", "[pipeline]") {
  Manifest m = model();
  std::string err;
  CHECK(pipelineCuts(m, 0, err).empty());
  CHECK(pipelineCuts(m, int(m.steps.size()) + 1, err).empty());
  CHECK(err.find("pipeline stages") != std::string::npos);
  m.steps[0].collective = "all-reduce";
  CHECK(pipelineCuts(m, 2, err).empty());
  CHECK(err.find("tensor-parallel") != std::string::npos);
}

//===- Pipeline.cpp - a plan cut into pipeline stages ---------------------===//
#include "cuts/rt/Pipeline.h"

#include "cuts/rt/Offload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace cuts::rt {

namespace {

constexpr uint64_t kWeightAlign = 256; // the weights section's

/// Per root tensor: the first and last step writing it and the first and
/// last touching it (-1: none).
struct Touches {
  std::vector<int64_t> firstWrite, lastWrite, firstTouch, lastTouch;
};

Touches touches(const Manifest &m) {
  const size_t n = m.tensors.size();
  const std::vector<int64_t> none(n, -1);
  Touches t{none, none, none, none};
  auto use = [&](int id, int64_t i, bool writes) {
    const int r = rootTensor(m, id);
    if (r < 0)
      return;
    if (t.firstTouch[size_t(r)] < 0)
      t.firstTouch[size_t(r)] = i;
    t.lastTouch[size_t(r)] = i;
    if (!writes)
      return;
    if (t.firstWrite[size_t(r)] < 0)
      t.firstWrite[size_t(r)] = i;
    t.lastWrite[size_t(r)] = i;
  };
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const Step &s = m.steps[i];
    if (s.kernel < 0) {
      use(s.from, int64_t(i), false), use(s.to, int64_t(i), true);
      continue;
    }
    const KernelLaunch &k = m.kernels[size_t(s.kernel)];
    for (int a : k.args)
      use(a, int64_t(i), std::count(k.outputs.begin(), k.outputs.end(), a));
  }
  return t;
}

/// The step that advances state `r` once a run, if it has one: the plan's
/// last step touching it, a kernel of that state alone (cuSync's epoch
/// count, whose waits span the plan). -1 for a semaphore of one pair.
int64_t advanceStep(const Manifest &m, const Touches &t, size_t r) {
  const int64_t i = t.lastTouch[r];
  if (i < 0 || m.steps[size_t(i)].kernel < 0)
    return -1;
  for (int a : m.kernels[size_t(m.steps[size_t(i)].kernel)].args)
    if (rootTensor(m, a) != int(r))
      return -1;
  return i;
}

bool activation(const Tensor &t) {
  return t.kind == TensorKind::Input || t.kind == TensorKind::Output ||
         t.kind == TensorKind::Intermediate;
}

std::vector<int> crossing(const Manifest &m, const Touches &t, size_t b) {
  std::vector<int> out;
  for (size_t r = 0; r < m.tensors.size(); ++r) {
    const Tensor &x = m.tensors[r];
    if (!activation(x))
      continue;
    const bool before = x.kind == TensorKind::Input ||
                        (t.firstWrite[r] >= 0 && t.firstWrite[r] < int64_t(b));
    const bool after =
        x.kind == TensorKind::Output || t.lastTouch[r] >= int64_t(b);
    if (before && after)
      out.push_back(int(r));
  }
  return out;
}

/// Whether a stage may end before step `b`: no step from `b` on waits for
/// one before it (a side stream forked or joined across), no cuSync
/// semaphore is shared across it (an epoch counter may be: each stage
/// advances its own), and no tensor crossing it is written after it (a
/// stage never writes its inputs).
bool cutAllowed(const Manifest &m, const Touches &t, size_t b) {
  for (size_t i = b; i < m.steps.size(); ++i)
    if (m.steps[i].after >= 0 && size_t(m.steps[i].after) < b)
      return false;
  const int64_t at = int64_t(b);
  for (size_t r = 0; r < m.tensors.size(); ++r) {
    if (m.tensors[r].kind != TensorKind::State || t.firstTouch[r] < 0 ||
        t.firstTouch[r] >= at || t.lastTouch[r] < at)
      continue;
    if (advanceStep(m, t, r) < 0)
      return false;
  }
  for (int r : crossing(m, t, b))
    if (t.lastWrite[size_t(r)] >= at)
      return false;
  return true;
}

uint64_t crossingBytes(const Manifest &m, const Touches &t, size_t b) {
  uint64_t bytes = 0;
  for (int r : crossing(m, t, b))
    bytes += m.tensors[size_t(r)].bytes();
  return bytes;
}

/// What each step costs a stage: the weight bytes it reads, or where the
/// plan has none, its FLOPs, or else one.
std::vector<double> stepCosts(const Manifest &m) {
  std::vector<double> bytes(m.steps.size(), 0), flops(m.steps.size(), 0);
  double totalBytes = 0, totalFlops = 0;
  for (size_t i = 0; i < m.steps.size(); ++i) {
    for (int w : weightsOfStep(m, i))
      bytes[i] += double(m.tensors[size_t(w)].bytes());
    if (m.steps[i].kernel >= 0)
      flops[i] = m.kernels[size_t(m.steps[i].kernel)].flops;
    totalBytes += bytes[i], totalFlops += flops[i];
  }
  if (totalBytes > 0)
    return bytes;
  if (totalFlops > 0)
    return flops;
  return std::vector<double>(m.steps.size(), 1.0);
}

} // namespace

std::vector<int> crossingTensors(const Manifest &m, size_t b) {
  return crossing(m, touches(m), b);
}

std::vector<size_t> pipelineCuts(const Manifest &m, int stages,
                                 std::string &error) {
  const size_t n = m.steps.size();
  if (stages < 1 || size_t(stages) > n) {
    error = "cannot cut a plan of " + std::to_string(n) + " steps into " +
            std::to_string(stages) + " pipeline stages";
    return {};
  }
  for (const Step &s : m.steps)
    if (!s.collective.empty()) {
      error = "a tensor-parallel plan is not cut into pipeline stages";
      return {};
    }
  const Touches t = touches(m);
  const std::vector<double> cost = stepCosts(m);
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + cost[i];
  const double share = prefix[n] / stages;
  std::vector<size_t> cuts = {0};
  for (int k = 1; k < stages; ++k) {
    const double target = share * k;
    // Within a tenth of a stage of the balanced cut, the fewest bytes
    // crossing (then the nearest); else the allowed cut nearest to it.
    size_t best = 0;
    bool bestNear = false;
    uint64_t bestBytes = 0;
    double bestOff = 0;
    for (size_t b = cuts.back() + 1; b + size_t(stages - k) <= n; ++b) {
      if (!cutAllowed(m, t, b))
        continue;
      const double off = std::fabs(prefix[b] - target);
      const bool near = off <= 0.1 * share;
      const uint64_t bytes = near ? crossingBytes(m, t, b) : 0;
      const bool better =
          best == 0 || (near && !bestNear) ||
          (near == bestNear &&
           (bytes < bestBytes || (bytes == bestBytes && off < bestOff)));
      if (better)
        best = b, bestNear = near, bestBytes = bytes, bestOff = off;
    }
    if (best == 0) {
      error = "no step boundary after step " + std::to_string(cuts.back()) +
              " can end pipeline stage " + std::to_string(k - 1) +
              " (cuSync pairs and side streams are kept whole)";
      return {};
    }
    cuts.push_back(best);
  }
  cuts.push_back(n);
  return cuts;
}

namespace {

/// The names the tensors `ids` cross a cut under: their own, or "t<id>"
/// where a name repeats or is empty (runs bind by name), so that both
/// stages beside the cut name them alike.
std::vector<std::string> crossingNames(const Manifest &m,
                                       const std::vector<int> &ids) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (int id : ids) {
    std::string n = m.tensors[size_t(id)].name;
    if (n.empty() || !seen.insert(n).second)
      n = "t" + std::to_string(id);
    seen.insert(n);
    out.push_back(n);
  }
  return out;
}

/// Each state the stage's steps touch whose advance step (cuSync's epoch
/// count) lies outside it: that step again, at the stage's end.
void advanceStates(const Manifest &m, size_t begin, size_t end, Manifest &s) {
  const Touches t = touches(m);
  auto used = [&](size_t r) { // by a kernel of the stage
    for (size_t i = begin; i < end; ++i)
      if (m.steps[i].kernel >= 0)
        for (int a : m.kernels[size_t(m.steps[i].kernel)].args)
          if (rootTensor(m, a) == int(r))
            return true;
    return false;
  };
  std::set<int64_t> advances;
  for (size_t r = 0; r < m.tensors.size(); ++r) {
    if (m.tensors[r].kind != TensorKind::State)
      continue;
    const int64_t a = advanceStep(m, t, r);
    if (a >= 0 && (a < int64_t(begin) || a >= int64_t(end)) && used(r))
      advances.insert(a);
  }
  for (int64_t a : advances) {
    Step x = m.steps[size_t(a)];
    x.after = -1, x.pdl = false, x.stream = 0;
    s.steps.push_back(x);
  }
}

} // namespace

Manifest pipelineStage(const Manifest &m, size_t begin, size_t end) {
  const size_t n = m.steps.size();
  Manifest s = m;
  const std::vector<int> in = begin == 0 ? m.inputs : crossingTensors(m, begin);
  const std::vector<int> out = end == n ? m.outputs : crossingTensors(m, end);
  const std::vector<std::string> inNames = crossingNames(m, in),
                                 outNames = crossingNames(m, out);
  for (Tensor &x : s.tensors)
    if (x.kind == TensorKind::Input || x.kind == TensorKind::Output)
      x.kind = TensorKind::Intermediate, x.index = -1, x.batchAxis = -1;
  s.inputs = in;
  for (size_t i = 0; i < in.size(); ++i) {
    Tensor &r = s.tensors[size_t(rootTensor(m, in[i]))];
    r.kind = TensorKind::Input, r.index = int(i);
    if (begin > 0)
      r.name = inNames[i];
  }
  s.steps.assign(m.steps.begin() + int64_t(begin),
                 m.steps.begin() + int64_t(end));
  for (Step &x : s.steps)
    x.after = x.after >= 0 ? x.after - int(begin) : -1;
  if (!s.steps.empty())
    s.steps.front().pdl = false; // it follows the host's copies
  s.outputs.clear();
  for (size_t j = 0; j < out.size(); ++j) {
    const int root = rootTensor(m, out[j]);
    int id = out[j];
    if (s.tensors[size_t(root)].kind != TensorKind::Input) {
      s.tensors[size_t(root)].kind = TensorKind::Output;
      s.tensors[size_t(root)].index = int(j);
    } else { // passed through this stage: copied into an output of its own
      Tensor copy = m.tensors[size_t(out[j])];
      copy.kind = TensorKind::Output, copy.index = int(j), copy.viewOf = -1;
      copy.batchAxis = -1;
      s.tensors.push_back(copy);
      Step c;
      c.from = out[j], c.to = id = int(s.tensors.size() - 1);
      s.steps.push_back(c);
    }
    if (end < n)
      s.tensors[size_t(rootTensor(s, id))].name = outNames[j];
    s.outputs.push_back(id);
  }
  advanceStates(m, begin, end, s);
  // Weights no step of the stage reads are not loaded.
  std::vector<bool> read(s.tensors.size(), false);
  for (size_t i = 0; i < s.steps.size(); ++i)
    for (int w : weightsOfStep(s, i))
      read[size_t(w)] = true;
  for (size_t i = 0; i < s.tensors.size(); ++i)
    if (s.tensors[i].kind == TensorKind::Weight && !read[i])
      s.tensors[i].kind = TensorKind::Intermediate,
      s.tensors[i].weightOffset = 0;
  return s;
}

SectionReader fileSection(std::FILE *f, uint64_t sectionOffset) {
  return [f, sectionOffset](uint64_t offset, uint64_t n, uint8_t *to) {
    return fseeko(f, off_t(sectionOffset + offset), SEEK_SET) == 0 &&
           std::fread(to, 1, n, f) == n;
  };
}

bool packSpans(const std::map<uint64_t, uint64_t> &spans,
               const SectionReader &read, std::vector<uint8_t> &packed,
               std::map<uint64_t, uint64_t> &at) {
  packed.clear();
  for (const auto &[offset, bytes] : spans) {
    const uint64_t to =
        (packed.size() + kWeightAlign - 1) / kWeightAlign * kWeightAlign;
    packed.resize(to + bytes);
    if (!read(offset, bytes, packed.data() + to))
      return false;
    at[offset] = to;
  }
  return true;
}

namespace {

/// packWeights' body, whichever way the section is read.
bool packTensors(Manifest &m, const SectionReader &read,
                 std::vector<uint8_t> &packed) {
  std::map<uint64_t, uint64_t> spans, at;
  for (const Tensor &t : m.tensors)
    if (t.kind == TensorKind::Weight)
      spans[t.weightOffset] = std::max(spans[t.weightOffset], t.bytes());
  if (!packSpans(spans, read, packed, at))
    return false;
  for (Tensor &t : m.tensors)
    if (t.kind == TensorKind::Weight)
      t.weightOffset = at[t.weightOffset];
  return true;
}

} // namespace

void packWeights(Manifest &m, const uint8_t *all,
                 std::vector<uint8_t> &packed) {
  packTensors(
      m,
      [all](uint64_t offset, uint64_t n, uint8_t *to) {
        std::copy(all + offset, all + offset + n, to);
        return true;
      },
      packed);
}

bool packWeightsFromFile(Manifest &m, const std::string &path,
                         uint64_t sectionOffset, std::vector<uint8_t> &packed,
                         std::string &error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  const bool ok = f && packTensors(m, fileSection(f, sectionOffset), packed);
  if (f)
    std::fclose(f);
  if (!ok)
    error = path + ": cannot read a stage's weights";
  return ok;
}

std::vector<size_t> stageCuts(const Artifact &a, int stages,
                              std::string &error) {
  if (!a.profiles.empty() || a.manifest.ranks > 1) {
    error = a.manifest.ranks > 1
                ? "a tensor-parallel model is not cut into pipeline stages"
                : "a model with batch profiles is not cut into pipeline "
                  "stages (compile it for one batch)";
    return {};
  }
  return pipelineCuts(a.manifest, stages, error);
}

bool takeStage(Artifact &a, int stages, int stage, std::vector<uint8_t> *packed,
               std::string &error) {
  if (stage < 0 || stage >= stages) {
    error = "pipeline stage " + std::to_string(stage) + " is not one of " +
            std::to_string(stages);
    return false;
  }
  const std::vector<size_t> cuts = stageCuts(a, stages, error);
  if (cuts.empty())
    return false;
  a.manifest =
      pipelineStage(a.manifest, cuts[size_t(stage)], cuts[size_t(stage) + 1]);
  if (packed)
    packWeights(a.manifest, a.section("weights", nullptr), *packed);
  return true;
}

} // namespace cuts::rt

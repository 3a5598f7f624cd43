//===- Emulate.cpp - run a whole artifact on the CPU ----------------------===//
#include "tools/support/Emulate.h"

#include "codegen/emit/Collective.h"
#include "codegen/emit/HostCompile.h"
#include "cuts/rt/Binding.h"
#include "cuts/rt/Blas.h"
#include "cuts/rt/Library.h"
#include "tools/support/TensorFile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace cuts {

namespace {

/// A library call's tensor on the CPU: elements of its math's dtype read
/// as double, results rounded to it once; tf32 rounds the product's
/// operands to 10 mantissa bits, as the tensor cores do.
class Elements {
public:
  Elements(uint8_t *base, rt::LibraryMath m)
      : p(base), dtype(rt::libraryDtype(m)), bytes(rt::libraryElementBytes(m)),
        tf32(m == rt::LibraryMath::Tf32) {}
  double operand(int64_t i) const {
    double v = (*this)[i];
    return tf32 ? roundTf32(v) : v;
  }
  double operator[](int64_t i) const {
    return decodeElement(dtype, p + uint64_t(i) * bytes);
  }
  void set(int64_t i, double v) {
    encodeElement(dtype, v, p + uint64_t(i) * bytes);
  }
  explicit operator bool() const { return p != nullptr; }

private:
  static double roundTf32(double v) {
    float f = float(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7f800000u) != 0x7f800000u) // round to nearest even
      bits = (bits + 0xfffu + ((bits >> 13) & 1u)) & ~0x1fffu;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  uint8_t *p;
  const char *dtype;
  uint64_t bytes;
  bool tf32;
};

/// A library call's args in their order: two operands, the optional bias
/// and residual, and the output (bias and z null where absent).
struct LibraryArgs {
  Elements in0, in1, bias, z, y;
};
template <typename Pointer>
LibraryArgs libraryArgs(const rt::KernelLaunch &k, Pointer pointer,
                        rt::LibraryMath math, bool bias, bool residual) {
  auto view = [&](bool present, size_t i) {
    return Elements(
        present ? static_cast<uint8_t *>(pointer(k.args[i])) : nullptr, math);
  };
  return {view(true, 0), view(true, 1), view(bias, 2), view(residual, 2 + bias),
          view(true, k.args.size() - 1)};
}

/// cuBLASLt's epilogue activation of x (its GELU the tanh form).
double activate(rt::GemmAct act, double x) {
  switch (act) {
  case rt::GemmAct::Relu:
    return std::max(x, 0.0);
  case rt::GemmAct::GeluTanh:
    return 0.5 * x *
           (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  case rt::GemmAct::None:
    break;
  }
  return x;
}

/// cuBLASLt's product on the CPU, Y = act(alpha A B + bias + Z),
/// accumulated in double.
template <typename Pointer>
bool emulateGemm(const rt::KernelLaunch &k, Pointer pointer,
                 std::string &error) {
  auto spec = rt::decodeGemmSpec(k.libraryParams, error);
  if (!spec)
    return false;
  const rt::GemmSpec &s = *spec;
  auto [A, B, bias, z, y] = libraryArgs(k, pointer, s.math, s.bias, s.residual);
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t a0 = s.batchA ? b * s.M * s.K : 0;
    const int64_t b0 = s.batchB ? b * s.K * s.N : 0;
    const int64_t z0 = s.batchZ ? b * s.M * s.N : 0, y0 = b * s.M * s.N;
    for (int64_t i = 0; i < s.M; ++i)
      for (int64_t j = 0; j < s.N; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < s.K; ++c)
          acc += A.operand(a0 + (s.transA ? c * s.M + i : i * s.K + c)) *
                 B.operand(b0 + (s.transB ? j * s.K + c : c * s.N + j));
        acc *= double(s.alpha);
        if (bias)
          acc += bias[j];
        if (z)
          acc += z[z0 + i * s.N + j];
        y.set(y0 + i * s.N + j, activate(s.act, acc));
      }
  }
  return true;
}

/// cuDNN's fused convolution on the CPU, y = act(conv(x, w) + bias + z),
/// accumulated in double.
template <typename Pointer>
bool emulateConv(const rt::KernelLaunch &k, Pointer pointer,
                 std::string &error) {
  auto spec = rt::decodeConvSpec(k.libraryParams, error);
  if (!spec)
    return false;
  const rt::ConvSpec &s = *spec;
  auto [x, w, bias, z, y] = libraryArgs(k, pointer, s.math, s.bias, s.residual);
  int64_t cg = s.C / s.group, kg = s.K / s.group;
  // Element offsets of x (channel c) and y (channel k) in either layout.
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t w, int64_t C,
                int64_t H, int64_t W) {
    return s.channelsLast ? ((n * H + h) * W + w) * C + c
                          : ((n * C + c) * H + h) * W + w;
  };
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t ko = 0; ko < s.K; ++ko) {
      int64_t g = ko / kg;
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          double acc = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t fh = 0; fh < s.FH; ++fh) {
              int64_t ih = oh * s.strideH - s.padH + fh * s.dilH;
              if (ih < 0 || ih >= s.H)
                continue;
              for (int64_t fw = 0; fw < s.FW; ++fw) {
                int64_t iw = ow * s.strideW - s.padW + fw * s.dilW;
                if (iw < 0 || iw >= s.W)
                  continue;
                acc += x.operand(at(n, g * cg + c, ih, iw, s.C, s.H, s.W)) *
                       w.operand(s.channelsLast
                                     ? ((ko * s.FH + fh) * s.FW + fw) * cg + c
                                     : ((ko * cg + c) * s.FH + fh) * s.FW + fw);
              }
            }
          int64_t o = at(n, ko, oh, ow, s.K, s.OH, s.OW);
          if (bias)
            acc += bias[ko];
          if (z)
            acc += z[o];
          y.set(o, s.relu ? std::max(acc, 0.0) : acc);
        }
    }
  return true;
}

template <typename Pointer>
bool emulateLibrary(const rt::KernelLaunch &k, Pointer pointer,
                    std::string &error) {
  if (k.library == rt::kCublasGemm)
    return emulateGemm(k, pointer, error);
  if (k.library == rt::kCudnnConv)
    return emulateConv(k, pointer, error);
  error = "unknown library call";
  return false;
}

/// Fills `bytes` bytes at p with values no kernel computes: NaN for
/// floating point, 0xA5 bytes for integers and bools.
void poison(const std::string &dtype, uint8_t *p, uint64_t bytes) {
  auto fill = [&](auto v) {
    for (uint64_t at = 0; at + sizeof v <= bytes; at += sizeof v)
      std::memcpy(p + at, &v, sizeof v);
  };
  if (dtype == "float32")
    fill(std::numeric_limits<float>::quiet_NaN());
  else if (dtype == "float64")
    fill(std::numeric_limits<double>::quiet_NaN());
  else if (dtype == "float16")
    fill(uint16_t(0x7e00));
  else if (dtype == "bfloat16")
    fill(uint16_t(0x7fc0));
  else
    std::memset(p, 0xa5, bytes);
}

} // namespace

const char *kernelElementType(const std::string &dtype) {
  static const std::map<std::string, const char *> types = {
      {"float32", "float"},
      {"int64", "long long"},
      {"int32", "int"},
      {"bool", "bool"},
      {"float64", "double"},
      {"int16", "short"},
      {"int8", "signed char"},
      {"uint8", "unsigned char"},
      {"float16", "unsigned short"},
      {"bfloat16", "unsigned short"}};
  auto it = types.find(dtype);
  return it == types.end() ? nullptr : it->second;
}

namespace {

/// The kernel's parameters as the code generator declares them: a pointer
/// to each tensor's element type, const unless the kernel writes it.
std::optional<KernelSignature> signatureOf(const rt::Manifest &m,
                                           const rt::KernelLaunch &k,
                                           std::string &error) {
  KernelSignature sig{k.name, {}};
  for (size_t i = 0; i < k.args.size(); ++i) {
    bool out = std::find(k.outputs.begin(), k.outputs.end(), k.args[i]) !=
               k.outputs.end();
    const rt::Tensor &t = m.tensors[rt::rootTensor(m, k.args[i])];
    const std::string &dtype = m.tensors[k.args[i]].dtype;
    // cuSync's counters are unsigned (they wrap).
    const char *type =
        t.kind == rt::TensorKind::State ? "unsigned" : kernelElementType(dtype);
    if (!type) {
      error = "kernel " + k.name + ": argument " + std::to_string(i) +
              " is a " + dtype + " tensor, which no kernel takes";
      return std::nullopt;
    }
    sig.params.push_back(
        {"a" + std::to_string(i),
         std::string(out ? "" : "const ") + type + " *__restrict__"});
  }
  return sig;
}

/// Every generated kernel the plan launches, compiled for the host in
/// batches of kBatch: one compiler run a batch (the emulation header's
/// machinery is compiled once a batch, not once a kernel).
bool compileKernels(const rt::Artifact &a, const rt::Manifest &m, bool graph,
                    std::map<std::string, std::unique_ptr<HostKernel>> &out,
                    bool verbose, std::string &error) {
  constexpr size_t kBatch = 16;
  std::vector<HostSource> batch;
  auto flush = [&] {
    if (batch.empty())
      return true;
    auto start = std::chrono::steady_clock::now();
    auto kernels = compileForHost(batch, error);
    if (kernels.empty())
      return false;
    if (verbose)
      std::fprintf(stderr, "compiled %zu kernel(s) for the host in %.2f s\n",
                   batch.size(),
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    for (auto &k : kernels)
      out.emplace(k->signature().name, std::move(k));
    batch.clear();
    return true;
  };
  std::set<std::string> seen;
  for (const rt::Step &step : m.steps) {
    if (step.kernel < 0)
      continue;
    const rt::KernelLaunch &k = m.kernels[step.kernelRun(graph)];
    if (k.isLibrary() || !seen.insert(k.name).second)
      continue;
    HostSource h{a.source(k), {}};
    if (h.source.empty()) {
      error = "kernel " + k.name + " has no source in the artifact";
      return false;
    }
    auto sig = signatureOf(m, k, error);
    if (!sig)
      return false;
    h.kernel = std::move(*sig);
    batch.push_back(std::move(h));
    if (batch.size() == kBatch && !flush())
      return false;
  }
  return flush();
}

} // namespace

namespace {

/// The batch the inputs carry (from the first batched input's bytes, with
/// the largest plan's rows), 0 for a model without profiles; nullopt (and
/// `error`) for bytes no batch gives.
std::optional<int64_t>
inputBatch(const rt::Artifact &a,
           const std::vector<std::vector<uint8_t>> &inputs,
           std::string &error) {
  const rt::Manifest &big = *a.plans().back();
  for (size_t i = 0; i < big.inputs.size() && i < inputs.size(); ++i) {
    const rt::Tensor &t = big.tensors[size_t(big.inputs[i])];
    if (t.batchAxis < 0 || t.bytes() == 0)
      continue;
    const uint64_t row = t.bytes() / uint64_t(t.shape[0]);
    const uint64_t n = inputs[i].size() / row;
    if (inputs[i].size() % row || n < 1 || int64_t(n) > big.batch) {
      error = "input '" + t.name + "' has " + std::to_string(inputs[i].size()) +
              " bytes: no batch from 1 to " + std::to_string(big.batch) +
              " of " + std::to_string(row) + "-byte rows";
      return std::nullopt;
    }
    return int64_t(n);
  }
  return big.batch;
}

} // namespace

namespace {

/// The all-reduce's sum kernels compiled for the host, by dtype suffix.
using SumKernels = std::map<std::string, std::unique_ptr<HostKernel>>;

/// One plan's run on the host: its tensors' memory (per root, 8-byte
/// aligned), its kernels compiled, and the next step.
struct PlanRun {
  const rt::Manifest *m = nullptr;
  bool graph = false; // library steps run their call, not their alternative
  std::vector<std::vector<uint64_t>> memory;
  std::map<std::string, std::unique_ptr<HostKernel>> compiled;
  size_t next = 0;

  void *pointer(int t) { return memory[size_t(rt::rootTensor(*m, t))].data(); }
  bool setUp(const rt::Artifact &a, const rt::Manifest &plan,
             const std::vector<std::vector<uint8_t>> &inputs, bool verbose,
             std::string &error);
  /// Runs steps until a collective (left as `next`) or the end.
  bool runToCollective(bool verbose, std::string &error);
  bool done() const { return next >= m->steps.size(); }
};

// Inputs and weights are copied in (kernels take them as const), the rest
// poisoned so that an element no kernel writes cannot pass a comparison.
bool PlanRun::setUp(const rt::Artifact &a, const rt::Manifest &plan,
                    const std::vector<std::vector<uint8_t>> &inputs,
                    bool verbose, std::string &error) {
  m = &plan;
  uint64_t weightBytes = 0;
  const uint8_t *weights = a.section("weights", &weightBytes);
  memory.assign(plan.tensors.size(), {});
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const rt::Tensor &x = plan.tensors[t];
    uint64_t bytes = x.bytes();
    if (x.kind != rt::TensorKind::View)
      memory[t].assign(size_t((bytes + 7) / 8), 0);
    uint8_t *p = reinterpret_cast<uint8_t *>(memory[t].data());
    switch (x.kind) {
    case rt::TensorKind::Input:
      if (inputs[x.index].size() != bytes) {
        error = "input '" + x.name + "' has " +
                std::to_string(inputs[x.index].size()) + " bytes, " +
                std::to_string(bytes) + " expected (" + x.dtype + " " +
                std::to_string(bytes /
                               std::max<uint64_t>(1, rt::dtypeBytes(x.dtype))) +
                " elements)";
        return false;
      }
      if (bytes)
        std::memcpy(p, inputs[x.index].data(), bytes);
      break;
    case rt::TensorKind::Weight:
      if (bytes)
        std::memcpy(p, weights + x.weightOffset, bytes);
      break;
    case rt::TensorKind::Output:
    case rt::TensorKind::Intermediate:
      poison(x.dtype, p, bytes);
      break;
    case rt::TensorKind::State: // zeroed, as a session's: the first run
    case rt::TensorKind::View:
      break;
    }
  }
  return compileKernels(a, plan, graph, compiled, verbose, error);
}

bool PlanRun::runToCollective(bool verbose, std::string &error) {
  for (; next < m->steps.size(); ++next) {
    const rt::Step &step = m->steps[next];
    const size_t s = next;
    if (!step.collective.empty())
      return true;
    if (step.kernel < 0) {
      // Equal byte sizes (validated); a view may be shorter than its root.
      if (uint64_t bytes = m->tensors[step.to].bytes())
        std::memcpy(pointer(step.to), pointer(step.from), bytes);
      continue;
    }
    const rt::KernelLaunch &k = m->kernels[step.kernelRun(graph)];
    if (k.isLibrary()) {
      if (!emulateLibrary(
              k, [&](int t) { return pointer(t); }, error)) {
        error = "step " + std::to_string(s) + " (" + k.library + "): " + error;
        return false;
      }
      continue;
    }
    auto it = compiled.find(k.name);
    if (it == compiled.end()) {
      error = "kernel " + k.name + " was not compiled";
      return false;
    }
    std::vector<KernelArg> args;
    for (int t : k.args)
      args.push_back(KernelArg::buffer(pointer(t)));
    auto start = std::chrono::steady_clock::now();
    if (!it->second->launch({unsigned(k.grid), 1, 1}, {unsigned(k.block), 1, 1},
                            args, error, size_t(k.sharedBytes))) {
      error =
          "kernel " + k.name + " (step " + std::to_string(s) + "): " + error;
      return false;
    }
    if (verbose)
      std::fprintf(stderr, "step %zu: %s ran in %.2f s\n", s, k.name.c_str(),
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count());
  }
  return true;
}

/// The sum kernel of a dtype's all-reduce (codegen/emit/Collective.h),
/// compiled for the host once: the GPU's copy-engine path runs the same.
const HostKernel *sumKernel(const std::string &dtype, SumKernels &sums,
                            std::string &error) {
  const char *suffix = dtype == "float32"    ? "f32"
                       : dtype == "float16"  ? "f16"
                       : dtype == "bfloat16" ? "bf16"
                                             : nullptr;
  if (!suffix) {
    error = "an all-reduce of " + dtype + " (float32, float16 or bfloat16)";
    return nullptr;
  }
  std::unique_ptr<HostKernel> &k = sums[suffix];
  if (!k)
    k = compileForHost(codegen::reduceChunksSource(),
                       codegen::reduceChunksSignature(suffix), error);
  return k.get();
}

/// The ranks' all-reduce at their current step: the ranks' tensors side by
/// side, summed in rank order in fp32 by the sum kernel (so every rank gets
/// the same bits, those of the GPU's copy-engine all-reduce), in place.
bool allReduce(std::vector<PlanRun> &ranks, SumKernels &sums,
               std::string &error) {
  for (const PlanRun &r : ranks)
    if (r.done()) {
      error = "the ranks' plans reach different collectives";
      return false;
    }
  const rt::Step &first = ranks[0].m->steps[ranks[0].next];
  const rt::Tensor &t = ranks[0].m->tensors[first.from];
  const uint64_t bytes = t.bytes(), size = rt::dtypeBytes(t.dtype);
  for (const PlanRun &r : ranks) {
    const rt::Step &s = r.m->steps[r.next];
    if (s.collective != first.collective ||
        r.m->tensors[s.from].bytes() != bytes ||
        r.m->tensors[s.from].dtype != t.dtype) {
      error = "the ranks' plans reach different collectives";
      return false;
    }
  }
  const HostKernel *sum = sumKernel(t.dtype, sums, error);
  if (!sum)
    return false;
  std::vector<uint8_t> in(ranks.size() * bytes), out(bytes);
  for (size_t r = 0; r < ranks.size(); ++r)
    std::memcpy(in.data() + r * bytes,
                ranks[r].pointer(ranks[r].m->steps[ranks[r].next].from), bytes);
  if (!sum->launch({4, 1, 1}, {64, 1, 1},
                   {KernelArg::buffer(in.data()),
                    KernelArg::scalar(int64_t(ranks.size())),
                    KernelArg::scalar(int64_t(bytes / size)),
                    KernelArg::buffer(out.data())},
                   error))
    return false;
  for (PlanRun &r : ranks) {
    std::memcpy(r.pointer(r.m->steps[r.next].from), out.data(), bytes);
    ++r.next;
  }
  return true;
}

} // namespace

bool emulateArtifact(const rt::Artifact &a,
                     const std::vector<std::vector<uint8_t>> &given,
                     std::vector<std::vector<uint8_t>> &outputs,
                     std::string &error, bool verbose, bool graph) {
  // The plan serving the inputs' batch; a batch no profile has zero-padded
  // to the plan's, and its outputs sliced, as the runtime does.
  std::vector<int64_t> batches;
  for (const rt::Manifest *p : a.plans())
    batches.push_back(p->batch);
  const auto batch = inputBatch(a, given, error);
  if (!batch)
    return false;
  const rt::Manifest &m = *a.plans()[rt::choosePlan(batches, *batch)];
  if (!rt::runsBatch(m, *batch, error))
    return false;
  if (given.size() != m.inputs.size()) {
    error = "the model takes " + std::to_string(m.inputs.size()) + " inputs, " +
            std::to_string(given.size()) + " given";
    return false;
  }
  std::vector<std::vector<uint8_t>> inputs = given;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const rt::Tensor &t = m.tensors[size_t(m.inputs[i])];
    if (t.batchAxis >= 0 && inputs[i].size() < t.bytes())
      inputs[i].resize(t.bytes(), 0);
  }
  // A tensor-parallel model's ranks run in lockstep: each to its next
  // all-reduce, then the sum.
  std::vector<const rt::Manifest *> plans = {&m};
  for (const rt::Manifest &r : a.rankPlans)
    plans.push_back(&r);
  std::vector<PlanRun> ranks(plans.size());
  SumKernels sums;
  for (size_t r = 0; r < plans.size(); ++r) {
    ranks[r].graph = graph;
    if (!ranks[r].setUp(a, *plans[r], inputs, verbose, error))
      return false;
  }
  for (;;) {
    for (PlanRun &r : ranks)
      if (!r.runToCollective(verbose, error))
        return false;
    if (std::all_of(ranks.begin(), ranks.end(),
                    [](const PlanRun &r) { return r.done(); }))
      break;
    if (!allReduce(ranks, sums, error))
      return false;
  }
  // Every rank holds the outputs; they must agree bit for bit.
  outputs.clear();
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const uint64_t bytes =
        rt::bytesAtBatch(m.tensors[size_t(m.outputs[i])], *batch);
    const uint8_t *p =
        static_cast<const uint8_t *>(ranks[0].pointer(m.outputs[i]));
    for (size_t r = 1; r < ranks.size(); ++r)
      if (std::memcmp(p, ranks[r].pointer(plans[r]->outputs[i]), bytes) != 0) {
        error = "rank " + std::to_string(r) + "'s output '" +
                m.tensors[size_t(m.outputs[i])].name +
                "' differs from rank 0's";
        return false;
      }
    outputs.emplace_back(p, p + bytes);
  }
  return true;
}

} // namespace cuts

//===- Emulate.cpp - run a whole artifact on the CPU ----------------------===//
#include "Emulate.h"

#include "codegen/emit/HostCompile.h"
#include "runtime/Library.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

namespace cuts {

namespace {

/// cuDNN's fused convolution on the CPU, y = act(conv(x, w) + bias + z),
/// accumulated in double.
template <typename Pointer>
bool emulateLibrary(const rt::KernelLaunch &k, Pointer pointer,
                    std::string &error) {
  if (k.library != rt::kCudnnConv) {
    error = "unknown library call";
    return false;
  }
  auto spec = rt::decodeConvSpec(k.libraryParams, error);
  if (!spec)
    return false;
  const rt::ConvSpec &s = *spec;
  const float *x = pointer(k.args[0]), *w = pointer(k.args[1]);
  const float *bias = s.bias ? pointer(k.args[2]) : nullptr;
  const float *z = s.residual ? pointer(k.args[2 + s.bias]) : nullptr;
  float *y = pointer(k.args.back());
  int64_t cg = s.C / s.group, kg = s.K / s.group;
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
                acc +=
                    double(x[((n * s.C + g * cg + c) * s.H + ih) * s.W + iw]) *
                    double(w[((ko * cg + c) * s.FH + fh) * s.FW + fw]);
              }
            }
          int64_t o = ((n * s.K + ko) * s.OH + oh) * s.OW + ow;
          if (bias)
            acc += bias[ko];
          if (z)
            acc += z[o];
          y[o] = float(s.relu ? std::max(acc, 0.0) : acc);
        }
    }
  return true;
}

} // namespace

bool emulateArtifact(const rt::Artifact &a,
                     const std::vector<std::vector<float>> &inputs,
                     std::vector<std::vector<float>> &outputs,
                     std::string &error, bool verbose) {
  const rt::Manifest &m = a.manifest;
  if (inputs.size() != m.inputs.size()) {
    error = "the model takes " + std::to_string(m.inputs.size()) + " inputs, " +
            std::to_string(inputs.size()) + " given";
    return false;
  }
  // Host memory per root tensor: inputs and weights are read in place
  // (copied: kernels take them as const), the rest allocated and poisoned
  // with NaN so that an element no kernel writes cannot pass a comparison.
  uint64_t weightBytes = 0;
  const uint8_t *weights = a.section("weights", &weightBytes);
  std::vector<std::vector<float>> memory(m.tensors.size());
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const rt::Tensor &x = m.tensors[t];
    size_t n = size_t(x.bytes() / 4);
    switch (x.kind) {
    case rt::TensorKind::Input:
      if (inputs[x.index].size() != n) {
        error = "input '" + x.name + "' has " +
                std::to_string(inputs[x.index].size()) + " elements, " +
                std::to_string(n) + " expected";
        return false;
      }
      memory[t] = inputs[x.index];
      break;
    case rt::TensorKind::Weight:
      memory[t].resize(n);
      if (n)
        std::memcpy(memory[t].data(), weights + x.weightOffset, n * 4);
      break;
    case rt::TensorKind::Output:
    case rt::TensorKind::Intermediate:
      memory[t].assign(n, NAN);
      break;
    case rt::TensorKind::View:
      break;
    }
  }
  auto pointer = [&](int t) { return memory[rt::rootTensor(m, t)].data(); };

  std::map<std::string, std::unique_ptr<HostKernel>> compiled;
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const rt::Step &step = m.steps[s];
    if (step.kernel < 0) {
      const auto &from = memory[rt::rootTensor(m, step.from)];
      auto &to = memory[rt::rootTensor(m, step.to)];
      std::copy(from.begin(), from.end(), to.begin());
      continue;
    }
    const rt::KernelLaunch &k = m.kernels[step.kernel];
    if (k.isLibrary()) {
      if (!emulateLibrary(k, pointer, error)) {
        error = "step " + std::to_string(s) + " (" + k.library + "): " + error;
        return false;
      }
      continue;
    }
    auto it = compiled.find(k.name);
    if (it == compiled.end()) {
      std::string source = a.source(step.kernel);
      if (source.empty()) {
        error = "kernel " + k.name + " has no source in the artifact";
        return false;
      }
      KernelSignature sig{k.name, {}};
      for (size_t i = 0; i < k.args.size(); ++i) {
        bool out = std::find(k.outputs.begin(), k.outputs.end(), k.args[i]) !=
                   k.outputs.end();
        sig.params.push_back(
            {"a" + std::to_string(i),
             out ? "float *__restrict__" : "const float *__restrict__"});
      }
      auto start = std::chrono::steady_clock::now();
      auto hk = compileForHost(source, sig, error);
      if (!hk) {
        error = "kernel " + k.name + ": " + error;
        return false;
      }
      if (verbose)
        std::fprintf(stderr, "compiled %s for the host in %.2f s\n",
                     k.name.c_str(),
                     std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count());
      it = compiled.emplace(k.name, std::move(hk)).first;
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
  outputs.clear();
  for (int t : m.outputs)
    outputs.push_back(memory[rt::rootTensor(m, t)]);
  return true;
}

} // namespace cuts

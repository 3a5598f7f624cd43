//===- Emulate.cpp - run a whole artifact on the CPU ----------------------===//
#include "Emulate.h"

#include "codegen/emit/HostCompile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

namespace cuts {

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

//===- Emulate.cpp - run a whole artifact on the CPU ----------------------===//
#include "tools/support/Emulate.h"

#include "codegen/emit/HostCompile.h"
#include "cuts/rt/Blas.h"
#include "cuts/rt/Library.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

namespace cuts {

namespace {

/// cuDNN's fused convolution on the CPU, y = act(conv(x, w) + bias + z),
/// accumulated in double.
/// cuBLASLt's product on the CPU, Y = act(alpha A B + bias + Z),
/// accumulated in double.
template <typename Pointer>
bool emulateGemm(const rt::KernelLaunch &k, Pointer pointer,
                 std::string &error) {
  auto spec = rt::decodeGemmSpec(k.libraryParams, error);
  if (!spec)
    return false;
  const rt::GemmSpec &s = *spec;
  auto floats = [&](int t) { return reinterpret_cast<float *>(pointer(t)); };
  const float *A = floats(k.args[0]), *B = floats(k.args[1]);
  const float *bias = s.bias ? floats(k.args[2]) : nullptr;
  const float *z = s.residual ? floats(k.args[2 + s.bias]) : nullptr;
  float *y = floats(k.args.back());
  for (int64_t b = 0; b < s.batch; ++b) {
    const float *a = A + (s.batchA ? b * s.M * s.K : 0);
    const float *bb = B + (s.batchB ? b * s.K * s.N : 0);
    const float *zb = z ? z + (s.batchZ ? b * s.M * s.N : 0) : nullptr;
    float *yb = y + b * s.M * s.N;
    for (int64_t i = 0; i < s.M; ++i)
      for (int64_t j = 0; j < s.N; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < s.K; ++c)
          acc += double(s.transA ? a[c * s.M + i] : a[i * s.K + c]) *
                 double(s.transB ? bb[j * s.K + c] : bb[c * s.N + j]);
        acc *= double(s.alpha);
        if (bias)
          acc += bias[j];
        if (zb)
          acc += zb[i * s.N + j];
        yb[i * s.N + j] = float(s.relu ? std::max(acc, 0.0) : acc);
      }
  }
  return true;
}

template <typename Pointer>
bool emulateLibrary(const rt::KernelLaunch &k, Pointer pointer,
                    std::string &error) {
  if (k.library == rt::kCublasGemm)
    return emulateGemm(k, pointer, error);
  if (k.library != rt::kCudnnConv) {
    error = "unknown library call";
    return false;
  }
  auto spec = rt::decodeConvSpec(k.libraryParams, error);
  if (!spec)
    return false;
  const rt::ConvSpec &s = *spec;
  // Library args are float32 (the artifact's validation checks it).
  auto floats = [&](int t) { return reinterpret_cast<float *>(pointer(t)); };
  const float *x = floats(k.args[0]), *w = floats(k.args[1]);
  const float *bias = s.bias ? floats(k.args[2]) : nullptr;
  const float *z = s.residual ? floats(k.args[2 + s.bias]) : nullptr;
  float *y = floats(k.args.back());
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

bool emulateArtifact(const rt::Artifact &a,
                     const std::vector<std::vector<uint8_t>> &inputs,
                     std::vector<std::vector<uint8_t>> &outputs,
                     std::string &error, bool verbose) {
  const rt::Manifest &m = a.manifest;
  if (inputs.size() != m.inputs.size()) {
    error = "the model takes " + std::to_string(m.inputs.size()) + " inputs, " +
            std::to_string(inputs.size()) + " given";
    return false;
  }
  // Host memory per root tensor, 8-byte aligned for any element type:
  // inputs and weights are copied in (kernels take them as const), the rest
  // poisoned so that an element no kernel writes cannot pass a comparison.
  uint64_t weightBytes = 0;
  const uint8_t *weights = a.section("weights", &weightBytes);
  std::vector<std::vector<uint64_t>> memory(m.tensors.size());
  auto bytesOf = [&](size_t t) {
    return reinterpret_cast<uint8_t *>(memory[t].data());
  };
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const rt::Tensor &x = m.tensors[t];
    uint64_t bytes = x.bytes();
    if (x.kind != rt::TensorKind::View)
      memory[t].assign(size_t((bytes + 7) / 8), 0);
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
        std::memcpy(bytesOf(t), inputs[x.index].data(), bytes);
      break;
    case rt::TensorKind::Weight:
      if (bytes)
        std::memcpy(bytesOf(t), weights + x.weightOffset, bytes);
      break;
    case rt::TensorKind::Output:
    case rt::TensorKind::Intermediate:
      poison(x.dtype, bytesOf(t), bytes);
      break;
    case rt::TensorKind::View:
      break;
    }
  }
  auto pointer = [&](int t) -> void * {
    return bytesOf(size_t(rt::rootTensor(m, t)));
  };

  std::map<std::string, std::unique_ptr<HostKernel>> compiled;
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const rt::Step &step = m.steps[s];
    if (step.kernel < 0) {
      // Equal byte sizes (validated); a view may be shorter than its root.
      if (uint64_t bytes = m.tensors[step.to].bytes())
        std::memcpy(pointer(step.to), pointer(step.from), bytes);
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
      // The parameters as the code generator declares them: a pointer to
      // the tensor's element type, const unless the kernel writes it.
      KernelSignature sig{k.name, {}};
      for (size_t i = 0; i < k.args.size(); ++i) {
        bool out = std::find(k.outputs.begin(), k.outputs.end(), k.args[i]) !=
                   k.outputs.end();
        const std::string &dtype = m.tensors[k.args[i]].dtype;
        const char *type = kernelElementType(dtype);
        if (!type) {
          error = "kernel " + k.name + ": argument " + std::to_string(i) +
                  " is a " + dtype + " tensor, which no kernel takes";
          return false;
        }
        sig.params.push_back(
            {"a" + std::to_string(i),
             std::string(out ? "" : "const ") + type + " *__restrict__"});
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
  for (int t : m.outputs) {
    const uint8_t *p = static_cast<const uint8_t *>(pointer(t));
    outputs.emplace_back(p, p + m.tensors[t].bytes());
  }
  return true;
}

} // namespace cuts

// The reduced-precision conversions and tensor-core operations of
// TensorCore.h on a GPU against the CPU's versions (cuda_host.h), which the
// unit tests check against references: each kernel of
// test/unit/TensorCoreKernels.h runs on both with the same inputs. The
// conversions must agree bit for bit; the products to within fp32 rounding
// (relative L2 1e-6: the tensor core's summation order is its own).
//
// usage: cuts-tensor-core-check   (exit 77 without a GPU: skipped)
#include "TensorCoreKernels.h"
#include "codegen/emit/HostCompile.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/emit/TensorCore.h"
#include "cuts/rt/CudaDriver.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace cuts;
namespace cu = cuts::rt::cuda;

namespace {

/// A kernel argument: a buffer (its bytes; copied back when an output) or
/// an int.
struct Arg {
  std::vector<uint8_t> bytes;
  bool output = false;
  int value = 0;
  bool isBuffer() const { return !bytes.empty(); }
};

template <class T> Arg input(const std::vector<T> &v) {
  Arg a;
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}
Arg output(size_t bytes) {
  Arg a;
  a.bytes.assign(bytes, 0xff); // NaN as floats: an unwritten element shows
  a.output = true;
  return a;
}
Arg scalar(int v) {
  Arg a;
  a.value = v;
  return a;
}

struct Case {
  std::string label, source;
  KernelSignature sig;
  unsigned grid, block;
  std::vector<Arg> args;
};

bool runOnHost(const Case &c, std::vector<Arg> &args, std::string &error) {
  auto k =
      compileForHost(codegen::tensorCorePrelude() + c.source, c.sig, error);
  if (!k)
    return false;
  std::vector<KernelArg> ka;
  for (Arg &a : args)
    ka.push_back(a.isBuffer() ? KernelArg::buffer(a.bytes.data())
                              : KernelArg::scalar(a.value));
  return k->launch({c.grid}, {c.block}, ka, error);
}

bool runOnGpu(const cu::Driver &d, const std::string &arch, const Case &c,
              std::vector<Arg> &args, std::string &error) {
  auto bin =
      compileWithNvrtc(codegen::tensorCorePrelude() + c.source, arch, error);
  cu::CUmodule mod = nullptr;
  cu::CUfunction fn = nullptr;
  if (!bin || d.cuModuleLoadData(&mod, bin->cubin.data()) ||
      d.cuModuleGetFunction(&fn, mod, c.sig.name.c_str())) {
    error = "cannot load " + c.sig.name + ": " + error;
    return false;
  }
  std::vector<cu::CUdeviceptr> ptrs(args.size(), 0);
  std::vector<void *> params;
  bool ok = true;
  for (size_t i = 0; i < args.size() && ok; ++i) {
    if (args[i].isBuffer())
      ok = !d.cuMemAlloc(&ptrs[i], args[i].bytes.size()) &&
           !d.cuMemcpyHtoD(ptrs[i], args[i].bytes.data(), args[i].bytes.size());
    params.push_back(args[i].isBuffer() ? (void *)&ptrs[i]
                                        : (void *)&args[i].value);
  }
  cu::CUresult r = ok ? d.cuLaunchKernel(fn, c.grid, 1, 1, c.block, 1, 1, 0,
                                         nullptr, params.data(), nullptr)
                      : cu::CUresult(2);
  for (size_t i = 0; i < args.size(); ++i) {
    if (r == cu::CUDA_SUCCESS && args[i].output)
      r = d.cuMemcpyDtoH(args[i].bytes.data(), ptrs[i], args[i].bytes.size());
    if (ptrs[i])
      d.cuMemFree(ptrs[i]);
  }
  d.cuModuleUnload(mod);
  if (r != cu::CUDA_SUCCESS)
    error = c.sig.name + " on the GPU: " + cu::errorString(r);
  return r == cu::CUDA_SUCCESS;
}

/// How far the GPU's output is from the CPU's: differing elements for
/// integers (and the conversions' floats), relative L2 for products.
double distance(const Case &c, const Arg &gpu, const Arg &cpu, bool exact) {
  if (exact) {
    size_t differ = 0;
    for (size_t i = 0; i + 4 <= gpu.bytes.size(); i += 4) {
      float g, h;
      std::memcpy(&g, &gpu.bytes[i], 4);
      std::memcpy(&h, &cpu.bytes[i], 4);
      bool same = std::memcmp(&g, &h, 4) == 0 ||
                  (std::isnan(g) && std::isnan(h) && c.label != "convert");
      differ += !same;
    }
    return double(differ);
  }
  double num = 0, den = 0;
  for (size_t i = 0; i + 4 <= gpu.bytes.size(); i += 4) {
    float g, h;
    std::memcpy(&g, &gpu.bytes[i], 4);
    std::memcpy(&h, &cpu.bytes[i], 4);
    num += (double(g) - h) * (double(g) - h);
    den += double(h) * h;
  }
  return std::isnan(num) ? INFINITY : std::sqrt(num / den);
}

std::vector<Case> cases() {
  std::mt19937 rng(7);
  std::vector<Case> out;
  // Conversions: floats of every magnitude, both signs, ties included
  // (random 32-bit patterns, NaNs left out: their payloads may differ).
  std::vector<uint32_t> bits(1 << 18);
  for (uint32_t &b : bits)
    do
      b = rng();
    while ((b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu));
  int n = int(bits.size());
  out.push_back(
      {"convert",
       test::kConvert,
       {"convert",
        {{"x", "const float *"},
         {"h", "unsigned short *"},
         {"b", "unsigned short *"},
         {"t", "float *"},
         {"n", "int"}}},
       unsigned(n / 256),
       256,
       {input(bits), output(2 * n), output(2 * n), output(4 * n), scalar(n)}});
  std::vector<uint16_t> all(65536);
  for (uint32_t p = 0; p < 65536; ++p)
    all[p] = uint16_t(p);
  out.push_back({"widen",
                 test::kWiden,
                 {"widen",
                  {{"p", "const unsigned short *"},
                   {"hf", "float *"},
                   {"bf", "float *"}}},
                 256,
                 256,
                 {input(all), output(4 * 65536), output(4 * 65536)}});
  std::normal_distribution<float> dist(0.0f, 1.0f);
  auto randoms = [&](size_t count) {
    std::vector<float> v(count);
    for (float &x : v)
      x = dist(rng);
    return v;
  };
  for (int bf16 : {0, 1})
    for (int aT : {0, 1}) {
      // 16-bit operands: random floats' top halves (bf16) or small
      // integers over 16 (exact in fp16).
      std::vector<uint16_t> a(256), b(128);
      for (uint16_t &x : a)
        x = bf16 ? uint16_t(rng() >> 16 & 0xbfff)
                 : uint16_t(0x3c00 + rng() % 512);
      for (uint16_t &x : b)
        x = bf16 ? uint16_t(rng() >> 16 & 0xbfff)
                 : uint16_t(0x3c00 + rng() % 512);
      out.push_back(
          {std::string(bf16 ? "mma bf16" : "mma fp16") + (aT ? " A^T" : ""),
           test::kMma16,
           {"mma16",
            {{"A", "const unsigned short *"},
             {"B", "const unsigned short *"},
             {"C", "const float *"},
             {"D", "float *"},
             {"bf16", "int"},
             {"aT", "int"}}},
           1,
           32,
           {input(a), input(b), input(randoms(128)), output(512), scalar(bf16),
            scalar(aT)}});
    }
  out.push_back({"mma tf32",
                 test::kMmaTf32,
                 {"mma_tf32",
                  {{"A", "const float *"},
                   {"B", "const float *"},
                   {"C", "const float *"},
                   {"D", "float *"}}},
                 1,
                 32,
                 {input(randoms(128)), input(randoms(64)), input(randoms(128)),
                  output(512)}});
  return out;
}

} // namespace

int main() {
  std::string error;
  const cu::Driver *d = cu::driver(error);
  int count = 0;
  if (!d || d->cuDeviceGetCount(&count) || count == 0) {
    std::printf("no GPU here: skipped (%s)\n", error.c_str());
    return 77;
  }
  cu::CUdevice dev;
  cu::CUcontext ctx;
  int major = 0, minor = 0;
  d->cuDeviceGet(&dev, 0);
  d->cuDevicePrimaryCtxRetain(&ctx, dev);
  d->cuCtxSetCurrent(ctx);
  d->cuDeviceGetAttribute(
      &major, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d->cuDeviceGetAttribute(
      &minor, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  int failures = 0;
  std::printf("%-14s %14s\n", "kernel", "GPU vs CPU");
  for (const Case &c : cases()) {
    std::vector<Arg> host = c.args, gpu = c.args;
    if (!runOnHost(c, host, error) || !runOnGpu(*d, arch, c, gpu, error)) {
      std::printf("%-14s FAIL: %s\n", c.label.c_str(), error.c_str());
      ++failures;
      continue;
    }
    bool exact = c.label == "convert" || c.label == "widen";
    double worst = 0;
    for (size_t i = 0; i < c.args.size(); ++i)
      if (c.args[i].output)
        worst = std::max(worst, distance(c, gpu[i], host[i], exact));
    bool ok = exact ? worst == 0 : worst <= 1e-6;
    std::printf("%-14s %14.3g %s\n", c.label.c_str(), worst,
                exact ? "elements differ" : "relative L2");
    failures += !ok;
  }
  std::printf("%s\n", failures ? "FAILED" : "all agree");
  return failures ? 1 : 0;
}

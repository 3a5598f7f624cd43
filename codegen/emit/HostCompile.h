//===- HostCompile.h - Run an emitted CUDA kernel on the CPU ----*- C++ -*-===//
//
// Issue 4 asks that every kernel cuts emits can be executed without a GPU,
// and that what runs on the CPU is what would run on the GPU. compileForHost
// takes the kernel's CUDA source unchanged, compiles it with the host C++
// compiler after cuda_host.h (which runs a block's threads concurrently
// with real barriers), loads the result with dlopen and returns a handle
// that launches it.
//
// The launch ABI is the CUDA driver's: kernel arguments are an array of
// pointers, args[i] pointing at a value of parameter i's exact type (what
// cuLaunchKernel calls kernelParams). PackedArgs builds that array from
// buffer pointers and int64/double scalars given the kernel's parameter
// list, so one argument vector serves the host run and a GPU run alike.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_HOSTCOMPILE_H
#define CUTS_CODEGEN_EMIT_HOSTCOMPILE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cuts {

/// One kernel parameter as it is spelled in the source.
struct KernelParam {
  std::string name; // "out"
  std::string type; // "float *__restrict__", "const float *", "int", ...
};

/// What the emitter tells HostCompile about the kernel it emitted.
struct KernelSignature {
  std::string name; // the __global__ function (a template-id works too)
  std::vector<KernelParam> params;
};

/// A grid or block extent (CUDA's dim3 without the header).
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// One argument as a caller holds it: a buffer, an integer or a real.
struct KernelArg {
  enum class Kind { Pointer, Int, Real };
  Kind kind = Kind::Int;
  const void *pointer = nullptr;
  int64_t integer = 0;
  double real = 0;

  static KernelArg buffer(const void *p) {
    KernelArg a;
    a.kind = Kind::Pointer;
    a.pointer = p;
    return a;
  }
  static KernelArg scalar(int64_t v) {
    KernelArg a;
    a.kind = Kind::Int;
    a.integer = v;
    return a;
  }
  static KernelArg realScalar(double v) {
    KernelArg a;
    a.kind = Kind::Real;
    a.real = v;
    return a;
  }
};

/// Arguments laid out like cuLaunchKernel's kernelParams: data()[i] points
/// at a value of params[i]'s C type (pointer, int, unsigned, long long,
/// size_t, float, double, bool, ...), converted from the KernelArg with a
/// range check. Movable, not copyable (data() points into the object).
class PackedArgs {
public:
  static std::optional<PackedArgs> pack(const std::vector<KernelParam> &params,
                                        const std::vector<KernelArg> &args,
                                        std::string &error);
  void **data() { return pointers.data(); }
  size_t size() const { return pointers.size(); }

  PackedArgs(PackedArgs &&) = default;
  PackedArgs &operator=(PackedArgs &&) = default;
  PackedArgs(const PackedArgs &) = delete;
  PackedArgs &operator=(const PackedArgs &) = delete;

private:
  PackedArgs() = default;
  static std::optional<PackedArgs>
  packUnchecked(const std::vector<KernelParam> &params,
                const std::vector<KernelArg> &args, std::string &error);
  std::vector<uint64_t> storage; // one 8-byte slot per parameter
  std::vector<void *> pointers;
};

/// The entry a host-compiled module exports for each of its kernels
/// (extern "C" cuts_launch_<i>).
/// grid and block point at 3 extents; returns 0, or nonzero with a message
/// in error[0..errorSize).
using HostLaunchFn = int (*)(const unsigned *grid, const unsigned *block,
                             unsigned long long dynamicSharedBytes,
                             void *const *args, int numArgs, char *error,
                             unsigned long errorSize);

/// A kernel compiled for and loaded into this process.
class HostKernel {
public:
  ~HostKernel();
  HostKernel(const HostKernel &) = delete;
  HostKernel &operator=(const HostKernel &) = delete;

  const KernelSignature &signature() const { return sig; }
  HostLaunchFn entry() const { return launchFn; }

  /// kernel<<<grid, block, dynamicSharedBytes>>>(args...) on the CPU; args
  /// in parameter order. False with a message on a bad argument or a failed
  /// launch (barrier timeout or mismatch, exception in the kernel).
  bool launch(Dim3 grid, Dim3 block, const std::vector<KernelArg> &args,
              std::string &error, size_t dynamicSharedBytes = 0) const;
  /// The same with arguments already packed (kernelParams layout).
  bool launchPacked(Dim3 grid, Dim3 block, void *const *args, size_t numArgs,
                    std::string &error, size_t dynamicSharedBytes = 0) const;

private:
  friend struct HostKernelLoader;
  HostKernel() = default;
  KernelSignature sig;
  void *library = nullptr; // dlopen handle
  HostLaunchFn launchFn = nullptr;
};

struct HostCompileOptions {
  std::string compiler;                // empty: $CXX, else "c++"
  std::string optimization = "-O1";    // builds in about a second
  std::vector<std::string> extraFlags; // e.g. "-DTILE=16"
  bool keepFiles = false; // keep the temp dir (its path goes to stderr)
  // The host-build cache: libraries by content and cuda_host.h's
  // precompiled header. Empty: $CUTS_HOST_CACHE, else
  // ${XDG_CACHE_HOME:-$HOME/.cache}/cuts/host; "off" disables it.
  std::string cacheDir;
};

/// One kernel to compile for the host: its CUDA source and signature.
struct HostSource {
  std::string source;
  KernelSignature kernel;
};

/// Compiles several kernels (distinct names) into one library with one
/// compiler run, which instantiates cuda_host.h's launch machinery once
/// instead of once a kernel, and loads them, in order. Empty on failure,
/// with `error` as below.
std::vector<std::unique_ptr<HostKernel>>
compileForHost(const std::vector<HostSource> &kernels, std::string &error,
               const HostCompileOptions &options = {});

/// Compiles `source` (one CUDA translation unit holding `kernel`) for the
/// host and loads it. On failure returns null and sets `error`: the
/// compiler's output for a compile error, dlerror() for a load error.
std::unique_ptr<HostKernel>
compileForHost(const std::string &source, const KernelSignature &kernel,
               std::string &error, const HostCompileOptions &options = {});

/// The source as the host compiler sees it: `extern __shared__ T name[];`
/// becomes `T *const name = ::cuts_host::dynamicShared<T>();` (same line
/// count). Fails on an `extern __shared__` declaration of another form.
std::optional<std::string> rewriteForHost(const std::string &source,
                                          std::string &error);

/// cuda_host.h, as compiled into this library.
const char *cudaHostHeader();

} // namespace cuts

#endif // CUTS_CODEGEN_EMIT_HOSTCOMPILE_H

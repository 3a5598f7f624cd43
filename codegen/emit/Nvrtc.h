//===- Nvrtc.h - NVRTC compile checks and ptxas reports ---------*- C++ -*-===//
//
// Every kernel cuts emits must compile for the GPUs it targets; NVRTC does
// that offline (no GPU, no driver), down to a CUBIN for a real architecture,
// and with ptxas's verbose output in the program log it also tells what the
// kernel costs: registers, spills, shared memory, stack. The performance
// model's occupancy assumptions are checked against those numbers.
//
// Without the CUDA toolkit at build time the library is built anyway and
// compileWithNvrtc fails with "built without NVRTC".
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_NVRTC_H
#define CUTS_CODEGEN_EMIT_NVRTC_H

#include <optional>
#include <string>
#include <vector>

namespace cuts {

/// ptxas's resource report for one entry function (or -1 where the log did
/// not say).
struct KernelResources {
  std::string function; // as ptxas names it: mangled unless extern "C"
  int registers = -1;
  int spillStoreBytes = -1;
  int spillLoadBytes = -1;
  int sharedBytes = -1; // static shared memory ("bytes smem"); 0 if none
  int stackFrameBytes = -1;
  int barriers = -1; // named barriers used (newer ptxas only)
};

struct NvrtcOptions {
  std::string sourceName = "kernel.cu";  // what the log calls the source
  std::vector<std::string> extraOptions; // e.g. "-DTILE=16", "--use_fast_math"
};

struct NvrtcResult {
  std::string arch;        // "sm_90"
  std::vector<char> cubin; // loadable with cuModuleLoadData
  std::string log;         // NVRTC's program log (warnings, ptxas report)
  std::vector<KernelResources> kernels; // one per entry function

  /// The report of kernel `name`: its exact ptxas name, or a C++ function
  /// of that name (mangled _Z<len><name>...). Null if absent.
  const KernelResources *find(const std::string &name) const;
};

/// Compiles `source` for `arch` ("sm_80", "sm_90", "sm_90a": real
/// architectures only, since the result is a CUBIN) with -std=c++17 and
/// ptxas -v. A source with sm_90a's instructions (wgmma) compiles for
/// sm_90a when given sm_90: its CUBIN runs on the same GPUs. On failure
/// returns nullopt and sets `error` to a message that includes NVRTC's log.
std::optional<NvrtcResult> compileWithNvrtc(const std::string &source,
                                            const std::string &arch,
                                            std::string &error,
                                            const NvrtcOptions &options = {});

/// Each of `sources` compiled for `arch` as compileWithNvrtc does, on up to
/// `jobs` threads (NVRTC is thread-safe); `errors` gets each one's error.
/// cuSync's pair timing and cuts-sync-bench compile their kernels so.
std::vector<std::optional<NvrtcResult>>
compileAllWithNvrtc(const std::vector<const std::string *> &sources,
                    const std::string &arch, int jobs,
                    std::vector<std::string> &errors);

/// The per-entry reports in a ptxas -v log (what compileWithNvrtc fills
/// NvrtcResult::kernels with).
std::vector<KernelResources> parsePtxasReport(const std::string &log);

/// Whether this build can compile with NVRTC at all.
bool nvrtcAvailable();

/// "13.0" for the linked NVRTC, or "" without it.
std::string nvrtcVersion();

} // namespace cuts

#endif // CUTS_CODEGEN_EMIT_NVRTC_H

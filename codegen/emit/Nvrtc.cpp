//===- Nvrtc.cpp - Compile CUDA source with NVRTC, read ptxas's report ----===//
#include "codegen/emit/Nvrtc.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <thread>

#ifdef CUTS_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace cuts {

namespace {

// The number right before `unit` in `line` ("32 registers" -> 32), or -1.
int numberBefore(const std::string &line, const std::string &unit) {
  size_t at = line.find(unit);
  while (at != std::string::npos) {
    size_t end = at;
    while (end > 0 && line[end - 1] == ' ')
      --end;
    size_t begin = end;
    while (begin > 0 &&
           std::isdigit(static_cast<unsigned char>(line[begin - 1])))
      --begin;
    if (begin < end)
      return std::atoi(line.substr(begin, end - begin).c_str());
    at = line.find(unit, at + 1);
  }
  return -1;
}

// The text between the first pair of single quotes after `after`, or the
// rest of the line after `after` when unquoted.
std::string nameAfter(const std::string &line, const std::string &after) {
  size_t at = line.find(after);
  if (at == std::string::npos)
    return "";
  std::string rest = line.substr(at + after.size());
  size_t open = rest.find('\'');
  if (open != std::string::npos) {
    size_t close = rest.find('\'', open + 1);
    return rest.substr(open + 1, close == std::string::npos ? std::string::npos
                                                            : close - open - 1);
  }
  size_t b = rest.find_first_not_of(' ');
  size_t e = rest.find_last_not_of(" \r");
  return b == std::string::npos ? "" : rest.substr(b, e - b + 1);
}

} // namespace

// ptxas -v prints, per entry function:
//   ptxas info : Compiling entry function '_Z6matmulPKfS0_Pfiii' for 'sm_90'
//   ptxas info : Function properties for _Z6matmulPKfS0_Pfiii
//       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info : Used 32 registers, used 1 barriers, 2048 bytes smem, ...
// "Function properties" also appears for non-inlined device functions;
// only entries get a report.
std::vector<KernelResources> parsePtxasReport(const std::string &log) {
  std::vector<KernelResources> kernels;
  std::string propertiesOf; // the function the next stack line belongs to
  std::istringstream lines(log);
  std::string line;
  auto entry = [&](const std::string &name) -> KernelResources * {
    for (KernelResources &k : kernels)
      if (k.function == name)
        return &k;
    return nullptr;
  };
  while (std::getline(lines, line)) {
    if (line.find("Compiling entry function") != std::string::npos) {
      KernelResources k;
      k.function = nameAfter(line, "Compiling entry function");
      kernels.push_back(k);
      propertiesOf.clear();
    } else if (line.find("Function properties for") != std::string::npos) {
      propertiesOf = nameAfter(line, "Function properties for");
    } else if (line.find("stack frame") != std::string::npos) {
      if (KernelResources *k = entry(propertiesOf)) {
        k->stackFrameBytes = numberBefore(line, "bytes stack frame");
        k->spillStoreBytes = numberBefore(line, "bytes spill stores");
        k->spillLoadBytes = numberBefore(line, "bytes spill loads");
      }
    } else if (line.find("Used ") != std::string::npos &&
               line.find("registers") != std::string::npos &&
               !kernels.empty()) {
      KernelResources &k = kernels.back();
      k.registers = numberBefore(line, "registers");
      k.barriers = numberBefore(line, "barriers");
      // ptxas leaves "bytes smem" out when the kernel uses none.
      int smem = numberBefore(line, "bytes smem");
      k.sharedBytes = smem < 0 ? 0 : smem;
    }
  }
  return kernels;
}

const KernelResources *NvrtcResult::find(const std::string &name) const {
  std::string mangledPrefix = "_Z" + std::to_string(name.size()) + name;
  for (const KernelResources &k : kernels)
    if (k.function == name ||
        k.function.compare(0, mangledPrefix.size(), mangledPrefix) == 0)
      return &k;
  return nullptr;
}

#ifdef CUTS_HAVE_NVRTC

bool nvrtcAvailable() { return true; }

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

bool isRealArch(const std::string &arch) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
    return false;
  size_t i = 3;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])))
    ++i;
  // Digits, then at most a feature suffix letter (sm_90a, sm_100f).
  return i > 3 && arch.size() - i <= 1 &&
         (i == arch.size() ||
          std::isalpha(static_cast<unsigned char>(arch[i])));
}

// Owns the program so that every return path destroys it.
class Program {
public:
  ~Program() {
    if (prog)
      nvrtcDestroyProgram(&prog);
  }
  nvrtcProgram prog = nullptr;

  std::string log() const {
    size_t size = 0;
    if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1)
      return "";
    std::string text(size, '\0');
    if (nvrtcGetProgramLog(prog, &text[0]) != NVRTC_SUCCESS)
      return "";
    text.resize(size - 1); // the terminating NUL
    return text;
  }
};

std::optional<NvrtcResult> compile(const std::string &source,
                                   const std::string &arch, std::string &error,
                                   const NvrtcOptions &options) {
  if (!isRealArch(arch)) {
    error = "NVRTC: '" + arch +
            "' is not a real GPU architecture (sm_XX): a CUBIN needs one";
    return std::nullopt;
  }
  // NVRTC (CUDA 12.9+) keeps compiled programs in the driver's cache where
  // a GPU is, and a hit's log has no ptxas report: registers and spills
  // (the tuner's and the kernel sources' report) would go missing on the
  // second compile of a kernel. Binaries are cached by the tuning cache.
  static const bool uncached = setenv("CUDA_CACHE_DISABLE", "1", 1) == 0;
  (void)uncached;
  Program program;
  nvrtcResult rc =
      nvrtcCreateProgram(&program.prog, source.c_str(),
                         options.sourceName.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    error = std::string("NVRTC: cannot create the program: ") +
            nvrtcGetErrorString(rc);
    return std::nullopt;
  }
  // Hopper's warpgroup instructions exist only in the arch-specific target.
  const bool hopperOnly =
      arch == "sm_90" && source.find("wgmma.") != std::string::npos;
  std::vector<std::string> flags = {"-arch=" + arch + (hopperOnly ? "a" : ""),
                                    "-std=c++17", "--ptxas-options=--verbose"};
  flags.insert(flags.end(), options.extraOptions.begin(),
               options.extraOptions.end());
  std::vector<const char *> argv;
  for (const std::string &f : flags)
    argv.push_back(f.c_str());
  rc = nvrtcCompileProgram(program.prog, int(argv.size()), argv.data());
  NvrtcResult result;
  result.arch = arch;
  result.log = program.log();
  if (rc != NVRTC_SUCCESS) {
    error = "NVRTC failed for " + arch + " (" + nvrtcGetErrorString(rc) +
            "):\n" + result.log;
    return std::nullopt;
  }
  size_t size = 0;
  if ((rc = nvrtcGetCUBINSize(program.prog, &size)) != NVRTC_SUCCESS ||
      size == 0) {
    error = std::string("NVRTC produced no CUBIN for ") + arch + ": " +
            nvrtcGetErrorString(rc);
    return std::nullopt;
  }
  result.cubin.resize(size);
  if ((rc = nvrtcGetCUBIN(program.prog, result.cubin.data())) !=
      NVRTC_SUCCESS) {
    error =
        std::string("NVRTC: cannot read the CUBIN: ") + nvrtcGetErrorString(rc);
    return std::nullopt;
  }
  result.kernels = parsePtxasReport(result.log);
  return result;
}

} // namespace

std::optional<NvrtcResult> compileWithNvrtc(const std::string &source,
                                            const std::string &arch,
                                            std::string &error,
                                            const NvrtcOptions &options) {
  try {
    return compile(source, arch, error, options);
  } catch (const std::exception &e) {
    error = std::string("NVRTC: ") + e.what();
    return std::nullopt;
  }
}

#else // !CUTS_HAVE_NVRTC

bool nvrtcAvailable() { return false; }
std::string nvrtcVersion() { return ""; }

std::optional<NvrtcResult> compileWithNvrtc(const std::string &,
                                            const std::string &,
                                            std::string &error,
                                            const NvrtcOptions &) {
  error = "built without NVRTC (the CUDA toolkit was not found by CMake)";
  return std::nullopt;
}

#endif // CUTS_HAVE_NVRTC

std::vector<std::optional<NvrtcResult>>
compileAllWithNvrtc(const std::vector<const std::string *> &sources,
                    const std::string &arch, int jobs,
                    std::vector<std::string> &errors) {
  std::vector<std::optional<NvrtcResult>> out(sources.size());
  errors.assign(sources.size(), "");
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  const size_t threads =
      std::min<size_t>(size_t(std::max(jobs, 1)), sources.size());
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < sources.size();)
        out[i] = compileWithNvrtc(*sources[i], arch, errors[i]);
    });
  for (std::thread &t : pool)
    t.join();
  return out;
}

} // namespace cuts

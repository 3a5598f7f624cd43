//===- HostCompile.cpp - Run an emitted CUDA kernel on the CPU ------------===//
#include "codegen/emit/HostCompile.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <sys/wait.h>
#include <unistd.h>

#include <dlfcn.h>

namespace cuts {

namespace {
#include "CudaHostHeader.inc" // kCudaHostHeader: cuda_host.h's text
} // namespace

const char *cudaHostHeader() { return kCudaHostHeader; }

//===----------------------------------------------------------------------===//
// Argument packing
//===----------------------------------------------------------------------===//

namespace {

enum class ParamKind {
  Pointer,
  Bool,
  I8,
  U8,
  I16,
  U16,
  I32,
  U32,
  I64,
  U64,
  F32,
  F64
};

// The kind of a parameter from its spelling: qualifiers and std:: dropped,
// anything with a '*' a pointer, the rest looked up by name. Structs by
// value are not supported (the emitter passes tensors and integers).
std::optional<ParamKind> classifyParam(const std::string &type) {
  if (type.find('*') != std::string::npos)
    return ParamKind::Pointer;
  std::string name;
  for (size_t i = 0; i < type.size();) {
    if (!(std::isalnum(static_cast<unsigned char>(type[i])) ||
          type[i] == '_')) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < type.size() &&
           (std::isalnum(static_cast<unsigned char>(type[end])) ||
            type[end] == '_'))
      ++end;
    std::string word = type.substr(i, end - i);
    i = end;
    if (word == "const" || word == "volatile" || word == "__restrict__" ||
        word == "__restrict" || word == "restrict" || word == "std")
      continue;
    name += (name.empty() ? "" : " ") + word;
  }
  static const struct {
    const char *name;
    ParamKind kind;
  } table[] = {
      {"bool", ParamKind::Bool},
      {"char", ParamKind::I8},
      {"signed char", ParamKind::I8},
      {"int8_t", ParamKind::I8},
      {"unsigned char", ParamKind::U8},
      {"uint8_t", ParamKind::U8},
      {"short", ParamKind::I16},
      {"short int", ParamKind::I16},
      {"int16_t", ParamKind::I16},
      {"unsigned short", ParamKind::U16},
      {"unsigned short int", ParamKind::U16},
      {"uint16_t", ParamKind::U16},
      {"int", ParamKind::I32},
      {"signed", ParamKind::I32},
      {"signed int", ParamKind::I32},
      {"int32_t", ParamKind::I32},
      {"unsigned", ParamKind::U32},
      {"unsigned int", ParamKind::U32},
      {"uint32_t", ParamKind::U32},
      {"long", ParamKind::I64},
      {"long int", ParamKind::I64},
      {"long long", ParamKind::I64},
      {"long long int", ParamKind::I64},
      {"int64_t", ParamKind::I64},
      {"ptrdiff_t", ParamKind::I64},
      {"intptr_t", ParamKind::I64},
      {"unsigned long", ParamKind::U64},
      {"unsigned long int", ParamKind::U64},
      {"unsigned long long", ParamKind::U64},
      {"unsigned long long int", ParamKind::U64},
      {"uint64_t", ParamKind::U64},
      {"size_t", ParamKind::U64},
      {"uintptr_t", ParamKind::U64},
      {"float", ParamKind::F32},
      {"double", ParamKind::F64},
  };
  for (const auto &entry : table)
    if (name == entry.name)
      return entry.kind;
  return std::nullopt;
}

template <class T> bool fits(int64_t v) {
  if (std::is_signed<T>::value)
    return v >= int64_t(std::numeric_limits<T>::min()) &&
           v <= int64_t(std::numeric_limits<T>::max());
  return v >= 0 && uint64_t(v) <= uint64_t(std::numeric_limits<T>::max());
}

template <class T> void put(uint64_t &slot, T v) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "slot too small");
  std::memcpy(&slot, &v, sizeof v);
}

// Stores an integer argument as `kind`, or says why it cannot.
std::string putInteger(uint64_t &slot, ParamKind kind, int64_t v) {
  bool ok = true;
  switch (kind) {
  case ParamKind::Bool:
    ok = v == 0 || v == 1;
    put(slot, v != 0);
    break;
  case ParamKind::I8:
    ok = fits<int8_t>(v);
    put(slot, int8_t(v));
    break;
  case ParamKind::U8:
    ok = fits<uint8_t>(v);
    put(slot, uint8_t(v));
    break;
  case ParamKind::I16:
    ok = fits<int16_t>(v);
    put(slot, int16_t(v));
    break;
  case ParamKind::U16:
    ok = fits<uint16_t>(v);
    put(slot, uint16_t(v));
    break;
  case ParamKind::I32:
    ok = fits<int32_t>(v);
    put(slot, int32_t(v));
    break;
  case ParamKind::U32:
    ok = fits<uint32_t>(v);
    put(slot, uint32_t(v));
    break;
  case ParamKind::I64:
    put(slot, v);
    break;
  case ParamKind::U64:
    ok = v >= 0;
    put(slot, uint64_t(v));
    break;
  case ParamKind::F32:
    put(slot, float(v));
    break;
  case ParamKind::F64:
    put(slot, double(v));
    break;
  case ParamKind::Pointer:
    return "is a pointer but the argument is an integer";
  }
  return ok ? "" : std::to_string(v) + " does not fit the parameter's type";
}

} // namespace

std::optional<PackedArgs>
PackedArgs::packUnchecked(const std::vector<KernelParam> &params,
                          const std::vector<KernelArg> &args,
                          std::string &error) {
  if (params.size() != args.size()) {
    error = "the kernel takes " + std::to_string(params.size()) +
            " arguments, got " + std::to_string(args.size());
    return std::nullopt;
  }
  PackedArgs packed;
  packed.storage.assign(params.size(), 0);
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam &p = params[i];
    const KernelArg &a = args[i];
    std::string what =
        "argument " + std::to_string(i) + " (`" + p.type + " " + p.name + "`) ";
    std::optional<ParamKind> kind = classifyParam(p.type);
    if (!kind) {
      error = what + "has a parameter type the host launcher cannot pack";
      return std::nullopt;
    }
    uint64_t &slot = packed.storage[i];
    std::string problem;
    switch (a.kind) {
    case KernelArg::Kind::Pointer:
      if (*kind == ParamKind::Pointer)
        put(slot, a.pointer);
      else
        problem = "is a scalar but the argument is a pointer";
      break;
    case KernelArg::Kind::Int:
      problem = putInteger(slot, *kind, a.integer);
      break;
    case KernelArg::Kind::Real:
      if (*kind == ParamKind::F32)
        put(slot, float(a.real));
      else if (*kind == ParamKind::F64)
        put(slot, a.real);
      else
        problem = "is not floating-point but the argument is a real";
      break;
    }
    if (!problem.empty()) {
      error = what + problem;
      return std::nullopt;
    }
  }
  for (uint64_t &slot : packed.storage)
    packed.pointers.push_back(&slot);
  return packed;
}

std::optional<PackedArgs>
PackedArgs::pack(const std::vector<KernelParam> &params,
                 const std::vector<KernelArg> &args, std::string &error) {
  try {
    return packUnchecked(params, args, error);
  } catch (const std::exception &e) {
    error = std::string("cannot pack the arguments: ") + e.what();
    return std::nullopt;
  }
}

//===----------------------------------------------------------------------===//
// extern __shared__
//===----------------------------------------------------------------------===//

// `extern __shared__ float smem[];` cannot be made to work by a macro:
// __shared__ expands to `static` for the ordinary case, and `extern static`
// is ill-formed, while an extern array would need a definition of the
// kernel's own name and type elsewhere. So this one declaration form is
// rewritten to a pointer into the launch's dynamic shared buffer, on the
// same line, and the rest of the kernel is untouched.

namespace {

bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Removes `word(...)` (alignment specifiers: the host buffer is 128-byte
// aligned anyway) from a declaration's text.
std::string removeCall(std::string text, const std::string &word) {
  for (size_t at; (at = text.find(word)) != std::string::npos;) {
    size_t open = text.find('(', at);
    size_t close = text.find(')', at);
    if (open == std::string::npos || close == std::string::npos || close < open)
      break;
    text.erase(at, close + 1 - at);
  }
  return text;
}

// Offsets in `source` that are code (not comments or literals).
std::vector<bool> codeMask(const std::string &s) {
  std::vector<bool> code(s.size(), true);
  for (size_t i = 0; i < s.size();) {
    size_t end = i;
    if (s.compare(i, 2, "//") == 0) {
      end = s.find('\n', i);
    } else if (s.compare(i, 2, "/*") == 0) {
      end = s.find("*/", i + 2);
      if (end != std::string::npos)
        end += 2;
    } else if (s[i] == '"' || s[i] == '\'') {
      for (end = i + 1; end < s.size() && s[end] != s[i]; ++end)
        if (s[end] == '\\')
          ++end;
      ++end;
    } else {
      ++i;
      continue;
    }
    end = std::min(end, s.size());
    for (size_t j = i; j < end; ++j)
      code[j] = false;
    i = end;
  }
  return code;
}

std::optional<std::string> rewrite(const std::string &source,
                                   std::string &error) {
  const std::string keyword = "__shared__";
  std::vector<bool> code = codeMask(source);
  std::string out;
  size_t copied = 0;
  size_t next = 0;
  for (size_t at = source.find(keyword); at != std::string::npos;
       at = source.find(keyword, next)) {
    size_t after = at + keyword.size();
    next = after;
    if (!code[at] || (at > 0 && isIdentChar(source[at - 1])) ||
        (after < source.size() && isIdentChar(source[after])))
      continue;
    // Is the previous word `extern`?
    size_t prev = at;
    while (prev > 0 &&
           std::isspace(static_cast<unsigned char>(source[prev - 1])))
      --prev;
    if (prev < 6 || source.compare(prev - 6, 6, "extern") != 0 ||
        (prev > 6 && isIdentChar(source[prev - 7])))
      continue;
    size_t start = prev - 6;
    size_t semicolon = source.find(';', after);
    int line = 1;
    for (size_t i = 0; i < start; ++i)
      line += source[i] == '\n';
    std::string declarator = semicolon == std::string::npos
                                 ? ""
                                 : source.substr(after, semicolon - after);
    std::string decl =
        trim(removeCall(removeCall(declarator, "__align__"), "alignas"));
    // decl must be `T name[]`.
    std::string type, name;
    if (decl.size() > 2 && decl.back() == ']') {
      std::string head = trim(decl.substr(0, decl.size() - 1));
      if (!head.empty() && head.back() == '[') {
        head = trim(head.substr(0, head.size() - 1));
        size_t nameStart = head.size();
        while (nameStart > 0 && isIdentChar(head[nameStart - 1]))
          --nameStart;
        name = head.substr(nameStart);
        type = trim(head.substr(0, nameStart));
      }
    }
    if (type.empty() || name.empty() ||
        std::isdigit(static_cast<unsigned char>(name[0]))) {
      error = "line " + std::to_string(line) +
              ": unsupported extern __shared__ declaration `" +
              trim(source.substr(start, semicolon == std::string::npos
                                            ? std::string::npos
                                            : semicolon + 1 - start)) +
              "`: the host build supports `extern __shared__ T name[];`";
      return std::nullopt;
    }
    out += source.substr(copied, start - copied);
    out += type + " *const " + name + " = ::cuts_host::dynamicShared<" + type +
           ">();";
    // Keep the line numbers of everything after it.
    for (size_t i = start; i <= semicolon; ++i)
      if (source[i] == '\n')
        out += '\n';
    copied = next = semicolon + 1;
  }
  out += source.substr(copied);
  return out;
}

} // namespace

std::optional<std::string> rewriteForHost(const std::string &source,
                                          std::string &error) {
  try {
    return rewrite(source, error);
  } catch (const std::exception &e) {
    error = std::string("rewriteForHost: ") + e.what();
    return std::nullopt;
  }
}

//===----------------------------------------------------------------------===//
// Compiling and loading
//===----------------------------------------------------------------------===//

HostKernel::~HostKernel() {
  if (library)
    dlclose(library);
}

bool HostKernel::launchPacked(Dim3 grid, Dim3 block, void *const *args,
                              size_t numArgs, std::string &error,
                              size_t dynamicSharedBytes) const {
  unsigned g[3] = {grid.x, grid.y, grid.z};
  unsigned b[3] = {block.x, block.y, block.z};
  char message[4096] = {0};
  if (launchFn(g, b, dynamicSharedBytes, args, int(numArgs), message,
               sizeof message) != 0) {
    error = sig.name + ": " + message;
    return false;
  }
  return true;
}

bool HostKernel::launch(Dim3 grid, Dim3 block,
                        const std::vector<KernelArg> &args, std::string &error,
                        size_t dynamicSharedBytes) const {
  std::string packError;
  std::optional<PackedArgs> packed =
      PackedArgs::pack(sig.params, args, packError);
  if (!packed) {
    error = sig.name + ": " + packError;
    return false;
  }
  return launchPacked(grid, block, packed->data(), packed->size(), error,
                      dynamicSharedBytes);
}

namespace {

std::string shellQuote(const std::string &s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The C entry of the i-th kernel of a host build.
std::string entrySymbol(size_t i) { return "cuts_launch_" + std::to_string(i); }

// The translation unit the host compiler gets: the header, then each
// kernel's source in a namespace of its own (their helpers may share names)
// under its own file name (so messages point into it), a check that the
// signature matches the kernel, and its C entry cuts_launch_<i>.
std::string hostTranslationUnit(const std::vector<std::string> &sources,
                                const std::vector<HostSource> &kernels) {
  std::string tu = "// Generated by cuts::compileForHost: " +
                   std::to_string(kernels.size()) +
                   " kernel(s) for execution on the host.\n"
                   "#include \"cuda_host.h\"\n";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelSignature &kernel = kernels[i].kernel;
    const std::string ns = "cuts_k" + std::to_string(i);
    const std::string fn = ns + "::" + kernel.name;
    std::string types;
    for (const KernelParam &p : kernel.params)
      types += (types.empty() ? "" : ", ") + p.type;
    tu += "namespace " + ns + " {\n";
    tu += "#line 1 \"" + kernel.name + ".cu\"\n";
    tu += sources[i];
    if (!sources[i].empty() && sources[i].back() != '\n')
      tu += '\n';
    // Inside the namespace: the parameters may name the source's types.
    tu += "#line 1 \"cuts_host_entry.cpp\"\n";
    tu += "static_assert(std::is_same<decltype(&" + kernel.name +
          "), void (*)(" + types +
          ")>::value,\n"
          "              \"the parameter list given to compileForHost does "
          "not match the kernel's\");\n";
    tu += "} // namespace " + ns + "\n";
    tu += "extern \"C\" __attribute__((visibility(\"default\"))) int\n" +
          entrySymbol(i) +
          "(const unsigned *grid, const unsigned *block,\n"
          "            unsigned long long dynamicSharedBytes, void *const "
          "*args,\n"
          "            int numArgs, char *error, unsigned long errorSize) {\n"
          "  return ::cuts_host::launchFromC(&" +
          fn +
          ", grid, block, dynamicSharedBytes, args,\n"
          "                                  numArgs, error, errorSize);\n"
          "}\n";
  }
  return tu;
}

bool writeFile(const std::filesystem::path &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return bool(out.flush());
}

// Runs `command` through the shell; its stdout+stderr in `output`.
int runCommand(const std::string &command, std::string &output) {
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    output =
        std::string("cannot run the host compiler: ") + std::strerror(errno);
    return -1;
  }
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
    if (output.size() < (64u << 10)) // a template error can be megabytes
      output.append(buffer, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class TempDir {
public:
  explicit TempDir(bool keep) : keep(keep) {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/cuts-host-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (mkdtemp(name.data()))
      path = name.data();
  }
  ~TempDir() {
    if (path.empty())
      return;
    if (keep) {
      std::fprintf(stderr, "cuts: host build kept in %s\n", path.c_str());
      return;
    }
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::filesystem::path path;

private:
  bool keep;
};

} // namespace

struct HostKernelLoader {
  // Every kernel of one library, each holding its own reference to it.
  static std::vector<std::unique_ptr<HostKernel>>
  load(const std::string &library, const std::vector<HostSource> &kernels,
       std::string &error) {
    std::vector<std::unique_ptr<HostKernel>> out;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const std::string &name = kernels[i].kernel.name;
      void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char *why = dlerror();
        error = "cannot load the host build of " + name + ": " +
                (why ? why : "dlopen failed");
        return {};
      }
      std::string symbol = entrySymbol(i);
      void *entry = dlsym(handle, symbol.c_str());
      if (!entry) {
        error = "the host build of " + name + " has no " + symbol;
        dlclose(handle);
        return {};
      }
      std::unique_ptr<HostKernel> k(new HostKernel());
      k->sig = kernels[i].kernel;
      k->library = handle;
      k->launchFn = reinterpret_cast<HostLaunchFn>(entry);
      out.push_back(std::move(k));
    }
    return out;
  }
};

namespace {

// The command up to the inputs: compiler, language and code-generation flags.
std::string compileFlags(const HostCompileOptions &options) {
  std::string compiler = options.compiler;
  if (compiler.empty()) {
    const char *cxx = std::getenv("CXX");
    compiler = cxx && *cxx ? cxx : "c++";
  }
  // Not quoted: CXX may carry a launcher or flags ("ccache g++").
  std::string flags =
      compiler + " -std=c++17 " + options.optimization +
      " -fPIC -pthread -fno-strict-aliasing -fvisibility=hidden";
  for (const std::string &flag : options.extraFlags)
    flags += " " + flag;
  return flags;
}

// 128 bits of FNV-1a (two offset bases) in hex: a cache key, not a MAC.
std::string contentKey(const std::string &a, const std::string &b) {
  auto fnv = [&](uint64_t h) {
    for (const std::string *s : {&a, &b}) {
      for (unsigned char c : *s)
        h = (h ^ c) * 0x100000001b3ull;
      h = (h ^ 0xff) * 0x100000001b3ull; // separates a from b
    }
    return h;
  };
  char key[33];
  std::snprintf(key, sizeof key, "%016llx%016llx",
                static_cast<unsigned long long>(fnv(0xcbf29ce484222325ull)),
                static_cast<unsigned long long>(fnv(0x84222325cbf29ce4ull)));
  return key;
}

std::filesystem::path hostCacheDir(const HostCompileOptions &options) {
  std::string dir = options.cacheDir;
  if (dir.empty()) {
    const char *env = std::getenv("CUTS_HOST_CACHE");
    const char *xdg = std::getenv("XDG_CACHE_HOME");
    const char *home = std::getenv("HOME");
    if (env && *env)
      dir = env;
    else if (xdg && *xdg)
      dir = std::string(xdg) + "/cuts/host";
    else if (home && *home)
      dir = std::string(home) + "/.cache/cuts/host";
  }
  if (dir.empty() || dir == "off" || dir == "0")
    return {};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return ec ? std::filesystem::path() : std::filesystem::path(dir);
}

// Moves `from` into the cache as `to`, atomically: a reader sees the whole
// file or none. Copies first when the two are on different filesystems.
void publish(const std::filesystem::path &from,
             const std::filesystem::path &to) {
  std::error_code ec;
  auto staged = to;
  staged += ".tmp" + std::to_string(getpid());
  std::filesystem::copy_file(
      from, staged, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec)
    std::filesystem::rename(staged, to, ec);
  if (ec)
    std::filesystem::remove(staged, ec);
}

// Keeps the cache to about kCacheEntries libraries, the least recently used
// going first; once per process, at its first store.
void prune(const std::filesystem::path &dir) {
  static std::once_flag once;
  std::call_once(once, [&] {
    constexpr size_t kCacheEntries = 4096;
    std::vector<
        std::pair<std::filesystem::file_time_type, std::filesystem::path>>
        libs;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(dir, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
      if (it->path().extension() == ".so")
        libs.emplace_back(it->last_write_time(ec), it->path());
    if (libs.size() <= kCacheEntries)
      return;
    std::sort(libs.begin(), libs.end());
    for (size_t i = 0; i + kCacheEntries * 3 / 4 < libs.size(); ++i)
      std::filesystem::remove(libs[i].second, ec);
  });
}

// The directory holding cuda_host.h and its precompiled header for `flags`
// (the compiler finds the .gch next to the header), built once; empty if the
// compiler cannot build one (then the header is parsed each time).
std::filesystem::path precompiledHeader(const std::filesystem::path &cache,
                                        const std::string &flags) {
  static std::mutex mutex;
  static std::map<std::string, std::filesystem::path> built;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = built.find(flags);
  if (found != built.end())
    return found->second;
  auto dir = cache / ("pch-" + contentKey(flags, kCudaHostHeader));
  std::error_code ec;
  if (!std::filesystem::exists(dir / "cuda_host.h.gch", ec)) {
    TempDir tmp(false);
    std::string output;
    if (tmp.path.empty() ||
        !writeFile(tmp.path / "cuda_host.h", kCudaHostHeader) ||
        runCommand(flags + " -x c++-header -o " +
                       shellQuote((tmp.path / "cuda_host.h.gch").string()) +
                       " " + shellQuote((tmp.path / "cuda_host.h").string()),
                   output) != 0)
      return built[flags] = std::filesystem::path();
    // The header first: a directory with the .gch always has its header.
    std::filesystem::create_directories(dir, ec);
    publish(tmp.path / "cuda_host.h", dir / "cuda_host.h");
    publish(tmp.path / "cuda_host.h.gch", dir / "cuda_host.h.gch");
  }
  bool ok = std::filesystem::exists(dir / "cuda_host.h.gch", ec) &&
            std::filesystem::exists(dir / "cuda_host.h", ec);
  return built[flags] = ok ? dir : std::filesystem::path();
}

std::string kernelNames(const std::vector<HostSource> &kernels) {
  std::string names;
  for (const HostSource &k : kernels)
    names += (names.empty() ? "" : ", ") + k.kernel.name;
  return names;
}

// Writes the translation unit into `dir` and compiles it to dir/kernel.so.
bool build(const std::string &tu, const std::string &flags,
           const std::filesystem::path &pch,
           const std::vector<HostSource> &kernels,
           const std::filesystem::path &dir, std::string &error) {
  // Template-ids make odd file names; the name only labels the file.
  std::string fileName = kernels[0].kernel.name.substr(0, 64) + "_host.cpp";
  for (char &c : fileName)
    if (!isIdentChar(c) && c != '.')
      c = '_';
  std::filesystem::path unit = dir / fileName;
  std::filesystem::path library = dir / "kernel.so";
  // With a precompiled header the header is found through -I, next to it.
  if ((pch.empty() && !writeFile(dir / "cuda_host.h", kCudaHostHeader)) ||
      !writeFile(unit, tu)) {
    error = "cannot write the host build's files in " + dir.string();
    return false;
  }
  std::string command = flags + " -shared -Wl,-z,defs";
  if (!pch.empty())
    command += " -I " + shellQuote(pch.string());
  command +=
      " -o " + shellQuote(library.string()) + " " + shellQuote(unit.string());
  std::string output;
  int status = runCommand(command, output);
  if (status != 0) {
    error = "host compiler failed on " + kernelNames(kernels) + " (exit " +
            std::to_string(status) + "): " + command + "\n" + output;
    return false;
  }
  return true;
}

std::vector<std::unique_ptr<HostKernel>>
compile(const std::vector<HostSource> &kernels, std::string &error,
        const HostCompileOptions &options) {
  if (kernels.empty())
    return {};
  std::vector<std::string> sources;
  for (const HostSource &k : kernels) {
    if (k.kernel.name.empty()) {
      error = "compileForHost: no kernel name";
      return {};
    }
    std::optional<std::string> rewritten = rewriteForHost(k.source, error);
    if (!rewritten) {
      error = k.kernel.name + ": " + error;
      return {};
    }
    sources.push_back(std::move(*rewritten));
  }
  std::string tu = hostTranslationUnit(sources, kernels);
  std::string flags = compileFlags(options);
  std::filesystem::path cache =
      options.keepFiles ? std::filesystem::path() : hostCacheDir(options);
  std::filesystem::path cached;
  std::error_code ec;
  if (!cache.empty()) {
    cached =
        cache / (contentKey(flags, std::string(kCudaHostHeader) + tu) + ".so");
    if (std::filesystem::exists(cached, ec)) {
      std::string ignored;
      auto hit = HostKernelLoader::load(cached.string(), kernels, ignored);
      if (!hit.empty()) {
        std::filesystem::last_write_time(
            cached, std::filesystem::file_time_type::clock::now(), ec);
        return hit;
      }
      std::filesystem::remove(cached, ec); // truncated or foreign: rebuild
    }
  }
  TempDir dir(options.keepFiles);
  if (dir.path.empty()) {
    error = std::string("cannot create a temporary directory: ") +
            std::strerror(errno);
    return {};
  }
  std::filesystem::path pch =
      cache.empty() ? std::filesystem::path() : precompiledHeader(cache, flags);
  if (!build(tu, flags, pch, kernels, dir.path, error))
    return {};
  std::filesystem::path library = dir.path / "kernel.so";
  if (!cached.empty()) {
    publish(library, cached);
    prune(cache);
  }
  // The mapped library outlives its file: TempDir may delete it now.
  return HostKernelLoader::load(library.string(), kernels, error);
}

} // namespace

std::vector<std::unique_ptr<HostKernel>>
compileForHost(const std::vector<HostSource> &kernels, std::string &error,
               const HostCompileOptions &options) {
  try {
    return compile(kernels, error, options);
  } catch (const std::exception &e) {
    error = std::string("compileForHost: ") + e.what();
    return {};
  }
}

std::unique_ptr<HostKernel> compileForHost(const std::string &source,
                                           const KernelSignature &kernel,
                                           std::string &error,
                                           const HostCompileOptions &options) {
  auto k = compileForHost({HostSource{source, kernel}}, error, options);
  return k.empty() ? nullptr : std::move(k[0]);
}

} // namespace cuts

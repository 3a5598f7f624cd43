//===- Artifact.cpp - write, read and validate model.cuts -----------------===//
//
// The binary layout is in Artifact.h. The "manifest" section is one JSON
// object, written compactly with its keys sorted (nlohmann's default object
// is a std::map), so equal contents give byte-identical files. Every field
// below is written always and required on reading, except those marked
// (optional), which a reader takes as their default when absent; unknown
// fields are ignored so that later writers may add some.
//
//   model     string   graph name
//   producer  string   "cuts 0.1.0"
//   archs     [string] "sm_XY" (an optional suffix "a" or "f"); a section
//                      "cubin.<arch>" exists for each, and every generated
//                      kernel has a CUBIN for every arch
//   target    object   (optional, none) the GPU descriptor the plan was
//                      tuned for: {name string, peakFlops number (FLOP/s
//                      of the precision's units: FP32 SIMT, or the fp16
//                      tensor cores for fp16 and bf16), bandwidth number
//                      (global bytes/s)}, both numbers >= 0
//   precision string   (optional, "fp32") the storage of floating-point
//                      tensors between kernels: "fp32", "fp16" or "bf16";
//                      or "tf32": fp32 tensors whose products may round
//                      their operands to tf32
//   mixesRows string   (optional, "") the op that combines rows of the
//                      batch ("op (loc) why"), found by cuts compile
//                      --batch: such a plan runs only the profiles' own
//                      batches, whole on one device
//   batch     int      (optional, 0) the batch this plan serves when the
//                      model has batch profiles (cuts compile --batch):
//                      each other profile is a section "manifest.<batch>"
//                      holding a manifest like this one, with the same
//                      model, archs, precision and inputs and outputs but
//                      for their batch axis, batches increasing from the
//                      "manifest" section's; all share the other sections
//   tensors   [object] indexed by tensor id:
//     name         string  the ONNX value name (non-empty for inputs and
//                          outputs, which are bound by name)
//     shape        [int]   dimensions, each >= 0
//     dtype        string  float32 float16 bfloat16 float64 int8 uint8
//                          int16 int32 int64 bool
//     kind         string  input output weight intermediate view state
//                          (state: a session's own memory, zeroed when it
//                          is created and kept across runs; not in the
//                          arena)
//     index        int     input/output: position in inputs/outputs
//     weightOffset uint    weight: offset in "weights" (256-byte aligned)
//     viewOf       int     view: the tensor id it re-shapes (no cycles,
//                          no more bytes than its root)
//     batchAxis    int     (optional, -1) an entry of inputs or outputs of a
//                          plan with a batch: 0 where its axis 0 is that
//                          batch
//   inputs    [int]    tensor ids in the model's input order
//   outputs   [int]    tensor ids in the model's output order; each is the
//                      input/output (index i) or an equal-sized view of it
//   kernels   [object]
//     name         string  the extern "C" __global__ function
//     summary      string
//     grid, block  int     1-D launch (grid 1..2^31-1, block 1..1024)
//     sharedBytes  int     dynamic shared memory bytes
//     args         [int]   tensor ids, in parameter order
//     outputs      [int]   tensor ids (each also in args) the kernel writes
//     pulTimeUs    number  the performance model's lower bound
//     flops        number  (optional, 0) the least FLOPs of the kernel's
//                          ops (an FMA is 2); >= 0, 0 when unknown
//     bytes        uint    (optional, 0) the least bytes it moves: each
//                          input read and each output written once
//     source       {offset, size}             range of "source"
//     cubins       {arch: {offset, size}}     range of "cubin.<arch>"
//     library      string  (optional, "") "" for a generated kernel, else
//                          the library call that the step makes instead:
//                          "cudnn.conv", cuDNN's fused convolution
//                          y = act(conv(x, w) + bias + z), or
//                          "cublaslt.gemm", cuBLASLt's batched product
//                          Y = act(alpha A B + bias + Z). A library kernel
//                          has no source (size 0) and no cubins; grid,
//                          block and sharedBytes are unused
//     libraryParams [int]  (optional, []) the call's parameters; for
//                          "cudnn.conv" an encoded ConvSpec
//                          (cuts/rt/Library.h): N, C, H, W, K, FH, FW,
//                          padH, padW, strideH, strideW, dilH, dilW, group,
//                          OH, OW, bias, residual, relu (0/1), algo, math
//                          (cuts/rt/LibraryMath.h: 0 fp32, 1 tf32, 2 fp16,
//                          3 bf16; absent: fp32), channelsLast (0/1: x, z,
//                          y NHWC, w K x FH x FW x C/group; absent: 0,
//                          NCHW). Its args are x, w, [bias
//                          if bias], [z if residual], y, all of the math's
//                          dtype (float32, or float16 / bfloat16) with
//                          exactly the bytes the spec implies (x N*C*H*W,
//                          w K*(C/group)*FH*FW, bias K, z and y N*K*OH*OW
//                          elements); outputs is [y], whose memory no
//                          other arg shares; for "cublaslt.gemm" an
//                          encoded GemmSpec (cuts/rt/Blas.h): M, N, K,
//                          batch, transA, transB, batchA, batchB, bias,
//                          residual, batchZ, relu (0/1), alpha (float
//                          bits), algo, math, with args A, B, [bias], [Z],
//                          Y of the math's dtype
//     workspaceBytes uint  (optional, 0) device scratch the library call
//                          needed when tuned (the runtime asks again)
//   steps     [object] {kernel, from, to}: kernel >= 0 runs that kernel
//                      (from = to = -1); kernel = -1 copies tensor `from`
//                      into tensor `to` (equal byte sizes)
//     stream       int     (optional, 0) 0: the session's stream; 1: its
//                          side stream (generated kernels only)
//     after        int     (optional, -1) an earlier step of the other
//                          stream this one waits for. The first side step
//                          waits for a step of stream 0, and a later step of
//                          stream 0 waits for the last side step, so a
//                          run's work forks from and joins its stream
//     pdl          bool    (optional, false) a generated kernel launched as
//                          a programmatic dependent of the step before it,
//                          a kernel (generated or a library call) on the
//                          same stream
//     overPdl      bool    (optional, false) a cuSync consumer (a side
//                          step after its wait kernel, the step before
//                          that its producer on stream 0, the next step
//                          joining) that runs over PDL where the GPU has
//                          it: right after its producer on stream 0, as its
//                          programmatic dependent, the wait kernel skipped;
//                          elsewhere as written
//
// A kernel or copy never writes an input or a weight (the caller's inputs
// stay intact and weights are shared by every session of a model).
//
//===----------------------------------------------------------------------===//

#include "cuts/Artifact.h"

#include "FileIO.h"
#include "cuts/rt/Blas.h"
#include "cuts/rt/Checksum.h"
#include "cuts/rt/Library.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace cuts::rt {
namespace {

using Json = nlohmann::json;

constexpr char kMagic[8] = {'C', 'U', 'T', 'S', 'M', 'D', 'L', '\0'};
constexpr uint64_t kHeaderBytes = 64;
constexpr uint64_t kEntryBytes = 64;
constexpr uint64_t kNameBytes = 32;
constexpr uint64_t kSectionAlign = 256;
constexpr uint64_t kWeightAlign = 256;
// CUBINs are ELF images the driver reads in place: keep each 16-byte
// aligned inside its (256-byte aligned) section.
constexpr uint64_t kCubinAlign = 16;
// Far more than any writer makes; bounds the table read from a corrupt file.
constexpr uint32_t kMaxSections = 4096;
// Largest tensor accepted: keeps element-count arithmetic far from overflow.
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 56;

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

void putU32(std::vector<uint8_t> &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = uint8_t(v >> (8 * i));
}
void putU64(std::vector<uint8_t> &b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    b[at + i] = uint8_t(v >> (8 * i));
}
uint32_t getU32(const std::vector<uint8_t> &b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t(b[at + i]) << (8 * i);
  return v;
}
uint64_t getU64(const std::vector<uint8_t> &b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(b[at + i]) << (8 * i);
  return v;
}
bool allZero(const std::vector<uint8_t> &b, size_t at, size_t n) {
  return std::all_of(b.begin() + at, b.begin() + at + n,
                     [](uint8_t x) { return x == 0; });
}

const char *kindName(TensorKind k) {
  switch (k) {
  case TensorKind::Input:
    return "input";
  case TensorKind::Output:
    return "output";
  case TensorKind::Weight:
    return "weight";
  case TensorKind::Intermediate:
    return "intermediate";
  case TensorKind::View:
    return "view";
  case TensorKind::State:
    return "state";
  }
  return "intermediate";
}

std::optional<TensorKind> kindFromName(const std::string &s) {
  for (TensorKind k :
       {TensorKind::Input, TensorKind::Output, TensorKind::Weight,
        TensorKind::Intermediate, TensorKind::View, TensorKind::State})
    if (s == kindName(k))
      return k;
  return std::nullopt;
}

/// "sm_90" -> {9, 0, '\0'}, "sm_100a" -> {10, 0, 'a'}.
struct ArchId {
  int major = 0, minor = 0;
  char suffix = 0;
};
std::optional<ArchId> parseArch(const std::string &s) {
  if (s.size() < 5 || s.compare(0, 3, "sm_") != 0)
    return std::nullopt;
  std::string digits = s.substr(3);
  char suffix = 0;
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
    suffix = digits.back();
    digits.pop_back();
  }
  if (digits.size() < 2 || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  ArchId id;
  id.major = std::stoi(digits.substr(0, digits.size() - 1));
  id.minor = digits.back() - '0';
  id.suffix = suffix;
  return id;
}

Json blobJson(const Blob &b) {
  Json j = Json::object();
  j["offset"] = b.offset;
  j["size"] = b.size;
  return j;
}

Json manifestJson(const Manifest &m) {
  Json j = Json::object();
  j["model"] = m.model;
  j["producer"] = m.producer;
  j["archs"] = m.archs;
  if (!m.target.empty())
    j["target"] = {{"name", m.target},
                   {"peakFlops", m.peakFlops},
                   {"bandwidth", m.bandwidth}};
  j["precision"] = m.precision;
  if (m.batch > 0)
    j["batch"] = m.batch;
  if (!m.mixesRows.empty())
    j["mixesRows"] = m.mixesRows;
  if (m.ranks > 0) {
    j["ranks"] = m.ranks;
    j["rank"] = m.rank;
  }
  Json tensors = Json::array();
  for (const Tensor &t : m.tensors) {
    Json jt = Json::object();
    jt["name"] = t.name;
    jt["shape"] = t.shape;
    jt["dtype"] = t.dtype;
    jt["kind"] = kindName(t.kind);
    jt["index"] = t.index;
    jt["weightOffset"] = t.weightOffset;
    jt["viewOf"] = t.viewOf;
    if (t.batchAxis >= 0)
      jt["batchAxis"] = t.batchAxis;
    tensors.push_back(std::move(jt));
  }
  j["tensors"] = std::move(tensors);
  j["inputs"] = m.inputs;
  j["outputs"] = m.outputs;
  Json kernels = Json::array();
  for (const KernelLaunch &k : m.kernels) {
    Json jk = Json::object();
    jk["name"] = k.name;
    jk["summary"] = k.summary;
    jk["grid"] = k.grid;
    jk["block"] = k.block;
    jk["sharedBytes"] = k.sharedBytes;
    jk["args"] = k.args;
    jk["outputs"] = k.outputs;
    // JSON has no NaN or infinity; a bound that is not a number is no bound.
    jk["pulTimeUs"] = std::isfinite(k.pulTimeUs) ? k.pulTimeUs : 0.0;
    jk["flops"] = std::isfinite(k.flops) ? k.flops : 0.0;
    jk["bytes"] = k.bytes;
    jk["source"] = blobJson(k.source);
    Json cubins = Json::object();
    for (const auto &[arch, blob] : k.cubins)
      cubins[arch] = blobJson(blob);
    jk["cubins"] = std::move(cubins);
    jk["library"] = k.library;
    jk["libraryParams"] = k.libraryParams;
    jk["workspaceBytes"] = k.workspaceBytes;
    kernels.push_back(std::move(jk));
  }
  j["kernels"] = std::move(kernels);
  Json steps = Json::array();
  for (const Step &s : m.steps) {
    Json js = Json::object();
    js["kernel"] = s.kernel;
    js["from"] = s.from;
    js["to"] = s.to;
    if (s.stream != 0 || s.after != -1) {
      js["stream"] = s.stream;
      js["after"] = s.after;
    }
    if (s.pdl)
      js["pdl"] = true;
    if (s.overPdl)
      js["overPdl"] = true;
    if (!s.collective.empty())
      js["collective"] = s.collective;
    if (!s.engine.empty())
      js["engine"] = s.engine;
    if (s.hostKernel >= 0)
      js["hostKernel"] = s.hostKernel;
    steps.push_back(std::move(js));
  }
  j["steps"] = std::move(steps);
  return j;
}

/// Appends `data` to `section` at an `align`-ed offset, reusing an earlier
/// identical blob (kernels compiled into one module share its image).
Blob appendBlob(std::vector<uint8_t> &section,
                std::map<std::vector<uint8_t>, Blob> &seen,
                std::vector<uint8_t> data, uint64_t align) {
  if (data.empty())
    return Blob{};
  auto it = seen.find(data);
  if (it != seen.end())
    return it->second;
  Blob b;
  b.offset = alignUp(section.size(), align);
  b.size = data.size();
  section.resize(b.offset, 0);
  section.insert(section.end(), data.begin(), data.end());
  seen.emplace(std::move(data), b);
  return b;
}

//===- Reading the manifest ---------------------------------------------===//

std::string join(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}
std::string at(const std::string &path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

/// Typed access to the manifest JSON; the first failure is kept in `error`
/// with the field's path ("kernels[2].args[0]").
class Reader {
public:
  explicit Reader(std::string &error) : error(error) {}

  bool fail(const std::string &path, const std::string &msg) {
    if (error.empty())
      error = "manifest: " + path + ": " + msg;
    return false;
  }

  const Json *member(const Json &obj, const std::string &path,
                     const char *key) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      fail(join(path, key), "missing");
      return nullptr;
    }
    return &*it;
  }

  bool expect(const Json &v, const std::string &path, bool ok,
              const char *what) {
    if (ok)
      return true;
    return fail(path,
                std::string("expected ") + what + ", got " + v.type_name());
  }

  bool str(const Json &obj, const std::string &path, const char *key,
           std::string &out) {
    const Json *v = member(obj, path, key);
    if (!v || !expect(*v, join(path, key), v->is_string(), "a string"))
      return false;
    out = v->get<std::string>();
    return true;
  }

  bool integer(const Json &v, const std::string &path, int64_t lo, int64_t hi,
               int64_t &out) {
    if (!expect(v, path, v.is_number_integer(), "an integer"))
      return false;
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > uint64_t(std::numeric_limits<int64_t>::max()) || int64_t(u) > hi)
        return fail(path, std::to_string(u) + " is out of range [" +
                              std::to_string(lo) + ", " + std::to_string(hi) +
                              "]");
      out = int64_t(u);
    } else {
      out = v.get<int64_t>();
    }
    if (out < lo || out > hi)
      return fail(path, std::to_string(out) + " is out of range [" +
                            std::to_string(lo) + ", " + std::to_string(hi) +
                            "]");
    return true;
  }
  bool integer(const Json &obj, const std::string &path, const char *key,
               int64_t lo, int64_t hi, int64_t &out) {
    const Json *v = member(obj, path, key);
    return v && integer(*v, join(path, key), lo, hi, out);
  }
  bool integer(const Json &obj, const std::string &path, const char *key,
               int lo, int hi, int &out) {
    int64_t v = 0;
    if (!integer(obj, path, key, int64_t(lo), int64_t(hi), v))
      return false;
    out = int(v);
    return true;
  }

  bool u64(const Json &obj, const std::string &path, const char *key,
           uint64_t &out) {
    const Json *v = member(obj, path, key);
    std::string p = join(path, key);
    if (!v || !expect(*v, p, v->is_number_integer(), "an integer"))
      return false;
    if (!v->is_number_unsigned() && v->get<int64_t>() < 0)
      return fail(p, "must not be negative");
    out = v->get<uint64_t>();
    return true;
  }

  bool number(const Json &obj, const std::string &path, const char *key,
              double &out) {
    const Json *v = member(obj, path, key);
    if (!v || !expect(*v, join(path, key), v->is_number(), "a number"))
      return false;
    out = v->get<double>();
    return true;
  }
  /// A number that counts something (work, a rate): >= 0.
  bool amount(const Json &obj, const std::string &path, const char *key,
              double &out) {
    if (!number(obj, path, key, out))
      return false;
    if (!(out >= 0))
      return fail(join(path, key), "must not be negative");
    return true;
  }

  const Json *array(const Json &obj, const std::string &path, const char *key) {
    const Json *v = member(obj, path, key);
    if (!v || !expect(*v, join(path, key), v->is_array(), "an array"))
      return nullptr;
    return v;
  }

  const Json *object(const Json &obj, const std::string &path,
                     const char *key) {
    const Json *v = member(obj, path, key);
    if (!v || !expect(*v, join(path, key), v->is_object(), "an object"))
      return nullptr;
    return v;
  }

  /// An array of tensor ids, each in [0, numTensors).
  bool ids(const Json &obj, const std::string &path, const char *key,
           size_t numTensors, std::vector<int> &out) {
    const Json *a = array(obj, path, key);
    if (!a)
      return false;
    std::string p = join(path, key);
    out.clear();
    for (size_t i = 0; i < a->size(); ++i) {
      const Json &v = (*a)[i];
      if (!expect(v, at(p, i), v.is_number_integer(), "a tensor id"))
        return false;
      bool neg = !v.is_number_unsigned() && v.get<int64_t>() < 0;
      if (neg || v.get<uint64_t>() >= numTensors)
        return fail(at(p, i), "tensor id " + v.dump() +
                                  " is out of range (the manifest has " +
                                  std::to_string(numTensors) + " tensors)");
      out.push_back(int(v.get<int64_t>()));
    }
    return true;
  }

  bool blob(const Json &v, const std::string &path, Blob &out) {
    if (!expect(v, path, v.is_object(), "an object {offset, size}"))
      return false;
    return u64(v, path, "offset", out.offset) && u64(v, path, "size", out.size);
  }

private:
  std::string &error;
};

bool readTensor(Reader &r, const Json &jt, const std::string &p, Tensor &t) {
  if (!r.expect(jt, p, jt.is_object(), "an object"))
    return false;
  std::string kind;
  if (!r.str(jt, p, "name", t.name) || !r.str(jt, p, "dtype", t.dtype) ||
      !r.str(jt, p, "kind", kind))
    return false;
  auto k = kindFromName(kind);
  if (!k)
    return r.fail(join(p, "kind"),
                  "unknown kind \"" + kind +
                      "\" (expected input, output, weight, intermediate or "
                      "view)");
  t.kind = *k;
  if (dtypeBytes(t.dtype) == 0)
    return r.fail(join(p, "dtype"), "unknown dtype \"" + t.dtype + "\"");
  const Json *shape = r.array(jt, p, "shape");
  if (!shape)
    return false;
  t.shape.clear();
  uint64_t bytes = dtypeBytes(t.dtype);
  for (size_t i = 0; i < shape->size(); ++i) {
    int64_t d = 0;
    if (!r.integer((*shape)[i], at(join(p, "shape"), i), 0,
                   int64_t(kMaxTensorBytes), d))
      return false;
    t.shape.push_back(d);
    if (d != 0 && bytes > kMaxTensorBytes / uint64_t(d))
      return r.fail(join(p, "shape"), "the tensor is too large");
    bytes *= uint64_t(d);
  }
  t.batchAxis = -1;
  return r.integer(jt, p, "index", -1, std::numeric_limits<int>::max(),
                   t.index) &&
         r.u64(jt, p, "weightOffset", t.weightOffset) &&
         r.integer(jt, p, "viewOf", -1, std::numeric_limits<int>::max(),
                   t.viewOf) &&
         (!jt.contains("batchAxis") ||
          r.integer(jt, p, "batchAxis", -1, int(t.shape.size()) - 1,
                    t.batchAxis));
}

bool readKernel(Reader &r, const Json &jk, const std::string &p,
                size_t numTensors, KernelLaunch &k) {
  if (!r.expect(jk, p, jk.is_object(), "an object"))
    return false;
  if (!r.str(jk, p, "name", k.name) || !r.str(jk, p, "summary", k.summary) ||
      !r.integer(jk, p, "grid", 1, int64_t(std::numeric_limits<int>::max()),
                 k.grid) ||
      !r.integer(jk, p, "block", 1, 1024, k.block) ||
      !r.integer(jk, p, "sharedBytes", 0,
                 int64_t(std::numeric_limits<int>::max()), k.sharedBytes) ||
      !r.ids(jk, p, "args", numTensors, k.args) ||
      !r.ids(jk, p, "outputs", numTensors, k.outputs) ||
      !r.number(jk, p, "pulTimeUs", k.pulTimeUs))
    return false;
  if (k.name.empty())
    return r.fail(join(p, "name"), "must not be empty");
  const Json *src = r.member(jk, p, "source");
  if (!src || !r.blob(*src, join(p, "source"), k.source))
    return false;
  const Json *cubins = r.object(jk, p, "cubins");
  if (!cubins)
    return false;
  k.cubins.clear();
  for (auto it = cubins->begin(); it != cubins->end(); ++it)
    if (!r.blob(it.value(), join(join(p, "cubins"), it.key()),
                k.cubins[it.key()]))
      return false;
  // Optional: absent in a generated kernel's entry written before them.
  k.library.clear();
  k.libraryParams.clear();
  k.workspaceBytes = 0;
  k.flops = 0;
  k.bytes = 0;
  if (jk.contains("flops") && !r.amount(jk, p, "flops", k.flops))
    return false;
  if (jk.contains("bytes") && !r.u64(jk, p, "bytes", k.bytes))
    return false;
  if (jk.contains("library") && !r.str(jk, p, "library", k.library))
    return false;
  if (jk.contains("libraryParams")) {
    const Json *params = r.array(jk, p, "libraryParams");
    if (!params)
      return false;
    for (size_t i = 0; i < params->size(); ++i) {
      int64_t v = 0;
      if (!r.integer((*params)[i], at(join(p, "libraryParams"), i),
                     std::numeric_limits<int64_t>::min(),
                     std::numeric_limits<int64_t>::max(), v))
        return false;
      k.libraryParams.push_back(v);
    }
  }
  if (jk.contains("workspaceBytes") &&
      !r.u64(jk, p, "workspaceBytes", k.workspaceBytes))
    return false;
  return true;
}

bool readManifest(const Json &j, Manifest &m, std::string &error) {
  Reader r(error);
  if (!j.is_object()) {
    error =
        std::string("manifest: expected a JSON object, got ") + j.type_name();
    return false;
  }
  if (!r.str(j, "", "model", m.model) || !r.str(j, "", "producer", m.producer))
    return false;
  const Json *archs = r.array(j, "", "archs");
  if (!archs)
    return false;
  for (size_t i = 0; i < archs->size(); ++i) {
    const Json &a = (*archs)[i];
    if (!r.expect(a, at("archs", i), a.is_string(), "a string"))
      return false;
    m.archs.push_back(a.get<std::string>());
  }
  m.target.clear();
  m.peakFlops = m.bandwidth = 0;
  if (j.contains("target")) {
    const Json *t = r.object(j, "", "target");
    if (!t || !r.str(*t, "target", "name", m.target) ||
        !r.amount(*t, "target", "peakFlops", m.peakFlops) ||
        !r.amount(*t, "target", "bandwidth", m.bandwidth))
      return false;
  }
  m.precision = "fp32";
  if (j.contains("precision")) {
    if (!r.str(j, "", "precision", m.precision))
      return false;
    if (m.precision != "fp32" && m.precision != "tf32" &&
        m.precision != "fp16" && m.precision != "bf16") {
      error = "manifest: precision '" + m.precision +
              "' is none of fp32, tf32, fp16, bf16";
      return false;
    }
  }
  m.batch = 0;
  if (j.contains("batch") &&
      !r.integer(j, "", "batch", 1, int64_t(kMaxTensorBytes), m.batch))
    return false;
  m.mixesRows.clear();
  if (j.contains("mixesRows") && !r.str(j, "", "mixesRows", m.mixesRows))
    return false;
  m.ranks = m.rank = 0;
  if (j.contains("ranks") &&
      (!r.integer(j, "", "ranks", 2, 1024, m.ranks) ||
       !r.integer(j, "", "rank", 0, m.ranks - 1, m.rank)))
    return false;
  const Json *tensors = r.array(j, "", "tensors");
  if (!tensors)
    return false;
  m.tensors.resize(tensors->size());
  for (size_t i = 0; i < tensors->size(); ++i)
    if (!readTensor(r, (*tensors)[i], at("tensors", i), m.tensors[i]))
      return false;
  size_t n = m.tensors.size();
  if (!r.ids(j, "", "inputs", n, m.inputs) ||
      !r.ids(j, "", "outputs", n, m.outputs))
    return false;
  const Json *kernels = r.array(j, "", "kernels");
  if (!kernels)
    return false;
  m.kernels.resize(kernels->size());
  for (size_t i = 0; i < kernels->size(); ++i)
    if (!readKernel(r, (*kernels)[i], at("kernels", i), n, m.kernels[i]))
      return false;
  const Json *steps = r.array(j, "", "steps");
  if (!steps)
    return false;
  m.steps.resize(steps->size());
  for (size_t i = 0; i < steps->size(); ++i) {
    const Json &js = (*steps)[i];
    std::string p = at("steps", i);
    Step &s = m.steps[i];
    if (!r.expect(js, p, js.is_object(), "an object") ||
        !r.integer(js, p, "kernel", -1, int(m.kernels.size()) - 1, s.kernel) ||
        !r.integer(js, p, "from", -1, int(n) - 1, s.from) ||
        !r.integer(js, p, "to", -1, int(n) - 1, s.to) ||
        (js.contains("stream") &&
         !r.integer(js, p, "stream", 0, 1, s.stream)) ||
        (js.contains("after") &&
         !r.integer(js, p, "after", -1, int(i) - 1, s.after)) ||
        (js.contains("hostKernel") &&
         !r.integer(js, p, "hostKernel", 0, int(m.kernels.size()) - 1,
                    s.hostKernel)))
      return false;
    if (js.contains("pdl")) {
      const Json &v = js["pdl"];
      if (!r.expect(v, join(p, "pdl"), v.is_boolean(), "a boolean"))
        return false;
      s.pdl = v.get<bool>();
    }
    if (js.contains("overPdl")) {
      const Json &v = js["overPdl"];
      if (!r.expect(v, join(p, "overPdl"), v.is_boolean(), "a boolean"))
        return false;
      s.overPdl = v.get<bool>();
    }
    if (js.contains("collective") && !r.str(js, p, "collective", s.collective))
      return false;
    if (js.contains("engine") && !r.str(js, p, "engine", s.engine))
      return false;
  }
  return true;
}

std::string tensorLabel(const Manifest &m, int t) {
  std::string s = "tensor " + std::to_string(t);
  if (!m.tensors[t].name.empty())
    s += " (\"" + m.tensors[t].name + "\")";
  return s;
}

/// A library kernel: a known library, params it accepts, args that match
/// them in number, dtype and bytes, no source and no CUBINs. Its outputs
/// were checked against its args like any kernel's.
bool validateLibraryKernel(const Manifest &m, const KernelLaunch &k,
                           const std::string &p, std::string &error) {
  auto fail = [&](const std::string &path, const std::string &msg) {
    error = "manifest: " + path + ": " + msg;
    return false;
  };
  // The args with the bytes the spec implies: x, w, [bias], [z], y for a
  // convolution, A, B, [bias], [Z], Y for a product.
  std::vector<std::pair<const char *, uint64_t>> want;
  std::string why, described, dtype;
  if (k.library == kCudnnConv) {
    auto spec = decodeConvSpec(k.libraryParams, why);
    if (!spec)
      return fail(join(p, "libraryParams"), why);
    const ConvSpec &s = *spec;
    described = describeConvSpec(s);
    dtype = libraryDtype(s.math);
    want = {{"x", s.xBytes()}, {"w", s.wBytes()}};
    if (s.bias)
      want.emplace_back("bias", s.biasBytes());
    if (s.residual)
      want.emplace_back("z", s.yBytes());
    want.emplace_back("y", s.yBytes());
  } else if (k.library == kCublasGemm) {
    auto spec = decodeGemmSpec(k.libraryParams, why);
    if (!spec)
      return fail(join(p, "libraryParams"), why);
    const GemmSpec &s = *spec;
    described = describeGemmSpec(s);
    dtype = libraryDtype(s.math);
    want = {{"A", s.aBytes()}, {"B", s.bBytes()}};
    if (s.bias)
      want.emplace_back("bias", s.biasBytes());
    if (s.residual)
      want.emplace_back("Z", s.zBytes());
    want.emplace_back("Y", s.yBytes());
  } else {
    return fail(join(p, "library"),
                "unknown library \"" + k.library + "\" (this runtime knows \"" +
                    kCudnnConv + "\" and \"" + kCublasGemm + "\")");
  }
  if (k.source.size != 0)
    return fail(join(p, "source"), "a library kernel has no source");
  if (!k.cubins.empty())
    return fail(join(p, "cubins"), "a library kernel has no CUBINs");

  std::string order;
  for (const auto &[name, bytes] : want)
    order += (order.empty() ? "" : ", ") + std::string(name);
  if (k.args.size() != want.size())
    return fail(join(p, "args"), "this " + k.library + " kernel takes " +
                                     std::to_string(want.size()) + " args (" +
                                     order + "), not " +
                                     std::to_string(k.args.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor &t = m.tensors[k.args[i]];
    std::string pa = at(join(p, "args"), i);
    if (t.dtype != dtype)
      return fail(pa, std::string(want[i].first) + " is " +
                          tensorLabel(m, k.args[i]) + ", a " + t.dtype +
                          " tensor; this " + k.library + " takes " + dtype);
    if (t.bytes() != want[i].second)
      return fail(
          pa, std::string(want[i].first) + " is " + tensorLabel(m, k.args[i]) +
                  " of " + std::to_string(t.bytes()) + " bytes; the spec (" +
                  described + ") needs " + std::to_string(want[i].second));
  }
  int y = k.args.back();
  if (k.outputs != std::vector<int>{y})
    return fail(join(p, "outputs"),
                "a " + k.library + " kernel writes its last arg (y) alone");
  for (size_t i = 0; i + 1 < k.args.size(); ++i)
    if (rootTensor(m, k.args[i]) == rootTensor(m, y))
      return fail(at(join(p, "args"), i), std::string(want[i].first) +
                                              " shares its memory with y (" +
                                              tensorLabel(m, y) + ")");
  return true;
}

/// The checks that span fields: I/O positions, weight ranges, views, kernel
/// blobs, steps. Field types and id ranges were checked while reading.
// The tensor a step writes must be the step's own: no input, no weight.
bool writable(const Manifest &m, int t) {
  TensorKind k = m.tensors[rootTensor(m, t)].kind;
  return k != TensorKind::Input && k != TensorKind::Weight;
}

bool validateArchs(const Artifact &a, std::string &error) {
  const Manifest &m = a.manifest;
  auto fail = [&](const std::string &path, const std::string &msg) {
    error = "manifest: " + path + ": " + msg;
    return false;
  };
  std::set<std::string> archSet;
  for (size_t i = 0; i < m.archs.size(); ++i) {
    const std::string &arch = m.archs[i];
    if (!parseArch(arch))
      return fail(at("archs", i), "\"" + arch + "\" is not an sm_XY arch");
    if (!archSet.insert(arch).second)
      return fail(at("archs", i), "\"" + arch + "\" is listed twice");
    if (!a.sections.count("cubin." + arch))
      return fail(at("archs", i),
                  "no section \"cubin." + arch + "\" for \"" + arch + "\"");
  }
  for (const auto &[name, blob] : a.sections)
    for (const std::string prefix : {"codec.", "collective."})
      if (name.rfind(prefix, 0) == 0 &&
          !archSet.count(name.substr(prefix.size()))) {
        error = "section \"" + name + "\": not for an arch of the manifest's";
        return false;
      }

  return true;
}

bool validateTensors(const Artifact &a, const Manifest &m, std::string &error) {
  auto fail = [&](const std::string &path, const std::string &msg) {
    error = "manifest: " + path + ": " + msg;
    return false;
  };
  size_t n = m.tensors.size();
  uint64_t weightsSize = 0;
  a.section("weights", &weightsSize);
  if (a.weightsInFile.size > 0)
    weightsSize = a.weightsInFile.size; // left in the file
  for (size_t i = 0; i < n; ++i) {
    const Tensor &t = m.tensors[i];
    std::string p = at("tensors", i);
    switch (t.kind) {
    case TensorKind::Input:
    case TensorKind::Output: {
      bool in = t.kind == TensorKind::Input;
      const std::vector<int> &list = in ? m.inputs : m.outputs;
      const char *listName = in ? "inputs" : "outputs";
      if (t.index < 0 || size_t(t.index) >= list.size() ||
          rootTensor(m, list[t.index]) != int(i))
        return fail(join(p, "index"),
                    std::string("the ") + kindName(t.kind) + " at index " +
                        std::to_string(t.index) + " is not " + listName + "[" +
                        std::to_string(t.index) + "] (nor its root)");
      break;
    }
    case TensorKind::Weight:
      if (t.weightOffset % kWeightAlign != 0)
        return fail(join(p, "weightOffset"), std::to_string(t.weightOffset) +
                                                 " is not 256-byte aligned");
      if (t.weightOffset > weightsSize ||
          t.bytes() > weightsSize - t.weightOffset)
        return fail(join(p, "weightOffset"),
                    "bytes [" + std::to_string(t.weightOffset) + ", " +
                        std::to_string(t.weightOffset + t.bytes()) +
                        ") are outside the weights section (" +
                        std::to_string(weightsSize) + " bytes)");
      break;
    case TensorKind::View: {
      if (t.viewOf < 0 || size_t(t.viewOf) >= n)
        return fail(join(p, "viewOf"),
                    "tensor id " + std::to_string(t.viewOf) +
                        " is out of range (the manifest has " +
                        std::to_string(n) + " tensors)");
      int root = rootTensor(m, int(i));
      if (root < 0)
        return fail(join(p, "viewOf"), "the views form a cycle");
      if (t.bytes() > m.tensors[root].bytes())
        return fail(p, "the view has " + std::to_string(t.bytes()) +
                           " bytes but its root, " + tensorLabel(m, root) +
                           ", has " + std::to_string(m.tensors[root].bytes()));
      break;
    }
    case TensorKind::Intermediate:
      break;
    case TensorKind::State:
      if (t.dtype != "int32")
        return fail(join(p, "dtype"), "a state tensor holds int32 counters");
      break;
    }
  }
  return true;
}

bool validateInputsOutputs(const Manifest &m, std::string &error) {
  auto fail = [&](const std::string &path, const std::string &msg) {
    error = "manifest: " + path + ": " + msg;
    return false;
  };
  // An entry of inputs/outputs is the I/O tensor itself or a view of it
  // (the driver returns a reshaped intermediate by making its root the
  // output); the caller binds the entry's name and shape.
  for (const char *listName : {"inputs", "outputs"}) {
    bool in = listName[0] == 'i';
    const std::vector<int> &list = in ? m.inputs : m.outputs;
    TensorKind want = in ? TensorKind::Input : TensorKind::Output;
    for (size_t i = 0; i < list.size(); ++i) {
      int id = list[i], root = rootTensor(m, id);
      if (root < 0 || m.tensors[root].kind != want ||
          m.tensors[root].index != int(i))
        return fail(at(listName, i), tensorLabel(m, id) + " is not " +
                                         (in ? "an input" : "an output") +
                                         " with index " + std::to_string(i) +
                                         ", nor a view of one");
      if (m.tensors[id].bytes() != m.tensors[root].bytes())
        return fail(at(listName, i),
                    tensorLabel(m, id) + " is a view with fewer bytes than " +
                        tensorLabel(m, root) +
                        " (the caller's buffer must hold all of it)");
      if (m.tensors[id].name.empty())
        return fail(at(listName, i), tensorLabel(m, id) +
                                         " needs a name (bindings are by "
                                         "name)");
    }
  }
  std::set<std::string> ioNames;
  for (const std::vector<int> *list : {&m.inputs, &m.outputs})
    for (int t : *list)
      if (!ioNames.insert(m.tensors[t].name).second)
        return fail("tensors", "two inputs or outputs are named \"" +
                                   m.tensors[t].name + "\"");

  return true;
}

bool validateKernels(const Artifact &a, const Manifest &m, std::string &error) {
  auto fail = [&](const std::string &path, const std::string &msg) {
    error = "manifest: " + path + ": " + msg;
    return false;
  };
  uint64_t sourceSize = 0;
  a.section("source", &sourceSize);
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const KernelLaunch &k = m.kernels[i];
    std::string p = at("kernels", i);
    std::set<int> args(k.args.begin(), k.args.end()), outs;
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      int t = k.outputs[o];
      std::string po = at(join(p, "outputs"), o);
      if (!args.count(t))
        return fail(po, tensorLabel(m, t) + " is not one of the args");
      if (!outs.insert(t).second)
        return fail(po, tensorLabel(m, t) + " is listed twice");
      if (!writable(m, t))
        return fail(po, "the kernel writes " + tensorLabel(m, t) +
                            ", which is (a view of) an input or a weight");
    }
    if (k.isLibrary()) {
      if (!validateLibraryKernel(m, k, p, error))
        return false;
      continue;
    }
    if (!k.libraryParams.empty())
      return fail(join(p, "libraryParams"),
                  "a generated kernel (library \"\") has no library params");
    if (k.workspaceBytes != 0)
      return fail(join(p, "workspaceBytes"),
                  "a generated kernel (library \"\") has no workspace");
    if (k.source.offset > sourceSize ||
        k.source.size > sourceSize - k.source.offset)
      return fail(join(p, "source"), "the range is outside the source "
                                     "section (" +
                                         std::to_string(sourceSize) +
                                         " bytes)");
    for (const auto &[arch, blob] : k.cubins) {
      std::string pc = join(join(p, "cubins"), arch);
      if (std::find(m.archs.begin(), m.archs.end(), arch) == m.archs.end())
        return fail(pc, "\"" + arch + "\" is not in archs");
      uint64_t size = 0;
      a.section("cubin." + arch, &size);
      if (blob.size == 0)
        return fail(pc, "the CUBIN is empty");
      if (blob.offset > size || blob.size > size - blob.offset)
        return fail(pc, "the range is outside the section \"cubin." + arch +
                            "\" (" + std::to_string(size) + " bytes)");
    }
    for (const std::string &arch : m.archs)
      if (!k.cubins.count(arch))
        return fail(join(p, "cubins"),
                    "kernel \"" + k.name + "\" has no CUBIN for " + arch);
  }

  return true;
}

// The side stream's steps fork from stream 0 and join it again (a graph
// capture fails otherwise), and run generated kernels only (library calls
// have one handle per session, on its stream).
bool validateStreams(const Manifest &m, std::string &error) {
  auto fail = [&](const std::string &path, const std::string &msg) {
    error = "manifest: " + path + ": " + msg;
    return false;
  };
  auto generated = [&](const Step &x) {
    return x.kernel >= 0 && !m.kernels[x.kernel].isLibrary();
  };
  int firstSide = -1, lastSide = -1;
  bool joined = false;
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const Step &s = m.steps[i];
    std::string p = at("steps", i);
    if (s.after >= 0 && m.steps[s.after].stream == s.stream)
      return fail(join(p, "after"),
                  "step " + std::to_string(s.after) + " is on the same stream");
    if (s.pdl) {
      if (i == 0 || !generated(s) || m.steps[i - 1].kernel < 0 ||
          m.steps[i - 1].stream != s.stream || s.after >= 0)
        return fail(join(p, "pdl"),
                    "a programmatic launch follows a kernel on its stream "
                    "and waits for no other step");
    }
    if (s.overPdl) {
      // The side run is [wait kernel, consumer], the producer just before
      // it and the next step joining it. The wait kernel, which the runtime
      // may skip, writes nothing and nothing waits for it.
      const Step *hold = i >= 2 ? &m.steps[i - 1] : nullptr;
      const Step *producer = i >= 2 ? &m.steps[i - 2] : nullptr;
      auto reads = [&](const Step &x, const Step &y) { // y reads x's output
        for (int o : m.kernels[size_t(x.kernel)].outputs)
          for (int a : m.kernels[size_t(y.kernel)].args)
            if (rootTensor(m, a) == rootTensor(m, o))
              return true;
        return false;
      };
      bool awaited = false;
      for (const Step &x : m.steps)
        awaited = awaited || x.after == int(i) - 1;
      if (!hold || s.stream != 1 || !generated(s) || s.after >= 0 ||
          hold->stream != 1 || hold->kernel < 0 ||
          !m.kernels[size_t(hold->kernel)].outputs.empty() || awaited ||
          !generated(*producer) || producer->stream != 0 ||
          !reads(*producer, s) || i + 1 >= m.steps.size() ||
          m.steps[i + 1].after != int(i))
        return fail(join(p, "overPdl"),
                    "a consumer over PDL is a side run's second step, after "
                    "its wait kernel (which writes nothing and nothing waits "
                    "for), reading its producer's output on stream 0 just "
                    "before, and the next step joins it");
    }
    if (s.stream == 0) {
      joined = joined || (lastSide >= 0 && s.after == lastSide);
      continue;
    }
    if (!generated(s))
      return fail(join(p, "stream"),
                  "only generated kernels run on the side stream");
    if (firstSide < 0 && s.after < 0)
      return fail(join(p, "after"), "the first side-stream step must wait "
                                    "for a step of stream 0");
    firstSide = firstSide < 0 ? int(i) : firstSide;
    lastSide = int(i);
    joined = false;
  }
  if (lastSide >= 0 && !joined)
    return fail(at("steps", size_t(lastSide)),
                "no later step of stream 0 waits for the last side-stream "
                "step");
  return true;
}

bool validateSteps(const Manifest &m, std::string &error) {
  auto fail = [&](const std::string &path, const std::string &msg) {
    error = "manifest: " + path + ": " + msg;
    return false;
  };
  size_t n = m.tensors.size();
  std::vector<bool> written(n, false);
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const Step &s = m.steps[i];
    std::string p = at("steps", i);
    if (!s.engine.empty() && s.collective.empty())
      return fail(p, "an engine without a collective");
    if (s.hostKernel >= 0) {
      const KernelLaunch *lib = s.kernel >= 0 ? &m.kernels[s.kernel] : nullptr;
      const KernelLaunch &alt = m.kernels[s.hostKernel];
      if (!lib || !lib->isLibrary() || alt.isLibrary() || lib->args.empty() ||
          std::find(alt.outputs.begin(), alt.outputs.end(), lib->args.back()) ==
              alt.outputs.end())
        return fail(join(p, "hostKernel"),
                    "a library step's alternative is a generated kernel "
                    "that writes the library call's output");
      // The memory plan's lifetimes are the library call's: the
      // alternative touches its tensors, and weights.
      for (int t : alt.args)
        if (std::find(lib->args.begin(), lib->args.end(), t) ==
                lib->args.end() &&
            m.tensors[rootTensor(m, t)].kind != TensorKind::Weight)
          return fail(join(p, "hostKernel"),
                      "the alternative touches " + tensorLabel(m, t) +
                          ", which the library call does not");
      for (int t : alt.outputs)
        written[rootTensor(m, t)] = true;
    }
    if (s.kernel >= 0) {
      if (s.from != -1 || s.to != -1)
        return fail(p, "a kernel step has from = to = -1");
      for (int t : m.kernels[s.kernel].outputs)
        written[rootTensor(m, t)] = true;
      continue;
    }
    if (s.from < 0 || s.to < 0)
      return fail(p, "a copy (kernel -1) needs from and to");
    if (!s.collective.empty()) {
      if (s.collective != "all-reduce" || m.ranks < 2)
        return fail(p, "collective \"" + s.collective +
                           "\": only \"all-reduce\", in a plan of 2 or "
                           "more ranks");
      const std::string &dt = m.tensors[s.from].dtype;
      if (rootTensor(m, s.from) != rootTensor(m, s.to) ||
          !writable(m, s.from) ||
          (dt != "float32" && dt != "float16" && dt != "bfloat16"))
        return fail(p, "an all-reduce sums a float32, float16 or bfloat16 "
                       "tensor in place (to a view of from, neither an "
                       "input nor a weight)");
      if (!s.engine.empty() && s.engine != "nccl")
        return fail(p, "engine \"" + s.engine +
                           "\": only \"nccl\" (or none: the copy engines)");
      continue;
    }
    if (m.tensors[s.from].bytes() != m.tensors[s.to].bytes())
      return fail(p, "the copy's tensors differ in size (" +
                         std::to_string(m.tensors[s.from].bytes()) + " and " +
                         std::to_string(m.tensors[s.to].bytes()) + " bytes)");
    if (!writable(m, s.to))
      return fail(join(p, "to"), "the copy writes " + tensorLabel(m, s.to) +
                                     ", which is (a view of) an input or a "
                                     "weight");
    if (rootTensor(m, s.from) == rootTensor(m, s.to))
      return fail(p, "the copy's tensors share their memory");
    written[rootTensor(m, s.to)] = true;
  }
  for (int t : m.outputs)
    if (!written[rootTensor(m, t)] && m.tensors[t].bytes() != 0)
      return fail("outputs", "no step writes output " + tensorLabel(m, t));
  return validateStreams(m, error);
}

// A batched input or output (an entry of inputs or outputs) has the plan's
// batch on axis 0.
bool validateBatch(const Manifest &m, std::string &error) {
  std::set<int> io(m.inputs.begin(), m.inputs.end());
  io.insert(m.outputs.begin(), m.outputs.end());
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const Tensor &t = m.tensors[i];
    if (t.batchAxis < 0)
      continue;
    if (!io.count(int(i)) || t.batchAxis != 0 || m.batch == 0 ||
        t.shape[0] != m.batch) {
      error = "manifest: " + at("tensors", i) +
              ".batchAxis: only an input or output of a plan with a batch "
              "has one, axis 0, of the plan's batch (" +
              std::to_string(m.batch) + ")";
      return false;
    }
  }
  return true;
}

bool validateManifest(const Artifact &a, const Manifest &m,
                      std::string &error) {
  return validateTensors(a, m, error) && validateInputsOutputs(m, error) &&
         validateKernels(a, m, error) && validateSteps(m, error) &&
         validateBatch(m, error);
}

// The profiles serve one model: the same inputs and outputs but for their
// batch axis, which grows from profile to profile.
bool validateProfiles(const Artifact &a, std::string &error) {
  const Manifest &first = a.manifest;
  int64_t last = first.batch;
  for (size_t p = 0; p < a.profiles.size(); ++p) {
    const Manifest &m = a.profiles[p];
    const std::string label = "manifest." + std::to_string(m.batch) + ": ";
    auto fail = [&](const std::string &msg) {
      error = label + msg;
      return false;
    };
    if (last == 0 || m.batch <= last)
      return fail("a batch profile needs a batch above the previous "
                  "profile's (" +
                  std::to_string(last) + ")");
    last = m.batch;
    if (m.archs != first.archs || m.precision != first.precision ||
        m.model != first.model)
      return fail("the model, archs and precision must be the first "
                  "manifest's");
    for (int pass = 0; pass < 2; ++pass) {
      const std::vector<int> &mine = pass ? m.outputs : m.inputs,
                             &theirs = pass ? first.outputs : first.inputs;
      if (mine.size() != theirs.size())
        return fail("its inputs and outputs are not the first manifest's");
      for (size_t i = 0; i < mine.size(); ++i) {
        const Tensor &x = m.tensors[mine[i]], &y = first.tensors[theirs[i]];
        std::vector<int64_t> xs = x.shape, ys = y.shape;
        if (x.batchAxis >= 0 && y.batchAxis == x.batchAxis)
          xs[0] = ys[0] = 0;
        if (x.name != y.name || x.dtype != y.dtype || xs != ys ||
            x.batchAxis != y.batchAxis)
          return fail("\"" + x.name +
                      "\" differs from the first manifest's but for the "
                      "batch");
      }
    }
  }
  return true;
}

/// The sections "manifest.rank<r>" of a tensor-parallel artifact: ranks 1
/// to manifest.ranks - 1, each with the first plan's archs, precision,
/// inputs and outputs.
bool readRankPlans(Artifact &a, std::string &error) {
  const Manifest &first = a.manifest;
  if (first.ranks > 1 && first.rank != 0) {
    error = "manifest: a tensor-parallel artifact's first plan is rank 0, "
            "not " +
            std::to_string(first.rank);
    return false;
  }
  for (const Manifest &p : a.profiles)
    if (p.ranks != 0 || first.ranks != 0) {
      error = "manifest." + std::to_string(p.batch) +
              ": batch profiles are not tensor-parallel";
      return false;
    }
  for (int64_t r = 1; r < std::max<int64_t>(first.ranks, 1); ++r) {
    const std::string name = "manifest.rank" + std::to_string(r);
    uint64_t size = 0;
    const uint8_t *text = a.section(name, &size);
    if (!text) {
      error = "a plan of " + std::to_string(first.ranks) + " ranks has no \"" +
              name + "\" section";
      return false;
    }
    Manifest m;
    Json j;
    try {
      j = Json::parse(text, text + size);
    } catch (const Json::exception &e) {
      error = name + ": invalid JSON: " + e.what();
      return false;
    }
    if (!readManifest(j, m, error) || !validateManifest(a, m, error)) {
      error.replace(0, 8, name);
      return false;
    }
    bool same = m.ranks == first.ranks && m.rank == r &&
                m.archs == first.archs && m.precision == first.precision &&
                m.inputs.size() == first.inputs.size() &&
                m.outputs.size() == first.outputs.size() && first.batch == 0;
    for (int pass = 0; same && pass < 2; ++pass) {
      const std::vector<int> &x = pass ? m.outputs : m.inputs,
                             &y = pass ? first.outputs : first.inputs;
      for (size_t i = 0; same && i < x.size(); ++i) {
        const Tensor &u = m.tensors[size_t(x[i])],
                     &v = first.tensors[size_t(y[i])];
        same = u.name == v.name && u.dtype == v.dtype && u.shape == v.shape;
      }
    }
    // The ranks meet at every all-reduce: the same ones, in the same order.
    auto collectives = [](const Manifest &x) {
      std::vector<std::pair<std::string, uint64_t>> c;
      for (const Step &s : x.steps)
        if (!s.collective.empty())
          c.emplace_back(s.collective, x.tensors[size_t(s.from)].bytes());
      return c;
    };
    same =
        same && collectives(m) == collectives(first) && m.model == first.model;
    if (!same) {
      error = name + ": not rank " + std::to_string(r) +
              " of the first plan's " + std::to_string(first.ranks) +
              " (its rank, model, archs, precision, inputs, outputs and "
              "collectives must match; no batch profiles)";
      return false;
    }
    a.rankPlans.push_back(std::move(m));
  }
  for (const auto &[name, blob] : a.sections)
    if (name.rfind("manifest.rank", 0) == 0 &&
        (first.ranks < 2 || name.size() == 13 || name[13] == '0' ||
         name.size() > 13 + std::to_string(first.ranks).size() ||
         name.find_first_not_of("0123456789", 13) != std::string::npos ||
         std::stoll(name.substr(13)) >= first.ranks)) {
      error = "section \"" + name + "\": no rank of this plan";
      return false;
    }
  return true;
}

} // namespace

uint64_t dtypeBytes(const std::string &dtype) {
  static const std::map<std::string, uint64_t> sizes = {
      {"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8},
      {"int8", 1},    {"uint8", 1},   {"int16", 2},    {"int32", 4},
      {"int64", 8},   {"bool", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

uint64_t Tensor::bytes() const {
  uint64_t b = dtypeBytes(dtype);
  for (int64_t d : shape) {
    if (d <= 0)
      return 0;
    // Saturate rather than wrap for shapes a parsed artifact cannot hold.
    if (b > std::numeric_limits<uint64_t>::max() / uint64_t(d))
      return std::numeric_limits<uint64_t>::max();
    b *= uint64_t(d);
  }
  return b;
}

const uint8_t *Artifact::section(const std::string &name,
                                 uint64_t *size) const {
  auto it = sections.find(name);
  if (it == sections.end() || it->second.offset > bytes.size() ||
      it->second.size > bytes.size() - it->second.offset) {
    if (size)
      *size = 0;
    return nullptr;
  }
  if (size)
    *size = it->second.size;
  return bytes.data() + it->second.offset;
}

std::string Artifact::source(int kernel) const {
  if (kernel < 0 || size_t(kernel) >= manifest.kernels.size())
    return {};
  return source(manifest.kernels[size_t(kernel)]);
}

std::string Artifact::source(const KernelLaunch &k) const {
  uint64_t size = 0;
  const uint8_t *p = section("source", &size);
  const Blob &b = k.source;
  if (!p || b.offset > size || b.size > size - b.offset)
    return {};
  return std::string(reinterpret_cast<const char *>(p + b.offset), b.size);
}

std::vector<const Manifest *> Artifact::plans() const {
  std::vector<const Manifest *> all = {&manifest};
  for (const Manifest &p : profiles)
    all.push_back(&p);
  return all;
}

namespace {

// An artifact laid out for writing: the header and section table, then each
// section at its offset (zeros between). The sections are the contents'
// own weights and the blobs built here, never a copy of the whole file.
struct Layout {
  std::vector<uint8_t> head, manifestBytes, source;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> profileBytes;
  std::map<std::string, std::vector<uint8_t>> cubin;
  // The bytes after the head, in file order (zeros between).
  std::vector<WeightSpan> pieces;
  uint64_t size = 0;
};

// False where the weight spans are out of order or overlap.
bool layOut(const ArtifactContents &c, Layout &l) {
  uint64_t end = c.weights.size();
  for (const WeightSpan &w : c.weightSpans) {
    if (w.offset < end)
      return false;
    end = w.offset + w.size;
  }
  // Each plan's kernels' blobs; identical ones (kernels compiled into one
  // module, or shared between batch profiles) are stored once.
  std::map<std::vector<uint8_t>, Blob> seenSource;
  std::map<std::string, std::map<std::vector<uint8_t>, Blob>> seenCubin;
  auto placeBlobs =
      [&](Manifest &m, const std::vector<std::string> &sources,
          const std::vector<std::map<std::string, std::vector<char>>> &cubins) {
        for (size_t i = 0; i < m.kernels.size(); ++i) {
          KernelLaunch &k = m.kernels[i];
          k.source = Blob{};
          if (i < sources.size())
            k.source = appendBlob(
                l.source, seenSource,
                std::vector<uint8_t>(sources[i].begin(), sources[i].end()), 1);
          k.cubins.clear();
          if (i < cubins.size())
            for (const auto &[arch, bytes] : cubins[i])
              k.cubins[arch] =
                  appendBlob(l.cubin[arch], seenCubin[arch],
                             std::vector<uint8_t>(bytes.begin(), bytes.end()),
                             kCubinAlign);
        }
      };
  Manifest m = c.manifest;
  placeBlobs(m, c.sources, c.cubins);
  std::vector<Manifest> profiles;
  for (const ArtifactContents::Profile &p : c.profiles) {
    profiles.push_back(p.manifest);
    placeBlobs(profiles.back(), p.sources, p.cubins);
  }
  std::vector<Manifest> ranks;
  for (const ArtifactContents::Profile &p : c.rankPlans) {
    ranks.push_back(p.manifest);
    placeBlobs(ranks.back(), p.sources, p.cubins);
  }
  // Every arch with a CUBIN is listed: the given order first, then the rest.
  for (const auto &entry : l.cubin)
    if (std::find(m.archs.begin(), m.archs.end(), entry.first) == m.archs.end())
      m.archs.push_back(entry.first);
  for (const std::string &arch : m.archs)
    l.cubin[arch]; // a listed arch with no CUBIN still gets its section
  auto json = [](const Manifest &x) {
    std::string text =
        manifestJson(x).dump(-1, ' ', false, Json::error_handler_t::replace);
    return std::vector<uint8_t>(text.begin(), text.end());
  };
  l.manifestBytes = json(m);
  for (Manifest &p : profiles) {
    p.archs = m.archs;
    l.profileBytes.emplace_back("manifest." + std::to_string(p.batch), json(p));
  }
  for (Manifest &p : ranks) {
    p.archs = m.archs;
    l.profileBytes.emplace_back("manifest.rank" + std::to_string(p.rank),
                                json(p));
  }
  // Each section as its runs of bytes (the weights: their vector, then the
  // spans kept where they are) and its size.
  struct Section {
    std::string name;
    std::vector<WeightSpan> runs; // offsets relative to the section
    uint64_t size = 0;
  };
  auto whole = [](const std::string &name, const std::vector<uint8_t> &b) {
    return Section{name, {{0, b.data(), b.size()}}, b.size()};
  };
  std::vector<Section> named;
  named.push_back(whole("manifest", l.manifestBytes));
  for (const auto &[name, bytes] : l.profileBytes)
    named.push_back(whole(name, bytes));
  named.push_back(whole("weights", c.weights));
  for (const WeightSpan &w : c.weightSpans)
    named.back().runs.push_back(w);
  named.back().size = c.weightBytes();
  for (const auto &[arch, bytes] : l.cubin)
    named.push_back(whole("cubin." + arch, bytes));
  for (const auto &[prefix, modules] :
       {std::make_pair(std::string("codec."), &c.codecs),
        std::make_pair(std::string("collective."), &c.collectives)})
    for (const auto &[arch, bytes] : *modules)
      named.push_back(Section{
          prefix + arch,
          {{0, reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()}},
          bytes.size()});
  named.push_back(whole("source", l.source));

  std::vector<uint8_t> &h = l.head;
  h.assign(kHeaderBytes + kEntryBytes * named.size(), 0);
  uint64_t offset = h.size();
  for (size_t i = 0; i < named.size(); ++i) {
    offset = alignUp(offset, kSectionAlign);
    for (const WeightSpan &r : named[i].runs)
      if (r.size > 0)
        l.pieces.push_back({offset + r.offset, r.data, r.size});
    size_t e = kHeaderBytes + kEntryBytes * i;
    const std::string &name = named[i].name;
    std::memcpy(h.data() + e, name.data(),
                std::min<size_t>(name.size(), kNameBytes - 1));
    putU64(h, e + kNameBytes, offset);
    putU64(h, e + kNameBytes + 8, named[i].size);
    offset += named[i].size;
  }
  l.size = offset;
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  putU32(h, 8, kArtifactVersion);
  putU32(h, 12, uint32_t(named.size()));
  putU64(h, 16, l.size);
  return true;
}

// Calls put(bytes, n) for the laid-out file in order, its header's checksum
// left 0; returns the checksum (of everything after the header), which the
// caller writes at offset 24, or nullopt when a put failed.
template <typename Put>
std::optional<uint64_t> emitLayout(const Layout &l, Put put) {
  static const uint8_t zeros[kSectionAlign] = {};
  Xxh64 h;
  auto emit = [&](const uint8_t *p, uint64_t n) {
    h.update(p, n);
    return put(p, n);
  };
  auto pad = [&](uint64_t n) {
    for (; n > 0; n -= std::min<uint64_t>(n, sizeof zeros))
      if (!emit(zeros, std::min<uint64_t>(n, sizeof zeros)))
        return false;
    return true;
  };
  if (!put(l.head.data(), kHeaderBytes))
    return std::nullopt;
  if (!emit(l.head.data() + kHeaderBytes, l.head.size() - kHeaderBytes))
    return std::nullopt;
  uint64_t at = l.head.size();
  for (const WeightSpan &p : l.pieces) {
    if (!pad(p.offset - at) || !emit(p.data, p.size))
      return std::nullopt;
    at = p.offset + p.size;
  }
  if (!pad(l.size - at))
    return std::nullopt;
  return h.digest();
}

} // namespace

std::vector<uint8_t> serializeArtifact(const ArtifactContents &c) {
  Layout l;
  if (!layOut(c, l))
    return {};
  std::vector<uint8_t> out;
  out.reserve(l.size);
  auto sum = emitLayout(l, [&](const uint8_t *p, size_t n) {
    out.insert(out.end(), p, p + n);
    return true;
  });
  putU64(out, 24, *sum);
  return out;
}

bool writeArtifact(const std::string &path, const ArtifactContents &c,
                   uint64_t *size, std::string &error) {
  Layout l;
  if (!layOut(c, l)) {
    error = "the weights' spans are out of order or overlap";
    return false;
  }
  if (size)
    *size = l.size;
  return writeFileWith(path, error, [&](std::FILE *f) {
    auto sum = emitLayout(l, [&](const uint8_t *p, size_t n) {
      return std::fwrite(p, 1, n, f) == n;
    });
    std::vector<uint8_t> field(8);
    if (sum)
      putU64(field, 0, *sum);
    return sum && std::fseek(f, 24, SEEK_SET) == 0 &&
           std::fwrite(field.data(), 1, 8, f) == 8;
  });
}

std::optional<Artifact> parseArtifact(std::vector<uint8_t> bytes,
                                      std::string &error,
                                      const Blob &weightsInFile) {
  error.clear();
  Artifact a;
  a.bytes = std::move(bytes);
  a.weightsInFile = weightsInFile;
  const std::vector<uint8_t> &b = a.bytes;
  size_t fileSize = b.size();
  auto fail = [&](const std::string &msg) -> std::optional<Artifact> {
    error = msg;
    return std::nullopt;
  };

  if (fileSize > 0 &&
      std::memcmp(b.data(), kMagic, std::min<size_t>(fileSize, 8)) != 0)
    return fail("not a cuts artifact (bad magic; expected \"CUTSMDL\")");
  if (fileSize < kHeaderBytes)
    return fail("truncated: " + std::to_string(fileSize) +
                " bytes, less than the 64-byte header");
  uint32_t version = getU32(b, 8);
  if (version > kArtifactVersion)
    return fail("artifact format version " + std::to_string(version) +
                " is newer than this runtime reads (" +
                std::to_string(kArtifactVersion) +
                "); update the runtime or recompile the model");
  if (version != kArtifactVersion)
    return fail("unsupported artifact format version " +
                std::to_string(version));
  uint64_t declared = getU64(b, 16);
  if (declared > fileSize)
    return fail("truncated: the header says " + std::to_string(declared) +
                " bytes, the file has " + std::to_string(fileSize));
  if (declared < fileSize)
    return fail("the header says " + std::to_string(declared) +
                " bytes, the file has " + std::to_string(fileSize) +
                " (trailing data)");
  if (!allZero(b, 32, 32))
    return fail("corrupted: the header's reserved bytes are not zero");
  uint64_t stored = getU64(b, 24);
  uint64_t computed = xxh64(b.data() + kHeaderBytes, fileSize - kHeaderBytes);
  if (stored != computed) {
    char msg[160];
    std::snprintf(msg, sizeof msg,
                  "corrupted: checksum mismatch (stored %016llx, computed "
                  "%016llx)",
                  static_cast<unsigned long long>(stored),
                  static_cast<unsigned long long>(computed));
    return fail(msg);
  }

  uint32_t count = getU32(b, 12);
  if (count > kMaxSections ||
      kHeaderBytes + uint64_t(count) * kEntryBytes > fileSize)
    return fail("the section table (" + std::to_string(count) +
                " entries) does not fit in the file");
  uint64_t tableEnd = kHeaderBytes + uint64_t(count) * kEntryBytes;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (uint32_t i = 0; i < count; ++i) {
    size_t e = kHeaderBytes + kEntryBytes * i;
    std::string label = "section " + std::to_string(i);
    const char *raw = reinterpret_cast<const char *>(b.data() + e);
    size_t len = strnlen(raw, kNameBytes);
    if (len == 0 || len == kNameBytes)
      return fail(label + ": the name is empty or not NUL-terminated");
    std::string name(raw, len);
    if (!std::all_of(name.begin(), name.end(),
                     [](char c) { return c > 0x20 && c < 0x7f; }) ||
        !allZero(b, e + len, kNameBytes - len) ||
        !allZero(b, e + kNameBytes + 16, 16))
      return fail(label + ": malformed table entry");
    label += " \"" + name + "\"";
    uint64_t off = getU64(b, e + kNameBytes);
    uint64_t size = getU64(b, e + kNameBytes + 8);
    if (off % kSectionAlign != 0)
      return fail(label + ": offset " + std::to_string(off) +
                  " is not 256-byte aligned");
    if (off < tableEnd || off > fileSize || size > fileSize - off)
      return fail(label + ": bytes [" + std::to_string(off) + ", +" +
                  std::to_string(size) + ") are outside the file (" +
                  std::to_string(fileSize) + " bytes) or in its header");
    if (!a.sections.emplace(name, Blob{off, size}).second)
      return fail(label + " appears twice");
    if (size)
      ranges.emplace_back(off, off + size);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return fail("two sections overlap");

  uint64_t manifestSize = 0;
  const uint8_t *manifest = a.section("manifest", &manifestSize);
  if (!manifest)
    return fail("no \"manifest\" section");
  Json j;
  try {
    j = Json::parse(manifest, manifest + manifestSize);
  } catch (const Json::exception &e) {
    return fail(std::string("manifest: invalid JSON: ") + e.what());
  }
  if (!readManifest(j, a.manifest, error) || !validateArchs(a, error) ||
      !validateManifest(a, a.manifest, error))
    return std::nullopt;
  // The other profiles, "manifest.<batch>", in increasing batch.
  std::vector<std::pair<int64_t, std::string>> profiles;
  for (const auto &[name, blob] : a.sections) {
    if (name.rfind("manifest.", 0) != 0 || name.rfind("manifest.rank", 0) == 0)
      continue;
    std::string digits = name.substr(9);
    if (digits.empty() || digits.size() > 15 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return fail("section \"" + name + "\": not manifest.<batch>");
    profiles.emplace_back(std::stoll(digits), name);
  }
  std::sort(profiles.begin(), profiles.end());
  for (const auto &[batch, name] : profiles) {
    const uint8_t *text = a.section(name, &manifestSize);
    Manifest m;
    try {
      j = Json::parse(text, text + manifestSize);
    } catch (const Json::exception &e) {
      return fail(name + ": invalid JSON: " + e.what());
    }
    if (!readManifest(j, m, error) || !validateManifest(a, m, error)) {
      error.replace(0, 8, name); // "manifest: ..." names the section
      return std::nullopt;
    }
    if (m.batch != batch)
      return fail(name + ": its batch is " + std::to_string(m.batch));
    a.profiles.push_back(std::move(m));
  }
  if (!validateProfiles(a, error) || !readRankPlans(a, error))
    return std::nullopt;
  return a;
}

bool readFileBytes(const std::string &path, std::vector<uint8_t> &bytes,
                   std::string &error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  bytes.clear();
  uint8_t buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    bytes.insert(bytes.end(), buf, buf + n);
  bool ok = !std::ferror(f);
  int err = errno;
  std::fclose(f);
  if (!ok)
    error = path + ": cannot read: " + std::strerror(err);
  return ok;
}

std::optional<Artifact> readArtifact(const std::string &path,
                                     std::string &error) {
  std::vector<uint8_t> bytes;
  if (!readFileBytes(path, bytes, error))
    return std::nullopt;
  auto a = parseArtifact(std::move(bytes), error);
  if (!a)
    error = path + ": " + error;
  return a;
}

namespace {

constexpr uint64_t kHashBlock = uint64_t(64) << 20; // weights hashed so

/// `n` bytes of `fd` at `at` into `out` (appended); false on a short read.
bool preadAll(int fd, uint64_t at, uint64_t n, std::vector<uint8_t> &out) {
  const size_t base = out.size();
  out.resize(base + n);
  for (uint64_t done = 0; done < n;) {
    const ssize_t r =
        pread(fd, out.data() + base + done, n - done, off_t(at + done));
    if (r <= 0)
      return false;
    done += uint64_t(r);
  }
  return true;
}

/// In the header and table `h`: the weights' entry and range, and where
/// the cut [weights.offset, cutEnd) ends (the next section's start). False
/// where the weights are small, or anything is not as expected (the caller
/// then reads the whole file, whose parse says what is wrong).
bool findWeightsCut(const std::vector<uint8_t> &h, uint32_t count,
                    uint64_t fileSize, uint64_t leaveFrom, uint32_t &entry,
                    Blob &weights, uint64_t &cutEnd) {
  auto at = [&](uint32_t i) { return kHeaderBytes + kEntryBytes * i; };
  entry = count;
  for (uint32_t i = 0; i < count; ++i)
    if (std::strncmp(reinterpret_cast<const char *>(h.data() + at(i)),
                     "weights", kNameBytes) == 0)
      entry = i;
  if (entry == count)
    return false;
  weights = {getU64(h, at(entry) + kNameBytes),
             getU64(h, at(entry) + kNameBytes + 8)};
  const uint64_t cut = weights.offset;
  if (weights.size == 0 || weights.size < leaveFrom ||
      cut % kSectionAlign != 0 || cut < h.size() || cut > fileSize ||
      weights.size > fileSize - cut)
    return false;
  cutEnd = fileSize;
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t off = getU64(h, at(i) + kNameBytes);
    if (off >= cut + weights.size && off < cutEnd)
      cutEnd = off;
  }
  for (uint32_t i = 0; i < count; ++i) { // none other reaches into the cut
    const uint64_t off = getU64(h, at(i) + kNameBytes),
                   size = getU64(h, at(i) + kNameBytes + 8);
    if (i != entry && size > 0 && off < cutEnd &&
        (off >= cut || size > cut - off))
      return false;
  }
  return true;
}

/// `image` (header and table) completed with the file's bytes but for
/// [cut, cutEnd), which are hashed in passing; false on a short read, or
/// with `error` where the checksum is not `stored`.
bool readAroundCut(int fd, uint64_t fileSize, uint64_t cut, uint64_t cutEnd,
                   uint64_t stored, bool verify, std::vector<uint8_t> &image,
                   std::string &error) {
  Xxh64 sum;
  if (!preadAll(fd, image.size(), cut - image.size(), image))
    return false;
  sum.update(image.data() + kHeaderBytes, image.size() - kHeaderBytes);
  std::vector<uint8_t> block;
  for (uint64_t at = cut; verify && at < cutEnd; at += block.size()) {
    block.clear();
    if (!preadAll(fd, at, std::min<uint64_t>(kHashBlock, cutEnd - at), block))
      return false;
    sum.update(block.data(), block.size());
  }
  const size_t rest = image.size();
  if (!preadAll(fd, cutEnd, fileSize - cutEnd, image))
    return false;
  sum.update(image.data() + rest, image.size() - rest);
  if (verify && sum.digest() != stored) {
    error = "corrupted: checksum mismatch (its weights included)";
    return false;
  }
  return true;
}

/// The file's image without its weights and their padding: the checksum
/// checked on the way, then the table and header rewritten for the image.
bool imageWithoutWeights(int fd, uint64_t fileSize, uint64_t leaveFrom,
                         bool verify, std::vector<uint8_t> &image,
                         Blob &weights, std::string &error) {
  std::vector<uint8_t> h;
  if (fileSize < kHeaderBytes || !preadAll(fd, 0, kHeaderBytes, h) ||
      std::memcmp(h.data(), kMagic, 8) != 0 ||
      getU32(h, 8) != kArtifactVersion || getU64(h, 16) != fileSize)
    return false;
  const uint32_t count = getU32(h, 12);
  uint32_t entry = 0;
  uint64_t cutEnd = 0;
  if (count > kMaxSections ||
      kHeaderBytes + uint64_t(count) * kEntryBytes > fileSize ||
      !preadAll(fd, kHeaderBytes, uint64_t(count) * kEntryBytes, h) ||
      !findWeightsCut(h, count, fileSize, leaveFrom, entry, weights, cutEnd))
    return false;
  const uint64_t cut = weights.offset;
  image = h;
  if (!readAroundCut(fd, fileSize, cut, cutEnd, getU64(h, 24), verify, image,
                     error))
    return false;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t e = kHeaderBytes + kEntryBytes * i;
    const uint64_t off = getU64(image, e + kNameBytes);
    if (i == entry)
      putU64(image, e + kNameBytes + 8, 0);
    else if (off >= cutEnd)
      putU64(image, e + kNameBytes, off - (cutEnd - cut));
    else if (off > cut) // an empty section inside the cut
      putU64(image, e + kNameBytes, cut);
  }
  putU64(image, 16, image.size());
  putU64(image, 24,
         xxh64(image.data() + kHeaderBytes, image.size() - kHeaderBytes));
  return true;
}

} // namespace

bool readImageWithoutWeights(const std::string &path,
                             std::vector<uint8_t> &image, Blob &weights,
                             bool &corrupt, std::string &error,
                             uint64_t leaveFrom, bool verify) {
  corrupt = false;
  const int fd = open(path.c_str(), O_RDONLY);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    if (fd >= 0)
      close(fd);
    return false;
  }
  error.clear();
  weights = {};
  const bool cut = imageWithoutWeights(fd, uint64_t(st.st_size), leaveFrom,
                                       verify, image, weights, error);
  close(fd);
  if (!error.empty()) {
    error = path + ": " + error;
    corrupt = true;
    return false;
  }
  if (cut)
    return true;
  weights = {};
  return readFileBytes(path, image, error);
}

std::optional<Artifact> readArtifactWithoutWeights(const std::string &path,
                                                   std::string &error,
                                                   uint64_t leaveFrom,
                                                   bool verify) {
  std::vector<uint8_t> image;
  Blob weights;
  bool corrupt = false;
  if (!readImageWithoutWeights(path, image, weights, corrupt, error, leaveFrom,
                               verify))
    return std::nullopt;
  auto a = parseArtifact(std::move(image), error, weights);
  if (!a)
    error = path + ": " + error;
  return a;
}

bool writeFileWith(const std::string &path, std::string &error,
                   const std::function<bool(std::FILE *)> &write) {
  // Write beside the target and rename, so that a reader (or a build that
  // is interrupted) never sees half a model.
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  bool ok = write(f);
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    error = path + ": cannot write: " + std::strerror(err);
  }
  return ok;
}

bool writeFile(const std::string &path, const std::vector<uint8_t> &bytes,
               std::string &error) {
  return writeFileWith(path, error, [&](std::FILE *f) {
    return bytes.empty() ||
           std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  });
}

int rootTensor(const Manifest &m, int t) {
  size_t n = m.tensors.size();
  // At most n hops: more means the views form a cycle.
  for (size_t hops = 0; hops <= n; ++hops) {
    if (t < 0 || size_t(t) >= n)
      return -1;
    if (m.tensors[t].kind != TensorKind::View)
      return t;
    t = m.tensors[t].viewOf;
  }
  return -1;
}

namespace {

// Each step's time for liveness: its index, but the steps between a side
// stream's fork and its join run concurrently and share the first one's
// (a tensor the producer reads must outlive the consumer's writes).
std::vector<int64_t> stepTimes(const Manifest &m) {
  std::vector<int64_t> time(m.steps.size());
  int64_t open = -1;
  int lastSide = -1;
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const Step &s = m.steps[i];
    time[i] = int64_t(i);
    if (s.stream == 1) {
      if (open < 0) { // the fork: the steps since it run alongside
        open = s.after + 1;
        for (int64_t j = open; j < int64_t(i); ++j)
          time[j] = open;
      }
      lastSide = int(i);
    } else if (open >= 0 && s.after >= 0 && s.after == lastSide) {
      open = -1; // joined: this step runs after the whole region
    }
    if (open >= 0)
      time[i] = open;
  }
  return time;
}

} // namespace

MemoryPlan planMemory(const Manifest &m) {
  size_t n = m.tensors.size();
  MemoryPlan plan;
  plan.offset.assign(n, -1);
  // Live interval per root tensor: first and last step touching it. This
  // covers "first write to last read" and also keeps a tensor that is
  // written but never read (a kernel's unused output) alive at its write.
  std::vector<int64_t> first(n, -1), last(n, -1);
  auto touch = [&](int t, int64_t step) {
    int r = rootTensor(m, t);
    if (r < 0 || m.tensors[r].kind != TensorKind::Intermediate)
      return;
    if (first[r] < 0)
      first[r] = step;
    last[r] = step;
  };
  const std::vector<int64_t> time = stepTimes(m);
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const Step &step = m.steps[s];
    if (step.kernel >= 0 && size_t(step.kernel) < m.kernels.size()) {
      for (int t : m.kernels[step.kernel].args)
        touch(t, time[s]);
    } else if (step.kernel < 0) {
      touch(step.from, time[s]);
      touch(step.to, time[s]);
    }
  }

  std::vector<int> order;
  for (size_t t = 0; t < n; ++t)
    if (first[t] >= 0) {
      order.push_back(int(t));
      plan.naiveBytes += alignUp(m.tensors[t].bytes(), kSectionAlign);
    }
  // Larger first (ties: earlier start, lower id) so the plan is
  // deterministic and big buffers do not fragment around small ones.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    uint64_t ba = m.tensors[a].bytes(), bb = m.tensors[b].bytes();
    if (ba != bb)
      return ba > bb;
    return first[a] < first[b];
  });
  std::vector<int> placed;
  for (int t : order) {
    uint64_t size = m.tensors[t].bytes();
    std::vector<std::pair<uint64_t, uint64_t>> busy; // [begin, end)
    for (int o : placed)
      if (first[o] <= last[t] && first[t] <= last[o] &&
          m.tensors[o].bytes() > 0)
        busy.emplace_back(uint64_t(plan.offset[o]),
                          uint64_t(plan.offset[o]) + m.tensors[o].bytes());
    std::sort(busy.begin(), busy.end());
    uint64_t off = 0;
    for (const auto &[b, e] : busy) {
      if (off + size <= b)
        break;
      off = std::max(off, alignUp(e, kSectionAlign));
    }
    plan.offset[t] = int64_t(off);
    plan.arenaBytes = std::max(plan.arenaBytes, off + size);
    placed.push_back(t);
  }
  // A view of an arena tensor is that tensor's memory.
  for (size_t t = 0; t < n; ++t) {
    int r = rootTensor(m, int(t));
    if (r >= 0 && size_t(r) != t)
      plan.offset[t] = plan.offset[r];
  }
  plan.stateOffset.assign(n, -1);
  for (size_t t = 0; t < n; ++t)
    if (m.tensors[t].kind == TensorKind::State) {
      plan.stateOffset[t] = int64_t(plan.stateBytes);
      plan.stateBytes += alignUp(m.tensors[t].bytes(), kSectionAlign);
    }
  return plan;
}

} // namespace cuts::rt

//===- Runtime.cpp - the C API of cuts.h ----------------------------------===//
//
// A cuts_model owns what every session shares and never changes after
// loading (modules, functions, weights, the memory plan), so any number of
// threads may use it. A session owns what one stream of requests mutates:
// the arena, the stream, the captured graph, scratch. Sessions hold the
// model's state by shared_ptr, so freeing a model before its sessions is
// safe.
//
// Resources are released by destructors, so every error path frees what it
// had acquired by dropping the half-built object.
//
// Library kernels (KernelLaunch::library, cuts/rt/Library.h) are cuDNN
// calls: the model builds one CudnnConv per such kernel at load, each
// session its own cuDNN handle (on its stream) and one workspace, and a
// step enqueues the call like a launch, also under graph capture. A model
// without library kernels never loads cuDNN.
//
//===----------------------------------------------------------------------===//

#include "cuts/cuts.h"

#include "FileIO.h"
#include "Session.h"
#include "cuts/Artifact.h"
#include "cuts/rt/Binding.h"
#include "cuts/rt/Blas.h"
#include "cuts/rt/Collectives.h"
#include "cuts/rt/CudaDriver.h"
#include "cuts/rt/GraphMemsets.h"
#include "cuts/rt/Library.h"
#include "cuts/rt/Nccl.h"
#include "cuts/rt/Pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace cuts::rt;
using namespace cuts::rt::cuda;

namespace cuts::rt {

thread_local std::string lastError;

cuts_status fail(cuts_status s, std::string msg) {
  lastError = std::move(msg);
  return s;
}

static cuts_status statusFor(CUresult r) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    return CUTS_ERROR_OUT_OF_MEMORY;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE:
    return CUTS_ERROR_NO_DEVICE;
  default:
    return CUTS_ERROR_CUDA;
  }
}

cuts_status cudaFail(CUresult r, const std::string &what) {
  return fail(statusFor(r), what + " failed: " + errorString(r));
}

} // namespace cuts::rt

namespace {

/// "sm_90" -> major 9, minor 0; suffix 'a' (arch-specific) or 'f' or 0.
bool splitArch(const std::string &arch, int &major, int &minor, char &suffix) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
    return false;
  std::string digits = arch.substr(3);
  suffix = 0;
  if (digits.back() == 'a' || digits.back() == 'f') {
    suffix = digits.back();
    digits.pop_back();
  }
  if (digits.size() < 2 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  major = std::stoi(digits.substr(0, digits.size() - 1));
  minor = digits.back() - '0';
  return true;
}

/// The exact arch if the artifact has it, else the highest of the same
/// major with a lower or equal minor. Arch-specific CUBINs ("sm_90a") run
/// on exactly their compute capability only.
std::string chooseArch(const std::vector<std::string> &archs, int major,
                       int minor) {
  std::string exact = "sm_" + std::to_string(major) + std::to_string(minor);
  if (std::find(archs.begin(), archs.end(), exact) != archs.end())
    return exact;
  std::string best;
  int bestMinor = -1;
  for (const std::string &a : archs) {
    int ma = 0, mi = 0;
    char suffix = 0;
    if (!splitArch(a, ma, mi, suffix) || ma != major || mi > minor ||
        (suffix == 'a' && mi != minor))
      continue;
    if (mi > bestMinor || (mi == bestMinor && a < best)) {
      best = a;
      bestMinor = mi;
    }
  }
  return best;
}

} // namespace

namespace cuts::rt {

//===- Loading ------------------------------------------------------------===//

/// The device `ordinal`, its CUBIN arch and its primary context, entered.
cuts_status openDevice(ModelImpl &m, int ordinal, const std::string &label) {
  const Manifest &man = m.artifact.manifest;
  std::string err;
  const Driver *d = driver(err);
  if (!d)
    return fail(CUTS_ERROR_NO_DEVICE, err);
  m.d = d;
  int count = 0;
  if (CUresult r = d->cuDeviceGetCount(&count))
    return cudaFail(r, "cuDeviceGetCount");
  if (count == 0)
    return fail(CUTS_ERROR_NO_DEVICE, "no CUDA device found");
  if (ordinal >= count)
    return fail(CUTS_ERROR_NO_DEVICE, "CUDA device " + std::to_string(ordinal) +
                                          " does not exist (this machine has " +
                                          std::to_string(count) + ")");
  CUdevice dev = 0;
  if (CUresult r = d->cuDeviceGet(&dev, ordinal))
    return cudaFail(r, "cuDeviceGet");
  char name[256] = {0};
  if (CUresult r = d->cuDeviceGetName(name, int(sizeof name) - 1, dev))
    return cudaFail(r, "cuDeviceGetName");
  int major = 0, minor = 0;
  if (CUresult r = d->cuDeviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    return cudaFail(r, "cuDeviceGetAttribute");
  if (CUresult r = d->cuDeviceGetAttribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    return cudaFail(r, "cuDeviceGetAttribute");

  std::string deviceArch =
      "sm_" + std::to_string(major) + std::to_string(minor);
  m.arch = chooseArch(man.archs, major, minor);
  m.pdl = major >= 9 && m.d->cuLaunchKernelEx;
  bool generated = false;
  for (const PlanImpl &p : m.plans)
    generated =
        generated ||
        std::any_of(p.manifest().kernels.begin(), p.manifest().kernels.end(),
                    [](const KernelLaunch &k) { return !k.isLibrary(); });
  // Library calls and copies need no CUBIN: a model of those alone runs on
  // any device.
  if (m.arch.empty() && !generated)
    m.arch = deviceArch;
  if (m.arch.empty()) {
    std::string have;
    for (const std::string &a : man.archs)
      have += (have.empty() ? "" : ", ") + a;
    return fail(CUTS_ERROR_NO_CUBIN,
                label + ": not compiled for this GPU (" + name + ", " +
                    deviceArch + "); the artifact has CUBINs for " +
                    (have.empty() ? std::string("no arch") : have) +
                    "; recompile it for " + deviceArch);
  }

  CUcontext ctx = nullptr;
  if (CUresult r = d->cuDevicePrimaryCtxRetain(&ctx, dev))
    return cudaFail(r, "cuDevicePrimaryCtxRetain");
  m.ctx = ctx; // from here the destructor releases what was acquired
  m.device = dev;
  return enter(m);
}

/// One module per distinct CUBIN (kernels compiled together, or shared by
/// batch profiles, share one), each kernel's function, and the shared
/// memory past 48 KiB opted into.
cuts_status
loadModules(ModelImpl &m, PlanImpl &p,
            std::map<std::pair<uint64_t, uint64_t>, CUmodule> &moduleOf) {
  const Manifest &man = p.manifest();
  const Driver *d = m.d;
  uint64_t cubinSize = 0;
  const uint8_t *cubins = m.artifact.section("cubin." + m.arch, &cubinSize);
  std::map<CUfunction, int64_t> sharedOf;
  p.functions.resize(man.kernels.size(), nullptr);
  for (size_t k = 0; k < man.kernels.size(); ++k) {
    const KernelLaunch &kl = man.kernels[k];
    p.maxArgs = std::max(p.maxArgs, kl.args.size());
    if (kl.isLibrary())
      continue;
    const Blob &b = kl.cubins.at(m.arch); // each has every arch
    auto key = std::make_pair(b.offset, b.size);
    auto it = moduleOf.find(key);
    if (it == moduleOf.end()) {
      // A copy: NUL-terminated in case the image is PTX, and aligned for
      // the ELF reader.
      std::vector<char> image(cubins + b.offset, cubins + b.offset + b.size);
      image.push_back(0);
      CUmodule mod = nullptr;
      if (CUresult r = d->cuModuleLoadData(&mod, image.data()))
        return cudaFail(r, "loading the " + m.arch + " CUBIN of kernel \"" +
                               kl.name + "\" (cuModuleLoadData)");
      m.modules.push_back(mod);
      it = moduleOf.emplace(key, mod).first;
    }
    if (CUresult r = d->cuModuleGetFunction(&p.functions[k], it->second,
                                            kl.name.c_str()))
      return cudaFail(r, "finding kernel \"" + kl.name +
                             "\" in its CUBIN (cuModuleGetFunction)");
    int64_t &shared = sharedOf[p.functions[k]];
    shared = std::max(shared, kl.sharedBytes);
  }
  // Above 48 KiB of dynamic shared memory a kernel must opt in.
  for (size_t k = 0; k < man.kernels.size(); ++k) {
    if (!p.functions[k])
      continue;
    auto it = sharedOf.find(p.functions[k]);
    if (it == sharedOf.end() || it->second <= 48 * 1024)
      continue;
    if (CUresult r = d->cuFuncSetAttribute(
            it->first, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            int(it->second)))
      return cudaFail(r, "kernel \"" + man.kernels[k].name + "\" needs " +
                             std::to_string(it->second) +
                             " bytes of shared memory (cuFuncSetAttribute)");
    sharedOf.erase(it);
  }

  return CUTS_OK;
}

/// cuDNN and cuBLASLt, only for models that call them (parsing checked the
/// params).
cuts_status createLibraryCalls(ModelImpl &m, PlanImpl &p,
                               const std::string &label) {
  const Manifest &man = p.manifest();
  std::string err;
  p.convs.resize(man.kernels.size());
  p.gemms.resize(man.kernels.size());
  for (size_t k = 0; k < man.kernels.size(); ++k) {
    const KernelLaunch &kl = man.kernels[k];
    if (!kl.isLibrary())
      continue;
    m.hasLibrary = true;
    if (kl.library == kCublasGemm) {
      auto spec = decodeGemmSpec(kl.libraryParams, err);
      if (spec && !m.lt)
        m.lt = CublasLtHandle::create(err);
      if (spec && m.lt)
        p.gemms[k] = CublasLtGemm::create(*spec, *m.lt, err, /*anyAlgo=*/true);
      if (!p.gemms[k])
        return fail(CUTS_ERROR_CUDA, label + ": kernel " + std::to_string(k) +
                                         " (\"" + kl.name + "\", " +
                                         kl.library + "): " + err);
      continue;
    }
    m.hasConv = true;
    auto spec = decodeConvSpec(kl.libraryParams, err);
    if (spec)
      p.convs[k] = CudnnConv::create(*spec, err);
    if (!p.convs[k])
      return fail(CUTS_ERROR_CUDA, label + ": kernel " + std::to_string(k) +
                                       " (\"" + kl.name + "\", " + kl.library +
                                       "): " + err);
  }

  return CUTS_OK;
}

/// A weight set of `size` bytes on m's device, its bytes copied from
/// `host` where given (its ms the time that took).
cuts_status newWeights(const ModelImpl &m, const uint8_t *host, uint64_t size,
                       std::shared_ptr<DeviceWeights> &out) {
  const auto t0 = std::chrono::steady_clock::now();
  auto w = std::make_shared<DeviceWeights>();
  if (size > 0) {
    if (cuts_status st = w->alloc(m.d, m.ctx, size, "the weights"))
      return st;
    if (host)
      if (CUresult r = m.d->cuMemcpyHtoD(w->ptr, host, size))
        return cudaFail(r, "uploading the weights (cuMemcpyHtoD)");
  }
  w->ms = host ? msSince(t0) : 0;
  out = std::move(w);
  return CUTS_OK;
}

/// Whether entries past the first are sent the first's weights: NCCL on a
/// single entry too (a broadcast in place, which checks that NCCL is
/// there).
bool needsDistribution(int source, size_t entries) {
  return source == CUTS_WEIGHTS_NCCL ||
         (source == CUTS_WEIGHTS_PEER && entries > 1);
}

/// `bytes` from the first entry's `ptrs[0]` to every other's `ptrs[e]`:
/// peer copies (`source` CUTS_WEIGHTS_PEER), or one NCCL broadcast; ms[e]
/// the time entry e's took. `what` names the bytes in errors.
cuts_status sendFromFirst(const std::vector<std::shared_ptr<ModelImpl>> &r,
                          const std::vector<CUdeviceptr> &ptrs,
                          const std::vector<int> &devices, int source,
                          uint64_t bytes, std::vector<double> &ms,
                          const std::string &what) {
  ms.assign(r.size(), 0.0);
  if (source == CUTS_WEIGHTS_PEER) {
    for (size_t e = 1; e < r.size(); ++e) {
      const ModelImpl &m = *r[e];
      const auto t = std::chrono::steady_clock::now();
      if (cuts_status st = enter(m))
        return st;
      if (CUresult x = m.d->cuMemcpyPeerAsync(ptrs[e], m.ctx, ptrs[0],
                                              r[0]->ctx, bytes, nullptr))
        return cudaFail(x, "sending " + what + " to entry " +
                               std::to_string(e) + " (cuMemcpyPeerAsync)");
      if (CUresult x = m.d->cuStreamSynchronize(nullptr))
        return cudaFail(x, "sending " + what + " (cuStreamSynchronize)");
      ms[e] = msSince(t);
    }
    return CUTS_OK;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<void *> buffers, streams(r.size(), nullptr);
  for (CUdeviceptr p : ptrs)
    buffers.push_back(reinterpret_cast<void *>(uintptr_t(p)));
  auto wait = [&](std::string &why) {
    for (const auto &m : r)
      if (m->d->cuCtxSetCurrent(m->ctx) || m->d->cuStreamSynchronize(nullptr)) {
        why = "waiting for the NCCL broadcast failed";
        return false;
      }
    return true;
  };
  std::string err;
  if (!ncclBroadcastAll(devices, buffers, bytes, streams, wait, err))
    return fail(CUTS_ERROR_CUDA, "broadcasting " + what + ": " + err);
  std::fill(ms.begin() + 1, ms.end(), msSince(t0));
  return CUTS_OK;
}

/// The first entry's weights `w[0]` to the others' `w[e]`: peer copies, or
/// an NCCL broadcast, encoded by `codec` where given; each set's ms the
/// time it took.
cuts_status distributeWeights(const std::vector<std::shared_ptr<ModelImpl>> &r,
                              const std::vector<DeviceWeights *> &w,
                              const std::vector<int> &devices, int source,
                              WeightCodec codec, uint64_t bytes) {
  if (bytes == 0)
    return CUTS_OK;
  if (codec != WeightCodec::None)
    return distributeEncoded(r, w, devices, source, codec);
  std::vector<CUdeviceptr> ptrs;
  for (const DeviceWeights *x : w)
    ptrs.push_back(x->ptr);
  std::vector<double> ms;
  if (cuts_status st =
          sendFromFirst(r, ptrs, devices, source, bytes, ms, "the weights"))
    return st;
  for (size_t e = 1; e < r.size(); ++e) {
    w[e]->ms = ms[e];
    w[e]->sentBytes = bytes;
  }
  return CUTS_OK;
}

/// Every entry's weights from `host` (the artifact's section) as
/// `source` says: from the host, or the first's sent on. Nothing is
/// published: the caller installs `out` once every entry has its set.
cuts_status weightSets(const std::vector<std::shared_ptr<ModelImpl>> &r,
                       const std::vector<int> &devices, int source,
                       WeightCodec codec, const uint8_t *host, uint64_t bytes,
                       std::vector<std::shared_ptr<DeviceWeights>> &out) {
  out.assign(r.size(), nullptr);
  for (size_t e = 0; e < r.size(); ++e) {
    const bool upload = e == 0 || source == CUTS_WEIGHTS_HOST;
    if (cuts_status st = enter(*r[e]))
      return st;
    if (cuts_status st =
            newWeights(*r[e], upload ? host : nullptr, bytes, out[e])) {
      if (r.size() > 1)
        lastError =
            "entry " + std::to_string(e) + " of the device list: " + lastError;
      return st;
    }
  }
  if (!needsDistribution(source, r.size()))
    return CUTS_OK;
  std::vector<DeviceWeights *> w;
  for (const auto &x : out)
    w.push_back(x.get());
  return distributeWeights(r, w, devices, source, codec, bytes);
}

/// The memory plan and the tables sessions read; then the file's bytes go:
/// weights and CUBINs are on the device, and a server need not hold a
/// second copy in host memory.
void finishTables(ModelImpl &m) {
  for (PlanImpl &p : m.plans) {
    const Manifest &man = p.manifest();
    p.plan = planMemory(man);
    p.root.resize(man.tensors.size());
    for (size_t t = 0; t < man.tensors.size(); ++t)
      p.root[t] = rootTensor(man, int(t));
    p.recorded.assign(man.steps.size(), false);
    for (const Step &st : man.steps) {
      p.hasSide = p.hasSide || st.stream != 0;
      if (st.after >= 0)
        p.recorded[st.after] = true;
    }
    p.stateBase = m.stateBytes;
    m.stateBytes += (p.plan.stateBytes + 255) / 256 * 256;
    m.arenaBytes = std::max(m.arenaBytes, p.plan.arenaBytes);
    m.maxTensors = std::max(m.maxTensors, man.tensors.size());
    m.maxArgs = std::max(m.maxArgs, p.maxArgs);
    m.hasSide = m.hasSide || p.hasSide;
    m.batches.push_back(p.batch());
  }
  const Manifest &man = m.manifest();
  m.maxBatch = m.largest().batch();
  // The infos point into the manifest, which stays put from here on.
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<int> &ids = pass == 0 ? man.inputs : man.outputs;
    std::vector<cuts_tensor_info> &infos = pass == 0 ? m.inputs : m.outputs;
    for (int t : ids) {
      const Tensor &tensor = man.tensors[t];
      infos.push_back(
          cuts_tensor_info{tensor.name.c_str(), *apiDtype(tensor.dtype),
                           int(tensor.shape.size()), tensor.shape.data()});
    }
  }
  m.artifact.bytes.clear();
  m.artifact.bytes.shrink_to_fit();
  m.artifact.sections.clear();
}

cuts_status loadSectionKernels(
    ModelImpl &m, const std::string &section, const std::string &what,
    const std::vector<std::pair<CUfunction *, const char *>> &kernels) {
  uint64_t size = 0;
  const uint8_t *cubin = m.artifact.section(section, &size);
  if (!cubin)
    return fail(CUTS_ERROR_BAD_ARTIFACT, "no section " + section);
  std::vector<char> image(cubin, cubin + size);
  image.push_back(0); // a PTX image would need its terminator
  CUmodule mod = nullptr;
  if (CUresult r = m.d->cuModuleLoadData(&mod, image.data()))
    return cudaFail(r, "loading " + what + " (cuModuleLoadData)");
  m.modules.push_back(mod);
  for (const auto &[f, name] : kernels)
    if (CUresult r = m.d->cuModuleGetFunction(f, mod, name))
      return cudaFail(r, "finding " + what + "' " + name +
                             " (cuModuleGetFunction)");
  return CUTS_OK;
}

/// The model on one device: its plans, kernels and weights there (their
/// bytes from the host where `upload`, else sent on by loadModel).
struct ReplicaOptions {
  int64_t maxBatch = 0;
  bool upload = true; // else the weights are sent on from the first entry
  WeightCodec codec = WeightCodec::None;
  int entry = 0; // in a device list of `entries`
  size_t entries = 1;
  uint64_t weightBudget = 0; // > 0: streamed from `label`, a file
  Blob weightsInFile;        // `bytes` leaves them there (streamed)
  int stages = 0, stage = 0; // a pipeline stage of the plan
};

cuts_status loadReplica(std::vector<uint8_t> bytes, const std::string &label,
                        int ordinal, const ReplicaOptions &o,
                        std::shared_ptr<ModelImpl> &out) {
  std::string err;
  auto parsed = parseArtifact(std::move(bytes), err, o.weightsInFile);
  if (!parsed)
    return fail(CUTS_ERROR_BAD_ARTIFACT, label + ": " + err);
  if (o.codec != WeightCodec::None &&
      std::none_of(
          parsed->sections.begin(), parsed->sections.end(),
          [](const auto &x) { return x.first.rfind("codec.", 0) == 0; }))
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                label + " has no weight codecs: compile it with "
                        "--weight-codecs to send weights encoded "
                        "(weight_codec)");
  // A pipeline stage: its steps and I/O, its weights packed (read from the
  // file where the bytes leave them there) unless they stream from it.
  std::vector<uint8_t> stageWeights;
  const bool staged = o.stages > 1;
  const bool inFile = parsed->weightsInFile.size > 0;
  if (staged &&
      !takeStage(*parsed, o.stages, o.stage,
                 o.weightBudget > 0 || inFile ? nullptr : &stageWeights, err))
    return fail(CUTS_ERROR_INVALID_ARGUMENT, label + ": " + err);
  if (staged && inFile && o.weightBudget == 0 &&
      !packWeightsFromFile(parsed->manifest, label,
                           parsed->weightsInFile.offset, stageWeights, err))
    return fail(CUTS_ERROR_IO, err);
  // A tensor-parallel model's entry runs its rank, with its weights only.
  std::vector<uint8_t> rankWeights;
  const bool ranked = parsed->manifest.ranks > 1;
  if (ranked) {
    if (cuts_status st =
            takeRank(*parsed, o.entry, o.entries, label, rankWeights))
      return st;
    if (!o.upload)
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  label + " is tensor-parallel: each rank uploads its own "
                          "weights from the host (weight_source "
                          "CUTS_WEIGHTS_HOST)");
  }
  auto impl = std::make_shared<ModelImpl>();
  impl->artifact = std::move(*parsed);
  impl->pipelineStage = staged;
  ModelImpl &m = *impl;
  const Manifest &man = m.artifact.manifest;
  // Parsing accepted only dtypes the C API has (cuts_dtype).
  for (const std::vector<int> *list : {&man.inputs, &man.outputs})
    for (int t : *list)
      if (!apiDtype(man.tensors[t].dtype))
        return fail(CUTS_ERROR_BAD_ARTIFACT,
                    label + ": " + (list == &man.inputs ? "input" : "output") +
                        " \"" + man.tensors[t].name + "\" is " +
                        man.tensors[t].dtype + ", which the C API cannot bind");
  if (ordinal < 0)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "device ordinal " + std::to_string(ordinal) + " is negative");
  // The profiles up to the first that serves max_batch.
  if (o.maxBatch < 0 || (o.maxBatch > 0 && man.batch == 0))
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                o.maxBatch < 0
                    ? "max_batch " + std::to_string(o.maxBatch) + " is negative"
                    : label + " has no batch profiles: max_batch "
                              "must be 0");
  for (const Manifest *plan : m.artifact.plans()) {
    m.plans.emplace_back();
    m.plans.back().man = plan;
    if (o.maxBatch > 0 && plan->batch >= o.maxBatch)
      break;
  }
  if (o.maxBatch > m.plans.back().batch())
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "max_batch " + std::to_string(o.maxBatch) +
                    " is above the largest batch profile of " + label + " (" +
                    std::to_string(m.plans.back().batch()) + ")");
  // From openDevice on, the model's destructor releases what was acquired.
  if (cuts_status st = openDevice(m, ordinal, label))
    return st;
  std::map<std::pair<uint64_t, uint64_t>, CUmodule> moduleOf;
  for (PlanImpl &p : m.plans) {
    if (cuts_status st = loadModules(m, p, moduleOf))
      return st;
    if (cuts_status st = createLibraryCalls(m, p, label))
      return st;
  }
  if (o.codec != WeightCodec::None)
    if (cuts_status st = loadCodecs(m, label))
      return st;
  if (ranked)
    if (cuts_status st = loadReduceKernels(m, label))
      return st;
  const uint8_t *weights = m.artifact.section("weights", &m.weightBytes);
  if (ranked)
    weights = rankWeights.data(), m.weightBytes = rankWeights.size();
  if (staged)
    weights = stageWeights.data(), m.weightBytes = stageWeights.size();
  if (o.weightBudget > 0) { // streamed run by run: nothing resident
    m.weightBudget = o.weightBudget, m.weightsPath = label;
    if (cuts_status st = planStreaming(m, label))
      return st;
    weights = nullptr, m.weightBytes = 0;
  }
  if (cuts_status st =
          newWeights(m, o.upload ? weights : nullptr, m.weightBytes, m.weights))
    return st;
  finishTables(m);
  if (o.maxBatch > 0)
    m.maxBatch = o.maxBatch;
  out = std::move(impl);
  return CUTS_OK;
}

/// The model on `options`' device, or on each of its device list (a
/// device may repeat: each entry its own weights and sessions), with the
/// shares of a batch each entry takes. Nothing stays loaded on failure.
cuts_status loadModel(std::vector<uint8_t> bytes, const std::string &label,
                      const cuts_load_options *options, bool fromFile,
                      cuts_model **out, const Blob &weightsInFile = {}) {
  std::vector<int> devices = {options ? options->device : 0};
  if (options && options->num_devices != 0) {
    if (options->num_devices < 0 || !options->devices)
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "num_devices is negative, or devices is NULL");
    devices.assign(options->devices, options->devices + options->num_devices);
  }
  std::vector<double> shares(devices.size(), 1.0);
  if (options && options->device_shares)
    for (size_t i = 0; i < shares.size(); ++i) {
      shares[i] = options->device_shares[i];
      if (!(shares[i] > 0) || !std::isfinite(shares[i]))
        return fail(CUTS_ERROR_INVALID_ARGUMENT,
                    "device_shares[" + std::to_string(i) +
                        "] is not a positive number");
    }
  const int source = options ? options->weight_source : CUTS_WEIGHTS_HOST;
  if (source < CUTS_WEIGHTS_HOST || source > CUTS_WEIGHTS_NCCL)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "weight_source " + std::to_string(source) +
                    " is none of CUTS_WEIGHTS_HOST, _PEER and _NCCL");
  const int codecValue = options ? options->weight_codec : CUTS_CODEC_NONE;
  if (codecValue < CUTS_CODEC_NONE || codecValue > CUTS_CODEC_BF16)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "weight_codec " + std::to_string(codecValue) +
                    " is none of CUTS_CODEC_NONE, _3TO1 and _BF16");
  const auto codec = WeightCodec(codecValue);
  if (codec != WeightCodec::None && source == CUTS_WEIGHTS_HOST)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "weight_codec encodes the weights the first device sends "
                "the others: it needs weight_source CUTS_WEIGHTS_PEER or "
                "CUTS_WEIGHTS_NCCL");
  const uint64_t budget = options ? options->weight_budget : 0;
  if (options && (options->pipeline_stages < 0 ||
                  (options->pipeline_stages <= 1 && options->pipeline_stage)))
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "pipeline_stage " + std::to_string(options->pipeline_stage) +
                    " of pipeline_stages " +
                    std::to_string(options->pipeline_stages));
  if (options && options->pipeline_stages > 1 && devices.size() > 1)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "a pipeline stage loads on one device, not a device list");
  if (budget > 0 && (!fromFile || devices.size() > 1))
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                "weight_budget streams the weights from the artifact file "
                "on one device: load it with cuts_model_load and no device "
                "list");
  auto model = std::make_unique<cuts_model>();
  for (size_t i = 0; i < devices.size(); ++i) {
    std::shared_ptr<ModelImpl> replica;
    std::vector<uint8_t> copy =
        i + 1 < devices.size() ? bytes : std::move(bytes);
    ReplicaOptions o;
    o.maxBatch = options ? options->max_batch : 0;
    o.upload = i == 0 || source == CUTS_WEIGHTS_HOST;
    o.codec = codec, o.entry = int(i), o.entries = devices.size();
    o.weightBudget = budget, o.weightsInFile = weightsInFile;
    o.stages = options ? options->pipeline_stages : 0;
    o.stage = options ? options->pipeline_stage : 0;
    if (cuts_status st =
            loadReplica(std::move(copy), label, devices[i], o, replica)) {
      if (devices.size() > 1)
        lastError = "device " + std::to_string(devices[i]) + " (entry " +
                    std::to_string(i) + " of the device list): " + lastError;
      return st; // the replicas loaded so far go with `model`
    }
    model->replicas.push_back(std::move(replica));
  }
  {
    std::vector<CUcontext> contexts;
    for (const auto &r : model->replicas)
      contexts.push_back(r->ctx);
    enablePeerAccess(model->replicas[0]->d, contexts);
  }
  if (needsDistribution(source, devices.size())) {
    std::vector<DeviceWeights *> w;
    for (const auto &r : model->replicas)
      w.push_back(r->weights.get());
    if (cuts_status st =
            distributeWeights(model->replicas, w, devices, source, codec,
                              model->replicas[0]->weightBytes))
      return st;
  }
  auto publishing = std::make_shared<std::shared_mutex>();
  for (const auto &r : model->replicas)
    r->publishing = publishing;
  model->devices = devices;
  model->weightSource = source;
  model->weightCodec = codec;
  model->impl = model->replicas[0];
  model->shares = std::move(shares);
  model->masterGpu = options && options->master_gpu;
  if (tensorParallel(*model->impl)) {
    if (model->masterGpu || (options && options->device_shares))
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  label + " is tensor-parallel: its ranks split the "
                          "weights, not the batch (device_shares and "
                          "master_gpu do not apply)");
    *out = model.release();
    return CUTS_OK;
  }
  if (devices.size() > 1 && model->impl->manifest().batch == 0)
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                label + ": a model on several devices splits its batch, which "
                        "needs batch profiles (cuts compile --batch)");
  if (devices.size() > 1 && !model->impl->manifest().mixesRows.empty())
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                label + ": a model on several devices splits its batch, but " +
                    model->impl->manifest().mixesRows +
                    ", so its slices would not give its results");
  *out = model.release();
  return CUTS_OK;
}

//===- Running ------------------------------------------------------------===//

/// The batch the inputs carry and their and the outputs' data, checked
/// against the plan that serves that batch; failing with
/// CUTS_ERROR_INVALID_ARGUMENT.
cuts_status bindAll(const ModelImpl &m, const cuts_binding *inputs,
                    int numInputs, const cuts_binding *outputs, int numOutputs,
                    int64_t &batch, std::vector<void *> &in,
                    std::vector<void *> &out) {
  std::string err;
  auto b = bindingBatch(m.manifest(), inputs, numInputs, m.maxBatch, err);
  if (!b)
    return fail(CUTS_ERROR_INVALID_ARGUMENT, err);
  batch = *b;
  const Manifest &man = m.plans[choosePlan(m.batches, batch)].manifest();
  if (!runsBatch(man, batch, err) ||
      !checkBindings(man, inputs, numInputs, true, in, err, batch) ||
      !checkBindings(man, outputs, numOutputs, false, out, err, batch))
    return fail(CUTS_ERROR_INVALID_ARGUMENT, err);
  return CUTS_OK;
}

std::vector<CUdeviceptr> devicePointers(const std::vector<void *> &data) {
  std::vector<CUdeviceptr> p;
  for (void *x : data)
    p.push_back(CUdeviceptr(reinterpret_cast<uintptr_t>(x)));
  return p;
}

/// An output that overlaps another binding would be clobbered (or clobber
/// an input) while the plan still reads it.
cuts_status checkNoAliasing(const Manifest &man, int64_t batch,
                            const std::vector<CUdeviceptr> &in,
                            const std::vector<CUdeviceptr> &out) {
  struct Range {
    CUdeviceptr begin, end;
    const std::string *name;
  };
  std::vector<Range> all;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor &t = man.tensors[man.inputs[i]];
    all.push_back({in[i], in[i] + bytesAtBatch(t, batch), &t.name});
  }
  size_t firstOut = all.size();
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor &t = man.tensors[man.outputs[i]];
    all.push_back({out[i], out[i] + bytesAtBatch(t, batch), &t.name});
  }
  for (size_t o = firstOut; o < all.size(); ++o)
    for (size_t i = 0; i < all.size(); ++i)
      if (i != o && all[i].begin < all[i].end && all[o].begin < all[o].end &&
          all[i].begin < all[o].end && all[o].begin < all[i].end)
        return fail(CUTS_ERROR_INVALID_ARGUMENT,
                    "output \"" + *all[o].name + "\" overlaps " +
                        (i < firstOut ? "input" : "output") + " \"" +
                        *all[i].name + "\"");
  return CUTS_OK;
}

/// Every tensor's device address for these bindings.
void resolve(cuts_session &s, const std::vector<CUdeviceptr> &in,
             const std::vector<CUdeviceptr> &out) {
  const PlanImpl &pl = *s.plan;
  const Manifest &man = pl.manifest();
  for (size_t t = 0; t < man.tensors.size(); ++t) {
    const Tensor &r = man.tensors[pl.root[t]];
    CUdeviceptr p = 0;
    switch (r.kind) {
    case TensorKind::Input:
      p = in[r.index];
      break;
    case TensorKind::Output:
      p = out[r.index];
      break;
    case TensorKind::Weight:
      p = s.weights->ptr + r.weightOffset;
      break;
    case TensorKind::Intermediate:
      p = pl.plan.offset[pl.root[t]] >= 0
              ? s.arena + CUdeviceptr(pl.plan.offset[pl.root[t]])
              : 0;
      break;
    case TensorKind::State:
      p = s.state + CUdeviceptr(pl.stateBase) +
          CUdeviceptr(pl.plan.stateOffset[pl.root[t]]);
      break;
    case TensorKind::View: // roots are never views
      break;
    }
    s.ptr[t] = p;
  }
}

/// The model's current weights for the session's runs from here on (a hot
/// swap may have replaced them): its runs on the old set finished first,
/// and the graphs that captured it dropped.
cuts_status adoptWeights(cuts_session &s) {
  std::shared_ptr<DeviceWeights> now =
      s.target ? std::move(s.target) : std::atomic_load(&s.model->weights);
  s.target.reset();
  if (now == s.weights)
    return CUTS_OK;
  const Driver *d = s.model->d;
  for (CUstream st : {s.stream, s.side})
    if (st)
      if (CUresult r = d->cuStreamSynchronize(st))
        return cudaFail(r, "finishing the runs on the old weights "
                           "(cuStreamSynchronize)");
  for (std::vector<cuts_session::Graph> &plan : s.graphs) {
    for (const cuts_session::Graph &g : plan)
      d->cuGraphExecDestroy(g.exec);
    plan.clear();
  }
  s.weights = std::move(now);
  return CUTS_OK;
}

/// The current plan's index: its slot among the session's per-plan
/// events and graphs.
size_t planIndex(const cuts_session &s) {
  return size_t(s.plan - s.model->plans.data());
}

/// The graph workspace, allocated at the first capture of a run (sessions
/// that never capture one, tensor-parallel replicas and streamed weights,
/// never hold it).
cuts_status ensureGraphWorkspace(cuts_session &s) {
  if (s.graphWorkspace || s.graphWorkspaceBytes == 0)
    return CUTS_OK;
  if (CUresult r =
          s.model->d->cuMemAlloc(&s.graphWorkspace, s.graphWorkspaceBytes)) {
    s.graphWorkspace = 0;
    return cudaFail(r, "allocating the " +
                           std::to_string(s.graphWorkspaceBytes) +
                           "-byte graph workspace (cuMemAlloc)");
  }
  return CUTS_OK;
}

/// The workspace library step i uses: its own region while a graph is
/// captured (where the session has them), else the shared one.
std::pair<CUdeviceptr, uint64_t> workspaceOf(const cuts_session &s, size_t i) {
  if (s.capturing && s.ownRegions) {
    const auto [offset, bytes] = s.stepWorkspace[planIndex(s)][i];
    return {bytes ? s.graphWorkspace + offset : 0, bytes};
  }
  return {s.workspace, s.workspaceBytes};
}

/// Enqueues step `i`'s work on `stream`, as a programmatic dependent of
/// the kernel before it where `pdl` (and the device launches them).
cuts_status enqueueStep(cuts_session &s, size_t i, CUstream stream, bool pdl) {
  const ModelImpl &m = *s.model;
  const PlanImpl &p = *s.plan;
  const Manifest &man = p.manifest();
  const Step &step = man.steps[i];
  const int ki = step.kernelRun(s.capturing);
  if (step.kernel < 0) {
    const Tensor &to = man.tensors[step.to];
    if (CUresult r = m.d->cuMemcpyDtoDAsync(s.ptr[step.to], s.ptr[step.from],
                                            to.bytes(), stream))
      return cudaFail(r, "step " + std::to_string(i) + ": copying \"" +
                             man.tensors[step.from].name + "\" to \"" +
                             to.name + "\" (cuMemcpyDtoDAsync)");
    return CUTS_OK;
  }
  const KernelLaunch &k = man.kernels[ki];
  if (const CublasLtGemm *gemm = p.gemms[ki].get()) {
    // A, B, [bias], [Z], Y (checked against the spec when parsed).
    const GemmSpec &spec = gemm->spec();
    size_t a = 0;
    CUdeviceptr A = s.ptr[k.args[a++]], B = s.ptr[k.args[a++]];
    CUdeviceptr bias = spec.bias ? s.ptr[k.args[a++]] : 0;
    CUdeviceptr z = spec.residual ? s.ptr[k.args[a++]] : 0;
    CUdeviceptr y = s.ptr[k.args[a]];
    std::string err;
    const auto [ws, wsBytes] = workspaceOf(s, i);
    if (!gemm->run(*m.lt, stream, A, B, bias, z, y, ws, wsBytes, err))
      return fail(CUTS_ERROR_CUDA, "step " + std::to_string(i) + ": kernel \"" +
                                       k.name + "\" (" + k.library +
                                       "): " + err);
    return CUTS_OK;
  }
  if (const CudnnConv *conv = p.convs[ki].get()) {
    // x, w, [bias], [z], y (checked against the spec when parsed).
    const ConvSpec &spec = conv->spec();
    size_t a = 0;
    CUdeviceptr x = s.ptr[k.args[a++]], w = s.ptr[k.args[a++]];
    CUdeviceptr bias = spec.bias ? s.ptr[k.args[a++]] : 0;
    CUdeviceptr z = spec.residual ? s.ptr[k.args[a++]] : 0;
    CUdeviceptr y = s.ptr[k.args[a]];
    std::string err;
    const auto [ws, wsBytes] = workspaceOf(s, i);
    if (!conv->run(*s.cudnn, stream, x, w, bias, z, y, ws, wsBytes, err))
      return fail(CUTS_ERROR_CUDA, "step " + std::to_string(i) + ": kernel \"" +
                                       k.name + "\" (" + k.library +
                                       "): " + err);
    return CUTS_OK;
  }
  // The driver copies the parameters at launch, so the scratch is reusable.
  for (size_t a = 0; a < k.args.size(); ++a) {
    s.argValues[a] = s.ptr[k.args[a]];
    s.argPointers[a] = &s.argValues[a];
  }
  void **args = k.args.empty() ? nullptr : s.argPointers.data();
  CUresult r = CUDA_SUCCESS;
  if (pdl && m.pdl) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value = 1;
    CUlaunchConfig c{unsigned(k.grid),
                     1,
                     1,
                     unsigned(k.block),
                     1,
                     1,
                     unsigned(k.sharedBytes),
                     stream,
                     &attr,
                     1};
    r = m.d->cuLaunchKernelEx(&c, p.functions[ki], args, nullptr);
  } else {
    r = m.d->cuLaunchKernel(p.functions[ki], unsigned(k.grid), 1, 1,
                            unsigned(k.block), 1, 1, unsigned(k.sharedBytes),
                            stream, args, nullptr);
  }
  if (r)
    return cudaFail(r, "step " + std::to_string(i) + ": launching kernel \"" +
                           k.name + "\" (cuLaunchKernel)");
  return CUTS_OK;
}

/// Enqueues step `i` on its stream (pointers resolved): after the step it
/// waits for, and recording its event where a later step waits for it.
cuts_status runStep(cuts_session &s, size_t i, bool pdl) {
  const ModelImpl &m = *s.model;
  const PlanImpl &p = *s.plan;
  const std::vector<CUevent> &events = s.stepEvent[planIndex(s)];
  const std::vector<Step> &steps = p.manifest().steps;
  const Step &step = steps[i];
  // A consumer over PDL runs right after its producer on the session's
  // stream, as its programmatic dependent (or, after host copies, plainly
  // after it); its wait kernel, the step before, is then skipped.
  if (i + 1 < steps.size() && steps[i + 1].overPdl) {
    s.skippedHold = pdl && m.pdl ? i : SIZE_MAX;
    if (s.skippedHold == i)
      return CUTS_OK;
  }
  const bool overPdl = step.overPdl && i > 0 && s.skippedHold == i - 1;
  CUstream stream = step.stream && !overPdl ? s.side : s.stream;
  if (step.after >= 0)
    if (CUresult r = m.d->cuStreamWaitEvent(stream, events[step.after], 0))
      return cudaFail(r, "step " + std::to_string(i) + ": waiting for step " +
                             std::to_string(step.after) +
                             " (cuStreamWaitEvent)");
  if (cuts_status st = enqueueStep(s, i, stream, pdl && (step.pdl || overPdl)))
    return st;
  if (p.recorded[i])
    if (CUresult r = m.d->cuEventRecord(events[i], stream))
      return cudaFail(r, "step " + std::to_string(i) + ": cuEventRecord");
  return CUTS_OK;
}

cuts_status enqueuePlan(cuts_session &s, const std::vector<CUdeviceptr> &in,
                        const std::vector<CUdeviceptr> &out) {
  if (s.model->weightBudget > 0)
    return enqueueStreamed(s, in, out);
  resolve(s, in, out);
  for (size_t i = 0; i < s.plan->manifest().steps.size(); ++i)
    if (cuts_status st = runStep(s, i))
      return st;
  return CUTS_OK;
}

/// Whether step i counts in state tensors (cuSync's epoch and semaphores):
/// it must run exactly once a run, or a later run's waits would pass early.
bool countsState(const PlanImpl &p, size_t i) {
  const Manifest &man = p.manifest();
  const Step &step = man.steps[i];
  if (step.kernel < 0)
    return false;
  for (int t : man.kernels[step.kernel].args)
    if (man.tensors[p.root[t]].kind == TensorKind::State)
      return true;
  return false;
}

/// Captures what `enqueue` puts on the session's stream as an instantiated
/// graph in `exec`.
/// `ownRegions`: the capture is of a plan's run, each step once, so its
/// library steps may use their own workspace regions (a profile's graph
/// repeats a step and must not).
template <typename Enqueue>
cuts_status capture(cuts_session &s, Enqueue enqueue, CUgraphExec &exec,
                    bool ownRegions = false) {
  const Driver *d = s.model->d;
  if (ownRegions)
    if (cuts_status st = ensureGraphWorkspace(s))
      return st;
  ownRegions = ownRegions && s.graphWorkspace;
  // Thread-local mode: other threads' sessions keep running meanwhile.
  if (CUresult r = d->cuStreamBeginCapture(s.stream,
                                           CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
    return cudaFail(r, "starting a CUDA graph capture (cuStreamBeginCapture)");
  s.capturing = true, s.ownRegions = ownRegions;
  cuts_status st = enqueue();
  s.capturing = false, s.ownRegions = false;
  if (st != CUTS_OK)
    lastError += " (while capturing the CUDA graph)";
  CUgraph g = nullptr;
  // Always end the capture, or the stream stays unusable.
  CUresult r = d->cuStreamEndCapture(s.stream, &g);
  if (st != CUTS_OK || r != CUDA_SUCCESS) {
    if (g)
      d->cuGraphDestroy(g);
    return st != CUTS_OK
               ? st
               : cudaFail(r, "capturing the CUDA graph (cuStreamEndCapture)");
  }
  // Library memsets off the chain (GraphMemsets.h): those of a step's own
  // region to the start, others beside the generated kernels before them
  // (which never touch a workspace).
  std::set<CUfunction> ours;
  for (CUfunction f : s.plan->functions)
    if (f)
      ours.insert(f);
  std::string moveError;
  if ((ownRegions &&
       hoistWorkspaceMemsets(*d, g, s.graphWorkspace, s.graphWorkspaceBytes,
                             moveError) < 0) ||
      moveWorkspaceMemsets(*d, g, s.workspace, s.workspaceBytes, ours,
                           moveError) < 0) {
    d->cuGraphDestroy(g);
    return fail(CUTS_ERROR_CUDA, moveError);
  }
  r = d->cuGraphInstantiateWithFlags(&exec, g, 0);
  d->cuGraphDestroy(g);
  if (r != CUDA_SUCCESS) {
    exec = nullptr;
    return cudaFail(r, "instantiating the CUDA graph "
                       "(cuGraphInstantiateWithFlags)");
  }
  return CUTS_OK;
}

/// What `enqueue` puts on the stream (the current plan's run), replayed
/// from the plan's graph where the session uses graphs: captured anew when
/// `key` (the bindings, and what else the work depends on) changes.
template <typename Enqueue>
cuts_status runGraphed(cuts_session &s, std::vector<CUdeviceptr> key,
                       Enqueue enqueue) {
  constexpr size_t kMaxGraphs = 16; // a server's batches over one buffer set
  const Driver *d = s.model->d;
  if (cuts_status st = adoptWeights(s))
    return st;
  // Streamed weights are read by the host between a run's kernels.
  if (!s.useGraph || s.plan->manifest().steps.empty() ||
      s.model->weightBudget > 0)
    return enqueue();
  std::vector<cuts_session::Graph> &plan = s.graphs[planIndex(s)];
  auto it =
      std::find_if(plan.begin(), plan.end(),
                   [&](const cuts_session::Graph &g) { return g.key == key; });
  if (it == plan.end()) {
    if (plan.size() == kMaxGraphs) {
      auto lru = std::min_element(
          plan.begin(), plan.end(),
          [](const cuts_session::Graph &a, const cuts_session::Graph &b) {
            return a.used < b.used;
          });
      d->cuGraphExecDestroy(lru->exec);
      plan.erase(lru);
    }
    CUgraphExec exec = nullptr;
    if (cuts_status st = capture(s, enqueue, exec, /*ownRegions=*/true))
      return st;
    plan.push_back({std::move(key), exec, 0});
    it = plan.end() - 1;
  }
  it->used = ++s.runs;
  if (CUresult r = d->cuGraphLaunch(it->exec, s.stream))
    return cudaFail(r, "launching the CUDA graph (cuGraphLaunch)");
  return CUTS_OK;
}

/// One run of the current plan with device bindings, replaying or capturing
/// a graph if the session uses them.
cuts_status runDevice(cuts_session &s, const std::vector<CUdeviceptr> &in,
                      const std::vector<CUdeviceptr> &out) {
  std::vector<CUdeviceptr> key = in;
  key.insert(key.end(), out.begin(), out.end());
  return runGraphed(s, std::move(key), [&] { return enqueuePlan(s, in, out); });
}

/// Device buffers for the model's inputs and outputs at `batch` (0: the
/// largest plan's).
cuts_status allocIo(const ModelImpl &m, int64_t batch,
                    std::vector<CUdeviceptr> &in,
                    std::vector<CUdeviceptr> &out) {
  const Manifest &man = m.manifest();
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<int> &ids = pass == 0 ? man.inputs : man.outputs;
    std::vector<CUdeviceptr> &bufs = pass == 0 ? in : out;
    bufs.assign(ids.size(), 0);
    for (size_t i = 0; i < ids.size(); ++i) {
      const Tensor &t = man.tensors[ids[i]];
      const uint64_t bytes = bytesAtBatch(t, batch);
      if (bytes == 0)
        continue;
      if (CUresult r = m.d->cuMemAlloc(&bufs[i], bytes)) {
        bufs[i] = 0; // the destructor frees the others
        return cudaFail(r, "allocating " + std::to_string(bytes) +
                               " bytes for \"" + t.name + "\" (cuMemAlloc)");
      }
    }
  }
  return CUTS_OK;
}

/// The session's own input and output buffers (for host runs, padded runs
/// and timing), as large as the largest plan's.
cuts_status ensureBuffers(cuts_session &s) {
  if (s.haveBuffers)
    return CUTS_OK;
  if (cuts_status st = allocIo(*s.model, 0, s.bufIn, s.bufOut))
    return st;
  s.haveBuffers = true;
  return CUTS_OK;
}

/// Buffers at `batch`, which no plan has: benchmark's inputs and outputs
/// (its runs pad and slice as a caller's would), the master-GPU baseline's
/// slices.
cuts_status ensureUserBuffers(cuts_session &s, int64_t batch) {
  if (s.userBatch == batch)
    return CUTS_OK;
  for (std::vector<CUdeviceptr> *bufs : {&s.userIn, &s.userOut}) {
    for (CUdeviceptr p : *bufs)
      if (p)
        s.model->d->cuMemFree(p);
    bufs->clear();
  }
  s.userBatch = 0;
  if (cuts_status st = allocIo(*s.model, batch, s.userIn, s.userOut))
    return st;
  s.userBatch = batch;
  return CUTS_OK;
}

/// Fills input buffers `bufs` (the largest plan's inputs at `batch`) with
/// fillElement's values (finite, harmless values for any kernel being
/// timed; integer inputs are often indices into tables, so 0).
cuts_status fillInputs(cuts_session &s, const std::vector<CUdeviceptr> &bufs,
                       int64_t batch) {
  const ModelImpl &m = *s.model;
  const Manifest &man = m.manifest();
  s.fill.resize(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    const Tensor &t = man.tensors[man.inputs[i]];
    uint64_t bytes = bytesAtBatch(t, batch);
    if (bytes == 0)
      continue;
    std::vector<uint8_t> one = fillElement(t.dtype);
    if (one.size() == 4) {
      uint32_t bits = 0;
      std::memcpy(&bits, one.data(), 4);
      if (CUresult r =
              m.d->cuMemsetD32Async(bufs[i], bits, bytes / 4, s.stream))
        return cudaFail(r,
                        "filling input \"" + t.name + "\" (cuMemsetD32Async)");
      continue;
    }
    // Other sizes from a host copy the session keeps (the copy is
    // asynchronous; the source must outlive it).
    std::vector<uint8_t> &host = s.fill[i];
    if (host.size() < bytes) {
      host.resize(bytes);
      for (uint64_t at = 0; at + one.size() <= bytes; at += one.size())
        std::memcpy(host.data() + at, one.data(), one.size());
    }
    if (CUresult r =
            m.d->cuMemcpyHtoDAsync(bufs[i], host.data(), bytes, s.stream))
      return cudaFail(r,
                      "filling input \"" + t.name + "\" (cuMemcpyHtoDAsync)");
  }
  return CUTS_OK;
}

/// Copies `bytes` between the caller's device memory and a session buffer
/// on the session's stream.
cuts_status copyIo(cuts_session &s, bool toDevice, CUdeviceptr buf, void *user,
                   uint64_t bytes, const std::string &name) {
  const Driver *d = s.model->d;
  CUdeviceptr u = CUdeviceptr(reinterpret_cast<uintptr_t>(user));
  CUresult r = toDevice ? d->cuMemcpyDtoDAsync(buf, u, bytes, s.stream)
                        : d->cuMemcpyDtoDAsync(u, buf, bytes, s.stream);
  if (r)
    return cudaFail(r, std::string("copying ") +
                           (toDevice ? "input \"" : "output \"") + name +
                           "\" (cuMemcpyDtoDAsync)");
  return CUTS_OK;
}

/// One run at `batch` (0: the plan has none) from the caller's device
/// inputs to its device outputs, both at that batch: the plan that serves
/// it, directly where its batch is the caller's, else through the
/// session's buffers (the inputs zero-padded to the plan's batch, the
/// outputs sliced), the copies in the run's graph.
cuts_status runAt(cuts_session &s, int64_t batch, const std::vector<void *> &in,
                  const std::vector<void *> &out) {
  const ModelImpl &m = *s.model;
  if (tensorParallel(m)) // every rank, from the first's bindings
    return runTensorParallel(s, devicePointers(in), devicePointers(out));
  s.plan = &m.plans[choosePlan(m.batches, batch)];
  s.batch = batch;
  s.profileBatch = s.plan->batch();
  const Manifest &man = s.plan->manifest();
  if (!(batch > 0 && batch < s.plan->batch()))
    return runDevice(s, devicePointers(in), devicePointers(out));
  if (cuts_status st = ensureBuffers(s))
    return st;
  // An unbatched binding needs no copy.
  auto staged = [&](const Tensor &t) {
    return t.batchAxis >= 0 && t.bytes() > 0;
  };
  auto address = [](void *p) { return CUdeviceptr(uintptr_t(p)); };
  std::vector<CUdeviceptr> din(in.size()), dout(out.size());
  for (size_t i = 0; i < in.size(); ++i)
    din[i] = staged(man.tensors[man.inputs[i]]) ? s.bufIn[i] : address(in[i]);
  for (size_t i = 0; i < out.size(); ++i)
    dout[i] =
        staged(man.tensors[man.outputs[i]]) ? s.bufOut[i] : address(out[i]);
  std::vector<CUdeviceptr> key = devicePointers(in);
  for (void *p : out)
    key.push_back(address(p));
  key.push_back(CUdeviceptr(batch));
  return runGraphed(s, std::move(key), [&]() -> cuts_status {
    for (size_t i = 0; i < in.size(); ++i) {
      const Tensor &t = man.tensors[man.inputs[i]];
      if (!staged(t))
        continue;
      const uint64_t bytes = bytesAtBatch(t, batch);
      if (cuts_status st = copyIo(s, true, din[i], in[i], bytes, t.name))
        return st;
      if (CUresult r = m.d->cuMemsetD8Async(din[i] + bytes, 0,
                                            t.bytes() - bytes, s.stream))
        return cudaFail(r,
                        "padding input \"" + t.name + "\" (cuMemsetD8Async)");
    }
    if (cuts_status st = enqueuePlan(s, din, dout))
      return st;
    for (size_t i = 0; i < out.size(); ++i) {
      const Tensor &t = man.tensors[man.outputs[i]];
      if (staged(t))
        if (cuts_status st = copyIo(s, false, dout[i], out[i],
                                    bytesAtBatch(t, batch), t.name))
          return st;
    }
    return CUTS_OK;
  });
}

/// A graph workspace past this is not worth its memory: the library calls
/// share one workspace and their memsets stay near them (moveWorkspaceMemsets).
constexpr uint64_t kMaxGraphWorkspace = uint64_t(256) << 20;

/// Each step's region of the graph workspace (offset, bytes), a library
/// step's `need` of its kernel 256-byte aligned; the total in `bytes`.
std::vector<std::pair<uint64_t, uint64_t>>
stepRegions(const Manifest &man, const std::vector<uint64_t> &need,
            uint64_t &bytes) {
  std::vector<std::pair<uint64_t, uint64_t>> out(man.steps.size(), {0, 0});
  bytes = 0;
  for (size_t i = 0; i < man.steps.size(); ++i) {
    const int k = man.steps[i].kernelRun(true);
    if (k < 0 || need[size_t(k)] == 0)
      continue;
    out[i] = {bytes, need[size_t(k)]};
    bytes += (need[size_t(k)] + 255) / 256 * 256;
  }
  return out;
}

/// The bytes of workspace each library kernel of plan p needs (the tuner's
/// figure or the library's answer now, whichever is more; 0 for others).
std::optional<std::vector<uint64_t>> workspaceNeeds(cuts_session &s,
                                                    const PlanImpl &p) {
  const Manifest &man = p.manifest();
  std::vector<uint64_t> need(man.kernels.size(), 0);
  std::string err;
  for (size_t k = 0; k < man.kernels.size(); ++k) {
    if (p.gemms[k])
      need[k] = std::max(uint64_t(p.gemms[k]->workspaceBytes()),
                         man.kernels[k].workspaceBytes);
    if (!p.convs[k])
      continue;
    auto bytes = p.convs[k]->workspaceBytes(*s.cudnn, err);
    if (!bytes) {
      fail(CUTS_ERROR_CUDA, "kernel " + std::to_string(k) + " (\"" +
                                man.kernels[k].name + "\"): " + err);
      return std::nullopt;
    }
    need[k] = std::max(uint64_t(*bytes), man.kernels[k].workspaceBytes);
  }
  return need;
}

/// The session's cuDNN handle on its stream, one workspace as large as the
/// largest any library kernel needs, and where the session captures graphs
/// a region for each library step (Session.h).
cuts_status createLibraryState(cuts_session &s) {
  const ModelImpl &m = *s.model;
  std::string err;
  if (m.hasConv) {
    s.cudnn = CudnnHandle::create(err);
    if (!s.cudnn || !s.cudnn->setStream(s.stream, err))
      return fail(CUTS_ERROR_CUDA,
                  "creating the session's cuDNN handle: " + err);
  }
  uint64_t bytes = 0, regions = 0;
  for (const PlanImpl &p : m.plans) {
    auto need = workspaceNeeds(s, p);
    if (!need)
      return CUTS_ERROR_CUDA;
    for (uint64_t b : *need)
      bytes = std::max(bytes, b);
    uint64_t planBytes = 0;
    s.stepWorkspace.push_back(stepRegions(p.manifest(), *need, planBytes));
    regions = std::max(regions, planBytes);
  }
  // Allocated at the first capture that uses it (ensureGraphWorkspace).
  if (s.useGraph && regions <= kMaxGraphWorkspace)
    s.graphWorkspaceBytes = regions;
  if (bytes > 0) {
    if (CUresult r = m.d->cuMemAlloc(&s.workspace, bytes)) {
      s.workspace = 0;
      return cudaFail(r, "allocating the " + std::to_string(bytes) +
                             "-byte library workspace (cuMemAlloc)");
    }
    s.workspaceBytes = bytes;
  }
  return CUTS_OK;
}

/// cuSync's per-session state: the semaphores and epoch zeroed (runs count
/// from there), the side stream at the lowest priority (a producer's
/// pending tiles go before its consumer's), an event per awaited step.
cuts_status createSyncState(cuts_session &s) {
  const ModelImpl &m = *s.model;
  const Driver *d = m.d;
  if (m.stateBytes > 0) {
    if (CUresult r = d->cuMemAlloc(&s.state, m.stateBytes)) {
      s.state = 0;
      return cudaFail(r, "allocating the session's synchronisation state "
                         "(cuMemAlloc)");
    }
    if (CUresult r = d->cuMemsetD8(s.state, 0, m.stateBytes))
      return cudaFail(r, "zeroing the session's synchronisation state "
                         "(cuMemsetD8)");
  }
  if (!m.hasSide)
    return CUTS_OK;
  int least = 0, greatest = 0;
  if (CUresult r = d->cuCtxGetStreamPriorityRange(&least, &greatest))
    return cudaFail(r, "cuCtxGetStreamPriorityRange");
  if (CUresult r = d->cuStreamCreateWithPriority(
          &s.side, CU_STREAM_NON_BLOCKING, least)) {
    s.side = nullptr;
    return cudaFail(r, "creating the session's side stream "
                       "(cuStreamCreateWithPriority)");
  }
  for (size_t p = 0; p < m.plans.size(); ++p) {
    const std::vector<bool> &recorded = m.plans[p].recorded;
    std::vector<CUevent> &events = s.stepEvent[p];
    events.assign(recorded.size(), nullptr);
    for (size_t i = 0; i < recorded.size(); ++i)
      if (recorded[i])
        if (CUresult r =
                d->cuEventCreate(&events[i], CU_EVENT_DISABLE_TIMING)) {
          events[i] = nullptr;
          return cudaFail(r, "cuEventCreate");
        }
  }
  return CUTS_OK;
}

cuts_status checkSession(const cuts_session *s) {
  if (!s || !s->model)
    return fail(CUTS_ERROR_INVALID_ARGUMENT, "session is NULL");
  return CUTS_OK;
}

bool checkModel(const cuts_model *m) {
  if (m && m->impl)
    return true;
  lastError = "model is NULL";
  return false;
}

} // namespace cuts::rt

//===- The C API ----------------------------------------------------------===//

int cuts_api_version(void) { return CUTS_API_VERSION; }

const char *cuts_last_error(void) { return lastError.c_str(); }

const char *cuts_status_name(cuts_status s) {
  switch (s) {
  case CUTS_OK:
    return "CUTS_OK";
  case CUTS_ERROR_INVALID_ARGUMENT:
    return "CUTS_ERROR_INVALID_ARGUMENT";
  case CUTS_ERROR_BAD_ARTIFACT:
    return "CUTS_ERROR_BAD_ARTIFACT";
  case CUTS_ERROR_NO_DEVICE:
    return "CUTS_ERROR_NO_DEVICE";
  case CUTS_ERROR_NO_CUBIN:
    return "CUTS_ERROR_NO_CUBIN";
  case CUTS_ERROR_OUT_OF_MEMORY:
    return "CUTS_ERROR_OUT_OF_MEMORY";
  case CUTS_ERROR_CUDA:
    return "CUTS_ERROR_CUDA";
  case CUTS_ERROR_IO:
    return "CUTS_ERROR_IO";
  }
  return "CUTS_ERROR_UNKNOWN";
}

cuts_status cuts_model_load(const char *path, const cuts_load_options *options,
                            cuts_model **model) {
  return guarded([&] {
    if (!model)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "model (the result) is NULL");
    *model = nullptr;
    if (!path)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "path is NULL");
    std::vector<uint8_t> bytes;
    std::string err;
    Blob weights;
    bool corrupt = false;
    // Streamed weights, or a pipeline stage's share of them, are read from
    // the file where needed: memory holds the rest.
    const bool streamed =
        options && (options->weight_budget > 0 || options->pipeline_stages > 1);
    if (!(streamed ? readImageWithoutWeights(path, bytes, weights, corrupt, err)
                   : readFileBytes(path, bytes, err)))
      return fail(corrupt ? CUTS_ERROR_BAD_ARTIFACT : CUTS_ERROR_IO, err);
    return loadModel(std::move(bytes), path, options, true, model, weights);
  });
}

namespace {

/// The weight tensors of a plan: name, dtype, shape and offset each.
std::vector<std::string> weightLayout(const Manifest &m) {
  std::vector<std::string> w;
  for (const Tensor &t : m.tensors)
    if (t.kind == TensorKind::Weight) {
      std::string shape;
      for (int64_t d : t.shape)
        shape += (shape.empty() ? "" : ",") + std::to_string(d);
      w.push_back("\"" + t.name + "\" " + t.dtype + "[" + shape + "] at " +
                  std::to_string(t.weightOffset));
    }
  return w;
}

/// Why artifact `a`'s weights cannot replace the model's (the kernels
/// loaded read them where the model's lie): a different size, or a weight
/// tensor of a loaded plan that differs; empty where they can.
std::string weightsDiffer(const ModelImpl &m, const Artifact &a) {
  uint64_t size = 0;
  a.section("weights", &size);
  if (size != m.weightBytes)
    return "its weights are " + std::to_string(size) + " bytes, the model's " +
           std::to_string(m.weightBytes);
  const std::vector<const Manifest *> plans = a.plans();
  if (plans.size() < m.plans.size())
    return "it has fewer batch profiles";
  for (size_t p = 0; p < m.plans.size(); ++p) {
    std::vector<std::string> mine = weightLayout(m.plans[p].manifest()),
                             theirs = weightLayout(*plans[p]);
    if (m.plans[p].batch() != plans[p]->batch)
      return "its batch profiles differ";
    for (size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i)
      if (i >= mine.size() || i >= theirs.size() || mine[i] != theirs[i])
        return "weight " + (i < theirs.size() ? theirs[i] : mine[i]) +
               " is not the model's";
  }
  return "";
}

} // namespace

cuts_status cuts_model_swap_weights(cuts_model *model, const char *path) {
  return guarded([&] {
    if (!checkModel(model))
      return CUTS_ERROR_INVALID_ARGUMENT;
    if (!path)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "path is NULL");
    if (tensorParallel(*model->impl) || model->impl->weightBudget > 0 ||
        model->impl->pipelineStage)
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "a tensor-parallel model's weights, a pipeline stage's or "
                  "streamed ones are not all on the device to swap; load "
                  "the new artifact");
    std::lock_guard<std::mutex> lock(model->swapping);
    std::vector<uint8_t> bytes;
    std::string err;
    if (!readFileBytes(path, bytes, err))
      return fail(CUTS_ERROR_IO, err);
    auto a = parseArtifact(std::move(bytes), err);
    if (!a)
      return fail(CUTS_ERROR_BAD_ARTIFACT, std::string(path) + ": " + err);
    const std::string why = weightsDiffer(*model->impl, *a);
    if (!why.empty())
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  std::string(path) +
                      " does not hold this model's weights: " + why);
    uint64_t size = 0;
    const uint8_t *host = a->section("weights", &size);
    std::vector<std::shared_ptr<DeviceWeights>> sets;
    if (cuts_status st =
            weightSets(model->replicas, model->devices, model->weightSource,
                       model->weightCodec, host, size, sets))
      return st; // nothing installed: the old weights serve on
    std::unique_lock<std::shared_mutex> installing(*model->impl->publishing);
    for (size_t e = 0; e < sets.size(); ++e)
      std::atomic_store(&model->replicas[e]->weights, sets[e]);
    return CUTS_OK;
  });
}

cuts_status cuts_model_load_memory(const void *data, size_t size,
                                   const cuts_load_options *options,
                                   cuts_model **model) {
  return guarded([&] {
    if (!model)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "model (the result) is NULL");
    *model = nullptr;
    if (!data && size > 0)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "data is NULL");
    const uint8_t *p = static_cast<const uint8_t *>(data);
    return loadModel(std::vector<uint8_t>(p, p + size), "<memory>", options,
                     false, model);
  });
}

void cuts_model_free(cuts_model *model) { delete model; }

int cuts_model_num_inputs(const cuts_model *model) {
  return checkModel(model) ? int(model->impl->inputs.size()) : 0;
}

int cuts_model_num_outputs(const cuts_model *model) {
  return checkModel(model) ? int(model->impl->outputs.size()) : 0;
}

static cuts_status tensorInfo(const cuts_model *model, int i,
                              cuts_tensor_info *info, bool input) {
  return guarded([&] {
    if (!checkModel(model))
      return CUTS_ERROR_INVALID_ARGUMENT;
    if (!info)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "info is NULL");
    const auto &infos = input ? model->impl->inputs : model->impl->outputs;
    if (i < 0 || size_t(i) >= infos.size())
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  std::string(input ? "input" : "output") + " index " +
                      std::to_string(i) + " is out of range (the model has " +
                      std::to_string(infos.size()) + ")");
    *info = infos[i];
    return CUTS_OK;
  });
}

cuts_status cuts_model_input(const cuts_model *model, int i,
                             cuts_tensor_info *info) {
  return tensorInfo(model, i, info, true);
}

cuts_status cuts_model_output(const cuts_model *model, int i,
                              cuts_tensor_info *info) {
  return tensorInfo(model, i, info, false);
}

uint64_t cuts_model_arena_bytes(const cuts_model *model) {
  return checkModel(model) ? model->impl->arenaBytes : 0;
}

uint64_t cuts_model_weight_bytes(const cuts_model *model) {
  return checkModel(model) ? model->impl->weightBytes : 0;
}

const char *cuts_model_arch(const cuts_model *model) {
  return checkModel(model) ? model->impl->arch.c_str() : "";
}

int cuts_model_num_profiles(const cuts_model *model) {
  return checkModel(model) ? int(model->impl->plans.size()) : 0;
}

int64_t cuts_model_profile_batch(const cuts_model *model, int i) {
  if (!checkModel(model))
    return 0;
  const auto &b = model->impl->batches;
  return i >= 0 && size_t(i) < b.size() ? b[size_t(i)] : 0;
}

int cuts_model_num_devices(const cuts_model *model) {
  return checkModel(model) ? int(model->replicas.size()) : 0;
}

int64_t cuts_model_max_batch(const cuts_model *model) {
  return checkModel(model) ? model->impl->maxBatch : 0;
}

int cuts_model_batch_axis(const cuts_model *model, int is_output, int i) {
  if (!checkModel(model))
    return -2;
  const Manifest &man = model->impl->manifest();
  const std::vector<int> &ids = is_output ? man.outputs : man.inputs;
  if (i < 0 || size_t(i) >= ids.size())
    return -2;
  return man.tensors[size_t(ids[size_t(i)])].batchAxis;
}

int cuts_model_num_kernels(const cuts_model *model) {
  return checkModel(model) ? int(model->impl->manifest().kernels.size()) : 0;
}

namespace {
/// Kernel i of the model, or null with the error set.
const KernelLaunch *kernelAt(const cuts_model *model, int i) {
  if (!checkModel(model))
    return nullptr;
  const auto &kernels = model->impl->manifest().kernels;
  if (i < 0 || size_t(i) >= kernels.size()) {
    fail(CUTS_ERROR_INVALID_ARGUMENT, "kernel index " + std::to_string(i) +
                                          " is out of range (the model has " +
                                          std::to_string(kernels.size()) + ")");
    return nullptr;
  }
  return &kernels[i];
}
} // namespace

cuts_status cuts_model_kernel(const cuts_model *model, int i, const char **name,
                              const char **summary, double *bound_us) {
  return guarded([&] {
    const KernelLaunch *k = kernelAt(model, i);
    if (!k)
      return CUTS_ERROR_INVALID_ARGUMENT;
    // Each result is optional: NULL skips it.
    if (name)
      *name = k->isLibrary() ? k->library.c_str() : k->name.c_str();
    if (summary)
      *summary = k->summary.c_str();
    if (bound_us)
      *bound_us = k->pulTimeUs;
    return CUTS_OK;
  });
}

cuts_status cuts_model_kernel_work(const cuts_model *model, int i,
                                   double *flops, double *bytes) {
  return guarded([&] {
    const KernelLaunch *k = kernelAt(model, i);
    if (!k)
      return CUTS_ERROR_INVALID_ARGUMENT;
    if (flops)
      *flops = k->flops;
    if (bytes)
      *bytes = double(k->bytes);
    return CUTS_OK;
  });
}

cuts_status cuts_model_target(const cuts_model *model, const char **name,
                              double *peak_flops, double *bandwidth) {
  return guarded([&] {
    if (!checkModel(model))
      return CUTS_ERROR_INVALID_ARGUMENT;
    const Manifest &m = model->impl->manifest();
    if (name)
      *name = m.target.c_str();
    if (peak_flops)
      *peak_flops = m.peakFlops;
    if (bandwidth)
      *bandwidth = m.bandwidth;
    return CUTS_OK;
  });
}

namespace {

/// A session of one replica of the model (its device's stream, arena and
/// state).
cuts_status newSession(const std::shared_ptr<ModelImpl> &impl, void *stream,
                       int use_cuda_graph, std::unique_ptr<cuts_session> &out) {
  const ModelImpl &m = *impl;
  const Driver *d = m.d;
  if (cuts_status st = enter(m))
    return st;
  if (use_cuda_graph && !d->hasGraphs())
    return fail(CUTS_ERROR_CUDA, "this CUDA driver has no CUDA graph API "
                                 "(cuStreamBeginCapture_v2, "
                                 "cuGraphInstantiateWithFlags, ...)");
  auto s = std::make_unique<cuts_session>();
  s->model = impl;
  s->weights = std::atomic_load(&m.weights);
  s->useGraph = use_cuda_graph != 0;
  if (stream) {
    s->stream = static_cast<CUstream>(stream);
  } else {
    if (CUresult r = d->cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING)) {
      s->stream = nullptr;
      return cudaFail(r, "creating the session's stream (cuStreamCreate)");
    }
    s->ownStream = true;
  }
  s->plan = &m.largest();
  s->graphs.assign(m.plans.size(), {});
  s->stepEvent.assign(m.plans.size(), {});
  if (m.arenaBytes > 0)
    if (CUresult r = d->cuMemAlloc(&s->arena, m.arenaBytes)) {
      s->arena = 0;
      return cudaFail(r, "allocating the " + std::to_string(m.arenaBytes) +
                             "-byte activation arena (cuMemAlloc)");
    }
  if (m.hasLibrary)
    if (cuts_status st = createLibraryState(*s))
      return st;
  if (cuts_status st = createSyncState(*s))
    return st;
  s->ptr.assign(m.maxTensors, 0);
  s->argValues.assign(m.maxArgs, 0);
  s->argPointers.assign(m.maxArgs, nullptr);
  out = std::move(s);
  return CUTS_OK;
}

} // namespace

cuts_status cuts_session_create(cuts_model *model, void *stream,
                                int use_cuda_graph, cuts_session **session) {
  return guarded([&] {
    if (!session)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "session (the result) is NULL");
    *session = nullptr;
    if (!checkModel(model))
      return CUTS_ERROR_INVALID_ARGUMENT;
    if (stream && model->replicas.size() > 1)
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "a model on several devices runs on streams of its own "
                  "(stream must be NULL)");
    std::unique_ptr<cuts_session> s;
    if (cuts_status st = newSession(model->impl, stream, use_cuda_graph, s))
      return st;
    for (size_t i = 1; i < model->replicas.size(); ++i) {
      std::unique_ptr<cuts_session> r;
      if (cuts_status st =
              newSession(model->replicas[i], nullptr, use_cuda_graph, r))
        return st;
      s->replicas.push_back(std::move(r));
    }
    s->shares = model->shares;
    s->masterGpu = model->masterGpu;
    *session = s.release();
    return CUTS_OK;
  });
}

void cuts_session_free(cuts_session *session) { delete session; }

cuts_status cuts_session_run(cuts_session *session, const cuts_binding *inputs,
                             int num_inputs, const cuts_binding *outputs,
                             int num_outputs) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    cuts_session &s = *session;
    const ModelImpl &m = *s.model;
    if (!s.replicas.empty() && !tensorParallel(m))
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "a model on several devices takes host bindings "
                  "(cuts_session_run_host), which it splits");
    std::vector<void *> in, out;
    int64_t batch = 0;
    if (cuts_status st = bindAll(m, inputs, num_inputs, outputs, num_outputs,
                                 batch, in, out))
      return st;
    const Manifest &man = m.plans[choosePlan(m.batches, batch)].manifest();
    std::string err;
    if (!checkAlignment(man, in, true, err) ||
        !checkAlignment(man, out, false, err))
      return fail(CUTS_ERROR_INVALID_ARGUMENT, err);
    if (cuts_status st = checkNoAliasing(man, batch, devicePointers(in),
                                         devicePointers(out)))
      return st;
    if (cuts_status st = enter(m))
      return st;
    return runAt(s, batch, in, out);
  });
}

cuts_status cuts_session_synchronize(cuts_session *session) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    if (cuts_status st = enter(*session->model))
      return st;
    if (CUresult r = session->model->d->cuStreamSynchronize(session->stream))
      return cudaFail(r, "cuStreamSynchronize");
    return CUTS_OK;
  });
}

cuts_status cuts_session_run_info(const cuts_session *session,
                                  cuts_run_info *info) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    if (!info)
      return fail(CUTS_ERROR_INVALID_ARGUMENT, "info is NULL");
    info->batch = session->batch;
    info->profile_batch = session->profileBatch;
    return CUTS_OK;
  });
}

cuts_status cuts_session_set_batch(cuts_session *session, int64_t batch) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    const int64_t most = session->model->maxBatch;
    if (batch < 0 || batch > most)
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "batch " + std::to_string(batch) + " is out of 0.." +
                      std::to_string(most) +
                      (most ? "" : " (the model has no batch profiles)"));
    const ModelImpl &m = *session->model;
    std::string err;
    if (batch > 0 &&
        !runsBatch(m.plans[choosePlan(m.batches, batch)].manifest(), batch,
                   err))
      return fail(CUTS_ERROR_INVALID_ARGUMENT, err);
    session->benchBatch = batch;
    return CUTS_OK;
  });
}

cuts_status cuts_session_benchmark(cuts_session *session, int warmup, int iters,
                                   float *times_ms) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    if (!session->replicas.empty() && !tensorParallel(*session->model))
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "a model on several devices is timed through "
                  "cuts_session_run_host");
    if (warmup < 0 || iters < 0 || (iters > 0 && !times_ms))
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "warmup and iters must not be negative, and times_ms must "
                  "hold iters floats");
    cuts_session &s = *session;
    const ModelImpl &m = *s.model;
    const Driver *d = m.d;
    if (cuts_status st = enter(m))
      return st;
    if (cuts_status st = ensureBuffers(s))
      return st;
    // At the batch set (cuts_session_set_batch), padded as a caller's run
    // would be where no plan has it; else the largest plan's.
    const int64_t batch = s.benchBatch ? s.benchBatch : m.largest().batch();
    const bool padded =
        batch > 0 && batch < m.batches[choosePlan(m.batches, batch)];
    if (padded)
      if (cuts_status st = ensureUserBuffers(s, batch))
        return st;
    const std::vector<CUdeviceptr> &bin = padded ? s.userIn : s.bufIn,
                                   &bout = padded ? s.userOut : s.bufOut;
    if (cuts_status st = fillInputs(s, bin, batch))
      return st;
    std::vector<void *> in, out;
    for (CUdeviceptr p : bin)
      in.push_back(reinterpret_cast<void *>(uintptr_t(p)));
    for (CUdeviceptr p : bout)
      out.push_back(reinterpret_cast<void *>(uintptr_t(p)));
    Events ev(d, 2);
    if (cuts_status st = ev.create())
      return st;
    for (int i = 0; i < warmup; ++i)
      if (cuts_status st = runAt(s, batch, in, out))
        return st;
    for (int i = 0; i < iters; ++i) {
      if (CUresult r = d->cuEventRecord(ev.ev[0], s.stream))
        return cudaFail(r, "cuEventRecord");
      if (cuts_status st = runAt(s, batch, in, out))
        return st;
      if (CUresult r = d->cuEventRecord(ev.ev[1], s.stream))
        return cudaFail(r, "cuEventRecord");
      if (CUresult r = d->cuEventSynchronize(ev.ev[1]))
        return cudaFail(r, "running the model (cuEventSynchronize)");
      if (CUresult r = d->cuEventElapsedTime(&times_ms[i], ev.ev[0], ev.ev[1]))
        return cudaFail(r, "cuEventElapsedTime");
    }
    if (CUresult r = d->cuStreamSynchronize(s.stream))
      return cudaFail(r, "cuStreamSynchronize");
    return CUTS_OK;
  });
}

cuts_status cuts_session_profile(cuts_session *session, int iters,
                                 float *kernel_ms) {
  return guarded([&] {
    if (cuts_status st = checkSession(session))
      return st;
    cuts_session &s = *session;
    if (s.model->weightBudget > 0)
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "a model with streamed weights is profiled loaded "
                  "without weight_budget");
    if (!s.replicas.empty())
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "a model on several devices is profiled one device at a "
                  "time (load it on one)");
    const Manifest &man = s.model->manifest();
    s.plan = &s.model->largest(); // the kernels cuts_model_kernel lists
    if (iters < 1 || (!man.kernels.empty() && !kernel_ms))
      return fail(CUTS_ERROR_INVALID_ARGUMENT,
                  "iters must be at least 1, and kernel_ms must hold one "
                  "float per kernel");
    const Driver *d = s.model->d;
    if (cuts_status st = enter(*s.model))
      return st;
    if (cuts_status st = ensureBuffers(s))
      return st;
    if (cuts_status st = fillInputs(s, s.bufIn, s.plan->batch()))
      return st;
    // An event between consecutive steps: event i..i+1 brackets step i.
    // Launched directly, a step's time includes any host-side work it
    // makes the GPU wait for (tens of microseconds for a cuDNN call). A
    // session that replays a graph times each kernel step in a graph of its
    // own, kRepeats launches of it back to back, as the tuner does: what
    // the kernel adds to a replayed plan. (Event nodes between the steps of
    // one graph cost about 2.6 us each on an H200: small kernels looked
    // twice as slow.) Repeating a step is safe: no kernel writes a tensor
    // it reads (the memory plan never overlaps two tensors live at once).
    // cuSync's steps run once each, in stream order (countsState).
    constexpr int kRepeats = 10;
    size_t numSteps = man.steps.size();
    Events ev(d, numSteps + 1);
    if (cuts_status st = ev.create())
      return st;
    if (cuts_status st = enqueuePlan(s, s.bufIn, s.bufOut)) // warm-up
      return st;
    std::vector<std::unique_ptr<GraphExec>> graphs(numSteps);
    for (size_t i = 0; s.useGraph && i < numSteps; ++i) {
      if (man.steps[i].kernel < 0 || countsState(*s.plan, i))
        continue;
      graphs[i] = std::make_unique<GraphExec>(d);
      if (cuts_status st = capture(
              s,
              [&]() -> cuts_status {
                for (int r = 0; r < kRepeats; ++r)
                  if (cuts_status st = enqueueStep(s, i, s.stream, false))
                    return st;
                return CUTS_OK;
              },
              graphs[i]->exec))
        return st;
      if (CUresult r = d->cuGraphLaunch(graphs[i]->exec, s.stream)) // warm
        return cudaFail(r, "launching the CUDA graph (cuGraphLaunch)");
    }
    std::vector<std::vector<float>> times(man.kernels.size());
    for (int it = 0; it < iters; ++it) {
      std::vector<float> run(man.kernels.size(), 0.0f);
      if (CUresult r = d->cuEventRecord(ev.ev[0], s.stream))
        return cudaFail(r, "cuEventRecord");
      for (size_t i = 0; i < numSteps; ++i) {
        if (!graphs[i]) {
          if (cuts_status st = enqueueStep(s, i, s.stream, false))
            return st;
        } else if (CUresult r = d->cuGraphLaunch(graphs[i]->exec, s.stream)) {
          return cudaFail(r, "launching the CUDA graph (cuGraphLaunch)");
        }
        if (CUresult r = d->cuEventRecord(ev.ev[i + 1], s.stream))
          return cudaFail(r, "cuEventRecord");
      }
      if (CUresult r = d->cuEventSynchronize(ev.ev[numSteps]))
        return cudaFail(r, "running the model (cuEventSynchronize)");
      for (size_t i = 0; i < numSteps; ++i) {
        // A step timed in a graph of its own ran its library call.
        int k = man.steps[i].kernelRun(graphs[i] != nullptr);
        if (k < 0)
          continue;
        float ms = 0;
        if (CUresult r = d->cuEventElapsedTime(&ms, ev.ev[i], ev.ev[i + 1]))
          return cudaFail(r, "cuEventElapsedTime");
        // A kernel launched twice counts both launches.
        run[k] += graphs[i] ? ms / kRepeats : ms;
      }
      for (size_t k = 0; k < run.size(); ++k)
        times[k].push_back(run[k]);
    }
    for (size_t k = 0; k < times.size(); ++k) {
      std::vector<float> &t = times[k];
      std::sort(t.begin(), t.end());
      size_t n = t.size();
      kernel_ms[k] = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    }
    return CUTS_OK;
  });
}

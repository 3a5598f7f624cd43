//===- main.cpp - cuts-run: run and time a compiled model -----------------===//
//
// The part of the command line that touches a compiled model: `cuts run` and
// `cuts bench` (the `cuts` driver hands them to this program). It links the
// runtime and the host-compile path only (no MLIR, no protobuf), so it is
// what a GPU host needs.
//
//===----------------------------------------------------------------------===//
#include "tools/cuts-run/BenchDevices.h"
#include "tools/cuts-run/C3.h"
#include "tools/cuts-run/Collectives.h"
#include "tools/cuts-run/Compress.h"
#include "tools/support/Emulate.h"
#include "tools/support/Opened.h"
#include "tools/support/Options.h"
#include "tools/support/TensorFile.h"

#include "compiler/tune/NvrtcWorker.h"
#include "compiler/tune/Tuner.h"
#include "cuts/Artifact.h"
#include "cuts/cuts.h"
#include "cuts/rt/Binding.h"
#include "cuts/rt/Offload.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using cuts::cli::ArgList;
using cuts::cli::error;

const char *kUsage =
    "usage:\n"
    "  cuts run MODEL.cuts --input NAME=FILE ... [--emulate] [--graph]\n"
    "           [--output-dir D] [--compare DIR] [--tolerance T]\n"
    "           [--gpus 0,1,... [--weights host|peer|nccl]\n"
    "           [--weight-codec none|3to1|bf16]]\n"
    "           [--weight-budget SIZE | --gpu-memory SIZE]\n"
    "      runs the model once on the GPU (or, with --emulate, its kernels on\n"
    "      the CPU; --gpus: on a device list, its batch split as in bench;\n"
    "      --weight-budget: at most SIZE of weights on the GPU, the rest\n"
    "      streamed from the artifact file as the kernels run; --gpu-memory:\n"
    "      at most SIZE in all, the weights getting what the activations\n"
    "      leave; --graph: as a replayed CUDA graph, library steps running\n"
    "      their library call, not the generated alternative a tuned plan\n"
    "      keeps for runs without a graph);\n"
    "      inputs and references are .npy or ONNX TensorProto .pb\n"
    "      files; --compare reads DIR/NAME.npy, DIR/NAME.pb or\n"
    "      DIR/output_I.pb per output and reports the relative L2 error\n"
    "      (fails above T; by default 1e-5 for float32, 1e-2 for float16\n"
    "      and 5e-2 for bfloat16, by the output's dtype or the model's\n"
    "      --precision (tf32 as float16), the looser); integer and bool\n"
    "      outputs must\n"
    "      match exactly. Input files of another dtype than the input's are\n"
    "      converted where exact (float64 to float32, int32 to int64, ...)\n"
    "  cuts bench MODEL.cuts [--iters N] [--warmup W] [--graph] [--kernels]\n"
    "           [--weight-budget SIZE | --gpu-memory SIZE]\n"
    "           [--peak-tflops F] [--bandwidth-gbs B] [--json] [--batch B]\n"
    "           [--gpus 0,1,... [--master-gpu] [--no-preload]\n"
    "           [--weights host|peer|nccl [--weight-codec none|3to1|bf16]]]\n"
    "      median and p99 latency and throughput (--batch: at batch B of a\n"
    "      model with batch profiles, padded where no profile has it, with\n"
    "      the copies a run makes; else the largest); --gpus: host runs of\n"
    "      the model on a device list, each batch split across it (or sent\n"
    "      through the first device, --master-gpu), two in flight, from\n"
    "      pinned host buffers to pinned host buffers, with each entry's\n"
    "      data-movement breakdown (--no-preload: a run's inputs copied\n"
    "      only once the run before has computed; --weights: how entries\n"
    "      after the first get the weights; --weight-codec: sent encoded,\n"
    "      an artifact compiled with --weight-codecs); --kernels times every\n"
    "      kernel and sets it against the performance model's bound, and\n"
    "      its achieved FLOP/s and bytes/s against the ceilings: the FP32\n"
    "      peak and global bandwidth of the GPU descriptor the model was\n"
    "      compiled for, or F TFLOP/s and B GB/s (measured ones, say);\n"
    "      with --graph each kernel is timed in a graph of its own\n"
    "  cuts collectives --gpus 0,1,... [--sizes 64K,16M,1G] [--iters N]\n"
    "           [--collective all-gather|all-to-all|reduce-scatter|all]\n"
    "           [--engine ce|nccl|both] [--json]\n"
    "      each collective's time and bandwidth by size (what a rank\n"
    "      receives) on copy engines (peer copies, one stream a source and\n"
    "      destination; reduce-scatter's sum a kernel) and through NCCL\n"
    "      (distinct devices only), every result checked first\n"
    "  cuts c3 [--gpus 0,0] [--collective all-gather|all-to-all|both]\n"
    "          [--scenarios mb1_896M,...] [--splits 8,16,32,64] [--scale F]\n"
    "          [--iters N] [--blocks N] [--json]\n"
    "      ConCCL's study on one GPU: Table I's GEMMs (cuBLASLt fp16) beside\n"
    "      Table II's collectives among the list's ranks (copies on the SMs\n"
    "      or the copy engines): slowdown tables, then each scenario's\n"
    "      taxonomy and % of the ideal speedup for c3_base, c3_sp, c3_rp\n"
    "      (green contexts), ConCCL and ConCCL_rp, and the model's choice\n"
    "      (perfmodel/C3.h) against the best measured\n"
    "  cuts compress MODEL.cuts [--emulate] [--json] [-o RESTORED.cuts]\n"
    "      ScaleDNN's 3:1 fp32 weight format on the model: bytes saved, the\n"
    "      weights' error (bf16 truncation beside it) and the outputs' error\n"
    "      (the model run with the restored weights, on the GPU or emulated)\n"
    "  cuts tune DIR --cache CACHE [--jobs N] [--target-ms T] "
    "[--max-seconds S]\n"
    "      times DIR/candidates.json (written by cuts compile --candidates) "
    "on\n"
    "      GPU 0 and adds the times to CACHE (created if missing)\n";

bool exists(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::string shapeText(const std::vector<int64_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

// --gpus LIST, --weights and --weight-codec into `dev`: 1 where `a` is
// one of them, -1 (the error printed) where its value is bad, else 0.
int parseDeviceOption(ArgList &a, cuts::cli::DeviceBench &dev) {
  auto pick = [&](const char *const *names, const char *what, int &out) {
    std::string v;
    auto it = a.value(v) ? std::find(names, names + 3, v) : names + 3;
    if (it == names + 3) {
      error("", std::string(what) + " needs " + names[0] + ", " + names[1] +
                    " or " + names[2]);
      return -1;
    }
    out = int(it - names);
    return 1;
  };
  if (a.is("--weights"))
    return pick(cuts::cli::kWeightSources, "--weights", dev.weightSource);
  if (a.is("--weight-codec"))
    return pick(cuts::cli::kWeightCodecs, "--weight-codec", dev.weightCodec);
  if (!a.is("--gpus"))
    return 0;
  std::string list;
  if (a.value(list) && cuts::cli::parseOrdinals(list, dev.gpus))
    return 1;
  error("", "--gpus needs device ordinals, e.g. 0,1");
  return -1;
}

/// --weight-budget SIZE, or --gpu-memory SIZE (the weights get what the
/// largest plan's activations and state leave of it), at the current
/// argument: 0 when it is neither, 1 when taken, -1 on error (printed).
int parseMemoryBudget(ArgList &a, uint64_t &weightBudget, uint64_t &gpuMemory) {
  const bool total = a.is("--gpu-memory");
  if (!total && !a.is("--weight-budget"))
    return 0;
  std::string v;
  if (!a.value(v) ||
      !cuts::cli::parseByteSize(v, total ? gpuMemory : weightBudget)) {
    error("", std::string(total ? "--gpu-memory" : "--weight-budget") +
                  " needs a size, e.g. 512M or 2GiB");
    return -1;
  }
  return 1;
}

/// The weight budget --gpu-memory leaves `art` (0 and `err` where it
/// leaves none, or both options were given).
uint64_t budgetOfGpuMemory(const cuts::rt::Artifact &art, uint64_t gpuMemory,
                           uint64_t weightBudget, std::string &err) {
  if (weightBudget > 0) {
    err = "--gpu-memory and --weight-budget are two ways to say one thing";
    return 0;
  }
  uint64_t activations = 0;
  for (const cuts::rt::Manifest *m : art.plans()) {
    const cuts::rt::MemoryPlan p = cuts::rt::planMemory(*m);
    activations = std::max(activations, p.arenaBytes + p.stateBytes);
  }
  if (activations >= gpuMemory) {
    err = "--gpu-memory " + std::to_string(gpuMemory) +
          " bytes leaves no room for weights: the activations take " +
          std::to_string(activations);
    return 0;
  }
  return gpuMemory - activations;
}

int cmdRun(const std::vector<std::string> &args) {
  std::string model, outDir, compareDir;
  std::map<std::string, std::string> inputFiles;
  bool emulate = false, verbose = false, graph = false;
  uint64_t weightBudget = 0;  // --weight-budget: weights streamed
  uint64_t gpuMemory = 0;     // --gpu-memory: the same, from a total
  double tolerance = 0;       // 0: per output dtype (defaultTolerance)
  cuts::cli::DeviceBench dev; // --gpus: run on a device list
  for (ArgList a(args); a.next();) {
    std::string v;
    if (int r = parseDeviceOption(a, dev)) {
      if (r < 0)
        return 1;
    } else if (a.is("--input")) {
      if (!a.value(v) || v.find('=') == std::string::npos || v.front() == '=')
        return error("", "--input needs NAME=FILE");
      size_t eq = v.find('=');
      if (!inputFiles.emplace(v.substr(0, eq), v.substr(eq + 1)).second)
        return error("", "--input given twice for '" + v.substr(0, eq) + "'");
    } else if (a.is("--emulate")) {
      emulate = true;
    } else if (a.is("--graph")) {
      graph = true;
    } else if (int r = parseMemoryBudget(a, weightBudget, gpuMemory)) {
      if (r < 0)
        return 1;
    } else if (a.is("--verbose")) {
      verbose = true;
    } else if (a.is("--output-dir")) {
      if (!a.value(outDir))
        return error("", "--output-dir needs a directory");
    } else if (a.is("--compare")) {
      if (!a.value(compareDir))
        return error("", "--compare needs a directory");
    } else if (a.is("--tolerance")) {
      if (!a.number(tolerance, ArgList::kPositive, ArgList::kNoLimit))
        return error("", "--tolerance needs a positive number");
    } else if (int rc = cuts::cli::positional(a, model, "run", "model")) {
      return rc;
    }
  }
  if (model.empty())
    return error("", "run: no model given (cuts run out/model.cuts --input "
                     "NAME=x.npy)");
  if (emulate && (!dev.gpus.empty() || dev.weightSource || dev.weightCodec ||
                  weightBudget > 0 || gpuMemory > 0))
    return error("", "--gpus, --weights, --weight-codec, --weight-budget and "
                     "--gpu-memory run on GPUs, not with --emulate");
  std::error_code ec;
  if (!outDir.empty() && (std::filesystem::create_directories(outDir, ec), ec))
    return error(outDir, "cannot create (" + ec.message() + ")");
  std::string err;
  // Streamed weights stay in the file, unread here: the runtime's load
  // verifies them and reads them as it runs.
  auto art = weightBudget > 0 || gpuMemory > 0
                 ? cuts::rt::readArtifactWithoutWeights(
                       model, err, cuts::rt::kLeaveWeightsFrom, false)
                 : cuts::rt::readArtifact(model, err);
  if (!art)
    return error("", err);
  if (gpuMemory > 0 &&
      !(weightBudget = budgetOfGpuMemory(*art, gpuMemory, weightBudget, err)))
    return error(model, err);
  // The largest plan names the I/O; with batch profiles, batched inputs
  // and outputs take the batch the input files carry.
  const cuts::rt::Manifest &m = *art->plans().back();
  int64_t batch = 0;
  auto atBatch = [&](const cuts::rt::Tensor &x) {
    std::vector<int64_t> shape = x.shape;
    if (x.batchAxis >= 0 && batch > 0)
      shape[0] = batch;
    return shape;
  };

  // Inputs: every model input exactly once, with its shape, converted to
  // its dtype where that is exact (convertArray).
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<std::vector<int64_t>> inShapes, outShapes;
  for (int t : m.inputs) {
    const cuts::rt::Tensor &x = m.tensors[t];
    auto it = inputFiles.find(x.name);
    if (it == inputFiles.end())
      return error(model, "no --input for the model's input '" + x.name + "' " +
                              shapeText(x.shape));
    auto arr = cuts::readTensorFile(it->second, err);
    if (!arr)
      return error("", err);
    if (x.batchAxis >= 0 && batch == 0 && !arr->shape.empty() &&
        arr->shape[0] >= 1 && arr->shape[0] <= m.batch)
      batch = arr->shape[0]; // the first batched input's
    if (arr->shape != atBatch(x))
      return error(it->second,
                   "input '" + x.name + "' has shape " + shapeText(arr->shape) +
                       ", the model takes " + shapeText(atBatch(x)) +
                       (x.batchAxis >= 0 ? " (axis 0 a batch from 1 to " +
                                               std::to_string(m.batch) + ")"
                                         : ""));
    inShapes.push_back(atBatch(x));
    auto typed = cuts::convertArray(*arr, x.dtype, err);
    if (!typed)
      return error(it->second, "input '" + x.name + "' (" + x.dtype + " " +
                                   shapeText(atBatch(x)) + "): " + err);
    inputs.push_back(std::move(typed->bytes));
    inputFiles.erase(it);
  }
  if (!inputFiles.empty())
    return error(model,
                 "the model has no input '" + inputFiles.begin()->first + "'");

  std::vector<std::vector<uint8_t>> outputs;
  if (emulate) {
    if (!cuts::emulateArtifact(*art, inputs, outputs, err, verbose, graph))
      return error(model, "emulation failed: " + err);
  } else {
    cuts_load_options options{};
    options.devices = dev.gpus.data();
    options.num_devices = int(dev.gpus.size());
    options.weight_source = dev.weightSource;
    options.weight_codec = dev.weightCodec;
    options.weight_budget = weightBudget;
    cuts::cli::Opened o;
    if (!o.open(model, &options, graph ? 1 : 0, err))
      return error(model, err);
    cuts_model *cm = o.model;
    cuts_session *s = o.session;
    // Bound with the dtypes the runtime reports (the manifest's).
    std::vector<cuts_binding> in, out;
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      const cuts::rt::Tensor &x = m.tensors[m.inputs[i]];
      cuts_tensor_info info{};
      cuts_model_input(cm, int(i), &info);
      in.push_back({x.name.c_str(), info.dtype, int(inShapes[i].size()),
                    inShapes[i].data(), inputs[i].data()});
    }
    outputs.resize(m.outputs.size());
    outShapes.resize(m.outputs.size());
    for (size_t i = 0; i < m.outputs.size(); ++i) {
      const cuts::rt::Tensor &x = m.tensors[m.outputs[i]];
      cuts_tensor_info info{};
      cuts_model_output(cm, int(i), &info);
      outShapes[i] = atBatch(x);
      // All ones: NaN as floats, so an element never written fails.
      outputs[i].assign(size_t(cuts::rt::bytesAtBatch(x, batch)), 0xff);
      out.push_back({x.name.c_str(), info.dtype, int(outShapes[i].size()),
                     outShapes[i].data(), outputs[i].data()});
    }
    cuts_status st = cuts_session_run_host(s, in.data(), int(in.size()),
                                           out.data(), int(out.size()));
    cuts_run_info info{};
    if (st == CUTS_OK && cuts_session_run_info(s, &info) == CUTS_OK &&
        info.batch > 0)
      std::printf("batch %lld: profile %lld%s\n", (long long)info.batch,
                  (long long)info.profile_batch,
                  info.profile_batch > info.batch ? " (padded)" : "");
    if (st != CUTS_OK)
      return error(model, cuts_last_error());
  }

  int failed = 0;
  double worst = 0; // the largest tolerance applied, for the message
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const cuts::rt::Tensor &x = m.tensors[m.outputs[i]];
    cuts::HostArray got{x.name, atBatch(x), x.dtype, std::move(outputs[i])};
    if (!outDir.empty() &&
        !cuts::writeNpy(outDir + "/" + x.name + ".npy", got, err))
      return error("", err);
    if (compareDir.empty())
      continue;
    std::string ref;
    for (std::string c :
         {compareDir + "/" + x.name + ".npy", compareDir + "/" + x.name + ".pb",
          compareDir + "/output_" + std::to_string(i) + ".pb"})
      if (exists(c)) {
        ref = c;
        break;
      }
    if (ref.empty())
      return error(compareDir, "no reference for output '" + x.name + "'");
    auto r = cuts::readTensorFile(ref, err);
    if (!r)
      return error("", err);
    if (r->size() != got.size())
      return error(ref, "reference has " + std::to_string(r->size()) +
                            " elements, output '" + x.name + "' " +
                            std::to_string(got.size()));
    std::string detail;
    // By default the looser of the output's dtype and the model's storage
    // (tf32 products round their operands to fp16's 10-bit mantissa).
    const std::string stored = m.precision == "fp16" || m.precision == "tf32"
                                   ? "float16"
                               : m.precision == "bf16" ? "bfloat16"
                                                       : "float32";
    double limit = tolerance > 0 ? tolerance
                                 : std::max(cuts::defaultTolerance(x.dtype),
                                            cuts::defaultTolerance(stored));
    bool ok = cuts::matchesReference(got, *r, limit, detail);
    worst = std::max(worst, limit);
    failed += !ok;
    std::printf("%-24s %-18s %s  %s\n", x.name.c_str(),
                shapeText(atBatch(x)).c_str(), detail.c_str(),
                ok ? "ok" : "FAIL");
  }
  if (failed)
    return error(model, std::to_string(failed) +
                            " output(s) differ from the reference by more "
                            "than " +
                            std::to_string(worst));
  return 0;
}

/// GB/s of the best sequential pass over `path` in 16, 64 or 256 MiB
/// reads (a disk may need large requests to reach its rate) into locked
/// memory (as streamed weights' pinned staging is: no page pinned per
/// request), O_DIRECT where the file system allows (the page cache would
/// flatter it): what streamed weights are measured against. 0 where it
/// cannot be read.
double sequentialReadGBs(const std::string &path) {
  double best = 0;
  for (size_t block : {size_t(16) << 20, size_t(64) << 20, size_t(256) << 20}) {
    const int fd = cuts::rt::openUncached(path);
    void *buf = nullptr;
    if (fd < 0 || posix_memalign(&buf, 4096, block) != 0) {
      if (fd >= 0)
        close(fd);
      return 0;
    }
    const bool locked = mlock(buf, block) == 0; // best effort
    uint64_t total = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (ssize_t n; (n = read(fd, buf, block)) > 0;)
      total += uint64_t(n);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (locked)
      munlock(buf, block);
    free(buf);
    close(fd);
    best = std::max(best, s > 0 ? double(total) / s / 1e9 : 0);
  }
  return best;
}

int cmdBench(const std::vector<std::string> &args) {
  std::string model;
  int iters = 100, warmup = 10;
  bool json = false, graph = false, kernels = false;
  double peakFlops = 0, bandwidth = 0; // given ceilings; 0: the target's
  int64_t atBatch = 0;                 // --batch; 0: the largest profile's
  uint64_t weightBudget = 0;           // --weight-budget: weights streamed
  uint64_t gpuMemory = 0;              // --gpu-memory: the same, from a total
  cuts::cli::DeviceBench dev;          // --gpus: a device list
  bool weightsGiven = false;
  for (ArgList a(args); a.next();) {
    const bool listed = a.is("--gpus");
    if (int r = parseDeviceOption(a, dev)) {
      if (r < 0)
        return 1;
      weightsGiven |= !listed;
    } else if (a.is("--master-gpu")) {
      dev.master = true;
    } else if (a.is("--no-preload")) {
      dev.preload = false;
    } else if (a.is("--batch")) {
      if (!a.integer(atBatch, 1, int64_t(1) << 31))
        return error("", "--batch needs a batch size >= 1");
    } else if (a.is("--iters")) {
      if (!a.integer(iters, 1, 1000000))
        return error("", "--iters needs a count >= 1");
    } else if (a.is("--warmup")) {
      if (!a.integer(warmup, 1, 1000000))
        return error("", "--warmup needs a count >= 1");
    } else if (a.is("--json")) {
      json = true;
    } else if (a.is("--graph")) {
      graph = true;
    } else if (int r = parseMemoryBudget(a, weightBudget, gpuMemory)) {
      if (r < 0)
        return 1;
    } else if (a.is("--kernels")) {
      kernels = true;
    } else if (a.is("--peak-tflops")) {
      if (!a.number(peakFlops, ArgList::kPositive, ArgList::kNoLimit))
        return error("", "--peak-tflops needs a positive number");
      peakFlops *= 1e12;
    } else if (a.is("--bandwidth-gbs")) {
      if (!a.number(bandwidth, ArgList::kPositive, ArgList::kNoLimit))
        return error("", "--bandwidth-gbs needs a positive number");
      bandwidth *= 1e9;
    } else if (int rc = cuts::cli::positional(a, model, "bench", "model")) {
      return rc;
    }
  }
  if (model.empty())
    return error("", "bench: no model given (cuts bench out/model.cuts)");
  if (!dev.gpus.empty() && (weightBudget > 0 || gpuMemory > 0))
    return error("", "--weight-budget and --gpu-memory stream weights on one "
                     "device, not with --gpus");
  if (!dev.gpus.empty()) {
    dev.batch = atBatch, dev.warmup = warmup, dev.iters = iters;
    dev.json = json;
    return cuts::cli::benchDevices(model, dev);
  }
  if (dev.master || !dev.preload || weightsGiven)
    return error("", "--master-gpu, --no-preload, --weights and "
                     "--weight-codec go with --gpus");
  // At --batch, the profiles up to the one that serves it (the kernels
  // --kernels lists are that profile's).
  std::string err;
  if (gpuMemory > 0) { // the plan only: the load verifies the weights
    auto art = cuts::rt::readArtifactWithoutWeights(
        model, err, cuts::rt::kLeaveWeightsFrom, false);
    if (!art)
      return error("", err);
    if (!(weightBudget = budgetOfGpuMemory(*art, gpuMemory, weightBudget, err)))
      return error(model, err);
  }
  cuts_load_options options{};
  options.max_batch = atBatch;
  options.weight_budget = weightBudget;
  cuts::cli::Opened o;
  if (!o.open(model, &options, graph, err))
    return error(model, err);
  cuts_model *cm = o.model;
  cuts_session *s = o.session;
  std::vector<float> times(static_cast<size_t>(iters));
  if (cuts_session_set_batch(s, atBatch) != CUTS_OK ||
      cuts_session_benchmark(s, warmup, iters, times.data()) != CUTS_OK)
    return error(model, cuts_last_error());
  std::vector<float> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  double p99 = sorted[std::min(sorted.size() - 1,
                               size_t(std::ceil(0.99 * sorted.size())) - 1)];
  int64_t batch = 1;
  if (cuts_model_num_inputs(cm) > 0) {
    cuts_tensor_info info;
    if (cuts_model_input(cm, 0, &info) == CUTS_OK && info.rank > 0)
      batch = info.shape[0];
  }
  cuts_run_info run{};
  cuts_session_run_info(s, &run);
  if (run.batch > 0)
    batch = run.batch;
  nlohmann::json j = {{"model", model},
                      {"arch", cuts_model_arch(cm)},
                      {"iters", iters},
                      {"cuda_graph", graph},
                      {"median_ms", median},
                      {"p99_ms", p99},
                      {"min_ms", sorted.front()},
                      {"batch", batch},
                      {"profile_batch", run.profile_batch},
                      {"throughput_per_s", double(batch) * 1e3 / median},
                      {"arena_bytes", cuts_model_arena_bytes(cm)},
                      {"weight_bytes", cuts_model_weight_bytes(cm)}};
  if (weightBudget > 0) { // the streamed weights against a plain read
    cuts_movement mv{};
    cuts_session_movement(s, 0, &mv);
    const double runs = double(warmup + iters);
    j["streamed_bytes_per_run"] = double(mv.streamed_bytes) / runs;
    j["stream_read_ms_per_run"] = mv.stream_read_ms / runs;
    j["stream_read_gbs"] = mv.stream_read_ms > 0 ? double(mv.streamed_bytes) /
                                                       mv.stream_read_ms / 1e6
                                                 : 0.0;
    j["sequential_read_gbs"] = sequentialReadGBs(model);
  }
  if (kernels) {
    int n = cuts_model_num_kernels(cm);
    std::vector<float> ms(size_t(std::max(n, 1)));
    if (cuts_session_profile(s, iters, ms.data()) != CUTS_OK)
      return error(model, cuts_last_error());
    // The ceilings: given, else the compile target's descriptor's (each on
    // its own: one may be given and the other not).
    const char *target = "";
    double peak = 0, bw = 0;
    cuts_model_target(cm, &target, &peak, &bw);
    std::string descriptor = *target ? std::string(target) + " descriptor" : "";
    std::string from = descriptor;
    if (peakFlops > 0 && bandwidth > 0)
      from = "given";
    else if (peakFlops > 0 || bandwidth > 0)
      from = std::string(peakFlops > 0 ? "peak" : "bandwidth") + " given" +
             (descriptor.empty() ? "" : ", the other from the " + descriptor);
    if (peakFlops > 0)
      peak = peakFlops;
    if (bandwidth > 0)
      bw = bandwidth;
    j["ceilings"] = {{"from", from},
                     {"peak_flop_per_s", peak},
                     {"bandwidth_bytes_per_s", bw}};
    auto share = [](double v, double ceiling) {
      return ceiling > 0 ? v / ceiling : 0.0;
    };
    nlohmann::json list = nlohmann::json::array();
    for (int i = 0; i < n; ++i) {
      const char *name = "", *summary = "";
      double bound = 0, flops = 0, bytes = 0;
      cuts_model_kernel(cm, i, &name, &summary, &bound);
      cuts_model_kernel_work(cm, i, &flops, &bytes);
      double us = ms[i] * 1e3;
      double flopRate = us > 0 ? flops / (us * 1e-6) : 0;
      double byteRate = us > 0 ? bytes / (us * 1e-6) : 0;
      list.push_back({{"name", name},
                      {"summary", summary},
                      {"median_us", us},
                      {"bound_us", bound},
                      {"of_bound", bound > 0 && us > 0 ? bound / us : 0},
                      {"flops", flops},
                      {"bytes", bytes},
                      {"flop_per_s", flopRate},
                      {"bytes_per_s", byteRate},
                      {"of_peak_flops", share(flopRate, peak)},
                      {"of_bandwidth", share(byteRate, bw)}});
    }
    j["kernels"] = list;
  }
  if (json) {
    std::printf("%s\n", j.dump(1).c_str());
    return 0;
  }
  std::string padded;
  if (run.profile_batch > run.batch)
    padded = ", padded to profile " + std::to_string(run.profile_batch);
  std::printf("%s on %s%s: median %.4f ms, p99 %.4f ms, min %.4f ms, %.1f "
              "inferences/s (batch %lld%s), arena %.1f MiB\n",
              model.c_str(), j["arch"].get<std::string>().c_str(),
              graph ? " (CUDA graph)" : "", median, p99, double(sorted.front()),
              j["throughput_per_s"].get<double>(), (long long)batch,
              padded.c_str(), j["arena_bytes"].get<double>() / (1 << 20));
  if (weightBudget > 0)
    std::printf("weights streamed: %.1f MB a run, read at %.2f GB/s (%.0f%% "
                "of the run); a sequential read of the file: %.2f GB/s\n",
                j["streamed_bytes_per_run"].get<double>() / 1e6,
                j["stream_read_gbs"].get<double>(),
                100 * j["stream_read_ms_per_run"].get<double>() / median,
                j["sequential_read_gbs"].get<double>());
  if (kernels) {
    const auto &c = j["ceilings"];
    std::printf("ceilings (%s): peak %.1f TFLOP/s, global memory %.0f GB/s\n",
                c["from"].get<std::string>().empty()
                    ? "none in the artifact"
                    : c["from"].get<std::string>().c_str(),
                c["peak_flop_per_s"].get<double>() * 1e-12,
                c["bandwidth_bytes_per_s"].get<double>() * 1e-9);
    std::printf("  #  time(us)  bound(us)  bound/time  TFLOP/s  of peak"
                "    GB/s  of BW  kernel\n");
    int i = 0;
    for (const auto &k : j["kernels"]) {
      // A library step's other kernel did not run (its generated
      // alternative under a graph, its library call without one).
      if (k["median_us"].get<double>() == 0) {
        ++i;
        continue;
      }
      std::printf("%3d  %8.2f  %9.2f  %9.1f%%  %7.2f  %6.1f%%  %6.0f  %4.0f%%"
                  "  %s\n",
                  i++, k["median_us"].get<double>(),
                  k["bound_us"].get<double>(),
                  100 * k["of_bound"].get<double>(),
                  k["flop_per_s"].get<double>() * 1e-12,
                  100 * k["of_peak_flops"].get<double>(),
                  k["bytes_per_s"].get<double>() * 1e-9,
                  100 * k["of_bandwidth"].get<double>(),
                  k["summary"].get<std::string>().c_str());
    }
  }
  return 0;
}

int cmdTune(const std::vector<std::string> &args) {
  std::string dir, cachePath;
  double maxSeconds = 0; // 0: no limit
  cuts::tune::MeasureOptions mo;
  mo.progress = cuts::tune::stderrProgress();
  mo.nvrtcWorker = cuts::tune::nvrtcWorkerExecutable();
  for (ArgList a(args); a.next();) {
    if (a.is("--cache")) {
      if (!a.value(cachePath))
        return error("", "--cache needs a file (JSON)");
    } else if (a.is("--jobs")) {
      if (!a.integer(mo.jobs, 1, 1024))
        return error("", "--jobs needs a count >= 1");
    } else if (a.is("--target-ms")) {
      if (!a.number(mo.targetMs, ArgList::kPositive, ArgList::kNoLimit))
        return error("", "--target-ms needs a positive number");
    } else if (a.is("--max-seconds")) {
      if (!a.number(maxSeconds, ArgList::kPositive, ArgList::kNoLimit))
        return error("", "--max-seconds needs a positive number");
    } else if (int rc = cuts::cli::positional(a, dir, "tune", "directory")) {
      return rc;
    }
  }
  if (dir.empty() || cachePath.empty())
    return error("", "tune: usage: cuts tune DIR --cache CACHE");
  std::string path = dir + "/candidates.json";
  std::ifstream f(path);
  if (!f)
    return error(path, "cannot read (write it with cuts compile --candidates)");
  std::stringstream ss;
  ss << f.rdbuf();
  std::vector<cuts::tune::Candidate> cands;
  std::string arch, err;
  if (!cuts::tune::candidatesFromJson(ss.str(), cands, arch, err))
    return error(path, err);
  cuts::tune::Cache cache;
  if (!cache.load(cachePath, err))
    return error("", err);
  size_t before = cache.size();
  // In slices, the cache saved after each: a run cut short (a device call's
  // limit, --max-seconds) keeps what it measured, and the next run resumes.
  const size_t slice = 16;
  auto t0 = std::chrono::steady_clock::now();
  bool ok = true;
  size_t done = 0;
  for (; done < cands.size() && ok; done += slice) {
    double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (maxSeconds > 0 && done > 0 && spent > maxSeconds)
      break;
    std::vector<cuts::tune::Candidate> part(
        cands.begin() + done,
        cands.begin() + std::min(cands.size(), done + slice));
    ok = cuts::tune::measure(part, arch, cache, mo, err);
    std::string saveErr;
    if (!cache.save(cachePath, saveErr))
      return error("", saveErr);
  }
  if (!ok)
    return error(path, err);
  if (done < cands.size()) {
    std::printf("stopped after %.0f s (--max-seconds) with %zu of %zu "
                "candidates gone through: run again to resume from %s\n",
                maxSeconds, done, cands.size(), cachePath.c_str());
    return 0;
  }
  std::printf("tuned %zu candidates for %s: %zu new entries in %s\n",
              cands.size(), arch.c_str(), cache.size() - before,
              cachePath.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == cuts::tune::kNvrtcWorkerArg) // the tuner's compile processes
    return cuts::tune::nvrtcWorkerMain();
  if (cmd == "run")
    return cmdRun(args);
  if (cmd == "bench")
    return cmdBench(args);
  if (cmd == "tune")
    return cmdTune(args);
  if (cmd == "compress")
    return cuts::cli::cmdCompress(args);
  if (cmd == "collectives")
    return cuts::cli::cmdCollectives(args);
  if (cmd == "c3")
    return cuts::cli::cmdC3(args);
  if (cmd == "-h" || cmd == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fputs(kUsage, stderr);
  return error("", "unknown command '" + cmd + "'");
}

//===- Compress.cpp - cuts compress: the 3:1 weight format on a model ----===//
//
// What ScaleDNN's compression (cuts/rt/Compress.h) does to a compiled
// model's fp32 weights: the bytes saved, the reconstruction error of the
// weights (bf16 truncation beside it, the paper's comparison point), and of
// the model's outputs: the artifact is rewritten with the weights as a
// device would receive them and run next to the original on the same
// inputs (emulated, or on GPU 0). With a GPU, the compress and decompress
// kernels are timed over all the weights.
//
//===----------------------------------------------------------------------===//
#include "tools/cuts-run/Compress.h"
#include "tools/cuts-run/KernelModule.h"
#include "tools/support/Opened.h"

#include "codegen/emit/Compress.h"
#include "cuts/Artifact.h"
#include "cuts/cuts.h"
#include "cuts/rt/Checksum.h"
#include "cuts/rt/Compress.h"
#include "cuts/rt/CudaDriver.h"
#include "cuts/rt/WeightCodec.h"
#include "tools/support/Emulate.h"
#include "tools/support/Options.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <random>

namespace cuts::cli {
namespace {

struct WeightReport {
  uint64_t values = 0, bytes = 0, compressedBytes = 0, escapedGroups = 0,
           groups = 0;
  rt::ReconstructionError error, bf16;
};

/// Compresses each fp32 weight of `bytes` (the file) in place into what a
/// device would restore, and reports. The error statistics cover the
/// packed values (escaped groups are exact, and a mask constant of -3.4e38
/// would drown every other value's error in the L2 norms).
WeightReport compressWeights(const rt::Artifact &a,
                             std::vector<uint8_t> &bytes) {
  WeightReport r;
  const rt::Blob &section = a.sections.at("weights");
  std::vector<float> original, restored, truncated;
  // The ranges a device list's weight codec packs (cuts/rt/WeightCodec.h).
  for (const rt::ByteRange &range : rt::codecRanges(a).packed) {
    const uint64_t offset = range.offset, size = range.bytes;
    float *p =
        reinterpret_cast<float *>(bytes.data() + section.offset + offset);
    const uint64_t n = size / 4;
    rt::Compressed3to1 c = rt::compress3to1(p, n);
    r.values += n, r.bytes += size, r.compressedBytes += c.bytes();
    r.groups += c.words.size(), r.escapedGroups += c.side.size() / 3;
    std::vector<float> back(n);
    rt::decompress3to1(c, back.data());
    for (uint64_t i = 0; i < n; ++i)
      if (!(c.words[i / 3] & rt::kEscapeBit)) {
        original.push_back(p[i]);
        restored.push_back(back[i]);
        truncated.push_back(rt::expandBf16(rt::truncateBf16(p[i])));
      }
    std::memcpy(p, back.data(), size);
  }
  r.error = rt::reconstructionError(original.data(), restored.data(),
                                    original.size());
  r.bf16 = rt::reconstructionError(original.data(), truncated.data(),
                                   original.size());
  return r;
}

/// Deterministic inputs valid for any model: floats standard normal
/// (fp32 files; 16-bit inputs get their bit patterns of 0.5), integers 0,
/// bools 1.
std::vector<std::vector<uint8_t>> inputsOf(const rt::Manifest &m) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<std::vector<uint8_t>> in;
  for (int t : m.inputs) {
    const rt::Tensor &x = m.tensors[size_t(t)];
    std::vector<uint8_t> b(size_t(x.bytes()), 0);
    if (x.dtype == "float32")
      for (size_t i = 0; i + 4 <= b.size(); i += 4) {
        float v = normal(rng);
        std::memcpy(&b[i], &v, 4);
      }
    else if (x.dtype == "float16" || x.dtype == "bfloat16")
      for (size_t i = 0; i + 2 <= b.size(); i += 2)
        b[i + 1] = x.dtype == "float16" ? 0x38 : 0x3f;
    else if (x.dtype == "bool")
      std::fill(b.begin(), b.end(), 1);
    in.push_back(std::move(b));
  }
  return in;
}

/// The model's outputs on GPU 0 through the C API (host bindings).
bool runOnGpu(const std::vector<uint8_t> &file, const rt::Manifest &m,
              const std::vector<std::vector<uint8_t>> &in,
              std::vector<std::vector<uint8_t>> &out, std::string &error) {
  Opened o;
  if (!o.open("", nullptr, 0, error, &file))
    return false;
  std::vector<cuts_binding> bi, bo;
  out.assign(m.outputs.size(), {});
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<int> &ids = pass ? m.outputs : m.inputs;
    for (size_t i = 0; i < ids.size(); ++i) {
      const rt::Tensor &t = m.tensors[size_t(ids[i])];
      cuts_tensor_info info{};
      (pass ? cuts_model_output : cuts_model_input)(o.model, int(i), &info);
      if (pass)
        out[i].assign(size_t(t.bytes()), 0);
      (pass ? bo : bi)
          .push_back({t.name.c_str(), info.dtype, int(t.shape.size()),
                      t.shape.data(),
                      pass ? static_cast<void *>(out[i].data())
                           : const_cast<uint8_t *>(in[i].data())});
    }
  }
  if (cuts_session_run_host(o.session, bi.data(), int(bi.size()), bo.data(),
                            int(bo.size())) != CUTS_OK) {
    error = cuts_last_error();
    return false;
  }
  return true;
}

/// Relative L2 and largest difference of the float32 outputs.
rt::ReconstructionError
outputError(const rt::Manifest &m, const std::vector<std::vector<uint8_t>> &a,
            const std::vector<std::vector<uint8_t>> &b) {
  std::vector<float> x, y;
  for (size_t i = 0; i < m.outputs.size(); ++i)
    if (m.tensors[size_t(m.outputs[i])].dtype == "float32") {
      const float *p = reinterpret_cast<const float *>(a[i].data());
      const float *q = reinterpret_cast<const float *>(b[i].data());
      x.insert(x.end(), p, p + a[i].size() / 4);
      y.insert(y.end(), q, q + b[i].size() / 4);
    }
  return rt::reconstructionError(x.data(), y.data(), x.size());
}

/// The compress and decompress kernels on GPU 0, one launch each over the
/// model's weights as a device list's distribution lays them out
/// (cuts/rt/WeightCodec.h): each one's median milliseconds of five runs
/// (after one), and whether the GPU's output restores what the reference
/// does, bit for bit.
struct KernelTimes {
  double compressMs = 0, decompressMs = 0;
  bool matches = false;
};

std::optional<KernelTimes> timeKernels(const rt::Artifact &a,
                                       std::string &error) {
  namespace cu = rt::cuda;
  const cu::Driver *d = cu::driver(error);
  cu::CUdevice dev = 0;
  cu::CUcontext ctx = nullptr;
  if (!d || d->cuDeviceGet(&dev, 0) || d->cuDevicePrimaryCtxRetain(&ctx, dev) ||
      d->cuCtxSetCurrent(ctx)) {
    error = error.empty() ? "no GPU 0" : error;
    return std::nullopt;
  }
  cu::CUmodule mod = nullptr;
  std::vector<cu::CUfunction> fns;
  if (!loadKernels(d, dev, codegen::weightCodecSource(),
                   {"cuts_compress3to1", "cuts_decompress3to1"}, mod, fns,
                   error)) {
    error = "the compression kernels: " + error;
    return std::nullopt;
  }
  cu::CUfunction pack = fns[0], unpack = fns[1];
  const rt::WeightCodec codec = rt::WeightCodec::ThreeToOne;
  const rt::CodecRanges cr = rt::codecRanges(a);
  const rt::StagingLayout l = rt::stagingLayout(cr, codec);
  uint64_t itemCount = 0;
  const std::vector<rt::CodecTableEntry> table =
      rt::codecTable(cr, l, codec, itemCount);
  unsigned long long items = itemCount;
  uint64_t size = 0;
  const uint8_t *host = a.section("weights", &size);
  cu::CUdeviceptr in = 0, staging = 0, count = 0, out = 0;
  for (auto [p, bytes] :
       {std::make_pair(&in, size), std::make_pair(&staging, l.bytes(items)),
        std::make_pair(&count, uint64_t(4)), std::make_pair(&out, size)})
    if (d->cuMemAlloc(p, std::max<uint64_t>(bytes, 4))) {
      error = "out of device memory";
      return std::nullopt;
    }
  d->cuMemcpyHtoD(in, host, size);
  d->cuMemcpyHtoD(staging + l.table, table.data(),
                  table.size() * sizeof(rt::CodecTableEntry));
  cu::CUevent e0, e1;
  d->cuEventCreate(&e0, cu::CU_EVENT_DEFAULT);
  d->cuEventCreate(&e1, cu::CU_EVENT_DEFAULT);
  const unsigned threads = 256;
  auto time = [&](cu::CUfunction f, std::vector<void *> args, bool reset) {
    const unsigned long long perBlock =
        uint64_t(rt::kCodecItemsPerThread) * threads;
    const unsigned blocks = unsigned(
        std::min<unsigned long long>((items + perBlock - 1) / perBlock, 65535));
    std::vector<float> ms;
    for (int rep = 0; rep < 6; ++rep) {
      if (reset)
        d->cuMemsetD8(count, 0, 4);
      d->cuEventRecord(e0, nullptr);
      d->cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, nullptr, args.data(),
                        nullptr);
      d->cuEventRecord(e1, nullptr);
      d->cuEventSynchronize(e1);
      float t = 0;
      d->cuEventElapsedTime(&t, e0, e1);
      if (rep > 0)
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return double(ms[ms.size() / 2]);
  };
  KernelTimes t;
  cu::CUdeviceptr tablePtr = staging + l.table;
  unsigned n = unsigned(table.size());
  unsigned capacity = unsigned(std::min<unsigned long long>(items, ~0u));
  unsigned long long side = l.side;
  t.compressMs = time(
      pack, {&in, &staging, &tablePtr, &n, &items, &count, &capacity, &side},
      true);
  t.decompressMs =
      time(unpack, {&staging, &out, &tablePtr, &n, &items, &side}, false);
  std::vector<uint8_t> got(size);
  d->cuMemcpyDtoH(got.data(), out, size);
  t.matches = true;
  for (const rt::ByteRange &r : cr.packed) {
    const float *x = reinterpret_cast<const float *>(host + r.offset);
    std::vector<float> want(r.bytes / 4);
    rt::decompress3to1(rt::compress3to1(x, want.size()), want.data());
    t.matches &= std::memcmp(got.data() + r.offset, want.data(), r.bytes) == 0;
  }
  for (cu::CUdeviceptr p : {in, staging, count, out})
    d->cuMemFree(p);
  d->cuModuleUnload(mod);
  return t;
}

} // namespace

int cmdCompress(const std::vector<std::string> &args) {
  std::string model, outPath;
  bool emulate = false, json = false;
  for (ArgList a(args); a.next();) {
    if (a.is("--emulate")) {
      emulate = true;
    } else if (a.is("--json")) {
      json = true;
    } else if (a.is("-o")) {
      if (!a.value(outPath))
        return error("", "-o needs a file name");
    } else if (int rc = positional(a, model, "compress", "model")) {
      return rc;
    }
  }
  if (model.empty())
    return error("", "compress: no model given (cuts compress "
                     "out/model.cuts [--emulate] [-o restored.cuts])");
  std::string err;
  auto art = rt::readArtifact(model, err);
  if (!art)
    return error("", err);
  std::vector<uint8_t> bytes = art->bytes;
  WeightReport w = compressWeights(*art, bytes);
  // The artifact as a device would hold it: its checksum made anew.
  uint64_t sum = rt::xxh64(bytes.data() + 64, bytes.size() - 64);
  for (int i = 0; i < 8; ++i)
    bytes[24 + size_t(i)] = uint8_t(sum >> (8 * i));
  auto restored = rt::parseArtifact(bytes, err);
  if (!restored)
    return error(model, "the restored artifact: " + err);
  if (!outPath.empty() && !rt::writeFile(outPath, bytes, err))
    return error(outPath, err);
  const rt::Manifest &m = art->manifest;
  auto in = inputsOf(m);
  std::vector<std::vector<uint8_t>> before, after;
  bool ran = emulate ? emulateArtifact(*art, in, before, err) &&
                           emulateArtifact(*restored, in, after, err)
                     : runOnGpu(art->bytes, m, in, before, err) &&
                           runOnGpu(bytes, m, in, after, err);
  if (!ran)
    return error(model, err);
  rt::ReconstructionError out = outputError(m, before, after);
  // The kernels' rates: fp32 bytes in and packed bytes out (compress), the
  // reverse (decompress), against the compile target's DRAM bandwidth.
  std::optional<KernelTimes> kt;
  if (!emulate && w.values > 0 && !(kt = timeKernels(*art, err)))
    return error(model, err);
  nlohmann::json j = {
      {"model", model},
      {"fp32_weights", w.values},
      {"bytes", w.bytes},
      {"compressed_bytes", w.compressedBytes},
      {"ratio", w.compressedBytes ? double(w.bytes) / w.compressedBytes : 0.},
      {"escaped_groups", w.escapedGroups},
      {"groups", w.groups},
      {"weights", {{"max_abs", w.error.maxAbs}, {"rel_l2", w.error.relL2}}},
      {"bf16_truncation",
       {{"bytes", w.bytes / 2},
        {"max_abs", w.bf16.maxAbs},
        {"rel_l2", w.bf16.relL2}}},
      {"outputs", {{"max_abs", out.maxAbs}, {"rel_l2", out.relL2}}},
      {"run", emulate ? "emulated" : "GPU 0"}};
  if (kt) {
    const double moved = double(w.bytes) + double(w.compressedBytes);
    const double bw = m.bandwidth > 0 ? m.bandwidth : 0;
    auto rate = [&](double ms) { return moved / (ms * 1e-3); };
    j["kernels"] = {{"compress_ms", kt->compressMs},
                    {"decompress_ms", kt->decompressMs},
                    {"compress_bytes_per_s", rate(kt->compressMs)},
                    {"decompress_bytes_per_s", rate(kt->decompressMs)},
                    {"of_bandwidth",
                     {bw > 0 ? rate(kt->compressMs) / bw : 0.,
                      bw > 0 ? rate(kt->decompressMs) / bw : 0.}},
                    {"matches_reference", kt->matches}};
    if (!kt->matches)
      return error(model, "the GPU's decompressed weights differ from the "
                          "reference's");
  }
  if (json) {
    std::printf("%s\n", j.dump(1).c_str());
    return 0;
  }
  std::printf("%s: %llu fp32 weights, %.2f MiB -> %.2f MiB (%.2fx; %llu of "
              "%llu groups escaped)\n",
              model.c_str(), (unsigned long long)w.values, w.bytes / 1048576.,
              w.compressedBytes / 1048576., j["ratio"].get<double>(),
              (unsigned long long)w.escapedGroups,
              (unsigned long long)w.groups);
  std::printf("  packed weights: max abs error %.3g, relative L2 %.3g (bf16 "
              "truncation: %.3g, %.3g at 2x)\n",
              w.error.maxAbs, w.error.relL2, w.bf16.maxAbs, w.bf16.relL2);
  std::printf("  outputs (%s): max abs difference %.3g, relative L2 %.3g\n",
              emulate ? "emulated" : "GPU 0", out.maxAbs, out.relL2);
  if (kt) {
    const auto &k = j["kernels"];
    std::printf("  kernels: compress %.3f ms (%.0f GB/s, %.0f%% of DRAM), "
                "decompress %.3f ms (%.0f GB/s, %.0f%%)\n",
                kt->compressMs, k["compress_bytes_per_s"].get<double>() * 1e-9,
                100 * k["of_bandwidth"][0].get<double>(), kt->decompressMs,
                k["decompress_bytes_per_s"].get<double>() * 1e-9,
                100 * k["of_bandwidth"][1].get<double>());
  }
  return 0;
}

} // namespace cuts::cli

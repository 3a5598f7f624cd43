//===- BenchDevices.cpp - cuts bench --gpus -------------------------------===//
//
// Host runs of a model on a device list as a server makes them: two in
// flight (the next submitted before the last is waited for), from pinned
// host buffers to pinned host buffers, alternating between two sets so
// that runs in flight never share one. Throughput comes from the wall
// clock; the breakdown (cuts_session_movement) from the runtime's events.
//
//===----------------------------------------------------------------------===//
#include "tools/cuts-run/BenchDevices.h"
#include "tools/support/Opened.h"
#include "tools/support/Options.h"

#include "cuts/cuts.h"
#include "cuts/rt/Binding.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

namespace cuts::cli {

const char *const kWeightSources[3] = {"host", "peer", "nccl"};
const char *const kWeightCodecs[3] = {"none", "3to1", "bf16"};

namespace {

/// Page-locked host buffers, freed together.
struct HostBuffers {
  std::vector<void *> ptrs;
  HostBuffers() = default;
  HostBuffers(const HostBuffers &) = delete;
  HostBuffers &operator=(const HostBuffers &) = delete;
  ~HostBuffers() {
    for (void *p : ptrs)
      cuts_host_free(p);
  }
  void *alloc(size_t bytes) {
    void *p = nullptr;
    if (cuts_host_alloc(bytes, &p) != CUTS_OK)
      return nullptr;
    ptrs.push_back(p);
    return p;
  }
};

/// One set of bindings at `batch`, in pinned memory, the inputs filled
/// with values valid for any model; false with the C API's error.
bool makeBindings(cuts_model *m, int64_t batch, HostBuffers &host,
                  std::vector<std::vector<int64_t>> &shapes,
                  std::vector<cuts_binding> &in,
                  std::vector<cuts_binding> &out) {
  for (int pass = 0; pass < 2; ++pass) {
    const int n = pass ? cuts_model_num_outputs(m) : cuts_model_num_inputs(m);
    for (int i = 0; i < n; ++i) {
      cuts_tensor_info t{};
      (pass ? cuts_model_output : cuts_model_input)(m, i, &t);
      std::vector<int64_t> shape(t.shape, t.shape + t.rank);
      if (cuts_model_batch_axis(m, pass, i) == 0)
        shape[0] = batch;
      size_t bytes = cuts_dtype_size(t.dtype);
      for (int64_t d : shape)
        bytes *= size_t(d);
      auto *p = static_cast<uint8_t *>(host.alloc(bytes ? bytes : 1));
      if (!p)
        return false;
      std::vector<uint8_t> one = rt::fillElement(cuts_dtype_name(t.dtype));
      for (size_t at = 0; !pass && at + one.size() <= bytes; at += one.size())
        std::memcpy(p + at, one.data(), one.size());
      shapes.push_back(std::move(shape));
      (pass ? out : in).push_back({t.name, t.dtype, t.rank, nullptr, p});
    }
  }
  for (size_t i = 0; i < in.size() + out.size(); ++i) // stable now
    (i < in.size() ? in[i] : out[i - in.size()]).shape = shapes[i].data();
  return true;
}

struct Bindings {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<cuts_binding> in, out;
};

/// `runs` host runs, each submitted before the one before is waited for.
bool pipelined(cuts_session *s, Bindings (&sets)[2], int runs) {
  uint64_t last = 0;
  for (int r = 0; r < runs; ++r) {
    Bindings &b = sets[r % 2];
    uint64_t ticket = 0;
    if (cuts_session_submit_host(s, b.in.data(), int(b.in.size()), b.out.data(),
                                 int(b.out.size()), &ticket) != CUTS_OK)
      return false;
    if (last && cuts_session_wait(s, last) != CUTS_OK)
      return false;
    last = ticket;
  }
  return !last || cuts_session_wait(s, last) == CUTS_OK;
}

nlohmann::json movementJson(const cuts_movement &m, int device) {
  const double n = m.runs > 0 ? double(m.runs) : 1.0;
  return {{"device", device},
          {"runs", m.runs},
          {"h2d_ms", m.h2d_ms / n},
          {"h2d_hidden_ms", m.h2d_hidden_ms / n},
          {"peer_ms", m.peer_ms / n},
          {"compute_ms", m.compute_ms / n},
          {"gather_ms", m.gather_ms / n},
          {"d2h_ms", m.d2h_ms / n},
          {"broadcast_ms", m.broadcast_ms},
          {"codec_ms", m.codec_ms},
          {"broadcast_bytes", m.broadcast_bytes}};
}

void printTable(const nlohmann::json &j) {
  std::printf("%-6s %-6s %9s %8s %9s %9s %9s %9s %12s %9s %10s\n", "entry",
              "device", "h2d ms", "hidden", "peer ms", "compute", "gather",
              "d2h ms", "broadcast ms", "codec ms", "sent MiB");
  int e = 0;
  for (const nlohmann::json &m : j["movement"]) {
    const double h2d = m["h2d_ms"];
    std::printf("%-6d %-6d %9.3f %7.0f%% %9.3f %9.3f %9.3f %9.3f %12.2f "
                "%9.2f %10.2f\n",
                e++, int(m["device"]), h2d,
                h2d > 0 ? 100.0 * double(m["h2d_hidden_ms"]) / h2d : 0.0,
                double(m["peer_ms"]), double(m["compute_ms"]),
                double(m["gather_ms"]), double(m["d2h_ms"]),
                double(m["broadcast_ms"]), double(m["codec_ms"]),
                double(m["broadcast_bytes"]) / 1048576.0);
  }
}

} // namespace

int benchDevices(const std::string &model, const DeviceBench &o) {
  cuts_load_options options{};
  options.devices = o.gpus.data(), options.num_devices = int(o.gpus.size());
  options.master_gpu = o.master;
  options.weight_source = o.weightSource;
  options.weight_codec = o.weightCodec;
  Opened opened;
  std::string err;
  if (!opened.open(model, &options, 1, err))
    return error(model, err);
  cuts_model *m = opened.model;
  cuts_session *s = opened.session;
  const int64_t batch = o.batch ? o.batch : cuts_model_max_batch(m);
  HostBuffers host;
  Bindings sets[2];
  for (Bindings &b : sets)
    if (!makeBindings(m, batch, host, b.shapes, b.in, b.out))
      return error(model, cuts_last_error());
  if (cuts_session_set_preload(s, o.preload) != CUTS_OK ||
      !pipelined(s, sets, o.warmup) ||
      cuts_session_reset_movement(s) != CUTS_OK)
    return error(model, cuts_last_error());
  auto t0 = std::chrono::steady_clock::now();
  if (!pipelined(s, sets, o.iters))
    return error(model, cuts_last_error());
  const double wall = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
  nlohmann::json moves = nlohmann::json::array();
  double h2d = 0, hidden = 0;
  for (size_t e = 0; e < o.gpus.size(); ++e) {
    cuts_movement mv{};
    if (cuts_session_movement(s, int(e), &mv) != CUTS_OK)
      return error(model, cuts_last_error());
    h2d += mv.h2d_ms, hidden += mv.h2d_hidden_ms;
    moves.push_back(movementJson(mv, o.gpus[e]));
  }
  std::string list;
  for (int g : o.gpus)
    list += (list.empty() ? "" : ",") + std::to_string(g);
  const double perRun = wall / o.iters;
  nlohmann::json j = {{"model", model},
                      {"gpus", o.gpus},
                      {"master_gpu", o.master},
                      {"preload", o.preload},
                      {"weights", kWeightSources[o.weightSource]},
                      {"weight_codec", kWeightCodecs[o.weightCodec]},
                      {"weight_bytes", cuts_model_weight_bytes(m)},
                      {"batch", batch},
                      {"iters", o.iters},
                      {"per_run_ms", perRun},
                      {"throughput_per_s", double(batch) * 1e3 / perRun},
                      {"h2d_hidden_fraction", h2d > 0 ? hidden / h2d : 0.0},
                      {"movement", moves}};
  if (o.json) {
    std::printf("%s\n", j.dump(1).c_str());
    return 0;
  }
  // A model without batch profiles runs its own shapes: runs a second.
  const std::string rate =
      batch > 0 ? "batch " + std::to_string(batch) + ", " : std::string();
  std::printf("%s on GPUs %s%s%s: %s%.4f ms a host run (inputs in, outputs "
              "out, two in flight), %.1f %s/s; %.0f%% of the host-to-device "
              "time hidden\n",
              model.c_str(), list.c_str(), o.master ? " (master GPU)" : "",
              o.preload ? "" : " (no pre-loading)", rate.c_str(), perRun,
              double(batch > 0 ? batch : 1) * 1e3 / perRun,
              batch > 0 ? "inferences" : "runs",
              h2d > 0 ? 100 * hidden / h2d : 0.0);
  printTable(j);
  return 0;
}

} // namespace cuts::cli

//===- Stage.cpp - one pipeline stage of a model, on a GPU or the CPU -----===//
#include "tools/cuts-mpi/Stage.h"

#include "cuts/rt/Pipeline.h"
#include "tools/support/Emulate.h"
#include "tools/support/Opened.h"

#include <chrono>

namespace cuts::mpi {

namespace {

std::vector<rt::Tensor> tensorsOf(const rt::Manifest &m,
                                  const std::vector<int> &ids) {
  std::vector<rt::Tensor> out;
  for (int t : ids)
    out.push_back(m.tensors[size_t(t)]);
  return out;
}

/// Through the C API: its runs host to host, timed on the host.
class GpuStage : public Stage {
public:
  bool open(const std::string &path, const StageIO &io, const StageOptions &o,
            std::string &error) {
    cuts_load_options options{};
    options.device = o.device;
    options.weight_budget = o.weightBudget;
    options.pipeline_stages = o.stages;
    options.pipeline_stage = o.stage;
    this->io = io;
    return opened.open(path, &options, 0, error);
  }

  bool run(const std::vector<std::vector<uint8_t>> &in,
           std::vector<std::vector<uint8_t>> &out,
           std::string &error) override {
    std::vector<cuts_binding> bin, bout;
    auto bind = [&](const rt::Tensor &t, void *data, bool input, int i) {
      cuts_tensor_info info{};
      (input ? cuts_model_input : cuts_model_output)(opened.model, i, &info);
      return cuts_binding{t.name.c_str(), info.dtype, int(t.shape.size()),
                          t.shape.data(), data};
    };
    for (size_t i = 0; i < io.inputs.size(); ++i)
      bin.push_back(bind(io.inputs[i], const_cast<uint8_t *>(in[i].data()),
                         true, int(i)));
    out.resize(io.outputs.size());
    for (size_t i = 0; i < io.outputs.size(); ++i) {
      out[i].resize(io.outputs[i].bytes());
      bout.push_back(bind(io.outputs[i], out[i].data(), false, int(i)));
    }
    const auto t0 = std::chrono::steady_clock::now();
    const cuts_status st =
        cuts_session_run_host(opened.session, bin.data(), int(bin.size()),
                              bout.data(), int(bout.size()));
    runMs += std::chrono::duration<double, std::milli>(
                 std::chrono::steady_clock::now() - t0)
                 .count();
    if (st != CUTS_OK)
      error = cuts_last_error();
    return st == CUTS_OK;
  }

  StageStats stats() const override {
    StageStats s;
    s.runMs = runMs;
    cuts_movement m{};
    if (cuts_session_movement(opened.session, 0, &m) == CUTS_OK)
      s.streamReadMs = m.stream_read_ms,
      s.streamedBytes = double(m.streamed_bytes);
    return s;
  }

private:
  cli::Opened opened;
  StageIO io;
  double runMs = 0;
};

/// Its kernels emulated on the CPU (cuts run --emulate's path).
class EmulatedStage : public Stage {
public:
  explicit EmulatedStage(rt::Artifact a) : artifact(std::move(a)) {}

  bool run(const std::vector<std::vector<uint8_t>> &in,
           std::vector<std::vector<uint8_t>> &out,
           std::string &error) override {
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = emulateArtifact(artifact, in, out, error);
    runMs += std::chrono::duration<double, std::milli>(
                 std::chrono::steady_clock::now() - t0)
                 .count();
    return ok;
  }
  StageStats stats() const override { return {runMs, 0, 0}; }

private:
  rt::Artifact artifact;
  double runMs = 0;
};

} // namespace

std::vector<StageIO> stageIOs(const rt::Artifact &a, int stages,
                              std::string &error) {
  const std::vector<size_t> cuts = rt::stageCuts(a, stages, error);
  std::vector<StageIO> out;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    const rt::Manifest m = rt::pipelineStage(a.manifest, cuts[s], cuts[s + 1]);
    out.push_back({tensorsOf(m, m.inputs), tensorsOf(m, m.outputs)});
  }
  return out;
}

std::unique_ptr<Stage> openStage(const std::string &path, const rt::Artifact &a,
                                 const StageIO &io, const StageOptions &o,
                                 std::string &error) {
  if (o.emulate) {
    rt::Artifact staged = a;
    if (o.stages > 1 &&
        !rt::takeStage(staged, o.stages, o.stage, nullptr, error))
      return nullptr;
    return std::make_unique<EmulatedStage>(std::move(staged));
  }
  auto gpu = std::make_unique<GpuStage>();
  if (!gpu->open(path, io, o, error))
    return nullptr;
  return gpu;
}

} // namespace cuts::mpi

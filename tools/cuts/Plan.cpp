//===- Plan.cpp - cuts plan: the BigCuts cluster planner ------------------===//
//
// `cuts plan MODEL.json --cluster CLUSTER.json [--gpus N] [--top K]
// [--json]`: every split of the cluster's GPUs into data-parallel,
// weight-partitioned and pipeline groups under both schedules, estimated
// by perfmodel/cluster/BigCuts.h and ranked, each normalised to the ideal
// (no communication) time as the thesis's Table 5.6 is. MODEL is a
// description (examples/bigcuts) or a compiled artifact, whose kernels
// give the averages.
//
//===----------------------------------------------------------------------===//
#include "cuts/Artifact.h"
#include "perfmodel/cluster/BigCuts.h"
#include "tools/support/Options.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

namespace cuts::cli {

namespace {

bool readText(const std::string &path, std::string &out) {
  std::ifstream f(path);
  if (!f)
    return false;
  std::stringstream s;
  s << f.rdbuf();
  out = s.str();
  return true;
}

nlohmann::json toJson(const bigcuts::Estimate &e, double ideal) {
  return {{"dp", e.config.dp},
          {"wp", e.config.wp},
          {"p", e.config.p},
          {"schedule", e.config.activationResident ? "AR" : "PR"},
          {"feasible", e.feasible},
          {"why", e.why},
          {"comm_storage_bytes", e.commStorage},
          {"comm_gpu_bytes", e.commGpu},
          {"time_storage_s", e.timeStorage},
          {"time_gpu_s", e.timeGpu},
          {"time_comm_s", e.timeComm},
          {"time_compute_s", e.timeCompute},
          {"time_tot_s", e.timeTot},
          {"normalised", e.timeTot / ideal},
          {"gpu_memory_bytes", e.memoryBytes}};
}

/// Table 4.2's averages from a compiled model (inference): the kernels
/// that read a weight of two or more dimensions are its complex
/// operators, and every weight is spread over them, as wide as it is
/// stored; EFF_COMPUTE is the share of the compile target's peak their
/// performance bound allows.
std::optional<bigcuts::Model> fromArtifact(const rt::Artifact &a,
                                           const std::string &name,
                                           double batch, double micro,
                                           std::string &error) {
  const rt::Manifest &m = a.profiles.empty() ? a.manifest : a.profiles.back();
  const double rows = m.batch > 0 ? double(m.batch) : 1;
  double ops = 0, acts = 0, flops = 0, pulSeconds = 0;
  for (const rt::KernelLaunch &k : m.kernels) {
    double weights = 0, written = 0;
    for (int t : k.args) {
      const rt::Tensor &x = m.tensors[size_t(rt::rootTensor(m, t))];
      if (x.kind == rt::TensorKind::Weight && x.shape.size() >= 2)
        weights += double(x.bytes()) / double(rt::dtypeBytes(x.dtype));
    }
    for (int t : k.outputs) {
      const rt::Tensor &x = m.tensors[size_t(t)];
      written += double(x.bytes()) / double(rt::dtypeBytes(x.dtype));
    }
    if (weights == 0 || k.flops <= 0)
      continue;
    ops += 1, acts += written / rows;
    flops += k.flops / rows, pulSeconds += k.pulTimeUs * 1e-6;
  }
  if (ops == 0) {
    error = "no kernel of it reads a weight matrix: nothing to plan";
    return std::nullopt;
  }
  bigcuts::Model model;
  model.name = name;
  // Every weight a run reads (embeddings, biases and norms too), spread
  // over the operators: what storage must deliver.
  double params = 0, paramBytes = 0;
  for (const rt::Tensor &x : m.tensors)
    if (x.kind == rt::TensorKind::Weight) {
      params += double(x.bytes()) / double(rt::dtypeBytes(x.dtype));
      paramBytes += double(x.bytes());
    }
  model.numOp = ops, model.numParam = params / ops;
  model.inference = true, model.valueBytes = paramBytes / params;
  model.numAct = acts / ops, model.numCompute = flops / ops;
  model.effCompute =
      m.peakFlops > 0 && pulSeconds > 0
          ? std::min(1.0, flops * rows / pulSeconds / m.peakFlops)
          : 0.25;
  model.batchMini = batch, model.batchMicro = micro;
  if (std::fmod(batch, micro) != 0) {
    error = "--batch must be a multiple of --micro-batch";
    return std::nullopt;
  }
  return model;
}

} // namespace

int cmdPlan(const std::vector<std::string> &args) {
  std::string modelPath, clusterPath;
  int gpus = 0, top = 10;
  double batch = 1, micro = 1; // for a compiled model
  bool json = false;
  for (ArgList a(args); a.next();) {
    if (a.is("--cluster")) {
      if (!a.value(clusterPath))
        return error("", "--cluster needs a cluster file");
    } else if (a.is("--gpus")) {
      if (!a.integer(gpus, 1, 1 << 20))
        return error("", "--gpus needs a count >= 1");
    } else if (a.is("--top")) {
      if (!a.integer(top, 1, 1 << 20))
        return error("", "--top needs a count >= 1");
    } else if (a.is("--batch")) {
      if (!a.number(batch, ArgList::kPositive, ArgList::kNoLimit))
        return error("", "--batch needs a positive count");
    } else if (a.is("--micro-batch")) {
      if (!a.number(micro, ArgList::kPositive, ArgList::kNoLimit))
        return error("", "--micro-batch needs a positive count");
    } else if (a.is("--json")) {
      json = true;
    } else if (modelPath.empty() && a.arg().rfind("--", 0) != 0) {
      modelPath = a.arg();
    } else {
      return error("", "plan: unknown argument '" + a.arg() + "'");
    }
  }
  if (modelPath.empty() || clusterPath.empty())
    return error("", "plan needs a model description and --cluster FILE");
  std::string text, err;
  std::optional<bigcuts::Model> model;
  if (modelPath.size() > 5 &&
      modelPath.compare(modelPath.size() - 5, 5, ".cuts") == 0) {
    auto art = rt::readArtifact(modelPath, err);
    if (!art)
      return error(modelPath, err);
    model = fromArtifact(*art, art->manifest.model, batch, micro, err);
  } else if (readText(modelPath, text)) {
    model = bigcuts::parseModel(text, err);
  } else {
    return error(modelPath, "cannot read");
  }
  if (!model)
    return error(modelPath, err);
  if (!readText(clusterPath, text))
    return error(clusterPath, "cannot read");
  auto cluster = bigcuts::parseCluster(text, err);
  if (!cluster)
    return error(clusterPath, err);
  if (gpus > cluster->gpus())
    return error(clusterPath,
                 "--gpus " + std::to_string(gpus) + " is more than its " +
                     std::to_string(cluster->nodes) + " nodes x " +
                     std::to_string(cluster->gpusPerNode) + " GPUs");
  if (gpus > 0) { // the first nodes, filled
    cluster->nodes = (gpus + cluster->gpusPerNode - 1) / cluster->gpusPerNode;
    cluster->gpusPerNode = std::min(gpus, cluster->gpusPerNode);
    if (cluster->gpus() != gpus)
      return error("", "--gpus " + std::to_string(gpus) +
                           " must fill whole nodes of " +
                           std::to_string(cluster->gpusPerNode));
  }
  const double ideal = bigcuts::idealTime(*model, *cluster);
  const std::vector<bigcuts::Estimate> all = bigcuts::rank(*model, *cluster);
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const bigcuts::Estimate &e : all)
      rows.push_back(toJson(e, ideal));
    nlohmann::json j = {{"model", model->name},
                        {"cluster", cluster->name},
                        {"gpus", cluster->gpus()},
                        {"ideal_s", ideal},
                        {"configs", rows}};
    std::printf("%s\n", j.dump(1).c_str());
    return 0;
  }
  std::printf("%s on %s (%d GPUs): ideal %.3f s a mini-batch\n",
              model->name.c_str(), cluster->name.c_str(), cluster->gpus(),
              ideal);
  std::printf("%-28s %10s %10s %10s %8s\n", "configuration", "storage s",
              "gpu s", "total s", "x ideal");
  for (size_t i = 0; i < all.size() && int(i) < top; ++i) {
    const bigcuts::Estimate &e = all[i];
    if (!e.feasible) {
      std::printf("%-28s infeasible: %s\n", bigcuts::describe(e.config).c_str(),
                  e.why.c_str());
      continue;
    }
    std::printf("%-28s %10.3f %10.3f %10.3f %8.2f\n",
                bigcuts::describe(e.config).c_str(), e.timeStorage, e.timeGpu,
                e.timeTot, e.timeTot / ideal);
  }
  return 0;
}

} // namespace cuts::cli

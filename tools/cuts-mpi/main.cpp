//===- main.cpp - cuts-mpi: a model's pipeline and data-parallel ranks ----===//
//
// BigCuts' executor across processes (issue 35), one MPI rank a GPU:
//
//   mpirun -np R cuts-mpi MODEL.cuts --pipeline P --input NAME=FILE ...
//
// The R ranks form R/P data-parallel groups (DIM_DP) of P pipeline stages
// (DIM_P): rank r runs stage r % P of group r / P. The input files hold a
// mini-batch: k micro-batches of the model's own axis 0 stacked on axis 0.
// Micro-batch m goes to group m % DP; each stage sends the tensors crossing
// its cut to the next stage's rank, staged through host memory, while it
// goes on with the next micro-batch. Rank 0 gathers the outputs (stacked
// the same way) and reports the time per mini-batch.
//
//===----------------------------------------------------------------------===//
#include "tools/cuts-mpi/Stage.h"

#include "cuts/cuts.h"
#include "tools/support/Options.h"
#include "tools/support/TensorFile.h"

#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <map>

using cuts::cli::ArgList;
using cuts::mpi::StageIO;

namespace {

struct Options {
  std::string model, outDir, compareDir;
  std::map<std::string, std::string> inputs;
  int pipeline = 1, iters = 1, warmup = 1;
  std::vector<int> gpus;
  uint64_t weightBudget = 0;
  double tolerance = 0;
  bool emulate = false, json = false;
};

const char *kUsage =
    "usage: mpirun -np R cuts-mpi MODEL.cuts --input NAME=FILE ...\n"
    "         [--pipeline P] [--gpus LIST] [--weight-budget SIZE]\n"
    "         [--iters N] [--warmup N] [--emulate] [--output-dir D]\n"
    "         [--compare DIR] [--tolerance T] [--json]\n"
    "  R ranks: R/P data-parallel groups of P pipeline stages. Input files\n"
    "  stack micro-batches on axis 0; --gpus picks each node-local rank's\n"
    "  device (round robin; default: the node's devices); --weight-budget\n"
    "  streams each stage's weights from the artifact file; --iters times\n"
    "  N mini-batches after --warmup (1) untimed.\n";

/// 0: parsed; else the exit code (the error printed).
int parse(int argc, char **argv, Options &o) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (ArgList a(args); a.next();) {
    std::string v;
    if (a.is("--input")) {
      const size_t eq = a.value(v) ? v.find('=') : std::string::npos;
      if (eq == std::string::npos || eq == 0)
        return cuts::cli::error("", "--input needs NAME=FILE");
      if (!o.inputs.emplace(v.substr(0, eq), v.substr(eq + 1)).second)
        return cuts::cli::error("", "--input given twice for '" +
                                        v.substr(0, eq) + "'");
    } else if (a.is("--pipeline")) {
      if (!a.integer(o.pipeline, 1, 4096))
        return cuts::cli::error("", "--pipeline needs a stage count");
    } else if (a.is("--iters")) {
      if (!a.integer(o.iters, 1, 1000000))
        return cuts::cli::error("", "--iters needs a positive count");
    } else if (a.is("--warmup")) {
      if (!a.integer(o.warmup, 0, 1000000))
        return cuts::cli::error("", "--warmup needs a count");
    } else if (a.is("--gpus")) {
      if (!a.value(v) || !cuts::cli::parseOrdinals(v, o.gpus))
        return cuts::cli::error("", "--gpus needs device ordinals, e.g. 0,1");
    } else if (a.is("--weight-budget")) {
      if (!a.value(v) || !cuts::cli::parseByteSize(v, o.weightBudget))
        return cuts::cli::error("", "--weight-budget needs a size, e.g. 1GiB");
    } else if (a.is("--tolerance")) {
      if (!a.number(o.tolerance, ArgList::kPositive, ArgList::kNoLimit))
        return cuts::cli::error("", "--tolerance needs a positive number");
    } else if (a.is("--output-dir") || a.is("--compare")) {
      const std::string option = a.arg();
      if (!a.value(option == "--compare" ? o.compareDir : o.outDir))
        return cuts::cli::error("", option + " needs a directory");
    } else if (a.is("--emulate")) {
      o.emulate = true;
    } else if (a.is("--json")) {
      o.json = true;
    } else if (a.is("--help")) {
      std::fputs(kUsage, stdout);
      return 2;
    } else if (int rc = cuts::cli::positional(a, o.model, "mpi", "model")) {
      return rc;
    }
  }
  if (o.model.empty())
    return cuts::cli::error("", "no model given\n" + std::string(kUsage));
  if (o.emulate && (o.weightBudget || !o.gpus.empty()))
    return cuts::cli::error("", "--gpus and --weight-budget run on GPUs, not "
                                "with --emulate");
  return 0;
}

/// Ends every rank: this one's error on stderr, then MPI_Abort, so that no
/// rank waits for a message that never comes.
[[noreturn]] void die(int rank, const std::string &what) {
  std::fprintf(stderr, "cuts-mpi: error: rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

std::string shapeText(const std::vector<int64_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

/// The mini-batch: per micro-batch, per model input, its bytes. Every
/// input file stacks the same number of micro-batches on axis 0.
std::vector<std::vector<std::vector<uint8_t>>>
readMiniBatch(const Options &o, const StageIO &first, int rank) {
  std::map<std::string, std::string> files = o.inputs;
  std::vector<std::vector<std::vector<uint8_t>>> micro;
  std::string err;
  for (size_t i = 0; i < first.inputs.size(); ++i) {
    const cuts::rt::Tensor &x = first.inputs[i];
    auto it = files.find(x.name);
    if (it == files.end())
      die(rank, "no --input for the model's input '" + x.name + "' " +
                    shapeText(x.shape));
    auto arr = cuts::readTensorFile(it->second, err);
    if (!arr)
      die(rank, err);
    std::vector<int64_t> tail(x.shape.begin() + (x.shape.empty() ? 0 : 1),
                              x.shape.end());
    const bool stacks =
        !x.shape.empty() && x.shape[0] > 0 && !arr->shape.empty() &&
        arr->shape[0] % x.shape[0] == 0 && arr->shape[0] > 0 &&
        std::vector<int64_t>(arr->shape.begin() + 1, arr->shape.end()) == tail;
    if (!stacks)
      die(rank, it->second + ": input '" + x.name + "' has shape " +
                    shapeText(arr->shape) + "; a mini-batch of " +
                    shapeText(x.shape) +
                    " micro-batches stacks them on axis 0");
    const size_t k = size_t(arr->shape[0] / x.shape[0]);
    if (i > 0 && k != micro.size())
      die(rank, it->second + " holds " + std::to_string(k) +
                    " micro-batches, the first input " +
                    std::to_string(micro.size()));
    auto typed = cuts::convertArray(*arr, x.dtype, err);
    if (!typed)
      die(rank, it->second + ": input '" + x.name + "': " + err);
    micro.resize(k);
    const size_t bytes = size_t(x.bytes());
    for (size_t m = 0; m < k; ++m)
      micro[m].emplace_back(typed->bytes.begin() + int64_t(m * bytes),
                            typed->bytes.begin() + int64_t((m + 1) * bytes));
    files.erase(it);
  }
  if (!files.empty())
    die(rank, "the model has no input '" + files.begin()->first + "'");
  return micro;
}

/// Stage s's outputs are stage s+1's inputs, in order (a self-check of
/// the cut, which every rank computes alike).
void checkChain(const std::vector<StageIO> &io, int rank) {
  for (size_t s = 0; s + 1 < io.size(); ++s) {
    bool same = io[s].outputs.size() == io[s + 1].inputs.size();
    for (size_t i = 0; same && i < io[s].outputs.size(); ++i)
      same = io[s].outputs[i].name == io[s + 1].inputs[i].name &&
             io[s].outputs[i].bytes() == io[s + 1].inputs[i].bytes();
    if (!same)
      die(rank, "stage " + std::to_string(s) + "'s outputs are not stage " +
                    std::to_string(s + 1) + "'s inputs");
  }
}

int bytesCount(const std::vector<uint8_t> &b, int rank) {
  if (b.size() > size_t(INT32_MAX))
    die(rank, "a tensor of " + std::to_string(b.size()) +
                  " bytes is more than one MPI message carries");
  return int(b.size());
}

using Batch = std::vector<std::vector<uint8_t>>; // per tensor, its bytes

/// Where this rank stands: group `group` of `dp`, stage `stage` of `p`.
struct Layout {
  int rank = 0, size = 1, p = 1, dp = 1, group = 0, stage = 0;
  int next() const { return rank + 1; }
  int prev() const { return rank - 1; }
  bool last() const { return stage + 1 == p; }
  /// The micro-batches of `k` the group runs, in order.
  std::vector<size_t> micro(size_t k) const {
    std::vector<size_t> out;
    for (size_t m = size_t(group); m < k; m += size_t(dp))
      out.push_back(m);
    return out;
  }
};

/// One mini-batch through this rank's stage: each of its micro-batches
/// taken from `inputs` (stage 0) or received from the stage before, run,
/// and sent on while the next one runs (two buffers), or kept (the last
/// stage). Returns the milliseconds spent waiting for messages.
double runMiniBatch(const Layout &l, cuts::mpi::Stage &stage, const StageIO &io,
                    const std::vector<Batch> &inputs, size_t k,
                    std::vector<Batch> &kept) {
  const std::vector<size_t> ms = l.micro(k);
  Batch out[2], received;
  std::vector<MPI_Request> sends[2];
  double waitMs = 0;
  std::string err;
  kept.resize(ms.size()); // the last stage's outputs, written in place
  for (size_t j = 0; j < ms.size(); ++j) {
    const double t0 = MPI_Wtime();
    received.resize(io.inputs.size());
    if (l.stage > 0)
      for (size_t i = 0; i < io.inputs.size(); ++i) {
        received[i].resize(io.inputs[i].bytes());
        MPI_Recv(received[i].data(), bytesCount(received[i], l.rank), MPI_BYTE,
                 l.prev(), int(i), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    const Batch &in = l.stage == 0 ? inputs[ms[j]] : received;
    const int slot = int(j % 2);
    MPI_Waitall(int(sends[slot].size()), sends[slot].data(),
                MPI_STATUSES_IGNORE);
    sends[slot].clear();
    waitMs += (MPI_Wtime() - t0) * 1e3;
    Batch &result = l.last() ? kept[j] : out[slot];
    if (!stage.run(in, result, err))
      die(l.rank, "micro-batch " + std::to_string(ms[j]) + ": " + err);
    if (l.last())
      continue;
    for (size_t i = 0; i < result.size(); ++i) {
      sends[slot].emplace_back();
      MPI_Isend(result[i].data(), bytesCount(result[i], l.rank), MPI_BYTE,
                l.next(), int(i), MPI_COMM_WORLD, &sends[slot].back());
    }
  }
  const double t0 = MPI_Wtime();
  for (std::vector<MPI_Request> &r : sends)
    MPI_Waitall(int(r.size()), r.data(), MPI_STATUSES_IGNORE);
  return waitMs + (MPI_Wtime() - t0) * 1e3;
}

/// On rank 0: every micro-batch's outputs, from the last stage of the group
/// that ran it (its own `kept` where rank 0 is one).
std::vector<Batch> gatherOutputs(const Layout &l, const StageIO &last, size_t k,
                                 const std::vector<Batch> &kept) {
  if (l.rank != 0) {
    if (l.last())
      for (const Batch &b : kept)
        for (size_t i = 0; i < b.size(); ++i)
          MPI_Send(b[i].data(), bytesCount(b[i], l.rank), MPI_BYTE, 0, int(i),
                   MPI_COMM_WORLD);
    return {};
  }
  std::vector<Batch> all(k);
  for (int g = 0; g < l.dp; ++g) {
    Layout from = l;
    from.group = g, from.rank = g * l.p + l.p - 1;
    const std::vector<size_t> ms = from.micro(k);
    for (size_t j = 0; j < ms.size(); ++j) {
      if (from.rank == 0) {
        all[ms[j]] = kept[j];
        continue;
      }
      for (size_t i = 0; i < last.outputs.size(); ++i) {
        all[ms[j]].emplace_back(last.outputs[i].bytes());
        MPI_Recv(all[ms[j]].back().data(), bytesCount(all[ms[j]].back(), 0),
                 MPI_BYTE, from.rank, int(i), MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
      }
    }
  }
  return all;
}

/// Rank 0: the outputs stacked on axis 0, written and compared; the
/// number that failed.
int finishOutputs(const Options &o, const StageIO &last,
                  const std::vector<Batch> &all) {
  int failed = 0;
  std::string err;
  for (size_t i = 0; i < last.outputs.size(); ++i) {
    const cuts::rt::Tensor &x = last.outputs[i];
    cuts::HostArray got{x.name, x.shape, x.dtype, {}};
    if (got.shape.empty())
      got.shape = {1};
    got.shape[0] *= int64_t(all.size());
    for (const Batch &b : all)
      got.bytes.insert(got.bytes.end(), b[i].begin(), b[i].end());
    if (!o.outDir.empty() &&
        !cuts::writeNpy(o.outDir + "/" + x.name + ".npy", got, err))
      die(0, err);
    if (o.compareDir.empty())
      continue;
    auto ref = cuts::readTensorFile(o.compareDir + "/" + x.name + ".npy", err);
    if (!ref)
      die(0, err);
    std::string detail;
    const double limit =
        o.tolerance > 0 ? o.tolerance : cuts::defaultTolerance(x.dtype);
    const bool ok = ref->size() == got.size() &&
                    cuts::matchesReference(got, *ref, limit, detail);
    std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", x.name.c_str(),
                ref->size() == got.size() ? detail.c_str()
                                          : "sizes differ from the reference");
    failed += !ok;
  }
  return failed;
}

/// This rank's device: --gpus, else the node's devices, indexed by its
/// rank among the node's.
int localDevice(const Options &o) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &node);
  int local = 0, count = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  if (!o.gpus.empty())
    return o.gpus[size_t(local) % o.gpus.size()];
  if (o.emulate || cuts_device_count(&count) != CUTS_OK || count == 0)
    return 0; // a load on it says what is missing
  return local % count;
}

void report(const Options &o, const Layout &l, size_t k, double msPerMini,
            const std::vector<double> &stats) {
  constexpr int n = 4; // runMs, waitMs, streamReadMs, streamedBytes a rank
  if (o.json) {
    std::printf("{\"ranks\": %d, \"dp\": %d, \"pipeline\": %d, "
                "\"micro_batches\": %zu, \"iters\": %d, "
                "\"ms_per_mini_batch\": %.4f, \"rank_stats\": [",
                l.size, l.dp, l.p, k, o.iters, msPerMini);
    for (int r = 0; r < l.size; ++r)
      std::printf("%s{\"run_ms\": %.4f, \"wait_ms\": %.4f, "
                  "\"stream_read_ms\": %.4f, \"streamed_bytes\": %.0f}",
                  r ? ", " : "", stats[size_t(r * n)], stats[size_t(r * n + 1)],
                  stats[size_t(r * n + 2)], stats[size_t(r * n + 3)]);
    std::printf("]}\n");
    return;
  }
  std::printf("cuts-mpi: %d ranks (DP %d x P %d), %zu micro-batches: %.3f ms "
              "a mini-batch (mean of %d)\n",
              l.size, l.dp, l.p, k, msPerMini, o.iters);
  for (int r = 0; r < l.size; ++r)
    std::printf("  rank %d (group %d, stage %d): run %.3f ms, waiting %.3f ms, "
                "streamed %.1f MB in %.3f ms reading\n",
                r, r / l.p, r % l.p, stats[size_t(r * n)],
                stats[size_t(r * n + 1)], stats[size_t(r * n + 3)] / 1e6,
                stats[size_t(r * n + 2)]);
}

int runRanks(const Options &o, Layout &l) {
  std::string err;
  std::error_code ec;
  if (l.rank == 0 && !o.outDir.empty() &&
      (std::filesystem::create_directories(o.outDir, ec), ec))
    die(0, o.outDir + ": cannot create (" + ec.message() + ")");
  // On a GPU the runtime reads (and verifies) the stage's weights at its
  // load; here only the plan matters, so the weights are not read twice.
  auto art = o.emulate ? cuts::rt::readArtifact(o.model, err)
                       : cuts::rt::readArtifactWithoutWeights(
                             o.model, err, cuts::rt::kLeaveWeightsFrom,
                             /*verify=*/false);
  if (!art)
    die(l.rank, err);
  const std::vector<StageIO> io = cuts::mpi::stageIOs(*art, l.p, err);
  if (io.empty())
    die(l.rank, o.model + ": " + err);
  checkChain(io, l.rank);
  std::vector<Batch> inputs;
  uint64_t k = 0;
  if (l.stage == 0) {
    inputs = readMiniBatch(o, io.front(), l.rank);
    k = inputs.size();
  }
  MPI_Bcast(&k, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  cuts::mpi::StageOptions so;
  so.stages = l.p, so.stage = l.stage, so.device = localDevice(o);
  so.weightBudget = o.weightBudget, so.emulate = o.emulate;
  auto stage =
      cuts::mpi::openStage(o.model, *art, io[size_t(l.stage)], so, err);
  if (!stage)
    die(l.rank, o.model + ": stage " + std::to_string(l.stage) + ": " + err);
  art.reset();
  std::vector<Batch> kept;
  for (int it = 0; it < o.warmup; ++it) // untimed
    runMiniBatch(l, *stage, io[size_t(l.stage)], inputs, k, kept);
  const cuts::mpi::StageStats before = stage->stats();
  double waitMs = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int it = 0; it < o.iters; ++it)
    waitMs += runMiniBatch(l, *stage, io[size_t(l.stage)], inputs, k, kept);
  MPI_Barrier(MPI_COMM_WORLD);
  const double msPerMini = (MPI_Wtime() - t0) * 1e3 / o.iters;
  const cuts::mpi::StageStats after = stage->stats();
  const double mine[4] = {
      (after.runMs - before.runMs) / o.iters, waitMs / o.iters,
      (after.streamReadMs - before.streamReadMs) / o.iters,
      (after.streamedBytes - before.streamedBytes) / o.iters};
  std::vector<double> stats(size_t(l.size) * 4);
  MPI_Gather(mine, 4, MPI_DOUBLE, stats.data(), 4, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  const std::vector<Batch> all = gatherOutputs(l, io.back(), k, kept);
  if (l.rank != 0)
    return 0;
  const int failed = finishOutputs(o, io.back(), all);
  report(o, l, k, msPerMini, stats);
  return failed ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  Layout l;
  MPI_Comm_rank(MPI_COMM_WORLD, &l.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &l.size);
  Options o;
  if (int rc = parse(argc, argv, o)) {
    MPI_Finalize(); // every rank parsed the same line and stops alike
    return rc == 2 ? 0 : rc;
  }
  l.p = o.pipeline;
  if (l.size % l.p != 0)
    die(l.rank, std::to_string(l.size) + " ranks do not form groups of " +
                    std::to_string(l.p) + " pipeline stages");
  l.dp = l.size / l.p, l.group = l.rank / l.p, l.stage = l.rank % l.p;
  int rc = runRanks(o, l);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD); // every rank exits alike
  MPI_Finalize();
  return rc;
}

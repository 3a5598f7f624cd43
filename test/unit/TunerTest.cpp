//===- TunerTest.cpp - the tuner's order and its candidate files ----------===//
//
// measure() needs a GPU; what it times, and in which order, does not.
//
//===----------------------------------------------------------------------===//
#include "compiler/tune/Tuner.h"
#include "codegen/emit/Nvrtc.h"
#include "compiler/tune/NvrtcWorker.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

using namespace cuts::tune;

namespace {
Candidate candidate(std::string key, int group, int level) {
  Candidate c;
  c.key = key;
  c.name = "cuts_kernel";
  c.source = "extern \"C\" __global__ void cuts_kernel() {}";
  c.argBytes = {16};
  c.argOutput = {true};
  c.group = group;
  c.level = level;
  return c;
}
} // namespace

TEST_CASE("the tuner times level by level, each signature once, only what "
          "the cache lacks",
          "[tuner]") {
  // Two groups, as a compile lists them: group by group, best set first.
  std::vector<Candidate> all = {candidate("a0", 0, 0), candidate("a1", 0, 1),
                                candidate("a2", 0, 2), candidate("b0", 1, 0),
                                candidate("b1", 1, 1), candidate("a1", 2, 0),
                                candidate("c0", 2, 0)};
  Cache cache;
  cache.put("b1", {12.0, "measured before"});
  std::vector<std::string> keys;
  for (const Candidate *c : measureOrder(all, cache))
    keys.push_back(c->key);
  // Every group's level 0 first (a1 once, at its first listing's level),
  // then level 1, then 2; b1 is in the cache.
  CHECK(keys == std::vector<std::string>{"a0", "b0", "c0", "a1", "a2"});
}

TEST_CASE("candidate files keep each candidate's group and level", "[tuner]") {
  std::vector<Candidate> out = {candidate("k0", 3, 0), candidate("k1", 3, 5)};
  out[1].library = "cudnn.conv";
  out[1].libraryParams = {1, 2, 3};
  std::string arch, error;
  std::vector<Candidate> in;
  REQUIRE(candidatesFromJson(candidatesToJson(out, "sm_90"), in, arch, error));
  CHECK(arch == "sm_90");
  REQUIRE(in.size() == 2);
  CHECK(in[0].group == 3);
  CHECK(in[0].level == 0);
  CHECK(in[1].level == 5);
  CHECK(in[1].library == "cudnn.conv");
  CHECK(in[1].libraryParams == std::vector<int64_t>{1, 2, 3});
  CHECK(in[0].argZeroed.empty());
  // A split-K kernel's counters are zeroed before it is timed.
  out[0].argBytes = {16, 8, 4};
  out[0].argOutput = {true, true, true};
  out[0].argZeroed = {false, false, true};
  in.clear();
  REQUIRE(candidatesFromJson(candidatesToJson(out, "sm_90"), in, arch, error));
  CHECK(in[0].argZeroed == std::vector<bool>{false, false, true});
  out[0].argZeroed = {true};
  CHECK_FALSE(
      candidatesFromJson(candidatesToJson(out, "sm_90"), in, arch, error));
  // Files written before groups and levels existed read as one level.
  std::vector<Candidate> old;
  REQUIRE(candidatesFromJson(
      R"({"format": 1, "arch": "sm_80", "candidates": [{"key": "x",
          "name": "k", "source": "", "grid": 1, "block": 32,
          "sharedBytes": 0, "argBytes": [4], "argOutput": [1]}]})",
      old, arch, error));
  REQUIRE(old.size() == 1);
  CHECK(old[0].group == -1);
  CHECK(old[0].level == 0);
}

namespace {
const char *kWorkerSource = R"cuda(
extern "C" __global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] *= a;
}
)cuda";
} // namespace

TEST_CASE("NVRTC workers compile what the process would, and a dead one is "
          "reported",
          "[tuner]") {
  std::string error;
  REQUIRE(cuts::nvrtcAvailable()); // the tests build with the CUDA toolkit
  // The cuts executable serves --nvrtc-worker (CUTS_EXE: the built tool).
  std::unique_ptr<NvrtcWorker> w = NvrtcWorker::start(CUTS_EXE, error);
  INFO(error);
  REQUIRE(w);
  CHECK(w->alive());
  std::string e1, e2;
  cuts::NvrtcOptions no;
  no.sourceName = "scale.cu";
  std::optional<cuts::NvrtcResult> here =
      cuts::compileWithNvrtc(kWorkerSource, "sm_90", e1, no);
  std::optional<cuts::NvrtcResult> there =
      w->compile(kWorkerSource, "sm_90", e2, no);
  INFO(e1 << e2);
  REQUIRE(here);
  REQUIRE(there);
  CHECK(there->arch == "sm_90");
  CHECK(there->cubin == here->cubin);
  // The logs differ only in ptxas's "Compile time" line.
  CHECK(there->log.find("Compiling entry function 'scale' for 'sm_90'") !=
        std::string::npos);
  REQUIRE(there->kernels.size() == 1);
  CHECK(there->kernels[0].registers == here->kernels[0].registers);

  // A compile error comes back as compileWithNvrtc's, and the worker goes on.
  no.sourceName = "broken.cu";
  no.extraOptions = {"-DBROKEN=1"};
  CHECK_FALSE(w->compile("__global__ void k(float *x) { x[0] = BROKEN }\n",
                         "sm_90", e2, no));
  CHECK(e2.find("broken.cu(1): error") != std::string::npos);
  CHECK(w->alive());
  no = {};
  CHECK(w->compile(kWorkerSource, "sm_80", e2, no));

  // Killed: the next compile says so, and the worker is not reused.
  REQUIRE(::kill(w->pid(), SIGKILL) == 0);
  CHECK_FALSE(w->compile(kWorkerSource, "sm_90", e2, no));
  CHECK(e2.find("is gone") != std::string::npos);
  CHECK_FALSE(w->alive());

  // A broken request stream ends the worker with status 1, a clean end
  // of input with 0.
  for (auto [input, status] : {std::pair<std::string, int>{"", 0},
                               {"garbage", 1},
                               {std::string(8, '\xff'), 1}}) {
    std::string cmd = std::string("printf '%s' '") + input + "' | " + CUTS_EXE +
                      " --nvrtc-worker";
    int rc = std::system(cmd.c_str());
    CHECK(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == status);
  }

  // An executable that is not there: no worker, the reason named.
  CHECK_FALSE(NvrtcWorker::start("/nonexistent/cuts", error));
  CHECK(error.find("/nonexistent/cuts") != std::string::npos);
}

namespace {
// What a Progress of `total` steps, stepped through all of them, wrote.
std::string progressText(cuts::tune::ProgressMode mode, double quietSeconds,
                         size_t total) {
  std::FILE *f = std::tmpfile();
  REQUIRE(f);
  {
    cuts::tune::Progress p(mode, "NVRTC", total, quietSeconds, f);
    for (size_t i = 1; i <= total; ++i)
      p.step(i);
  }
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;)
    text += char(c);
  std::fclose(f);
  return text;
}
} // namespace

TEST_CASE("progress: plain lines every 10 % off a terminal, one rewritten "
          "line on it, nothing for short work",
          "[tuner]") {
  std::string lines = progressText(cuts::tune::ProgressMode::Lines, 0, 20);
  CHECK(std::count(lines.begin(), lines.end(), '\n') == 11);
  CHECK(lines.find("cuts: NVRTC: 2/20, ") == 0);
  CHECK(lines.find("cuts: NVRTC: 20/20 in ") != std::string::npos);
  CHECK(lines.find('\r') == std::string::npos);
  std::string term = progressText(cuts::tune::ProgressMode::Terminal, 0, 5);
  CHECK(std::count(term.begin(), term.end(), '\r') == 6);
  CHECK(std::count(term.begin(), term.end(), '\n') == 1);
  CHECK(progressText(cuts::tune::ProgressMode::Lines, 60, 20).empty());
  CHECK(progressText(cuts::tune::ProgressMode::Off, 0, 20).empty());
}

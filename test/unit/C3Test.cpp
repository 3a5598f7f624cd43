// ConCCL's C3 model (perfmodel/C3.h): the taxonomy's 15 % band, the share
// of the ideal speedup as the paper counts it, and the heuristic's
// predictions and choice on hand-computed cases.
#include "perfmodel/C3.h"

#include <catch2/catch.hpp>

using namespace cuts;

TEST_CASE("C3 taxonomy and the share of the ideal speedup", "[c3]") {
  CHECK(classifyC3(1.2, 1.0) == C3Type::GLong);
  CHECK(classifyC3(1.0, 1.2) == C3Type::CLong);
  CHECK(classifyC3(1.1, 1.0) == C3Type::GCEqual);
  CHECK(classifyC3(1.0, 1.1) == C3Type::GCEqual);
  CHECK(idealSpeedup(3, 1) == Approx(4.0 / 3));
  // The paper's average: 1.13x of an ideal 1.6x is about 21 %.
  const double g = 1.0, c = 0.6; // ideal (1.6) / 1 = 1.6x
  CHECK(percentOfIdeal(g, c, 1.6 / 1.13) == Approx(100 * 0.13 / 0.6));
  CHECK(percentOfIdeal(g, c, 1.6) == Approx(0.0));   // serial
  CHECK(percentOfIdeal(g, c, 1.0) == Approx(100.0)); // the shorter hidden
  CHECK(percentOfIdeal(g, c, 2.0) < 0);              // slower than serial
  // The GEMM's slowdown beside a collective, from the pair's time: 10 ms
  // and 2 ms alone, 11 together: f = 2 / (10 + 2 - 11).
  CHECK(gemmSlowdownBeside(10, 2, 11) == Approx(2.0));
  CHECK(gemmSlowdownBeside(10, 2, 9.5) == 1.0); // hidden entirely
  CHECK(gemmSlowdownBeside(10, 2, 12) == 10.0); // serial: capped
}

namespace {

C3Machine machine() {
  C3Machine m;
  m.sms = 100;
  m.peakFlops = 1e15, m.bandwidth = 4e12, m.copyEngineBandwidth = 1e12;
  m.efficiency = 1.0;   // round numbers below
  m.commSmsFirst = 200; // a grid wider than the GPU
  m.splits = {10, 20, 50};
  m.comm = {3.0, 1.5, 1.0};
  m.gemmBeside = {1.0, 1.2, 1.5};
  m.gemmBesideCe = 1.5;
  return m;
}

} // namespace

TEST_CASE("C3 predictions follow the roofline and the tables", "[c3]") {
  C3Machine m = machine();
  // A compute-bound GEMM of 1 ms (1e12 FLOP, 1 GB) beside 2 GB moved:
  // 0.5 ms on SMs, 2 ms on the copy engines.
  const C3Scenario s{1e12, 1e9, 2e9};
  CHECK(rooflineGemm(m, s) == Approx(1e-3));
  CHECK(rooflineComm(m, s) == Approx(0.5e-3));
  CHECK(rooflineCopyEngine(m, s) == Approx(2e-3));
  // Across GPUs the SM collective moves at its links' measured pace.
  C3Machine linked = m;
  linked.commBandwidth = 0.4e12;
  CHECK(rooflineComm(linked, s) == Approx(5e-3));
  auto at = [&](C3Strategy st, int k) { return predictC3(m, s, {st, k}); };
  CHECK(at(C3Strategy::Base, 0) == Approx(1.5e-3));
  // A grid on every SM first: the GEMM waits, as with base.
  CHECK(at(C3Strategy::Prioritised, 0) == Approx(1.5e-3));
  // 20 SMs to the collective: 0.75 ms there; the GEMM on 80 SMs takes
  // 1.25 ms, 1.25 * 1.2 beside it; after the collective ends, the rest of
  // the GEMM at 1.25 ms pace.
  const double gNow = 1.25e-3 * 1.2, cNow = 0.75e-3;
  CHECK(at(C3Strategy::Partitioned, 20) ==
        Approx(cNow + (1 - cNow / gNow) * 1.25e-3));
  // Copy engines: 2 ms; the GEMM (1.5 ms beside them) ends first, the
  // copies go on alone.
  CHECK(at(C3Strategy::CopyEngine, 0) ==
        Approx(1.5e-3 + (1 - 1.5 / 2.0) * 2e-3));
  // A grid that leaves SMs: the GEMM runs beside it on the rest.
  m.commSmsFirst = 20;
  CHECK(at(C3Strategy::Prioritised, 0) < at(C3Strategy::Base, 0));
  CHECK(c3Configs(m).size() == 2 + 3 + 1 + 2);
  // A memory-bound GEMM keeps its time on fewer SMs; their traffic
  // together bounds any overlap.
  const C3Scenario mem{1e10, 8e9, 4e8};
  CHECK(predictC3(m, mem, {C3Strategy::CopyEnginePartitioned, 10}) >=
        (8e9 + 4e8) / 4e12);
}

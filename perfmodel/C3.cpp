//===- C3.cpp - compute concurrent with communication (ConCCL) ------------===//
#include "perfmodel/C3.h"

#include <algorithm>

namespace cuts {

const char *c3TypeName(C3Type t) {
  switch (t) {
  case C3Type::GLong:
    return "G-long";
  case C3Type::CLong:
    return "C-long";
  case C3Type::GCEqual:
    return "GC-equal";
  }
  return "?";
}

C3Type classifyC3(double gemm, double comm) {
  if (gemm > 1.15 * comm)
    return C3Type::GLong;
  if (comm > 1.15 * gemm)
    return C3Type::CLong;
  return C3Type::GCEqual;
}

double idealSpeedup(double gemm, double comm) {
  return (gemm + comm) / std::max(gemm, comm);
}

double percentOfIdeal(double gemm, double comm, double concurrent) {
  const double ideal = idealSpeedup(gemm, comm);
  if (!(concurrent > 0) || !(ideal > 1))
    return 0;
  return 100.0 * ((gemm + comm) / concurrent - 1) / (ideal - 1);
}

std::string describeC3(const C3Config &c) {
  const std::string sms = "(" + std::to_string(c.commSms) + " SMs)";
  switch (c.strategy) {
  case C3Strategy::Base:
    return "c3_base";
  case C3Strategy::Prioritised:
    return "c3_sp";
  case C3Strategy::Partitioned:
    return "c3_rp" + sms;
  case C3Strategy::CopyEngine:
    return "conccl";
  case C3Strategy::CopyEnginePartitioned:
    return "conccl_rp" + sms;
  }
  return "?";
}

namespace {

/// The table's entry for `k` SMs (1 for none, or a count it lacks).
double slowdown(const C3Machine &m, const std::vector<double> &table, int k) {
  for (size_t i = 0; i < m.splits.size() && i < table.size(); ++i)
    if (m.splits[i] == k)
      return table[i];
  return 1.0;
}

/// Two kernels started together at times gNow and cNow each; the one left
/// over finishes at its rate once alone (gAfter, cAfter: its whole time
/// in what it then has).
double twoPhase(double gNow, double cNow, double gAfter, double cAfter) {
  if (cNow <= gNow)
    return cNow + (1 - cNow / gNow) * gAfter;
  return gNow + (1 - gNow / cNow) * cAfter;
}

/// The GEMM on all but `k` SMs: a compute-bound one at their share of the
/// FLOP rate, a memory-bound one at the same bandwidth.
double gemmOnFewer(const C3Machine &m, const C3Scenario &s, int k) {
  const double g = rooflineGemm(m, s);
  if (s.gemmFlops * m.bandwidth <= m.peakFlops * s.gemmBytes)
    return g;
  return k >= m.sms ? 1e30 : g * m.sms / (m.sms - k);
}

} // namespace

double gemmSlowdownBeside(double gemm, double comm, double both) {
  // both = comm + (1 - comm / (gemm * f)) * gemm, for f.
  const double left = gemm + comm - both;
  if (both <= gemm)
    return 1;
  return left * 10 <= comm ? 10 : std::max(1.0, comm / left);
}

double rooflineGemm(const C3Machine &m, const C3Scenario &s) {
  return std::max(s.gemmFlops / m.peakFlops, s.gemmBytes / m.bandwidth) /
         m.efficiency;
}

double rooflineComm(const C3Machine &m, const C3Scenario &s) {
  // Across GPUs the links set the pace, measured with the efficiency in it.
  if (m.commBandwidth > 0)
    return s.commBytes / m.commBandwidth;
  return s.commBytes / m.bandwidth / m.efficiency;
}

double rooflineCopyEngine(const C3Machine &m, const C3Scenario &s) {
  return s.commBytes / m.copyEngineBandwidth; // a measured rate already
}

double predictC3(const C3Machine &m, const C3Scenario &s, const C3Config &c) {
  const double g = rooflineGemm(m, s), comm = rooflineComm(m, s),
               ce = rooflineCopyEngine(m, s);
  double t = 0;
  switch (c.strategy) {
  case C3Strategy::Base: // the GEMM's blocks hold every SM first
    t = g + comm;
    break;
  case C3Strategy::Prioritised: { // then the GEMM gets the SMs back
    const double gNow = gemmOnFewer(m, s, m.commSmsFirst);
    t = gNow >= 1e30
            ? g + comm
            : twoPhase(gNow * slowdown(m, m.gemmBeside, m.commSmsFirst), comm,
                       g, comm);
    break;
  }
  case C3Strategy::Partitioned: {
    const double gLess = gemmOnFewer(m, s, c.commSms),
                 cFew = comm * slowdown(m, m.comm, c.commSms);
    t = twoPhase(gLess * slowdown(m, m.gemmBeside, c.commSms), cFew, gLess,
                 cFew);
    break;
  }
  case C3Strategy::CopyEngine:
    t = twoPhase(g * m.gemmBesideCe, ce, g, ce);
    break;
  case C3Strategy::CopyEnginePartitioned: {
    const double gLess = gemmOnFewer(m, s, c.commSms);
    t = twoPhase(gLess * m.gemmBesideCe, ce, gLess, ce);
    break;
  }
  }
  // Both share the memory: no faster than their traffic together.
  return std::max(t,
                  (s.gemmBytes + s.commBytes) / (m.bandwidth * m.efficiency));
}

std::vector<C3Config> c3Configs(const C3Machine &m, size_t ceSplits) {
  std::vector<C3Config> all = {{C3Strategy::Base, 0},
                               {C3Strategy::Prioritised, 0}};
  for (int k : m.splits)
    all.push_back({C3Strategy::Partitioned, k});
  all.push_back({C3Strategy::CopyEngine, 0});
  for (size_t i = 0; i < m.splits.size() && i < ceSplits; ++i)
    all.push_back({C3Strategy::CopyEnginePartitioned, m.splits[i]});
  return all;
}

C3Config chooseC3(const C3Machine &m, const C3Scenario &s) {
  std::vector<C3Config> all = c3Configs(m);
  return *std::min_element(all.begin(), all.end(),
                           [&](const C3Config &a, const C3Config &b) {
                             return predictC3(m, s, a) < predictC3(m, s, b);
                           });
}

} // namespace cuts

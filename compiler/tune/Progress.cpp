//===- Progress.cpp - what a long compile or tuning is doing --------------===//
#include "compiler/tune/Progress.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace cuts::tune {
namespace {

// Plain lines come this often (or at each further 10 % of the steps).
constexpr double kLineSeconds = 10;

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

} // namespace

ProgressMode stderrProgress() {
  return isatty(2) ? ProgressMode::Terminal : ProgressMode::Lines;
}

Progress::Progress(ProgressMode mode, std::string phase, size_t total,
                   double quietSeconds, std::FILE *out)
    : mode(mode), phase(std::move(phase)), total(total),
      quietSeconds(quietSeconds), out(out), start(Clock::now()),
      lastLine(start) {}

Progress::~Progress() {
  std::lock_guard<std::mutex> g(lock);
  if (shown)
    print(done, /*last=*/true);
}

void Progress::step(size_t now) {
  if (mode == ProgressMode::Off)
    return;
  std::lock_guard<std::mutex> g(lock);
  done = std::max(done, now);
  double t = since(start);
  if (t < quietSeconds)
    return;
  bool due = mode == ProgressMode::Terminal
                 ? true
                 : since(lastLine) >= kLineSeconds ||
                       (total && (done - lastDone) * 10 >= total);
  if (due)
    print(done, /*last=*/false);
}

void Progress::print(size_t now, bool last) {
  double t = since(start);
  double eta = now ? t / double(now) * double(total - std::min(now, total)) : 0;
  char text[256];
  if (last)
    std::snprintf(text, sizeof text, "cuts: %s: %zu/%zu in %.0f s",
                  phase.c_str(), now, total, t);
  else
    std::snprintf(text, sizeof text, "cuts: %s: %zu/%zu, %.0f s, ETA %.0f s",
                  phase.c_str(), now, total, t, eta);
  if (mode == ProgressMode::Terminal)
    std::fprintf(out, "\r%s   %s", text, last ? "\n" : "");
  else
    std::fprintf(out, "%s\n", text);
  std::fflush(out);
  shown = true;
  lastDone = now;
  lastLine = Clock::now();
}

} // namespace cuts::tune

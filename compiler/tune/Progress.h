//===- Progress.h - what a long compile or tuning is doing ----*- C++ -*-===//
//
// One phase of work (search, codegen, NVRTC, measuring) with a count of
// steps, reported on stderr once it has run for a while: on a terminal one
// line rewritten in place with the ETA, elsewhere (logs, CI) a plain line
// every 10 % of the steps or 10 s, and one when it ends. Short phases say
// nothing.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_TUNE_PROGRESS_H
#define CUTS_COMPILER_TUNE_PROGRESS_H

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

namespace cuts::tune {

enum class ProgressMode { Off, Lines, Terminal };

/// Terminal when stderr is one, else Lines.
ProgressMode stderrProgress();

class Progress {
public:
  /// Says nothing for the first `quietSeconds`; writes to `out`.
  Progress(ProgressMode mode, std::string phase, size_t total,
           double quietSeconds = 2, std::FILE *out = stderr);
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  /// `done` of the phase's steps are done (from any thread).
  void step(size_t done);

private:
  void print(size_t done, bool last);

  using Clock = std::chrono::steady_clock;
  ProgressMode mode;
  std::string phase;
  size_t total, done = 0, lastDone = 0;
  double quietSeconds;
  std::FILE *out;
  Clock::time_point start, lastLine;
  bool shown = false;
  std::mutex lock;
};

} // namespace cuts::tune

#endif // CUTS_COMPILER_TUNE_PROGRESS_H

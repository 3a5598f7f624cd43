//===- NvrtcWorker.h - NVRTC in child processes -----------------*- C++ -*-===//
//
// The tuner compiles hundreds of candidates with NVRTC while the GPU times
// those already built. On a 16-core H200 host, 16 threads of one process
// compiled no faster than 8, while 16 processes compiled 1.34x faster:
// NVRTC contends with itself inside a process (scripts/nvrtc_scaling.py
// measures it). So each compile thread hands its sources to a
// child process of its own, the same executable started with
// --nvrtc-worker, over a socket pair.
//
// Protocol (both ways, little-endian as the host): a request is the source,
// the arch, the source name and the extra options, each string a u64 length
// and its bytes (the options preceded by their u64 count); a reply is a u8
// (1: compiled), the CUBIN, NVRTC's log and the error. The parent parses
// the ptxas report from the log, as compileWithNvrtc does.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_TUNE_NVRTCWORKER_H
#define CUTS_COMPILER_TUNE_NVRTCWORKER_H

#include "codegen/emit/Nvrtc.h"

#include <memory>
#include <optional>
#include <string>

namespace cuts::tune {

/// The command-line argument that makes a cuts executable a worker.
inline constexpr const char *kNvrtcWorkerArg = "--nvrtc-worker";

class NvrtcWorker {
public:
  /// Starts `exe --nvrtc-worker`; null (and `error`) if it cannot.
  static std::unique_ptr<NvrtcWorker> start(const std::string &exe,
                                            std::string &error);
  /// Ends the child (it exits at end of input) and reaps it.
  ~NvrtcWorker();
  NvrtcWorker(const NvrtcWorker &) = delete;
  NvrtcWorker &operator=(const NvrtcWorker &) = delete;

  /// compileWithNvrtc in the child. A compile error comes back as from
  /// compileWithNvrtc; if the child is gone (crashed, killed) the result is
  /// empty, `error` says so and alive() turns false, so the caller can
  /// compile in its own process instead.
  std::optional<NvrtcResult> compile(const std::string &source,
                                     const std::string &arch,
                                     std::string &error,
                                     const NvrtcOptions &options = {});
  bool alive() const { return fd >= 0; }
  int pid() const { return child; }

private:
  NvrtcWorker(int child, int fd) : child(child), fd(fd) {}
  void stop();
  int child;
  int fd;
};

/// The worker's side: requests on stdin, replies on stdout, until the end
/// of input (exit 0) or a broken stream (exit 1).
int nvrtcWorkerMain();

/// This process's executable ("" where /proc/self/exe cannot be read).
std::string selfExecutable();

/// The worker executable the cuts tools tune with: this one, unless the
/// environment sets CUTS_NVRTC_IN_PROCESS=1 ("": compile in threads, as
/// before the workers, to compare the two or to rule the workers out).
std::string nvrtcWorkerExecutable();

} // namespace cuts::tune

#endif // CUTS_COMPILER_TUNE_NVRTCWORKER_H

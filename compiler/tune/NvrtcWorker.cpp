//===- NvrtcWorker.cpp - NVRTC in child processes -------------------------===//
#include "compiler/tune/NvrtcWorker.h"

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace cuts::tune {
namespace {

// Whole reads and writes; false at end of input or on an error. The parent
// writes with MSG_NOSIGNAL: a dead child must not kill it with SIGPIPE.
bool writeAll(int fd, const void *data, size_t n, bool socket) {
  const char *p = static_cast<const char *>(data);
  while (n > 0) {
    ssize_t w = socket ? ::send(fd, p, n, MSG_NOSIGNAL) : ::write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// 1: read all n bytes; 0: the end of input before the first; -1: an error
// or the end of input part way (a broken stream).
int readOrEnd(int fd, void *data, size_t n) {
  char *p = static_cast<char *>(data);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r == 0 && got == 0 ? 0 : -1;
    got += size_t(r);
  }
  return 1;
}

bool readAll(int fd, void *data, size_t n) {
  return n == 0 || readOrEnd(fd, data, n) == 1;
}

bool writeString(int fd, const std::string &s, bool socket) {
  uint64_t n = s.size();
  return writeAll(fd, &n, sizeof n, socket) &&
         writeAll(fd, s.data(), s.size(), socket);
}

bool readString(int fd, std::string &s) {
  uint64_t n = 0;
  if (!readAll(fd, &n, sizeof n) || n > (uint64_t(1) << 30)) // 1 GiB: corrupt
    return false;
  s.resize(size_t(n));
  return readAll(fd, s.data(), s.size());
}

} // namespace

std::string selfExecutable() {
  std::vector<char> buf(4096);
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), size_t(n)) : std::string();
}

std::string nvrtcWorkerExecutable() {
  const char *v = std::getenv("CUTS_NVRTC_IN_PROCESS");
  return v && std::string(v) == "1" ? std::string() : selfExecutable();
}

std::unique_ptr<NvrtcWorker> NvrtcWorker::start(const std::string &exe,
                                                std::string &error) {
  int fds[2];
  // Close-on-exec: a child keeps only its own end (dup2 clears the flag), so
  // the end of the parent's input is the end of its child's.
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    error = std::string("NVRTC worker: socketpair: ") + std::strerror(errno);
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  std::string arg = kNvrtcWorkerArg;
  char *argv[] = {const_cast<char *>(exe.c_str()), arg.data(), nullptr};
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    error = "NVRTC worker: cannot start " + exe + ": " + std::strerror(rc);
    return nullptr;
  }
  return std::unique_ptr<NvrtcWorker>(new NvrtcWorker(int(pid), fds[0]));
}

NvrtcWorker::~NvrtcWorker() { stop(); }

void NvrtcWorker::stop() {
  if (fd >= 0) {
    ::close(fd); // the child reads the end of its input and exits
    fd = -1;
  }
  if (child <= 0)
    return;
  // A child in the middle of a compile finishes it first; one that hangs
  // is killed.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (::waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  child = -1;
}

std::optional<NvrtcResult> NvrtcWorker::compile(const std::string &source,
                                                const std::string &arch,
                                                std::string &error,
                                                const NvrtcOptions &options) {
  if (fd < 0) {
    error = "NVRTC worker: not running";
    return std::nullopt;
  }
  bool ok = writeString(fd, source, true) && writeString(fd, arch, true) &&
            writeString(fd, options.sourceName, true);
  uint64_t count = options.extraOptions.size();
  ok = ok && writeAll(fd, &count, sizeof count, true);
  for (const std::string &o : options.extraOptions)
    ok = ok && writeString(fd, o, true);
  uint8_t compiled = 0;
  std::string cubin, log, why;
  ok = ok && readAll(fd, &compiled, 1) && readString(fd, cubin) &&
       readString(fd, log) && readString(fd, why);
  if (!ok) {
    int pid = child;
    stop();
    error = "NVRTC worker " + std::to_string(pid) + " (" + kNvrtcWorkerArg +
            ") is gone";
    return std::nullopt;
  }
  if (!compiled) {
    error = why;
    return std::nullopt;
  }
  NvrtcResult r;
  r.arch = arch;
  r.cubin.assign(cubin.begin(), cubin.end());
  r.log = log;
  r.kernels = parsePtxasReport(log);
  return r;
}

int nvrtcWorkerMain() {
  for (;;) {
    std::string source, arch;
    NvrtcOptions options;
    uint64_t count = 0;
    uint64_t n = 0;
    int got = readOrEnd(0, &n, sizeof n);
    if (got == 0)
      return 0; // the end of input: the parent is done
    if (got < 0 || n > (uint64_t(1) << 30))
      return 1;
    source.resize(size_t(n));
    if (!readAll(0, source.data(), source.size()))
      return 1;
    if (!readString(0, arch) || !readString(0, options.sourceName) ||
        !readAll(0, &count, sizeof count) || count > 4096)
      return 1;
    options.extraOptions.resize(size_t(count));
    for (std::string &o : options.extraOptions)
      if (!readString(0, o))
        return 1;
    std::string error;
    std::optional<NvrtcResult> r =
        compileWithNvrtc(source, arch, error, options);
    uint8_t compiled = r ? 1 : 0;
    std::string cubin = r ? std::string(r->cubin.begin(), r->cubin.end()) : "";
    if (!writeAll(1, &compiled, 1, false) || !writeString(1, cubin, false) ||
        !writeString(1, r ? r->log : "", false) ||
        !writeString(1, error, false))
      return 1;
  }
}

} // namespace cuts::tune

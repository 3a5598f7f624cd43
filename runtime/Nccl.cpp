//===- Nccl.cpp - NCCL, loaded with dlopen --------------------------------===//
//
// The few entry points the runtime calls, with NCCL's C types as their ABI
// has them: a communicator is a pointer, results and data types are ints
// (nccl.h: ncclSuccess 0, ncclUint8 1), streams are cudaStream_t (CUstream).
//
//===----------------------------------------------------------------------===//
#include "cuts/rt/Nccl.h"

#include "DynamicLibrary.h"

#include <algorithm>
#include <mutex>

namespace cuts::rt {
namespace {

using Comm = struct ncclComm *;
constexpr int kUint8 = 1;

struct Api {
  const char *(*ncclGetErrorString)(int);
  int (*ncclCommInitAll)(Comm *, int, const int *);
  int (*ncclCommDestroy)(Comm);
  int (*ncclGroupStart)();
  int (*ncclGroupEnd)();
  int (*ncclBroadcast)(const void *, void *, size_t, int, int, Comm, void *);
};

struct Loaded {
  Api api{};
  std::string error; // empty when usable
};

const Loaded &loaded() {
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] {
    DynamicLibrary lib; // never closed, like cuDNN
    std::string tried;
    if (!lib.open({"libnccl.so.2"}, tried)) {
      l.error = "cannot load NCCL (" + tried +
                "); install NCCL 2 or put its lib folder in "
                "LD_LIBRARY_PATH";
      return;
    }
    Api &a = l.api;
    lib.bind(a.ncclGetErrorString, {"ncclGetErrorString"});
    lib.bind(a.ncclCommInitAll, {"ncclCommInitAll"});
    lib.bind(a.ncclCommDestroy, {"ncclCommDestroy"});
    lib.bind(a.ncclGroupStart, {"ncclGroupStart"});
    lib.bind(a.ncclGroupEnd, {"ncclGroupEnd"});
    lib.bind(a.ncclBroadcast, {"ncclBroadcast"});
    if (!lib.missing().empty())
      l.error = "NCCL (libnccl.so.2) lacks " + lib.missing();
  });
  return l;
}

} // namespace

bool ncclBroadcastAll(const std::vector<int> &devices,
                      const std::vector<void *> &buffers, size_t bytes,
                      const std::vector<void *> &streams,
                      const std::function<bool(std::string &)> &wait,
                      std::string &error) {
  const Loaded &l = loaded();
  if (!l.error.empty()) {
    error = l.error;
    return false;
  }
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    error = "NCCL takes one rank a device, and the device list repeats one";
    return false;
  }
  const Api &a = l.api;
  auto failed = [&](int r, const char *what) {
    error = std::string(what) + " failed: " + a.ncclGetErrorString(r);
    return false;
  };
  std::vector<Comm> comms(devices.size(), nullptr);
  if (int r =
          a.ncclCommInitAll(comms.data(), int(devices.size()), devices.data()))
    return failed(r, "ncclCommInitAll");
  int r = a.ncclGroupStart();
  for (size_t i = 0; r == 0 && i < devices.size(); ++i)
    r = a.ncclBroadcast(buffers[0], buffers[i], bytes, kUint8, 0, comms[i],
                        streams[i]);
  const int end = a.ncclGroupEnd();
  std::string why;
  const bool done = (r || end) ? false : wait(why);
  for (Comm c : comms)
    a.ncclCommDestroy(c);
  if (r || end)
    return failed(r ? r : end, "ncclBroadcast");
  if (!done)
    error = why;
  return done;
}

} // namespace cuts::rt

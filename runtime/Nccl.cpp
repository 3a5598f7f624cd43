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
#include <cstdint>
#include <mutex>

namespace cuts::rt {
namespace {

using Comm = struct ncclComm *;
// nccl.h's ncclDataType_t and ncclRedOp_t values.
constexpr int kUint8 = 1, kFloat16 = 6, kFloat32 = 7, kBfloat16 = 9;
constexpr int kSum = 0;

struct Api {
  const char *(*ncclGetErrorString)(int);
  int (*ncclCommInitAll)(Comm *, int, const int *);
  int (*ncclCommDestroy)(Comm);
  int (*ncclGroupStart)();
  int (*ncclGroupEnd)();
  int (*ncclBroadcast)(const void *, void *, size_t, int, int, Comm, void *);
  int (*ncclAllGather)(const void *, void *, size_t, int, Comm, void *);
  int (*ncclReduceScatter)(const void *, void *, size_t, int, int, Comm,
                           void *);
  int (*ncclAllReduce)(const void *, void *, size_t, int, int, Comm, void *);
  int (*ncclSend)(const void *, size_t, int, int, Comm, void *);
  int (*ncclRecv)(void *, size_t, int, int, Comm, void *);
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
    lib.bind(a.ncclAllGather, {"ncclAllGather"});
    lib.bind(a.ncclReduceScatter, {"ncclReduceScatter"});
    lib.bind(a.ncclAllReduce, {"ncclAllReduce"});
    lib.bind(a.ncclSend, {"ncclSend"});
    lib.bind(a.ncclRecv, {"ncclRecv"});
    if (!lib.missing().empty())
      l.error = "NCCL (libnccl.so.2) lacks " + lib.missing();
  });
  return l;
}

/// NCCL's entry points where it loaded and `devices` (one rank each) has
/// no device twice; else null and `error` says why.
const Api *usable(const std::vector<int> &devices, std::string &error) {
  const Loaded &l = loaded();
  if (!l.error.empty()) {
    error = l.error;
    return nullptr;
  }
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    error = "NCCL takes one rank a device, and the device list repeats one";
    return nullptr;
  }
  return &l.api;
}

} // namespace

bool ncclBroadcastAll(const std::vector<int> &devices,
                      const std::vector<void *> &buffers, size_t bytes,
                      const std::vector<void *> &streams,
                      const std::function<bool(std::string &)> &wait,
                      std::string &error) {
  const Api *api = usable(devices, error);
  if (!api)
    return false;
  const Api &a = *api;
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

NcclComms::~NcclComms() {
  for (void *c : comms)
    loaded().api.ncclCommDestroy(static_cast<Comm>(c));
}

bool NcclComms::init(const std::vector<int> &devices, std::string &error) {
  const Api *api = usable(devices, error);
  if (!api)
    return false;
  std::vector<Comm> c(devices.size(), nullptr);
  if (int r = api->ncclCommInitAll(c.data(), int(c.size()), devices.data())) {
    error =
        std::string("ncclCommInitAll failed: ") + api->ncclGetErrorString(r);
    return false;
  }
  comms.assign(c.begin(), c.end());
  return true;
}

namespace {

int ncclType(const std::string &dtype) {
  return dtype == "f16" ? kFloat16 : dtype == "bf16" ? kBfloat16 : kFloat32;
}

} // namespace

bool NcclComms::allReduce(const std::vector<void *> &data, size_t count,
                          const std::string &dtype,
                          const std::vector<void *> &streams,
                          std::string &error) {
  const Api &a = loaded().api;
  int r = a.ncclGroupStart();
  for (size_t i = 0; r == 0 && i < comms.size(); ++i)
    r = a.ncclAllReduce(data[i], data[i], count, ncclType(dtype), kSum,
                        static_cast<Comm>(comms[i]), streams[i]);
  const int end = a.ncclGroupEnd();
  if (r || end) {
    error = std::string("NCCL all-reduce failed: ") +
            a.ncclGetErrorString(r ? r : end);
    return false;
  }
  return true;
}

bool NcclComms::run(Collective c, uint64_t chunk,
                    const std::vector<void *> &send,
                    const std::vector<void *> &recv,
                    const std::vector<void *> &streams,
                    const std::string &dtype, std::string &error) {
  const Api &a = loaded().api;
  const int n = int(comms.size());
  const int type = ncclType(dtype);
  const size_t width = type == kFloat32 ? 4 : 2;
  int r = a.ncclGroupStart();
  for (int i = 0; r == 0 && i < n; ++i) {
    Comm comm = static_cast<Comm>(comms[size_t(i)]);
    if (c == Collective::AllGather) {
      r = a.ncclAllGather(send[size_t(i)], recv[size_t(i)], chunk, kUint8, comm,
                          streams[size_t(i)]);
    } else if (c == Collective::ReduceScatter) {
      r = a.ncclReduceScatter(send[size_t(i)], recv[size_t(i)], chunk / width,
                              type, kSum, comm, streams[size_t(i)]);
    } else { // all-to-all: a send and a receive with every rank
      for (int p = 0; r == 0 && p < n; ++p) {
        auto *s = static_cast<uint8_t *>(send[size_t(i)]) + uint64_t(p) * chunk;
        auto *d = static_cast<uint8_t *>(recv[size_t(i)]) + uint64_t(p) * chunk;
        r = a.ncclSend(s, chunk, kUint8, p, comm, streams[size_t(i)]);
        if (r == 0)
          r = a.ncclRecv(d, chunk, kUint8, p, comm, streams[size_t(i)]);
      }
    }
  }
  const int end = a.ncclGroupEnd();
  if (r || end) {
    error = std::string("NCCL ") + collectiveName(c) +
            " failed: " + a.ncclGetErrorString(r ? r : end);
    return false;
  }
  return true;
}

} // namespace cuts::rt

//===- Nccl.h - NCCL, loaded with dlopen ------------------------*- C++ -*-===//
//
// NCCL is the collectives engine the runtime falls back to and compares
// against (weights broadcast at load; the tensor-parallel collectives).
// Like cuDNN it is opened on first use (libnccl.so.2), so neither the build
// nor a server needs it; where it is missing the callers say so and the
// other paths remain.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_NCCL_H
#define CUTS_RUNTIME_NCCL_H

#include "cuts/rt/Collectives.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace cuts::rt {

/// Broadcasts `bytes` from buffers[0] (device memory of devices[0]) into
/// every buffers[i] (of devices[i], distinct CUDA ordinals), with one NCCL
/// communicator per device made for the call (ncclCommInitAll) on each
/// device's `streams[i]` (a CUstream; null: the legacy stream); `wait`
/// waits for those streams before the communicators go (false and its
/// message where it fails). On failure false, and `error` says why (NCCL
/// missing, a repeated device, NCCL's own error).
bool ncclBroadcastAll(const std::vector<int> &devices,
                      const std::vector<void *> &buffers, size_t bytes,
                      const std::vector<void *> &streams,
                      const std::function<bool(std::string &)> &wait,
                      std::string &error);

/// NCCL communicators over distinct devices, one rank each, made once for
/// many collectives (the comparison to CopyEngineComm).
class NcclComms {
public:
  NcclComms() = default;
  ~NcclComms();
  NcclComms(const NcclComms &) = delete;
  NcclComms &operator=(const NcclComms &) = delete;

  /// ncclCommInitAll over `devices`; false and `error` where NCCL is
  /// missing, a device repeats, or NCCL fails.
  bool init(const std::vector<int> &devices, std::string &error);
  /// `c` among the ranks as one NCCL group, rank i on streams[i] (a
  /// CUstream), with CopyEngineComm's buffer sizes, except that
  /// reduce-scatter writes its summed chunk (of `dtype` values: "f32",
  /// "f16", "bf16") to recv[i] directly.
  bool run(Collective c, uint64_t chunk, const std::vector<void *> &send,
           const std::vector<void *> &recv, const std::vector<void *> &streams,
           const std::string &dtype, std::string &error);

  /// The ranks' sum of `count` values of `dtype` ("f32", "f16", "bf16")
  /// in place in data[i], rank i on streams[i], as one NCCL group.
  bool allReduce(const std::vector<void *> &data, size_t count,
                 const std::string &dtype, const std::vector<void *> &streams,
                 std::string &error);

private:
  std::vector<void *> comms;
};

} // namespace cuts::rt

#endif // CUTS_RUNTIME_NCCL_H

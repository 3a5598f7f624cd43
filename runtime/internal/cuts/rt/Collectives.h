//===- Collectives.h - copy-engine collectives over a device list -*- C++
//-*-===//
//
// ConCCL's collectives (its §V): all-gather, all-to-all and reduce-scatter
// among the ranks of a device list as the direct algorithm's peer copies,
// each one copy-engine transfer issued from the CPU, so that no kernel of
// the collective takes SMs from a concurrent GEMM. The copy plan (which
// bytes go where) is a pure function the CPU harness checks; CopyEngineComm
// runs it, each rank pushing its chunks with one stream per destination so
// that its transfers use several copy engines at once. Reduce-scatter's
// copies are all-to-all's; the sum of the received chunks is a kernel
// (codegen/emit/Collective.h), in rank order so that every rank's result
// is the same.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_COLLECTIVES_H
#define CUTS_RUNTIME_COLLECTIVES_H

#include "cuts/cuts.h"
#include "cuts/rt/CudaDriver.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cuts::rt {

enum class Collective { AllGather, AllToAll, ReduceScatter };

/// "all-gather", "all-to-all", "reduce-scatter".
const char *collectiveName(Collective c);

/// Each rank's buffers, in bytes, for `chunk` bytes a rank and destination:
/// all-gather sends one chunk and receives `ranks`; all-to-all and
/// reduce-scatter send `ranks` (chunk d for rank d) and receive `ranks`
/// (chunk s from rank s).
uint64_t sendBytes(Collective c, int ranks, uint64_t chunk);
uint64_t recvBytes(Collective c, int ranks, uint64_t chunk);

/// One transfer: `bytes` from rank src's send buffer at srcOffset to rank
/// dst's receive buffer at dstOffset (src == dst: a local copy).
struct PeerCopy {
  int src = 0, dst = 0;
  uint64_t srcOffset = 0, dstOffset = 0, bytes = 0;
};

/// The direct algorithm's copies of `c`: every rank sends each destination
/// its chunk in one transfer, itself included, ordered by source then by
/// destination starting from the source's right-hand neighbour (so that,
/// issued in order, no destination receives from everyone at once).
std::vector<PeerCopy> copyPlan(Collective c, int ranks, uint64_t chunk);

/// An all-reduce of `elems` values of `elemBytes` each, in place on every
/// rank: reduce-scatter, then all-gather. Rank c owns chunk c (`count[c]`
/// values from `begin[c]`; the last chunks may be short or empty). Each
/// rank copies its chunk c into rank c's scratch at slot src (`scatter`,
/// the scratch holding `ranks` slots of count[c] values back to back),
/// rank c sums its slots in rank order into its own chunk c, and `gather`
/// copies that sum into every other rank's chunk c. Offsets are in bytes:
/// scatter's from the data to the scratch, gather's from data to data.
struct AllReducePlan {
  std::vector<uint64_t> begin, count; // per chunk, in values
  std::vector<PeerCopy> scatter, gather;
  uint64_t elemBytes = 0;
  uint64_t scratchBytes = 0; // a rank's scratch: the largest chunk's slots
};
AllReducePlan allReducePlan(int ranks, uint64_t elems, uint64_t elemBytes);

/// Lets each context of `ctx` (primary contexts, one a GPU) read and write
/// the others' memory, where the driver allows (already enabled, no link
/// or past its peer limit: left as is); the current context is kept.
/// Without it peer copies between GPUs are staged through the host (38
/// GB/s between two NVLinked H200s instead of about 380). It applies to the
/// process's primary contexts as a whole.
void enablePeerAccess(const cuda::Driver *d,
                      const std::vector<cuda::CUcontext> &ctx);

/// Runs copy plans on a device list: rank e's contexts are ctx[e] (a
/// device may repeat). Made once, used for many collectives; not for two
/// threads at once.
class CopyEngineComm {
public:
  CopyEngineComm(const cuda::Driver *d, std::vector<cuda::CUcontext> ctx);
  ~CopyEngineComm();
  CopyEngineComm(const CopyEngineComm &) = delete;
  CopyEngineComm &operator=(const CopyEngineComm &) = delete;

  /// The copy streams (one per source and destination, on the source's
  /// context; `priority` as cuStreamCreateWithPriority takes it) and events.
  cuts_status init(int priority = 0);
  int ranks() const { return int(ctx.size()); }

  /// `c` after the work enqueued on each rank's streams[e]; streams[e] then
  /// waits for every copy into rank e. send[e]/recv[e]: rank e's buffers
  /// (sendBytes/recvBytes of `chunk`).
  cuts_status run(Collective c, uint64_t chunk,
                  const std::vector<cuda::CUdeviceptr> &send,
                  const std::vector<cuda::CUdeviceptr> &recv,
                  const std::vector<cuda::CUstream> &streams);

  /// `plan` in place on data[e] (its scratch[e] at least scratchBytes),
  /// after the work enqueued on each streams[e], which then waits for the
  /// result. `reduce[e]` is rank e's cuts_reduce_chunks kernel of the
  /// values' type (codegen/emit/Collective.h).
  cuts_status allReduce(const AllReducePlan &plan,
                        const std::vector<cuda::CUdeviceptr> &data,
                        const std::vector<cuda::CUdeviceptr> &scratch,
                        const std::vector<cuda::CUstream> &streams,
                        const std::vector<cuda::CUfunction> &reduce);

private:
  cuts_status record(std::vector<cuda::CUevent> &events,
                     const std::vector<cuda::CUstream> &streams);
  cuts_status copyAll(const std::vector<PeerCopy> &copies,
                      const std::vector<cuda::CUdeviceptr> &from,
                      const std::vector<cuda::CUdeviceptr> &to,
                      const char *what);
  cuts_status waitCopies(const std::vector<PeerCopy> &copies,
                         const std::vector<cuda::CUstream> &streams);
  const cuda::Driver *d;
  std::vector<cuda::CUcontext> ctx;
  std::vector<std::vector<cuda::CUstream>> copy; // [src][dst]
  std::vector<cuda::CUevent> ready;              // [rank]: its stream's turn
  std::vector<std::vector<cuda::CUevent>> done;  // [src][dst]
};

} // namespace cuts::rt

#endif // CUTS_RUNTIME_COLLECTIVES_H

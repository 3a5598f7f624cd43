//===- Session.h - what the runtime's translation units share ---*- C++ -*-===//
//
// Private to runtime/: the loaded model (ModelImpl, one per device-list
// entry), the session (cuts_session) and the error helpers of the C API.
// Runtime.cpp loads and runs; DataParallel.cpp splits host runs across a
// device list and pipelines them.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_SESSION_H
#define CUTS_RUNTIME_SESSION_H

#include "cuts/Artifact.h"
#include "cuts/cuts.h"
#include "cuts/rt/Blas.h"
#include "cuts/rt/Collectives.h"
#include "cuts/rt/CudaDriver.h"
#include "cuts/rt/Library.h"
#include "cuts/rt/Nccl.h"
#include "cuts/rt/Offload.h"
#include "cuts/rt/WeightCodec.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <vector>

namespace cuts::rt {

using cuda::CU_EVENT_DEFAULT;
using cuda::CUcontext;
using cuda::CUdevice;
using cuda::CUdeviceptr;
using cuda::CUevent;
using cuda::CUfunction;
using cuda::CUgraph;
using cuda::CUgraphExec;
using cuda::CUmodule;
using cuda::CUresult;
using cuda::CUstream;
using cuda::Driver;

/// The message of the calling thread's last failure (cuts_last_error).
extern thread_local std::string lastError;
cuts_status fail(cuts_status s, std::string msg);
cuts_status cudaFail(CUresult r, const std::string &what);

/// Runs an API body with the thread's error cleared, turning exceptions
/// (which must not cross the C boundary) into statuses.
template <typename F> cuts_status guarded(F &&body) {
  lastError.clear();
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(CUTS_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    return fail(CUTS_ERROR_INVALID_ARGUMENT,
                std::string("internal error: ") + e.what());
  }
}

inline double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

/// Device memory freed with it, in the context it was allocated in.
struct DeviceBytes {
  const Driver *d = nullptr;
  CUcontext ctx = nullptr;
  CUdeviceptr ptr = 0;
  DeviceBytes() = default;
  DeviceBytes(const DeviceBytes &) = delete;
  DeviceBytes &operator=(const DeviceBytes &) = delete;
  ~DeviceBytes() { release(); }
  void release() {
    if (ptr) {
      d->cuCtxSetCurrent(ctx);
      d->cuMemFree(ptr);
    }
    ptr = 0;
  }
  /// `bytes` (at least 4) in `context`, made current; `what` names them in
  /// the error.
  cuts_status alloc(const Driver *driver, CUcontext context, uint64_t bytes,
                    const std::string &what) {
    release();
    d = driver, ctx = context;
    if (CUresult r = d->cuCtxSetCurrent(ctx))
      return cudaFail(r, "cuCtxSetCurrent");
    if (CUresult r = d->cuMemAlloc(&ptr, std::max<uint64_t>(bytes, 4))) {
      ptr = 0;
      return cudaFail(r, "allocating " + what + " (" + std::to_string(bytes) +
                             " bytes, cuMemAlloc)");
    }
    return CUTS_OK;
  }
};

/// A set of weights on one device, freed with the last model or session
/// that holds it: a hot swap (cuts_model_swap_weights) replaces the
/// model's, and each session takes the new set at its next run.
struct DeviceWeights : DeviceBytes {
  // How the set got here (cuts_movement): milliseconds, of them the
  // codec's, and the bytes sent from the first entry.
  double ms = 0, codecMs = 0;
  uint64_t sentBytes = 0;
};

/// One plan of the model (a batch profile's, or the only one), loaded.
struct PlanImpl {
  const Manifest *man = nullptr; // in ModelImpl::artifact
  MemoryPlan plan;
  std::vector<int> root;             // rootTensor per tensor
  std::vector<CUfunction> functions; // per kernel; null for library kernels
  // Per kernel: the cuDNN convolution of a "cudnn.conv" kernel, else null.
  std::vector<std::unique_ptr<CudnnConv>> convs;
  // Per kernel: the cuBLASLt product of a "cublaslt.gemm" kernel, else
  // null; one handle serves every session (cuBLASLt handles are
  // thread-safe and carry no stream).
  std::vector<std::unique_ptr<CublasLtGemm>> gemms;
  size_t maxArgs = 0;
  bool hasSide = false;       // steps on the side stream (cuSync pairs)
  std::vector<bool> recorded; // per step: a later step waits for it
  uint64_t stateBase = 0;     // its state in a session's state buffer
  // Weights streamed from storage: the steps in chunks (Offload.h).
  std::vector<StreamChunk> chunks;

  const Manifest &manifest() const { return *man; }
  int64_t batch() const { return man->batch; }
};

struct ModelImpl {
  const Driver *d = nullptr;
  Artifact artifact; // its bytes are dropped once loaded
  std::string arch;
  CUdevice device = 0;
  CUcontext ctx = nullptr; // retained primary context
  std::vector<CUmodule> modules;
  std::unique_ptr<CublasLtHandle> lt;
  bool hasConv = false;
  bool hasLibrary = false; // any library kernel
  // The current weights (std::atomic_load/store: a swap replaces them),
  // and the lock, shared by every entry of the device list, under which a
  // swap installs all entries' sets and a run picks its entries' sets, so
  // that no run mixes old and new.
  std::shared_ptr<DeviceWeights> weights;
  std::shared_ptr<std::shared_mutex> publishing;
  uint64_t weightBytes = 0;
  bool pdl = false; // the device and driver launch programmatic dependents
  // The artifact's weight codecs, loaded where the weights travel encoded
  // (cuts_load_options.weight_codec), and the ranges they encode.
  struct {
    CUfunction compress = nullptr, decompress = nullptr, truncate = nullptr,
               expand = nullptr;
  } codecs;
  CodecRanges codecRanges;
  // Weights streamed from storage (weight_budget > 0): the artifact file
  // they are read from, a slot's and a staging buffer's bytes.
  uint64_t weightBudget = 0, stageBytes = 0, slot = 0;
  bool pipelineStage = false; // part of the plan and its weights
  uint64_t slotBytes() const { return slot; } // two: what `resident` leaves
  // Weights several chunks read (a tied embedding), on the device for good
  // rather than read twice a run: by offset in the weights section, where
  // each lies in `resident`.
  std::map<uint64_t, uint64_t> residentAt;
  DeviceBytes resident;
  std::string weightsPath;
  int weightsFd = -1;      // opened at load, shared by sessions (pread)
  uint64_t weightsEnd = 0; // where the weights section ends in the file
  // A tensor-parallel rank's all-reduce sums: f32, f16, bf16.
  CUfunction reduce[3] = {};
  /// The plans loaded, by increasing batch: every batch profile up to the
  /// smallest that serves max_batch, or the only plan.
  std::vector<PlanImpl> plans;
  std::vector<int64_t> batches; // the plans' (0: the one plan has none)
  int64_t maxBatch = 0; // the largest batch a run may bind (0: no profiles)
  // What every plan's session needs: the largest arena and the sum of
  // their states, scratch for the most tensors and arguments.
  uint64_t arenaBytes = 0, stateBytes = 0;
  size_t maxTensors = 0, maxArgs = 0;
  bool hasSide = false;
  // The I/O as the largest plan has it (cuts_model_input/output).
  std::vector<cuts_tensor_info> inputs, outputs;

  const PlanImpl &largest() const { return plans.back(); }
  const Manifest &manifest() const { return largest().manifest(); }

  ModelImpl() = default;
  ModelImpl(const ModelImpl &) = delete;
  ModelImpl &operator=(const ModelImpl &) = delete;
  ~ModelImpl() {
    closeWeightsFile();
    if (!ctx)
      return;
    d->cuCtxSetCurrent(ctx);
    plans.clear(); // their convs' zero biases live in the context
    lt.reset();
    for (CUmodule mod : modules)
      d->cuModuleUnload(mod);
    weights.reset(); // sessions hold the model: none holds these now
    d->cuDevicePrimaryCtxRelease(device);
  }
  void closeWeightsFile(); // Offload.cpp
};

inline cuts_status enter(const ModelImpl &m) {
  if (CUresult r = m.d->cuCtxSetCurrent(m.ctx))
    return cudaFail(r, "cuCtxSetCurrent");
  return CUTS_OK;
}

/// CUDA events destroyed with the set.
struct Events {
  const Driver *d;
  std::vector<CUevent> ev;
  Events(const Driver *d, size_t n) : d(d), ev(n, nullptr) {}
  Events(const Events &) = delete;
  Events &operator=(const Events &) = delete;
  ~Events() {
    for (CUevent e : ev)
      if (e)
        d->cuEventDestroy(e);
  }
  cuts_status create() {
    for (CUevent &e : ev)
      if (CUresult r = d->cuEventCreate(&e, CU_EVENT_DEFAULT)) {
        e = nullptr;
        return cudaFail(r, "cuEventCreate");
      }
    return CUTS_OK;
  }
};

/// An instantiated graph, destroyed with its owner.
struct GraphExec {
  const Driver *d;
  CUgraphExec exec = nullptr;
  explicit GraphExec(const Driver *d) : d(d) {}
  GraphExec(const GraphExec &) = delete;
  GraphExec &operator=(const GraphExec &) = delete;
  ~GraphExec() {
    if (exec)
      d->cuGraphExecDestroy(exec);
  }
};

/// One device-list entry's pipelined host runs (cuts_session_submit_host):
/// copy streams beside the session's, two sets of I/O buffers so that one
/// run's inputs arrive while the other computes (pre-loading), pinned
/// staging for callers' pageable memory, and the events that time each
/// phase of a run.
struct Lane {
  static constexpr int kSlots = 2; // buffer sets: the runs in flight
  // Event sets: a run's, and the one before it, valid until it is waited
  // for (a third submission waits for the oldest).
  static constexpr int kMarkSets = 4;
  enum Mark {
    H2dBegin,
    H2dEnd,
    PeerBegin,
    PeerEnd,
    ComputeBegin,
    ComputeEnd,
    GatherBegin,
    GatherEnd,
    D2hBegin,
    D2hEnd,
    kMarks
  };
  struct Slot {
    std::vector<CUdeviceptr> in, out;      // the largest plan's I/O
    std::vector<void *> stageIn, stageOut; // pinned, made on first need
    std::vector<size_t> stageInBytes, stageOutBytes;
  };
  const Driver *d = nullptr;
  CUcontext ctx = nullptr;
  CUstream in = nullptr, out = nullptr;
  Slot slots[kSlots];
  std::vector<CUevent> events; // kMarkSets * kMarks
  uint64_t lastTicket = 0;     // the last run enqueued here (0: none)
  cuts_movement totals{};

  CUevent mark(uint64_t ticket, Mark m) const {
    return events[size_t(ticket % kMarkSets) * kMarks + m];
  }
  Lane() = default;
  Lane(const Lane &) = delete;
  Lane &operator=(const Lane &) = delete;
  ~Lane();
};

/// A session's streamed weights: two device slots and two pinned staging
/// buffers that alternate by chunk, the copy stream, the file, and the
/// events ordering them (Offload.cpp).
struct WeightStream {
  const Driver *d = nullptr;
  CUcontext ctx = nullptr;
  DeviceBytes slot[2];
  void *stage[2] = {};
  CUstream copy = nullptr;
  CUevent copied[2] = {}, computed[2] = {}, side = nullptr;
  uint64_t readBytes = 0; // since the last cuts_session_reset_movement
  double readMs = 0;
  WeightStream() = default;
  WeightStream(const WeightStream &) = delete;
  WeightStream &operator=(const WeightStream &) = delete;
  ~WeightStream();
};

/// A host copy left for cuts_session_wait: outputs staged in pinned memory
/// go to the caller's.
struct HostCopy {
  void *to;
  const void *from;
  size_t bytes;
};

/// A submitted host run: what each entry's part of it took.
struct PendingRun {
  uint64_t ticket = 0;
  std::vector<bool> active;    // per entry: it has rows of this run
  std::vector<uint64_t> prior; // per entry: its lane's run before (0: none)
  std::vector<std::vector<HostCopy>> unstage; // per entry
  std::vector<double> stageMs;                // per entry: host staging
  bool master = false; // the master-GPU baseline (ran at submit)
};

} // namespace cuts::rt

struct cuts_session;
struct cuts_model;

namespace cuts::rt {

// WeightCodec.cpp's: the codecs' module on m's device, and the first
// entry's weights sent to every entry's w[e] encoded (peer copies or NCCL),
// each decoding them, the first too.
cuts_status loadCodecs(ModelImpl &m, const std::string &label);
cuts_status distributeEncoded(const std::vector<std::shared_ptr<ModelImpl>> &r,
                              const std::vector<DeviceWeights *> &w,
                              const std::vector<int> &devices, int source,
                              WeightCodec codec);

// Runtime.cpp's: `bytes` from the first entry's ptrs[0] to every other's
// ptrs[e] by peer copies or one NCCL broadcast (`source`), each entry's
// time in ms[e]; for WeightCodec.cpp too.
cuts_status sendFromFirst(const std::vector<std::shared_ptr<ModelImpl>> &r,
                          const std::vector<CUdeviceptr> &ptrs,
                          const std::vector<int> &devices, int source,
                          uint64_t bytes, std::vector<double> &ms,
                          const std::string &what);
cuts_status checkSession(const cuts_session *s);
cuts_status bindAll(const ModelImpl &m, const cuts_binding *inputs,
                    int numInputs, const cuts_binding *outputs, int numOutputs,
                    int64_t &batch, std::vector<void *> &in,
                    std::vector<void *> &out);
cuts_status allocIo(const ModelImpl &m, int64_t batch,
                    std::vector<CUdeviceptr> &in,
                    std::vector<CUdeviceptr> &out);
cuts_status ensureUserBuffers(cuts_session &s, int64_t batch);
cuts_status runDevice(cuts_session &s, const std::vector<CUdeviceptr> &in,
                      const std::vector<CUdeviceptr> &out);
cuts_status runAt(cuts_session &s, int64_t batch, const std::vector<void *> &in,
                  const std::vector<void *> &out);
void resolve(cuts_session &s, const std::vector<CUdeviceptr> &in,
             const std::vector<CUdeviceptr> &out);
cuts_status adoptWeights(cuts_session &s);
/// The artifact section `section`'s CUBIN loaded on m's device (unloaded
/// with the model) and `kernels` looked up in it; `what` names it.
cuts_status loadSectionKernels(
    ModelImpl &m, const std::string &section, const std::string &what,
    const std::vector<std::pair<CUfunction *, const char *>> &kernels);
/// Step i on its stream; `pdl` false keeps it from launching as a
/// programmatic dependent (after work the host put between two kernels).
cuts_status runStep(cuts_session &s, size_t i, bool pdl = true);
cuts_status ensureBuffers(cuts_session &s);

// TensorParallel.cpp's: rank `rank`'s plan made the artifact's manifest
// (a tensor-parallel model on a device list of `entries`), its weights
// packed into `weights`; its all-reduce kernels on m's device; one run
// of every rank from the first entry's device bindings.
cuts_status takeRank(Artifact &a, int rank, size_t entries,
                     const std::string &label, std::vector<uint8_t> &weights);
cuts_status loadReduceKernels(ModelImpl &m, const std::string &label);

// Offload.cpp's: every plan's chunks under m.weightBudget; one run with
// the weights streamed chunk by chunk from m.weightsPath.
cuts_status planStreaming(ModelImpl &m, const std::string &label);
cuts_status enqueueStreamed(cuts_session &s, const std::vector<CUdeviceptr> &in,
                            const std::vector<CUdeviceptr> &out);
cuts_status runTensorParallel(cuts_session &s,
                              const std::vector<CUdeviceptr> &in,
                              const std::vector<CUdeviceptr> &out);
/// The same from host inputs to host outputs, finished on return.
cuts_status runTensorParallelHost(cuts_session &s,
                                  const std::vector<void *> &in,
                                  const std::vector<void *> &out);
inline bool tensorParallel(const ModelImpl &m) {
  return m.manifest().ranks > 1;
}

} // namespace cuts::rt

struct cuts_model {
  std::shared_ptr<cuts::rt::ModelImpl> impl; // replicas[0]
  /// Data parallel (cuts_load_options.devices): the model on each device
  /// of the list, and the share of a batch each takes.
  std::vector<std::shared_ptr<cuts::rt::ModelImpl>> replicas;
  std::vector<double> shares;
  bool masterGpu = false; // cuts_load_options.master_gpu
  // Hot swaps distribute the new weights as the load did.
  std::vector<int> devices;
  int weightSource = 0;
  cuts::rt::WeightCodec weightCodec = cuts::rt::WeightCodec::None;
  std::mutex swapping;
};

struct cuts_session {
  std::shared_ptr<cuts::rt::ModelImpl> model;
  std::shared_ptr<cuts::rt::DeviceWeights> weights; // those its runs use
  // The set its next run adopts, chosen with the other entries' (null: the
  // model's current).
  std::shared_ptr<cuts::rt::DeviceWeights> target;
  /// Data parallel: the sessions of the other entries of the device list,
  /// and every entry's share of a batch.
  std::vector<std::unique_ptr<cuts_session>> replicas;
  std::vector<double> shares;
  bool masterGpu = false;
  // Pipelined host runs: this entry's lane (made on the first), the runs
  // in flight (on the first entry's session), the next ticket, pre-loading.
  std::unique_ptr<cuts::rt::Lane> lane;
  std::deque<cuts::rt::PendingRun> pending;
  uint64_t nextTicket = 1;
  uint64_t failedTicket = 0; // a run whose wait failed, to report again
  std::string failedError;
  bool preload = true;
  // The master-GPU baseline's whole batch on the first device.
  std::vector<cuts::rt::CUdeviceptr> wholeIn, wholeOut;
  const cuts::rt::PlanImpl *plan =
      nullptr;              // the plan the run under way enqueues
  int64_t batch = 0;        // the last run's batch
  int64_t profileBatch = 0; // the batch of the plan that ran it
  cuts::rt::CUstream stream = nullptr;
  bool ownStream = false;
  cuts::rt::CUdeviceptr arena = 0;
  // cuSync: the side stream, per plan an event per step another waits for,
  // and the state (semaphores, epoch) that only this session's runs count
  // in.
  cuts::rt::CUstream side = nullptr;
  std::vector<std::vector<cuts::rt::CUevent>> stepEvent;
  // The wait kernel step runStep skipped last: its consumer runs over PDL.
  size_t skippedHold = SIZE_MAX;
  cuts::rt::CUdeviceptr state = 0;
  bool useGraph = false;
  // Inside capture(): library steps run their library call, not their
  // generated alternative (Step::hostKernel).
  bool capturing = false;
  // Per plan: its graphs by what they were captured for (the bindings, a
  // padded run's batch), the least recently used dropped past kMaxGraphs.
  struct Graph {
    std::vector<cuts::rt::CUdeviceptr> key;
    cuts::rt::CUgraphExec exec = nullptr;
    uint64_t used = 0;
  };
  std::vector<std::vector<Graph>> graphs;
  uint64_t runs = 0;
  // Device buffers as the largest plan's inputs and outputs, for run_host,
  // the padded runs of a smaller batch, benchmark and profile, made on
  // first use; and benchmark's inputs and outputs at a padded batch.
  bool haveBuffers = false;
  std::vector<cuts::rt::CUdeviceptr> bufIn, bufOut, userIn, userOut;
  int64_t userBatch = 0;  // the batch userIn/userOut are sized for
  int64_t benchBatch = 0; // cuts_session_set_batch's (0: the largest plan's)
  // Host values of inputs that are not filled by a 32-bit memset.
  std::vector<std::vector<uint8_t>> fill;
  // Scratch reused by every run.
  std::vector<cuts::rt::CUdeviceptr> ptr; // per tensor
  std::vector<cuts::rt::CUdeviceptr> argValues;
  std::vector<void *> argPointers;
  // Library kernels: this session's cuDNN handle (on `stream`) and the
  // workspace every library call shares (steps run one after another).
  std::unique_ptr<cuts::rt::CudnnHandle> cudnn;
  cuts::rt::CUdeviceptr workspace = 0;
  uint64_t workspaceBytes = 0;
  // Graph capture of a run: each library step of each plan its own region
  // of graphWorkspace (stepWorkspace[plan][step]: offset and bytes; bytes
  // 0 where the step calls no library), so that a memset of it may run at
  // the graph's start (hoistWorkspaceMemsets). Its bytes are 0 where the
  // regions together would pass kMaxGraphWorkspace: the shared one serves.
  // ownRegions: the capture in progress uses them.
  cuts::rt::CUdeviceptr graphWorkspace = 0;
  uint64_t graphWorkspaceBytes = 0;
  bool ownRegions = false;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> stepWorkspace;
  // Tensor parallel: the copy engines over the ranks (the first entry's),
  // this rank's all-reduce scratch, and an event that joins its streams
  // to another's.
  std::unique_ptr<cuts::rt::WeightStream> streamed; // weight_budget runs
  std::unique_ptr<cuts::rt::CopyEngineComm> comm;
  // NCCL over the ranks, for the all-reduces the compiler gave it, where
  // the devices are distinct and NCCL loads (null: copy engines for all).
  std::unique_ptr<cuts::rt::NcclComms> nccl;
  cuts::rt::DeviceBytes reduceScratch;
  cuts::rt::CUevent joined = nullptr;

  cuts_session() = default;
  cuts_session(const cuts_session &) = delete;
  cuts_session &operator=(const cuts_session &) = delete;
  ~cuts_session() {
    if (!model)
      return;
    const cuts::rt::Driver *d = model->d;
    d->cuCtxSetCurrent(model->ctx);
    lane.reset(); // its copies touch the buffers below
    d->cuCtxSetCurrent(model->ctx);
    // Nothing may be freed under work still in flight.
    if (stream)
      d->cuStreamSynchronize(stream);
    if (side)
      d->cuStreamSynchronize(side);
    for (const std::vector<Graph> &plan : graphs)
      for (const Graph &g : plan)
        if (g.exec)
          d->cuGraphExecDestroy(g.exec);
    cudnn.reset(); // before its stream goes
    if (workspace)
      d->cuMemFree(workspace);
    if (graphWorkspace)
      d->cuMemFree(graphWorkspace);
    for (const std::vector<cuts::rt::CUdeviceptr> *bufs :
         {&bufIn, &bufOut, &userIn, &userOut, &wholeIn, &wholeOut})
      for (cuts::rt::CUdeviceptr p : *bufs)
        if (p)
          d->cuMemFree(p);
    if (arena)
      d->cuMemFree(arena);
    if (state)
      d->cuMemFree(state);
    for (const std::vector<cuts::rt::CUevent> &events : stepEvent)
      for (cuts::rt::CUevent e : events)
        if (e)
          d->cuEventDestroy(e);
    if (joined)
      d->cuEventDestroy(joined);
    if (side)
      d->cuStreamDestroy(side);
    if (ownStream && stream)
      d->cuStreamDestroy(stream);
  }
};

#endif // CUTS_RUNTIME_SESSION_H

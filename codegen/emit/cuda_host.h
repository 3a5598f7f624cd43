//===- cuda_host.h - Run CUDA kernel source on the host ---------*- C++ -*-===//
//
// Included before a CUDA kernel's source and compiled by an ordinary C++17
// host compiler (g++ -std=c++17 -pthread), this header makes the kernel run
// on the CPU. The point is that the CPU runs the very source NVRTC compiles
// for the GPU, not a re-emission of it, so a test that passes here tests the
// GPU kernel's indexing, guards and barriers.
//
// cuts_host::launch(kernel, grid, block, args...) runs the grid's blocks one
// after another and, inside a block, every CUDA thread as a fiber on the
// launching thread (x86-64; see "Fibers" below) or, with
// CUTS_HOST_THREADS=os or on other CPUs, on its own std::thread (started
// once per launch and reused for every block), with real barriers:
// __syncthreads is a counting barrier over the block, the warp intrinsics
// (__shfl_*_sync, __ballot_sync, __syncwarp) exchange values through a
// per-warp buffer between two barriers over the warp's lanes. A missing
// barrier is therefore a real race and can change the result instead of
// being hidden: fibers run in an adversarial order (deterministic); OS
// threads interleave by timing, so a race may go unnoticed on one run
// (see CodegenEmitTest.cpp).
//
// Supported:
//  - __global__, __device__, __host__, __forceinline__, __noinline__,
//    __launch_bounds__(...), __align__(n), __constant__ (a plain global),
//    __restrict__ (already a GCC/Clang keyword).
//  - __shared__ variables (static, see below). Dynamic shared memory is
//    cuts_host::dynamicShared<T>() sized by launchWithShared; HostCompile
//    rewrites `extern __shared__ T name[];` into it (no macro can: see
//    HostCompile.cpp). The dynamic buffer is filled with 0xFF bytes (NaN for
//    floats) before each block so reads of unwritten shared memory show.
//  - threadIdx, blockIdx, blockDim, gridDim, warpSize; dim3, uint3, float2,
//    float4, int2, int4, uint2, uint4, double2 and their make_* functions.
//  - __syncthreads, __syncwarp, __threadfence(_block), __shfl_sync,
//    __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync (values up to 8
//    bytes), __ballot_sync, __any_sync, __all_sync, atomicAdd/Sub/Exch/Min/
//    Max/CAS (integers; atomicAdd and atomicExch also float, atomicAdd double),
//    atomicInc (unsigned),
//    __ldg, __ldcg, __stwb, clock64 (nanoseconds, not cycles), __nanosleep
//    (see the spin timeout below), printf.
//  - min/max, <math.h> (expf, erff, tanhf, sqrtf, fminf, ...), rsqrtf, the
//    fast intrinsics (__expf, __logf, __fdividef, ...: exact versions here),
//    __popc, __clz, __ffs, __umulhi, __float_as_int and friends.
//
// Not supported (compile errors or documented differences):
//  - cuda_fp16.h's half types, wmma and inline PTX: compile errors. The
//    generator's reduced-precision and tensor-core functions (TensorCore.h)
//    are defined below with the PTX instructions' semantics.
//  - Warp intrinsics with a mask that leaves out a lane still running: every
//    lane of the warp that has not returned must take part (the barrier
//    counts live lanes). Such code deadlocks here and the barrier reports a
//    timeout. A source lane that has returned yields the caller's own value.
//  - __syncthreads_count/and/or, cooperative groups, dynamic parallelism,
//    texture/surface objects, cudaMemcpyToSymbol for __constant__.
//  - A thread that returns no longer counts at __syncthreads (as on Volta
//    and later in practice); threads waiting at different __syncthreads
//    calls in the same phase are reported as an error.
//  - Misaligned vector loads and out-of-bounds accesses do not fault (a
//    program built with -fsanitize=address can pass the same flag to
//    HostCompile to catch the latter).
//  - Static __shared__ memory keeps its contents from the previous block
//    (the GPU's would be undefined); only dynamic shared memory is poisoned.
//  - One launch at a time per loaded module (launches serialise).
//
// Barrier timeout (OS threads): CUTS_HOST_BARRIER_TIMEOUT_MS (default 10000)
// bounds each wait; a barrier that times out is broken (all later waits
// return at once) and the launch reports the error. Fibers see a deadlock
// at once and report it the same way. A thread stuck in an endless loop
// still hangs the launch.
//
// The module is meant to be compiled with -fvisibility=hidden (HostCompile
// does) so that two loaded kernels, or a kernel and a program that includes
// this header too, never share the inline globals below.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_CUDA_HOST_H
#define CUTS_CODEGEN_EMIT_CUDA_HOST_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(__HIPCC__)
#error "cuda_host.h is for host compilers: GPU builds take the kernel alone"
#endif
#if __cplusplus < 201703L
#error "cuda_host.h needs C++17 (inline variables, if constexpr)"
#endif

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <math.h>
#if defined(__x86_64__)
#include <sys/mman.h>
#endif
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#define CUTS_HOST_EXECUTION 1

//===----------------------------------------------------------------------===//
// Qualifiers
//===----------------------------------------------------------------------===//

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__
// Blocks run one at a time, so a variable shared by every thread of the
// process is shared by exactly the threads of the running block: a static.
// (A function-local static in a template kernel is per instantiation, as
// __shared__ is on the GPU.)
#define __shared__ static

//===----------------------------------------------------------------------===//
// Vector and index types
//===----------------------------------------------------------------------===//

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {}
};
struct __attribute__((aligned(8))) float2 {
  float x, y;
};
struct __attribute__((aligned(16))) float4 {
  float x, y, z, w;
};
struct __attribute__((aligned(8))) int2 {
  int x, y;
};
struct __attribute__((aligned(16))) int4 {
  int x, y, z, w;
};
struct __attribute__((aligned(8))) uint2 {
  unsigned x, y;
};
struct __attribute__((aligned(16))) uint4 {
  unsigned x, y, z, w;
};
struct __attribute__((aligned(16))) double2 {
  double x, y;
};

inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return {x, y, z, w};
}
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) {
  return {x, y, z};
}
inline double2 make_double2(double x, double y) { return {x, y}; }

// Each CUDA thread is a std::thread, so its index is thread-local. The
// block's index and the launch's dimensions are the same for every thread
// that runs at a time (blocks run one after another), so they are plain
// globals set by the launcher between blocks.
inline thread_local uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;
constexpr int warpSize = 32;

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

// CUDA overloads min/max for every pair of arithmetic types with the usual
// conversions (min(int, unsigned) is unsigned); floats use fmin/fmax, which
// return the other operand when one is NaN, like the GPU.
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value &&
                                   std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> min(A a, B b) {
  using T = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point<T>::value)
    return fmin(T(a), T(b));
  else
    return T(b) < T(a) ? T(b) : T(a);
}
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value &&
                                   std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> max(A a, B b) {
  using T = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point<T>::value)
    return fmax(T(a), T(b));
  else
    return T(a) < T(b) ? T(b) : T(a);
}

// The GPU's fast approximations are computed exactly here: a kernel whose
// result depends on their error is wrong on one of the two anyway.
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline float __saturatef(float x) {
  return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; // NaN -> 0 as on the GPU
}

template <class To, class From> inline To cutsHostBitCast(From v) {
  static_assert(sizeof(To) == sizeof(From), "bit cast between sizes");
  To t;
  std::memcpy(&t, &v, sizeof t);
  return t;
}
inline float __int_as_float(int v) { return cutsHostBitCast<float>(v); }
inline float __uint_as_float(unsigned v) { return cutsHostBitCast<float>(v); }
inline int __float_as_int(float v) { return cutsHostBitCast<int>(v); }
inline unsigned __float_as_uint(float v) {
  return cutsHostBitCast<unsigned>(v);
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(int v) { return v ? __builtin_clz(unsigned(v)) : 32; }
inline int __clzll(long long v) {
  return v ? __builtin_clzll((unsigned long long)v) : 64;
}
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return unsigned((unsigned long long)a * b >> 32);
}
inline int __mulhi(int a, int b) { return int((long long)a * b >> 32); }

template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline T __ldcg(const T *p) { return *p; }
template <class T> inline void __stwb(T *p, T v) { *p = v; }

inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// A spin-wait sleeps between polls (cuSync's waits). A thread that has
// slept CUTS_HOST_SPIN_TIMEOUT_MS (default 10000) in one block waits for a
// flag nothing sets (a missing post): the launch reports it.
inline thread_local long long spinSleptNs = 0;
inline void __nanosleep(unsigned ns) {
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
  spinSleptNs += std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
  static const long long limit = [] {
    const char *v = std::getenv("CUTS_HOST_SPIN_TIMEOUT_MS");
    return (v ? std::atoll(v) : 10000) * 1000000LL;
  }();
  if (spinSleptNs > limit)
    throw std::runtime_error("a spin-wait (__nanosleep loop) slept " +
                             std::to_string(spinSleptNs / 1000000) +
                             " ms: the flag it waits for is never set");
}

//===----------------------------------------------------------------------===//
// Atomics (GCC's __atomic builtins: lock-free for 4 and 8 bytes on x86-64)
//===----------------------------------------------------------------------===//

template <class T>
using CutsHostAtomicInt =
    std::enable_if_t<std::is_integral<T>::value && sizeof(T) >= 4, T>;

template <class T> inline CutsHostAtomicInt<T> atomicAdd(T *p, T v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
template <class T> inline CutsHostAtomicInt<T> atomicSub(T *p, T v) {
  return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);
}
template <class T> inline CutsHostAtomicInt<T> atomicExch(T *p, T v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
template <class T> inline CutsHostAtomicInt<T> atomicCAS(T *p, T cmp, T v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  return cmp; // the old value whether or not the exchange happened
}
// Floating-point add and integer min/max: a compare-and-swap loop.
template <class T, class F> inline T cutsHostAtomicUpdate(T *p, F f) {
  T old;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  T desired;
  do
    desired = f(old);
  while (!__atomic_compare_exchange(p, &old, &desired, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED));
  return old;
}
inline float atomicAdd(float *p, float v) {
  return cutsHostAtomicUpdate(p, [v](float old) { return old + v; });
}
inline double atomicAdd(double *p, double v) {
  return cutsHostAtomicUpdate(p, [v](double old) { return old + v; });
}
inline float atomicExch(float *p, float v) {
  float old;
  __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
  return old;
}
// CUDA's wrapping increment: old >= v ? 0 : old + 1.
inline unsigned atomicInc(unsigned *p, unsigned v) {
  return cutsHostAtomicUpdate(
      p, [v](unsigned old) { return old >= v ? 0u : old + 1u; });
}
template <class T> inline CutsHostAtomicInt<T> atomicMin(T *p, T v) {
  return cutsHostAtomicUpdate(p, [v](T old) { return v < old ? v : old; });
}
template <class T> inline CutsHostAtomicInt<T> atomicMax(T *p, T v) {
  return cutsHostAtomicUpdate(p, [v](T old) { return old < v ? v : old; });
}

inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

//===----------------------------------------------------------------------===//
// The runtime: barriers, warps, blocks, launches
//===----------------------------------------------------------------------===//

namespace cuts_host {

struct LaunchResult {
  std::string error; // empty on success
  bool ok() const { return error.empty(); }
};

namespace detail {

// The launch's first error; later ones are usually consequences of it.
struct LaunchState {
  std::mutex launchMutex; // one launch at a time: statics are per module
  std::mutex errorMutex;
  std::string error;
  std::chrono::milliseconds barrierTimeout{10000};
  // Fibers: a block's CUDA threads run as fibers on the launching thread
  // (see runBlockOnFibers); otherwise as std::threads (Team).
  bool fibers = false;
  // Fiber mode: bumped by every arrival, release and return, so a round of
  // the scheduler without a change is a deadlock.
  unsigned long long progress = 0;
  unsigned char *dynamicShared = nullptr;
  size_t dynamicSharedBytes = 0;
};
inline LaunchState state;

inline void recordError(const std::string &message) {
  std::lock_guard<std::mutex> lock(state.errorMutex);
  if (state.error.empty())
    state.error = message;
}

inline std::string blockName() {
  return "block (" + std::to_string(blockIdx.x) + "," +
         std::to_string(blockIdx.y) + "," + std::to_string(blockIdx.z) + ")";
}

// A reusable barrier over the threads of a block or the lanes of a warp
// (mutex + condition variable + generation counter: C++17 has no
// std::barrier). A thread that returns from the kernel leaves, so the
// others are not kept waiting for it.
class Barrier {
public:
  void reset(unsigned participants, std::string what) {
    expected = participants;
    name = std::move(what);
  }

  // `site` tells apart the __syncthreads calls of the kernel (its line):
  // threads of one phase waiting at different calls is a kernel bug.
  void arriveAndWait(int site) {
    if (state.fibers) {
      arriveAndWaitFiber(site);
      return;
    }
    std::unique_lock<std::mutex> lock(mutex);
    if (broken)
      return;
    if (arrived == 0)
      phaseSite = site;
    else if (site != phaseSite)
      recordError(blockName() + ": threads wait at different " + name +
                  " calls (lines " + std::to_string(phaseSite) + " and " +
                  std::to_string(site) + ") at the same time");
    if (++arrived == expected) {
      releaseLocked();
      return;
    }
    unsigned long long generation = phase;
    if (!done.wait_for(lock, state.barrierTimeout,
                       [&] { return phase != generation || broken; })) {
      broken = true;
      recordError(blockName() + ": " + name + " timed out with " +
                  std::to_string(arrived) + " of " + std::to_string(expected) +
                  " threads arrived (the others wait at another barrier, "
                  "skipped it without returning, or loop forever)");
      done.notify_all();
    }
  }

  void leave() {
    std::unique_lock<std::mutex> lock(mutex, std::defer_lock);
    if (!state.fibers)
      lock.lock();
    --expected;
    if (arrived > 0 && arrived == expected)
      releaseLocked();
  }

  // Fiber mode: a deadlock found by the scheduler breaks every barrier of
  // the block (later waits return at once, as after a timeout).
  void breakFiber() { broken = true; }

private:
  void arriveAndWaitFiber(int site);

  void releaseLocked() {
    arrived = 0;
    ++phase;
    ++state.progress;
    if (!state.fibers)
      done.notify_all();
  }

  std::mutex mutex;
  std::condition_variable done;
  unsigned expected = 0, arrived = 0;
  unsigned long long phase = 0;
  int phaseSite = -1;
  bool broken = false;
  std::string name;
};

// A warp's exchange buffer. Every collective a lane executes bumps its own
// round; a slot is only read if its writer is in the same round, so a lane
// that has returned (and left a stale slot) is recognised.
struct Warp {
  struct Slot {
    unsigned long long bits = 0;
    unsigned long long round = 0;
  };
  Barrier barrier;
  unsigned lanes = 0; // < 32 for the last warp of an odd-sized block
  Slot slots[32];
};

struct Block {
  Barrier barrier;
  std::vector<std::unique_ptr<Warp>> warps;
  // Set when the block deadlocked: mbarrier waits return at once.
  std::atomic<bool> broken{false};
};

// Asynchronous work a thread issued and has not waited for, in commit
// groups (oldest first) and the open one; a wait runs all but the newest
// `keep` groups, the latest the GPU may complete them.
struct CommitGroups {
  std::deque<std::vector<std::function<void()>>> committed;
  std::vector<std::function<void()>> open;

  void commit() {
    committed.push_back(std::move(open));
    open.clear();
  }
  void retire(size_t keep) {
    while (committed.size() > keep) {
      for (const auto &run : committed.front())
        run();
      committed.pop_front();
    }
  }
  bool empty() const { return committed.empty() && open.empty(); }
  bool holdsWork() const {
    bool work = !open.empty();
    for (const auto &group : committed)
      work = work || !group.empty();
    return work;
  }
};

struct ThreadContext {
  Block *block = nullptr;
  Warp *warp = nullptr;
  unsigned lane = 0;
  unsigned long long round = 0; // collectives this lane has executed
  CommitGroups wgmma;           // products: run at cuts_wgmma_wait
  CommitGroups copies; // cp.async: land at the wait or mbarrier arrival
};
inline thread_local ThreadContext *current = nullptr;

inline ThreadContext &self() {
  if (!current) {
    std::fprintf(stderr,
                 "cuts_host: a device intrinsic ran outside a launch\n");
    std::abort();
  }
  return *current;
}

// Posts this lane's value, waits for the warp, calls read(slots, round),
// and waits again so that no lane overwrites its slot for the next
// collective while another still reads it.
template <class T, class Read> auto warpExchange(T value, Read read) {
  static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8,
                "warp intrinsics take values of at most 8 bytes");
  ThreadContext &t = self();
  Warp &w = *t.warp;
  unsigned long long round = ++t.round;
  std::memcpy(&w.slots[t.lane].bits, &value, sizeof(T));
  w.slots[t.lane].round = round;
  w.barrier.arriveAndWait(0);
  auto result = read(w.slots, round);
  w.barrier.arriveAndWait(0);
  return result;
}

template <class T> T shuffleFrom(T value, int srcLane) {
  return warpExchange(
      value, [&](const Warp::Slot *slots, unsigned long long round) {
        T out = value;
        if (srcLane >= 0 && srcLane < 32 && slots[srcLane].round == round)
          std::memcpy(&out, &slots[srcLane].bits, sizeof(T));
        return out;
      });
}

inline unsigned ballot(bool predicate) {
  return warpExchange(int(predicate),
                      [](const Warp::Slot *slots, unsigned long long round) {
                        unsigned mask = 0;
                        for (unsigned lane = 0; lane < 32; ++lane)
                          if (slots[lane].round == round && slots[lane].bits)
                            mask |= 1u << lane;
                        return mask;
                      });
}

inline unsigned activeMask() {
  return warpExchange(1, [](const Warp::Slot *slots, unsigned long long round) {
    unsigned mask = 0;
    for (unsigned lane = 0; lane < 32; ++lane)
      if (slots[lane].round == round)
        mask |= 1u << lane;
    return mask;
  });
}

using Invoke = void (*)(const void *closure);

inline void runThread(Block &block, unsigned tid, Invoke invoke,
                      const void *closure) {
  ThreadContext context;
  context.block = &block;
  context.warp = block.warps[tid / 32].get();
  context.lane = tid % 32;
  current = &context;
  spinSleptNs = 0;
  threadIdx = {tid % blockDim.x, tid / blockDim.x % blockDim.y,
               tid / (blockDim.x * blockDim.y)};
  try {
    invoke(closure);
  } catch (const std::exception &e) {
    recordError(blockName() + ": exception in the kernel: " + e.what());
  } catch (...) {
    recordError(blockName() + ": exception in the kernel");
  }
  if (!context.wgmma.empty())
    recordError(blockName() + ": thread " + std::to_string(tid) +
                " returned with wgmma products not waited for");
  if (context.copies.holdsWork()) // landing nowhere that is read: no wait
    recordError(blockName() + ": thread " + std::to_string(tid) +
                " returned with cp.async copies not waited for");
  context.warp->barrier.leave();
  block.barrier.leave();
  current = nullptr;
}

inline void resetBlock(Block &block, unsigned threads) {
  block.barrier.reset(threads, "__syncthreads");
  block.warps.clear();
  for (unsigned first = 0; first < threads; first += 32) {
    block.warps.push_back(std::make_unique<Warp>());
    Warp &w = *block.warps.back();
    w.lanes = threads - first < 32 ? threads - first : 32;
    w.barrier.reset(w.lanes, "warp " + std::to_string(first / 32) +
                                 " collective (__shfl/__ballot/__syncwarp)");
  }
}

// The block's CUDA threads: one std::thread each, started once per launch
// and reused for every block (starting them per block made whole-model
// emulation spend most of its time creating threads). Each block's threads
// still run concurrently, with real barriers.
class Team {
public:
  Team(unsigned threads, Invoke invoke, const void *closure)
      : threads(threads), invoke(invoke), closure(closure) {}

  bool start() {
    try {
      for (unsigned tid = 0; tid < threads; ++tid)
        pool.emplace_back([this, tid] { work(tid); });
    } catch (const std::exception &e) {
      recordError("cannot start " + std::to_string(threads) +
                  " threads: " + e.what());
      stop();
      return false;
    }
    return true;
  }

  /// Runs `block` (reset for this team) on every thread; returns when all
  /// have finished it.
  void run(Block &block) {
    std::unique_lock<std::mutex> lock(mutex);
    this->block = &block;
    finished = 0;
    ++generation;
    wake.notify_all();
    done.wait(lock, [&] { return finished == pool.size(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      wake.notify_all();
    }
    for (std::thread &t : pool)
      t.join();
    pool.clear();
  }

  ~Team() {
    if (!pool.empty())
      stop();
  }

private:
  void work(unsigned tid) {
    unsigned long long seen = 0;
    for (;;) {
      Block *b;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping)
          return;
        seen = generation;
        b = block;
      }
      runThread(*b, tid, invoke, closure);
      std::lock_guard<std::mutex> lock(mutex);
      if (++finished == pool.size())
        done.notify_one();
    }
  }

  unsigned threads;
  Invoke invoke;
  const void *closure;
  std::vector<std::thread> pool;
  std::mutex mutex;
  std::condition_variable wake, done;
  Block *block = nullptr;
  unsigned long long generation = 0;
  size_t finished = 0;
  bool stopping = false;
};

//===----------------------------------------------------------------------===//
// Fibers: a block's CUDA threads on the launching thread
//===----------------------------------------------------------------------===//
//
// Whole-model emulation spends nearly all its time in barriers when every
// CUDA thread is an OS thread (hundreds of threads on a few cores, futex
// round trips at every __syncthreads). As fibers, a barrier is a switch of
// stacks: each fiber runs until it waits or returns, then the next one runs;
// a barrier releases when its last participant arrives. The scheduler visits
// the fibers in reverse order on even rounds and in order on odd ones, so a
// value read without the barrier that should order it is, in the first
// phase, read before any other thread wrote it (shared memory is poisoned):
// races still show, deterministically. x86-64 only (a six-register switch);
// elsewhere, and with CUTS_HOST_THREADS=os, threads are std::threads.

#if defined(__x86_64__)
#define CUTS_HOST_HAS_FIBERS 1

// Saves the callee-saved registers on the current stack, stores its pointer
// in *from and resumes the stack `to` saved the same way.
__attribute__((naked, noinline)) inline void switchStack(void **from,
                                                         void *to) {
  asm("pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}

// A new fiber's first return lands here with its argument in r12 and its
// entry in rbx (see Fibers::prepare).
__attribute__((naked, noinline)) inline void fiberTrampoline() {
  asm("movq %r12, %rdi\n\t"
      "callq *%rbx\n\t"
      "ud2\n\t");
}

struct Fiber {
  void *sp = nullptr;
  bool finished = false;
  unsigned tid = 0;
  Block *block = nullptr;
  Invoke invoke = nullptr;
  const void *closure = nullptr;
  void *scheduler = nullptr; // the scheduler's saved stack
};

inline thread_local Fiber *runningFiber = nullptr;

inline void fiberYield() {
  Fiber *f = runningFiber;
  switchStack(&f->sp, f->scheduler);
}

inline void fiberMain(Fiber *f) {
  runThread(*f->block, f->tid, f->invoke, f->closure);
  f->finished = true;
  ++state.progress;
  for (;;) // never resumed again
    switchStack(&f->sp, f->scheduler);
}

// Stacks for a launch's fibers, each above a guard page, in one mapping.
class Fibers {
public:
  static constexpr size_t kStack = size_t(256) << 10;
  static constexpr size_t kGuard = 4096;

  bool allocate(unsigned threads) {
    bytes = size_t(threads) * (kStack + kGuard);
    void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      recordError("cannot map " + std::to_string(bytes >> 20) +
                  " MiB of fiber stacks");
      return false;
    }
    base = static_cast<unsigned char *>(m);
    for (unsigned t = 0; t < threads; ++t)
      mprotect(base + t * (kStack + kGuard), kGuard, PROT_NONE);
    fibers.resize(threads);
    return true;
  }

  ~Fibers() {
    if (base)
      munmap(base, bytes);
  }

  // Runs every CUDA thread of `block` to its end.
  void run(Block &block, Invoke invoke, const void *closure) {
    unsigned n = unsigned(fibers.size());
    for (unsigned t = 0; t < n; ++t) {
      Fiber &f = fibers[t];
      f = Fiber();
      f.tid = t, f.block = &block, f.invoke = invoke, f.closure = closure;
      prepare(f, base + t * (kStack + kGuard) + kGuard + kStack);
    }
    unsigned live = n;
    for (unsigned long long round = 0; live > 0; ++round) {
      unsigned long long before = state.progress;
      for (unsigned i = 0; i < n; ++i) {
        Fiber &f = fibers[round % 2 == 0 ? n - 1 - i : i];
        if (f.finished)
          continue;
        runningFiber = &f;
        switchStack(&f.scheduler, f.sp);
        runningFiber = nullptr;
        current = nullptr;
        if (f.finished)
          --live;
      }
      if (live > 0 && state.progress == before) {
        // Everyone left waits for someone who never comes.
        recordError(blockName() + ": deadlock: " + std::to_string(live) +
                    " thread(s) wait at a barrier the others never reach "
                    "(they wait at another barrier or returned without it)");
        block.barrier.breakFiber();
        for (auto &w : block.warps)
          w->barrier.breakFiber();
        block.broken = true;
      }
    }
  }

private:
  // The initial stack: six zeroed registers (r12 the fiber, rbx the entry)
  // popped by switchStack, whose ret enters the trampoline with the stack
  // 16-byte aligned as a call expects.
  static void prepare(Fiber &f, unsigned char *top) {
    auto *sp = reinterpret_cast<uint64_t *>(
        reinterpret_cast<uintptr_t>(top) / 16 * 16 - 72);
    sp[0] = 0;                                            // r15
    sp[1] = 0;                                            // r14
    sp[2] = 0;                                            // r13
    sp[3] = reinterpret_cast<uint64_t>(&f);               // r12
    sp[4] = reinterpret_cast<uint64_t>(&fiberMain);       // rbx
    sp[5] = 0;                                            // rbp
    sp[6] = reinterpret_cast<uint64_t>(&fiberTrampoline); // ret
    f.sp = sp;
  }

  unsigned char *base = nullptr;
  size_t bytes = 0;
  std::vector<Fiber> fibers;
};

inline void Barrier::arriveAndWaitFiber(int site) {
  if (broken)
    return;
  if (arrived == 0)
    phaseSite = site;
  else if (site != phaseSite)
    recordError(blockName() + ": threads wait at different " + name +
                " calls (lines " + std::to_string(phaseSite) + " and " +
                std::to_string(site) + ") at the same time");
  ++state.progress;
  if (++arrived == expected) {
    releaseLocked();
    return;
  }
  unsigned long long generation = phase;
  // Other fibers run in between and set the thread-locals to theirs.
  ThreadContext *self = current;
  uint3 index = threadIdx;
  while (phase == generation && !broken) {
    fiberYield();
    current = self;
    threadIdx = index;
  }
}
#else
inline void Barrier::arriveAndWaitFiber(int) {}
#endif

inline std::string checkShape(dim3 grid, dim3 block, size_t sharedBytes) {
  unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
    return "empty grid or block";
  if (threads > 1024 || block.z > 64)
    return "block of " + std::to_string(threads) +
           " threads exceeds CUDA's limits (1024, z <= 64)";
  if (grid.y > 65535 || grid.z > 65535)
    return "grid y/z exceeds CUDA's 65535";
  if (sharedBytes > 232448)
    return "dynamic shared memory above 227 KiB";
  return "";
}

inline LaunchResult runGrid(dim3 grid, dim3 block, size_t sharedBytes,
                            Invoke invoke, const void *closure) {
  std::lock_guard<std::mutex> launchLock(state.launchMutex);
  std::string shapeError = checkShape(grid, block, sharedBytes);
  if (!shapeError.empty())
    return {shapeError};
  state.error.clear();
  state.barrierTimeout = std::chrono::milliseconds(10000);
  if (const char *ms = std::getenv("CUTS_HOST_BARRIER_TIMEOUT_MS"))
    state.barrierTimeout = std::chrono::milliseconds(std::atoll(ms));

  // 1024-byte aligned like the GPU's shared window, so vector casts work
  // and wgmma's swizzles (address bits 4-6 ^= bits 7-9) match the GPU's.
  std::vector<unsigned char> sharedStorage(sharedBytes + 1024);
  unsigned char *sharedBase = sharedStorage.data();
  sharedBase += (1024 - reinterpret_cast<uintptr_t>(sharedBase) % 1024) % 1024;
  state.dynamicShared = sharedBytes ? sharedBase : nullptr;
  state.dynamicSharedBytes = sharedBytes;

  gridDim = grid;
  blockDim = block;
  unsigned threads = block.x * block.y * block.z;
  state.fibers = false;
#if defined(CUTS_HOST_HAS_FIBERS)
  // CUTS_HOST_BLOCK=x runs block (x,0,0) alone: a test's look at one block.
  const char *onlyVar = std::getenv("CUTS_HOST_BLOCK");
  const long long only = onlyVar ? std::atoll(onlyVar) : -1;
  auto skip = [&](unsigned x, unsigned y, unsigned z) {
    return only >= 0 && (x != only || y != 0 || z != 0);
  };
  const char *mode = std::getenv("CUTS_HOST_THREADS");
  if (!mode || std::strcmp(mode, "os") != 0) {
    Fibers fibers;
    if (!fibers.allocate(threads)) {
      state.dynamicShared = nullptr;
      return {state.error};
    }
    state.fibers = true;
    Block blk;
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          if (skip(x, y, z))
            continue;
          blockIdx = {x, y, z};
          std::memset(sharedBase, 0xFF, sharedBytes);
          resetBlock(blk, threads);
          fibers.run(blk, invoke, closure);
          if (!state.error.empty()) {
            state.fibers = false;
            state.dynamicShared = nullptr;
            return {state.error};
          }
        }
    state.fibers = false;
    state.dynamicShared = nullptr;
    return {};
  }
#endif
  Team team(threads, invoke, closure);
  if (!team.start()) {
    state.dynamicShared = nullptr;
    return {state.error};
  }
  Block blk;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        if (skip(x, y, z))
          continue;
        blockIdx = {x, y, z};
        std::memset(sharedBase, 0xFF, sharedBytes);
        resetBlock(blk, threads);
        team.run(blk);
        // Later blocks would only repeat the error (or hang on it).
        if (!state.error.empty()) {
          team.stop();
          state.dynamicShared = nullptr;
          return {state.error};
        }
      }
  team.stop();
  state.dynamicShared = nullptr;
  return {};
}

template <class F> void invokeClosure(const void *closure) {
  (*static_cast<const F *>(closure))();
}

template <class F>
LaunchResult runGrid(dim3 grid, dim3 block, size_t sharedBytes, const F &f) {
  return runGrid(grid, block, sharedBytes, &invokeClosure<F>, &f);
}

template <class... P, size_t... I>
LaunchResult launchPacked(void (*kernel)(P...), dim3 grid, dim3 block,
                          size_t sharedBytes, void *const *args,
                          std::index_sequence<I...>) {
  // Parameters are per-thread copies on the GPU; each call copies here too.
  return runGrid(grid, block, sharedBytes, [&] {
    kernel(*static_cast<const std::remove_reference_t<P> *>(args[I])...);
  });
}

} // namespace detail

/// The dynamic shared memory of the running launch (launchWithShared).
template <class T> T *dynamicShared() {
  return reinterpret_cast<T *>(detail::state.dynamicShared);
}

/// kernel<<<grid, block, sharedBytes>>>(args...), run on the host.
template <class... P, class... A>
LaunchResult launchWithShared(void (*kernel)(P...), dim3 grid, dim3 block,
                              size_t sharedBytes, A &&...args) {
  static_assert(sizeof...(P) == sizeof...(A),
                "wrong number of kernel arguments");
  return detail::runGrid(grid, block, sharedBytes, [&] { kernel(args...); });
}

/// kernel<<<grid, block>>>(args...), run on the host.
template <class... P, class... A>
LaunchResult launch(void (*kernel)(P...), dim3 grid, dim3 block, A &&...args) {
  return launchWithShared(kernel, grid, block, 0, std::forward<A>(args)...);
}

/// The C entry HostCompile generates for a kernel: args is laid out like
/// cuLaunchKernel's kernelParams (args[i] points at a value of parameter i's
/// exact type). Returns 0, or 1 with the message in error[0..errorSize).
template <class... P>
int launchFromC(void (*kernel)(P...), const unsigned *grid,
                const unsigned *block, unsigned long long sharedBytes,
                void *const *args, int numArgs, char *error,
                unsigned long errorSize) {
  LaunchResult result;
  try {
    if (numArgs != int(sizeof...(P)))
      result.error = "the kernel takes " + std::to_string(sizeof...(P)) +
                     " arguments, got " + std::to_string(numArgs);
    else
      result =
          detail::launchPacked(kernel, dim3(grid[0], grid[1], grid[2]),
                               dim3(block[0], block[1], block[2]), sharedBytes,
                               args, std::index_sequence_for<P...>());
  } catch (const std::exception &e) {
    result.error = std::string("host launch failed: ") + e.what();
  } catch (...) {
    result.error = "host launch failed";
  }
  if (result.ok())
    return 0;
  if (error && errorSize)
    std::snprintf(error, errorSize, "%s", result.error.c_str());
  return 1;
}

} // namespace cuts_host

//===----------------------------------------------------------------------===//
// Barriers and warp intrinsics
//===----------------------------------------------------------------------===//

// A macro so that each call site is known: threads of one phase waiting at
// different __syncthreads calls is reported.
#define __syncthreads()                                                        \
  ::cuts_host::detail::self().block->barrier.arriveAndWait(__LINE__)

// Masks are not checked: every live lane of the warp must take part.
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)mask;
  cuts_host::detail::self().warp->barrier.arriveAndWait(0);
}
inline unsigned __activemask() { return cuts_host::detail::activeMask(); }
inline unsigned __ballot_sync(unsigned, int predicate) {
  return cuts_host::detail::ballot(predicate != 0);
}
inline int __any_sync(unsigned, int predicate) {
  return cuts_host::detail::ballot(predicate != 0) != 0;
}
inline int __all_sync(unsigned, int predicate) {
  // All lanes that took part (exited ones do not vote).
  unsigned taking = cuts_host::detail::activeMask();
  return cuts_host::detail::ballot(predicate != 0) == taking;
}

// Lane arithmetic of the PTX shfl modes, `width` a power of two <= 32: a
// source outside the caller's width-segment yields the caller's value.
template <class T>
inline T __shfl_sync(unsigned, T var, int srcLane, int width = warpSize) {
  int lane = int(cuts_host::detail::self().lane);
  int segment = lane & ~(width - 1);
  return cuts_host::detail::shuffleFrom(var, segment + (srcLane & (width - 1)));
}
template <class T>
inline T __shfl_up_sync(unsigned, T var, unsigned delta, int width = warpSize) {
  int lane = int(cuts_host::detail::self().lane);
  int src = lane - int(delta);
  bool inside = src >= (lane & ~(width - 1));
  return cuts_host::detail::shuffleFrom(var, inside ? src : lane);
}
template <class T>
inline T __shfl_down_sync(unsigned, T var, unsigned delta,
                          int width = warpSize) {
  int lane = int(cuts_host::detail::self().lane);
  int src = lane + int(delta);
  bool inside = src < (lane & ~(width - 1)) + width;
  return cuts_host::detail::shuffleFrom(var, inside ? src : lane);
}
template <class T>
inline T __shfl_xor_sync(unsigned, T var, int laneMask, int width = warpSize) {
  int lane = int(cuts_host::detail::self().lane);
  int src = lane ^ laneMask;
  // Lanes may read earlier segments but not later ones (CUDA guide).
  bool inside = src < (lane & ~(width - 1)) + width;
  return cuts_host::detail::shuffleFrom(var, inside ? src : lane);
}

//===----------------------------------------------------------------------===//
// Reduced precision and tensor cores: the host's side of the functions
// codegen/emit/TensorCore.cpp defines for the GPU (see TensorCore.h), with
// the PTX instructions' semantics (PTX ISA, "cvt", "mma" for .m16n8k16 and
// .m16n8k8, "ldmatrix", "cp.async").
//===----------------------------------------------------------------------===//

// float -> fp16, round to nearest even: subnormals, overflow to infinity.
inline unsigned short cuts_f2h(float x) {
  uint32_t f = cutsHostBitCast<uint32_t>(x);
  uint32_t sign = (f >> 16) & 0x8000u, e = (f >> 23) & 0xffu;
  uint32_t man = f & 0x7fffffu;
  if (e == 0xffu) // infinity, or a quiet NaN
    return (unsigned short)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
  if (e >= 143) // 2^16 and above: past the largest half
    return (unsigned short)(sign | 0x7c00u);
  // The result's significand before rounding, and the bits rounded away.
  uint32_t q, rem, half;
  if (e >= 113) { // a normal half (a carry into the exponent stays right)
    q = ((e - 112) << 10) | (man >> 13);
    rem = man & 0x1fffu, half = 0x1000u;
  } else { // a subnormal half: 1.man x 2^(e-127) in units of 2^-24
    uint32_t shift = 126 - e;
    if (shift > 24)
      return (unsigned short)sign;
    uint32_t m = man | 0x800000u;
    q = m >> shift;
    rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  }
  if (rem > half || (rem == half && (q & 1)))
    ++q;
  return (unsigned short)(sign | q);
}

inline float cuts_h2f(unsigned short h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (e == 0x1f)
    return cutsHostBitCast<float>(sign | 0x7f800000u | (man << 13));
  if (e == 0) { // zero or subnormal: man x 2^-24, exact in float
    float v = float(man) * 0x1p-24f;
    return sign ? -v : v;
  }
  return cutsHostBitCast<float>(sign | ((e + 112) << 23) | (man << 13));
}

// float -> bf16, round to nearest even; a NaN stays a (quiet) NaN.
inline unsigned short cuts_f2bf(float x) {
  uint32_t f = cutsHostBitCast<uint32_t>(x);
  if ((f & 0x7fffffffu) > 0x7f800000u)
    return (unsigned short)((f >> 16) | 0x40u);
  f += 0x7fffu + ((f >> 16) & 1u);
  return (unsigned short)(f >> 16);
}

inline float cuts_bf2f(unsigned short h) {
  return cutsHostBitCast<float>(uint32_t(h) << 16);
}

// max.f16x2 and max.bf16x2: each 16-bit lane the larger of a's and b's
// (the other where one is NaN), its bits unchanged.
inline unsigned cutsHostMax16x2(unsigned a, unsigned b,
                                float (*widen)(unsigned short)) {
  unsigned r = 0;
  for (int lane = 0; lane < 2; ++lane) {
    const unsigned short x = (unsigned short)(a >> (16 * lane));
    const unsigned short y = (unsigned short)(b >> (16 * lane));
    const float fx = widen(x), fy = widen(y);
    r |= unsigned(fy > fx || fx != fx ? y : x) << (16 * lane);
  }
  return r;
}
inline unsigned cuts_max_f16x2(unsigned a, unsigned b) {
  return cutsHostMax16x2(a, b, cuts_h2f);
}
inline unsigned cuts_max_bf16x2(unsigned a, unsigned b) {
  return cutsHostMax16x2(a, b, cuts_bf2f);
}

// float -> tf32 (cvt.rna.tf32.f32): a 10-bit mantissa, ties away from zero.
inline float cuts_tf32(float x) {
  uint32_t f = cutsHostBitCast<uint32_t>(x);
  if ((f & 0x7f800000u) != 0x7f800000u) // infinity and NaN stay
    f += 0x1000u;
  return cutsHostBitCast<float>(f & ~0x1fffu);
}

// n fragment registers of fp32 words rounded to tf32.
inline void cuts_round_tf32(unsigned *r, int n) {
  for (int i = 0; i < n; ++i)
    r[i] = cutsHostBitCast<uint32_t>(cuts_tf32(cutsHostBitCast<float>(r[i])));
}

namespace cuts_host::detail {

// Every lane's n 32-bit registers r[0..n), n <= 4, as all[lane][i] (zero
// for a lane that has returned).
inline void gatherRegisters(const uint32_t *r, int n, uint32_t (*all)[4]) {
  for (int i = 0; i < n; i += 2) {
    uint64_t v = r[i] | (i + 1 < n ? uint64_t(r[i + 1]) << 32 : 0);
    warpExchange(v, [&](const Warp::Slot *slots, unsigned long long round) {
      for (unsigned lane = 0; lane < 32; ++lane) {
        uint64_t w = 0;
        if (slots[lane].round == round)
          std::memcpy(&w, &slots[lane].bits, sizeof w);
        all[lane][i] = uint32_t(w);
        if (i + 1 < n)
          all[lane][i + 1] = uint32_t(w >> 32);
      }
      return 0;
    });
  }
}

// Half of register `reg` (0: the low 16 bits).
inline unsigned short halfOf(uint32_t reg, int half) {
  return (unsigned short)(half ? reg >> 16 : reg & 0xffffu);
}

// D = A B + C for m16n8k16 (row.col) with 16-bit operands (convert: fp16 or
// bf16 to float): the fragment layouts of the PTX ISA, groupID = lane / 4,
// threadID_in_group = lane % 4. Products sum exactly, rounded once.
template <class Convert>
void mma16816(float *d, const uint32_t *a, const uint32_t *b, const float *c,
              Convert convert) {
  uint32_t A[32][4], B[32][4];
  gatherRegisters(a, 4, A);
  gatherRegisters(b, 2, B);
  unsigned lane = self().lane, g = lane / 4, t = lane % 4;
  auto at = [&](unsigned row, unsigned k) { // A: a_i, i = 4 hiK + 2 hiRow + odd
    unsigned i = (k >= 8 ? 4 : 0) + (row >= 8 ? 2 : 0) + (k & 1);
    return convert(halfOf(A[(row % 8) * 4 + (k % 8) / 2][i / 2], i & 1));
  };
  auto bt = [&](unsigned k, unsigned n) { // B: b_i, i = 2 hiK + odd
    unsigned i = (k >= 8 ? 2 : 0) + (k & 1);
    return convert(halfOf(B[n * 4 + (k % 8) / 2][i / 2], i & 1));
  };
  for (unsigned i = 0; i < 4; ++i) {
    unsigned row = g + (i >= 2 ? 8 : 0), col = t * 2 + (i & 1);
    double sum = c[i];
    for (unsigned k = 0; k < 16; ++k)
      sum += double(at(row, k)) * double(bt(k, col));
    d[i] = float(sum);
  }
}

} // namespace cuts_host::detail

inline void cuts_mma_f16(float *d, const unsigned *a, const unsigned *b,
                         const float *c) {
  cuts_host::detail::mma16816(d, a, b, c, cuts_h2f);
}
inline void cuts_mma_bf16(float *d, const unsigned *a, const unsigned *b,
                          const float *c) {
  cuts_host::detail::mma16816(d, a, b, c, cuts_bf2f);
}

// D = A B + C for m16n8k8 (row.col) with tf32 operands: a_i at (groupID +
// 8 (i odd), threadID_in_group + 4 (i >= 2)), b_i at (threadID_in_group +
// 4 i, groupID). The tensor core reads an operand's top 19 bits.
inline void cuts_mma_tf32(float *d, const unsigned *a, const unsigned *b,
                          const float *c) {
  using namespace cuts_host::detail;
  uint32_t A[32][4], B[32][4];
  gatherRegisters(a, 4, A);
  gatherRegisters(b, 2, B);
  unsigned lane = self().lane, g = lane / 4, t = lane % 4;
  auto tf32 = [](uint32_t bits) {
    return cutsHostBitCast<float>(bits & ~0x1fffu);
  };
  for (unsigned i = 0; i < 4; ++i) {
    unsigned row = g + (i >= 2 ? 8 : 0), col = t * 2 + (i & 1);
    double sum = c[i];
    for (unsigned k = 0; k < 8; ++k) {
      unsigned ai = (row >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0);
      float av = tf32(A[(row % 8) * 4 + k % 4][ai]);
      float bv = tf32(B[col * 4 + k % 4][k >= 4 ? 1 : 0]);
      sum += double(av) * double(bv);
    }
    d[i] = float(sum);
  }
}

namespace cuts_host::detail {

// ldmatrix .m8n8 .b16: lanes 8j..8j+7 give the row addresses of matrix j
// (count matrices); lane l gets in r[j] row l / 4's elements 2 (l % 4) and
// the next, or with `trans` column l / 4's elements of rows 2 (l % 4) and
// the next.
inline void ldmatrix(uint32_t *r, const void *row, int count, bool trans) {
  const unsigned short *rows[32];
  warpExchange(row, [&](const Warp::Slot *slots, unsigned long long round) {
    for (unsigned lane = 0; lane < 32; ++lane) {
      rows[lane] = nullptr;
      if (slots[lane].round == round)
        std::memcpy(&rows[lane], &slots[lane].bits, sizeof(void *));
    }
    return 0;
  });
  unsigned l = self().lane;
  for (int j = 0; j < count; ++j) {
    unsigned short lo, hi;
    if (trans) {
      lo = rows[8 * j + 2 * (l % 4)][l / 4];
      hi = rows[8 * j + 2 * (l % 4) + 1][l / 4];
    } else {
      lo = rows[8 * j + l / 4][2 * (l % 4)];
      hi = rows[8 * j + l / 4][2 * (l % 4) + 1];
    }
    r[j] = lo | uint32_t(hi) << 16;
  }
}

} // namespace cuts_host::detail

// A shared-memory address: a byte pointer here, a 32-bit window address on
// the GPU; either way + adds bytes.
typedef unsigned char *cuts_sptr;
inline cuts_sptr cuts_saddr(const void *p) {
  return static_cast<cuts_sptr>(const_cast<void *>(p));
}
inline void cuts_ldmatrix_x4(unsigned *r, cuts_sptr p) {
  cuts_host::detail::ldmatrix(r, p, 4, false);
}
inline void cuts_ldmatrix_x4_trans(unsigned *r, cuts_sptr p) {
  cuts_host::detail::ldmatrix(r, p, 4, true);
}
inline void cuts_ldmatrix_x2(unsigned *r, cuts_sptr p) {
  cuts_host::detail::ldmatrix(r, p, 2, false);
}
inline void cuts_ldmatrix_x2_trans(unsigned *r, cuts_sptr p) {
  cuts_host::detail::ldmatrix(r, p, 2, true);
}

// cp.async with a source size: `bytes` (0 or 16) read, the rest zeroed. A
// copy lands at the latest the GPU's may: at the cp.async.wait_group or the
// mbarrier arrival that retires it, so a stage read before its copies are
// waited for holds the previous contents (or the poison) here too.
inline void cuts_cp_async16(cuts_sptr dst, const void *src, int bytes) {
  cuts_host::detail::self().copies.open.push_back([=] {
    std::memcpy(dst, src, size_t(bytes));
    std::memset(dst + bytes, 0, size_t(16 - bytes));
  });
}
inline void cuts_cp_async16_ca(cuts_sptr dst, const void *src, int bytes) {
  cuts_cp_async16(dst, src, bytes);
}
inline void cuts_cp_async8(cuts_sptr dst, const void *src, int bytes) {
  cuts_host::detail::self().copies.open.push_back([=] {
    std::memcpy(dst, src, size_t(bytes));
    std::memset(dst + bytes, 0, size_t(8 - bytes));
  });
}
inline void cuts_cp_async4(cuts_sptr dst, const void *src, int bytes) {
  cuts_host::detail::self().copies.open.push_back([=] {
    std::memcpy(dst, src, size_t(bytes));
    std::memset(dst + bytes, 0, size_t(4 - bytes));
  });
}
inline unsigned cuts_lds_b32(cuts_sptr p) {
  unsigned r;
  std::memcpy(&r, p, 4);
  return r;
}
inline unsigned cuts_lds_f32x2_f16x2(cuts_sptr p) {
  float x[2];
  std::memcpy(x, p, 8);
  return cuts_f2h(x[0]) | unsigned(cuts_f2h(x[1])) << 16;
}
inline unsigned cuts_lds_f32x2_bf16x2(cuts_sptr p) {
  float x[2];
  std::memcpy(x, p, 8);
  return cuts_f2bf(x[0]) | unsigned(cuts_f2bf(x[1])) << 16;
}
inline void cuts_sts_b16(cuts_sptr p, unsigned short v) {
  std::memcpy(p, &v, 2);
}
inline void cuts_cp_async_commit() {
  cuts_host::detail::self().copies.commit();
}
template <int N> inline void cuts_cp_async_wait() {
  cuts_host::detail::self().copies.retire(N);
}

// mbarriers: the 64-bit word holds the arrivals pending (bits 0-31), the
// count a phase expects (32-62) and the phase's parity (63).
namespace cuts_host::detail {
inline uint64_t *mbarrier(cuts_sptr b) {
  return reinterpret_cast<uint64_t *>(b);
}
inline void mbarrierArrive(cuts_sptr b) {
  uint64_t *w = mbarrier(b), old = __atomic_load_n(w, __ATOMIC_ACQUIRE), next;
  do {
    const uint64_t pending = old & 0xffffffffu;
    const uint64_t expected = (old >> 32) & 0x7fffffffu;
    if (pending == 0) {
      recordError(blockName() + ": mbarrier arrival beyond its count");
      return;
    }
    next =
        pending > 1
            ? old - 1
            : ((old ^ (uint64_t(1) << 63)) & ~uint64_t(0xffffffffu)) | expected;
  } while (!__atomic_compare_exchange_n(w, &old, next, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
  if (state.fibers) // the deadlock check's (fibers share one OS thread)
    ++state.progress;
}
} // namespace cuts_host::detail

inline void cuts_mbar_init(cuts_sptr b, unsigned count) {
  __atomic_store_n(cuts_host::detail::mbarrier(b),
                   uint64_t(count) << 32 | count, __ATOMIC_RELEASE);
}
inline void cuts_mbar_arrive(cuts_sptr b) {
  cuts_host::detail::mbarrierArrive(b);
}
// cp.async.mbarrier.arrive.noinc: an arrival once this thread's copies
// have landed (here: they land now).
inline void cuts_cp_async_mbar_arrive(cuts_sptr b) {
  cuts_cp_async_commit();
  cuts_cp_async_wait<0>();
  cuts_host::detail::mbarrierArrive(b);
}
// Waits until the phase of parity `parity` has completed (the barrier's
// parity differs): other threads run meanwhile.
inline void cuts_mbar_wait(cuts_sptr b, unsigned parity) {
  using namespace cuts_host::detail;
  ThreadContext *me = current;
  const uint3 index = threadIdx;
  const auto start = std::chrono::steady_clock::now();
  while ((__atomic_load_n(mbarrier(b), __ATOMIC_ACQUIRE) >> 63) == parity) {
    if (me->block->broken)
      return;
#if defined(CUTS_HOST_HAS_FIBERS)
    if (state.fibers) {
      fiberYield();
      current = me, threadIdx = index;
      continue;
    }
#endif
    if (std::chrono::steady_clock::now() - start > state.barrierTimeout) {
      recordError(blockName() + ": mbarrier wait timed out");
      me->block->broken = true;
      return;
    }
    std::this_thread::yield();
  }
}
inline void cuts_fence_proxy_async() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// wgmma (TensorCore.h's wgmmaPrelude): a descriptor keeps the byte pointer,
// the 8-row groups' stride and the swizzle.
struct cuts_gdesc {
  const unsigned char *start;
  unsigned sbo, swizzle;
};
inline cuts_gdesc cuts_wgmma_desc(cuts_sptr a, unsigned sbo, unsigned swizzle) {
  return {a, sbo, swizzle};
}

// D[64 x n] += A[64 x 16] B[16 x n] for this thread's elements: warp w of
// the warpgroup, lane 4 g + t holds d[4 j + e] at row 16 w + g + 8 (e / 2),
// column 8 j + 2 t + e % 2. A K-major operand's rows are 16 x 2^swizzle
// bytes (swizzle 1, 2, 3: 32, 64, 128), 8-row groups sbo apart; the GPU
// swaps 16-byte chunks by address bits 7-9 (their low `swizzle` bits).
inline double cuts_wgmma_at(const cuts_gdesc &m, unsigned r, unsigned k,
                            bool bf16) {
  const uintptr_t rowBytes = uintptr_t(16) << m.swizzle;
  uintptr_t addr = reinterpret_cast<uintptr_t>(m.start) + (r / 8) * m.sbo +
                   (r % 8) * rowBytes + k * 2;
  addr ^= ((addr >> 7) & ((uintptr_t(1) << m.swizzle) - 1)) << 4;
  unsigned short v;
  std::memcpy(&v, reinterpret_cast<const void *>(addr), 2);
  return double(bf16 ? cuts_bf2f(v) : cuts_h2f(v));
}
// The sums into this thread's d from A's value at (its row half, k):
// half 0 is row 16 w + g, half 1 row 16 w + g + 8.
template <class AValue>
inline void cuts_wgmma_sums(float *d, const AValue &a, cuts_gdesc b, int n,
                            bool bf16, unsigned tid) {
  const unsigned t = tid % 4;
  for (int i = 0; i < n / 2; ++i) {
    const unsigned half = i % 4 / 2, col = 8 * (i / 4) + 2 * t + i % 2;
    double sum = d[i];
    for (unsigned k = 0; k < 16; ++k)
      sum += a(half, k) * cuts_wgmma_at(b, col, k, bf16);
    d[i] = float(sum);
  }
}
inline void cuts_wgmma_product(float *d, cuts_gdesc a, cuts_gdesc b, int n,
                               bool bf16, unsigned tid) {
  const unsigned row = 16 * (tid / 32 % 4) + tid % 32 / 4;
  cuts_wgmma_sums(
      d,
      [&](unsigned half, unsigned k) {
        return cuts_wgmma_at(a, row + 8 * half, k, bf16);
      },
      b, n, bf16, tid);
}

// A product runs at the wait that retires its commit group: the latest the
// GPU may read its operands, so a kernel that refills a stage before its
// products are waited for computes wrong sums here too.
inline void cuts_wgmma_fence() {}
inline void cuts_wgmma_commit() { cuts_host::detail::self().wgmma.commit(); }
template <int N> inline void cuts_wgmma_wait() {
  cuts_host::detail::self().wgmma.retire(N);
}
inline void cuts_wgmma_hold(float &) {}
inline void cuts_wgmma_host(float *d, cuts_gdesc a, cuts_gdesc b, int n,
                            bool bf16) {
  unsigned tid =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  cuts_host::detail::self().wgmma.open.push_back(
      [=] { cuts_wgmma_product(d, a, b, n, bf16, tid); });
}

// The same with A in registers: thread 4 g + t of warp w holds A[16 w + g
// (+ 8)][2 t (+ 1) (+ 8)] in a[0..3] as mma.sync's A fragment. Its row's
// 16 values are gathered from lanes 4 g .. 4 g + 3 now (the registers are
// read at issue); B is read at the wait, as for shared A.
inline void cuts_wgmma_rs_host(float *d, const unsigned *a, cuts_gdesc b, int n,
                               bool bf16) {
  unsigned tid =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned g = tid % 32 / 4;
  std::array<float, 32> rows{}; // A[g][0..15], then A[g + 8][0..15]
  for (unsigned t = 0; t < 4; ++t)
    for (unsigned r = 0; r < 4; ++r) {
      const unsigned w = __shfl_sync(0xffffffffu, a[r], int(4 * g + t));
      const unsigned base = (r % 2) * 16 + (r / 2) * 8 + 2 * t;
      for (unsigned h = 0; h < 2; ++h) {
        const unsigned short v = (unsigned short)(w >> (16 * h));
        rows[base + h] = bf16 ? cuts_bf2f(v) : cuts_h2f(v);
      }
    }
  cuts_host::detail::self().wgmma.open.push_back([=] {
    cuts_wgmma_sums(
        d,
        [&](unsigned half, unsigned k) { return double(rows[16 * half + k]); },
        b, n, bf16, tid);
  });
}

#endif // CUTS_CODEGEN_EMIT_CUDA_HOST_H

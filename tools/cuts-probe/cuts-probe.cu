//===- cuts-probe.cu - measure a GPU descriptor for the performance model -===//
//
// Measures the DeepCuts GPU parameters (thesis Table 3.4) on GPU 0 and writes
// a descriptor in the format of perfmodel/arch/*.json:
//   BW_global   a large device-to-device cudaMemcpy, median of several runs,
//               counting the bytes read plus the bytes written;
//   PERF_peak   an FMA-chain kernel at full occupancy (2 FLOP per FMA);
//   LAT_shared  a single-thread pointer chase through shared memory, in
//               clock64() cycles per load;
//   LAT_iter    one block per SM running the C_input loop of a generated
//               kernel at C_input 1 (a global load into shared memory, a
//               barrier, a shared read and an FMA, a barrier), in clock64()
//               cycles per iteration;
//   launch      the time per kernel of a CUDA graph of empty kernels;
//   BW_L2       a full-occupancy read of a buffer that stays in L2 (and
//               the same copied to shared memory by cp.async);
//   dispatch    the cycles between blocks an SM starts (empty blocks);
// and reads the rest from cudaGetDeviceProperties. Standalone on purpose: it
// needs nvcc only, so it builds on a bare GPU machine (scripts/probe_gpu.sh).
//
// Usage: cuts-probe [-o FILE.json] [--name NAME]
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace {

void check(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return;
  std::fprintf(stderr, "cuts-probe: error: %s: %s\n", what,
               cudaGetErrorString(err));
  std::exit(1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Seconds `run` takes on `stream` by CUDA events: the median of `runs`
/// after one untimed warm-up (module load, clocks, caches, graph upload).
template <typename Run>
double timedMedian(int runs, const char *what, Run run,
                   cudaStream_t stream = nullptr) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> seconds;
  for (int i = 0; i <= runs; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    run();
    check(cudaGetLastError(), what);
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), what);
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (i > 0)
      seconds.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(seconds);
}

//===----------------------------------------------------------------------===//
// BW_global
//===----------------------------------------------------------------------===//

/// Bytes per second of a 1 GiB device-to-device copy. A copy reads and writes
/// every byte, so it moves 2 x size bytes; counting both is what the model's
/// BW_global means (total DRAM traffic), and is why this reads about twice
/// what "copy bandwidth" tools that count one side report.
double measureBandwidth() {
  const size_t bytes = size_t(1) << 30;
  const int repeats = 10;
  void *src = nullptr, *dst = nullptr;
  check(cudaMalloc(&src, bytes), "cudaMalloc");
  check(cudaMalloc(&dst, bytes), "cudaMalloc");
  check(cudaMemset(src, 1, bytes), "cudaMemset");
  const double seconds = timedMedian(repeats, "cudaMemcpy", [&] {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
  });
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * double(bytes) / seconds;
}

//===----------------------------------------------------------------------===//
// PERF_peak (FP32)
//===----------------------------------------------------------------------===//

constexpr int kChains = 8;       // independent FMA chains per thread
constexpr int kFmaIters = 16384; // FMAs per chain
constexpr int kFmaBlock = 256;

/// Eight independent chains per thread hide the FMA latency (4 cycles) even at
/// low occupancy; `b` and `c` are arguments so nothing folds, and the
/// impossible store keeps the chains live.
__global__ void fmaKernel(float *out, float b, float c) {
  float a[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i)
    a[i] = float(threadIdx.x + i);
#pragma unroll 16
  for (int it = 0; it < kFmaIters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i)
      a[i] = fmaf(a[i], b, c);
  }
  float sum = 0;
#pragma unroll
  for (int i = 0; i < kChains; ++i)
    sum += a[i];
  if (sum == -1.0f)
    out[blockIdx.x] = sum;
}

/// FLOP/s of the FMA kernel over one full wave (every SM at its thread limit).
double measureFp32Peak(const cudaDeviceProp &prop) {
  const int blocks =
      prop.multiProcessorCount * (prop.maxThreadsPerMultiProcessor / kFmaBlock);
  float *out = nullptr;
  check(cudaMalloc(&out, blocks * sizeof(float)), "cudaMalloc");
  const double seconds = timedMedian(5, "fmaKernel", [&] {
    fmaKernel<<<blocks, kFmaBlock>>>(out, 0.999f, 0.001f);
  });
  cudaFree(out);
  const double flop = 2.0 * double(blocks) * kFmaBlock * kChains * kFmaIters;
  return flop / seconds;
}

//===----------------------------------------------------------------------===//
// mma.sync's peak
//===----------------------------------------------------------------------===//

constexpr int kMmaChains = 4;    // independent accumulator tiles per warp
constexpr int kMmaIters = 16384; // products per chain
constexpr int kMmaBlock = 128;   // four warps: one per scheduler

/// Each warp issues m16n8k16 products (fp16 in, fp32 accumulate) into four
/// independent accumulators from operand registers that never change; the
/// impossible store keeps them live.
__global__ void mmaSyncKernel(float *out, unsigned a0, unsigned b0) {
#if __CUDA_ARCH__ >= 800
  float acc[kMmaChains][4] = {};
  const unsigned a1 = a0 ^ threadIdx.x, a2 = a0 + 1, a3 = a0 + 2;
  const unsigned b1 = b0 ^ threadIdx.x;
#pragma unroll 4
  for (int it = 0; it < kMmaIters; ++it) {
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                   "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                   "{%0, %1, %2, %3};\n"
                   : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]),
                     "+f"(acc[c][3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float sum = 0;
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c)
    sum += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if (sum == -1.0f)
    out[blockIdx.x] = sum;
#endif
}

/// FLOP/s of mma.sync over full waves (every SM at its thread limit); 0
/// before sm_80.
double measureMmaSyncPeak(const cudaDeviceProp &prop) {
  if (prop.major < 8)
    return 0;
  const int blocks =
      prop.multiProcessorCount * (prop.maxThreadsPerMultiProcessor / kMmaBlock);
  float *out = nullptr;
  check(cudaMalloc(&out, blocks * sizeof(float)), "cudaMalloc");
  const unsigned one = 0x3c003c00u; // two fp16 1.0s: finite sums throughout
  const double seconds = timedMedian(5, "mmaSyncKernel", [&] {
    mmaSyncKernel<<<blocks, kMmaBlock>>>(out, one, one);
  });
  cudaFree(out);
  const double flop = 2.0 * 16 * 8 * 16 * double(blocks) * (kMmaBlock / 32) *
                      kMmaChains * kMmaIters;
  return flop / seconds;
}

//===----------------------------------------------------------------------===//
// LAT_shared
//===----------------------------------------------------------------------===//

constexpr int kRing = 256;   // words in the ring
constexpr int kSteps = 8192; // dependent loads timed

/// Each ring word holds the shared-window address of the next word, so the
/// timed loop is a chain of dependent `ld.shared` with no address arithmetic
/// in between: cycles / loads is the load-to-use latency (Jia et al.'s
/// method). The stride of 33 words also changes the bank on every hop.
__global__ void sharedLatencyKernel(long long *cycles, unsigned *sink) {
  __shared__ unsigned ring[kRing];
  const unsigned base = unsigned(__cvta_generic_to_shared(ring));
  for (int i = 0; i < kRing; ++i)
    ring[i] = base + unsigned((i + 33) % kRing) * 4;
  unsigned p = base;
  for (int i = 0; i < kRing; ++i) // One untimed lap.
    asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p));
  const long long start = clock64();
#pragma unroll 64
  for (int i = 0; i < kSteps; ++i)
    asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p));
  const long long stop = clock64();
  *cycles = stop - start;
  *sink = p;
}

/// Cycles per shared-memory load, the median of several runs, rounded.
int measureSharedLatency() {
  long long *cycles = nullptr;
  unsigned *sink = nullptr;
  check(cudaMalloc(&cycles, sizeof(long long)), "cudaMalloc");
  check(cudaMalloc(&sink, sizeof(unsigned)), "cudaMalloc");
  std::vector<double> perLoad;
  for (int i = 0; i < 5; ++i) {
    sharedLatencyKernel<<<1, 1>>>(cycles, sink);
    check(cudaGetLastError(), "sharedLatencyKernel launch");
    long long c = 0;
    check(cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost),
          "sharedLatencyKernel");
    perLoad.push_back(double(c) / kSteps);
  }
  cudaFree(cycles);
  cudaFree(sink);
  return int(median(perLoad) + 0.5);
}

constexpr int kIterThreads = 256;   // a generated kernel's usual block
constexpr int kIterations = 4096;   // C_input iterations timed
constexpr int kIterWords = 1 << 18; // 1 MiB: stays in L2, as tiles re-read

/// The skeleton of a generated kernel's C_input loop at C_input 1: each
/// iteration loads one word per thread from global memory (L2; the load is
/// volatile, so it cannot be hoisted over the barriers), stores it to the
/// shared tile, waits, reads another thread's word and accumulates, waits.
/// Thread 0 of each block records the cycles of the whole loop.
__global__ void iterationLatencyKernel(const float *in, long long *cycles,
                                       float *sink) {
  __shared__ float tile[kIterThreads];
  const int t = threadIdx.x;
  float acc = 0;
  long long start = clock64();
  for (int i = 0; i < kIterations; ++i) {
    const float *p =
        in + ((i * kIterThreads + t + blockIdx.x * 4099) & (kIterWords - 1));
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    tile[t] = v;
    __syncthreads();
    acc = fmaf(tile[(t + 1) % kIterThreads], 1.0001f, acc);
    __syncthreads();
  }
  long long stop = clock64();
  if (t == 0)
    cycles[blockIdx.x] = stop - start;
  sink[blockIdx.x * kIterThreads + t] = acc;
}

/// Cycles per C_input iteration: the median over the SMs (one block each)
/// of the median of 5 runs, after one warm-up run.
double measureIterationLatency(const cudaDeviceProp &prop) {
  const int blocks = prop.multiProcessorCount;
  float *in = nullptr, *sink = nullptr;
  long long *cycles = nullptr;
  check(cudaMalloc(&in, kIterWords * sizeof(float)), "cudaMalloc");
  check(cudaMemset(in, 0, kIterWords * sizeof(float)), "cudaMemset");
  check(cudaMalloc(&sink, size_t(blocks) * kIterThreads * sizeof(float)),
        "cudaMalloc");
  check(cudaMalloc(&cycles, blocks * sizeof(long long)), "cudaMalloc");
  std::vector<double> runs;
  std::vector<long long> c(blocks);
  for (int r = 0; r < 6; ++r) {
    iterationLatencyKernel<<<blocks, kIterThreads>>>(in, cycles, sink);
    check(cudaGetLastError(), "iterationLatencyKernel launch");
    check(cudaMemcpy(c.data(), cycles, blocks * sizeof(long long),
                     cudaMemcpyDeviceToHost),
          "iterationLatencyKernel");
    if (r == 0)
      continue; // warm-up: the buffer is not in L2 yet
    std::vector<double> perBlock;
    for (long long v : c)
      perBlock.push_back(double(v) / kIterations);
    runs.push_back(median(perBlock));
  }
  cudaFree(in);
  cudaFree(sink);
  cudaFree(cycles);
  return median(runs);
}

//===----------------------------------------------------------------------===//
// Launch cost and L2 bandwidth
//===----------------------------------------------------------------------===//

constexpr int kGraphKernels = 512; // kernel nodes in the timed graph

__global__ void emptyKernel(float *sink) {
  if (threadIdx.x == 1024) // never: keeps the argument live
    sink[blockIdx.x] = 0;
}

/// Seconds one kernel occupies in a CUDA graph of back-to-back launches (a
/// grid of one 256-thread block per SM that does nothing): the floor under
/// every kernel's time as `cuts tune` and `cuts bench --graph` measure it,
/// and the saving per kernel that fusion buys beyond memory traffic. The
/// median of 5 replays after one upload replay.
double measureLaunchSeconds(const cudaDeviceProp &prop) {
  float *sink = nullptr;
  check(cudaMalloc(&sink, prop.multiProcessorCount * sizeof(float)),
        "cudaMalloc");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreate");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
  for (int i = 0; i < kGraphKernels; ++i)
    emptyKernel<<<prop.multiProcessorCount, 256, 0, stream>>>(sink);
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  const double seconds = timedMedian(
      5, "emptyKernel graph",
      [&] { check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch"); }, stream);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(sink);
  return seconds / kGraphKernels;
}

constexpr int kL2Passes = 16;

/// Each thread sums float4s strided over the whole buffer, kL2Passes times;
/// the buffer is a quarter of L2, so after the first pass every load hits.
__global__ void l2ReadKernel(const float4 *in, size_t n, float *sink) {
  float acc = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (int pass = 0; pass < kL2Passes; ++pass)
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
         i += stride) {
      float4 v = __ldcg(in + i); // cached in L2 only, as tile loads are
      acc += v.x + v.y + v.z + v.w;
    }
  if (acc == -1.0f)
    sink[0] = acc;
}

/// Bytes per second a grid of `blocks` x `threads` reads from L2 (the
/// buffer is a quarter of L2; the warm-up run brings it in).
double l2ReadBandwidth(const cudaDeviceProp &prop, int blocks, int threads,
                       const char *what) {
  const size_t bytes = size_t(prop.l2CacheSize) / 4 / 16 * 16;
  const size_t n = bytes / sizeof(float4);
  float4 *in = nullptr;
  float *sink = nullptr;
  check(cudaMalloc(&in, bytes), "cudaMalloc");
  check(cudaMemset(in, 0, bytes), "cudaMemset");
  check(cudaMalloc(&sink, sizeof(float)), "cudaMalloc");
  const double seconds = timedMedian(
      5, what, [&] { l2ReadKernel<<<blocks, threads>>>(in, n, sink); });
  cudaFree(in);
  cudaFree(sink);
  return double(bytes) * kL2Passes / seconds;
}

constexpr int kAsyncStages = 8; // cp.async groups a thread keeps in flight

/// The same passes with cp.async.cg, as the tensor-core kernels load their
/// tiles: each thread keeps kAsyncStages 16-byte copies in flight into a
/// shared ring, with no register in the way.
__global__ void l2CpAsyncKernel(const float4 *in, size_t n) {
  extern __shared__ float4 ring[];
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  int slot = 0;
  for (int pass = 0; pass < kL2Passes; ++pass)
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
         i += stride) {
      const unsigned dst = unsigned(__cvta_generic_to_shared(
          ring + slot * blockDim.x + threadIdx.x));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst),
                   "l"(in + i));
      asm volatile("cp.async.commit_group;");
      asm volatile("cp.async.wait_group %0;" ::"n"(kAsyncStages - 1));
      slot = slot + 1 == kAsyncStages ? 0 : slot + 1;
    }
  asm volatile("cp.async.wait_all;");
}

/// Bytes per second a full-occupancy grid copies from L2 to shared memory
/// with cp.async (each SM's blocks as 256-thread blocks).
double measureL2CpAsyncBandwidth(const cudaDeviceProp &prop) {
  const size_t bytes = size_t(prop.l2CacheSize) / 4 / 16 * 16;
  const size_t n = bytes / sizeof(float4);
  const int threads = 256;
  const size_t smem = size_t(kAsyncStages) * threads * sizeof(float4);
  const int blocks = prop.multiProcessorCount *
                     std::min(prop.maxThreadsPerMultiProcessor / threads,
                              int(prop.sharedMemPerMultiprocessor / smem));
  float4 *in = nullptr;
  check(cudaMalloc(&in, bytes), "cudaMalloc");
  check(cudaMemset(in, 0, bytes), "cudaMemset");
  const double seconds = timedMedian(5, "l2CpAsyncKernel", [&] {
    l2CpAsyncKernel<<<blocks, threads, smem>>>(in, n);
  });
  cudaFree(in);
  return double(bytes) * kL2Passes / seconds;
}

/// Bytes per second read from L2 by a full-occupancy grid: what re-read
/// tiles (halos, the operand every block column shares) stream at.
double measureL2Bandwidth(const cudaDeviceProp &prop) {
  const int block = 512;
  return l2ReadBandwidth(prop,
                         prop.multiProcessorCount *
                             (prop.maxThreadsPerMultiProcessor / block),
                         block, "l2ReadKernel");
}

/// Bytes per second one SM draws from L2 when it reads alone: one block of
/// the most threads a block may have. A grid of few blocks (a GEMV at batch
/// 1) is limited by this, not by bwL2.
double measureL2BandwidthPerSM(const cudaDeviceProp &prop) {
  return l2ReadBandwidth(prop, 1, prop.maxThreadsPerBlock,
                         "l2ReadKernel (one SM)");
}

//===----------------------------------------------------------------------===//
// Block dispatch (the simple ops' bound)
//===----------------------------------------------------------------------===//

constexpr int kDispatchBlocksPerSM = 4096;

/// Cycles between two blocks an SM starts, when blocks do nothing: a grid
/// of kDispatchBlocksPerSM empty blocks per SM, the kernel's time (less one
/// launch) over the blocks each SM ran. The floor under a grid of many
/// small blocks, whatever they do. Measured for `threads`-thread blocks.
double measureBlockDispatch(const cudaDeviceProp &prop, int threads,
                            double launchSeconds, double clockGHz) {
  const int blocks = prop.multiProcessorCount * kDispatchBlocksPerSM;
  float *sink = nullptr;
  check(cudaMalloc(&sink, size_t(blocks) * sizeof(float)), "cudaMalloc");
  const double seconds = timedMedian(
      5, "emptyKernel", [&] { emptyKernel<<<blocks, threads>>>(sink); });
  cudaFree(sink);
  return std::max(0.0, seconds - launchSeconds) * clockGHz * 1e9 /
         kDispatchBlocksPerSM;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// Dense FP16 tensor-core FLOP per clock per SM (FP16 accumulate), from the
/// NVIDIA architecture whitepapers; 0 where this table does not know the chip.
int tensorFp16FlopPerClock(int major, int minor) {
  switch (major * 10 + minor) {
  case 70:
  case 72:
  case 75:
  case 86:
  case 87:
  case 89:
    return 1024;
  case 80:
    return 2048;
  case 90:
    return 4096;
  default:
    return 0;
  }
}

/// A JSON number with 6 significant digits ("6.69e+13"), not to_string's
/// fixed-point "66900000000000.000000".
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20)
      out += ch;
  }
  return out + "\"";
}

} // namespace

int main(int argc, char **argv) {
  std::string outPath, name;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "-o") && i + 1 < argc) {
      outPath = argv[++i];
    } else if (!std::strcmp(argv[i], "--name") && i + 1 < argc) {
      name = argv[++i];
    } else {
      std::fprintf(stderr, "usage: cuts-probe [-o FILE.json] [--name NAME]\n");
      return 1;
    }
  }

  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count == 0)
    err = cudaErrorNoDevice;
  if (err != cudaSuccess) {
    std::fprintf(stderr, "cuts-probe: error: no CUDA GPU found (%s)\n",
                 cudaGetErrorString(err));
    return 1;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  // cudaDeviceProp::clockRate is gone in CUDA 13; the attribute remains (kHz).
  int clockKHz = 0;
  check(cudaDeviceGetAttribute(&clockKHz, cudaDevAttrClockRate, 0),
        "cudaDeviceGetAttribute");
  if (name.empty())
    name = prop.name;
  const double clockGHz = clockKHz * 1e-6;

  std::fprintf(stderr, "cuts-probe: measuring %s (sm_%d%d, %d SMs)\n",
               prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  const double bw = measureBandwidth();
  const double fp32 = measureFp32Peak(prop);
  const double mmaSync = measureMmaSyncPeak(prop);
  const int lat = measureSharedLatency();
  const double latIter = measureIterationLatency(prop);
  const double launch = measureLaunchSeconds(prop);
  const double bwL2 = measureL2Bandwidth(prop);
  const double bwL2PerSM = measureL2BandwidthPerSM(prop);
  const double bwL2CpAsync = measureL2CpAsyncBandwidth(prop);
  // The least interval over block sizes: a floor for every block.
  std::string dispatchText;
  double dispatch = 0;
  for (int threads : {32, 128, 256, 1024}) {
    const double c = measureBlockDispatch(prop, threads, launch, clockGHz);
    dispatch = dispatchText.empty() ? c : std::min(dispatch, c);
    dispatchText += (dispatchText.empty() ? "" : ", ") + num(c);
  }
  std::fprintf(stderr,
               "cuts-probe: BW_global %.3g B/s, PERF_peak %.3g FLOP/s, "
               "LAT_shared %d cycles, LAT_iter %.0f cycles, launch %.3g s, "
               "BW_L2 %.3g B/s (cp.async %.3g), BW_L2 of one SM %.3g B/s, "
               "block dispatch %s cycles (32, 128, 256, 1024 threads), "
               "mma.sync %.3g FLOP/s\n",
               bw, fp32, lat, latIter, launch, bwL2, bwL2CpAsync, bwL2PerSM,
               dispatchText.c_str(), mmaSync);

  char date[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::localtime(&now));
  const std::string measured =
      std::string("measured by cuts-probe on ") + prop.name + ", " + date;
  const std::string props = "cudaGetDeviceProperties";
  const std::string cc =
      "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);

  double fp16 = 0;
  std::string fp16Source;
  if (int perClock = tensorFp16FlopPerClock(prop.major, prop.minor)) {
    fp16 = double(prop.multiProcessorCount) * perClock * clockGHz * 1e9;
    fp16Source = "derived, not measured: SMs x " + std::to_string(perClock) +
                 " dense FP16 tensor FLOP/clock/SM (" + cc +
                 ", NVIDIA whitepaper) x max clock";
  } else {
    fp16 = 2 * fp32;
    fp16Source = "unknown chip: assumed 2 x measured FP32 (packed half2 SIMT "
                 "rate); set by hand";
  }

  // Fields in GpuArch order, numbers preformatted; the sources follow.
  std::vector<std::pair<std::string, std::string>> fields = {
      {"numSM", std::to_string(prop.multiProcessorCount)},
      {"perfPeakFp32", num(fp32)},
      {"perfPeakFp16", num(fp16)},
      {"bwGlobal", num(bw)},
      {"transGlobalBytes", "128"},
      {"latShared", std::to_string(lat)},
      {"maxSharedPerBlock", std::to_string(prop.sharedMemPerBlockOptin)},
      {"maxThreadsPerBlock", std::to_string(prop.maxThreadsPerBlock)},
      {"sharedPerSM", std::to_string(prop.sharedMemPerMultiprocessor)},
      {"regsPerSM", std::to_string(prop.regsPerMultiprocessor)},
      {"maxRegsPerThread", "255"},
      {"maxBlocksPerSM", std::to_string(prop.maxBlocksPerMultiProcessor)},
      {"maxThreadsPerSM", std::to_string(prop.maxThreadsPerMultiProcessor)},
      {"warpSize", std::to_string(prop.warpSize)},
      {"sharedBanks", "32"},
      {"l2Bytes", std::to_string(prop.l2CacheSize)},
      {"clockGHz", num(clockGHz)},
      {"latIterCycles", num(latIter)},
      {"launchSeconds", num(launch)},
      {"bwL2", num(bwL2)},
      {"bwL2PerSM", num(bwL2PerSM)},
      {"bwL2CpAsync", num(bwL2CpAsync)},
      {"blockDispatchCycles", num(dispatch)},
      {"perfPeakMmaSync", num(mmaSync)},
  };
  std::vector<std::pair<std::string, std::string>> sources = {
      {"numSM", props},
      {"perfPeakFp32", measured + ": FMA-chain kernel, " +
                           std::to_string(kChains) +
                           " chains/thread, full occupancy, 2 FLOP per FMA, "
                           "median of 5"},
      {"perfPeakFp16", fp16Source},
      {"bwGlobal", measured + ": 1 GiB device-to-device cudaMemcpy, median "
                              "of 10, bytes read + bytes written"},
      {"transGlobalBytes",
       "NVIDIA: a fully coalesced warp request is 32 x 4 B = one 128-byte "
       "cache line (CUDA C++ Best Practices Guide, coalesced access)"},
      {"latShared", measured + ": single-thread ld.shared pointer chase, "
                               "clock64 cycles per load, median of 5"},
      {"maxSharedPerBlock", props + " (sharedMemPerBlockOptin)"},
      {"maxThreadsPerBlock", props},
      {"sharedPerSM", props + " (sharedMemPerMultiprocessor)"},
      {"regsPerSM", props},
      {"maxRegsPerThread",
       "CUDA C++ Programming Guide, compute capability table (255 since "
       "CC 3.2)"},
      {"maxBlocksPerSM", props},
      {"maxThreadsPerSM", props},
      {"warpSize", props},
      {"sharedBanks", "CUDA C++ Programming Guide: 32 banks of 4 bytes"},
      {"l2Bytes", props + " (l2CacheSize)"},
      {"clockGHz", "cudaDevAttrClockRate (maximum SM clock)"},
      {"latIterCycles",
       measured + ": one 256-thread block per SM looping over a global load "
                  "(L2) into shared memory, a barrier, a shared read and "
                  "FMA, a barrier; clock64 cycles per iteration, median over "
                  "the SMs and of 5 runs"},
      {"launchSeconds",
       measured + ": a CUDA graph of " + std::to_string(kGraphKernels) +
           " launches of an empty kernel (one 256-thread block per SM), "
           "time per launch, median of 5 replays"},
      {"bwL2", measured +
                   ": a full-occupancy grid reading a buffer of a "
                   "quarter of L2 " +
                   std::to_string(kL2Passes) +
                   " times (ld.global.cg float4), median of 5"},
      {"bwL2PerSM", measured + ": the same read by one block of " +
                        std::to_string(prop.maxThreadsPerBlock) +
                        " threads (one SM), median of 5"},
      {"bwL2CpAsync",
       measured + ": the same passes copied to shared memory by cp.async.cg "
                  "16-byte copies, " +
           std::to_string(kAsyncStages) +
           " groups in flight a thread, 256-thread blocks filling every SM, "
           "median of 5"},
      {"blockDispatchCycles",
       measured + ": grids of " + std::to_string(kDispatchBlocksPerSM) +
           " empty blocks per SM of 32, 128, 256 and 1024 threads, the "
           "kernel's time less one launch, in cycles per block an SM runs, "
           "median of 5: " +
           dispatchText + "; the least"},
      {"perfPeakMmaSync",
       measured + ": warps of 128-thread blocks filling every SM, each "
                  "issuing 4 independent chains of mma.sync m16n8k16 "
                  "(fp16 in, fp32 accumulate), median of 5"},
  };

  std::string json = "{\n  \"name\": " + jsonString(name) +
                     ",\n  \"aliases\": [],\n  \"vendor\": \"nvidia\",\n"
                     "  \"computeArch\": \"" +
                     cc + "\",\n";
  for (const auto &[key, value] : fields)
    json += "  \"" + key + "\": " + value + ",\n";
  json += "  \"sources\": {\n";
  for (size_t i = 0; i < sources.size(); ++i)
    json += "    \"" + sources[i].first +
            "\": " + jsonString(sources[i].second) +
            (i + 1 < sources.size() ? ",\n" : "\n");
  json += "  }\n}\n";

  if (outPath.empty()) {
    std::fputs(json.c_str(), stdout);
    return 0;
  }
  FILE *f = std::fopen(outPath.c_str(), "w");
  bool ok = f && std::fputs(json.c_str(), f) >= 0;
  if (f)
    ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    std::fprintf(stderr, "cuts-probe: error: cannot write %s\n",
                 outPath.c_str());
    return 1;
  }
  std::fprintf(stderr, "cuts-probe: wrote %s\n", outPath.c_str());
  return 0;
}

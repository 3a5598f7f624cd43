// Running CUDA kernel source on the host (cuda_host.h + HostCompile) and
// compiling it with NVRTC, on handwritten kernels: the two checks every
// kernel the code generator emits goes through.
#include "codegen/emit/HostCompile.h"
#include "codegen/emit/Nvrtc.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <vector>

#include <unistd.h>

using namespace cuts;

namespace {

const float kPoison = std::numeric_limits<float>::quiet_NaN();

std::unique_ptr<HostKernel> build(const std::string &source,
                                  const KernelSignature &sig) {
  std::string error;
  std::unique_ptr<HostKernel> k = compileForHost(source, sig, error);
  INFO(error);
  REQUIRE(k);
  return k;
}

KernelArg buf(const void *p) { return KernelArg::buffer(p); }
KernelArg num(int64_t v) { return KernelArg::scalar(v); }

const char *kAddSource = R"cuda(
// c = a + b with a grid-stride loop: fewer threads than elements.
__global__ void add(const float *__restrict__ a, const float *__restrict__ b,
                    float *__restrict__ c, long long n) {
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    c[i] = a[i] + b[i];
}
)cuda";

const KernelSignature kAdd = {"add",
                              {{"a", "const float *__restrict__"},
                               {"b", "const float *__restrict__"},
                               {"c", "float *__restrict__"},
                               {"n", "long long"}}};

const char *kMatmulSource = R"cuda(
#define TILE 16
// C[M x N] = A[M x K] * B[K x N], row-major, one thread per element of C,
// both operands staged through 16x16 shared tiles.
extern "C" __global__ void __launch_bounds__(TILE * TILE)
matmul(const float *__restrict__ A, const float *__restrict__ B,
       float *__restrict__ C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = row < M && k0 + tx < K ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = k0 + ty < K && col < N ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads(); // before the next iteration overwrites the tiles
  }
  if (row < M && col < N)
    C[row * N + col] = acc;
}
)cuda";

const KernelSignature kMatmul = {"matmul",
                                 {{"A", "const float *__restrict__"},
                                  {"B", "const float *__restrict__"},
                                  {"C", "float *__restrict__"},
                                  {"M", "int"},
                                  {"N", "int"},
                                  {"K", "int"}}};

// Thread 0 produces a value slowly; the others read it after the barrier,
// or, with useBarrier = 0, without waiting. The static __shared__ variable
// still holds the previous block's (or launch's) value then, so every
// reader that runs before thread 0's 20 ms delay is over reads a wrong one.
const char *kBroadcastSource = R"cuda(
__global__ void broadcast(float *out, int useBarrier, float seed) {
  __shared__ float value;
  if (threadIdx.x == 0) {
    long long start = clock64();
    while (clock64() - start < 20000000) {
    }
    value = seed + blockIdx.x;
  }
  if (useBarrier)
    __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = value;
}
)cuda";

const KernelSignature kBroadcast = {
    "broadcast",
    {{"out", "float *"}, {"useBarrier", "int"}, {"seed", "float"}}};

// Each thread counts itself in, waits, and reads the count: a barrier lets
// no thread continue before all have arrived, twice in a row.
const char *kArrivalSource = R"cuda(
__global__ void arrivals(int *counters, int *seen) {
  int *counter = counters + blockIdx.x;
  int *mine = seen + 2 * (blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(counter, 1);
  __syncthreads();
  mine[0] = atomicAdd(counter, 0);
  __syncthreads();
  atomicAdd(counter, 1);
  __syncthreads();
  mine[1] = atomicAdd(counter, 0);
}
)cuda";

const KernelSignature kArrivals = {"arrivals",
                                   {{"counters", "int *"}, {"seen", "int *"}}};

const char *kBlockSumSource = R"cuda(
// Sum of x[0..n): warps reduce with __shfl_xor_sync, warp 0 reduces the
// warp sums with __shfl_down_sync; per-block sums and an atomic total.
__global__ void blockSum(const float *__restrict__ x,
                         float *__restrict__ partial, float *total, int n) {
  __shared__ float warpSums[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    v += x[i];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (lane == 0)
    warpSums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warpSums[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
      v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) {
      partial[blockIdx.x] = v;
      atomicAdd(total, v);
    }
  }
}
)cuda";

const KernelSignature kBlockSum = {"blockSum",
                                   {{"x", "const float *__restrict__"},
                                    {"partial", "float *__restrict__"},
                                    {"total", "float *"},
                                    {"n", "int"}}};

const char *kWarpOpsSource = R"cuda(
// One of each warp intrinsic, and an inclusive scan with __shfl_up_sync.
__global__ void warpOps(int *out) {
  const int lane = threadIdx.x % 32;
  const int v = threadIdx.x * 10;
  int *o = out + threadIdx.x * 6;
  o[0] = __shfl_sync(0xffffffffu, v, 3);
  o[1] = __shfl_up_sync(0xffffffffu, v, 1);
  o[2] = __shfl_down_sync(0xffffffffu, v, 2);
  o[3] = __shfl_xor_sync(0xffffffffu, v, 5, 8);
  o[4] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
  int s = lane + 1;
  for (int d = 1; d < 32; d *= 2) {
    int t = __shfl_up_sync(0xffffffffu, s, d);
    if (lane >= d)
      s += t;
  }
  o[5] = s;
}
)cuda";

const char *kReverseSource = R"cuda(
// Reverses each block's chunk of x through dynamic shared memory, and
// reports one word of it that no thread wrote.
__global__ void reverseBlocks(const float *x, float *y, float *unwritten) {
  extern __shared__ __align__(16) float chunk[];
  const int base = blockIdx.x * blockDim.x;
  chunk[threadIdx.x] = x[base + threadIdx.x];
  __syncthreads();
  y[base + blockDim.x - 1 - threadIdx.x] = chunk[threadIdx.x];
  if (threadIdx.x == 0)
    unwritten[blockIdx.x] = chunk[blockDim.x];
}
)cuda";

// mode 0: threads of a warp wait at two different __syncthreads; mode 1:
// half a warp shuffles while the other half waits at __syncthreads.
const char *kDivergentSource = R"cuda(
__global__ void divergent(float *x, int mode) {
  float v = x[threadIdx.x];
  if (mode == 0) {
    if (threadIdx.x < 16)
      __syncthreads();
    else
      __syncthreads();
  } else {
    if (threadIdx.x < 16)
      v += __shfl_xor_sync(0xffffffffu, v, 1);
    else
      __syncthreads();
  }
  x[threadIdx.x] = v;
}
)cuda";

double relativeL2(const std::vector<float> &got,
                  const std::vector<double> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = double(got[i]) - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return std::isnan(num) ? INFINITY : std::sqrt(num / (den ? den : 1));
}

} // namespace

TEST_CASE("host run: elementwise add with a grid-stride loop", "[emit]") {
  auto k = build(kAddSource, kAdd);
  const int n = 1000; // 3 blocks of 64 threads: each thread does ~5 elements
  std::vector<float> a(n), b(n), c(n, kPoison);
  for (int i = 0; i < n; ++i)
    a[i] = 0.5f * i, b[i] = 1000.0f - i;
  std::string error;
  REQUIRE(k->launch(
      {3}, {64}, {buf(a.data()), buf(b.data()), buf(c.data()), num(n)}, error));
  for (int i = 0; i < n; ++i)
    REQUIRE(c[i] == a[i] + b[i]);

  // Wrong arguments are refused before the kernel runs.
  CHECK_FALSE(k->launch({1}, {32},
                        {buf(a.data()), buf(b.data()), buf(c.data())}, error));
  CHECK(error.find("takes 4 arguments") != std::string::npos);
  CHECK_FALSE(k->launch({1}, {2048},
                        {buf(a.data()), buf(b.data()), buf(c.data()), num(n)},
                        error));
  CHECK(error.find("1024") != std::string::npos);
}

TEST_CASE("host run: 16x16 shared-memory tiled matmul", "[emit]") {
  auto k = build(kMatmulSource, kMatmul);
  struct Shape {
    int M, N, K;
  };
  // Neither dimension a multiple of the tile; several blocks each way.
  for (Shape s : {Shape{37, 45, 29}, Shape{16, 33, 50}}) {
    std::vector<float> A(s.M * s.K), B(s.K * s.N), C(s.M * s.N, kPoison);
    for (size_t i = 0; i < A.size(); ++i)
      A[i] = std::sin(0.37 * i);
    for (size_t i = 0; i < B.size(); ++i)
      B[i] = std::cos(0.11 * i);
    std::vector<double> want(C.size());
    for (int r = 0; r < s.M; ++r)
      for (int c = 0; c < s.N; ++c)
        for (int i = 0; i < s.K; ++i)
          want[r * s.N + c] += double(A[r * s.K + i]) * B[i * s.N + c];
    Dim3 grid{unsigned(s.N + 15) / 16, unsigned(s.M + 15) / 16, 1};
    std::string error;
    REQUIRE(k->launch(grid, {16, 16},
                      {buf(A.data()), buf(B.data()), buf(C.data()), num(s.M),
                       num(s.N), num(s.K)},
                      error));
    INFO("M=" << s.M << " N=" << s.N << " K=" << s.K);
    CHECK(relativeL2(C, want) <= 1e-5);
  }
}

TEST_CASE("host run: matmul without its second barrier is caught", "[emit]") {
  // Without the barrier after the compute loop, fast threads overwrite the
  // tiles while slow ones still read them (a write-after-read race). With
  // 256 threads interleaving on few cores, nearly every element comes out
  // wrong (observed: all but a handful of 1665); one is enough to fail.
  std::string source = kMatmulSource;
  const std::string second = "__syncthreads(); // before the next iteration";
  size_t at = source.find(second);
  REQUIRE(at != std::string::npos);
  source.replace(at, std::string("__syncthreads();").size(), "");
  auto k = build(source, kMatmul);
  const int M = 37, N = 45, K = 64;
  std::vector<float> A(M * K), B(K * N), C(M * N, kPoison);
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = std::sin(0.37 * i);
  for (size_t i = 0; i < B.size(); ++i)
    B[i] = std::cos(0.11 * i);
  std::string error;
  REQUIRE(k->launch(
      {3, 3}, {16, 16},
      {buf(A.data()), buf(B.data()), buf(C.data()), num(M), num(N), num(K)},
      error));
  int wrong = 0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double want = 0;
      for (int i = 0; i < K; ++i)
        want += double(A[r * K + i]) * B[i * N + c];
      wrong += !(std::fabs(C[r * N + c] - want) <= 1e-4);
    }
  CHECK(wrong > 0);
}

TEST_CASE("host run: a missing __syncthreads changes the result", "[emit]") {
  // Both ways of running a block's threads: fibers (the default) and OS
  // threads.
  const char *mode = GENERATE("fibers", "os");
  if (std::string(mode) == "os")
    setenv("CUTS_HOST_THREADS", "os", 1);
  struct Unset {
    ~Unset() { unsetenv("CUTS_HOST_THREADS"); }
  } unset;
  auto k = build(kBroadcastSource, kBroadcast);
  const int blocks = 4, threads = 64;
  std::vector<float> out(blocks * threads);
  auto run = [&](int useBarrier, float seed) {
    std::fill(out.begin(), out.end(), kPoison);
    std::string error;
    REQUIRE(k->launch(
        {blocks}, {threads},
        {buf(out.data()), num(useBarrier), KernelArg::realScalar(seed)},
        error));
    int wrong = 0;
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < threads; ++t)
        wrong += out[b * threads + t] != seed + b;
    return wrong;
  };
  CHECK(run(1, 100.0f) == 0);
  // Every reader is already running when thread 0 starts its 20 ms delay,
  // so all but a badly starved few read the stale value: the race is not
  // hidden by running threads one after another.
  CHECK(run(0, 200.0f) > blocks * threads / 2);
  CHECK(run(1, 300.0f) == 0);
}

TEST_CASE("host run: no thread passes __syncthreads before all arrive",
          "[emit]") {
  auto k = build(kArrivalSource, kArrivals);
  const int blocks = 2, threads = 128;
  std::vector<int> counters(blocks, 0), seen(2 * blocks * threads, -1);
  std::string error;
  REQUIRE(k->launch({blocks}, {threads},
                    {buf(counters.data()), buf(seen.data())}, error));
  for (int i = 0; i < blocks * threads; ++i) {
    REQUIRE(seen[2 * i] == threads);
    REQUIRE(seen[2 * i + 1] == 2 * threads);
  }
}

TEST_CASE("host run: warp-shuffle block reduction", "[emit]") {
  auto k = build(kBlockSumSource, kBlockSum);
  const int n = 5000;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(i % 7 - 3) + 0.25f * (i % 4); // sums stay exact in fp32
  for (unsigned threads : {256u, 96u}) {
    const unsigned blocks = 3;
    std::vector<float> partial(blocks, kPoison);
    float total = 0.0f;
    std::string error;
    REQUIRE(k->launch({blocks}, {threads},
                      {buf(x.data()), buf(partial.data()), buf(&total), num(n)},
                      error));
    double all = 0;
    for (unsigned b = 0; b < blocks; ++b) {
      double want = 0;
      for (unsigned i = b * threads; i < unsigned(n); i += blocks * threads)
        for (unsigned t = 0; t < threads && i + t < unsigned(n); ++t)
          want += x[i + t];
      INFO("threads " << threads << " block " << b);
      CHECK(partial[b] == want);
      all += want;
    }
    CHECK(total == all);
  }
}

TEST_CASE("host run: warp intrinsics follow CUDA's lane arithmetic", "[emit]") {
  auto k = build(kWarpOpsSource, {"warpOps", {{"out", "int *"}}});
  const int threads = 64; // two warps
  std::vector<int> out(threads * 6, -1);
  std::string error;
  REQUIRE(k->launch({1}, {threads}, {buf(out.data())}, error));
  for (int t = 0; t < threads; ++t) {
    int lane = t % 32, warp = t - lane;
    const int *o = &out[t * 6];
    INFO("thread " << t);
    CHECK(o[0] == (warp + 3) * 10);
    CHECK(o[1] == (lane >= 1 ? t - 1 : t) * 10);
    CHECK(o[2] == (lane + 2 < 32 ? t + 2 : t) * 10);
    CHECK(o[3] == (warp + (lane ^ 5)) * 10);
    CHECK(unsigned(o[4]) == 0x49249249u);
    CHECK(o[5] == (lane + 1) * (lane + 2) / 2);
  }
}

TEST_CASE("host run: dynamic shared memory, poisoned per block", "[emit]") {
  auto k = build(
      kReverseSource,
      {"reverseBlocks",
       {{"x", "const float *"}, {"y", "float *"}, {"unwritten", "float *"}}});
  const unsigned blocks = 3, threads = 64;
  std::vector<float> x(blocks * threads), y(x.size(), kPoison),
      unwritten(blocks, 0.0f);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i);
  std::string error;
  // One word more than the threads write: it must read as poison.
  REQUIRE(k->launch({blocks}, {threads},
                    {buf(x.data()), buf(y.data()), buf(unwritten.data())},
                    error, (threads + 1) * sizeof(float)));
  for (unsigned b = 0; b < blocks; ++b) {
    for (unsigned t = 0; t < threads; ++t)
      REQUIRE(y[b * threads + threads - 1 - t] == x[b * threads + t]);
    CHECK(std::isnan(unwritten[b]));
  }
}

TEST_CASE("host run: divergent barriers are reported, not hung on", "[emit]") {
  auto k = build(kDivergentSource,
                 {"divergent", {{"x", "float *"}, {"mode", "int"}}});
  std::vector<float> x(32, 1.0f);
  std::string error;
  CHECK_FALSE(k->launch({1}, {32}, {buf(x.data()), num(0)}, error));
  CHECK(error.find("different __syncthreads") != std::string::npos);

  // As fibers (the default on x86-64) the deadlock is seen at once; as OS
  // threads the barrier times out.
  bool ok = k->launch({1}, {32}, {buf(x.data()), num(1)}, error);
  CHECK_FALSE(ok);
  CHECK((error.find("deadlock") != std::string::npos ||
         error.find("timed out") != std::string::npos));
  setenv("CUTS_HOST_BARRIER_TIMEOUT_MS", "300", 1);
  setenv("CUTS_HOST_THREADS", "os", 1);
  ok = k->launch({1}, {32}, {buf(x.data()), num(1)}, error);
  unsetenv("CUTS_HOST_THREADS");
  unsetenv("CUTS_HOST_BARRIER_TIMEOUT_MS");
  CHECK_FALSE(ok);
  CHECK(error.find("timed out") != std::string::npos);
}

TEST_CASE("host compile: errors carry the compiler's message", "[emit]") {
  std::string error;
  std::string broken = "__global__ void oops(float *x) {\n  x[0] = 1.0f\n}\n";
  CHECK_FALSE(compileForHost(broken, {"oops", {{"x", "float *"}}}, error));
  INFO(error);
  CHECK(error.find("host compiler failed on oops") != std::string::npos);
  // The compiler's own diagnostic, pointing into the kernel's source.
  CHECK(error.find("oops.cu:2") != std::string::npos);
  CHECK(error.find("error") != std::string::npos);

  // A parameter list that does not match the kernel is a compile error too.
  std::string fine = "__global__ void fine(float *x, int n) { x[0] = n; }\n";
  CHECK_FALSE(compileForHost(fine, {"fine", {{"x", "float *"}}}, error));
  CHECK(error.find("does not match") != std::string::npos);
}

TEST_CASE("host compile: the cache serves a kernel built before", "[emit]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("cuts-host-cache-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The compiler is a script that a test step can break: the cache key
  // holds the compiler's command, not what the command does.
  fs::path cxx = dir / "cxx";
  auto compilerWorks = [&](bool works) {
    std::ofstream(cxx) << (works ? "#!/bin/sh\nexec c++ \"$@\"\n"
                                 : "#!/bin/sh\nexit 1\n");
    fs::permissions(cxx, fs::perms::owner_all);
  };
  compilerWorks(true);
  HostCompileOptions o;
  o.cacheDir = (dir / "cache").string();
  o.compiler = cxx.string();
  KernelSignature sig{"fine", {{"x", "float *"}, {"n", "int"}}};
  std::string src = "__global__ void fine(float *x, int n) { x[0] = n; }\n";
  std::string error;
  REQUIRE(compileForHost(src, sig, error, o));
  auto libraries = [&] {
    std::vector<fs::path> out;
    for (auto &e : fs::directory_iterator(dir / "cache"))
      if (e.path().extension() == ".so")
        out.push_back(e.path());
    return out;
  };
  REQUIRE(libraries().size() == 1);
  // A hit runs no compiler.
  compilerWorks(false);
  auto k = compileForHost(src, sig, error, o);
  INFO(error);
  REQUIRE(k);
  float x = 0;
  REQUIRE(k->launch({1}, {1}, {buf(&x), num(7)}, error));
  CHECK(x == 7.0f);
  // Another source is a miss, so the failing compiler is run.
  std::string other = "__global__ void fine(float *x, int n) { x[0] = -n; }\n";
  CHECK_FALSE(compileForHost(other, sig, error, o));
  CHECK(error.find("host compiler failed") != std::string::npos);
  // A damaged entry is rebuilt, not loaded. (A new file: rewriting a
  // mapped library in place would crash the process that maps it.)
  k.reset();
  fs::path entry = libraries()[0];
  fs::remove(entry);
  std::ofstream(entry) << "junk";
  CHECK_FALSE(compileForHost(src, sig, error, o));
  compilerWorks(true);
  REQUIRE(compileForHost(src, sig, error, o));
  CHECK(fs::file_size(libraries()[0]) > 4);
  fs::remove_all(dir);
}

TEST_CASE("host compile: extern __shared__ rewrite keeps lines", "[emit]") {
  std::string error;
  std::string src = "// extern __shared__ float notThis[];\n"
                    "extern __shared__ __align__(16)\n  float4 tile[];\n"
                    "__shared__ float fixed[4];\n"
                    "extern __shared__ unsigned char raw[];extern __shared__ "
                    "int more[];\n";
  std::optional<std::string> out = rewriteForHost(src, error);
  REQUIRE(out);
  CHECK(std::count(out->begin(), out->end(), '\n') ==
        std::count(src.begin(), src.end(), '\n'));
  CHECK(out->find("// extern __shared__ float notThis[];") == 0);
  CHECK(
      out->find("float4 *const tile = ::cuts_host::dynamicShared<float4>();") !=
      std::string::npos);
  CHECK(out->find("__shared__ float fixed[4];") != std::string::npos);
  CHECK(out->find("unsigned char *const raw") != std::string::npos);
  CHECK(out->find("int *const more") != std::string::npos);
  CHECK_FALSE(rewriteForHost("extern __shared__ float sized[64];", error));
  CHECK(error.find("line 1") != std::string::npos);
}

TEST_CASE("packed arguments: cuLaunchKernel layout with range checks",
          "[emit]") {
  float data[2];
  std::vector<KernelParam> params = {
      {"p", "const float *__restrict__"}, {"n", "int"},
      {"m", "unsigned long long"},        {"alpha", "float"},
      {"beta", "const double"},           {"s", "std::size_t"}};
  std::string error;
  std::optional<PackedArgs> packed =
      PackedArgs::pack(params,
                       {buf(data), num(-7), num(int64_t(1) << 40),
                        KernelArg::realScalar(0.5), num(3), num(9)},
                       error);
  INFO(error);
  REQUIRE(packed);
  REQUIRE(packed->size() == 6);
  void **args = packed->data();
  CHECK(*static_cast<const float *const *>(args[0]) == data);
  CHECK(*static_cast<int *>(args[1]) == -7);
  CHECK(*static_cast<unsigned long long *>(args[2]) == 1ull << 40);
  CHECK(*static_cast<float *>(args[3]) == 0.5f);
  CHECK(*static_cast<double *>(args[4]) == 3.0);
  CHECK(*static_cast<size_t *>(args[5]) == 9);

  CHECK_FALSE(PackedArgs::pack({{"n", "int"}}, {num(int64_t(1) << 33)}, error));
  CHECK(error.find("does not fit") != std::string::npos);
  CHECK_FALSE(PackedArgs::pack({{"n", "unsigned"}}, {num(-1)}, error));
  CHECK_FALSE(PackedArgs::pack({{"p", "float *"}}, {num(0)}, error));
  CHECK_FALSE(PackedArgs::pack({{"n", "int"}}, {buf(data)}, error));
  CHECK_FALSE(
      PackedArgs::pack({{"n", "int"}}, {KernelArg::realScalar(1)}, error));
  CHECK_FALSE(PackedArgs::pack({{"s", "MyStruct"}}, {num(1)}, error));
  CHECK(error.find("cannot pack") != std::string::npos);
}

TEST_CASE("NVRTC: the tiled matmul for sm_80 and sm_90 with ptxas's report",
          "[emit]") {
  std::string error;
  REQUIRE(nvrtcAvailable()); // the tests build with the CUDA toolkit
  for (const char *arch : {"sm_80", "sm_90"}) {
    std::optional<NvrtcResult> r = compileWithNvrtc(kMatmulSource, arch, error);
    INFO(arch << ": " << error);
    REQUIRE(r);
    CHECK(r->arch == arch);
    CHECK(r->cubin.size() > 100);
    CHECK(std::string(r->cubin.data(), 4) == "\x7f"
                                             "ELF");
    const KernelResources *m = r->find("matmul");
    INFO(r->log);
    REQUIRE(m);
    CHECK(m->registers > 0);
    CHECK(m->sharedBytes == 2 * 16 * 16 * int(sizeof(float)));
    CHECK(m->spillStoreBytes == 0);
    CHECK(m->spillLoadBytes == 0);
    CHECK(m->stackFrameBytes == 0);
  }

  CHECK_FALSE(compileWithNvrtc("__global__ void k(float *x) { x[0] = 1.0f }\n",
                               "sm_90", error));
  INFO(error);
  CHECK(error.find("NVRTC failed for sm_90") != std::string::npos);
  CHECK(error.find("kernel.cu(1): error") != std::string::npos);
  CHECK_FALSE(compileWithNvrtc(kMatmulSource, "compute_90", error));
  CHECK(error.find("real GPU architecture") != std::string::npos);
}

TEST_CASE("NVRTC: every kernel of these tests compiles for sm_80 and sm_90",
          "[emit]") {
  REQUIRE(nvrtcAvailable()); // the tests build with the CUDA toolkit
  for (const char *source :
       {kAddSource, kBroadcastSource, kArrivalSource, kBlockSumSource,
        kWarpOpsSource, kReverseSource, kDivergentSource}) {
    for (const char *arch : {"sm_80", "sm_90"}) {
      std::string error;
      std::optional<NvrtcResult> r = compileWithNvrtc(source, arch, error);
      INFO(arch << ": " << error);
      REQUIRE(r);
      REQUIRE(r->kernels.size() == 1);
      CHECK(r->kernels[0].registers > 0);
    }
  }
}

TEST_CASE("ptxas report parsing", "[emit]") {
  std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for helper\n"
      "ptxas         .     24 bytes stack frame, 0 bytes spill stores, 0 "
      "bytes spill loads\n"
      "ptxas info    : Compiling entry function '_Z4convPf' for 'sm_80'\n"
      "ptxas info    : Function properties for _Z4convPf\n"
      "ptxas         .     48 bytes stack frame, 40 bytes spill stores, 36 "
      "bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 49152 bytes smem, "
      "368 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'tiny' for 'sm_80'\n"
      "ptxas info    : Function properties for tiny\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes "
      "spill loads\n"
      "ptxas info    : Used 4 registers, 352 bytes cmem[0]\n";
  std::vector<KernelResources> k = parsePtxasReport(log);
  REQUIRE(k.size() == 2);
  CHECK(k[0].function == "_Z4convPf");
  CHECK(k[0].registers == 255);
  CHECK(k[0].spillStoreBytes == 40);
  CHECK(k[0].spillLoadBytes == 36);
  CHECK(k[0].stackFrameBytes == 48);
  CHECK(k[0].sharedBytes == 49152);
  CHECK(k[0].barriers == 1);
  CHECK(k[1].function == "tiny");
  CHECK(k[1].registers == 4);
  CHECK(k[1].sharedBytes == 0);
  CHECK(k[1].barriers == -1);
  NvrtcResult r;
  r.kernels = k;
  CHECK(r.find("conv") == &r.kernels[0]);
  CHECK(r.find("tiny") == &r.kernels[1]);
  CHECK(r.find("con") == nullptr);
}

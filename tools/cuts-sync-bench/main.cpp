//===- cuts-sync-bench - cuSync's dependent kernels on a GPU -------------===//
//
// The microbenchmark of tile synchronisation (codegen/sync): an MLP's two
// GEMMs (fp32 SIMT, or with --fp16 on tensor cores), or two convs,
// generated with the parameters the model ranks first (with --tilings N,
// each pair of the first N block shapes of each), run back to back on
// one stream (StreamSync), as programmatic dependents (PDL) and with each
// policy the analysis proposes (the consumer's tiles waiting for the
// producer tiles they read), producer and consumer on two streams with the
// wait kernel, and over PDL: on one stream, the consumer a programmatic
// dependent that the producer's blocks launch once each has started. Each
// variant
// is one CUDA graph replayed; its output must equal StreamSync's bit for
// bit, with the intermediate poisoned (NaN) before every checked run. Each
// policy also runs eagerly with its consumer enqueued first (no deadlock).
// The MLPs also run as two cuBLAS GEMMs back to back, the peer to beat.
//
//   cuts-sync-bench [--arch h200] [--model gpt3|llama|conv64|..|conv512]
//                   [--rows 1,64,...] [--iters N] [--fp16] [--tilings N]
//                   [--order]
//
// --order: each synchronised producer takes its tiles from the slot counter
// in the first order of its grid dimensions that is not blockIdx's (the
// paper's T, forced where the model would not choose it).
//
// With several tilings a row size ends in a line "best": each way's fastest
// pair of tilings, as a tuner that times them all would pick (the gains
// against the fastest stream-ordered pair).
//
// For the convs (two 3x3 convs of a ResNet-38 / VGG-19 layer) the rows are
// the batch.
//
// The producer's stream has the higher priority: the block scheduler then
// dispatches every producer block before any consumer block that could
// spin on it, so a consumer never holds the SMs a producer tile needs.
//
//===----------------------------------------------------------------------===//
#include "codegen/emit/Cuda.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/Conv.h"
#include "codegen/ops/MatMul.h"
#include "codegen/sync/TileSync.h"
#include "perfmodel/Arch.h"
#include "perfmodel/ParamSearch.h"
#include "tools/support/CudaCheck.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace cuts;
using namespace cuts::codegen;

namespace {

#define CHECK_CU(x) CUTS_CHECK_CU("cuts-sync-bench", x)

struct Loaded {
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  LaunchShape shape;
};

// CUBINs by source. A row size's kernels are compiled on every core at
// once (NVRTC is thread-safe), then loaded one by one.
std::map<std::string, std::vector<char>> cubins;

void compileAll(std::vector<std::string> sources) {
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  sources.erase(
      std::remove_if(sources.begin(), sources.end(),
                     [](const std::string &s) { return cubins.count(s) > 0; }),
      sources.end());
  std::vector<const std::string *> todo;
  for (const std::string &s : sources)
    todo.push_back(&s);
  std::vector<std::string> errors;
  auto out = compileAllWithNvrtc(
      todo, "sm_90", int(std::max(1u, std::thread::hardware_concurrency())),
      errors);
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!out[i]) {
      std::fprintf(stderr, "cuts-sync-bench: error: NVRTC: %s\n",
                   errors[i].c_str());
      std::exit(1);
    }
    cubins[sources[i]] = std::move(out[i]->cubin);
  }
}

Loaded load(const std::string &source, const std::string &name,
            LaunchShape shape) {
  compileAll({source}); // a no-op once compiled
  Loaded l;
  l.shape = shape;
  CHECK_CU(cuModuleLoadData(&l.module, cubins.at(source).data()));
  CHECK_CU(cuModuleGetFunction(&l.fn, l.module, name.c_str()));
  CHECK_CU(cuFuncSetAttribute(l.fn,
                              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              int(shape.sharedBytes)));
  return l;
}

Loaded load(const Kernel &k) {
  return load(emitSource(k), k.name, launchShape(k));
}

void launch(const Loaded &l, CUstream s, std::vector<void *> args) {
  CHECK_CU(cuLaunchKernel(
      l.fn, unsigned(l.shape.blocks), 1, 1, unsigned(l.shape.threads), 1, 1,
      unsigned(l.shape.sharedBytes), s, args.data(), nullptr));
}

// As a programmatic dependent of the kernel before it on s (PDL: launched
// as that one's blocks exit, waiting in griddepcontrol.wait).
void launchDependent(const Loaded &l, CUstream s, std::vector<void *> args) {
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig c{};
  c.gridDimX = unsigned(l.shape.blocks), c.gridDimY = c.gridDimZ = 1;
  c.blockDimX = unsigned(l.shape.threads), c.blockDimY = c.blockDimZ = 1;
  c.sharedMemBytes = unsigned(l.shape.sharedBytes), c.hStream = s;
  c.attrs = &attr, c.numAttrs = 1;
  CHECK_CU(cuLaunchKernelEx(&c, l.fn, args.data(), nullptr));
}

#define CHECK_BLAS(x)                                                          \
  do {                                                                         \
    if (cublasStatus_t st = (x); st != CUBLAS_STATUS_SUCCESS) {                \
      std::fprintf(stderr, "cuts-sync-bench: error: %s: %s\n", #x,             \
                   cublasGetStatusString(st));                                 \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

// One of the MLP's GEMMs with cuBLAS, row-major: out[M, N] = in[M, K] times
// w ([K, N] in fp32; [N, K], a Linear layer's, in fp16), accumulating in
// fp32 and writing outFp16 ? fp16 : fp32. In cuBLAS's column-major terms
// out^T = w^T in^T.
void cublasGemm(cublasHandle_t h, int64_t M, int64_t N, int64_t K, bool fp16,
                CUdeviceptr in, CUdeviceptr w, CUdeviceptr out, bool outFp16) {
  const float one = 1.f, zero = 0.f;
  const cudaDataType t = fp16 ? CUDA_R_16F : CUDA_R_32F;
  CHECK_BLAS(cublasGemmEx(
      h, fp16 ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K),
      &one, reinterpret_cast<void *>(w), t, int(fp16 ? K : N),
      reinterpret_cast<void *>(in), t, int(K), &zero,
      reinterpret_cast<void *>(out), outFp16 ? CUDA_R_16F : CUDA_R_32F, int(N),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Waits for s, giving up (a deadlock: a consumer tile waiting for a tile
// never posted) after 30 s.
void finish(CUstream s) {
  auto start = std::chrono::steady_clock::now();
  while (cuStreamQuery(s) == CUDA_ERROR_NOT_READY) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(30)) {
      std::fprintf(stderr, "cuts-sync-bench: error: a run did not finish in "
                           "30 s (deadlock)\n");
      std::_Exit(2);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  CHECK_CU(cuStreamQuery(s));
}

std::vector<int64_t> parseList(const std::string &s) {
  std::vector<int64_t> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    v.push_back(std::atoll(item.c_str()));
  return v;
}

int perSM(const Loaded &l) {
  int n = 0;
  CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &n, l.fn, int(l.shape.threads), size_t(l.shape.sharedBytes)));
  return std::max(n, 1);
}

double waves(const Loaded &l, int sms) {
  return double(l.shape.blocks) / (perSM(l) * sms);
}

struct Buffers {
  CUdeviceptr x, w1, y1, w2, y2, sems, epoch, next; // next: T's slot counter
};

// Two dependent ops (the second reads the first's output) and the element
// counts of their five tensors.
struct Chain {
  OpDesc p, c;
  int64_t x, w1, y1, w2, y2;
  float scale1, scale2; // the weights' deviations: outputs near 1
};

// An MLP's two GEMMs at `rows` rows: h -> f -> h. In fp16 the weights are
// stored N x K (a Linear layer's), as the tensor-core products read them.
Chain mlp(int64_t rows, int64_t h, int64_t f, bool fp16) {
  OpDesc p = fp16 ? describeMatMul({rows, h}, {f, h}, {rows, f}, false, true)
                  : describeMatMul({rows, h}, {h, f}, {rows, f}, false, false);
  OpDesc c = fp16 ? describeMatMul({rows, f}, {h, f}, {rows, h}, false, true)
                  : describeMatMul({rows, f}, {f, h}, {rows, h}, false, false);
  p.elementBytes = c.elementBytes = fp16 ? 2 : 4;
  return {p,
          c,
          rows * h,
          h * f,
          rows * f,
          f * h,
          rows * h,
          1.f / std::sqrt(float(h)),
          1.f / std::sqrt(float(f))};
}

// Two 3x3 convs (padding 1) of a ResNet-38 or VGG-19 layer, c channels on
// a side x side image, at batch n.
Chain convs(int64_t n, int64_t c, int64_t side) {
  const Window win{{1, 1}, {1, 1, 1, 1}, {1, 1}};
  OpDesc d = describeConv({n, c, side, side}, {c, c, 3, 3}, {n, c, side, side},
                          1, win);
  const int64_t image = n * c * side * side, filter = c * c * 9;
  const float s = 1.f / std::sqrt(float(c * 9));
  return {d, d, image, filter, image, filter, image, s, s};
}

// The model's first-ranked kernels of up to `n` block shapes (each shape's
// first-ranked set); in fp16 only tensor-core ones, the output fp16 where
// it is the producer.
std::vector<Kernel> build(const std::string &name, const OpDesc &d,
                          const GpuArch &arch, bool producer, int n,
                          std::string &err) {
  std::vector<Kernel> built;
  std::vector<std::array<int64_t, 4>> shapes;
  for (const Candidate &c : searchParams(d, arch).kept) {
    const TileParams &t = c.params;
    const std::array<int64_t, 4> shape{t.Nb, t.Kb, t.Hb, t.Wb};
    if (int(built.size()) == n || (d.elementBytes == 2 && !t.tensorCore()) ||
        std::find(shapes.begin(), shapes.end(), shape) != shapes.end())
      continue;
    std::optional<Kernel> k;
    if (d.elementBytes == 2) {
      k = buildMmaMatMul(name, d, t, dfg::Type::F16, {}, err);
      if (k)
        k->weightB = true; // its first slices copied before the waits
      if (k && producer)   // as the driver types a 16-bit tensor
        setTensorType(*k, k->tensors.back().name, dfg::Type::F16);
    } else {
      k = d.kind == OpKind::Conv ? buildConv(name, d, t, {}, err)
                                 : buildMatMul(name, d, t, {}, err);
    }
    if (!k)
      return {};
    built.push_back(std::move(*k)), shapes.push_back(shape);
  }
  if (built.empty() && err.empty())
    err = "no tensor-core set kept";
  return built;
}

// f rounded to the nearest fp16 (even on ties); the bench's values are
// normal and small, so no subnormals and no overflow.
uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000, m = x & 0x7fffff;
  const int32_t e = int32_t((x >> 23) & 0xff) - 127 + 15;
  if (e <= 0)
    return uint16_t(sign);
  uint32_t h = sign | (uint32_t(e) << 10) | (m >> 13), rest = m & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(h);
}

// The ways a pair runs: stream order, PDL, each policy on two streams
// (the wait kernel), each policy over PDL (one stream).
constexpr int kWays = 6;
const char *const kWayNames[kWays] = {"stream",  "pdl",          "TileSync",
                                      "RowSync", "TileSync/pdl", "RowSync/pdl"};

int wayOf(const std::string &name) {
  for (int i = 0; i < kWays; ++i)
    if (name == kWayNames[i])
      return i;
  return -1;
}

// The fastest synchronised way (2..5), or INFINITY where none applies.
double fastestSynced(const double times[kWays]) {
  double t = INFINITY;
  for (int i = 2; i < kWays; ++i)
    if (!std::isnan(times[i]))
      t = std::min(t, times[i]);
  return t;
}

// One line of the table: times in us (NaN where a policy does not apply),
// gains against stream order in %.
void printRow(int64_t rows, const std::string &tiles, double waves,
              const double times[kWays], double cublasUs, double predicted,
              bool same) {
  const double stream = times[0];
  std::printf("%6lld %17s %6.2f %9.1f %8.1f %8.1f %8.1f %8.1f %8.1f %9.1f "
              "%6.1f%% %6.1f%% %8.1f%% %4s\n",
              (long long)rows, tiles.c_str(), waves, times[0], times[1],
              times[2], times[3], times[4], times[5], cublasUs,
              100.0 * (stream - times[1]) / stream,
              100.0 * (stream - fastestSynced(times)) / stream, predicted,
              same ? "yes" : "NO");
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  std::string archName = "h200", model = "gpt3";
  std::vector<int64_t> rows = {1, 64, 128, 256, 512, 1024, 2048};
  int iters = 10;
  int tilings = 1;    // block shapes of each kernel, every pair of them timed
  bool fp16 = false;  // the MLPs on tensor cores
  bool order = false; // every producer in a tile order not blockIdx's (T)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--arch" && i + 1 < argc)
      archName = argv[++i];
    else if (a == "--model" && i + 1 < argc)
      model = argv[++i];
    else if (a == "--rows" && i + 1 < argc)
      rows = parseList(argv[++i]);
    else if (a == "--iters" && i + 1 < argc)
      iters = std::atoi(argv[++i]);
    else if (a == "--fp16")
      fp16 = true;
    else if (a == "--tilings" && i + 1 < argc)
      tilings = std::max(1, std::atoi(argv[++i]));
    else if (a == "--order")
      order = true;
    else {
      std::fprintf(stderr, "cuts-sync-bench: error: unknown argument %s\n",
                   a.c_str());
      return 1;
    }
  }
  auto arch = findArch(archName);
  const bool conv = model.rfind("conv", 0) == 0;
  const int64_t channels = conv ? std::atoll(model.c_str() + 4) : 0;
  if (!arch || (model != "gpt3" && model != "llama" && channels != 64 &&
                channels != 128 && channels != 256 && channels != 512)) {
    std::fprintf(stderr, "cuts-sync-bench: error: unknown --arch or --model "
                         "(gpt3, llama, conv64, conv128, conv256, conv512)\n");
    return 1;
  }
  // Per GPU with 8-way tensor parallelism: GPT-3 145B's MLP (H = 12288,
  // 4H / 8 = 6144), LLaMA 65B's after SwiGLU (H = 8192, 22016 / 8 ~ 2752,
  // rounded to 2816). The convs: ResNet-38's and VGG-19's layers, 64 to 512
  // channels on images of 56 to 7 pixels a side (rows: the batch).
  const int64_t H = model == "gpt3" ? 12288 : 8192;
  const int64_t F = model == "gpt3" ? 6144 : 2816;
  const int64_t side = channels == 64    ? 56
                       : channels == 128 ? 28
                       : channels == 256 ? 14
                                         : 7;

  const std::string gpuName = tools::useFirstGpu("cuts-sync-bench");
  const char *gpu = gpuName.c_str();
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  int sms = 0;
  CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                dev));
  int least = 0, greatest = 0;
  cudaDeviceGetStreamPriorityRange(&least, &greatest);
  CUstream sa, sb;
  CHECK_CU(cuStreamCreateWithPriority(&sa, CU_STREAM_NON_BLOCKING, greatest));
  CHECK_CU(cuStreamCreateWithPriority(&sb, CU_STREAM_NON_BLOCKING, least));
  CUevent fork, join, t0, t1;
  CHECK_CU(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  CHECK_CU(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
  CHECK_CU(cuEventCreate(&t0, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&t1, CU_EVENT_DEFAULT));
  Loaded next =
      load(syncEpochKernel(), "cuts_sync_epoch", LaunchShape{1, 1, 0});
  Loaded hold = load(syncWaitKernel(), "cuts_sync_wait", LaunchShape{1, 1, 0});
  cublasHandle_t blas = nullptr; // the MLPs' peer: cuBLAS back to back
  if (!conv) {
    CHECK_BLAS(cublasCreate(&blas));
    CHECK_BLAS(cublasSetStream(blas, sa));
  }

  if (conv)
    std::printf("GPU: %s (%d SMs), model: %s, two 3x3 convs, %lld channels "
                "on %lldx%lld, fp32, each variant a CUDA graph\n",
                gpu, sms, arch->name.c_str(), (long long)channels,
                (long long)side, (long long)side);
  else
    std::printf("GPU: %s (%d SMs), model: %s, MLP %s: %lld -> %lld -> %lld, "
                "%s, each variant a CUDA graph\n",
                gpu, sms, arch->name.c_str(), model.c_str(), (long long)H,
                (long long)F, (long long)H,
                fp16 ? "fp16 on tensor cores (fp32 output)" : "fp32");
  // Gains against stream order: PDL's, the best policy's, the model's.
  std::printf("%6s %17s %6s %9s %8s %8s %8s %8s %8s %9s %7s %7s %9s %4s\n",
              "rows", "tiles p/c", "waves", "stream us", "pdl us", "tile us",
              "row us", "tile/pdl", "row/pdl", "cublas us", "pdl", "sync",
              "predicted", "same");
  std::mt19937 rng(0);
  for (int64_t M : rows) {
    const Chain ch = conv ? convs(M, channels, side) : mlp(M, H, F, fp16);
    std::string err;
    const std::vector<Kernel> ps = build("p", ch.p, *arch, true, tilings, err);
    const std::vector<Kernel> cs = build("c", ch.c, *arch, false, tilings, err);
    // Every pair of tilings the analysis follows, with each policy's kernels.
    struct Pair {
      const Kernel *p, *c;
      sync::Dependence dep;
      std::vector<sync::Policy> policies;
      std::vector<std::pair<Kernel, Kernel>> synced; // per policy
    };
    std::vector<Pair> pairs;
    std::vector<std::string> sources;
    int64_t semaphores = 1;
    for (const Kernel &p : ps)
      for (const Kernel &c : cs) {
        std::string why;
        auto dep = sync::dependence(p, c, 0, why);
        if (!dep) {
          err += why;
          continue;
        }
        Pair pr{&p, &c, *dep, sync::policies(*dep), {}};
        sources.push_back(emitSource(p)), sources.push_back(emitSource(c));
        for (const sync::Policy &pol : pr.policies) {
          Kernel sp = p, sc = c;
          sp.post = TilePost{dep->producer, pol, std::nullopt};
          if (order) // the first order of the grid's dimensions not its own
            for (sync::TileOrder o{{0, 1, 2, 3}};
                 !sp.post->order &&
                 std::next_permutation(o.fastest.begin(), o.fastest.end());)
              if (!o.natural(dep->producer))
                sp.post->order = o;
          sc.waits = {TileWait{sync::tiledFetch(c, 0)->tensor, *dep, pol}};
          sources.push_back(emitSource(sp)), sources.push_back(emitSource(sc));
          pr.synced.emplace_back(std::move(sp), std::move(sc));
        }
        semaphores = std::max(semaphores, dep->producer.blocks() + 1);
        pairs.push_back(std::move(pr));
      }
    if (pairs.empty()) {
      std::fprintf(stderr, "cuts-sync-bench: error: rows %lld: %s\n",
                   (long long)M, err.c_str());
      return 1;
    }
    compileAll(sources);
    Buffers b{};
    auto alloc = [](CUdeviceptr &ptr, size_t bytes) {
      CHECK_CU(cuMemAlloc(&ptr, std::max<size_t>(bytes, 4)));
    };
    auto fill = [&](CUdeviceptr ptr, size_t n, float scale) {
      std::vector<float> h(n);
      std::normal_distribution<float> dist(0.f, scale);
      for (float &v : h)
        v = dist(rng);
      if (!fp16) {
        CHECK_CU(cuMemcpyHtoD(ptr, h.data(), n * 4));
        return;
      }
      std::vector<uint16_t> half(n);
      for (size_t i = 0; i < n; ++i)
        half[i] = toHalf(h[i]);
      CHECK_CU(cuMemcpyHtoD(ptr, half.data(), n * 2));
    };
    const size_t eb = fp16 ? 2 : 4; // all but the fp32 output
    alloc(b.x, ch.x * eb), alloc(b.w1, ch.w1 * eb), alloc(b.y1, ch.y1 * eb);
    alloc(b.w2, ch.w2 * eb), alloc(b.y2, ch.y2 * 4);
    alloc(b.sems, size_t(semaphores) * 4), alloc(b.epoch, 4);
    alloc(b.next, 4);
    fill(b.x, ch.x, 1.f), fill(b.w1, ch.w1, ch.scale1);
    fill(b.w2, ch.w2, ch.scale2);
    CHECK_CU(cuCtxSynchronize()); // the uploads' DMA done before sa's work

    auto capture = [&](auto body) {
      CUgraph g;
      CUgraphExec e;
      CHECK_CU(cuStreamBeginCapture(sa, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
      body();
      CHECK_CU(cuStreamEndCapture(sa, &g));
      CHECK_CU(cuGraphInstantiate(&e, g, 0));
      CHECK_CU(cuGraphDestroy(g));
      return e;
    };
    // On sa: a plain cuMemset goes to the legacy stream, which a
    // non-blocking stream does not wait for.
    auto zeroSemaphores = [&] {
      CHECK_CU(cuMemsetD32Async(b.sems, 0, size_t(semaphores), sa));
      CHECK_CU(cuMemsetD32Async(b.epoch, 0, 1, sa));
      CHECK_CU(cuMemsetD32Async(b.next, 0, 1, sa));
    };
    auto poison = [&] { // NaN: a value read before it is stored shows
      CHECK_CU(cuMemsetD32Async(b.y1, 0xffffffffu, size_t(ch.y1) * eb / 4, sa));
      CHECK_CU(cuMemsetD32Async(b.y2, 0xffffffffu, size_t(ch.y2), sa));
    };
    // A graph's median time of 7 repetitions of `iters` replays.
    auto timeGraph = [&](CUgraphExec g) {
      std::vector<double> per;
      for (int rep = 0; rep < 7; ++rep) {
        CHECK_CU(cuEventRecord(t0, sa));
        for (int i = 0; i < iters; ++i)
          CHECK_CU(cuGraphLaunch(g, sa));
        CHECK_CU(cuEventRecord(t1, sa));
        finish(sa);
        float ms = 0;
        CHECK_CU(cuEventElapsedTime(&ms, t0, t1));
        per.push_back(1000.0 * ms / iters);
      }
      std::sort(per.begin(), per.end());
      return per[3];
    };
    double cublasUs = NAN;
    if (blas) { // warmed up outside the capture (cuBLAS's set-up)
      auto both = [&] {
        cublasGemm(blas, M, F, H, fp16, b.x, b.w1, b.y1, fp16);
        cublasGemm(blas, M, H, F, fp16, b.y1, b.w2, b.y2, false);
      };
      both();
      CHECK_CU(cuStreamSynchronize(sa));
      CUgraphExec g = capture(both);
      cublasUs = timeGraph(g);
      cuGraphExecDestroy(g);
    }
    std::vector<float> ref(size_t(ch.y2)), got(size_t(ch.y2));
    // Each way's fastest pair.
    double best[kWays];
    std::fill(best, best + kWays, INFINITY);
    bool same = true;
    for (const Pair &pr : pairs) {
      const Kernel &p = *pr.p, &c = *pr.c;
      Loaded lp = load(p), lc = load(c);
      auto text = [](const TileParams &t) {
        return std::to_string(t.Nb) + "x" + std::to_string(t.Kb) + "x" +
               std::to_string(t.Hb) + "x" + std::to_string(t.Wb);
      };
      const std::string tiles = text(p.params) + "/" + text(c.params);
      const double w = waves(lp, sms) + waves(lc, sms);
      // Each variant as a graph: StreamSync on one stream; a policy's
      // producer on sa and consumer on sb, then the epoch's increment.
      std::vector<std::pair<std::string, CUgraphExec>> graphs;
      struct Eager {
        Loaded p, c;
        CUdeviceptr started;
      };
      std::vector<Eager> eager; // per policy, for the consumer-first run
      std::vector<Loaded> loaded;
      graphs.emplace_back("stream", capture([&] {
                            launch(lp, sa, {&b.x, &b.w1, &b.y1});
                            launch(lc, sa, {&b.y1, &b.w2, &b.y2});
                          }));
      // Each alone, for the model's estimate.
      graphs.emplace_back("producer", capture([&] {
                            launch(lp, sa, {&b.x, &b.w1, &b.y1});
                          }));
      graphs.emplace_back("consumer", capture([&] {
                            launch(lc, sa, {&b.y1, &b.w2, &b.y2});
                          }));
      graphs.emplace_back("pdl", capture([&] {
                            launch(lp, sa, {&b.x, &b.w1, &b.y1});
                            launchDependent(lc, sa, {&b.y1, &b.w2, &b.y2});
                          }));
      for (size_t v = 0; v < pr.policies.size(); ++v) {
        Loaded ls = load(pr.synced[v].first), lw = load(pr.synced[v].second);
        loaded.push_back(ls), loaded.push_back(lw);
        CUdeviceptr started =
            b.sems + 4 * pr.policies[v].semaphores(pr.dep.producer);
        eager.push_back({ls, lw, started});
        graphs.emplace_back(
            pr.policies[v].name, capture([&] {
              CHECK_CU(cuEventRecord(fork, sa));
              CHECK_CU(cuStreamWaitEvent(sb, fork, 0));
              launch(ls, sa, {&b.x, &b.w1, &b.y1, &b.sems, &started, &b.next});
              launch(hold, sb, {&started, &b.epoch});
              launch(lw, sb, {&b.y1, &b.w2, &b.y2, &b.sems, &b.epoch});
              CHECK_CU(cuEventRecord(join, sb));
              CHECK_CU(cuStreamWaitEvent(sa, join, 0));
              launch(next, sa, {&b.epoch});
            }));
        // Over PDL: one stream, the consumer launched once every producer
        // block has started (no wait kernel, no fork or join).
        graphs.emplace_back(
            pr.policies[v].name + "/pdl", capture([&] {
              launch(ls, sa, {&b.x, &b.w1, &b.y1, &b.sems, &started, &b.next});
              launchDependent(lw, sa, {&b.y1, &b.w2, &b.y2, &b.sems, &b.epoch});
              launch(next, sa, {&b.epoch});
            }));
      }
      // Check (intermediate and output poisoned first) against the pair's
      // stream order, and time each.
      double times[kWays], alone[2] = {0, 0};
      std::fill(times, times + kWays, NAN);
      for (size_t v = 0; v < graphs.size(); ++v) {
        zeroSemaphores();
        const bool reference = v == 0;
        for (int check = 0; check < 2; ++check) {
          poison();
          CHECK_CU(cuGraphLaunch(graphs[v].second, sa));
          finish(sa);
          CHECK_CU(cuMemcpyDtoHAsync(reference ? ref.data() : got.data(), b.y2,
                                     size_t(ch.y2) * 4, sa));
          finish(sa);
          if (v > 2 && std::memcmp(ref.data(), got.data(), ref.size() * 4)) {
            same = false;
            size_t differ = 0, nans = 0, first = ref.size();
            for (size_t i = 0; i < ref.size(); ++i)
              if (std::memcmp(&ref[i], &got[i], 4)) {
                ++differ, nans += std::isnan(got[i]);
                first = std::min(first, i);
              }
            std::fprintf(stderr,
                         "  %s %s run %d: %zu outputs differ (%zu NaN), the "
                         "first at element %zu\n",
                         tiles.c_str(), graphs[v].first.c_str(), check, differ,
                         nans, first);
          }
        }
        const double us = timeGraph(graphs[v].second);
        const std::string &name = graphs[v].first;
        if (name == "producer" || name == "consumer")
          alone[name == "producer" ? 0 : 1] = us;
        else
          times[wayOf(name)] = us;
      }
      // Consumer first, eagerly: its wait kernel and tiles (waves of them,
      // each to spin) enqueued 2 ms before the producer. The hold keeps
      // them off the SMs until the producer has started, so the run ends
      // (finish() calls a deadlock after 30 s) with stream order's output.
      for (Eager &e : eager) {
        zeroSemaphores();
        poison();
        finish(sa);
        launch(hold, sb, {&e.started, &b.epoch});
        launch(e.c, sb, {&b.y1, &b.w2, &b.y2, &b.sems, &b.epoch});
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        launch(e.p, sa, {&b.x, &b.w1, &b.y1, &b.sems, &e.started, &b.next});
        finish(sa), finish(sb);
        CHECK_CU(cuMemcpyDtoH(got.data(), b.y2, size_t(ch.y2) * 4));
        if (std::memcmp(ref.data(), got.data(), ref.size() * 4)) {
          same = false;
          std::fprintf(stderr, "  %s consumer-first run: outputs differ\n",
                       tiles.c_str());
        }
      }
      for (int i = 0; i < kWays; ++i)
        if (!std::isnan(times[i]))
          best[i] = std::min(best[i], times[i]);
      // The model's best policy, from the kernels' times alone.
      double predicted = -INFINITY;
      for (const sync::Policy &pol : pr.policies) {
        sync::SyncEstimate e = sync::estimate(
            pr.dep, pol, {alone[0], perSM(lp)}, {alone[1], perSM(lc)}, sms,
            sync::kSyncOverPdlOverheadUs); // as the compiler on sm_90
        predicted = std::max(predicted, e.gain() / e.streamUs);
      }
      printRow(M, tiles, w, times, cublasUs, 100.0 * predicted, same);
      for (auto &g : graphs)
        cuGraphExecDestroy(g.second);
      for (const Loaded &l : loaded)
        cuModuleUnload(l.module);
      cuModuleUnload(lp.module), cuModuleUnload(lc.module);
    }
    if (pairs.size() > 1) // as a tuner timing every pair would choose
      printRow(M, "best", NAN, best, cublasUs, NAN, same);
    for (CUdeviceptr ptr : {b.x, b.w1, b.y1, b.w2, b.y2, b.sems, b.epoch})
      cuMemFree(ptr);
    if (!same)
      return 1;
  }
  cuModuleUnload(next.module);
  if (blas)
    cublasDestroy(blas);
  return 0;
}

//===- cuts-kernel-check - generated GEMM kernels on a GPU vs cuBLAS ------===//
//
// The code generator's GPU check and a validation of the performance model
// on GEMMs, runnable on a GPU host without MLIR:
// for each GEMM shape, the parameter sets the model keeps (best PUL first)
// and a sample of pruned ones are generated, compiled with NVRTC, checked
// against cuBLAS SGEMM (FP32, no TF32) and timed with CUDA events (median,
// after warm-up). Prints one row per shape: cuBLAS, the fastest generated
// kernel (the faster of the normal and prefetching loop), whether the
// fastest tested set was a kept one, the Spearman rank correlation between
// PUL and measured throughput, and how often prefetching was faster.
//
//   cuts-kernel-check [--arch h100] [--kept N] [--pruned N] [--json FILE]
//   cuts-kernel-check --tensor-core fp16|bf16 [--arch h100] [--json FILE]
//
// The second form checks and times tensor-core GEMMs (TensorCore.cpp).
//
//===----------------------------------------------------------------------===//
#include "Common.h"
#include "TensorCore.h"

#include "codegen/emit/Cuda.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/MatMul.h"
#include "perfmodel/ParamSearch.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace cuts;
using namespace cuts::kernel_check;

namespace {

double spearman(const std::vector<double> &x, const std::vector<double> &y) {
  auto ranks = [](const std::vector<double> &v) {
    std::vector<size_t> idx(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      idx[i] = i;
    std::sort(idx.begin(), idx.end(),
              [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size(); ++i)
      r[idx[i]] = double(i);
    return r;
  };
  auto rx = ranks(x), ry = ranks(y);
  double n = double(x.size()), mx = (n - 1) / 2, sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - mx);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - mx) * (ry[i] - mx);
  }
  return sxy / std::sqrt(sxx * syy);
}

} // namespace

int main(int argc, char **argv) {
  std::string archName = "h100", jsonPath, tensorCore;
  int keptCount = 24, prunedCount = 12;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--arch" && i + 1 < argc)
      archName = argv[++i];
    else if (a == "--kept" && i + 1 < argc)
      keptCount = std::atoi(argv[++i]);
    else if (a == "--pruned" && i + 1 < argc)
      prunedCount = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc)
      jsonPath = argv[++i];
    else if (a == "--tensor-core" && i + 1 < argc)
      tensorCore = argv[++i];
    else {
      std::fprintf(stderr, "cuts-kernel-check: error: unknown argument %s\n",
                   a.c_str());
      return 1;
    }
  }
  auto arch = findArch(archName);
  if (!arch) {
    std::fprintf(stderr, "cuts-kernel-check: error: unknown --arch %s\n",
                 archName.c_str());
    return 1;
  }
  const std::string gpuName = tools::useFirstGpu("cuts-kernel-check");
  const char *gpu = gpuName.c_str();
  if (!tensorCore.empty()) {
    std::printf("GPU: %s, model: %s\n", gpu, arch->name.c_str());
    return checkTensorCore(*arch, tensorCore, jsonPath);
  }
  cublasHandle_t blas;
  cublasCreate(&blas);
  cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH); // FP32, no TF32

  // BERT-base at sequence 128: the attention projections and the MLP, at
  // batch 1 and 32 (rows = batch x 128).
  std::vector<Shape> shapes = {
      {"bert b1 qkv/out", 128, 768, 768}, {"bert b1 ffn1", 128, 768, 3072},
      {"bert b1 ffn2", 128, 3072, 768},   {"bert b32 qkv/out", 4096, 768, 768},
      {"bert b32 ffn1", 4096, 768, 3072}, {"bert b32 ffn2", 4096, 3072, 768}};
  std::printf("GPU: %s, model: %s\n", gpu, arch->name.c_str());
  std::printf("%-18s %9s %9s %7s %6s %6s %7s %8s %9s %8s\n", "shape", "cublas",
              "cuts", "ratio", "tested", "wrong", "fastest", "spearman",
              "%fp32peak", "prefetch");
  std::ofstream json;
  if (!jsonPath.empty())
    json.open(jsonPath), json << "[\n";
  std::mt19937 rng(0);
  bool firstJson = true;
  for (const Shape &s : shapes) {
    size_t na = s.M * s.K, nb = s.K * s.N, ny = s.M * s.N;
    std::vector<float> ha(na), hb(nb);
    std::normal_distribution<float> dist(0.f, 1.f);
    for (float &x : ha)
      x = dist(rng);
    for (float &x : hb)
      x = dist(rng);
    float *a, *b, *y, *ref;
    cudaMalloc(&a, na * 4);
    cudaMalloc(&b, nb * 4);
    cudaMalloc(&y, ny * 4);
    cudaMalloc(&ref, ny * 4);
    cudaMemcpy(a, ha.data(), na * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), nb * 4, cudaMemcpyHostToDevice);
    float one = 1, zero = 0;
    // Row-major Y = A B is column-major Y^T = B^T A^T.
    auto sgemm = [&](cudaStream_t st) {
      cublasSetStream(blas, st);
      cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, int(s.N), int(s.M), int(s.K),
                  &one, b, int(s.N), a, int(s.K), &zero, ref, int(s.N));
    };
    double tBlas = timeMs(sgemm);
    std::vector<float> hr(ny);
    cudaMemcpy(hr.data(), ref, ny * 4, cudaMemcpyDeviceToHost);

    OpDesc d = describeMatMul({s.M, s.K}, {s.K, s.N}, {s.M, s.N}, false, false);
    PruneOptions opts;
    SearchResult kept = searchParams(d, *arch, opts);
    // Pruned sets: a deterministic sample of everything not kept.
    std::vector<TileParams> pruned;
    double worstKept = kept.kept.back().bound.pul;
    forEachParams(d, *arch, [&](const TileParams &p) {
      if (evaluateBound(d, p, *arch).pul < worstKept && rng() % 997 == 0)
        pruned.push_back(p);
    });
    std::shuffle(pruned.begin(), pruned.end(), rng);
    std::vector<std::pair<TileParams, bool>> tests;
    for (const Candidate &c : kept.kept) {
      if (int(tests.size()) >= keptCount)
        break;
      // The block DFG is built whole before extraction: keep it small.
      if (c.params.Nb * c.params.Kb * c.params.Cin <= (1 << 17))
        tests.push_back({c.params, true});
    }
    int nPruned = 0;
    for (const TileParams &p : pruned) {
      if (nPruned >= prunedCount)
        break;
      if (p.Nb * p.Kb * p.Cin <= (1 << 17) &&
          evaluateBound(d, p, *arch).coefR > 0)
        tests.push_back({p, false}), ++nPruned;
    }

    std::vector<double> puls, tflops;
    double best = INFINITY;
    bool bestKept = false;
    int wrong = 0;
    // Compiles, checks and times one kernel: its median time in ms, -1 if
    // its result is wrong, nullopt if it does not compile or launch.
    auto measure = [&](const codegen::Kernel &k) -> std::optional<double> {
      std::string err;
      auto r = compileWithNvrtc(codegen::emitSource(k), "sm_90", err);
      if (!r)
        return std::nullopt;
      CUmodule mod;
      CUfunction fn;
      if (cuModuleLoadData(&mod, r->cubin.data()) != CUDA_SUCCESS)
        return std::nullopt;
      CHECK_CU(cuModuleGetFunction(&fn, mod, "cuts_gemm"));
      codegen::LaunchShape l = codegen::launchShape(k);
      if (cuFuncSetAttribute(fn,
                             CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             int(l.sharedBytes)) != CUDA_SUCCESS) {
        cuModuleUnload(mod);
        return std::nullopt;
      }
      void *args[] = {&a, &b, &y};
      cudaMemset(y, 0xff, ny * 4); // NaN: unwritten outputs fail the check
      auto run = [&](cudaStream_t st) {
        cuLaunchKernel(fn, unsigned(l.blocks), 1, 1, unsigned(l.threads), 1, 1,
                       unsigned(l.sharedBytes), st, args, nullptr);
      };
      run(timingStream());
      cudaDeviceSynchronize();
      double t = deviceRelativeL2(y, hr) <= 1e-5 ? timeMs(run) : -1.0;
      cuModuleUnload(mod);
      return t;
    };
    int prefetchWins = 0;
    for (const auto &[p, isKept] : tests) {
      std::string err;
      auto k = codegen::buildMatMul("cuts_gemm", d, p, {}, err);
      if (!k)
        continue;
      // Both variants of the loop (§3.4.1): normal and prefetching.
      auto normal = measure(*k);
      k->prefetch = true;
      auto prefetched = measure(*k);
      if ((normal && *normal < 0) || (prefetched && *prefetched < 0)) {
        ++wrong;
        continue;
      }
      if (!normal && !prefetched)
        continue;
      bool usePrefetch = prefetched && (!normal || *prefetched < *normal);
      prefetchWins += usePrefetch;
      double t = usePrefetch ? *prefetched : *normal;
      double pul = evaluateBound(d, p, *arch).pul;
      puls.push_back(pul);
      tflops.push_back(2.0 * s.M * s.K * s.N / (t * 1e-3) / 1e12);
      if (t < best) {
        best = t;
        bestKept = isKept;
      }
      if (json.is_open()) {
        json << (firstJson ? "" : ",\n") << "{\"shape\": \"" << s.name
             << "\", \"kept\": " << (isKept ? "true" : "false")
             << ", \"pul\": " << pul << ", \"ms\": " << t
             << ", \"Nb\": " << p.Nb << ", \"Kb\": " << p.Kb
             << ", \"Nt\": " << p.Nt << ", \"Kt\": " << p.Kt
             << ", \"Cin\": " << p.Cin
             << ", \"prefetch\": " << (usePrefetch ? "true" : "false")
             << ", \"format\": \"" << formatName(p.format)
             << "\", \"cublasMs\": " << tBlas << "}";
        firstJson = false;
      }
    }
    double rho = puls.size() > 2 ? spearman(puls, tflops) : NAN;
    std::printf(
        "%-18s %9.4f %9.4f %7.2f %6zu %6d %7s %8.2f %9.1f %8d\n", s.name, tBlas,
        best, best / tBlas, puls.size(), wrong, bestKept ? "kept" : "PRUNED",
        rho, 100.0 * 2.0 * s.M * s.K * s.N / (best * 1e-3) / arch->perfPeakFp32,
        prefetchWins);
    std::fflush(stdout);
    cudaFree(a), cudaFree(b), cudaFree(y), cudaFree(ref);
  }
  if (json.is_open())
    json << "\n]\n";
  cublasDestroy(blas);
  return 0;
}

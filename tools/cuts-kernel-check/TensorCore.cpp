//===- TensorCore.cpp - tensor-core GEMMs on a GPU vs cublasGemmEx --------===//
//
// cuts-kernel-check --tensor-core fp16|bf16: for each GEMM shape and both
// layouts of B (as stored, and transposed as a Linear layer's weight), every
// tiling in kTilings is generated (buildMmaMatMul), compiled with NVRTC in
// parallel, checked against cublasGemmEx (16-bit operands, fp32 accumulate
// and output) and timed. One row per shape: cuBLAS, the fastest tiling, the
// share of cuBLAS's throughput it reaches, and % of the tensor-core peak.
//
//===----------------------------------------------------------------------===//
#include "TensorCore.h"
#include "Common.h"

#include "codegen/emit/Cuda.h"
#include "codegen/emit/Nvrtc.h"
#include "codegen/ops/MatMul.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <random>
#include <thread>

namespace cuts::kernel_check {
namespace {

struct Tiling {
  codegen::MmaLoop loop;
  int64_t bk;
};

// mma.sync block shapes from 16x64 (many blocks for M = 128) to 256x128,
// warp tiles up to 64x64; wgmma (B transposed only) from 64x32 to 256x128
// with one or two warpgroups, each also warp-specialised; two K slices and
// two pipeline depths.
std::vector<Tiling> tilings(dfg::Type t) {
  std::vector<Tiling> out;
  struct W {
    MatrixInstr instr;
    int64_t wm, wn, mi, ni;
  };
  const W warps[] = {
      {MatrixInstr::MmaSync, 1, 2, 1, 4}, {MatrixInstr::MmaSync, 2, 2, 1, 2},
      {MatrixInstr::MmaSync, 1, 4, 2, 2}, {MatrixInstr::MmaSync, 1, 2, 2, 4},
      {MatrixInstr::MmaSync, 2, 2, 1, 4}, {MatrixInstr::MmaSync, 2, 2, 2, 4},
      {MatrixInstr::MmaSync, 2, 2, 4, 4}, {MatrixInstr::MmaSync, 2, 4, 2, 4},
      {MatrixInstr::MmaSync, 4, 2, 2, 4}, {MatrixInstr::MmaSync, 2, 2, 2, 8},
      {MatrixInstr::MmaSync, 4, 2, 2, 8}, {MatrixInstr::MmaSync, 2, 4, 4, 4},
      {MatrixInstr::MmaSync, 4, 4, 2, 4}, {MatrixInstr::MmaSync, 2, 2, 4, 8},
      {MatrixInstr::MmaSync, 2, 4, 4, 8}, {MatrixInstr::MmaSync, 4, 2, 4, 8},
      {MatrixInstr::Wgmma, 1, 1, 1, 4},   {MatrixInstr::Wgmma, 1, 1, 1, 8},
      {MatrixInstr::Wgmma, 1, 1, 2, 8},   {MatrixInstr::Wgmma, 1, 1, 2, 16},
      {MatrixInstr::Wgmma, 2, 1, 1, 16},  {MatrixInstr::Wgmma, 2, 1, 2, 16},
      {MatrixInstr::Wgmma, 1, 1, 1, 32},  {MatrixInstr::Wgmma, 2, 1, 1, 32},
      {MatrixInstr::Wgmma, 2, 1, 2, 8}};
  for (const W &w : warps)
    for (int64_t bk : {32, 64})
      for (int64_t stages : {3, 4})
        for (bool ws : {false, true}) {
          if (ws && w.instr != MatrixInstr::Wgmma)
            continue;
          codegen::MmaLoop m;
          m.instr = w.instr, m.operand = t, m.warpsM = w.wm, m.warpsN = w.wn;
          m.mi = w.mi, m.ni = w.ni, m.stages = stages;
          m.warpSpecialized = ws;
          out.push_back({m, bk});
        }
  return out;
}

TileParams paramsOf(const Tiling &t) {
  return codegen::mmaParams(t.loop, t.bk);
}

bool isWgmma(const Tiling &t) { return t.loop.instr == MatrixInstr::Wgmma; }

std::string describe(const Tiling &t) {
  const codegen::MmaLoop &m = t.loop;
  return std::string(isWgmma(t) ? "wgmma " : "mma ") +
         std::to_string(m.blockRows()) + "x" + std::to_string(m.blockCols()) +
         "x" + std::to_string(t.bk) + " w" + std::to_string(m.warpsM) + "x" +
         std::to_string(m.warpsN) + " s" + std::to_string(m.stages) +
         (m.warpSpecialized ? " ws" : "");
}

// cuda_fp16.h's host conversions, round to nearest even.
uint16_t to16(float f, bool bf16) {
  uint16_t bits;
  if (bf16) {
    __nv_bfloat16 h = __float2bfloat16_rn(f);
    std::memcpy(&bits, &h, 2);
  } else {
    __half h = __float2half_rn(f);
    std::memcpy(&bits, &h, 2);
  }
  return bits;
}

struct Compiled {
  Tiling tiling;
  codegen::LaunchShape launch;
  std::vector<char> cubin;
};

// Builds and compiles every tiling for one shape, on all host cores.
std::vector<Compiled> compileAll(const OpDesc &d, dfg::Type t) {
  std::vector<Tiling> all = tilings(t);
  std::vector<std::future<std::optional<Compiled>>> jobs;
  auto one = [&d](Tiling tl) -> std::optional<Compiled> {
    std::string err;
    auto k = codegen::buildMmaMatMul("cuts_gemm", d, paramsOf(tl),
                                     tl.loop.operand, {}, err);
    if (!k)
      return std::nullopt;
    auto r = compileWithNvrtc(codegen::emitSource(*k),
                              isWgmma(tl) ? "sm_90a" : "sm_90", err);
    if (!r) {
      std::fprintf(stderr, "cuts-kernel-check: %s does not compile: %s\n",
                   describe(tl).c_str(), err.c_str());
      return std::nullopt;
    }
    return Compiled{tl, codegen::launchShape(*k), r->cubin};
  };
  // std::async per tiling, bounded by the cores: NVRTC is thread-safe.
  unsigned width = std::max(1u, std::thread::hardware_concurrency());
  std::vector<Compiled> out;
  for (size_t i = 0; i < all.size(); i += width) {
    jobs.clear();
    for (size_t j = i; j < std::min(all.size(), i + width); ++j)
      jobs.push_back(std::async(std::launch::async, one, all[j]));
    for (auto &f : jobs)
      if (auto c = f.get())
        out.push_back(std::move(*c));
  }
  return out;
}

} // namespace

int checkTensorCore(const GpuArch &arch, const std::string &precision,
                    const std::string &jsonPath) {
  const bool bf16 = precision == "bf16";
  if (!bf16 && precision != "fp16") {
    std::fprintf(stderr,
                 "cuts-kernel-check: error: --tensor-core takes fp16 or bf16, "
                 "not '%s'\n",
                 precision.c_str());
    return 1;
  }
  const dfg::Type type = bf16 ? dfg::Type::BF16 : dfg::Type::F16;
  const cudaDataType cudaType = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cuts-kernel-check: error: cublasCreate failed\n");
    return 1;
  }
  // BERT-base's and GPT-2's linear layers at sequence 128, batch 1 and 32
  // (rows = batch x 128): both have hidden 768 and MLP 3072; GPT-2 fuses
  // Q, K and V into one 768 x 2304 product.
  std::vector<Shape> shapes = {
      {"b1 qkv/out 768", 128, 768, 768},   {"b1 gpt2 qkv", 128, 768, 2304},
      {"b1 ffn1", 128, 768, 3072},         {"b1 ffn2", 128, 3072, 768},
      {"b32 qkv/out 768", 4096, 768, 768}, {"b32 gpt2 qkv", 4096, 768, 2304},
      {"b32 ffn1", 4096, 768, 3072},       {"b32 ffn2", 4096, 3072, 768}};
  std::printf("%s GEMM on tensor cores, fp32 accumulate and output\n",
              precision.c_str());
  std::printf("%-18s %3s %9s %9s %8s %7s %6s %9s  %s\n", "shape", "B", "cublas",
              "cuts", "%cublas", "tested", "wrong", "%tc-peak", "fastest");
  std::ofstream json;
  if (!jsonPath.empty())
    json.open(jsonPath), json << "[\n";
  bool firstJson = true;
  std::mt19937 rng(0);
  int failures = 0;
  for (const Shape &s : shapes)
    for (bool transB : {false, true}) {
      size_t na = s.M * s.K, nb = s.K * s.N, ny = s.M * s.N;
      std::normal_distribution<float> dist(0.f, 1.f);
      std::vector<uint16_t> ha(na), hb(nb);
      for (uint16_t &x : ha)
        x = to16(dist(rng), bf16);
      for (uint16_t &x : hb)
        x = to16(dist(rng), bf16);
      void *a, *b;
      float *y, *ref;
      cudaMalloc(&a, na * 2), cudaMalloc(&b, nb * 2);
      cudaMalloc(&y, ny * 4), cudaMalloc(&ref, ny * 4);
      cudaMemcpy(a, ha.data(), na * 2, cudaMemcpyHostToDevice);
      cudaMemcpy(b, hb.data(), nb * 2, cudaMemcpyHostToDevice);
      float one = 1, zero = 0;
      // Row-major Y = A B is column-major Y^T = B^T A^T; a transposed B
      // (stored [N, K]) is column-major B, so cuBLAS transposes it back.
      auto gemmEx = [&](cudaStream_t st) {
        cublasSetStream(blas, st);
        cublasGemmEx(blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N,
                     int(s.N), int(s.M), int(s.K), &one, b, cudaType,
                     int(transB ? s.K : s.N), a, cudaType, int(s.K), &zero, ref,
                     CUDA_R_32F, int(s.N), CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
      };
      double tBlas = timeMs(gemmEx);
      std::vector<float> hr(ny);
      cudaMemcpy(hr.data(), ref, ny * 4, cudaMemcpyDeviceToHost);

      OpDesc d = describeMatMul({s.M, s.K},
                                transB ? std::vector<int64_t>{s.N, s.K}
                                       : std::vector<int64_t>{s.K, s.N},
                                {s.M, s.N}, false, transB);
      std::vector<Compiled> kernels = compileAll(d, type);
      double best = INFINITY;
      std::string bestName = "-";
      int wrong = 0, tested = 0;
      for (const Compiled &c : kernels) {
        CUmodule mod;
        CUfunction fn;
        if (cuModuleLoadData(&mod, c.cubin.data()) != CUDA_SUCCESS)
          continue;
        CHECK_CU(cuModuleGetFunction(&fn, mod, "cuts_gemm"));
        if (cuFuncSetAttribute(fn,
                               CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               int(c.launch.sharedBytes)) != CUDA_SUCCESS) {
          cuModuleUnload(mod);
          continue;
        }
        void *args[] = {&a, &b, &y};
        cudaMemset(y, 0xff, ny * 4); // NaN: unwritten outputs fail the check
        auto run = [&](cudaStream_t st) {
          cuLaunchKernel(fn, unsigned(c.launch.blocks), 1, 1,
                         unsigned(c.launch.threads), 1, 1,
                         unsigned(c.launch.sharedBytes), st, args, nullptr);
        };
        run(timingStream());
        CHECK_CU(cuCtxSynchronize());
        const double err = deviceRelativeL2(y, hr);
        ++tested;
        // Both accumulate exact 16-bit products in fp32, in different orders.
        if (!(err <= 1e-5)) {
          ++wrong;
          std::fprintf(stderr, "cuts-kernel-check: %s wrong: rel L2 %.3g\n",
                       describe(c.tiling).c_str(), err);
          cuModuleUnload(mod);
          continue;
        }
        double t = timeMs(run);
        cuModuleUnload(mod);
        if (json.is_open()) {
          json << (firstJson ? "" : ",\n") << "{\"shape\": \"" << s.name
               << "\", \"transB\": " << (transB ? "true" : "false")
               << ", \"tiling\": \"" << describe(c.tiling)
               << "\", \"ms\": " << t << ", \"cublasMs\": " << tBlas << "}";
          firstJson = false;
        }
        if (t < best)
          best = t, bestName = describe(c.tiling);
      }
      failures += wrong;
      double flops = 2.0 * s.M * s.K * s.N;
      std::printf("%-18s %3s %9.4f %9.4f %8.1f %7d %6d %9.1f  %s\n", s.name,
                  transB ? "B^T" : "B", tBlas, best, 100.0 * tBlas / best,
                  tested, wrong,
                  100.0 * flops / (best * 1e-3) / arch.perfPeakFp16,
                  bestName.c_str());
      std::fflush(stdout);
      cudaFree(a), cudaFree(b), cudaFree(y), cudaFree(ref);
    }
  if (json.is_open())
    json << "\n]\n";
  cublasDestroy(blas);
  return failures ? 1 : 0;
}

} // namespace cuts::kernel_check

//===- Blas.h - plan steps that call cuBLASLt -------------------*- C++ -*-===//
//
// A matrix product the tuner found faster in cuBLASLt than in our generated
// kernels becomes a library kernel with library = "cublaslt.gemm" and the
// GemmSpec below as libraryParams (as cuDNN convolutions do, Library.h).
// The runtime (Runtime.cpp) and the tuner share this wrapper.
//
// cuBLASLt is loaded with dlopen ("libcublasLt.so.13", then ".so.12") on
// first use and never linked; no CUDA header is included: the few types,
// enums and entry points used are declared in Blas.cpp with cuBLASLt's ABI.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_BLAS_H
#define CUTS_RUNTIME_BLAS_H

#include "cuts/rt/CudaDriver.h"
#include "cuts/rt/LibraryMath.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cuts::rt {

/// KernelLaunch::library of a cuBLASLt matrix product.
inline constexpr const char *kCublasGemm = "cublaslt.gemm";

/// A batch of row-major products, as cuBLASLt computes them in `math`
/// (LibraryMath.h: fp32 tensors with compute type 32F, never TF32; fp32
/// with 32F_FAST_TF32; fp16 or bf16 tensors with 32F):
///
///   Y[b] = act(alpha * op(A[b]) op(B[b]) + bias[n] + Z[b])
///
/// op(A) is M x K (A stored K x M if transA), op(B) is K x N (B stored
/// N x K if transB), Y is M x N. An operand without its batch flag is one
/// matrix shared by every product (Z then broadcasts). act is `act`.
/// The args are tensor ids in the order A, B, [bias], [Z], Y.
/// cuBLASLt's epilogue activations (part of the artifact format): GELU is
/// its tanh approximation, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715
/// x^3))), GPT-2's gelu_new and ONNX's Gelu with approximate = "tanh".
enum class GemmAct : int8_t { None = 0, Relu = 1, GeluTanh = 2 };

struct GemmSpec {
  int64_t M = 0, N = 0, K = 0;
  int64_t batch = 1;
  bool transA = false, transB = false;
  bool batchA = true, batchB = true;
  bool bias = false;
  bool residual = false;
  bool batchZ = true;
  GemmAct act = GemmAct::None;
  float alpha = 1.0f;
  /// Index into the list cuBLASLt's heuristic returns for the spec
  /// (cublasLtMatmulAlgoGetHeuristic, at most kMaxGemmAlgos).
  int algo = 0;
  LibraryMath math = LibraryMath::Fp32;

  uint64_t elem() const { return libraryElementBytes(math); }
  uint64_t aBytes() const {
    return elem() * uint64_t((batchA ? batch : 1) * M * K);
  }
  uint64_t bBytes() const {
    return elem() * uint64_t((batchB ? batch : 1) * K * N);
  }
  uint64_t biasBytes() const { return elem() * uint64_t(N); }
  uint64_t zBytes() const {
    return elem() * uint64_t((batchZ ? batch : 1) * M * N);
  }
  uint64_t yBytes() const { return elem() * uint64_t(batch * M * N); }
  /// A, B, [bias], [Z], Y.
  size_t numArgs() const { return 3 + size_t(bias) + size_t(residual); }

  bool operator==(const GemmSpec &o) const;
  bool operator!=(const GemmSpec &o) const { return !(*this == o); }
};

/// Heuristic results the tuner tries per product.
constexpr int kMaxGemmAlgos = 8;

/// The number of values in an encoded GemmSpec.
constexpr size_t kGemmSpecParams = 15;

/// The manifest's libraryParams of a "cublaslt.gemm" kernel: kGemmSpecParams
/// integers in this order (part of the artifact format),
///
///   M, N, K, batch, transA, transB, batchA, batchB, bias, residual,
///   batchZ, act (GemmAct), alpha (the bits of the float), algo, math
///
/// (decoding also takes the first 14 alone, as fp32: artifacts written
/// before the math was).
std::vector<int64_t> encodeGemmSpec(const GemmSpec &s);

/// The inverse of encodeGemmSpec; also checks the spec (checkGemmSpec).
std::optional<GemmSpec> decodeGemmSpec(const std::vector<int64_t> &params,
                                       std::string &error);

/// Positive sizes within int32 per matrix dimension, flags 0 or 1, a finite
/// alpha, algo in [0, kMaxGemmAlgos). No cuBLASLt needed.
bool checkGemmSpec(const GemmSpec &s, std::string &error);

/// One line: "gemm 12 x [128x64] * [64x128]^T * 0.125 +Z(shared) algo 0".
std::string describeGemmSpec(const GemmSpec &s);

/// cuBLASLt's version (cublasLtGetVersion), loading it if needed; 0 and
/// `error` if it cannot be loaded.
size_t cublasLtVersion(std::string &error);

/// A cuBLASLt handle (cublasLtCreate) for the current context's device.
/// Handles are thread-safe in cuBLASLt; one per model is enough.
class CublasLtHandle {
public:
  static std::unique_ptr<CublasLtHandle> create(std::string &error);
  ~CublasLtHandle();
  CublasLtHandle(const CublasLtHandle &) = delete;
  CublasLtHandle &operator=(const CublasLtHandle &) = delete;
  void *raw() const { return handle_; }

private:
  CublasLtHandle() = default;
  void *handle_ = nullptr;
};

/// One GemmSpec's descriptors and chosen algorithm. run() may be called
/// from several threads (it serialises the bias pointer update).
class CublasLtGemm {
public:
  /// Checks the spec, builds the descriptors and asks the heuristic for
  /// kMaxGemmAlgos algorithms; fails (nullptr and `error`) when it offers
  /// fewer than spec.algo + 1, unless `anyAlgo`: then its first. An
  /// artifact tuned against another cuBLASLt still loads (the same product,
  /// maybe slower); the tuner times only the algorithm it asks for.
  static std::unique_ptr<CublasLtGemm> create(const GemmSpec &spec,
                                              CublasLtHandle &handle,
                                              std::string &error,
                                              bool anyAlgo = false);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm &) = delete;
  CublasLtGemm &operator=(const CublasLtGemm &) = delete;

  const GemmSpec &spec() const { return spec_; }
  /// The workspace the chosen algorithm needs.
  size_t workspaceBytes() const { return workspace_; }

  /// Enqueues the product on `stream`; `bias` is ignored without
  /// spec().bias, `z` without spec().residual. No allocation and no
  /// synchronisation, so it may run under CUDA graph capture.
  bool run(CublasLtHandle &handle, cuda::CUstream stream, cuda::CUdeviceptr a,
           cuda::CUdeviceptr b, cuda::CUdeviceptr bias, cuda::CUdeviceptr z,
           cuda::CUdeviceptr y, cuda::CUdeviceptr workspace,
           size_t workspaceBytes, std::string &error) const;

private:
  CublasLtGemm() = default;
  GemmSpec spec_;
  void *desc_ = nullptr; // cublasLtMatmulDesc_t
  // Layouts of cuBLASLt's operands: ltA_ is our B, ltB_ our A (Blas.cpp).
  void *ltA_ = nullptr, *ltB_ = nullptr, *c_ = nullptr, *d_ = nullptr;
  uint64_t algo_[8] = {}; // cublasLtMatmulAlgo_t
  size_t workspace_ = 0;
  mutable std::mutex mutex_;
  mutable cuda::CUdeviceptr lastBias_ = 0;
};

} // namespace cuts::rt

#endif // CUTS_RUNTIME_BLAS_H

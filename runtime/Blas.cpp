//===- Blas.cpp - cuBLASLt, loaded with dlopen ----------------------------===//
//
// The cuBLASLt types and entry points used here, declared with its ABI
// (checked against cublasLt.h and cublas_api.h of CUDA 13.0; unchanged since
// CUDA 11): handles and descriptors are opaque pointers, cublasStatus_t and
// the enums are C enums (int-sized), cublasLtMatmulAlgo_t is 8 uint64_t.
//
// cuBLASLt is column-major; our tensors are row-major. A row-major R x C
// matrix is a column-major C x R one, so Y = A B is computed as
// Y^T = B^T A^T: cuBLASLt's first operand is our B and its second our A,
// and the bias (one value per column N of Y) runs along the rows of Y^T,
// which is what CUBLASLT_EPILOGUE_BIAS broadcasts.
//
//===----------------------------------------------------------------------===//

#include "cuts/rt/Blas.h"

#include "DynamicLibrary.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace cuts::rt {
namespace {

//===- cuBLASLt's ABI -----------------------------------------------------===//

using cublasStatus_t = int;
using cublasLtHandle_t = void *;
using cublasLtMatmulDesc_t = void *;
using cublasLtMatrixLayout_t = void *;
using cublasLtMatmulPreference_t = void *;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr int CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14; // cudaDataType
constexpr int CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
constexpr int CUBLAS_OP_N = 0, CUBLAS_OP_T = 1;
// cublasLtMatmulDescAttributes_t
constexpr int DESC_TRANSA = 3, DESC_TRANSB = 4, DESC_EPILOGUE = 7,
              DESC_BIAS_POINTER = 8, DESC_BIAS_BATCH_STRIDE = 10;
// cublasLtEpilogue_t
constexpr uint32_t EPILOGUE_DEFAULT = 1, EPILOGUE_RELU = 2, EPILOGUE_BIAS = 4,
                   EPILOGUE_GELU = 32;
// cublasLtMatrixLayoutAttribute_t
constexpr int LAYOUT_BATCH_COUNT = 5, LAYOUT_STRIDED_BATCH_OFFSET = 6;
constexpr int PREF_MAX_WORKSPACE_BYTES =
    1; // cublasLtMatmulPreferenceAttributes_t
/// The most workspace a product may ask for (the runtime allocates the
/// largest any library step needs once per session).
constexpr uint64_t kMaxWorkspace = uint64_t(32) << 20;

struct Api {
  size_t (*cublasLtGetVersion)();
  const char *(*cublasLtGetStatusString)(cublasStatus_t); // optional
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t *);
  cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t);
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *, int, int);
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t);
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t, int,
                                                   const void *, size_t);
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *, int,
                                               uint64_t, uint64_t, int64_t);
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t);
  cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t,
                                                     int, const void *, size_t);
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(
      cublasLtMatmulPreference_t *);
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t);
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(
      cublasLtMatmulPreference_t, int, const void *, size_t);
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(
      cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
      cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
      cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *,
      int *);
  cublasStatus_t (*cublasLtMatmul)(
      cublasLtHandle_t, cublasLtMatmulDesc_t, const void *alpha, const void *A,
      cublasLtMatrixLayout_t, const void *B, cublasLtMatrixLayout_t,
      const void *beta, const void *C, cublasLtMatrixLayout_t, void *D,
      cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *workspace,
      size_t workspaceBytes, cuda::CUstream stream);
};

struct Loaded {
  Api api{};
  size_t version = 0;
  std::string error;
};

Loaded load() {
  Loaded l;
  DynamicLibrary lib;
  std::string tried;
  if (!lib.open({"libcublasLt.so.13", "libcublasLt.so.12"}, tried)) {
    l.error = "cannot load cuBLASLt (" + tried +
              "); install cuBLAS or put its lib folder in LD_LIBRARY_PATH";
    return l;
  }
  Api &a = l.api;
#define CUTS_LT_NEED(fn) lib.bind(a.fn, {#fn})
  CUTS_LT_NEED(cublasLtGetVersion);
  lib.bind(a.cublasLtGetStatusString, {"cublasLtGetStatusString"},
           /*optional=*/true);
  CUTS_LT_NEED(cublasLtCreate);
  CUTS_LT_NEED(cublasLtDestroy);
  CUTS_LT_NEED(cublasLtMatmulDescCreate);
  CUTS_LT_NEED(cublasLtMatmulDescDestroy);
  CUTS_LT_NEED(cublasLtMatmulDescSetAttribute);
  CUTS_LT_NEED(cublasLtMatrixLayoutCreate);
  CUTS_LT_NEED(cublasLtMatrixLayoutDestroy);
  CUTS_LT_NEED(cublasLtMatrixLayoutSetAttribute);
  CUTS_LT_NEED(cublasLtMatmulPreferenceCreate);
  CUTS_LT_NEED(cublasLtMatmulPreferenceDestroy);
  CUTS_LT_NEED(cublasLtMatmulPreferenceSetAttribute);
  CUTS_LT_NEED(cublasLtMatmulAlgoGetHeuristic);
  CUTS_LT_NEED(cublasLtMatmul);
#undef CUTS_LT_NEED
  if (!lib.missing().empty()) {
    l.error = "cuBLASLt lacks " + lib.missing();
    return l;
  }
  l.version = a.cublasLtGetVersion();
  return l;
}

const Loaded &loaded() {
  static const Loaded l = load();
  return l;
}

bool ok(cublasStatus_t s, const char *what, std::string &error) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return true;
  const char *name = loaded().api.cublasLtGetStatusString
                         ? loaded().api.cublasLtGetStatusString(s)
                         : nullptr;
  error = std::string(what) +
          " failed: " + (name ? name : "cuBLAS status " + std::to_string(s));
  return false;
}

const Api *api(std::string &error) {
  const Loaded &l = loaded();
  if (!l.error.empty()) {
    error = l.error;
    return nullptr;
  }
  return &l.api;
}

/// The cudaDataType of math m's tensors.
int dataType(LibraryMath m) {
  return m == LibraryMath::Fp16   ? CUDA_R_16F
         : m == LibraryMath::Bf16 ? CUDA_R_16BF
                                  : CUDA_R_32F;
}

/// A column-major rows x cols layout (leading dimension rows) of `batch`
/// matrices `stride` elements apart, of `type` (cudaDataType).
bool layout(const Api &a, void *&out, int type, uint64_t rows, uint64_t cols,
            int64_t batch, int64_t stride, std::string &error) {
  if (!ok(a.cublasLtMatrixLayoutCreate(&out, type, rows, cols, int64_t(rows)),
          "cublasLtMatrixLayoutCreate", error))
    return false;
  int32_t count = int32_t(batch);
  return ok(a.cublasLtMatrixLayoutSetAttribute(out, LAYOUT_BATCH_COUNT, &count,
                                               sizeof count),
            "cublasLtMatrixLayoutSetAttribute", error) &&
         ok(a.cublasLtMatrixLayoutSetAttribute(out, LAYOUT_STRIDED_BATCH_OFFSET,
                                               &stride, sizeof stride),
            "cublasLtMatrixLayoutSetAttribute", error);
}

} // namespace

bool GemmSpec::operator==(const GemmSpec &o) const {
  return encodeGemmSpec(*this) == encodeGemmSpec(o);
}

std::vector<int64_t> encodeGemmSpec(const GemmSpec &s) {
  uint32_t bits;
  std::memcpy(&bits, &s.alpha, sizeof bits);
  return {s.M,           s.N,      s.K,
          s.batch,       s.transA, s.transB,
          s.batchA,      s.batchB, s.bias,
          s.residual,    s.batchZ, int64_t(s.act),
          int64_t(bits), s.algo,   int64_t(s.math)};
}

std::optional<GemmSpec> decodeGemmSpec(const std::vector<int64_t> &p,
                                       std::string &error) {
  if (p.size() != kGemmSpecParams && p.size() != kGemmSpecParams - 1) {
    error = "a cublaslt.gemm kernel takes " + std::to_string(kGemmSpecParams) +
            " parameters, not " + std::to_string(p.size());
    return std::nullopt;
  }
  if (p.size() == kGemmSpecParams && !validLibraryMath(p[14])) {
    error = "cublaslt.gemm math " + std::to_string(p[14]) +
            " is not 0-3 (fp32, tf32, fp16, bf16)";
    return std::nullopt;
  }
  for (size_t i = 4; i < 11; ++i)
    if (p[i] != 0 && p[i] != 1) {
      error = "cublaslt.gemm flag " + std::to_string(i) + " is not 0 or 1";
      return std::nullopt;
    }
  if (p[11] < 0 || p[11] > int64_t(GemmAct::GeluTanh)) {
    error = "cublaslt.gemm activation " + std::to_string(p[11]) +
            " is not 0-2 (none, relu, gelu)";
    return std::nullopt;
  }
  if (p[12] < 0 || p[12] > int64_t(std::numeric_limits<uint32_t>::max())) {
    error = "cublaslt.gemm alpha is not a float's bits";
    return std::nullopt;
  }
  GemmSpec s;
  s.M = p[0], s.N = p[1], s.K = p[2], s.batch = p[3];
  s.transA = p[4], s.transB = p[5], s.batchA = p[6], s.batchB = p[7];
  s.bias = p[8], s.residual = p[9], s.batchZ = p[10];
  s.act = GemmAct(p[11]);
  uint32_t bits = uint32_t(p[12]);
  std::memcpy(&s.alpha, &bits, sizeof bits);
  s.algo = int(std::max<int64_t>(std::min<int64_t>(p[13], 1 << 20), -1));
  if (p.size() == kGemmSpecParams)
    s.math = LibraryMath(p[14]);
  if (!checkGemmSpec(s, error))
    return std::nullopt;
  return s;
}

bool checkGemmSpec(const GemmSpec &s, std::string &error) {
  const int64_t lim = std::numeric_limits<int32_t>::max();
  for (int64_t v : {s.M, s.N, s.K, s.batch})
    if (v <= 0 || v > lim) {
      error = "cublaslt.gemm sizes must be positive and fit int32 (" +
              describeGemmSpec(s) + ")";
      return false;
    }
  if (s.M * s.K > lim || s.K * s.N > lim || s.M * s.N > lim) {
    error = "a cublaslt.gemm matrix exceeds 2^31 elements";
    return false;
  }
  if (!std::isfinite(s.alpha)) {
    error = "cublaslt.gemm alpha is not finite";
    return false;
  }
  if (!validLibraryMath(int64_t(s.math))) {
    error = "cublaslt.gemm math is not fp32, tf32, fp16 or bf16";
    return false;
  }
  if (s.algo < 0 || s.algo >= kMaxGemmAlgos) {
    error = "cublaslt.gemm algo " + std::to_string(s.algo) + " is not in [0, " +
            std::to_string(kMaxGemmAlgos) + ")";
    return false;
  }
  return true;
}

std::string describeGemmSpec(const GemmSpec &s) {
  auto mat = [](int64_t r, int64_t c, bool t, bool batched) {
    std::string m = "[" + std::to_string(t ? c : r) + "x" +
                    std::to_string(t ? r : c) + "]" + (t ? "^T" : "");
    return batched ? m : m + "(shared)";
  };
  char alpha[32];
  std::snprintf(alpha, sizeof alpha, "%g", double(s.alpha));
  std::string d = "gemm " + std::to_string(s.batch) + " x " +
                  mat(s.M, s.K, s.transA, s.batchA || s.batch == 1) + " * " +
                  mat(s.K, s.N, s.transB, s.batchB || s.batch == 1);
  if (s.alpha != 1.0f)
    d += std::string(" * ") + alpha;
  if (s.bias)
    d += " +bias";
  if (s.residual)
    d += s.batchZ || s.batch == 1 ? " +Z" : " +Z(shared)";
  if (s.act != GemmAct::None)
    d += s.act == GemmAct::Relu ? " relu" : " gelu";
  if (s.math != LibraryMath::Fp32)
    d += std::string(" ") + libraryMathName(s.math);
  return d + " algo " + std::to_string(s.algo);
}

size_t cublasLtVersion(std::string &error) {
  const Loaded &l = loaded();
  if (!l.error.empty()) {
    error = l.error;
    return 0;
  }
  return l.version;
}

std::unique_ptr<CublasLtHandle> CublasLtHandle::create(std::string &error) {
  const Api *a = api(error);
  if (!a)
    return nullptr;
  std::unique_ptr<CublasLtHandle> h(new CublasLtHandle);
  if (!ok(a->cublasLtCreate(&h->handle_), "cublasLtCreate", error))
    return nullptr;
  return h;
}

CublasLtHandle::~CublasLtHandle() {
  if (handle_)
    loaded().api.cublasLtDestroy(handle_);
}

std::unique_ptr<CublasLtGemm> CublasLtGemm::create(const GemmSpec &s,
                                                   CublasLtHandle &handle,
                                                   std::string &error,
                                                   bool anyAlgo) {
  if (!checkGemmSpec(s, error))
    return nullptr;
  const Api *a = api(error);
  if (!a)
    return nullptr;
  std::unique_ptr<CublasLtGemm> g(new CublasLtGemm);
  g->spec_ = s;
  // Y^T = op(B)^T op(A)^T in column-major terms (see the top).
  int32_t opFirst = s.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t opSecond = s.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  // RELU_BIAS and GELU_BIAS are the flags or-ed; DEFAULT (1) is none.
  uint32_t epilogue = (s.bias ? EPILOGUE_BIAS : 0) |
                      (s.act == GemmAct::Relu       ? EPILOGUE_RELU
                       : s.act == GemmAct::GeluTanh ? EPILOGUE_GELU
                                                    : 0);
  if (epilogue == 0)
    epilogue = EPILOGUE_DEFAULT;
  int64_t biasStride = 0;
  // fp32 accumulation and scale (alpha, beta) in every math; the bias and
  // the residual have D's type (cuBLASLt's default).
  const int compute = s.math == LibraryMath::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                  : CUBLAS_COMPUTE_32F;
  const int type = dataType(s.math);
  if (!ok(a->cublasLtMatmulDescCreate(&g->desc_, compute, CUDA_R_32F),
          "cublasLtMatmulDescCreate", error) ||
      !ok(a->cublasLtMatmulDescSetAttribute(g->desc_, DESC_TRANSA, &opFirst,
                                            sizeof opFirst),
          "cublasLtMatmulDescSetAttribute", error) ||
      !ok(a->cublasLtMatmulDescSetAttribute(g->desc_, DESC_TRANSB, &opSecond,
                                            sizeof opSecond),
          "cublasLtMatmulDescSetAttribute", error) ||
      !ok(a->cublasLtMatmulDescSetAttribute(g->desc_, DESC_EPILOGUE, &epilogue,
                                            sizeof epilogue),
          "cublasLtMatmulDescSetAttribute", error) ||
      (s.bias &&
       !ok(a->cublasLtMatmulDescSetAttribute(g->desc_, DESC_BIAS_BATCH_STRIDE,
                                             &biasStride, sizeof biasStride),
           "cublasLtMatmulDescSetAttribute", error)))
    return nullptr;
  // Our B, stored K x N (N x K if transB): column-major N x K (K x N).
  uint64_t bRows = s.transB ? s.K : s.N, bCols = s.transB ? s.N : s.K;
  uint64_t aRows = s.transA ? s.M : s.K, aCols = s.transA ? s.K : s.M;
  int64_t one = s.batch > 1 ? 1 : 0;
  if (!layout(*a, g->ltA_, type, bRows, bCols, s.batch,
              s.batchB ? s.K * s.N * one : 0, error) ||
      !layout(*a, g->ltB_, type, aRows, aCols, s.batch,
              s.batchA ? s.M * s.K * one : 0, error) ||
      !layout(*a, g->c_, type, s.N, s.M, s.batch,
              s.residual && !s.batchZ ? 0 : s.M * s.N * one, error) ||
      !layout(*a, g->d_, type, s.N, s.M, s.batch, s.M * s.N * one, error))
    return nullptr;

  void *pref = nullptr;
  if (!ok(a->cublasLtMatmulPreferenceCreate(&pref),
          "cublasLtMatmulPreferenceCreate", error))
    return nullptr;
  uint64_t ws = kMaxWorkspace;
  cublasLtMatmulHeuristicResult_t results[kMaxGemmAlgos] = {};
  int returned = 0;
  bool fine =
      ok(a->cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES,
                                                 &ws, sizeof ws),
         "cublasLtMatmulPreferenceSetAttribute", error) &&
      ok(a->cublasLtMatmulAlgoGetHeuristic(handle.raw(), g->desc_, g->ltA_,
                                           g->ltB_, g->c_, g->d_, pref,
                                           kMaxGemmAlgos, results, &returned),
         "cublasLtMatmulAlgoGetHeuristic", error);
  a->cublasLtMatmulPreferenceDestroy(pref);
  if (!fine)
    return nullptr;
  int algo = s.algo;
  if (anyAlgo &&
      (algo >= returned || results[algo].state != CUBLAS_STATUS_SUCCESS))
    algo = 0;
  if (algo >= returned || results[algo].state != CUBLAS_STATUS_SUCCESS) {
    error = "cuBLASLt offers " + std::to_string(returned) +
            " algorithm(s) for " + describeGemmSpec(s);
    return nullptr;
  }
  std::memcpy(g->algo_, &results[algo].algo, sizeof g->algo_);
  g->workspace_ = results[algo].workspaceSize;
  return g;
}

CublasLtGemm::~CublasLtGemm() {
  const Api &a = loaded().api;
  for (void *l : {ltA_, ltB_, c_, d_})
    if (l)
      a.cublasLtMatrixLayoutDestroy(l);
  if (desc_)
    a.cublasLtMatmulDescDestroy(desc_);
}

bool CublasLtGemm::run(CublasLtHandle &handle, cuda::CUstream stream,
                       cuda::CUdeviceptr a, cuda::CUdeviceptr b,
                       cuda::CUdeviceptr bias, cuda::CUdeviceptr z,
                       cuda::CUdeviceptr y, cuda::CUdeviceptr workspace,
                       size_t workspaceBytes, std::string &error) const {
  const Api *api_ = api(error);
  if (!api_)
    return false;
  if (workspaceBytes < workspace_) {
    error = "cublaslt.gemm needs " + std::to_string(workspace_) +
            " bytes of workspace, got " + std::to_string(workspaceBytes);
    return false;
  }
  // The bias pointer lives in the shared descriptor: set it and enqueue
  // under one lock.
  std::lock_guard<std::mutex> lock(mutex_);
  if (spec_.bias && bias != lastBias_) {
    void *p = reinterpret_cast<void *>(bias);
    if (!ok(api_->cublasLtMatmulDescSetAttribute(desc_, DESC_BIAS_POINTER, &p,
                                                 sizeof p),
            "cublasLtMatmulDescSetAttribute", error))
      return false;
    lastBias_ = bias;
  }
  float alpha = spec_.alpha, beta = spec_.residual ? 1.0f : 0.0f;
  cuda::CUdeviceptr c = spec_.residual ? z : y;
  cublasLtMatmulAlgo_t algo;
  std::memcpy(&algo, algo_, sizeof algo);
  return ok(api_->cublasLtMatmul(
                handle.raw(), desc_, &alpha, reinterpret_cast<void *>(b), ltA_,
                reinterpret_cast<void *>(a), ltB_, &beta,
                reinterpret_cast<void *>(c), c_, reinterpret_cast<void *>(y),
                d_, &algo, reinterpret_cast<void *>(workspace),
                workspace ? workspaceBytes : 0, stream),
            "cublasLtMatmul", error);
}

} // namespace cuts::rt

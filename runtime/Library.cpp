//===- Library.cpp - cuDNN, loaded with dlopen ----------------------------===//
//
// The cuDNN 9 types and entry points used here, declared with its ABI
// (checked against cudnn_graph_v9.h, cudnn_ops_v9.h and cudnn_cnn_v9.h of
// cuDNN 9.19): handles and descriptors are opaque pointers, cudnnStatus_t
// and the other enums are C enums (int-sized), sizes are size_t. libcudnn.so.9
// is cuDNN 9's front library: it exports the whole API and loads its
// sub-libraries (libcudnn_ops, libcudnn_cnn, ...) from beside itself or the
// loader's path on first use; a missing sub-library shows up as the status
// CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED of the call that needed it.
//
//===----------------------------------------------------------------------===//

#include "cuts/rt/Library.h"

#include "DynamicLibrary.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <type_traits>

namespace cuts::rt {
namespace {

//===- cuDNN 9's ABI ------------------------------------------------------===//

using cudnnStatus_t = int;
using cudnnHandle_t = struct cudnnContext *;
using cudnnTensorDescriptor_t = struct cudnnTensorStruct *;
using cudnnFilterDescriptor_t = struct cudnnFilterStruct *;
using cudnnConvolutionDescriptor_t = struct cudnnConvolutionStruct *;
using cudnnActivationDescriptor_t = struct cudnnActivationStruct *;

constexpr cudnnStatus_t CUDNN_STATUS_SUCCESS = 0;
constexpr int CUDNN_DATA_FLOAT = 0, CUDNN_DATA_HALF = 2,
              CUDNN_DATA_BFLOAT16 = 9; // cudnnDataType_t
constexpr int CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1,
              CUDNN_FMA_MATH = 3;          // cudnnMathType_t
constexpr int CUDNN_NOT_PROPAGATE_NAN = 0; // cudnnNanPropagation_t
constexpr int CUDNN_TENSOR_NCHW = 0;       // cudnnTensorFormat_t
constexpr int CUDNN_TENSOR_NHWC = 1;
constexpr int CUDNN_ACTIVATION_RELU = 1;     // cudnnActivationMode_t
constexpr int CUDNN_ACTIVATION_IDENTITY = 5; // cudnnActivationMode_t
constexpr int CUDNN_CROSS_CORRELATION = 1;   // cudnnConvolutionMode_t
constexpr int kImplicitPrecompGemm = 1;      // cudnnConvolutionFwdAlgo_t
constexpr int kNumFwdAlgos = 8;              // CUDNN_CONVOLUTION_FWD_ALGO_COUNT

struct Api {
  size_t (*cudnnGetVersion)();
  const char *(*cudnnGetErrorString)(cudnnStatus_t);
  cudnnStatus_t (*cudnnCreate)(cudnnHandle_t *);
  cudnnStatus_t (*cudnnDestroy)(cudnnHandle_t);
  // cudaStream_t and CUstream are the same type (struct CUstream_st *).
  cudnnStatus_t (*cudnnSetStream)(cudnnHandle_t, cuda::CUstream);
  cudnnStatus_t (*cudnnCreateTensorDescriptor)(cudnnTensorDescriptor_t *);
  cudnnStatus_t (*cudnnSetTensor4dDescriptor)(cudnnTensorDescriptor_t,
                                              int format, int dataType, int n,
                                              int c, int h, int w);
  cudnnStatus_t (*cudnnDestroyTensorDescriptor)(cudnnTensorDescriptor_t);
  cudnnStatus_t (*cudnnCreateFilterDescriptor)(cudnnFilterDescriptor_t *);
  cudnnStatus_t (*cudnnSetFilter4dDescriptor)(cudnnFilterDescriptor_t,
                                              int dataType, int format, int k,
                                              int c, int h, int w);
  cudnnStatus_t (*cudnnDestroyFilterDescriptor)(cudnnFilterDescriptor_t);
  cudnnStatus_t (*cudnnCreateConvolutionDescriptor)(
      cudnnConvolutionDescriptor_t *);
  cudnnStatus_t (*cudnnSetConvolution2dDescriptor)(cudnnConvolutionDescriptor_t,
                                                   int padH, int padW,
                                                   int strideH, int strideW,
                                                   int dilH, int dilW, int mode,
                                                   int computeType);
  cudnnStatus_t (*cudnnSetConvolutionMathType)(cudnnConvolutionDescriptor_t,
                                               int mathType);
  cudnnStatus_t (*cudnnSetConvolutionGroupCount)(cudnnConvolutionDescriptor_t,
                                                 int groupCount);
  cudnnStatus_t (*cudnnGetConvolution2dForwardOutputDim)(
      cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t,
      cudnnFilterDescriptor_t, int *n, int *c, int *h, int *w);
  cudnnStatus_t (*cudnnDestroyConvolutionDescriptor)(
      cudnnConvolutionDescriptor_t);
  cudnnStatus_t (*cudnnCreateActivationDescriptor)(
      cudnnActivationDescriptor_t *);
  cudnnStatus_t (*cudnnSetActivationDescriptor)(cudnnActivationDescriptor_t,
                                                int mode, int reluNanOpt,
                                                double coef);
  cudnnStatus_t (*cudnnDestroyActivationDescriptor)(
      cudnnActivationDescriptor_t);
  cudnnStatus_t (*cudnnGetConvolutionForwardWorkspaceSize)(
      cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
      cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int algo,
      size_t *sizeInBytes);
  cudnnStatus_t (*cudnnConvolutionBiasActivationForward)(
      cudnnHandle_t, const void *alpha1, cudnnTensorDescriptor_t xDesc,
      const void *x, cudnnFilterDescriptor_t wDesc, const void *w,
      cudnnConvolutionDescriptor_t convDesc, int algo, void *workSpace,
      size_t workSpaceSizeInBytes, const void *alpha2,
      cudnnTensorDescriptor_t zDesc, const void *z,
      cudnnTensorDescriptor_t biasDesc, const void *bias,
      cudnnActivationDescriptor_t activationDesc, cudnnTensorDescriptor_t yDesc,
      void *y);
};

struct Loaded {
  Api api{};
  size_t version = 0;
  std::string error; // empty when the table is usable
};

constexpr const char *kLibrary = "libcudnn.so.9";

Loaded load() {
  Loaded l;
  // Never closed, like the CUDA driver: handles and descriptors may
  // outlive any one user.
  DynamicLibrary lib;
  std::string tried;
  if (!lib.open({kLibrary}, tried)) {
    l.error = "cannot load cuDNN (" + tried +
              "); install cuDNN 9 or put its lib folder in LD_LIBRARY_PATH";
    return l;
  }
  Api &a = l.api;
#define CUTS_CUDNN_NEED(fn) lib.bind(a.fn, {#fn})
  CUTS_CUDNN_NEED(cudnnGetVersion);
  CUTS_CUDNN_NEED(cudnnGetErrorString);
  CUTS_CUDNN_NEED(cudnnCreate);
  CUTS_CUDNN_NEED(cudnnDestroy);
  CUTS_CUDNN_NEED(cudnnSetStream);
  CUTS_CUDNN_NEED(cudnnCreateTensorDescriptor);
  CUTS_CUDNN_NEED(cudnnSetTensor4dDescriptor);
  CUTS_CUDNN_NEED(cudnnDestroyTensorDescriptor);
  CUTS_CUDNN_NEED(cudnnCreateFilterDescriptor);
  CUTS_CUDNN_NEED(cudnnSetFilter4dDescriptor);
  CUTS_CUDNN_NEED(cudnnDestroyFilterDescriptor);
  CUTS_CUDNN_NEED(cudnnCreateConvolutionDescriptor);
  CUTS_CUDNN_NEED(cudnnSetConvolution2dDescriptor);
  CUTS_CUDNN_NEED(cudnnSetConvolutionMathType);
  CUTS_CUDNN_NEED(cudnnSetConvolutionGroupCount);
  CUTS_CUDNN_NEED(cudnnGetConvolution2dForwardOutputDim);
  CUTS_CUDNN_NEED(cudnnDestroyConvolutionDescriptor);
  CUTS_CUDNN_NEED(cudnnCreateActivationDescriptor);
  CUTS_CUDNN_NEED(cudnnSetActivationDescriptor);
  CUTS_CUDNN_NEED(cudnnDestroyActivationDescriptor);
  CUTS_CUDNN_NEED(cudnnGetConvolutionForwardWorkspaceSize);
  CUTS_CUDNN_NEED(cudnnConvolutionBiasActivationForward);
#undef CUTS_CUDNN_NEED
  if (!lib.missing().empty()) {
    l.error = std::string("cuDNN (") + kLibrary + ") lacks " + lib.missing();
    return l;
  }
  // The declarations above are cuDNN 9's; another major may differ.
  l.version = a.cudnnGetVersion();
  if (l.version / 10000 != 9)
    l.error = std::string(kLibrary) + " reports cuDNN version " +
              std::to_string(l.version) + "; this runtime needs cuDNN 9";
  return l;
}

const Loaded &loaded() {
  static std::once_flag once;
  static Loaded *l = nullptr;
  // Leaked on purpose, like the CUDA driver's table.
  std::call_once(once, [] { l = new Loaded(load()); });
  return *l;
}

/// The table, or nullptr and `error`.
const Api *api(std::string &error) {
  const Loaded &l = loaded();
  if (!l.error.empty()) {
    error = l.error;
    return nullptr;
  }
  return &l.api;
}

/// "cudnnCreate failed: CUDNN_STATUS_NOT_INITIALIZED (1001)".
std::string statusMessage(const Api &a, const char *what, cudnnStatus_t s) {
  const char *text = a.cudnnGetErrorString(s);
  std::string name =
      text && *text ? std::string(text) : std::string("cuDNN error");
  return std::string(what) + " failed: " + name + " (" + std::to_string(s) +
         ")";
}

/// Records a failed status in `error`; true if `s` is success.
bool ok(const Api &a, cudnnStatus_t s, const char *what, std::string &error) {
  if (s == CUDNN_STATUS_SUCCESS)
    return true;
  error = statusMessage(a, what, s);
  return false;
}

/// a * b, or -1 past `limit` (operands are non-negative).
int64_t mulLimit(int64_t a, int64_t b, int64_t limit) {
  if (a < 0 || b < 0)
    return -1;
  if (a != 0 && b > limit / a)
    return -1;
  return a * b;
}

int64_t product(std::initializer_list<int64_t> v, int64_t limit) {
  int64_t p = 1;
  for (int64_t x : v)
    if ((p = mulLimit(p, x, limit)) < 0)
      return -1;
  return p;
}

} // namespace

//===- ConvSpec -----------------------------------------------------------===//

bool ConvSpec::operator==(const ConvSpec &o) const {
  return encodeConvSpec(*this) == encodeConvSpec(o);
}

std::vector<int64_t> encodeConvSpec(const ConvSpec &s) {
  // clang-format off
  return {s.N,    s.C,    s.H,       s.W,       s.K,    s.FH,   s.FW,
          s.padH, s.padW, s.strideH, s.strideW, s.dilH, s.dilW, s.group,
          s.OH,   s.OW,   s.bias,    s.residual, s.relu, s.algo,
          int64_t(s.math), s.channelsLast};
  // clang-format on
}

std::optional<ConvSpec> decodeConvSpec(const std::vector<int64_t> &p,
                                       std::string &error) {
  if (p.size() > kConvSpecParams || p.size() < kConvSpecParams - 2) {
    error = "a cudnn.conv kernel has " + std::to_string(kConvSpecParams) +
            " params (N, C, H, W, K, FH, FW, padH, padW, strideH, strideW, "
            "dilH, dilW, group, OH, OW, bias, residual, relu, algo, math, "
            "channelsLast), not " +
            std::to_string(p.size());
    return std::nullopt;
  }
  if (p.size() > 20 && !validLibraryMath(p[20])) {
    error = "the math (param 20) " + std::to_string(p[20]) +
            " is not 0-3 (fp32, tf32, fp16, bf16)";
    return std::nullopt;
  }
  const std::pair<const char *, size_t> flags[] = {
      {"bias", 16}, {"residual", 17}, {"relu", 18}, {"channelsLast", 21}};
  for (auto [name, i] : flags)
    if (i < p.size() && p[i] != 0 && p[i] != 1) {
      error = std::string("the flag ") + name + " (param " + std::to_string(i) +
              ") is " + std::to_string(p[i]) + ", not 0 or 1";
      return std::nullopt;
    }
  if (p[19] < std::numeric_limits<int>::min() ||
      p[19] > std::numeric_limits<int>::max()) {
    error = "the algo (param 19) " + std::to_string(p[19]) +
            " is not a cuDNN forward algorithm";
    return std::nullopt;
  }
  ConvSpec s;
  s.N = p[0], s.C = p[1], s.H = p[2], s.W = p[3], s.K = p[4];
  s.FH = p[5], s.FW = p[6], s.padH = p[7], s.padW = p[8];
  s.strideH = p[9], s.strideW = p[10], s.dilH = p[11], s.dilW = p[12];
  s.group = p[13], s.OH = p[14], s.OW = p[15];
  s.bias = p[16] != 0, s.residual = p[17] != 0, s.relu = p[18] != 0;
  s.algo = int(p[19]);
  if (p.size() > 20)
    s.math = LibraryMath(p[20]);
  s.channelsLast = p.size() > 21 && p[21] != 0;
  if (!checkConvSpec(s, error))
    return std::nullopt;
  return s;
}

bool checkConvSpec(const ConvSpec &s, std::string &error) {
  const int64_t kInt = std::numeric_limits<int32_t>::max();
  struct Field {
    const char *name;
    int64_t value, lo;
  };
  const Field fields[] = {{"N", s.N, 1},
                          {"C", s.C, 1},
                          {"H", s.H, 1},
                          {"W", s.W, 1},
                          {"K", s.K, 1},
                          {"FH", s.FH, 1},
                          {"FW", s.FW, 1},
                          {"padH", s.padH, 0},
                          {"padW", s.padW, 0},
                          {"strideH", s.strideH, 1},
                          {"strideW", s.strideW, 1},
                          {"dilH", s.dilH, 1},
                          {"dilW", s.dilW, 1},
                          {"group", s.group, 1},
                          {"OH", s.OH, 1},
                          {"OW", s.OW, 1}};
  for (const Field &f : fields)
    if (f.value < f.lo || f.value > kInt) {
      error = std::string(f.name) + " = " + std::to_string(f.value) +
              " is out of range [" + std::to_string(f.lo) + ", " +
              std::to_string(kInt) + "]";
      return false;
    }
  if (!validLibraryMath(int64_t(s.math))) {
    error = "the math is not fp32, tf32, fp16 or bf16";
    return false;
  }
  if (s.C % s.group != 0 || s.K % s.group != 0) {
    error = "C = " + std::to_string(s.C) + " and K = " + std::to_string(s.K) +
            " must both be multiples of group = " + std::to_string(s.group);
    return false;
  }
  // Each operand is below 2^31 ints (all fit in int64 after the bounds).
  auto outSize = [](int64_t in, int64_t pad, int64_t f, int64_t dil,
                    int64_t stride) {
    int64_t span = in + 2 * pad - dil * (f - 1) - 1;
    return span < 0 ? int64_t(0) : span / stride + 1;
  };
  int64_t oh = outSize(s.H, s.padH, s.FH, s.dilH, s.strideH);
  int64_t ow = outSize(s.W, s.padW, s.FW, s.dilW, s.strideW);
  if (oh != s.OH || ow != s.OW) {
    error = "the output is " + std::to_string(s.OH) + "x" +
            std::to_string(s.OW) + " but the convolution of a " +
            std::to_string(s.H) + "x" + std::to_string(s.W) + " image by " +
            std::to_string(s.FH) + "x" + std::to_string(s.FW) +
            " filters (pad, stride, dilation as given) gives " +
            std::to_string(oh) + "x" + std::to_string(ow);
    return false;
  }
  struct Operand {
    const char *name;
    int64_t elements;
  };
  const Operand operands[] = {
      {"x", product({s.N, s.C, s.H, s.W}, kInt)},
      {"w", product({s.K, s.C / s.group, s.FH, s.FW}, kInt)},
      {"y", product({s.N, s.K, s.OH, s.OW}, kInt)}};
  for (const Operand &o : operands)
    if (o.elements < 0) {
      error = std::string("the tensor ") + o.name +
              " has 2^31 elements or more (cuDNN's limit)";
      return false;
    }
  if (s.algo < 0 || s.algo >= kNumFwdAlgos) {
    error = "algo " + std::to_string(s.algo) +
            " is not a cuDNN forward algorithm (0.." +
            std::to_string(kNumFwdAlgos - 1) + ")";
    return false;
  }
  if (!s.relu && s.algo != kImplicitPrecompGemm) {
    error = "without relu, cuDNN's fused convolution runs with the identity "
            "activation, which it supports with algo 1 "
            "(IMPLICIT_PRECOMP_GEMM) only, not " +
            cudnnAlgoName(s.algo) + " (" + std::to_string(s.algo) + ")";
    return false;
  }
  return true;
}

std::string describeConvSpec(const ConvSpec &s) {
  auto x = [](std::initializer_list<int64_t> v) {
    std::string r;
    for (int64_t d : v)
      r += (r.empty() ? "" : "x") + std::to_string(d);
    return r;
  };
  std::string r =
      "conv " + x({s.N, s.C, s.H, s.W}) + " * " +
      x({s.K, s.group > 0 ? s.C / s.group : s.C, s.FH, s.FW}) + " pad " +
      std::to_string(s.padH) + "," + std::to_string(s.padW) + " stride " +
      std::to_string(s.strideH) + "," + std::to_string(s.strideW) + " dil " +
      std::to_string(s.dilH) + "," + std::to_string(s.dilW) + " group " +
      std::to_string(s.group) + " -> " + x({s.N, s.K, s.OH, s.OW});
  if (s.bias)
    r += " +bias";
  if (s.residual)
    r += " +z";
  if (s.relu)
    r += " relu";
  if (s.math != LibraryMath::Fp32)
    r += std::string(" ") + libraryMathName(s.math);
  if (s.channelsLast)
    r += " NHWC";
  return r + " algo " + std::to_string(s.algo);
}

std::string cudnnAlgoName(int algo) {
  static const char *const names[kNumFwdAlgos] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM",
      "GEMM",          "DIRECT",
      "FFT",           "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  if (algo >= 0 && algo < kNumFwdAlgos)
    return names[algo];
  return "algo " + std::to_string(algo);
}

size_t cudnnVersion(std::string &error) {
  return api(error) ? loaded().version : 0;
}

//===- CudnnHandle --------------------------------------------------------===//

std::unique_ptr<CudnnHandle> CudnnHandle::create(std::string &error) {
  const Api *a = api(error);
  if (!a)
    return nullptr;
  std::unique_ptr<CudnnHandle> h(new CudnnHandle());
  cudnnHandle_t raw = nullptr;
  if (!ok(*a, a->cudnnCreate(&raw), "cudnnCreate", error))
    return nullptr;
  h->handle_ = raw;
  return h;
}

CudnnHandle::~CudnnHandle() {
  if (handle_)
    loaded().api.cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

bool CudnnHandle::setStream(cuda::CUstream stream, std::string &error) {
  if (stream == stream_)
    return true;
  const Api &a = loaded().api;
  if (!ok(a, a.cudnnSetStream(static_cast<cudnnHandle_t>(handle_), stream),
          "cudnnSetStream", error))
    return false;
  stream_ = stream;
  return true;
}

//===- CudnnConv ----------------------------------------------------------===//

std::unique_ptr<CudnnConv> CudnnConv::create(const ConvSpec &spec,
                                             std::string &error) {
  std::string why;
  if (!checkConvSpec(spec, why)) {
    error = "cuDNN convolution " + describeConvSpec(spec) + ": " + why;
    return nullptr;
  }
  const Api *a = api(error);
  if (!a)
    return nullptr;
  // From here the destructor frees whatever was made.
  std::unique_ptr<CudnnConv> c(new CudnnConv());
  c->spec_ = spec;
  const ConvSpec &s = spec;
  auto fail = [&](const std::string &msg) {
    error = "cuDNN convolution " + describeConvSpec(s) + ": " + msg;
    return nullptr;
  };
  auto check = [&](cudnnStatus_t st, const char *what) {
    return ok(*a, st, what, why);
  };

  const int type = s.math == LibraryMath::Fp16   ? CUDNN_DATA_HALF
                   : s.math == LibraryMath::Bf16 ? CUDNN_DATA_BFLOAT16
                                                 : CUDNN_DATA_FLOAT;
  const int mathType = s.math == LibraryMath::Fp32   ? CUDNN_FMA_MATH
                       : s.math == LibraryMath::Tf32 ? CUDNN_DEFAULT_MATH
                                                     : CUDNN_TENSOR_OP_MATH;
  const int format = s.channelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  auto tensor = [&](void *&slot, int64_t n, int64_t ch, int64_t h, int64_t w) {
    cudnnTensorDescriptor_t d = nullptr;
    if (!check(a->cudnnCreateTensorDescriptor(&d),
               "cudnnCreateTensorDescriptor"))
      return false;
    slot = d;
    return check(a->cudnnSetTensor4dDescriptor(d, format, type, int(n), int(ch),
                                               int(h), int(w)),
                 "cudnnSetTensor4dDescriptor");
  };
  if (!tensor(c->x_, s.N, s.C, s.H, s.W) ||
      !tensor(c->y_, s.N, s.K, s.OH, s.OW) || !tensor(c->bias_, 1, s.K, 1, 1))
    return fail(why);

  cudnnFilterDescriptor_t wd = nullptr;
  if (!check(a->cudnnCreateFilterDescriptor(&wd),
             "cudnnCreateFilterDescriptor"))
    return fail(why);
  c->w_ = wd;
  if (!check(a->cudnnSetFilter4dDescriptor(wd, type, format, int(s.K),
                                           int(s.C / s.group), int(s.FH),
                                           int(s.FW)),
             "cudnnSetFilter4dDescriptor"))
    return fail(why);

  cudnnConvolutionDescriptor_t cd = nullptr;
  if (!check(a->cudnnCreateConvolutionDescriptor(&cd),
             "cudnnCreateConvolutionDescriptor"))
    return fail(why);
  c->conv_ = cd;
  // fp32 accumulation; FMA math keeps fp32 off TF32 (and any down-
  // conversion), the default math lets tf32 use it, tensor-op math the
  // 16-bit types.
  if (!check(a->cudnnSetConvolution2dDescriptor(
                 cd, int(s.padH), int(s.padW), int(s.strideH), int(s.strideW),
                 int(s.dilH), int(s.dilW), CUDNN_CROSS_CORRELATION,
                 CUDNN_DATA_FLOAT),
             "cudnnSetConvolution2dDescriptor") ||
      !check(a->cudnnSetConvolutionMathType(cd, mathType),
             "cudnnSetConvolutionMathType") ||
      !check(a->cudnnSetConvolutionGroupCount(cd, int(s.group)),
             "cudnnSetConvolutionGroupCount"))
    return fail(why);

  int dims[4] = {0, 0, 0, 0};
  if (!check(a->cudnnGetConvolution2dForwardOutputDim(
                 cd, static_cast<cudnnTensorDescriptor_t>(c->x_), wd, &dims[0],
                 &dims[1], &dims[2], &dims[3]),
             "cudnnGetConvolution2dForwardOutputDim"))
    return fail(why);
  if (dims[0] != s.N || dims[1] != s.K || dims[2] != s.OH || dims[3] != s.OW)
    return fail("cuDNN computes the output as " + std::to_string(dims[0]) +
                "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[2]) +
                "x" + std::to_string(dims[3]));

  cudnnActivationDescriptor_t ad = nullptr;
  if (!check(a->cudnnCreateActivationDescriptor(&ad),
             "cudnnCreateActivationDescriptor"))
    return fail(why);
  c->act_ = ad;
  // The coefficient is the clipping ceiling, which plain relu must not
  // reach (PyTorch passes the same).
  if (!check(a->cudnnSetActivationDescriptor(
                 ad, s.relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                 CUDNN_NOT_PROPAGATE_NAN, std::numeric_limits<double>::max()),
             "cudnnSetActivationDescriptor"))
    return fail(why);

  if (!s.bias) {
    // cuDNN's fused call always adds a bias: give it zeros.
    const cuda::Driver *d = cuda::driver(why);
    if (!d)
      return fail("the zero bias needs the CUDA driver: " + why);
    uint64_t bytes = s.biasBytes();
    if (cuda::CUresult r = d->cuMemAlloc(&c->zeroBias_, bytes)) {
      c->zeroBias_ = 0;
      return fail("allocating the zero bias (cuMemAlloc) failed: " +
                  cuda::errorString(r) + " (is a CUDA context current?)");
    }
    if (cuda::CUresult r = d->cuMemsetD8(c->zeroBias_, 0, bytes))
      return fail("clearing the zero bias (cuMemsetD8) failed: " +
                  cuda::errorString(r));
  }
  return c;
}

CudnnConv::~CudnnConv() {
  const Api &a = loaded().api;
  if (x_)
    a.cudnnDestroyTensorDescriptor(static_cast<cudnnTensorDescriptor_t>(x_));
  if (y_)
    a.cudnnDestroyTensorDescriptor(static_cast<cudnnTensorDescriptor_t>(y_));
  if (bias_)
    a.cudnnDestroyTensorDescriptor(static_cast<cudnnTensorDescriptor_t>(bias_));
  if (w_)
    a.cudnnDestroyFilterDescriptor(static_cast<cudnnFilterDescriptor_t>(w_));
  if (conv_)
    a.cudnnDestroyConvolutionDescriptor(
        static_cast<cudnnConvolutionDescriptor_t>(conv_));
  if (act_)
    a.cudnnDestroyActivationDescriptor(
        static_cast<cudnnActivationDescriptor_t>(act_));
  if (zeroBias_) {
    std::string error;
    if (const cuda::Driver *d = cuda::driver(error))
      d->cuMemFree(zeroBias_);
  }
}

std::optional<size_t> CudnnConv::workspaceBytes(CudnnHandle &handle,
                                                std::string &error) const {
  const Api &a = loaded().api;
  size_t bytes = 0;
  std::string why;
  if (!ok(a,
          a.cudnnGetConvolutionForwardWorkspaceSize(
              static_cast<cudnnHandle_t>(handle.raw()),
              static_cast<cudnnTensorDescriptor_t>(x_),
              static_cast<cudnnFilterDescriptor_t>(w_),
              static_cast<cudnnConvolutionDescriptor_t>(conv_),
              static_cast<cudnnTensorDescriptor_t>(y_), spec_.algo, &bytes),
          "cudnnGetConvolutionForwardWorkspaceSize", why)) {
    error = "cuDNN convolution " + describeConvSpec(spec_) + " with " +
            cudnnAlgoName(spec_.algo) + ": " + why;
    return std::nullopt;
  }
  return bytes;
}

bool CudnnConv::run(CudnnHandle &handle, cuda::CUstream stream,
                    cuda::CUdeviceptr x, cuda::CUdeviceptr w,
                    cuda::CUdeviceptr bias, cuda::CUdeviceptr z,
                    cuda::CUdeviceptr y, cuda::CUdeviceptr workspace,
                    size_t workspaceBytes, std::string &error) const {
  const Api &a = loaded().api;
  auto fail = [&](const std::string &msg) {
    error = "cuDNN convolution " + describeConvSpec(spec_) + ": " + msg;
    return false;
  };
  std::string why;
  if (!x || !w || !y || (spec_.bias && !bias) || (spec_.residual && !z))
    return fail("an operand's device pointer is null");
  if (!handle.setStream(stream, why))
    return fail(why);
  auto ptr = [](cuda::CUdeviceptr p) {
    return reinterpret_cast<void *>(static_cast<uintptr_t>(p));
  };
  // y = act(alpha1 * conv(x, w) + alpha2 * z + bias). cuDNN wants a valid
  // z even when alpha2 is 0; y (same shape) then stands in and is not
  // read, as TensorFlow's fused convolution does too.
  const float alpha1 = 1.0f, alpha2 = spec_.residual ? 1.0f : 0.0f;
  cuda::CUdeviceptr zp = spec_.residual ? z : y;
  cuda::CUdeviceptr bp = spec_.bias ? bias : zeroBias_;
  auto yd = static_cast<cudnnTensorDescriptor_t>(y_);
  if (!ok(a,
          a.cudnnConvolutionBiasActivationForward(
              static_cast<cudnnHandle_t>(handle.raw()), &alpha1,
              static_cast<cudnnTensorDescriptor_t>(x_), ptr(x),
              static_cast<cudnnFilterDescriptor_t>(w_), ptr(w),
              static_cast<cudnnConvolutionDescriptor_t>(conv_), spec_.algo,
              workspaceBytes ? ptr(workspace) : nullptr, workspaceBytes,
              &alpha2, yd, ptr(zp), static_cast<cudnnTensorDescriptor_t>(bias_),
              ptr(bp), static_cast<cudnnActivationDescriptor_t>(act_), yd,
              ptr(y)),
          "cudnnConvolutionBiasActivationForward", why))
    return fail(why + " (" + cudnnAlgoName(spec_.algo) + ", workspace " +
                std::to_string(workspaceBytes) + " bytes)");
  return true;
}

std::vector<int> CudnnConv::forwardAlgorithms() {
  std::vector<int> algos;
  for (int i = 0; i < kNumFwdAlgos; ++i)
    algos.push_back(i);
  return algos;
}

} // namespace cuts::rt

//===- Library.h - plan steps that call a vendor library (cuDNN) -*- C++
//-*-===//
//
// Some plan steps are "library kernels": instead of a generated CUBIN the
// step calls cuDNN. The tuner times cuDNN against the generated candidates
// and, where cuDNN wins, the compiler writes a KernelLaunch with
// library = "cudnn.conv" and the ConvSpec below, encoded as libraryParams.
// The runtime (Runtime.cpp) and the tuner share this wrapper.
//
// Like the CUDA driver (CudaDriver.h), cuDNN is loaded with dlopen
// ("libcudnn.so.9") on first use and never linked: a model without library
// kernels never touches it, and a machine without it gets a clean error.
// No cuDNN or CUDA header is included; the few types and entry points used
// are declared in Library.cpp with cuDNN 9's ABI.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_LIBRARY_H
#define CUTS_RUNTIME_LIBRARY_H

#include "cuts/rt/CudaDriver.h"
#include "cuts/rt/LibraryMath.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cuts::rt {

/// KernelLaunch::library of a cuDNN fused convolution.
inline constexpr const char *kCudnnConv = "cudnn.conv";

/// A 2-D convolution as cuDNN's fused forward computes it, in `math`
/// (LibraryMath.h: fp32 tensors with FMA math, never TF32; fp32 with TF32
/// allowed; fp16 or bf16 tensors on tensor cores; fp32 accumulation in
/// all), NCHW, weights KCRS (K x C/group x FH x FW):
///
///   y = act(conv(x, w) + bias[k] + z)
///
/// with bias a K-vector if `bias`, z a tensor of y's shape if `residual`,
/// act relu if `relu`, else the identity. Pads are symmetric (padH on top
/// and bottom). The library kernel's args are tensor ids in the order
/// x, w, [bias], [z], y; y is its one output.
struct ConvSpec {
  int64_t N = 0, C = 0, H = 0, W = 0; // x: N x C x H x W (NCHW)
  int64_t K = 0, FH = 1, FW = 1;      // w: K x C/group x FH x FW
  int64_t padH = 0, padW = 0;
  int64_t strideH = 1, strideW = 1;
  int64_t dilH = 1, dilW = 1;
  int64_t group = 1;
  int64_t OH = 0, OW = 0; // y: N x K x OH x OW
  bool bias = false;
  bool residual = false;
  bool relu = false;
  /// cudnnConvolutionFwdAlgo_t; 1 (IMPLICIT_PRECOMP_GEMM) is the only one
  /// cuDNN runs without relu.
  int algo = 1;
  LibraryMath math = LibraryMath::Fp32;
  /// x, z and y stored N x H x W x C (NHWC), w K x FH x FW x C/group.
  bool channelsLast = false;

  /// Bytes of each operand; valid once checkConvSpec passed.
  uint64_t elem() const { return libraryElementBytes(math); }
  uint64_t xBytes() const { return elem() * uint64_t(N * C * H * W); }
  uint64_t wBytes() const {
    return elem() * uint64_t(K * (C / group) * FH * FW);
  }
  uint64_t biasBytes() const { return elem() * uint64_t(K); }
  uint64_t yBytes() const { return elem() * uint64_t(N * K * OH * OW); }
  /// x, w, [bias], [z], y.
  size_t numArgs() const { return 3 + size_t(bias) + size_t(residual); }

  bool operator==(const ConvSpec &o) const;
  bool operator!=(const ConvSpec &o) const { return !(*this == o); }
};

/// The number of values in an encoded ConvSpec.
constexpr size_t kConvSpecParams = 22;

/// The manifest's libraryParams of a "cudnn.conv" kernel: kConvSpecParams
/// integers in the order of the struct's fields,
///
///   N, C, H, W, K, FH, FW, padH, padW, strideH, strideW, dilH, dilW,
///   group, OH, OW, bias, residual, relu, algo, math, channelsLast
///
/// (the flags 0 or 1). The order is part of the artifact format; decoding
/// also takes the first 21 alone, as NCHW, and the first 20, as fp32 NCHW
/// (artifacts written before those were).
std::vector<int64_t> encodeConvSpec(const ConvSpec &s);

/// The inverse of encodeConvSpec; also checks the spec (checkConvSpec). On
/// failure nullopt and `error` says what is wrong.
std::optional<ConvSpec> decodeConvSpec(const std::vector<int64_t> &params,
                                       std::string &error);

/// Whether the spec is one cuDNN can be asked for: positive sizes within
/// int32 (cuDNN's descriptors take int), C and K multiples of group, OH and
/// OW the convolution's output size, every tensor under 2^31 elements, a
/// known algo, and IMPLICIT_PRECOMP_GEMM when there is no relu (cuDNN's
/// identity activation runs with that algo only). No cuDNN needed.
bool checkConvSpec(const ConvSpec &s, std::string &error);

/// One line for messages and summaries: "conv 1x64x56x56 * 64x64x3x3 pad
/// 1,1 stride 1,1 dil 1,1 group 1 -> 1x64x56x56 +bias +z relu algo 1".
std::string describeConvSpec(const ConvSpec &s);

/// "IMPLICIT_PRECOMP_GEMM" for 1, "algo 9" for an unknown one.
std::string cudnnAlgoName(int algo);

/// cuDNN's version (cudnnGetVersion, e.g. 91900), loading it if needed; 0
/// and `error` if it cannot be loaded.
size_t cudnnVersion(std::string &error);

/// A cuDNN handle, bound to the device of the CUDA context current when it
/// was created. Use it from one thread at a time; destroy it with that
/// context current.
class CudnnHandle {
public:
  /// Loads cuDNN if needed and creates the handle (cudnnCreate) on the
  /// current context. Nullptr and `error` on failure.
  static std::unique_ptr<CudnnHandle> create(std::string &error);
  ~CudnnHandle();
  CudnnHandle(const CudnnHandle &) = delete;
  CudnnHandle &operator=(const CudnnHandle &) = delete;

  /// The stream cuDNN enqueues on (cudnnSetStream); skipped if unchanged.
  bool setStream(cuda::CUstream stream, std::string &error);
  cuda::CUstream stream() const { return stream_; }
  void *raw() const { return handle_; } // the cudnnHandle_t

private:
  CudnnHandle() = default;
  void *handle_ = nullptr;
  cuda::CUstream stream_ = nullptr;
};

/// One ConvSpec's descriptors (and, without bias, a zero bias on the
/// device: cuDNN's fused call always adds one). run() only reads the
/// descriptors, so sessions on several threads may share one CudnnConv,
/// each with its own handle.
class CudnnConv {
public:
  /// Checks the spec, loads cuDNN and builds the descriptors (math type
  /// CUDNN_FMA_MATH for fp32: never TF32; DEFAULT_MATH for tf32;
  /// TENSOR_OP_MATH for fp16 and bf16). Without spec.bias, allocates the zero
  /// bias through the CUDA driver, so a CUDA context must be current; the
  /// destructor frees it, with that context current. Nullptr and `error`
  /// on failure (cuDNN missing, the spec refused).
  static std::unique_ptr<CudnnConv> create(const ConvSpec &spec,
                                           std::string &error);
  ~CudnnConv();
  CudnnConv(const CudnnConv &) = delete;
  CudnnConv &operator=(const CudnnConv &) = delete;

  const ConvSpec &spec() const { return spec_; }

  /// The workspace spec().algo needs on this handle's device
  /// (cudnnGetConvolutionForwardWorkspaceSize); nullopt and `error` if
  /// cuDNN does not support the algo for this spec.
  std::optional<size_t> workspaceBytes(CudnnHandle &handle,
                                       std::string &error) const;

  /// Enqueues y = act(conv(x, w) + bias + z) on `stream` (which becomes the
  /// handle's stream). `bias` is ignored (may be 0) without spec().bias,
  /// `z` without spec().residual. `workspace` holds `workspaceBytes`
  /// (at least workspaceBytes(handle)). Makes no allocation and no
  /// synchronisation, so it may run under CUDA graph capture. False and
  /// `error` if cuDNN refuses.
  bool run(CudnnHandle &handle, cuda::CUstream stream, cuda::CUdeviceptr x,
           cuda::CUdeviceptr w, cuda::CUdeviceptr bias, cuda::CUdeviceptr z,
           cuda::CUdeviceptr y, cuda::CUdeviceptr workspace,
           size_t workspaceBytes, std::string &error) const;

  /// The cudnnConvolutionFwdAlgo_t values worth trying (0..7); which of
  /// them cuDNN accepts depends on the spec (create or workspaceBytes
  /// says).
  static std::vector<int> forwardAlgorithms();

private:
  CudnnConv() = default;
  ConvSpec spec_;
  // cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, ...: opaque here.
  void *x_ = nullptr, *y_ = nullptr, *bias_ = nullptr;
  void *w_ = nullptr;
  void *conv_ = nullptr;
  void *act_ = nullptr;
  cuda::CUdeviceptr zeroBias_ = 0;
};

} // namespace cuts::rt

#endif // CUTS_RUNTIME_LIBRARY_H

//===- CudaCheck.h - the GPU tools' driver checks and context --*- C++ -*-===//
//
// What the tools that drive a GPU directly (cuts-kernel-check,
// cuts-sync-bench) share: a failed driver call ends the tool with its name
// and the driver's message, and the first GPU's primary context is made
// current. Header-only: only those tools link the CUDA driver.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_TOOLS_SUPPORT_CUDACHECK_H
#define CUTS_TOOLS_SUPPORT_CUDACHECK_H

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#define CUTS_CHECK_CU(tool, x)                                                 \
  do {                                                                         \
    CUresult r_ = (x);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                  \
      const char *s_ = nullptr;                                                \
      cuGetErrorString(r_, &s_);                                               \
      std::fprintf(stderr, "%s: error: %s: %s\n", tool, #x, s_ ? s_ : "?");    \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace cuts::tools {

/// Makes GPU 0's primary context current; returns the GPU's name.
inline std::string useFirstGpu(const char *tool) {
  CUTS_CHECK_CU(tool, cuInit(0));
  CUdevice dev;
  CUTS_CHECK_CU(tool, cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CUTS_CHECK_CU(tool, cuDevicePrimaryCtxRetain(&ctx, dev));
  CUTS_CHECK_CU(tool, cuCtxSetCurrent(ctx));
  char name[256] = {};
  cuDeviceGetName(name, sizeof name, dev);
  return name;
}

} // namespace cuts::tools

#endif // CUTS_TOOLS_SUPPORT_CUDACHECK_H

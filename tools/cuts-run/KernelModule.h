//===- KernelModule.h - CUDA source compiled for a device, loaded -*- C++
//-*-===//
#ifndef CUTS_TOOLS_CUTS_RUN_KERNELMODULE_H
#define CUTS_TOOLS_CUTS_RUN_KERNELMODULE_H

#include "codegen/emit/Nvrtc.h"
#include "cuts/rt/CudaDriver.h"

#include <string>
#include <vector>

namespace cuts::cli {

/// `source` compiled with NVRTC for device `dev`'s sm_XY and loaded into
/// the current context, with functions `names` looked up into `out`; false
/// and `error` (NVRTC's, or the driver call that failed) otherwise.
inline bool loadKernels(const rt::cuda::Driver *d, rt::cuda::CUdevice dev,
                        const std::string &source,
                        const std::vector<const char *> &names,
                        rt::cuda::CUmodule &module,
                        std::vector<rt::cuda::CUfunction> &out,
                        std::string &error) {
  namespace cu = rt::cuda;
  int major = 0, minor = 0;
  d->cuDeviceGetAttribute(
      &major, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d->cuDeviceGetAttribute(
      &minor, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  auto bin = compileWithNvrtc(
      source, "sm_" + std::to_string(major) + std::to_string(minor), error);
  if (!bin)
    return false;
  if (d->cuModuleLoadData(&module, bin->cubin.data())) {
    error = "cuModuleLoadData failed";
    return false;
  }
  out.assign(names.size(), nullptr);
  for (size_t i = 0; i < names.size(); ++i)
    if (d->cuModuleGetFunction(&out[i], module, names[i])) {
      error = std::string("no function ") + names[i] + " in the module";
      return false;
    }
  return true;
}

} // namespace cuts::cli

#endif // CUTS_TOOLS_CUTS_RUN_KERNELMODULE_H

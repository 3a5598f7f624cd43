//===- CudaDriver.cpp - dlopen the CUDA driver ----------------------------===//
//
// <cuda.h> maps many names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2,
// cuEventElapsedTime -> cuEventElapsedTime_v2 in CUDA 13); the unversioned
// symbols that libcuda also exports keep the old ABI (32-bit sizes, legacy
// semantics), so each entry names the versioned symbol first and falls back
// only where the old one has the same ABI.
//
//===----------------------------------------------------------------------===//

#include "cuts/rt/CudaDriver.h"

#include "DynamicLibrary.h"

#include <mutex>

namespace cuts::rt::cuda {
namespace {

struct Loaded {
  Driver table{};
  std::string error; // empty when the table is usable
};

Loaded load() {
  Loaded l;
  // Never closed: the driver stays for the process's life, as it would if
  // linked, and unloading it while contexts exist is undefined.
  DynamicLibrary lib;
  std::string tried;
  if (!lib.open({"libcuda.so.1"}, tried)) {
    l.error = "cannot load the CUDA driver (" + tried +
              "); is an NVIDIA driver installed?";
    return l;
  }
  Driver &d = l.table;
  lib.bind(d.cuInit, {"cuInit"});
  lib.bind(d.cuGetErrorString, {"cuGetErrorString"});
  lib.bind(d.cuGetErrorName, {"cuGetErrorName"});
  lib.bind(d.cuDeviceGetCount, {"cuDeviceGetCount"});
  lib.bind(d.cuDeviceGet, {"cuDeviceGet"});
  lib.bind(d.cuDeviceGetName, {"cuDeviceGetName"});
  lib.bind(d.cuDeviceGetAttribute, {"cuDeviceGetAttribute"});
  lib.bind(d.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  lib.bind(d.cuDevicePrimaryCtxRelease,
           {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
  lib.bind(d.cuCtxSetCurrent, {"cuCtxSetCurrent"});
  lib.bind(d.cuCtxGetCurrent, {"cuCtxGetCurrent"});
  lib.bind(d.cuMemAlloc, {"cuMemAlloc_v2"});
  lib.bind(d.cuMemFree, {"cuMemFree_v2"});
  lib.bind(d.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"});
  lib.bind(d.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"});
  lib.bind(d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"});
  lib.bind(d.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"});
  lib.bind(d.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"});
  lib.bind(d.cuMemcpyPeerAsync, {"cuMemcpyPeerAsync"});
  lib.bind(d.cuDeviceCanAccessPeer, {"cuDeviceCanAccessPeer"});
  lib.bind(d.cuCtxEnablePeerAccess, {"cuCtxEnablePeerAccess"});
  lib.bind(d.cuMemHostAlloc, {"cuMemHostAlloc"});
  lib.bind(d.cuMemFreeHost, {"cuMemFreeHost"});
  lib.bind(d.cuPointerGetAttributes, {"cuPointerGetAttributes"});
  lib.bind(d.cuMemsetD32Async, {"cuMemsetD32Async"});
  lib.bind(d.cuMemsetD8, {"cuMemsetD8_v2"});
  lib.bind(d.cuMemsetD8Async, {"cuMemsetD8Async"});
  lib.bind(d.cuMemGetInfo, {"cuMemGetInfo_v2"});
  lib.bind(d.cuStreamCreate, {"cuStreamCreate"});
  lib.bind(d.cuStreamDestroy, {"cuStreamDestroy_v2"});
  lib.bind(d.cuStreamSynchronize, {"cuStreamSynchronize"});
  lib.bind(d.cuStreamQuery, {"cuStreamQuery"});
  lib.bind(d.cuStreamCreateWithPriority, {"cuStreamCreateWithPriority"});
  lib.bind(d.cuStreamWaitEvent, {"cuStreamWaitEvent"});
  lib.bind(d.cuCtxGetStreamPriorityRange, {"cuCtxGetStreamPriorityRange"});
  lib.bind(d.cuEventCreate, {"cuEventCreate"});
  lib.bind(d.cuEventDestroy, {"cuEventDestroy_v2"});
  lib.bind(d.cuEventRecord, {"cuEventRecord"});
  lib.bind(d.cuEventSynchronize, {"cuEventSynchronize"});
  // _v2 (CUDA 12.8) only changed the error for events recorded in graphs.
  lib.bind(d.cuEventElapsedTime,
           {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  lib.bind(d.cuModuleLoadData, {"cuModuleLoadData"});
  lib.bind(d.cuModuleGetFunction, {"cuModuleGetFunction"});
  lib.bind(d.cuModuleUnload, {"cuModuleUnload"});
  lib.bind(d.cuFuncSetAttribute, {"cuFuncSetAttribute"});
  lib.bind(d.cuLaunchKernel, {"cuLaunchKernel"});
  if (!lib.missing().empty()) {
    l.error = "the CUDA driver (libcuda.so.1) lacks " + lib.missing() +
              "; the driver is too old for this runtime";
    return l;
  }
  // Graphs are optional: an old driver still runs models without them.
  lib.bind(d.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"},
           /*optional=*/true);
  lib.bind(d.cuStreamEndCapture, {"cuStreamEndCapture"}, /*optional=*/true);
  lib.bind(d.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"},
           /*optional=*/true);
  lib.bind(d.cuGraphLaunch, {"cuGraphLaunch"}, /*optional=*/true);
  lib.bind(d.cuGraphExecDestroy, {"cuGraphExecDestroy"}, /*optional=*/true);
  lib.bind(d.cuGraphDestroy, {"cuGraphDestroy"}, /*optional=*/true);
  lib.bind(d.cuGraphGetNodes, {"cuGraphGetNodes"}, true);
  lib.bind(d.cuGraphNodeGetType, {"cuGraphNodeGetType"}, true);
  lib.bind(d.cuGraphNodeGetDependencies, {"cuGraphNodeGetDependencies_v2"},
           true);
  lib.bind(d.cuGraphNodeGetDependentNodes, {"cuGraphNodeGetDependentNodes_v2"},
           true);
  lib.bind(d.cuGraphAddDependencies, {"cuGraphAddDependencies_v2"}, true);
  lib.bind(d.cuGraphRemoveDependencies, {"cuGraphRemoveDependencies_v2"}, true);
  lib.bind(d.cuGraphKernelNodeGetParams, {"cuGraphKernelNodeGetParams_v2"},
           true);
  lib.bind(d.cuGraphMemsetNodeGetParams, {"cuGraphMemsetNodeGetParams"}, true);
  lib.bind(d.cuGraphMemsetNodeSetParams, {"cuGraphMemsetNodeSetParams"}, true);
  lib.bind(d.cuGraphDestroyNode, {"cuGraphDestroyNode"}, true);
  lib.bind(d.cuLaunchKernelEx, {"cuLaunchKernelEx"}, /*optional=*/true);
  lib.bind(d.cuDeviceGetDevResource, {"cuDeviceGetDevResource"}, true);
  lib.bind(d.cuDevSmResourceSplitByCount, {"cuDevSmResourceSplitByCount"},
           true);
  lib.bind(d.cuDevResourceGenerateDesc, {"cuDevResourceGenerateDesc"}, true);
  lib.bind(d.cuGreenCtxCreate, {"cuGreenCtxCreate"}, true);
  lib.bind(d.cuGreenCtxDestroy, {"cuGreenCtxDestroy"}, true);
  lib.bind(d.cuCtxFromGreenCtx, {"cuCtxFromGreenCtx"}, true);
  lib.bind(d.cuGreenCtxStreamCreate, {"cuGreenCtxStreamCreate"}, true);

  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr, *text = nullptr;
    d.cuGetErrorName(r, &name);
    d.cuGetErrorString(r, &text);
    l.error = "cuInit failed: " + std::string(name ? name : "CUDA error") +
              " (" + std::to_string(r) + ")" +
              (text ? std::string(": ") + text : std::string());
  }
  return l;
}

const Loaded &loaded() {
  static std::once_flag once;
  static Loaded *l = nullptr;
  // Leaked on purpose: the runtime may be used from static destructors.
  std::call_once(once, [] { l = new Loaded(load()); });
  return *l;
}

} // namespace

const Driver *driver(std::string &error) {
  const Loaded &l = loaded();
  if (!l.error.empty()) {
    error = l.error;
    return nullptr;
  }
  return &l.table;
}

std::string errorString(CUresult r) {
  const Loaded &l = loaded();
  const char *name = nullptr, *text = nullptr;
  if (l.table.cuGetErrorName && l.table.cuGetErrorName(r, &name) != 0)
    name = nullptr;
  if (l.table.cuGetErrorString && l.table.cuGetErrorString(r, &text) != 0)
    text = nullptr;
  std::string s = name ? std::string(name) + " (" + std::to_string(r) + ")"
                       : "CUDA error " + std::to_string(r);
  if (text)
    s += std::string(": ") + text;
  return s;
}

} // namespace cuts::rt::cuda

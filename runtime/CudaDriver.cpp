//===- CudaDriver.cpp - dlopen the CUDA driver ----------------------------===//
//
// <cuda.h> maps many names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2,
// cuEventElapsedTime -> cuEventElapsedTime_v2 in CUDA 13); the unversioned
// symbols that libcuda also exports keep the old ABI (32-bit sizes, legacy
// semantics), so each entry names the versioned symbol first and falls back
// only where the old one has the same ABI.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"

#include <dlfcn.h>

#include <mutex>

namespace cuts::rt::cuda {
namespace {

struct Loaded {
  Driver table{};
  std::string error; // empty when the table is usable
};

/// Looks up the first of `names` that the library exports.
template <typename Fn>
bool bind(void *lib, Fn &slot, std::initializer_list<const char *> names) {
  for (const char *name : names) {
    if (void *sym = dlsym(lib, name)) {
      // POSIX guarantees data and function pointers convert.
      slot = reinterpret_cast<Fn>(sym);
      return true;
    }
  }
  slot = nullptr;
  return false;
}

Loaded load() {
  Loaded l;
  // Never dlclose'd: the driver stays for the process's life, as it would if
  // linked, and unloading it while contexts exist is undefined.
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    l.error = std::string("cannot load the CUDA driver (libcuda.so.1): ") +
              (why ? why : "unknown reason") +
              "; is an NVIDIA driver installed?";
    return l;
  }
  Driver &d = l.table;
  std::string missing;
  auto need = [&](auto &slot, std::initializer_list<const char *> names) {
    if (!bind(lib, slot, names)) {
      if (!missing.empty())
        missing += ", ";
      missing += *names.begin();
    }
  };
  need(d.cuInit, {"cuInit"});
  need(d.cuGetErrorString, {"cuGetErrorString"});
  need(d.cuGetErrorName, {"cuGetErrorName"});
  need(d.cuDeviceGetCount, {"cuDeviceGetCount"});
  need(d.cuDeviceGet, {"cuDeviceGet"});
  need(d.cuDeviceGetName, {"cuDeviceGetName"});
  need(d.cuDeviceGetAttribute, {"cuDeviceGetAttribute"});
  need(d.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  need(d.cuDevicePrimaryCtxRelease,
       {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
  need(d.cuCtxSetCurrent, {"cuCtxSetCurrent"});
  need(d.cuMemAlloc, {"cuMemAlloc_v2"});
  need(d.cuMemFree, {"cuMemFree_v2"});
  need(d.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"});
  need(d.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"});
  need(d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"});
  need(d.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"});
  need(d.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"});
  need(d.cuMemsetD32Async, {"cuMemsetD32Async"});
  need(d.cuMemsetD8, {"cuMemsetD8_v2"});
  need(d.cuStreamCreate, {"cuStreamCreate"});
  need(d.cuStreamDestroy, {"cuStreamDestroy_v2"});
  need(d.cuStreamSynchronize, {"cuStreamSynchronize"});
  need(d.cuEventCreate, {"cuEventCreate"});
  need(d.cuEventDestroy, {"cuEventDestroy_v2"});
  need(d.cuEventRecord, {"cuEventRecord"});
  need(d.cuEventSynchronize, {"cuEventSynchronize"});
  // _v2 (CUDA 12.8) only changed the error for events recorded in graphs.
  need(d.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  need(d.cuModuleLoadData, {"cuModuleLoadData"});
  need(d.cuModuleGetFunction, {"cuModuleGetFunction"});
  need(d.cuModuleUnload, {"cuModuleUnload"});
  need(d.cuFuncSetAttribute, {"cuFuncSetAttribute"});
  need(d.cuLaunchKernel, {"cuLaunchKernel"});
  if (!missing.empty()) {
    l.error = "the CUDA driver (libcuda.so.1) lacks " + missing +
              "; the driver is too old for this runtime";
    return l;
  }
  // Graphs are optional: an old driver still runs models without them.
  bind(lib, d.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"});
  bind(lib, d.cuStreamEndCapture, {"cuStreamEndCapture"});
  bind(lib, d.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"});
  bind(lib, d.cuGraphLaunch, {"cuGraphLaunch"});
  bind(lib, d.cuGraphExecDestroy, {"cuGraphExecDestroy"});
  bind(lib, d.cuGraphDestroy, {"cuGraphDestroy"});

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

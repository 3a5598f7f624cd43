//===- CudaDriver.h - the CUDA driver API, loaded with dlopen ---*- C++ -*-===//
//
// The runtime never includes <cuda.h> nor links libcuda: a server built
// without the CUDA toolkit must still load, and a machine without a GPU must
// get a clean error rather than a loader failure. The few types the runtime
// uses are declared here with the driver's ABI (handles are opaque pointers,
// CUresult an int enum, CUdeviceptr a 64-bit integer).
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_CUDADRIVER_H
#define CUTS_RUNTIME_CUDADRIVER_H

#include <cstddef>
#include <string>

namespace cuts::rt::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
using CUgraphNode = struct CUgraphNode_st *;
using CUkernel = struct CUkern_st *;

/// A captured graph's nodes, read back to move library memsets
/// (GraphMemsets.cpp): cuda.h's kernel node parameters (v2), memset node
/// parameters and the node types used.
struct CUDA_KERNEL_NODE_PARAMS {
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void **kernelParams;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
};
struct CUDA_MEMSET_NODE_PARAMS {
  unsigned long long dst;
  size_t pitch;
  unsigned value, elementSize;
  size_t width, height;
};
/// An edge's kind (zeroed: the downstream node waits for all of the
/// upstream one; a programmatic dependent's edge is not).
struct CUgraphEdgeData {
  unsigned char from_port, to_port, type, reserved[5];
};
constexpr int CU_GRAPH_NODE_TYPE_KERNEL = 0;
constexpr int CU_GRAPH_NODE_TYPE_MEMSET = 2;

/// cuLaunchKernelEx's configuration (the driver's layout: an attribute is
/// an id padded to 8 bytes and a 64-byte value union).
struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int value; // the attributes used here are one int
  };
};
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

/// Green contexts (CUDA 12.4): cuda.h's CUdevResource at ABI version 1, an
/// SM resource's counts at the front of its 48-byte union.
using CUgreenCtx = struct CUgreenCtx_st *;
using CUdevResourceDesc = struct CUdevResourceDesc_st *;
struct CUdevSmResource {
  unsigned smCount, minSmPartitionSize, smCoscheduledAlignment;
};
struct CUdevResource {
  int type;
  unsigned char internalPadding[92];
  union {
    CUdevSmResource sm;
    unsigned char oversize[48];
  };
};
static_assert(sizeof(CUdevResource) == 144, "cuda.h's CUdevResource_v1");
constexpr int CU_DEV_RESOURCE_TYPE_SM = 1;
constexpr unsigned CU_GREEN_CTX_DEFAULT_STREAM = 1;

// The values of the driver's enums that the runtime uses.
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 1;
constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
constexpr unsigned CU_MEMORYTYPE_HOST = 1;

/// The driver's entry points. Every pointer is set once the table loaded,
/// except those marked optional (null when the driver predates them).
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice); // _v2 where exported
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext,
                                size_t, CUstream);
  // Kernels reading another device's memory (cuts c3's SM collective).
  CUresult (*cuDeviceCanAccessPeer)(int *, CUdevice, CUdevice);
  CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  // The plural form: an unknown pointer is no error (compute-sanitizer
  // reports the singular's).
  CUresult (*cuPointerGetAttributes)(unsigned, int *, void **, CUdeviceptr);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemGetInfo)(size_t *, size_t *); // free, total
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamQuery)(CUstream);
  CUresult (*cuStreamCreateWithPriority)(CUstream *, unsigned, int);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuCtxGetStreamPriorityRange)(int *, int *);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent); // _v2 if there
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  // Optional (CUDA 12.0): programmatic dependent launch.
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **,
                               void **);
  // CUDA graphs (optional: a session asks for them only with
  // use_cuda_graph).
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph,
                                          unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  // Optional (CUDA 12.3, the _v2 forms with edge data): a captured graph
  // read and its edges moved before it is instantiated.
  CUresult (*cuGraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
  CUresult (*cuGraphNodeGetType)(CUgraphNode, int *);
  CUresult (*cuGraphNodeGetDependencies)(CUgraphNode, CUgraphNode *,
                                         CUgraphEdgeData *, size_t *);
  CUresult (*cuGraphNodeGetDependentNodes)(CUgraphNode, CUgraphNode *,
                                           CUgraphEdgeData *, size_t *);
  CUresult (*cuGraphAddDependencies)(CUgraph, const CUgraphNode *,
                                     const CUgraphNode *,
                                     const CUgraphEdgeData *, size_t);
  CUresult (*cuGraphRemoveDependencies)(CUgraph, const CUgraphNode *,
                                        const CUgraphNode *,
                                        const CUgraphEdgeData *, size_t);
  CUresult (*cuGraphKernelNodeGetParams)(CUgraphNode,
                                         CUDA_KERNEL_NODE_PARAMS *);
  CUresult (*cuGraphMemsetNodeGetParams)(CUgraphNode,
                                         CUDA_MEMSET_NODE_PARAMS *);
  CUresult (*cuGraphMemsetNodeSetParams)(CUgraphNode,
                                         const CUDA_MEMSET_NODE_PARAMS *);
  CUresult (*cuGraphDestroyNode)(CUgraphNode);

  // Optional (CUDA 12.4): green contexts, SM partitions of a device.
  CUresult (*cuDeviceGetDevResource)(CUdevice, CUdevResource *, int);
  CUresult (*cuDevSmResourceSplitByCount)(CUdevResource *, unsigned *,
                                          const CUdevResource *,
                                          CUdevResource *, unsigned, unsigned);
  CUresult (*cuDevResourceGenerateDesc)(CUdevResourceDesc *, CUdevResource *,
                                        unsigned);
  CUresult (*cuGreenCtxCreate)(CUgreenCtx *, CUdevResourceDesc, CUdevice,
                               unsigned);
  CUresult (*cuGreenCtxDestroy)(CUgreenCtx);
  CUresult (*cuCtxFromGreenCtx)(CUcontext *, CUgreenCtx);
  CUresult (*cuGreenCtxStreamCreate)(CUstream *, CUgreenCtx, unsigned, int);

  bool hasGreenContexts() const {
    return cuDeviceGetDevResource && cuDevSmResourceSplitByCount &&
           cuDevResourceGenerateDesc && cuGreenCtxCreate && cuGreenCtxDestroy &&
           cuCtxFromGreenCtx && cuGreenCtxStreamCreate;
  }
  bool hasGraphEdits() const {
    return cuGraphGetNodes && cuGraphNodeGetType &&
           cuGraphNodeGetDependencies && cuGraphNodeGetDependentNodes &&
           cuGraphAddDependencies && cuGraphRemoveDependencies &&
           cuGraphKernelNodeGetParams && cuGraphMemsetNodeGetParams;
  }
  bool hasGraphs() const {
    return cuStreamBeginCapture && cuStreamEndCapture &&
           cuGraphInstantiateWithFlags && cuGraphLaunch && cuGraphExecDestroy &&
           cuGraphDestroy;
  }
};

/// The driver, loaded and initialised (cuInit) on the first call; later
/// calls return the same table or the same failure. Thread-safe. On failure
/// nullptr and `error` says why (no libcuda.so.1, a missing symbol, cuInit
/// failing).
const Driver *driver(std::string &error);

/// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", or "CUDA error 2" when the
/// driver cannot name it.
std::string errorString(CUresult r);

} // namespace cuts::rt::cuda

#endif // CUTS_RUNTIME_CUDADRIVER_H

// Out of device memory through the C API: with the GPU's memory taken by
// another allocation, loading a model and creating a session must fail with
// CUTS_ERROR_OUT_OF_MEMORY and a message, never crash; once the memory is
// back both must work, and failed attempts must not leak device memory.
//
// usage: cuts-oom-test MODEL.cuts   (exit 77 without a GPU: skipped)
#include "cuts/cuts.h"

#include <dlfcn.h>

#include <cstdio>
#include <vector>

namespace {
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUdeviceptr = unsigned long long;
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
};

int failures = 0;
void expect(bool ok, const char *what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  failures += !ok;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cuts-oom-test MODEL.cuts\n");
    return 2;
  }
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  Driver d{};
  if (lib) {
    d.cuInit = (CUresult(*)(unsigned))dlsym(lib, "cuInit");
    d.cuDeviceGet = (CUresult(*)(CUdevice *, int))dlsym(lib, "cuDeviceGet");
    d.cuDevicePrimaryCtxRetain = (CUresult(*)(CUcontext *, CUdevice))dlsym(
        lib, "cuDevicePrimaryCtxRetain");
    d.cuCtxSetCurrent = (CUresult(*)(CUcontext))dlsym(lib, "cuCtxSetCurrent");
    d.cuMemGetInfo = (CUresult(*)(size_t *, size_t *))dlsym(lib, "cuMemGetInfo_v2");
    d.cuMemAlloc = (CUresult(*)(CUdeviceptr *, size_t))dlsym(lib, "cuMemAlloc_v2");
    d.cuMemFree = (CUresult(*)(CUdeviceptr))dlsym(lib, "cuMemFree_v2");
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (!lib || !d.cuInit || d.cuInit(0) != 0 || d.cuDeviceGet(&dev, 0) != 0 ||
      d.cuDevicePrimaryCtxRetain(&ctx, dev) != 0 || d.cuCtxSetCurrent(ctx)) {
    std::printf("no GPU here: skipped\n");
    return 77;
  }
  auto freeBytes = [&] {
    size_t f = 0, t = 0;
    d.cuMemGetInfo(&f, &t);
    return f;
  };

  // Baseline: one load and session, freed (the context's own allocations
  // settle here).
  cuts_model *model = nullptr;
  cuts_session *session = nullptr;
  expect(cuts_model_load(argv[1], nullptr, &model) == CUTS_OK, "load");
  expect(cuts_session_create(model, nullptr, 0, &session) == CUTS_OK,
         "session");
  cuts_session_free(session);
  cuts_model_free(model);
  size_t baseline = freeBytes();

  // Take (nearly) all of the GPU's memory: big chunks, then small ones.
  std::vector<CUdeviceptr> hog;
  for (size_t chunk : {size_t(1) << 30, size_t(64) << 20, size_t(2) << 20,
                       size_t(64) << 10}) {
    CUdeviceptr p;
    while (d.cuMemAlloc(&p, chunk) == 0)
      hog.push_back(p);
  }
  std::printf("took %zu allocations, %zu bytes left\n", hog.size(),
              freeBytes());
  model = nullptr;
  cuts_status s = cuts_model_load(argv[1], nullptr, &model);
  expect(s == CUTS_ERROR_OUT_OF_MEMORY && !model,
         "load without memory fails with CUTS_ERROR_OUT_OF_MEMORY");
  std::printf("     %s: %s\n", cuts_status_name(s), cuts_last_error());

  // Give back just enough for the weights, not for a session's arena.
  for (size_t i = 0; i < hog.size() && cuts_model_load(argv[1], nullptr,
                                                       &model) != CUTS_OK;
       ++i)
    d.cuMemFree(hog[hog.size() - 1 - i]), hog[hog.size() - 1 - i] = 0;
  expect(model != nullptr, "load once some memory is back");
  if (model && cuts_model_arena_bytes(model) > 0) {
    s = cuts_session_create(model, nullptr, 0, &session);
    std::printf("     session: %s: %s\n", cuts_status_name(s),
                s ? cuts_last_error() : "");
    expect(s == CUTS_OK || s == CUTS_ERROR_OUT_OF_MEMORY,
           "a session without memory for its arena fails cleanly");
    if (s == CUTS_OK)
      cuts_session_free(session);
  }
  cuts_model_free(model);
  for (CUdeviceptr p : hog)
    if (p)
      d.cuMemFree(p);

  model = nullptr;
  expect(cuts_model_load(argv[1], nullptr, &model) == CUTS_OK &&
             cuts_session_create(model, nullptr, 0, &session) == CUTS_OK,
         "load and session once the memory is back");
  cuts_session_free(session);
  cuts_model_free(model);
  size_t after = freeBytes();
  std::printf("free before %zu, after %zu\n", baseline, after);
  expect(after + (size_t(4) << 20) >= baseline,
         "failed attempts leak no device memory");
  return failures ? 1 : 0;
}

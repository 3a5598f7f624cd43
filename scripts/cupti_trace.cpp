// A CUDA injection library (CUDA_INJECTION64_PATH=libcuts_trace.so): every
// kernel's, memset's and copy's start and end on the GPU (CUPTI activity
// records) as CSV lines in $CUPTI_TRACE_OUT (default /tmp/cuts_trace.csv):
//   start_ns,end_ns,stream,graph_node,name
// Kernels that overlap under programmatic dependent launch keep their own
// times, which `cuts bench --kernels` (one kernel a graph) cannot show.
// scripts/package_gpu.sh builds it; scripts/gpu_trace.sh uses it.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

FILE *out;
std::mutex mu;

void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *maxRecords) {
  *size = 16 << 20;
  *buf = static_cast<uint8_t *>(std::aligned_alloc(64, *size));
  *maxRecords = 0;
}

template <typename Record>
void print(const Record *r, const char *name, unsigned long long bytes) {
  std::fprintf(out, "%llu,%llu,%u,%llu,%s", (unsigned long long)r->start,
               (unsigned long long)r->end, r->streamId,
               (unsigned long long)r->graphNodeId, name);
  if (bytes)
    std::fprintf(out, " %llu", bytes);
  std::fputc('\n', out);
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t *buf, size_t,
                        size_t valid) {
  std::lock_guard<std::mutex> lock(mu);
  CUpti_Activity *r = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto *k = reinterpret_cast<CUpti_ActivityKernel10 *>(r);
      print(k, k->name, 0);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto *m = reinterpret_cast<CUpti_ActivityMemset4 *>(r);
      print(m, "MEMSET", m->bytes);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto *m = reinterpret_cast<CUpti_ActivityMemcpy6 *>(r);
      print(m, "MEMCPY", m->bytes);
    }
  }
  std::free(buf);
}

void finish() {
  cuptiActivityFlushAll(1);
  std::fflush(out);
}

} // namespace

extern "C" int InitializeInjection(void) {
  const char *path = std::getenv("CUPTI_TRACE_OUT");
  out = std::fopen(path ? path : "/tmp/cuts_trace.csv", "w");
  if (!out)
    return 0;
  cuptiActivityRegisterCallbacks(requested, completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  std::atexit(finish);
  return 1;
}

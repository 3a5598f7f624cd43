//===- Common.h - cuts-kernel-check's GPU helpers ---------------*- C++ -*-===//
#ifndef CUTS_TOOLS_KERNEL_CHECK_COMMON_H
#define CUTS_TOOLS_KERNEL_CHECK_COMMON_H

#include "tools/support/CudaCheck.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cuts::kernel_check {

#define CHECK_CU(x) CUTS_CHECK_CU("cuts-kernel-check", x)

#define CHECK_CUDA(x)                                                          \
  do {                                                                         \
    cudaError_t r_ = (x);                                                      \
    if (r_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "cuts-kernel-check: error: %s: %s\n", #x,           \
                   cudaGetErrorString(r_));                                    \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

struct Shape {
  const char *name;
  int64_t M, K, N;
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The relative L2 error of the `ref.size()` floats at device pointer y
// against ref (a NaN, such as an unwritten output, counts as infinite).
inline double deviceRelativeL2(const float *y, const std::vector<float> &ref) {
  std::vector<float> hy(ref.size());
  cudaMemcpy(hy.data(), y, ref.size() * 4, cudaMemcpyDeviceToHost);
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double e = double(hy[i]) - ref[i];
    num += std::isnan(hy[i]) ? INFINITY : e * e;
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

// The stream every timed launch goes to: graphs capture only from a
// stream of one's own, not the legacy default stream. A blocking one, so
// that the checks' memsets and copies on the default stream order with it.
inline cudaStream_t timingStream() {
  static cudaStream_t s = [] {
    cudaStream_t created;
    cudaStreamCreate(&created);
    return created;
  }();
  return s;
}

// Times `launch(stream)`: a CUDA graph of `reps` launches, replayed (the
// median of 5 replays, after a warm-up one), divided by `reps`. A single
// launch between two events would also time the host's launch overhead,
// larger for a library call (its heuristics) than for cuLaunchKernel.
// The operands stay in the L2 across launches, alike for both sides.
template <typename F> double timeMs(F launch, int reps = 20) {
  cudaStream_t s = timingStream();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < reps; ++i)
    launch(s);
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaGraphLaunch(exec, s);
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    cudaEventRecord(a, s);
    cudaGraphLaunch(exec, s);
    cudaEventRecord(b, s);
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms / reps);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return median(t);
}

} // namespace cuts::kernel_check

#endif // CUTS_TOOLS_KERNEL_CHECK_COMMON_H

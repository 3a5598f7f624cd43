//===- Common.h - cuts-kernel-check's GPU helpers ---------------*- C++ -*-===//
#ifndef CUTS_TOOLS_KERNEL_CHECK_COMMON_H
#define CUTS_TOOLS_KERNEL_CHECK_COMMON_H

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cuts::kernel_check {

#define CHECK_CU(x)                                                            \
  do {                                                                         \
    CUresult r_ = (x);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                  \
      const char *s_ = nullptr;                                                \
      cuGetErrorString(r_, &s_);                                               \
      std::fprintf(stderr, "cuts-kernel-check: error: %s: %s\n", #x,           \
                   s_ ? s_ : "?");                                             \
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

// Times `launch` with CUDA events: warm-up, then the median of `reps`.
template <typename F> double timeMs(F launch, int reps = 20) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i)
    launch();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median(t);
}

} // namespace cuts::kernel_check

#endif // CUTS_TOOLS_KERNEL_CHECK_COMMON_H

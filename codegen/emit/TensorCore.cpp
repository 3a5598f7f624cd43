//===- TensorCore.cpp - reduced precision and tensor cores ----------------===//
#include "codegen/emit/TensorCore.h"

namespace cuts::codegen {

const char *tensorCorePrelude() {
  return R"CUDA(// Reduced precision and tensor cores (sm_80+); the host's are cuda_host.h's.
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned short cuts_f2h(float x) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
__device__ __forceinline__ float cuts_h2f(unsigned short h) {
  float x;
  asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h));
  return x;
}
__device__ __forceinline__ unsigned short cuts_f2bf(float x) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
__device__ __forceinline__ float cuts_bf2f(unsigned short h) {
  return __uint_as_float((unsigned)h << 16);
}
__device__ __forceinline__ float cuts_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}
typedef unsigned cuts_sptr; // a shared-memory address; + adds bytes
__device__ __forceinline__ cuts_sptr cuts_saddr(const void *p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return (cuts_sptr)a;
}
#define CUTS_MMA_16816(NAME, TYPE)                                             \
  __device__ __forceinline__ void NAME(float *d, const unsigned *a,            \
                                       const unsigned *b, const float *c) {    \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE        \
                 ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "                \
                 "{%10,%11,%12,%13};"                                          \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])              \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),      \
                   "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));     \
  }
CUTS_MMA_16816(cuts_mma_f16, "f16")
CUTS_MMA_16816(cuts_mma_bf16, "bf16")
#undef CUTS_MMA_16816
__device__ __forceinline__ void cuts_mma_tf32(float *d, const unsigned *a,
                                              const unsigned *b,
                                              const float *c) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
__device__ __forceinline__ void cuts_ldmatrix_x4(unsigned *r, cuts_sptr p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(p));
}
__device__ __forceinline__ void cuts_ldmatrix_x4_trans(unsigned *r,
                                                       cuts_sptr p) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(p));
}
__device__ __forceinline__ void cuts_ldmatrix_x2(unsigned *r, cuts_sptr p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(p));
}
__device__ __forceinline__ void cuts_ldmatrix_x2_trans(unsigned *r,
                                                       cuts_sptr p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(p));
}
__device__ __forceinline__ void cuts_cp_async16(cuts_sptr dst, const void *src,
                                                int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :
               : "r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cuts_cp_async_commit() {
  asm volatile("cp.async.commit_group;");
}
template <int N> __device__ __forceinline__ void cuts_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" : : "n"(N));
}
#endif
)CUDA";
}

} // namespace cuts::codegen

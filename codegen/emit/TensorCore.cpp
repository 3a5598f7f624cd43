//===- TensorCore.cpp - reduced precision and tensor cores ----------------===//
#include "codegen/emit/TensorCore.h"

#include <utility>

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
// n fragment registers of fp32 words rounded to tf32 (nearest, ties away).
__device__ __forceinline__ void cuts_round_tf32(unsigned *r, int n) {
#pragma unroll
  for (int i = 0; i < n; ++i)
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r[i]) : "f"(__uint_as_float(r[i])));
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
// Through L1 (.ca): a stem's pixel pairs, each read by about 12 rows of
// the block.
__device__ __forceinline__ void cuts_cp_async16_ca(cuts_sptr dst,
                                                   const void *src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;"
               :
               : "r"(dst), "l"(src), "r"(bytes));
}
// 8 bytes (a stem's 4-channel pixel); .ca: .cg copies only 16.
__device__ __forceinline__ void cuts_cp_async8(cuts_sptr dst, const void *src,
                                               int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;"
               :
               : "r"(dst), "l"(src), "r"(bytes));
}
// 4 bytes (a planar fp16 patch's pixel pair); .ca: .cg copies only 16.
__device__ __forceinline__ void cuts_cp_async4(cuts_sptr dst, const void *src,
                                               int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
               :
               : "r"(dst), "l"(src), "r"(bytes));
}
// A fragment register from a planar patch: two 16-bit elements, or two
// fp32 ones rounded to the products' type (the model input's cast).
__device__ __forceinline__ unsigned cuts_lds_b32(cuts_sptr p) {
  unsigned r;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(r) : "r"(p));
  return r;
}
#define CUTS_LDS_F32X2(NAME, TYPE)                                             \
  __device__ __forceinline__ unsigned NAME(cuts_sptr p) {                      \
    float lo, hi;                                                              \
    unsigned r;                                                                \
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];"                            \
                 : "=f"(lo), "=f"(hi)                                          \
                 : "r"(p));                                                    \
    asm("cvt.rn." TYPE "x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));     \
    return r;                                                                  \
  }
CUTS_LDS_F32X2(cuts_lds_f32x2_f16x2, "f16")
CUTS_LDS_F32X2(cuts_lds_f32x2_bf16x2, "bf16")
#undef CUTS_LDS_F32X2
__device__ __forceinline__ void cuts_sts_b16(cuts_sptr p, unsigned short v) {
  asm volatile("st.shared.b16 [%0], %1;" : : "r"(p), "h"(v) : "memory");
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

const char *wgmmaPrelude() {
  return R"CUDA(// Warpgroup products (sm_90a); the host's are cuda_host.h's.
#ifdef __CUDA_ARCH__
typedef unsigned long long cuts_gdesc; // a wgmma shared-matrix descriptor
// K-major rows of 16 x 2^swizzle bytes (swizzle 1, 2, 3: 32, 64, 128) whose
// 16-byte chunks the hardware swaps by address bits 7-9; 8-row groups sbo
// bytes apart. The descriptor's layout code is 4 - swizzle (3: 32-byte,
// 2: 64-byte, 1: 128-byte); lbo is unused for such rows (1 by convention).
__device__ __forceinline__ cuts_gdesc cuts_wgmma_desc(cuts_sptr a,
                                                      unsigned sbo,
                                                      unsigned swizzle) {
  return (cuts_gdesc)((a & 0x3ffff) >> 4) | (cuts_gdesc)1 << 16 |
         (cuts_gdesc)((sbo >> 4) & 0x3fff) << 32 |
         (cuts_gdesc)(4 - swizzle) << 62;
}
__device__ __forceinline__ void cuts_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void cuts_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void cuts_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" : : "n"(N) : "memory");
}
// Keeps the compiler from moving an accumulator across the asynchronous
// product's issue and wait.
__device__ __forceinline__ void cuts_wgmma_hold(float &r) {
  asm volatile("" : "+f"(r)::"memory");
}
// mbarriers guarding a warp-specialised pipeline's stages.
__device__ __forceinline__ void cuts_mbar_init(cuts_sptr b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(count)
               : "memory");
}
__device__ __forceinline__ void cuts_mbar_arrive(cuts_sptr b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b)
               : "memory");
}
__device__ __forceinline__ void cuts_cp_async_mbar_arrive(cuts_sptr b) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(b)
               : "memory");
}
__device__ __forceinline__ void cuts_mbar_wait(cuts_sptr b, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(b), "r"(parity)
                 : "memory");
  } while (!done);
}
__device__ __forceinline__ void cuts_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
#endif
)CUDA";
}

namespace {
// A wgmma m64nNk16's accumulators as asm operands: their placeholders
// (%0 .. %(n/2 - 1)) and their read-write constraints on d[].
std::pair<std::string, std::string> wgmmaAccumulators(int n) {
  std::string regs, outs;
  for (int i = 0; i < n / 2; ++i) {
    regs += (i ? ", %" : "%") + std::to_string(i);
    outs += (i ? ", \"+f\"(d[" : "\"+f\"(d[") + std::to_string(i) + "])";
  }
  return {regs, outs};
}
} // namespace

std::string wgmmaFunction(int n, bool bf16) {
  const std::string type = bf16 ? "bf16" : "f16";
  const std::string name =
      "cuts_wgmma_m64n" + std::to_string(n) + "k16_" + type;
  const auto [regs, outs] = wgmmaAccumulators(n);
  const std::string a = std::to_string(n / 2), b = std::to_string(n / 2 + 1),
                    scale = std::to_string(n / 2 + 2);
  return "// D[64 x " + std::to_string(n) + "] += A[64 x 16] B[16 x " +
         std::to_string(n) +
         "], both K-major in shared memory.\n"
         "__device__ __forceinline__ void " +
         name +
         "(float *d, cuts_gdesc a, cuts_gdesc b) {\n"
         "#ifdef __CUDA_ARCH__\n"
         "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" +
         scale + ", 0;\\nwgmma.mma_async.sync.aligned.m64n" +
         std::to_string(n) + "k16.f32." + type + "." + type + " {" + regs +
         "}, %" + a + ", %" + b +
         ", p, 1, 1, 0, 0;\\n}\\n\"\n"
         "               : " +
         outs +
         "\n               : \"l\"(a), \"l\"(b), \"r\"(1));\n"
         "#else\n"
         "  cuts_wgmma_host(d, a, b, " +
         std::to_string(n) + ", " + (bf16 ? "true" : "false") +
         ");\n"
         "#endif\n"
         "}\n";
}

std::string wgmmaRegisterFunction(int n, bool bf16) {
  const std::string type = bf16 ? "bf16" : "f16", N = std::to_string(n);
  const auto [regs, outs] = wgmmaAccumulators(n);
  auto at = [&](int i) { return "%" + std::to_string(n / 2 + i); };
  return "// D[64 x " + N + "] += A[64 x 16] B[16 x " + N +
         "], A in registers (mma.sync's\n// fragment a warp), B K-major in "
         "shared memory.\n"
         "__device__ __forceinline__ void cuts_wgmma_rs_m64n" +
         N + "k16_" + type +
         "(float *d, const unsigned *a,\n"
         "                                                   cuts_gdesc b) {\n"
         "#ifdef __CUDA_ARCH__\n"
         "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, " +
         at(5) + ", 0;\\nwgmma.mma_async.sync.aligned.m64n" + N + "k16.f32." +
         type + "." + type + " {" + regs + "}, {" + at(0) + ", " + at(1) +
         ", " + at(2) + ", " + at(3) + "}, " + at(4) +
         ", p, 1, 1, 0;\\n}\\n\"\n"
         "               : " +
         outs +
         "\n               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), "
         "\"r\"(a[3]), \"l\"(b), \"r\"(1));\n"
         "#else\n"
         "  cuts_wgmma_rs_host(d, a, b, " +
         N + ", " + (bf16 ? "true" : "false") +
         ");\n"
         "#endif\n"
         "}\n";
}

} // namespace cuts::codegen

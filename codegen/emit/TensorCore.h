//===- TensorCore.h - reduced precision and tensor cores --------*- C++ -*-===//
//
// The device functions kernels use for fp16, bf16 and tf32 data and the
// tensor cores (sm_80 and later), as CUDA source that the emitter puts
// before a kernel that needs them. On the host, codegen/emit/cuda_host.h
// defines the same functions with the same semantics, so the CPU runs the
// very kernel source:
//
//   unsigned short cuts_f2h(float), cuts_f2bf(float)    round to nearest even
//   float cuts_h2f(unsigned short), cuts_bf2f(unsigned short)
//   float cuts_tf32(float)        round to tf32 (10-bit mantissa, ties away)
//   cuts_mma_f16(float d[4], const unsigned a[4], const unsigned b[2],
//                const float c[4])   mma.sync.m16n8k16.row.col.f32.f16.f16.f32
//   cuts_mma_bf16(...)             the same with bf16 operands
//   cuts_mma_tf32(float d[4], const unsigned a[4], const unsigned b[2],
//                 const float c[4]) mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32
//   cuts_sptr cuts_saddr(const void *p) p as a shared-memory address: a
//                                  32-bit window address on the GPU, a byte
//                                  pointer on the host; + adds bytes
//   cuts_ldmatrix_x4(unsigned r[4], cuts_sptr row)  ldmatrix .m8n8 .b16
//   cuts_ldmatrix_x4_trans, cuts_ldmatrix_x2, cuts_ldmatrix_x2_trans
//   cuts_cp_async16(cuts_sptr shared, const void *global, int bytes)
//                                  16 bytes, of which `bytes` (0 or 16) read
//   cuts_cp_async8(cuts_sptr shared, const void *global, int bytes)  8 bytes
//   cuts_cp_async_commit(), cuts_cp_async_wait<N>()
//
// Half and bfloat16 values travel as their bit patterns (unsigned short),
// two to a 32-bit register (the lower address in the low half), as the
// tensor-core fragments hold them; no CUDA header is needed.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_TENSORCORE_H
#define CUTS_CODEGEN_EMIT_TENSORCORE_H

#include <string>

namespace cuts::codegen {

/// The device functions above, for sm_80 and later (their definitions are
/// guarded by __CUDA_ARCH__: the host compiler takes cuda_host.h's).
const char *tensorCorePrelude();

/// The warpgroup functions (sm_90a; after tensorCorePrelude):
///   cuts_gdesc cuts_wgmma_desc(cuts_sptr start, unsigned sbo, unsigned sw)
///       a K-major shared matrix of rows of 16 x 2^sw bytes (sw 1, 2, 3:
///       32, 64 or 128), 16-byte chunk c of row r stored at chunk
///       c ^ (r % 8 >> (3 - sw)), 8-row groups sbo bytes apart; start and
///       its 8-row group 2^sw x 128-byte aligned but for the k offset
///   cuts_wgmma_fence(), cuts_wgmma_commit(), cuts_wgmma_wait<N>()
///   cuts_wgmma_hold(float &)    pins an accumulator across issue and wait
///   cuts_mbar_init(cuts_sptr b, unsigned count)   an mbarrier of `count`
///                                  arrivals a phase (8 bytes, 8-aligned)
///   cuts_mbar_arrive(b), cuts_cp_async_mbar_arrive(b)  an arrival now, or
///                                  once this thread's cp.asyncs have landed
///                                  (.noinc: counted in `count`)
///   cuts_mbar_wait(b, parity)      until the phase of that parity completes
///   cuts_fence_proxy_async()       orders generic-proxy shared accesses
///                                  before the async proxy's (wgmma)
const char *wgmmaPrelude();

/// cuts_wgmma_m64n<n>k16_<f16|bf16>(float *d, cuts_gdesc a, cuts_gdesc b):
/// wgmma.mma_async D[64 x n] += A[64 x 16] B[16 x n], A and B K-major in
/// shared memory, D in the warpgroup's registers (n / 2 a thread: thread
/// 32 w + 4 g + t holds rows 16 w + g (+ 8) and columns 8 j + 2 t (+ 1)).
/// On the host it calls cuda_host.h's cuts_wgmma_host.
std::string wgmmaFunction(int n, bool bf16);

/// cuts_wgmma_rs_m64n<n>k16_<f16|bf16>(float *d, const unsigned *a,
/// cuts_gdesc b): the same product with A from registers, each warp's 16
/// rows as an mma.sync m16n8k16 A fragment (ldmatrix x4's four words). On
/// the host it calls cuda_host.h's cuts_wgmma_rs_host.
std::string wgmmaRegisterFunction(int n, bool bf16);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_EMIT_TENSORCORE_H

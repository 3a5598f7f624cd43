// Handwritten kernels over TensorCore.h's functions, shared by the unit
// test (the CPU against references) and cuts-tensor-core-check (the GPU
// against the CPU). Each is put after codegen::tensorCorePrelude().
#ifndef CUTS_TEST_UNIT_TENSORCOREKERNELS_H
#define CUTS_TEST_UNIT_TENSORCOREKERNELS_H

namespace cuts::test {

inline const char *kConvert = R"cuda(
extern "C" __global__ void convert(const float *x, unsigned short *h,
                                   unsigned short *b, float *t, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    h[i] = cuts_f2h(x[i]);
    b[i] = cuts_f2bf(x[i]);
    t[i] = cuts_tf32(x[i]);
  }
}
)cuda";

inline const char *kWiden = R"cuda(
extern "C" __global__ void widen(const unsigned short *p, float *hf,
                                 float *bf) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  hf[i] = cuts_h2f(p[i]);
  bf[i] = cuts_bf2f(p[i]);
}
)cuda";

inline const char *kMma16 = R"cuda(
// One warp: D[16x8] = A[16x16] B[16x8] + C with fp16 or bf16 operands,
// through shared memory by cp.async and into fragments by ldmatrix. A is
// row-major, or column-major (At[16 k][16 m], read with ldmatrix .trans)
// when aT; B is row-major (K x N), read with .trans into the col layout.
extern "C" __global__ void mma16(const unsigned short *A,
                                 const unsigned short *B, const float *C,
                                 float *D, int bf16, int aT) {
  __shared__ __align__(16) unsigned short As[16][16];
  __shared__ __align__(16) unsigned short Bs[16][8];
  int l = threadIdx.x;
  cuts_cp_async16(cuts_saddr(&As[0][0] + 8 * l), A + 8 * l, 16);
  cuts_cp_async16(cuts_saddr(&Bs[0][0] + 8 * (l % 16)), B + 8 * (l % 16), l < 16 ? 16 : 0);
  cuts_cp_async_commit();
  cuts_cp_async_wait<0>();
  __syncthreads();
  unsigned a[4], b[2];
  if (aT)
    cuts_ldmatrix_x4_trans(a, cuts_saddr(&As[l % 8 + (l / 16) * 8][((l / 8) % 2) * 8]));
  else
    cuts_ldmatrix_x4(a, cuts_saddr(&As[l % 16][(l / 16) * 8]));
  cuts_ldmatrix_x2_trans(b, cuts_saddr(&Bs[l % 16][0]));
  int g = l / 4, t = l % 4;
  float c[4], d[4];
  for (int i = 0; i < 4; ++i)
    c[i] = C[(g + (i >= 2 ? 8 : 0)) * 8 + t * 2 + (i & 1)];
  if (bf16)
    cuts_mma_bf16(d, a, b, c);
  else
    cuts_mma_f16(d, a, b, c);
  for (int i = 0; i < 4; ++i)
    D[(g + (i >= 2 ? 8 : 0)) * 8 + t * 2 + (i & 1)] = d[i];
}
)cuda";

inline const char *kMmaTf32 = R"cuda(
// One warp: D[16x8] = A[16x8] B[8x8] + C, operands rounded to tf32; the
// fragments read straight from global memory (row-major A and B).
extern "C" __global__ void mma_tf32(const float *A, const float *B,
                                    const float *C, float *D) {
  int l = threadIdx.x, g = l / 4, t = l % 4;
  unsigned a[4], b[2];
  a[0] = __float_as_uint(cuts_tf32(A[g * 8 + t]));
  a[1] = __float_as_uint(cuts_tf32(A[(g + 8) * 8 + t]));
  a[2] = __float_as_uint(cuts_tf32(A[g * 8 + t + 4]));
  a[3] = __float_as_uint(cuts_tf32(A[(g + 8) * 8 + t + 4]));
  b[0] = __float_as_uint(cuts_tf32(B[t * 8 + g]));
  b[1] = __float_as_uint(cuts_tf32(B[(t + 4) * 8 + g]));
  float c[4], d[4];
  for (int i = 0; i < 4; ++i)
    c[i] = C[(g + (i >= 2 ? 8 : 0)) * 8 + t * 2 + (i & 1)];
  cuts_mma_tf32(d, a, b, c);
  for (int i = 0; i < 4; ++i)
    D[(g + (i >= 2 ? 8 : 0)) * 8 + t * 2 + (i & 1)] = d[i];
}
)cuda";

} // namespace cuts::test

#endif // CUTS_TEST_UNIT_TENSORCOREKERNELS_H

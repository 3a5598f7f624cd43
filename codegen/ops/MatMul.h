//===- MatMul.h - matmul / gemm kernels from DFGs ---------------*- C++ -*-===//
#ifndef CUTS_CODEGEN_OPS_MATMUL_H
#define CUTS_CODEGEN_OPS_MATMUL_H

#include "codegen/ops/Kernel.h"

#include <optional>

namespace cuts::codegen {

/// Y[M, N] = epilogue(op(A) x op(B)) with op(A) [M, K] and op(B) [K, N]
/// (A stored [K, M] when transA, B stored [N, K] when transB: ONNX Gemm),
/// tile parameters p (Nb rows and Kb columns per block, Nt x Kt per thread,
/// C_input = p.Cin, A's shared tile in p's FORMAT_shared). With batch > 1,
/// `batch` independent products (A [batch, M, K], B [batch, K, N], Y
/// [batch, M, N], as in attention), one per block row of the grid: the
/// batch follows output dimension H with Hb = Ht = 1. Fails (nullopt, with
/// `error`) when p does not describe a matmul tiling.
/// The kernel of product d (OpDesc, MatMul: Y[batch, M, N] = A[batch, M, K]
/// B[batch, K, N] with M = d.N rows, K = d.C, N = d.K columns, A or B
/// transposed per d.transA / d.transB; batch 1: one product, no batch axis)
/// for tile parameters p (H = W = 1, C_input dividing K). It reads A and B
/// and writes Y.
std::optional<Kernel> buildMatMul(const std::string &name, const OpDesc &d,
                                  const TileParams &p,
                                  const std::vector<EpilogueOp> &epilogue,
                                  std::string &error);

/// The product on tensor cores (Kernel::mma): the same Y, its epilogue as
/// buildMatMul's, with A and B of type `operand` (fp16 or bf16) read
/// through p.stages shared buffers, p a tensor-core tiling (its block
/// mmaLoopOf(p).blockRows() x blockCols(), its thread tile a lane's
/// fragment, C_input the K slice, a multiple of 16). wgmma (sm_90a) needs
/// B transposed. `views`: A and B read in place where given (MmaView).
/// An implicit GEMM (d.im2col) reads A as the channels-last input
/// [images, IH, IW, IC] through its windows, zeros outside it.
std::optional<Kernel>
buildMmaMatMul(const std::string &name, const OpDesc &d, const TileParams &p,
               dfg::Type operand, const std::vector<EpilogueOp> &epilogue,
               std::string &error,
               const std::array<std::optional<MmaView>, 2> &views = {});

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_OPS_MATMUL_H

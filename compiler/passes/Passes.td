//===- Passes.td - graph clean-up passes of cuts -----------*- tablegen -*-===//
#ifndef CUTS_PASSES_TD
#define CUTS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldConstants : Pass<"cuts-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate every op whose operands are constants";
  let description = [{
    Runs the folders of the cuts ops to a fixed point, so shape subgraphs
    (Shape -> Gather -> Concat -> Reshape) and weight-only arithmetic become
    constants; ops left without users are erased.
  }];
}

def RemoveIdentity : Pass<"cuts-remove-identity", "mlir::func::FuncOp"> {
  let summary = "Remove Identity and (inference) Dropout";
}

def FoldBatchNorm : Pass<"cuts-fold-batchnorm", "mlir::func::FuncOp"> {
  let summary = "Fold BatchNormalization into the Conv that feeds it";
  let description = [{
    conv(X, W, B) followed by batch_normalization with constant W, B and
    statistics becomes one conv with W' = W * s and B' = (B - mean) * s + beta,
    s = scale / sqrt(var + epsilon), per output channel. The conv must have
    no other user.
  }];
}

def FuseMatMulAdd : Pass<"cuts-fuse-matmul-add", "mlir::func::FuncOp"> {
  let summary = "Recognise MatMul + Add as one cuts.matmul_add";
  let description = [{
    add(matmul(A, B), C), in either operand order, where the matmul has no
    other user and C broadcasts to the product's shape without growing it,
    becomes matmul_add(A, B, C): the Gemm-like op with a bias (or residual)
    epilogue that code generation fuses.
  }];
}

def DeadCode : Pass<"cuts-dce", "mlir::func::FuncOp"> {
  let summary = "Erase ops whose results are unused";
}

#endif // CUTS_PASSES_TD

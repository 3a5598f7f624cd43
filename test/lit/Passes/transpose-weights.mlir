// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-transpose-weights))' | FileCheck %s

// A batched fp16 Linear layer: the weight [K, N] is stored as its transpose
// [N, K], which the product reads with transB.
// CHECK-LABEL: func.func @linear3d(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3x2xf16>
// CHECK: %[[W:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf16>}
// CHECK: cuts.matmul_add %[[X]], %[[W]], %{{[a-z0-9_]+}} {transB} : (tensor<2x3x2xf16>, tensor<3x2xf16>, tensor<3xf16>) -> tensor<2x3x3xf16>
// CHECK-NOT: cuts.reshape
func.func @linear3d(%x: tensor<2x3x2xf16>) -> tensor<2x3x3xf16> {
  %w = cuts.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf16>} : tensor<2x3xf16>
  %b = cuts.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf16>} : tensor<3xf16>
  %0 = cuts.matmul_add %x, %w, %b : (tensor<2x3x2xf16>, tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3x3xf16>
  return %0 : tensor<2x3x3xf16>
}

// -----

// A bf16 Gemm (as ONNX imports a Linear layer) gets transB = true.
// CHECK-LABEL: func.func @gemm(
// CHECK: cuts.gemm %arg0, %{{[a-z0-9_]+}}, %arg1 {{.*}}transB = true{{.*}} : (tensor<4x2xbf16>, tensor<3x2xbf16>, tensor<4x3xbf16>) -> tensor<4x3xbf16>
func.func @gemm(%x: tensor<4x2xbf16>, %r: tensor<4x3xbf16>) -> tensor<4x3xbf16> {
  %w = cuts.constant {value = dense<1.0> : tensor<2x3xbf16>} : tensor<2x3xbf16>
  %0 = cuts.gemm %x, %w, %r {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<4x2xbf16>, tensor<2x3xbf16>, tensor<4x3xbf16>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// fp32 products, activations as B and shared weights stay as they are.
// CHECK-LABEL: func.func @untouched(
// CHECK-COUNT-4: cuts.matmul
// CHECK-NOT: transB
func.func @untouched(%x: tensor<4x2xf32>, %h: tensor<4x2xf16>, %k: tensor<2x3xf16>) -> (tensor<4x3xf32>, tensor<4x3xf16>, tensor<4x3xf16>, tensor<4x3xf16>) {
  %w = cuts.constant {value = dense<1.0> : tensor<2x3xf32>} : tensor<2x3xf32>
  %s = cuts.constant {value = dense<1.0> : tensor<2x3xf16>} : tensor<2x3xf16>
  %0 = cuts.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %1 = cuts.matmul %h, %k : (tensor<4x2xf16>, tensor<2x3xf16>) -> tensor<4x3xf16>
  %2 = cuts.matmul %h, %s : (tensor<4x2xf16>, tensor<2x3xf16>) -> tensor<4x3xf16>
  %3 = cuts.matmul %h, %s : (tensor<4x2xf16>, tensor<2x3xf16>) -> tensor<4x3xf16>
  return %0, %1, %2, %3 : tensor<4x3xf32>, tensor<4x3xf16>, tensor<4x3xf16>, tensor<4x3xf16>
}

// -----

// Attention's K^T: transpose [0, 2, 3, 1] of [B, S, H, D] becomes the row
// move [0, 2, 1, 3] read with transB; a 2-D transpose disappears.
// CHECK-LABEL: func.func @attention(
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: tensor<1x2x4x8xf16>, %[[K:[a-z0-9_]+]]: tensor<1x4x2x8xf16>
// CHECK: %[[KT:[a-z0-9_]+]] = cuts.transpose %[[K]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x8xf16>) -> tensor<1x2x4x8xf16>
// CHECK: cuts.matmul %[[Q]], %[[KT]] {transB} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x4xf16>
// CHECK: cuts.matmul %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {transB} : (tensor<4x8xf16>, tensor<3x8xf16>) -> tensor<4x3xf16>
// CHECK-NOT: cuts.transpose
func.func @attention(%q: tensor<1x2x4x8xf16>, %k: tensor<1x4x2x8xf16>, %a: tensor<4x8xf16>, %x: tensor<3x8xf16>) -> (tensor<1x2x4x4xf16>, tensor<4x3xf16>) {
  %kt = cuts.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x8xf16>) -> tensor<1x2x8x4xf16>
  %0 = cuts.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %xt = cuts.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x8xf16>) -> tensor<8x3xf16>
  %1 = cuts.matmul %a, %xt : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf16>
  return %0, %1 : tensor<1x2x4x4xf16>, tensor<4x3xf16>
}

// -----

// A function that allows tf32 stores its fp32 weights transposed too.
// CHECK-LABEL: func.func @tf32(
// CHECK: %[[W:[a-z0-9_]+]] = cuts.constant {value = dense<1.000000e+00> : tensor<3x2xf32>}
// CHECK: cuts.matmul %arg0, %[[W]] {transB} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
func.func @tf32(%x: tensor<4x2xf32>) -> tensor<4x3xf32> attributes {cuts.tf32} {
  %w = cuts.constant {value = dense<1.0> : tensor<2x3xf32>} : tensor<2x3xf32>
  %0 = cuts.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-transpose-weights))' | FileCheck %s

// A batched fp16 Linear layer: the weight [K, N] is stored as its transpose
// [N, K] and read by a Gemm with transB over A's rows viewed as [M, K].
// CHECK-LABEL: func.func @linear3d(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3x2xf16>
// CHECK: %[[A:[a-z0-9_]+]] = cuts.reshape %[[X]] {shape = array<i64: 6, 2>}
// CHECK: %[[W:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf16>}
// CHECK: %[[Y:[a-z0-9_]+]] = cuts.gemm %[[A]], %[[W]], %{{[a-z0-9_]+}} {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
// CHECK: cuts.reshape %[[Y]] {shape = array<i64: 2, 3, 3>}
// CHECK-NOT: cuts.matmul
func.func @linear3d(%x: tensor<2x3x2xf16>) -> tensor<2x3x3xf16> {
  %w = cuts.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf16>} : tensor<2x3xf16>
  %b = cuts.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf16>} : tensor<3xf16>
  %0 = cuts.matmul_add %x, %w, %b : (tensor<2x3x2xf16>, tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3x3xf16>
  return %0 : tensor<2x3x3xf16>
}

// -----

// A 2-D bf16 product with a residual of Y's shape needs no reshapes.
// CHECK-LABEL: func.func @residual(
// CHECK: cuts.gemm %arg0, %{{[a-z0-9_]+}}, %arg1 {{.*}}transB = true{{.*}} -> tensor<4x3xbf16>
func.func @residual(%x: tensor<4x2xbf16>, %r: tensor<4x3xbf16>) -> tensor<4x3xbf16> {
  %w = cuts.constant {value = dense<1.0> : tensor<2x3xbf16>} : tensor<2x3xbf16>
  %0 = cuts.matmul_add %x, %w, %r : (tensor<4x2xbf16>, tensor<2x3xbf16>, tensor<4x3xbf16>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// fp32 products, activations as B and shared weights stay as they are.
// CHECK-LABEL: func.func @untouched(
// CHECK-COUNT-4: cuts.matmul
// CHECK-NOT: cuts.gemm
func.func @untouched(%x: tensor<4x2xf32>, %h: tensor<4x2xf16>, %k: tensor<2x3xf16>) -> (tensor<4x3xf32>, tensor<4x3xf16>, tensor<4x3xf16>, tensor<4x3xf16>) {
  %w = cuts.constant {value = dense<1.0> : tensor<2x3xf32>} : tensor<2x3xf32>
  %s = cuts.constant {value = dense<1.0> : tensor<2x3xf16>} : tensor<2x3xf16>
  %0 = cuts.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %1 = cuts.matmul %h, %k : (tensor<4x2xf16>, tensor<2x3xf16>) -> tensor<4x3xf16>
  %2 = cuts.matmul %h, %s : (tensor<4x2xf16>, tensor<2x3xf16>) -> tensor<4x3xf16>
  %3 = cuts.matmul %h, %s : (tensor<4x2xf16>, tensor<2x3xf16>) -> tensor<4x3xf16>
  return %0, %1, %2, %3 : tensor<4x3xf32>, tensor<4x3xf16>, tensor<4x3xf16>, tensor<4x3xf16>
}

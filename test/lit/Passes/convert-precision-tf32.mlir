// RUN: %cuts-opt %s --pass-pipeline='builtin.module(func.func(cuts-convert-precision{precision=tf32}))' | FileCheck %s

// tf32 keeps every tensor fp32 and marks the function.
// CHECK-LABEL: func.func @linear(
// CHECK-SAME: %{{[a-z0-9_]+}}: tensor<2x3xf32>) -> tensor<2x4xf32> attributes {cuts.tf32}
// CHECK: cuts.matmul {{.*}} -> tensor<2x4xf32>
func.func @linear(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w = cuts.constant {value = dense<0.1> : tensor<3x4xf32>} : tensor<3x4xf32>
  %0 = cuts.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

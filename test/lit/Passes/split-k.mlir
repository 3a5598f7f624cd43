// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-split-k{num-sm=16}))' | FileCheck %s
// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-split-k{num-sm=1}))' | FileCheck %s --check-prefix=FULL

// 4 x 8 results are one 64 x 64 tile, 1/16 of the SMs; K = 1024 splits in
// two parts of 512 (three would not divide it, four would be shorter than
// 512): A read as [2, 4, 512] through a transpose, the parts in fp32,
// summed with the bias and cast back.
// CHECK-LABEL: func.func @linear(
// CHECK: %[[B:[a-z0-9_]+]] = cuts.constant {{.*}} : tensor<2x512x8xf16>
// CHECK: %[[A3:[a-z0-9_]+]] = cuts.reshape %arg0 {shape = array<i64: 4, 2, 512>} : (tensor<1x4x1024xf16>) -> tensor<4x2x512xf16>
// CHECK: %[[AS:[a-z0-9_]+]] = cuts.transpose %[[A3]] {perm = array<i64: 1, 0, 2>} : (tensor<4x2x512xf16>) -> tensor<2x4x512xf16>
// CHECK: %[[P:[a-z0-9_]+]] = cuts.matmul %[[AS]], %[[B]] : (tensor<2x4x512xf16>, tensor<2x512x8xf16>) -> tensor<2x4x8xf32>
// CHECK: %[[S0:[a-z0-9_]+]] = cuts.slice %[[P]] {ends = array<i64: 1, 4, 8>, starts = array<i64: 0, 0, 0>
// CHECK: %[[R0:[a-z0-9_]+]] = cuts.reshape %[[S0]] {{.*}} -> tensor<1x4x8xf32>
// CHECK: %[[S1:[a-z0-9_]+]] = cuts.slice %[[P]] {ends = array<i64: 2, 4, 8>, starts = array<i64: 1, 0, 0>
// CHECK: %[[R1:[a-z0-9_]+]] = cuts.reshape %[[S1]] {{.*}} -> tensor<1x4x8xf32>
// CHECK: %[[SUM:[a-z0-9_]+]] = cuts.add %[[R0]], %[[R1]]
// CHECK: %[[C:[a-z0-9_]+]] = cuts.cast %arg1 {to = f32} : (tensor<8xf16>) -> tensor<8xf32>
// CHECK: %[[Y:[a-z0-9_]+]] = cuts.add %[[SUM]], %[[C]]
// CHECK: %[[H:[a-z0-9_]+]] = cuts.cast %[[Y]] {to = f16} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf16>
// CHECK: return %[[H]]
// A product that fills the GPU (one SM) stays whole.
// FULL-LABEL: func.func @linear(
// FULL: cuts.matmul_add %arg0
// FULL-NOT: cuts.transpose
func.func @linear(%x: tensor<1x4x1024xf16>, %c: tensor<8xf16>) -> tensor<1x4x8xf16> {
  %w = cuts.constant {value = dense<1.0> : tensor<1024x8xf16>} : tensor<1024x8xf16>
  %0 = cuts.matmul_add %x, %w, %c : (tensor<1x4x1024xf16>, tensor<1024x8xf16>, tensor<8xf16>) -> tensor<1x4x8xf16>
  return %0 : tensor<1x4x8xf16>
}

// -----

// Left alone: K too short to split (256), fp32 operands outside tf32, and
// a product of two activations.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT: cuts.transpose
// CHECK: cuts.matmul %arg0
// CHECK: cuts.matmul %arg1
// CHECK: cuts.matmul %arg2, %arg3
func.func @kept(%x: tensor<4x256xf16>, %y: tensor<4x1024xf32>, %a: tensor<4x1024xf16>, %b: tensor<1024x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf16>) {
  %w = cuts.constant {value = dense<1.0> : tensor<256x8xf16>} : tensor<256x8xf16>
  %v = cuts.constant {value = dense<1.0> : tensor<1024x8xf32>} : tensor<1024x8xf32>
  %0 = cuts.matmul %x, %w : (tensor<4x256xf16>, tensor<256x8xf16>) -> tensor<4x8xf16>
  %1 = cuts.matmul %y, %v : (tensor<4x1024xf32>, tensor<1024x8xf32>) -> tensor<4x8xf32>
  %2 = cuts.matmul %a, %b : (tensor<4x1024xf16>, tensor<1024x8xf16>) -> tensor<4x8xf16>
  return %0, %1, %2 : tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf16>
}

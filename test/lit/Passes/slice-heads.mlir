// RUN: %cuts-opt %s --cuts-slice-heads | FileCheck %s

// GPT-2's key, sliced from the fused Q|K|V product and split into heads:
// the split moves before the slice, which takes whole heads. A slice that
// starts inside a head, and one whose reshape merges axes, stay.
// CHECK-LABEL: func.func @qkv_heads
// CHECK: %[[R:.+]] = cuts.reshape %arg0 {shape = array<i64: 1, 4, 6, 2>} : (tensor<1x4x12xf32>) -> tensor<1x4x6x2xf32>
// CHECK: %[[K:.+]] = cuts.slice %[[R]] {ends = array<i64: 1, 4, 4, 2>, starts = array<i64: 0, 0, 2, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-SAME: -> tensor<1x4x2x2xf32>
// CHECK: cuts.slice %arg0 {ends = array<i64: 1, 4, 9>, starts = array<i64: 0, 0, 5>
// CHECK: cuts.slice %arg0 {ends = array<i64: 1, 4, 12>, starts = array<i64: 0, 0, 8>
// CHECK: return %[[K]]
func.func @qkv_heads(%x: tensor<1x4x12xf32>) -> (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<4x4xf32>) {
  %k = cuts.slice %x {starts = array<i64: 0, 0, 4>, ends = array<i64: 1, 4, 8>, steps = array<i64: 1, 1, 1>} : (tensor<1x4x12xf32>) -> tensor<1x4x4xf32>
  %0 = cuts.reshape %k {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %o = cuts.slice %x {starts = array<i64: 0, 0, 5>, ends = array<i64: 1, 4, 9>, steps = array<i64: 1, 1, 1>} : (tensor<1x4x12xf32>) -> tensor<1x4x4xf32>
  %1 = cuts.reshape %o {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %m = cuts.slice %x {starts = array<i64: 0, 0, 8>, ends = array<i64: 1, 4, 12>, steps = array<i64: 1, 1, 1>} : (tensor<1x4x12xf32>) -> tensor<1x4x4xf32>
  %2 = cuts.reshape %m {shape = array<i64: 4, 4>} : (tensor<1x4x4xf32>) -> tensor<4x4xf32>
  return %0, %1, %2 : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<4x4xf32>
}

// A slice of two axes, and one with a step, stay.
// CHECK-LABEL: func.func @not_one_axis
// CHECK-NOT: cuts.reshape %arg0
func.func @not_one_axis(%x: tensor<2x4x12xf32>) -> (tensor<1x4x2x2xf32>, tensor<2x4x2x2xf32>) {
  %a = cuts.slice %x {starts = array<i64: 0, 0, 4>, ends = array<i64: 1, 4, 8>, steps = array<i64: 1, 1, 1>} : (tensor<2x4x12xf32>) -> tensor<1x4x4xf32>
  %0 = cuts.reshape %a {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %b = cuts.slice %x {starts = array<i64: 0, 0, 0>, ends = array<i64: 2, 4, 8>, steps = array<i64: 1, 1, 2>} : (tensor<2x4x12xf32>) -> tensor<2x4x4xf32>
  %1 = cuts.reshape %b {shape = array<i64: 2, 4, 2, 2>} : (tensor<2x4x4xf32>) -> tensor<2x4x2x2xf32>
  return %0, %1 : tensor<1x4x2x2xf32>, tensor<2x4x2x2xf32>
}

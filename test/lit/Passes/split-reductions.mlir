// RUN: %cuts-opt %s --split-input-file --cuts-split-reductions | FileCheck %s
// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-split-reductions{max-row=8}))' | FileCheck %s --check-prefix=SMALL

// EfficientNet's squeeze: 112 x 112 = 12544 = 14 x 896, rows of 896 (28
// warps' lanes) first.
// CHECK-LABEL: func.func @squeeze(
// CHECK: %[[R:.+]] = cuts.reshape %arg0 {shape = array<i64: 1, 32, 14, 896>}
// CHECK: %[[M:.+]] = cuts.reduce_mean %[[R]] {axes = array<i64: 3>, keepdims = false} : (tensor<1x32x14x896xf32>) -> tensor<1x32x14xf32>
// CHECK: %[[N:.+]] = cuts.reduce_mean %[[M]] {axes = array<i64: 2>, keepdims = false} : (tensor<1x32x14xf32>) -> tensor<1x32xf32>
// CHECK: %[[Y:.+]] = cuts.reshape %[[N]] {shape = array<i64: 1, 32, 1, 1>}
// CHECK: return %[[Y]]
// SMALL-LABEL: func.func @squeeze(
// SMALL-COUNT-5: cuts.reduce_mean
func.func @squeeze(%x: tensor<1x32x112x112xf32>) -> tensor<1x32x1x1xf32> {
  %0 = cuts.global_average_pool %x : (tensor<1x32x112x112xf32>) -> tensor<1x32x1x1xf32>
  return %0 : tensor<1x32x1x1xf32>
}

// -----

// Sums and maxima over trailing axes, kept dimensions or not; a row with
// no divisor up to max-row (2053 is prime), an integer mean and rows that
// fit stay whole.
// CHECK-LABEL: func.func @reductions(
// CHECK: cuts.reshape %arg0 {shape = array<i64: 3, 4, 1024>}
// CHECK: cuts.reduce_sum {{.*}} -> tensor<3x4xf32>
// CHECK: cuts.reduce_sum {{.*}} -> tensor<3xf32>
// CHECK: cuts.reshape {{.*}} {shape = array<i64: 3, 1, 1>}
// CHECK: cuts.reshape %arg1 {shape = array<i64: 2, 5, 1000>}
// CHECK: cuts.reduce_max {{.*}} -> tensor<2x5xf16>
// CHECK: cuts.reduce_max {{.*}} -> tensor<2xf16>
// CHECK-NOT: cuts.reshape
// CHECK: cuts.reduce_mean %arg2 {axes = array<i64: 1>, keepdims = false} : (tensor<2x2053xf32>)
// CHECK: cuts.reduce_mean %arg3 {axes = array<i64: 1>, keepdims = false} : (tensor<2x4096xi64>)
// CHECK: cuts.reduce_sum %arg4 {axes = array<i64: 0>, keepdims = false} : (tensor<4096x2xf32>)
func.func @reductions(%a: tensor<3x64x64xf32>, %b: tensor<2x5000xf16>, %c: tensor<2x2053xf32>, %d: tensor<2x4096xi64>, %e: tensor<4096x2xf32>) -> (tensor<3x1x1xf32>, tensor<2xf16>, tensor<2xf32>, tensor<2xi64>, tensor<2xf32>) {
  %0 = cuts.reduce_sum %a {axes = array<i64: 1, 2>, keepdims = true} : (tensor<3x64x64xf32>) -> tensor<3x1x1xf32>
  %1 = cuts.reduce_max %b {axes = array<i64: 1>, keepdims = false} : (tensor<2x5000xf16>) -> tensor<2xf16>
  %2 = cuts.reduce_mean %c {axes = array<i64: 1>, keepdims = false} : (tensor<2x2053xf32>) -> tensor<2xf32>
  %3 = cuts.reduce_mean %d {axes = array<i64: 1>, keepdims = false} : (tensor<2x4096xi64>) -> tensor<2xi64>
  %4 = cuts.reduce_sum %e {axes = array<i64: 0>, keepdims = false} : (tensor<4096x2xf32>) -> tensor<2xf32>
  return %0, %1, %2, %3, %4 : tensor<3x1x1xf32>, tensor<2xf16>, tensor<2xf32>, tensor<2xi64>, tensor<2xf32>
}

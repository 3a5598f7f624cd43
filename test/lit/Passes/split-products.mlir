// RUN: %cuts-opt %s --split-input-file --cuts-split-products --cuts-fold-constants --cuts-dce | FileCheck %s
// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-split-products{min-elements=9}))' | FileCheck %s --check-prefix=SMALL

// Parts of 8 results, fewer than min-elements: the product stays whole.
// SMALL-LABEL: func.func @qkv(
// SMALL: cuts.matmul_add {{.*}} -> tensor<1x4x6xf32>
// SMALL-COUNT-3: cuts.slice

// GPT-2's query/key/value: one product sliced three ways becomes three
// products of B's column ranges and the bias's entries (folded).
// CHECK-LABEL: func.func @qkv(
// CHECK-DAG: %[[B0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[}}[1.000000e+00, 2.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>}
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e-01, 2.000000e-01]> : tensor<2xf32>}
// CHECK-DAG: %[[B2:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[}}[5.000000e+00, 6.000000e+00], [1.100000e+01, 1.200000e+01]]> : tensor<2x2xf32>}
// CHECK: %[[Q:[a-z0-9_]+]] = cuts.matmul_add %arg0, %[[B0]], %[[C0]] : (tensor<1x4x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<1x4x2xf32>
// CHECK: cuts.matmul_add %arg0, {{.*}} -> tensor<1x4x2xf32>
// CHECK: %[[V:[a-z0-9_]+]] = cuts.matmul_add %arg0, %[[B2]], {{.*}} -> tensor<1x4x2xf32>
// CHECK-NOT: cuts.slice
func.func @qkv(%x: tensor<1x4x2xf32>) -> (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) {
  %w = cuts.constant {value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]]> : tensor<2x6xf32>} : tensor<2x6xf32>
  %b = cuts.constant {value = dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]> : tensor<6xf32>} : tensor<6xf32>
  %0 = cuts.matmul_add %x, %w, %b : (tensor<1x4x2xf32>, tensor<2x6xf32>, tensor<6xf32>) -> tensor<1x4x6xf32>
  %q = cuts.slice %0 {ends = array<i64: 1, 4, 2>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<1x4x6xf32>) -> tensor<1x4x2xf32>
  %k = cuts.slice %0 {ends = array<i64: 1, 4, 4>, starts = array<i64: 0, 0, 2>, steps = array<i64: 1, 1, 1>} : (tensor<1x4x6xf32>) -> tensor<1x4x2xf32>
  %v = cuts.slice %0 {ends = array<i64: 1, 4, 6>, starts = array<i64: 0, 0, 4>, steps = array<i64: 1, 1, 1>} : (tensor<1x4x6xf32>) -> tensor<1x4x2xf32>
  return %q, %k, %v : tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>
}

// -----

// Left alone: a product with a user that is not a slice, a slice of rows,
// and a product of two activations.
// CHECK-LABEL: func.func @kept(
// CHECK: %[[P:[a-z0-9_]+]] = cuts.matmul %arg0, {{.*}} -> tensor<4x6xf32>
// CHECK: cuts.slice %[[P]]
// CHECK: %[[R:[a-z0-9_]+]] = cuts.matmul %arg0, {{.*}} -> tensor<4x6xf32>
// CHECK: cuts.slice %[[R]] {ends = array<i64: 2, 6>
// CHECK: %[[A:[a-z0-9_]+]] = cuts.matmul %arg0, %arg1
// CHECK: cuts.slice %[[A]]
func.func @kept(%x: tensor<4x2xf32>, %y: tensor<2x6xf32>) -> (tensor<4x2xf32>, tensor<4x6xf32>, tensor<2x6xf32>, tensor<4x2xf32>) {
  %w = cuts.constant {value = dense<1.0> : tensor<2x6xf32>} : tensor<2x6xf32>
  %0 = cuts.matmul %x, %w : (tensor<4x2xf32>, tensor<2x6xf32>) -> tensor<4x6xf32>
  %1 = cuts.slice %0 {ends = array<i64: 4, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %2 = cuts.matmul %x, %w : (tensor<4x2xf32>, tensor<2x6xf32>) -> tensor<4x6xf32>
  %3 = cuts.slice %2 {ends = array<i64: 2, 6>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  %4 = cuts.matmul %x, %y : (tensor<4x2xf32>, tensor<2x6xf32>) -> tensor<4x6xf32>
  %5 = cuts.slice %4 {ends = array<i64: 4, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x2xf32>
  return %1, %0, %3, %5 : tensor<4x2xf32>, tensor<4x6xf32>, tensor<2x6xf32>, tensor<4x2xf32>
}

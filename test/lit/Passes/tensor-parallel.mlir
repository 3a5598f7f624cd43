// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-tensor-parallel{ranks=2 rank=1}))' | FileCheck %s
// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-tensor-parallel{ranks=2 simulate=true}))' | FileCheck %s --check-prefix=SIM

// An MLP: FFN1 split by columns (rank 1's half of the weight and bias),
// GELU per rank, FFN2 by rows with the bias added by rank 0 only (rank 1
// multiplies), the partial sums meeting in an all-reduce before the
// residual.
// CHECK-LABEL: func.func @mlp(
// CHECK: %[[W1:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[}}[3.000000e+00, 4.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>}
// CHECK: %[[B1:[a-z0-9_]+]] = cuts.constant {value = dense<[3.000000e+00, 4.000000e+00]> : tensor<2xf32>}
// CHECK: %[[H:[a-z0-9_]+]] = cuts.matmul_add %arg0, %[[W1]], %[[B1]] : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK: %[[G:[a-z0-9_]+]] = cuts.gelu %[[H]] {{.*}} -> tensor<3x2xf32>
// CHECK: %[[W2:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[}}[5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>}
// CHECK: %[[P:[a-z0-9_]+]] = cuts.matmul %[[G]], %[[W2]] :
// CHECK: %[[S:[a-z0-9_]+]] = cuts.all_reduce %[[P]] {ranks = 2 : i64}
// CHECK: cuts.add %[[S]], %arg0
// Simulated: both ranks' halves and their sum.
// SIM-LABEL: func.func @mlp(
// SIM-COUNT-3: cuts.matmul_add
// SIM: cuts.matmul %
// SIM: %[[SUM:[a-z0-9_]+]] = cuts.add
// SIM: cuts.add %[[SUM]], %arg0
// SIM-NOT: cuts.all_reduce
func.func @mlp(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w1 = cuts.constant {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>} : tensor<2x4xf32>
  %b1 = cuts.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %w2 = cuts.constant {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>} : tensor<4x2xf32>
  %b2 = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.matmul_add %x, %w1, %b1 : (tensor<3x2xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %1 = cuts.gelu %0 {approximate = "none"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %2 = cuts.matmul_add %1, %w2, %b2 : (tensor<3x4xf32>, tensor<4x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %3 = cuts.add %2, %x : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %3 : tensor<3x2xf32>
}

// -----

// Attention: Q, K and V split together by columns, which the reshapes
// make a split of the heads (2 of 4 per rank); the products batched over
// heads and the softmax along keys stay per rank; the output projection
// is split by rows.
// CHECK-LABEL: func.func @attention(
// CHECK: cuts.reshape %{{.*}} {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
// CHECK: cuts.softmax %{{.*}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK: cuts.reshape %{{.*}} {shape = array<i64: 1, 4, 4>} : (tensor<1x4x2x2xf32>) -> tensor<1x4x4xf32>
// CHECK: %[[P:[a-z0-9_]+]] = cuts.matmul %{{.*}} : (tensor<1x4x4xf32>, tensor<4x8xf32>) -> tensor<1x4x8xf32>
// CHECK: cuts.all_reduce %[[P]]
func.func @attention(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %wq = cuts.constant {value = dense<0.5> : tensor<8x8xf32>} : tensor<8x8xf32>
  %wk = cuts.constant {value = dense<0.25> : tensor<8x8xf32>} : tensor<8x8xf32>
  %wv = cuts.constant {value = dense<0.125> : tensor<8x8xf32>} : tensor<8x8xf32>
  %wo = cuts.constant {value = dense<1.0> : tensor<8x8xf32>} : tensor<8x8xf32>
  %q = cuts.matmul %x, %wq : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = cuts.matmul %x, %wk : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %v = cuts.matmul %x, %wv : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %q4 = cuts.reshape %q {shape = array<i64: 1, 4, 4, 2>} : (tensor<1x4x8xf32>) -> tensor<1x4x4x2xf32>
  %k4 = cuts.reshape %k {shape = array<i64: 1, 4, 4, 2>} : (tensor<1x4x8xf32>) -> tensor<1x4x4x2xf32>
  %v4 = cuts.reshape %v {shape = array<i64: 1, 4, 4, 2>} : (tensor<1x4x8xf32>) -> tensor<1x4x4x2xf32>
  %qt = cuts.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %kt = cuts.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x4x2xf32>) -> tensor<1x4x2x4xf32>
  %vt = cuts.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %s = cuts.matmul %qt, %kt : (tensor<1x4x4x2xf32>, tensor<1x4x2x4xf32>) -> tensor<1x4x4x4xf32>
  %p = cuts.softmax %s {axis = 3 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %o = cuts.matmul %p, %vt : (tensor<1x4x4x4xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %ot = cuts.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %o3 = cuts.reshape %ot {shape = array<i64: 1, 4, 8>} : (tensor<1x4x4x2xf32>) -> tensor<1x4x8xf32>
  %y = cuts.matmul %o3, %wo : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// A split value that reaches a layer norm over the split axis: nothing is
// split.
// CHECK-LABEL: func.func @blocked(
// CHECK-NOT: cuts.all_reduce
// CHECK: cuts.matmul %arg0, %{{.*}} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
func.func @blocked(%x: tensor<2x4xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4xf32> {
  %w1 = cuts.constant {value = dense<1.0> : tensor<4x8xf32>} : tensor<4x8xf32>
  %w2 = cuts.constant {value = dense<1.0> : tensor<8x4xf32>} : tensor<8x4xf32>
  %0 = cuts.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %y, %m, %s = cuts.layer_normalization %0, %g, %b {axis = 1 : i64, epsilon = 1.0E-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %1 = cuts.matmul %y, %w2 : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// A fused Q|K|V product read as three slices: rank 1 takes the second
// half of each segment's columns (2, 3 | 6, 7 | 10, 11), and the slices
// take their thirds of its share.
// CHECK-LABEL: func.func @fused(
// CHECK: cuts.constant {value = dense<{{\[}}[2.000000e+00, 3.000000e+00, 6.000000e+00, 7.000000e+00, 1.000000e+01, 1.100000e+01]]>
// CHECK: %[[F:[a-z0-9_]+]] = cuts.matmul %arg0, %{{.*}} -> tensor<1x2x6xf32>
// CHECK: cuts.slice %[[F]] {ends = array<i64: 1, 2, 2>, starts = array<i64: 0, 0, 0>
// CHECK: cuts.slice %[[F]] {ends = array<i64: 1, 2, 4>, starts = array<i64: 0, 0, 2>
// CHECK: cuts.slice %[[F]] {ends = array<i64: 1, 2, 6>, starts = array<i64: 0, 0, 4>
// CHECK: cuts.all_reduce
func.func @fused(%x: tensor<1x2x1xf32>) -> tensor<1x2x4xf32> {
  %w = cuts.constant {value = dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]]> : tensor<1x12xf32>} : tensor<1x12xf32>
  %wo = cuts.constant {value = dense<1.0> : tensor<4x4xf32>} : tensor<4x4xf32>
  %f = cuts.matmul %x, %w : (tensor<1x2x1xf32>, tensor<1x12xf32>) -> tensor<1x2x12xf32>
  %q = cuts.slice %f {ends = array<i64: 1, 2, 4>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<1x2x12xf32>) -> tensor<1x2x4xf32>
  %k = cuts.slice %f {ends = array<i64: 1, 2, 8>, starts = array<i64: 0, 0, 4>, steps = array<i64: 1, 1, 1>} : (tensor<1x2x12xf32>) -> tensor<1x2x4xf32>
  %v = cuts.slice %f {ends = array<i64: 1, 2, 12>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : (tensor<1x2x12xf32>) -> tensor<1x2x4xf32>
  %qk = cuts.mul %q, %k : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %o = cuts.add %qk, %v : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %y = cuts.matmul %o, %wo : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}

// -----

// A split op that reads a row product's sum (a gate): a rank's copy would
// read its own partial, so nothing is split.
// CHECK-LABEL: func.func @gate(
// CHECK-NOT: cuts.all_reduce
// CHECK: return
func.func @gate(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = cuts.constant {value = dense<1.0> : tensor<4x8xf32>} : tensor<4x8xf32>
  %wg = cuts.constant {value = dense<1.0> : tensor<8x1xf32>} : tensor<8x1xf32>
  %w2 = cuts.constant {value = dense<1.0> : tensor<8x4xf32>} : tensor<8x4xf32>
  %h = cuts.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = cuts.matmul %h, %wg : (tensor<2x8xf32>, tensor<8x1xf32>) -> tensor<2x1xf32>
  %m = cuts.mul %h, %s : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %y = cuts.matmul %m, %w2 : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// A whole operand defined after the split starts (a broadcast scale): each
// copy sits where its original was, after it.
// CHECK-LABEL: func.func @late(
// CHECK: %[[E:[a-z0-9_]+]] = cuts.exp %arg1
// CHECK: cuts.mul %{{.*}}, %[[E]] : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK: cuts.all_reduce
func.func @late(%x: tensor<2x4xf32>, %z: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %w1 = cuts.constant {value = dense<1.0> : tensor<4x8xf32>} : tensor<4x8xf32>
  %w2 = cuts.constant {value = dense<1.0> : tensor<8x4xf32>} : tensor<8x4xf32>
  %h = cuts.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %e = cuts.exp %z : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %m = cuts.mul %h, %e : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %y = cuts.matmul %m, %w2 : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// RUN: %cuts-opt %s --cuts-fuse-matmul-add | FileCheck %s

// add(matmul(A, B), C) becomes matmul_add(A, B, C).
// CHECK-LABEL: func.func @matmul_then_bias(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<3x4xf32>, %[[B:[a-z0-9_]+]]: tensor<4x5xf32>, %[[C:[a-z0-9_]+]]: tensor<5xf32>
// CHECK-NEXT: %[[Y:[a-z0-9_]+]] = cuts.matmul_add %[[A]], %[[B]], %[[C]] : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: return %[[Y]] : tensor<3x5xf32>
func.func @matmul_then_bias(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = cuts.add %0, %c : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %1 : tensor<3x5xf32>
}

// The other operand order: add(C, matmul(A, B)); C stays the third operand.
// CHECK-LABEL: func.func @bias_then_matmul(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<3x4xf32>, %[[B:[a-z0-9_]+]]: tensor<4x5xf32>, %[[C:[a-z0-9_]+]]: tensor<5xf32>
// CHECK-NEXT: %[[Y:[a-z0-9_]+]] = cuts.matmul_add %[[A]], %[[B]], %[[C]] : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: return %[[Y]] : tensor<3x5xf32>
func.func @bias_then_matmul(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = cuts.add %c, %0 : (tensor<5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %1 : tensor<3x5xf32>
}

// A batched product with a [1, N] bias that broadcasts to it.
// CHECK-LABEL: func.func @batched_bias(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<2x3x4xf32>, %[[B:[a-z0-9_]+]]: tensor<4x5xf32>, %[[C:[a-z0-9_]+]]: tensor<1x5xf32>
// CHECK-NEXT: %[[Y:[a-z0-9_]+]] = cuts.matmul_add %[[A]], %[[B]], %[[C]] : (tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<1x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT: return %[[Y]] : tensor<2x3x5xf32>
func.func @batched_bias(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<1x5xf32>) -> tensor<2x3x5xf32> {
  %0 = cuts.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %1 = cuts.add %0, %c : (tensor<2x3x5xf32>, tensor<1x5xf32>) -> tensor<2x3x5xf32>
  return %1 : tensor<2x3x5xf32>
}

// A residual of the product's full shape (here the matmul's own input).
// CHECK-LABEL: func.func @residual(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<3x4xf32>, %[[B:[a-z0-9_]+]]: tensor<4x4xf32>
// CHECK-NEXT: %[[Y:[a-z0-9_]+]] = cuts.matmul_add %[[A]], %[[B]], %[[A]] : (tensor<3x4xf32>, tensor<4x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: return %[[Y]] : tensor<3x4xf32>
func.func @residual(%a: tensor<3x4xf32>, %b: tensor<4x4xf32>) -> tensor<3x4xf32> {
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %1 = cuts.add %a, %0 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %1 : tensor<3x4xf32>
}

// A constant bias.
// CHECK-LABEL: func.func @constant_bias(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<3x2xf32>, %[[B:[a-z0-9_]+]]: tensor<2x2xf32>
// CHECK-NEXT: %[[C:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: %[[Y:[a-z0-9_]+]] = cuts.matmul_add %[[A]], %[[B]], %[[C]] : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: return %[[Y]] : tensor<3x2xf32>
func.func @constant_bias(%a: tensor<3x2xf32>, %b: tensor<2x2xf32>) -> tensor<3x2xf32> {
  %c = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.matmul %a, %b : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %1 = cuts.add %0, %c : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// A matmul with another user is not fused.
// CHECK-LABEL: func.func @matmul_two_users(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<3x4xf32>, %[[B:[a-z0-9_]+]]: tensor<4x5xf32>, %[[C:[a-z0-9_]+]]: tensor<5xf32>
// CHECK-NOT: cuts.matmul_add
// CHECK: %[[M:[a-z0-9_]+]] = cuts.matmul %[[A]], %[[B]]
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = cuts.add %[[M]], %[[C]]
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = cuts.relu %[[M]]
// CHECK-NEXT: return %[[S]], %[[R]]
func.func @matmul_two_users(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = cuts.add %0, %c : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %2 = cuts.relu %0 : (tensor<3x5xf32>) -> tensor<3x5xf32>
  return %1, %2 : tensor<3x5xf32>, tensor<3x5xf32>
}

// C that would grow the result (rank 3 on a 2-D product) is not fused.
// CHECK-LABEL: func.func @c_grows_rank(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<3x4xf32>, %[[B:[a-z0-9_]+]]: tensor<4x5xf32>, %[[C:[a-z0-9_]+]]: tensor<2x3x5xf32>
// CHECK-NOT: cuts.matmul_add
// CHECK: %[[M:[a-z0-9_]+]] = cuts.matmul %[[A]], %[[B]]
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = cuts.add %[[M]], %[[C]] : (tensor<3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT: return %[[S]]
func.func @c_grows_rank(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = cuts.add %0, %c : (tensor<3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  return %1 : tensor<2x3x5xf32>
}

// C that would grow a size-1 axis of the product ([3x1] + [3x5]): not fused.
// CHECK-LABEL: func.func @c_grows_dim(
// CHECK-NOT: cuts.matmul_add
// CHECK: %[[M:[a-z0-9_]+]] = cuts.matmul
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = cuts.add %{{[a-z0-9_]+}}, %[[M]]
// CHECK-NEXT: return %[[S]]
func.func @c_grows_dim(%a: tensor<3x4xf32>, %b: tensor<4x1xf32>, %c: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<4x1xf32>) -> tensor<3x1xf32>
  %1 = cuts.add %c, %0 : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  return %1 : tensor<3x5xf32>
}

// matmul_add is float-only: an integer matmul + add is not fused.
// CHECK-LABEL: func.func @integer_matmul(
// CHECK-NOT: cuts.matmul_add
// CHECK: %[[M:[a-z0-9_]+]] = cuts.matmul
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = cuts.add %[[M]],
// CHECK-NEXT: return %[[S]]
func.func @integer_matmul(%a: tensor<3x4xi32>, %b: tensor<4x5xi32>, %c: tensor<5xi32>) -> tensor<3x5xi32> {
  %0 = cuts.matmul %a, %b : (tensor<3x4xi32>, tensor<4x5xi32>) -> tensor<3x5xi32>
  %1 = cuts.add %0, %c : (tensor<3x5xi32>, tensor<5xi32>) -> tensor<3x5xi32>
  return %1 : tensor<3x5xi32>
}

// The sum of two products: one becomes the matmul_add, the other its C.
// CHECK-LABEL: func.func @sum_of_matmuls(
// (Which one is fused is not specified.)
// CHECK-NEXT: %[[M:[a-z0-9_]+]] = cuts.matmul %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} :
// CHECK-NEXT: %[[Y:[a-z0-9_]+]] = cuts.matmul_add %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[M]] : ({{.*}}) -> tensor<3x5xf32>
// CHECK-NEXT: return %[[Y]]
func.func @sum_of_matmuls(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %d: tensor<3x2xf32>, %e: tensor<2x5xf32>) -> tensor<3x5xf32> {
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = cuts.matmul %d, %e : (tensor<3x2xf32>, tensor<2x5xf32>) -> tensor<3x5xf32>
  %2 = cuts.add %0, %1 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %2 : tensor<3x5xf32>
}

// Only add is fused, not sub.
// CHECK-LABEL: func.func @sub_not_fused(
// CHECK-NOT: cuts.matmul_add
// CHECK: %[[M:[a-z0-9_]+]] = cuts.matmul
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = cuts.sub %[[M]],
// CHECK-NEXT: return %[[S]]
func.func @sub_not_fused(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = cuts.sub %0, %c : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %1 : tensor<3x5xf32>
}

// GPT-2's Conv1D: a 2-D Gemm between a flattening reshape and one back to
// the leading axes is the batched matmul_add of its input; an Add after it
// then fuses as a residual (matmul_add with the bias, then add: the
// product's Add stays, its bias taken).
// CHECK-LABEL: func.func @conv1d(
// CHECK: %[[X:.*]] = cuts.reshape %{{.*}} {shape = array<i64: 2, 3, 4>} : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[Y:.*]] = cuts.matmul_add %[[X]], %arg1, %arg2 : (tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
// CHECK-NOT: cuts.gemm
// CHECK: return %[[Y]]
func.func @conv1d(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>, %c: tensor<5xf32>) -> tensor<2x3x5xf32> {
  %0 = cuts.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = cuts.gemm %0, %w, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<6x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %2 = cuts.reshape %1 {shape = array<i64: 2, 3, 5>} : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
  return %2 : tensor<2x3x5xf32>
}

// Without a bias, a residual Add after it makes it the matmul_add.
// CHECK-LABEL: func.func @conv1d_residual(
// CHECK: cuts.matmul_add %{{.*}}, %arg1, %arg2 {transB} : (tensor<2x3x4xf32>, tensor<5x4xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
func.func @conv1d_residual(%x: tensor<6x4xf32>, %w: tensor<5x4xf32>, %r: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %1 = cuts.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
  %2 = cuts.reshape %1 {shape = array<i64: 2, 3, 5>} : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
  %3 = cuts.add %2, %r : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  return %3 : tensor<2x3x5xf32>
}

// A scaled product, or a full [M, N] addend, stays a Gemm.
// CHECK-LABEL: func.func @not_conv1d(
// CHECK: cuts.gemm
// CHECK: cuts.gemm
func.func @not_conv1d(%x: tensor<6x4xf32>, %w: tensor<4x5xf32>, %c: tensor<6x5xf32>) -> (tensor<2x3x5xf32>, tensor<2x3x5xf32>) {
  %0 = cuts.gemm %x, %w {alpha = 2.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %1 = cuts.reshape %0 {shape = array<i64: 2, 3, 5>} : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
  %2 = cuts.gemm %x, %w, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<6x4xf32>, tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
  %3 = cuts.reshape %2 {shape = array<i64: 2, 3, 5>} : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
  return %1, %3 : tensor<2x3x5xf32>, tensor<2x3x5xf32>
}

// RUN: %cuts-opt %s --cuts-dce | FileCheck %s

// A chain of unused ops goes entirely (users before their producers).
// CHECK-LABEL: func.func @dead_chain(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = cuts.sigmoid %[[X]]
// CHECK-NEXT: return %[[S]]
func.func @dead_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = cuts.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = cuts.neg %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = cuts.exp %1 : (tensor<4xf32>) -> tensor<4xf32>
  %3 = cuts.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// An unused constant goes, a used one stays.
// CHECK-LABEL: func.func @dead_constants(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2xf32>
// CHECK-NEXT: %[[D:[a-z0-9_]+]] = cuts.constant {value = dense<[3.000000e+00, 4.000000e+00]> : tensor<2xf32>}
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = cuts.add %[[X]], %[[D]]
// CHECK-NEXT: return %[[R]]
func.func @dead_constants(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %d = cuts.constant {value = dense<[3.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.add %x, %d : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// DCE neither folds nor removes identities: every used op stays.
// CHECK-LABEL: func.func @live_ops_kept(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2xf32>
// CHECK-NEXT: %[[C:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}
// CHECK-NEXT: %[[D:[a-z0-9_]+]] = cuts.constant {value = dense<[3.000000e+00, 4.000000e+00]> : tensor<2xf32>}
// CHECK-NEXT: %[[A:[a-z0-9_]+]] = cuts.add %[[C]], %[[D]]
// CHECK-NEXT: %[[I:[a-z0-9_]+]] = cuts.identity %[[A]]
// CHECK-NEXT: %[[M:[a-z0-9_]+]] = cuts.mul %[[X]], %[[I]]
// CHECK-NEXT: return %[[M]]
func.func @live_ops_kept(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %d = cuts.constant {value = dense<[3.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.add %c, %d : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = cuts.identity %0 : (tensor<2xf32>) -> tensor<2xf32>
  %2 = cuts.mul %x, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %2 : tensor<2xf32>
}

// An op with one used result stays.
// CHECK-LABEL: func.func @multi_result_partly_used(
// CHECK-NEXT: %[[S:[a-z0-9_]+]]:3 = cuts.split
// CHECK-NEXT: return %[[S]]#1
func.func @multi_result_partly_used(%x: tensor<2x6xf32>) -> tensor<2x2xf32> {
  %0:3 = cuts.split %x {axis = 1 : i64, split = array<i64: 1, 2, 3>} : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
  return %0#1 : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @layer_norm_mean_only(
// CHECK-NEXT: %{{[a-zA-Z0-9_]+}}, %[[MEAN:[a-zA-Z0-9_]+]], %{{[a-zA-Z0-9_]+}} = cuts.layer_normalization
// CHECK-NEXT: return %[[MEAN]]
func.func @layer_norm_mean_only(%x: tensor<2x4xf32>, %s: tensor<4xf32>) -> tensor<2x1xf32> {
  %0:3 = cuts.layer_normalization %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#1 : tensor<2x1xf32>
}

// Multi-result ops with no used result go.
// CHECK-LABEL: func.func @multi_result_unused(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x4xf32>
// CHECK-NEXT: return %[[X]]
func.func @multi_result_unused(%x: tensor<2x4xf32>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  %0:3 = cuts.layer_normalization %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %1:2 = cuts.split %x {axis = 1 : i64, split = array<i64: 2, 2>} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  return %x : tensor<2x4xf32>
}

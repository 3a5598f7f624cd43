// RUN: %cuts-opt %s --cuts-remove-identity | FileCheck %s

// CHECK-LABEL: func.func @identity_and_dropout
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: cuts.identity
// CHECK-NOT: cuts.dropout
// CHECK: %[[R:.*]] = cuts.relu %[[X]]
// CHECK: return %[[R]]
func.func @identity_and_dropout(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = cuts.identity %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = cuts.dropout %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = cuts.relu %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

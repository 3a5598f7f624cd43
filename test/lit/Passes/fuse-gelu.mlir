// RUN: %cuts-opt %s --cuts-fuse-gelu --cuts-dce | FileCheck %s

// GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
// CHECK-LABEL: func.func @gelu_new(
// CHECK-NEXT: %[[G:.*]] = cuts.gelu %arg0 {approximate = "tanh"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_new(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %half = cuts.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %three = cuts.constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
  %c = cuts.constant {value = dense<0.044715> : tensor<f32>} : tensor<f32>
  %s = cuts.constant {value = dense<0.797884583> : tensor<f32>} : tensor<f32>
  %one = cuts.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %0 = cuts.mul %x, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = cuts.pow %x, %three : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %2 = cuts.mul %c, %1 : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %3 = cuts.add %x, %2 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %4 = cuts.mul %s, %3 : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %5 = cuts.tanh %4 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %6 = cuts.add %5, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %7 = cuts.mul %0, %6 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %7 : tensor<2x8xf32>
}

// TorchScript's opset-17 erf GELU: x (1 + erf(x / sqrt 2)) 0.5, the half
// last.
// CHECK-LABEL: func.func @gelu_erf(
// CHECK-NEXT: %[[G:.*]] = cuts.gelu %arg0 {approximate = "none"}
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r2 = cuts.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %one = cuts.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = cuts.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %0 = cuts.div %x, %r2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = cuts.erf %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = cuts.add %one, %1 : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = cuts.mul %x, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = cuts.mul %3, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %4 : tensor<4xf32>
}

// Not a GELU: the inner constant is 0.05, not 0.044715; and an erf of
// another value than the one multiplied.
// CHECK-LABEL: func.func @not_gelu(
// CHECK-NOT: cuts.gelu
// CHECK: cuts.tanh
// CHECK: cuts.erf
// CHECK: return
func.func @not_gelu(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %half = cuts.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %three = cuts.constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
  %c = cuts.constant {value = dense<0.05> : tensor<f32>} : tensor<f32>
  %s = cuts.constant {value = dense<0.797884583> : tensor<f32>} : tensor<f32>
  %one = cuts.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %r2 = cuts.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %0 = cuts.mul %x, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = cuts.pow %x, %three : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = cuts.mul %c, %1 : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = cuts.add %x, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = cuts.mul %s, %3 : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = cuts.tanh %4 : (tensor<4xf32>) -> tensor<4xf32>
  %6 = cuts.add %5, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %7 = cuts.mul %0, %6 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %8 = cuts.div %y, %r2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %9 = cuts.erf %8 : (tensor<4xf32>) -> tensor<4xf32>
  %10 = cuts.add %one, %9 : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %11 = cuts.mul %x, %10 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %12 = cuts.mul %11, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %7, %12 : tensor<4xf32>, tensor<4xf32>
}

// RUN: %cuts-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(cuts-convert-precision{precision=fp16}))' | FileCheck %s
// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-convert-precision{precision=bf16 io-precision=bf16}))' | FileCheck %s --check-prefix=IO

// fp32 tensors become fp16; the model's inputs and outputs stay fp32 behind
// casts. Constants round to nearest even (0.1 -> 0.0999755859), a mask's
// -FLT_MAX becomes the format's largest negative value, integer tensors
// and int -> float casts keep their integers.
// CHECK-LABEL: func.func @linear(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3xf32>, %[[I:[a-z0-9_]+]]: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2xf32>)
// CHECK: %[[XH:[a-z0-9_]+]] = cuts.cast %[[X]] {to = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK-DAG: cuts.constant {value = dense<9.997550e-02> : tensor<3x4xf16>}
// CHECK-DAG: cuts.constant {value = dense<-6.550400e+04> : tensor<4xf16>}
// CHECK: cuts.matmul_add %[[XH]], {{.*}} -> tensor<2x4xf16>
// CHECK: %[[R:[a-z0-9_]+]] = cuts.relu {{.*}} -> tensor<2x4xf16>
// CHECK: %[[C:[a-z0-9_]+]] = cuts.cast %[[I]] {to = f16} : (tensor<2xi64>) -> tensor<2xf16>
// CHECK: %[[R32:[a-z0-9_]+]] = cuts.cast %[[R]] {to = f32} : (tensor<2x4xf16>) -> tensor<2x4xf32>
// CHECK: %[[C32:[a-z0-9_]+]] = cuts.cast %[[C]] {to = f32} : (tensor<2xf16>) -> tensor<2xf32>
// CHECK: return %[[R32]], %[[C32]] : tensor<2x4xf32>, tensor<2xf32>

// With io-precision the function itself takes and returns 16-bit tensors.
// IO-LABEL: func.func @linear(
// IO-SAME: %{{[a-z0-9_]+}}: tensor<2x3xbf16>, %{{[a-z0-9_]+}}: tensor<2xi64>) -> (tensor<2x4xbf16>, tensor<2xbf16>)
// IO-NOT: cuts.cast {{.*}} {to = f32}
// IO: return {{.*}} : tensor<2x4xbf16>, tensor<2xbf16>
func.func @linear(%x: tensor<2x3xf32>, %i: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2xf32>) {
  %w = cuts.constant {value = dense<0.1> : tensor<3x4xf32>} : tensor<3x4xf32>
  %b = cuts.constant {value = dense<-3.40282347e+38> : tensor<4xf32>} : tensor<4xf32>
  %0 = cuts.matmul_add %x, %w, %b : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = cuts.relu %0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = cuts.cast %i {to = f32} : (tensor<2xi64>) -> tensor<2xf32>
  return %1, %2 : tensor<2x4xf32>, tensor<2xf32>
}

// -----

// A constant fp16 cannot hold is an error naming the op that reads it
// (bf16 has fp32's range).
// IO-LABEL: func.func @big(
func.func @big(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{--precision fp16 cannot hold a constant 100000 (largest 65504), read by cuts.mul}}
  %c = cuts.constant {value = dense<1.0e5> : tensor<4xf32>} : tensor<4xf32>
  %0 = cuts.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

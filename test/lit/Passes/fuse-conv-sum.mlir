// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-fuse-conv-sum,cuts-fold-constants,cuts-dce))' | FileCheck %s
// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-fuse-conv-sum{balance=20}))' | FileCheck %s --check-prefix=BOUND
// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-fuse-conv-sum{balance=30}))' | FileCheck %s --check-prefix=SAVES

// A bottleneck block's last conv (stride 1) and its projection shortcut
// (stride 2): one conv_sum over both inputs, the weights concatenated along
// the input channels and the biases summed (folded); the relu stays.
// The pair does 24 operations per byte it would save: fused under a
// balance of 30, not under 20 (compute-bound either way).
// BOUND-LABEL: func.func @projection(
// BOUND-NOT: cuts.conv_sum
// BOUND: return
// SAVES-LABEL: func.func @projection(
// SAVES: cuts.conv_sum
// CHECK-LABEL: func.func @projection(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x4x4x16xf16>, %[[X2:[a-z0-9_]+]]: tensor<1x8x8x32xf16>
// CHECK-DAG: %[[W:[a-z0-9_]+]] = cuts.constant {value = {{.*}} : tensor<64x1x1x48xf16>}
// CHECK-DAG: %[[B:[a-z0-9_]+]] = cuts.constant {value = dense<3.000000e+00> : tensor<64xf16>}
// CHECK: %[[S:[a-z0-9_]+]] = cuts.conv_sum %[[X]], %[[X2]], %[[W]], %[[B]] {strides = array<i64: 1, 1>, strides2 = array<i64: 2, 2>} : (tensor<1x4x4x16xf16>, tensor<1x8x8x32xf16>, tensor<64x1x1x48xf16>, tensor<64xf16>) -> tensor<1x4x4x64xf16>
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = cuts.relu %[[S]]
// CHECK-NEXT: return %[[R]]
func.func @projection(%x: tensor<1x4x4x16xf16>, %x2: tensor<1x8x8x32xf16>) -> tensor<1x4x4x64xf16> {
  %w1 = cuts.constant {value = dense<1.0> : tensor<64x1x1x16xf16>} : tensor<64x1x1x16xf16>
  %b1 = cuts.constant {value = dense<1.0> : tensor<64xf16>} : tensor<64xf16>
  %w2 = cuts.constant {value = dense<2.0> : tensor<64x1x1x32xf16>} : tensor<64x1x1x32xf16>
  %b2 = cuts.constant {value = dense<2.0> : tensor<64xf16>} : tensor<64xf16>
  %0 = cuts.conv %x, %w1, %b1 {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x4x16xf16>, tensor<64x1x1x16xf16>, tensor<64xf16>) -> tensor<1x4x4x64xf16>
  %1 = cuts.conv %x2, %w2, %b2 {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x8x8x32xf16>, tensor<64x1x1x32xf16>, tensor<64xf16>) -> tensor<1x4x4x64xf16>
  %2 = cuts.add %0, %1 : (tensor<1x4x4x64xf16>, tensor<1x4x4x64xf16>) -> tensor<1x4x4x64xf16>
  %3 = cuts.relu %2 : (tensor<1x4x4x64xf16>) -> tensor<1x4x4x64xf16>
  return %3 : tensor<1x4x4x64xf16>
}

// -----

// Left alone: a 3x3 conv, an NCHW conv, a conv with a second user, and
// channels not in whole slices of 16.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT: cuts.conv_sum
// CHECK: return
func.func @kept(%x: tensor<1x4x4x16xf16>, %n: tensor<1x16x4x4xf16>, %y: tensor<1x4x4x8xf16>) -> (tensor<1x4x4x16xf16>, tensor<1x16x4x4xf16>, tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) {
  %w3 = cuts.constant {value = dense<1.0> : tensor<16x3x3x16xf16>} : tensor<16x3x3x16xf16>
  %w1 = cuts.constant {value = dense<1.0> : tensor<16x1x1x16xf16>} : tensor<16x1x1x16xf16>
  %wn = cuts.constant {value = dense<1.0> : tensor<16x16x1x1xf16>} : tensor<16x16x1x1xf16>
  %w8 = cuts.constant {value = dense<1.0> : tensor<16x1x1x8xf16>} : tensor<16x1x1x8xf16>
  %0 = cuts.conv %x, %w3 {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x4x16xf16>, tensor<16x3x3x16xf16>) -> tensor<1x4x4x16xf16>
  %1 = cuts.conv %x, %w1 {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %2 = cuts.add %0, %1 : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
  %3 = cuts.conv %n, %wn {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf16>, tensor<16x16x1x1xf16>) -> tensor<1x16x4x4xf16>
  %4 = cuts.add %3, %3 : (tensor<1x16x4x4xf16>, tensor<1x16x4x4xf16>) -> tensor<1x16x4x4xf16>
  %5 = cuts.conv %x, %w1 {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %6 = cuts.conv %x, %w1 {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %7 = cuts.add %5, %6 : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
  %8 = cuts.conv %y, %w8 {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x4x8xf16>, tensor<16x1x1x8xf16>) -> tensor<1x4x4x16xf16>
  %9 = cuts.add %8, %1 : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
  return %2, %4, %7, %9, %5 : tensor<1x4x4x16xf16>, tensor<1x16x4x4xf16>, tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>
}

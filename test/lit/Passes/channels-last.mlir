// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-channels-last))' | FileCheck %s

// Two fp16 convs, a relu, a per-channel scale and a residual add: the
// convs run channels-last with their weights stored M x kH x kW x C, and
// the only transposes left are the input's and the result's.
// CHECK-LABEL: func.func @block(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x16x6x6xf16>
// CHECK-DAG: %[[W1:[a-z0-9_]+]] = cuts.constant {value = dense<1.000000e+00> : tensor<16x3x3x16xf16>}
// CHECK-DAG: %[[W2:[a-z0-9_]+]] = cuts.constant {value = dense<2.000000e+00> : tensor<16x1x1x16xf16>}
// CHECK-DAG: %[[S:[a-z0-9_]+]] = cuts.constant {value = dense<5.000000e-01> : tensor<1x1x1x16xf16>}
// CHECK: %[[XT:[a-z0-9_]+]] = cuts.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x6x6xf16>) -> tensor<1x6x6x16xf16>
// CHECK: %[[C1:[a-z0-9_]+]] = cuts.conv %[[XT]], %[[W1]] {channels_last, {{.*}}} : (tensor<1x6x6x16xf16>, tensor<16x3x3x16xf16>) -> tensor<1x6x6x16xf16>
// CHECK: %[[R:[a-z0-9_]+]] = cuts.relu %[[C1]] : (tensor<1x6x6x16xf16>) -> tensor<1x6x6x16xf16>
// CHECK: %[[M:[a-z0-9_]+]] = cuts.mul %[[R]], %[[S]]
// CHECK: %[[C2:[a-z0-9_]+]] = cuts.conv %[[M]], %[[W2]] {channels_last, {{.*}}} : (tensor<1x6x6x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x6x6x16xf16>
// CHECK: %[[A:[a-z0-9_]+]] = cuts.add %[[C2]], %[[XT]] : (tensor<1x6x6x16xf16>, tensor<1x6x6x16xf16>) -> tensor<1x6x6x16xf16>
// CHECK: %[[Y:[a-z0-9_]+]] = cuts.transpose %[[A]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x6x6x16xf16>) -> tensor<1x16x6x6xf16>
// CHECK-NEXT: return %[[Y]]
func.func @block(%x: tensor<1x16x6x6xf16>) -> tensor<1x16x6x6xf16> {
  %w1 = cuts.constant {value = dense<1.0> : tensor<16x16x3x3xf16>} : tensor<16x16x3x3xf16>
  %w2 = cuts.constant {value = dense<2.0> : tensor<16x16x1x1xf16>} : tensor<16x16x1x1xf16>
  %s = cuts.constant {value = dense<0.5> : tensor<16x1x1xf16>} : tensor<16x1x1xf16>
  %0 = cuts.conv %x, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x6x6xf16>, tensor<16x16x3x3xf16>) -> tensor<1x16x6x6xf16>
  %1 = cuts.relu %0 : (tensor<1x16x6x6xf16>) -> tensor<1x16x6x6xf16>
  %2 = cuts.mul %1, %s : (tensor<1x16x6x6xf16>, tensor<16x1x1xf16>) -> tensor<1x16x6x6xf16>
  %3 = cuts.conv %2, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x6x6xf16>, tensor<16x16x1x1xf16>) -> tensor<1x16x6x6xf16>
  %4 = cuts.add %3, %x : (tensor<1x16x6x6xf16>, tensor<1x16x6x6xf16>) -> tensor<1x16x6x6xf16>
  return %4 : tensor<1x16x6x6xf16>
}

// -----

// A 3-channel stem runs channels-last with its channels and its weight's
// padded with zeros to 4 (one 8-byte copy); an fp32 conv stays NCHW; a
// max pooling after a channels-last conv runs channels-last too.
// CHECK-LABEL: func.func @kept(
// CHECK: %[[T:.*]] = cuts.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[P:.*]] = cuts.pad %[[T]] {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 1>{{.*}}} : (tensor<1x8x8x3xf16>) -> tensor<1x8x8x4xf16>
// CHECK: cuts.conv %[[P]], {{.*}}channels_last{{.*}} : (tensor<1x8x8x4xf16>, tensor<16x3x3x4xf16>) -> tensor<1x6x6x16xf16>
// CHECK: cuts.conv {{.*}}channels_last{{.*}} -> tensor<1x6x6x16xf16>
// CHECK-NEXT: cuts.max_pool {{.*}}channels_last{{.*}} : (tensor<1x6x6x16xf16>) -> tensor<1x3x3x16xf16>
// CHECK-NEXT: cuts.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>}
// CHECK: cuts.conv %arg1, {{.*}} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
func.func @kept(%x: tensor<1x3x8x8xf16>, %f: tensor<1x16x4x4xf32>) -> (tensor<1x16x3x3xf16>, tensor<1x16x4x4xf32>) {
  %w0 = cuts.constant {value = dense<1.0> : tensor<16x3x3x3xf16>} : tensor<16x3x3x3xf16>
  %w1 = cuts.constant {value = dense<1.0> : tensor<16x16x1x1xf16>} : tensor<16x16x1x1xf16>
  %w2 = cuts.constant {value = dense<1.0> : tensor<16x16x1x1xf32>} : tensor<16x16x1x1xf32>
  %0 = cuts.conv %x, %w0 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf16>, tensor<16x3x3x3xf16>) -> tensor<1x16x6x6xf16>
  %1 = cuts.conv %0, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x6x6xf16>, tensor<16x16x1x1xf16>) -> tensor<1x16x6x6xf16>
  %2 = cuts.max_pool %1 {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x16x6x6xf16>) -> tensor<1x16x3x3xf16>
  %3 = cuts.conv %f, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  return %2, %3 : tensor<1x16x3x3xf16>, tensor<1x16x4x4xf32>
}

// -----

// A model input's conversion to fp16 moves after the layout change and the
// padding, so one kernel reads the input, reorders, pads and converts it.
// CHECK-LABEL: func.func @stem(
// CHECK: %[[T:.*]] = cuts.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
// CHECK: %[[P:.*]] = cuts.pad %[[T]] {{.*}} : (tensor<1x8x8x3xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[C:.*]] = cuts.cast %[[P]] {to = f16} : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf16>
// CHECK: cuts.conv %[[C]], {{.*}}channels_last
func.func @stem(%x: tensor<1x3x8x8xf32>) -> tensor<1x16x6x6xf16> {
  %w = cuts.constant {value = dense<1.0> : tensor<16x3x3x3xf16>} : tensor<16x3x3x3xf16>
  %0 = cuts.cast %x {to = f16} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf16>
  %1 = cuts.conv %0, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf16>, tensor<16x3x3x3xf16>) -> tensor<1x16x6x6xf16>
  return %1 : tensor<1x16x6x6xf16>
}

// -----

// A depthwise conv runs channels-last too (MobileNet's block stays NHWC,
// its weight K x 3 x 3 x 1); a 2-group conv has no channels-last kernel, so
// nothing in its function is converted.
// CHECK-LABEL: func.func @depthwise(
// CHECK: cuts.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: cuts.conv {{.*}}channels_last{{.*}} : (tensor<1x6x6x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x6x6x16xf16>
// CHECK: cuts.conv {{.*}}channels_last{{.*}}group = 16{{.*}} : (tensor<1x6x6x16xf16>, tensor<16x3x3x1xf16>) -> tensor<1x6x6x16xf16>
// CHECK: cuts.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: return
// CHECK-LABEL: func.func @grouped(
// CHECK-NOT: channels_last
// CHECK-NOT: cuts.transpose
func.func @depthwise(%x: tensor<1x16x6x6xf16>) -> tensor<1x16x6x6xf16> {
  %w1 = cuts.constant {value = dense<1.0> : tensor<16x16x1x1xf16>} : tensor<16x16x1x1xf16>
  %w2 = cuts.constant {value = dense<1.0> : tensor<16x1x3x3xf16>} : tensor<16x1x3x3xf16>
  %0 = cuts.conv %x, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x6x6xf16>, tensor<16x16x1x1xf16>) -> tensor<1x16x6x6xf16>
  %1 = cuts.conv %0, %w2 {dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x6x6xf16>, tensor<16x1x3x3xf16>) -> tensor<1x16x6x6xf16>
  return %1 : tensor<1x16x6x6xf16>
}
func.func @grouped(%x: tensor<1x16x6x6xf16>) -> tensor<1x16x6x6xf16> {
  %w1 = cuts.constant {value = dense<1.0> : tensor<16x16x1x1xf16>} : tensor<16x16x1x1xf16>
  %w2 = cuts.constant {value = dense<1.0> : tensor<16x8x3x3xf16>} : tensor<16x8x3x3xf16>
  %0 = cuts.conv %x, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x6x6xf16>, tensor<16x16x1x1xf16>) -> tensor<1x16x6x6xf16>
  %1 = cuts.conv %0, %w2 {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x6x6xf16>, tensor<16x8x3x3xf16>) -> tensor<1x16x6x6xf16>
  return %1 : tensor<1x16x6x6xf16>
}

// -----

// A channel concat of two channels-last convs (DenseNet's) concatenates
// along the innermost axis, with one transpose after it.
// CHECK-LABEL: func.func @concat(
// CHECK: %[[A:[a-z0-9_]+]] = cuts.conv {{.*}}channels_last{{.*}} -> tensor<1x4x4x16xf16>
// CHECK: %[[B:[a-z0-9_]+]] = cuts.conv {{.*}}channels_last{{.*}} -> tensor<1x4x4x16xf16>
// CHECK: %[[C:[a-z0-9_]+]] = cuts.concat %[[A]], %[[B]] {axis = 3 : i64} : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16>
// CHECK-NEXT: cuts.transpose %[[C]] {perm = array<i64: 0, 3, 1, 2>}
func.func @concat(%x: tensor<1x16x4x4xf16>) -> tensor<1x32x4x4xf16> {
  %w = cuts.constant {value = dense<1.0> : tensor<16x16x1x1xf16>} : tensor<16x16x1x1xf16>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf16>, tensor<16x16x1x1xf16>) -> tensor<1x16x4x4xf16>
  %1 = cuts.conv %0, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf16>, tensor<16x16x1x1xf16>) -> tensor<1x16x4x4xf16>
  %2 = cuts.concat %0, %1 {axis = 1 : i64} : (tensor<1x16x4x4xf16>, tensor<1x16x4x4xf16>) -> tensor<1x32x4x4xf16>
  return %2 : tensor<1x32x4x4xf16>
}

// -----

// A global average pooling of a channels-last conv (ResNet's last) runs
// channels-last as an average pooling over the whole image, and its
// N x 1 x 1 x C result is reshaped, not transposed.
// CHECK-LABEL: func.func @global_pool(
// CHECK: %[[C:[a-z0-9_]+]] = cuts.conv {{.*}}channels_last{{.*}} -> tensor<2x4x4x16xf16>
// CHECK-NEXT: %[[M:[a-z0-9_]+]] = cuts.average_pool %[[C]] {{{.*}}channels_last{{.*}}kernel_shape = array<i64: 4, 4>{{.*}}} : (tensor<2x4x4x16xf16>) -> tensor<2x1x1x16xf16>
// CHECK-NEXT: cuts.reshape %[[M]] {{.*}} -> tensor<2x16x1x1xf16>
// CHECK-NOT: cuts.transpose
func.func @global_pool(%x: tensor<2x16x4x4xf16>) -> tensor<2x16x1x1xf16> {
  %w = cuts.constant {value = dense<1.0> : tensor<16x16x1x1xf16>} : tensor<16x16x1x1xf16>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x16x4x4xf16>, tensor<16x16x1x1xf16>) -> tensor<2x16x4x4xf16>
  %1 = cuts.global_average_pool %0 : (tensor<2x16x4x4xf16>) -> tensor<2x16x1x1xf16>
  return %1 : tensor<2x16x1x1xf16>
}

// -----

// In a function that allows tf32, fp32 convs run channels-last too: a
// 3-channel stem is padded to 4 channels (16 bytes of fp32).
// CHECK-LABEL: func.func @tf32(
// CHECK: %[[T:.*]] = cuts.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[P:.*]] = cuts.pad %[[T]] {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 1>{{.*}}} : (tensor<1x8x8x3xf32>) -> tensor<1x8x8x4xf32>
// CHECK: cuts.conv %[[P]], {{.*}}channels_last{{.*}} : (tensor<1x8x8x4xf32>, tensor<16x3x3x4xf32>) -> tensor<1x6x6x16xf32>
// CHECK-NEXT: cuts.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>}
func.func @tf32(%x: tensor<1x3x8x8xf32>) -> tensor<1x16x6x6xf32> attributes {cuts.tf32} {
  %w = cuts.constant {value = dense<1.0> : tensor<16x3x3x3xf32>} : tensor<16x3x3x3xf32>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  return %0 : tensor<1x16x6x6xf32>
}

// -----

// A 16-bit stem read at stride 2 gets an even window width: a zero column
// before its window (its begin padding 3 is odd, now 4), so each 16-byte
// copy is two window positions of one row; the output is the same.
// CHECK-LABEL: func.func @stem_stride2(
// CHECK: cuts.conv {{.*}}channels_last{{.*}}pads = array<i64: 3, 4, 3, 3>{{.*}} : (tensor<1x16x16x4xf16>, tensor<8x7x8x4xf16>) -> tensor<1x8x8x8xf16>
func.func @stem_stride2(%x: tensor<1x3x16x16xf16>) -> tensor<1x8x8x8xf16> {
  %w = cuts.constant {value = dense<1.0> : tensor<8x3x7x7xf16>} : tensor<8x3x7x7xf16>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x16x16xf16>, tensor<8x3x7x7xf16>) -> tensor<1x8x8x8xf16>
  return %0 : tensor<1x8x8x8xf16>
}

// RUN: %cuts-opt %s --cuts-fold-batchnorm | FileCheck %s

// W' = W * s, B' = (B - mean) * s + beta with s = scale / sqrt(var + eps),
// per output channel. With eps = 1: s = [4 / sqrt(3 + 1), 1 / sqrt(15 + 1)]
// = [2, 0.25], so W' = [[2, 4], [0.75, -1]] and
// B' = [(1 - 1) * 2 + 0.5, (-1 - 2) * 0.25 + 1] = [0.5, 0.25].
// CHECK-LABEL: func.func @conv_bn(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x2x3x3xf32>
// CHECK-NOT: cuts.conv
// CHECK-DAG: %[[W:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}4.000000e+00]]], {{\[\[\[}}7.500000e-01]], {{\[\[}}-1.000000e+00]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
// CHECK-DAG: %[[B:[a-z0-9_]+]] = cuts.constant {value = dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>} : tensor<2xf32>
// CHECK: %[[Y:[a-z0-9_]+]] = cuts.conv %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NOT: cuts.batch_normalization
// CHECK-NOT: cuts.conv
// CHECK: return %[[Y]] : tensor<1x2x3x3xf32>
func.func @conv_bn(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = cuts.constant {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[-4.0]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %b = cuts.constant {value = dense<[1.0, -1.0]> : tensor<2xf32>} : tensor<2xf32>
  %scale = cuts.constant {value = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = cuts.constant {value = dense<[0.5, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = cuts.constant {value = dense<[3.0, 15.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %1 = cuts.batch_normalization %0, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %1 : tensor<1x2x3x3xf32>
}

// A conv without bias gets one: B' = -mean * s + beta = [-1.5, 0.5].
// CHECK-LABEL: func.func @conv_no_bias_bn(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x2x3x3xf32>
// CHECK-NOT: cuts.conv
// CHECK-DAG: %[[W:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}4.000000e+00]]], {{\[\[\[}}7.500000e-01]], {{\[\[}}-1.000000e+00]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
// CHECK-DAG: %[[B:[a-z0-9_]+]] = cuts.constant {value = dense<[-1.500000e+00, 5.000000e-01]> : tensor<2xf32>} : tensor<2xf32>
// CHECK: %[[Y:[a-z0-9_]+]] = cuts.conv %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NOT: cuts.batch_normalization
// CHECK: return %[[Y]] : tensor<1x2x3x3xf32>
func.func @conv_no_bias_bn(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = cuts.constant {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[-4.0]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %scale = cuts.constant {value = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = cuts.constant {value = dense<[0.5, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = cuts.constant {value = dense<[3.0, 15.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = cuts.batch_normalization %0, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %1 : tensor<1x2x3x3xf32>
}

// Depthwise conv (group 2, strides, asymmetric pads) with eps = 1e-5 and
// inexact values: the expected numbers are f32(x * s) computed in double;
// the conv's attributes are kept.
// CHECK-LABEL: func.func @depthwise_eps(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x2x4x4xf32>
// CHECK-NOT: cuts.conv
// CHECK-DAG: %[[W:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[\[}}0.530328751, -1.0606575], [2.121315, 0.265164375]]], {{\[\[\[}}1.13135958, 3.39407873], [-2.26271915, 0.113135956]]]]> : tensor<2x1x2x2xf32>} : tensor<2x1x2x2xf32>
// CHECK-DAG: %[[B:[a-z0-9_]+]] = cuts.constant {value = dense<[-6.065760e-03, 0.252543777]> : tensor<2xf32>} : tensor<2xf32>
// CHECK: %[[Y:[a-z0-9_]+]] = cuts.conv %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NOT: cuts.batch_normalization
// CHECK: return %[[Y]] : tensor<1x2x2x2xf32>
func.func @depthwise_eps(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = cuts.constant {value = dense<[[[[0.5, -1.0], [2.0, 0.25]]], [[[1.0, 3.0], [-2.0, 0.1]]]]> : tensor<2x1x2x2xf32>} : tensor<2x1x2x2xf32>
  %b = cuts.constant {value = dense<[0.2, -0.3]> : tensor<2xf32>} : tensor<2xf32>
  %scale = cuts.constant {value = dense<[1.5, 0.8]> : tensor<2xf32>} : tensor<2xf32>
  %beta = cuts.constant {value = dense<[0.1, -0.2]> : tensor<2xf32>} : tensor<2xf32>
  %mean = cuts.constant {value = dense<[0.3, -0.7]> : tensor<2xf32>} : tensor<2xf32>
  %var = cuts.constant {value = dense<[2.0, 0.5]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %1 = cuts.batch_normalization %0, %scale, %beta, %mean, %var {epsilon = 1.0e-5 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %1 : tensor<1x2x2x2xf32>
}

// A folded weight of more than 16 elements becomes the blob
// bn_folded_weight: s = [1, 2], so W' = [0..8, 2 * (9..17)] and
// B' = [0, (0 - 1) * 2] (blob checked at the end of the file).
// CHECK-LABEL: func.func @large_weight(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x1x5x5xf32>
// CHECK-DAG: %[[W:[a-z0-9_]+]] = cuts.constant {value = dense_resource<bn_folded_weight> : tensor<2x1x3x3xf32>} : tensor<2x1x3x3xf32>
// CHECK-DAG: %[[B:[a-z0-9_]+]] = cuts.constant {value = dense<[0.000000e+00, -2.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK: %[[Y:[a-z0-9_]+]] = cuts.conv %[[X]], %[[W]], %[[B]]
// CHECK-NOT: cuts.batch_normalization
// CHECK: return %[[Y]] : tensor<1x2x3x3xf32>
func.func @large_weight(%x: tensor<1x1x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %w = cuts.constant {value = dense<[[[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]], [[[9.0, 10.0, 11.0], [12.0, 13.0, 14.0], [15.0, 16.0, 17.0]]]]> : tensor<2x1x3x3xf32>} : tensor<2x1x3x3xf32>
  %scale = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = cuts.constant {value = dense<[0.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = cuts.constant {value = dense<[0.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = cuts.constant {value = dense<[0.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %1 = cuts.batch_normalization %0, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %1 : tensor<1x2x3x3xf32>
}

// A conv with another user is not folded (the fold would change it): the
// normalization becomes a per-channel scale and shift (s = 4/2, 1/4;
// t = 0.5 - 1 * s, 1 - 2 * s).
// CHECK-LABEL: func.func @conv_two_users(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x2x3x3xf32>
// CHECK: %[[W:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]], {{\[\[}}-4.000000e+00]]]]> : tensor<2x2x1x1xf32>}
// CHECK: %[[C:[a-z0-9_]+]] = cuts.conv %[[X]], %[[W]] {
// CHECK: %[[S:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}2.500000e-01]]]> : tensor<2x1x1xf32>}
// CHECK: %[[T:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}-1.500000e+00]], {{\[\[}}5.000000e-01]]]> : tensor<2x1x1xf32>}
// CHECK: %[[M:[a-z0-9_]+]] = cuts.mul %[[C]], %[[S]]
// CHECK: %[[N:[a-z0-9_]+]] = cuts.add %[[M]], %[[T]]
// CHECK: %[[R:[a-z0-9_]+]] = cuts.relu %[[C]]
// CHECK: return %[[N]], %[[R]]
func.func @conv_two_users(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = cuts.constant {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[-4.0]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %scale = cuts.constant {value = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = cuts.constant {value = dense<[0.5, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = cuts.constant {value = dense<[3.0, 15.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = cuts.batch_normalization %0, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %2 = cuts.relu %0 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %1, %2 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// A batch_normalization not fed by a conv becomes a per-channel scale and
// shift.
// CHECK-LABEL: func.func @bn_without_conv(
// CHECK: %[[R:[a-z0-9_]+]] = cuts.relu
// CHECK: %[[S:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}2.500000e-01]]]> : tensor<2x1x1xf32>}
// CHECK: %[[T:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}-1.500000e+00]], {{\[\[}}5.000000e-01]]]> : tensor<2x1x1xf32>}
// CHECK: %[[M:[a-z0-9_]+]] = cuts.mul %[[R]], %[[S]]
// CHECK: %[[N:[a-z0-9_]+]] = cuts.add %[[M]], %[[T]]
// CHECK: return %[[N]]
func.func @bn_without_conv(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %scale = cuts.constant {value = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = cuts.constant {value = dense<[0.5, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = cuts.constant {value = dense<[3.0, 15.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.relu %x : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %1 = cuts.batch_normalization %0, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %1 : tensor<1x2x3x3xf32>
}

// A conv whose weight is not a constant is not folded.
// CHECK-LABEL: func.func @weight_not_constant(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x2x3x3xf32>, %[[W:[a-z0-9_]+]]: tensor<2x2x1x1xf32>
// CHECK: %[[C:[a-z0-9_]+]] = cuts.conv %[[X]], %[[W]] {
// CHECK: %[[S:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}2.500000e-01]]]> : tensor<2x1x1xf32>}
// CHECK: %[[T:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}-1.500000e+00]], {{\[\[}}5.000000e-01]]]> : tensor<2x1x1xf32>}
// CHECK: %[[M:[a-z0-9_]+]] = cuts.mul %[[C]], %[[S]]
// CHECK: %[[N:[a-z0-9_]+]] = cuts.add %[[M]], %[[T]]
// CHECK: return %[[N]]
func.func @weight_not_constant(%x: tensor<1x2x3x3xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> {
  %scale = cuts.constant {value = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = cuts.constant {value = dense<[0.5, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = cuts.constant {value = dense<[3.0, 15.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = cuts.batch_normalization %0, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %1 : tensor<1x2x3x3xf32>
}

// Statistics that are not constants: not folded.
// CHECK-LABEL: func.func @stats_not_constant(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x2x3x3xf32>, %[[V:[a-z0-9_]+]]: tensor<2xf32>
// CHECK: %[[C:[a-z0-9_]+]] = cuts.conv %[[X]], %{{[a-z0-9_]+}} {
// CHECK: %[[N:[a-z0-9_]+]] = cuts.batch_normalization %[[C]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[V]]
// CHECK: return %[[N]]
func.func @stats_not_constant(%x: tensor<1x2x3x3xf32>, %var: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %w = cuts.constant {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[-4.0]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %scale = cuts.constant {value = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = cuts.constant {value = dense<[0.5, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = cuts.batch_normalization %0, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %1 : tensor<1x2x3x3xf32>
}

// The blob of @large_weight: the 32-bit alignment (8), then f32 0, 1, ..., 8,
// 18, 20, ..., 34, little endian.
// CHECK: bn_folded_weight: "0x08000000000000000000803F0000004000004040000080400000A0400000C0400000E04000000041000090410000A0410000B0410000C0410000D0410000E0410000F0410000004200000842"

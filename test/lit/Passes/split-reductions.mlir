// RUN: %cuts-opt %s --split-input-file --cuts-split-reductions | FileCheck %s
// RUN: %cuts-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cuts-split-reductions{max-row=8}))' | FileCheck %s --check-prefix=SMALL

// EfficientNet's squeeze: 112 x 112 = 12544 = 14 x 896, rows of 896 (28
// warps' lanes) first.
// CHECK-LABEL: func.func @squeeze(
// CHECK: %[[R:.+]] = cuts.reshape %arg0 {shape = array<i64: 1, 32, 14, 896>}
// CHECK: %[[M:.+]] = cuts.reduce_mean %[[R]] {axes = array<i64: 3>, keepdims = false} : (tensor<1x32x14x896xf32>) -> tensor<1x32x14xf32>
// CHECK: %[[N:.+]] = cuts.reduce_mean %[[M]] {axes = array<i64: 2>, keepdims = false} : (tensor<1x32x14xf32>) -> tensor<1x32xf32>
// CHECK: %[[Y:.+]] = cuts.reshape %[[N]] {shape = array<i64: 1, 32, 1, 1>}
// CHECK: return %[[Y]]
// SMALL-LABEL: func.func @squeeze(
// SMALL-COUNT-5: cuts.reduce_mean
func.func @squeeze(%x: tensor<1x32x112x112xf32>) -> tensor<1x32x1x1xf32> {
  %0 = cuts.global_average_pool %x : (tensor<1x32x112x112xf32>) -> tensor<1x32x1x1xf32>
  return %0 : tensor<1x32x1x1xf32>
}

// -----

// Sums and maxima over trailing axes, kept dimensions or not. A mean whose
// length (2053, prime) no divisor near max-row splits is padded with zeros
// to 3 rows of 704 and summed, then scaled by 1 / 2053; a max of such a
// row, an integer mean and rows that fit stay whole; a sum over the
// leading axis is transposed to trail, then split.
// CHECK-LABEL: func.func @reductions(
// CHECK: cuts.reshape %arg0 {shape = array<i64: 3, 4, 1024>}
// CHECK: cuts.reduce_sum {{.*}} -> tensor<3x4xf32>
// CHECK: cuts.reduce_sum {{.*}} -> tensor<3xf32>
// CHECK: cuts.reshape {{.*}} {shape = array<i64: 3, 1, 1>}
// CHECK: cuts.reshape %arg1 {shape = array<i64: 2, 5, 1000>}
// CHECK: cuts.reduce_max {{.*}} -> tensor<2x5xf16>
// CHECK: cuts.reduce_max {{.*}} -> tensor<2xf16>
// CHECK: %[[P:.+]] = cuts.pad %arg2 {mode = "constant", pads = array<i64: 0, 0, 0, 59>, value = 0.000000e+00 : f64}
// CHECK: %[[R:.+]] = cuts.reshape %[[P]] {shape = array<i64: 2, 3, 704>}
// CHECK: %[[S:.+]] = cuts.reduce_sum %[[R]] {axes = array<i64: 2>, keepdims = false}
// CHECK: %[[T:.+]] = cuts.reduce_sum %[[S]] {axes = array<i64: 1>, keepdims = false}
// CHECK: %[[C:.+]] = cuts.constant {value = dense<4.87092067E-4> : tensor<f32>}
// CHECK: cuts.mul %[[T]], %[[C]]
// CHECK: cuts.reduce_max %arg5 {axes = array<i64: 1>, keepdims = false} : (tensor<2x2053xf32>)
// CHECK: cuts.reduce_mean %arg3 {axes = array<i64: 1>, keepdims = false} : (tensor<2x4096xi64>)
// CHECK: %[[L:.+]] = cuts.transpose %arg4 {perm = array<i64: 1, 0>} : (tensor<4096x2xf32>) -> tensor<2x4096xf32>
// CHECK: cuts.reshape %[[L]] {shape = array<i64: 2, 4, 1024>}
func.func @reductions(%a: tensor<3x64x64xf32>, %b: tensor<2x5000xf16>, %c: tensor<2x2053xf32>, %d: tensor<2x4096xi64>, %e: tensor<4096x2xf32>, %f: tensor<2x2053xf32>) -> (tensor<3x1x1xf32>, tensor<2xf16>, tensor<2xf32>, tensor<2xi64>, tensor<2xf32>, tensor<2xf32>) {
  %0 = cuts.reduce_sum %a {axes = array<i64: 1, 2>, keepdims = true} : (tensor<3x64x64xf32>) -> tensor<3x1x1xf32>
  %1 = cuts.reduce_max %b {axes = array<i64: 1>, keepdims = false} : (tensor<2x5000xf16>) -> tensor<2xf16>
  %2 = cuts.reduce_mean %c {axes = array<i64: 1>, keepdims = false} : (tensor<2x2053xf32>) -> tensor<2xf32>
  %5 = cuts.reduce_max %f {axes = array<i64: 1>, keepdims = false} : (tensor<2x2053xf32>) -> tensor<2xf32>
  %3 = cuts.reduce_mean %d {axes = array<i64: 1>, keepdims = false} : (tensor<2x4096xi64>) -> tensor<2xi64>
  %4 = cuts.reduce_sum %e {axes = array<i64: 0>, keepdims = false} : (tensor<4096x2xf32>) -> tensor<2xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<3x1x1xf32>, tensor<2xf16>, tensor<2xf32>, tensor<2xi64>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Softmax over GPT-2's vocabulary (50257 = 29 x 1733: no divisor near
// max-row): its max is x0 + max(x - x0), padded with zeros; then exp, a
// padded sum and a division. One over 9000 (past 8192) takes 9 rows of
// 1000; one over 128 stays a row kernel's.
// CHECK-LABEL: func.func @softmax(
// CHECK: %[[X0:.+]] = cuts.slice %arg0 {ends = array<i64: 2, 1>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
// CHECK: %[[D:.+]] = cuts.sub %arg0, %[[X0]]
// CHECK: %[[P:.+]] = cuts.pad %[[D]] {mode = "constant", pads = array<i64: 0, 0, 0, 943>, value = 0.000000e+00 : f64} : (tensor<2x50257xf32>) -> tensor<2x51200xf32>
// CHECK: cuts.reduce_max {{.*}} -> tensor<2x50xf32>
// CHECK: %[[M:.+]] = cuts.reduce_max {{.*}} -> tensor<2xf32>
// CHECK: %[[MK:.+]] = cuts.reshape %[[M]] {shape = array<i64: 2, 1>}
// CHECK: %[[MX:.+]] = cuts.add %[[MK]], %[[X0]]
// CHECK: %[[E:.+]] = cuts.exp {{.*}}
// CHECK: cuts.pad %[[E]]
// CHECK: cuts.reduce_sum {{.*}} -> tensor<2x50xf32>
// CHECK: cuts.div %[[E]]
// CHECK: cuts.reshape %arg1 {shape = array<i64: 2, 9, 1000>}
// CHECK-NOT: cuts.slice
// CHECK: cuts.div
// CHECK: cuts.softmax %arg2
func.func @softmax(%x: tensor<2x50257xf32>, %y: tensor<2x9000xf32>, %z: tensor<2x128xf32>) -> (tensor<2x50257xf32>, tensor<2x9000xf32>, tensor<2x128xf32>) {
  %0 = cuts.softmax %x {axis = 1 : i64} : (tensor<2x50257xf32>) -> tensor<2x50257xf32>
  %1 = cuts.softmax %y {axis = 1 : i64} : (tensor<2x9000xf32>) -> tensor<2x9000xf32>
  %2 = cuts.softmax %z {axis = 1 : i64} : (tensor<2x128xf32>) -> tensor<2x128xf32>
  return %0, %1, %2 : tensor<2x50257xf32>, tensor<2x9000xf32>, tensor<2x128xf32>
}

// -----

// A layer norm over 8209 (prime, past 8192) as its formula, both means
// padded sums; one over 768, and one whose mean is read, stay whole.
// CHECK-LABEL: func.func @layer_norm(
// CHECK: %[[P:.+]] = cuts.pad %arg0 {{.*}} -> tensor<2x8352xf32>
// CHECK: cuts.reduce_sum {{.*}} -> tensor<2x9xf32>
// CHECK: %[[M:.+]] = cuts.reshape {{.*}} {shape = array<i64: 2, 1>}
// CHECK: %[[D:.+]] = cuts.sub %arg0, %[[M]]
// CHECK: %[[SQ:.+]] = cuts.mul %[[D]], %[[D]]
// CHECK: cuts.pad %[[SQ]]
// CHECK: %[[V:.+]] = cuts.reshape {{.*}} {shape = array<i64: 2, 1>}
// CHECK: %[[VE:.+]] = cuts.add %[[V]], %{{.+}} : (tensor<2x1xf32>, tensor<f32>)
// CHECK: %[[S:.+]] = cuts.sqrt %[[VE]]
// CHECK: %[[N:.+]] = cuts.div %[[D]], %[[S]]
// CHECK: %[[Y:.+]] = cuts.mul %[[N]], %arg1
// CHECK: cuts.add %[[Y]], %arg2
// CHECK: cuts.layer_normalization %arg3
// CHECK: cuts.layer_normalization %arg0
func.func @layer_norm(%x: tensor<2x8209xf32>, %s: tensor<8209xf32>, %b: tensor<8209xf32>, %z: tensor<2x768xf32>, %t: tensor<768xf32>) -> (tensor<2x8209xf32>, tensor<2x768xf32>, tensor<2x1xf32>) {
  %y, %m, %i = cuts.layer_normalization %x, %s, %b {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x8209xf32>, tensor<8209xf32>, tensor<8209xf32>) -> (tensor<2x8209xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %y2, %m2, %i2 = cuts.layer_normalization %z, %t {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x768xf32>, tensor<768xf32>) -> (tensor<2x768xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %y3, %m3, %i3 = cuts.layer_normalization %x, %s {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x8209xf32>, tensor<8209xf32>) -> (tensor<2x8209xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %y, %y2, %m3 : tensor<2x8209xf32>, tensor<2x768xf32>, tensor<2x1xf32>
}

// -----

// Reductions over leading or middle axes: the input transposed so that
// they trail, the reduction over those, and with keepdims a reshape back.
// CHECK-LABEL: func.func @leading(
// CHECK: %[[T:.+]] = cuts.transpose %arg0 {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
// CHECK: %[[S:.+]] = cuts.reduce_sum %[[T]] {axes = array<i64: 1, 2>, keepdims = false} : (tensor<3x2x4xf32>) -> tensor<3xf32>
// CHECK: %[[U:.+]] = cuts.transpose %arg0 {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
// CHECK: %[[M:.+]] = cuts.reduce_max %[[U]] {axes = array<i64: 2>, keepdims = false} : (tensor<2x4x3xf32>) -> tensor<2x4xf32>
// CHECK: %[[K:.+]] = cuts.reshape %[[M]] {shape = array<i64: 2, 1, 4>} : (tensor<2x4xf32>) -> tensor<2x1x4xf32>
// CHECK: return %[[S]], %[[K]]
func.func @leading(%x: tensor<2x3x4xf32>) -> (tensor<3xf32>, tensor<2x1x4xf32>) {
  %0 = cuts.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %1 = cuts.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %0, %1 : tensor<3xf32>, tensor<2x1x4xf32>
}

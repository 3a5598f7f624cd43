// RUN: %cuts-opt %s --cuts-cleanup | FileCheck %s

// The clean-up pipeline on a small graph: identity and dropout vanish, the
// batch normalisation folds into the conv (W' = [[2, 4], [0.75, -1]],
// B' = [0.5, 0.25], as in fold-batchnorm.mlir), matmul + add becomes
// matmul_add, the shape subgraph (channels * height of a 1x2x4x4 tensor, cast
// to f32) folds to the constant 8, and dead ops and the constants they used
// are erased.
// CHECK-LABEL: func.func @graph(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x2x4x4xf32>
// CHECK-DAG: %[[EIGHT:[a-z0-9_]+]] = cuts.constant {value = dense<8.000000e+00> : tensor<1xf32>} : tensor<1xf32>
// CHECK-DAG: %[[FC:[a-z0-9_]+]] = cuts.constant {value = dense<5.000000e-01> : tensor<32x3xf32>} : tensor<32x3xf32>
// CHECK-DAG: %[[BIAS:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e-01, 2.000000e-01, 3.000000e-01]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-DAG: %[[W:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}4.000000e+00]]], {{\[\[\[}}7.500000e-01]], {{\[\[}}-1.000000e+00]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
// CHECK-DAG: %[[B:[a-z0-9_]+]] = cuts.constant {value = dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NOT: cuts.constant
// CHECK: %[[C:[a-z0-9_]+]] = cuts.conv %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = cuts.relu %[[C]]
// CHECK-NEXT: %[[F:[a-z0-9_]+]] = cuts.flatten %[[R]] {axis = 1 : i64}
// CHECK-NEXT: %[[MA:[a-z0-9_]+]] = cuts.matmul_add %[[F]], %[[FC]], %[[BIAS]] : (tensor<1x32xf32>, tensor<32x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[D:[a-z0-9_]+]] = cuts.div %[[MA]], %[[EIGHT]]
// CHECK-NEXT: return %[[D]] : tensor<1x3xf32>
func.func @graph(%x: tensor<1x2x4x4xf32>) -> tensor<1x3xf32> {
  %w = cuts.constant {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[-4.0]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %b = cuts.constant {value = dense<[1.0, -1.0]> : tensor<2xf32>} : tensor<2xf32>
  %scale = cuts.constant {value = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = cuts.constant {value = dense<[0.5, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = cuts.constant {value = dense<[3.0, 15.0]> : tensor<2xf32>} : tensor<2xf32>
  %fc = cuts.constant {value = dense<0.5> : tensor<32x3xf32>} : tensor<32x3xf32>
  %bias = cuts.constant {value = dense<[0.1, 0.2, 0.3]> : tensor<3xf32>} : tensor<3xf32>
  %idx = cuts.constant {value = dense<[1]> : tensor<1xi64>} : tensor<1xi64>
  %two = cuts.constant {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
  %0 = cuts.identity %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = cuts.conv %0, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %2 = cuts.batch_normalization %1, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %3 = cuts.relu %2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %4 = cuts.dropout %3 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %5 = cuts.flatten %4 {axis = 1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
  %6 = cuts.matmul %5, %fc : (tensor<1x32xf32>, tensor<32x3xf32>) -> tensor<1x3xf32>
  %7 = cuts.add %6, %bias : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %s = cuts.shape %4 {end = 4 : i64, start = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<4xi64>
  %c = cuts.gather %s, %idx {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %h = cuts.gather %s, %two {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %ch = cuts.mul %c, %h : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %chf = cuts.cast %ch {to = f32} : (tensor<1xi64>) -> tensor<1xf32>
  %8 = cuts.div %7, %chf : (tensor<1x3xf32>, tensor<1xf32>) -> tensor<1x3xf32>
  %unused = cuts.sigmoid %8 : (tensor<1x3xf32>) -> tensor<1x3xf32>
  return %8 : tensor<1x3xf32>
}

// BERT's attention mask as the PyTorch dynamo exporter builds it becomes
// cast -> reshape -> expand -> where: the gather_nd whose indices take the
// mask in order is a reshape, the and with an all-true constant a broadcast,
// and the index and all-true constants are erased.
// CHECK-LABEL: func.func @attention_mask(
// CHECK-SAME: %[[M:[a-z0-9_]+]]: tensor<1x4xi64>
// CHECK-NOT: tensor<1x1x1x4x2xi64>
// CHECK-NOT: tensor<1x1x4x1xi1>
// CHECK: %[[C:[a-z0-9_]+]] = cuts.cast %[[M]] {to = i1} : (tensor<1x4xi64>) -> tensor<1x4xi1>
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = cuts.reshape %[[C]] {shape = array<i64: 1, 1, 1, 4>} : (tensor<1x4xi1>) -> tensor<1x1x1x4xi1>
// CHECK-NEXT: %[[E:[a-z0-9_]+]] = cuts.expand %[[R]] {shape = array<i64: 1, 1, 4, 4>} : (tensor<1x1x1x4xi1>) -> tensor<1x1x4x4xi1>
// CHECK-NEXT: %[[W:[a-z0-9_]+]] = cuts.where %[[E]],
// CHECK-NEXT: return %[[W]]
func.func @attention_mask(%mask: tensor<1x4xi64>) -> tensor<1x1x4x4xf32> {
  %idx = cuts.constant {value = dense<[[[[[0, 0], [0, 1], [0, 2], [0, 3]]]]]> : tensor<1x1x1x4x2xi64>} : tensor<1x1x1x4x2xi64>
  %t = cuts.constant {value = dense<true> : tensor<1x1x4x1xi1>} : tensor<1x1x4x1xi1>
  %zero = cuts.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %ninf = cuts.constant {value = dense<-1.0e9> : tensor<f32>} : tensor<f32>
  %0 = cuts.cast %mask {to = i1} : (tensor<1x4xi64>) -> tensor<1x4xi1>
  %1 = cuts.gather_nd %0, %idx {batch_dims = 0 : i64} : (tensor<1x4xi1>, tensor<1x1x1x4x2xi64>) -> tensor<1x1x1x4xi1>
  %2 = cuts.and %1, %t : (tensor<1x1x1x4xi1>, tensor<1x1x4x1xi1>) -> tensor<1x1x4x4xi1>
  %3 = cuts.where %2, %zero, %ninf : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  return %3 : tensor<1x1x4x4xf32>
}

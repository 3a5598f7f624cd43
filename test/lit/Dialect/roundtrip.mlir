// RUN: %cuts-opt %s | %cuts-opt | FileCheck %s
// Every op of the cuts dialect parses, verifies (type inference agrees
// with the declared result types) and prints back unchanged: optional
// operands (conv/conv_transpose without bias, gemm without C,
// layer_normalization without B), variadic operands and results (concat,
// split), layer_normalization's three results, clip with and without bounds.

// CHECK-LABEL: func.func @constant(
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.constant {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.constant {value = dense<[1, -2, 3]> : tensor<3xi64>} : tensor<3xi64>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.constant {value = dense<true> : tensor<2x2xi1>} : tensor<2x2xi1>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]] : tensor<2xf32>, tensor<3xi64>, tensor<2x2xi1>
func.func @constant() -> (tensor<2xf32>, tensor<3xi64>, tensor<2x2xi1>) {
  %0 = cuts.constant {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
  %1 = cuts.constant {value = dense<[1, -2, 3]> : tensor<3xi64>} : tensor<3xi64>
  %2 = cuts.constant {value = dense<true> : tensor<2x2xi1>} : tensor<2x2xi1>
  return %0, %1, %2 : tensor<2xf32>, tensor<3xi64>, tensor<2x2xi1>
}

// CHECK-LABEL: func.func @constant_of_shape(
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.constant_of_shape {shape = array<i64: 2, 3>, value = dense<1.500000e+00> : tensor<1xf32>} : () -> tensor<2x3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xf32>
func.func @constant_of_shape() -> tensor<2x3xf32> {
  %0 = cuts.constant_of_shape {shape = array<i64: 2, 3>, value = dense<1.500000e+00> : tensor<1xf32>} : () -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @shape(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3x4xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.shape %[[X]] {end = 3 : i64, start = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2xi64>
func.func @shape(%x: tensor<2x3x4xf32>) -> tensor<2xi64> {
  %0 = cuts.shape %x {end = 3 : i64, start = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// CHECK-LABEL: func.func @range(
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.range {delta = 2.000000e+00 : f64, element_type = i64, limit = 1.000000e+01 : f64, start = 0.000000e+00 : f64} : () -> tensor<5xi64>
// CHECK-NEXT: return %[[V0]] : tensor<5xi64>
func.func @range() -> tensor<5xi64> {
  %0 = cuts.range {delta = 2.000000e+00 : f64, element_type = i64, limit = 1.000000e+01 : f64, start = 0.000000e+00 : f64} : () -> tensor<5xi64>
  return %0 : tensor<5xi64>
}

// CHECK-LABEL: func.func @identity_dropout_cast(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.identity %[[X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.dropout %[[V0]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.cast %[[V1]] {to = i32} : (tensor<2x3xf32>) -> tensor<2x3xi32>
// CHECK-NEXT: return %[[V2]] : tensor<2x3xi32>
func.func @identity_dropout_cast(%x: tensor<2x3xf32>) -> tensor<2x3xi32> {
  %0 = cuts.identity %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = cuts.dropout %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = cuts.cast %1 {to = i32} : (tensor<2x3xf32>) -> tensor<2x3xi32>
  return %2 : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @arith(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<2x3xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<3xf32>
// CHECK-SAME: %[[I:[a-z0-9_]+]]: tensor<4x1xi64>
// CHECK-SAME: %[[J:[a-z0-9_]+]]: tensor<5xi64>
// CHECK-SAME: %[[E:[a-z0-9_]+]]: tensor<1xi64>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.add %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.sub %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.mul %[[B]], %[[A]] : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = cuts.div %[[I]], %[[J]] : (tensor<4x1xi64>, tensor<5xi64>) -> tensor<4x5xi64>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = cuts.pow %[[A]], %[[E]] : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]], %[[V4]] : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x5xi64>, tensor<2x3xf32>
func.func @arith(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4x1xi64>, %j: tensor<5xi64>, %e: tensor<1xi64>)
    -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x5xi64>, tensor<2x3xf32>) {
  %0 = cuts.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = cuts.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = cuts.mul %b, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = cuts.div %i, %j : (tensor<4x1xi64>, tensor<5xi64>) -> tensor<4x5xi64>
  %4 = cuts.pow %a, %e : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x5xi64>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @compare(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<2x3xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<3xf32>
// CHECK-SAME: %[[I:[a-z0-9_]+]]: tensor<4x1xi64>
// CHECK-SAME: %[[J:[a-z0-9_]+]]: tensor<5xi64>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.equal %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.less %[[I]], %[[J]] : (tensor<4x1xi64>, tensor<5xi64>) -> tensor<4x5xi1>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<2x3xi1>, tensor<4x5xi1>
func.func @compare(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4x1xi64>, %j: tensor<5xi64>) -> (tensor<2x3xi1>, tensor<4x5xi1>) {
  %0 = cuts.equal %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = cuts.less %i, %j : (tensor<4x1xi64>, tensor<5xi64>) -> tensor<4x5xi1>
  return %0, %1 : tensor<2x3xi1>, tensor<4x5xi1>
}

// CHECK-LABEL: func.func @logic(
// CHECK-SAME: %[[P:[a-z0-9_]+]]: tensor<2x3xi1>
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: tensor<3xi1>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.and %[[P]], %[[Q]] : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.or %[[P]], %[[Q]] : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.xor %[[Q]], %[[P]] : (tensor<3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = cuts.not %[[Q]] : (tensor<3xi1>) -> tensor<3xi1>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]] : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<3xi1>
func.func @logic(%p: tensor<2x3xi1>, %q: tensor<3xi1>) -> (tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<3xi1>) {
  %0 = cuts.and %p, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %1 = cuts.or %p, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %2 = cuts.xor %q, %p : (tensor<3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %3 = cuts.not %q : (tensor<3xi1>) -> tensor<3xi1>
  return %0, %1, %2, %3 : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<3xi1>
}

// CHECK-LABEL: func.func @where(
// CHECK-SAME: %[[C:[a-z0-9_]+]]: tensor<2x1xi1>
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<3xf32>
// CHECK-SAME: %[[Y:[a-z0-9_]+]]: tensor<2x3xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.where %[[C]], %[[X]], %[[Y]] : (tensor<2x1xi1>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xf32>
func.func @where(%c: tensor<2x1xi1>, %x: tensor<3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = cuts.where %c, %x, %y : (tensor<2x1xi1>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @unary(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.sqrt %[[X]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.exp %[[V0]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.log %[[V1]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = cuts.erf %[[V2]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = cuts.tanh %[[V3]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = cuts.sigmoid %[[V4]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = cuts.relu %[[V5]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = cuts.neg %[[V6]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = cuts.reciprocal %[[V7]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V9:[a-zA-Z0-9_]+]] = cuts.hard_swish %[[V8]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[V9]] : tensor<4xf32>
func.func @unary(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = cuts.sqrt %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = cuts.exp %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = cuts.log %1 : (tensor<4xf32>) -> tensor<4xf32>
  %3 = cuts.erf %2 : (tensor<4xf32>) -> tensor<4xf32>
  %4 = cuts.tanh %3 : (tensor<4xf32>) -> tensor<4xf32>
  %5 = cuts.sigmoid %4 : (tensor<4xf32>) -> tensor<4xf32>
  %6 = cuts.relu %5 : (tensor<4xf32>) -> tensor<4xf32>
  %7 = cuts.neg %6 : (tensor<4xf32>) -> tensor<4xf32>
  %8 = cuts.reciprocal %7 : (tensor<4xf32>) -> tensor<4xf32>
  %9 = cuts.hard_swish %8 : (tensor<4xf32>) -> tensor<4xf32>
  return %9 : tensor<4xf32>
}

// CHECK-LABEL: func.func @unary_int(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<4xi32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.relu %[[X]] : (tensor<4xi32>) -> tensor<4xi32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.neg %[[V0]] : (tensor<4xi32>) -> tensor<4xi32>
// CHECK-NEXT: return %[[V1]] : tensor<4xi32>
func.func @unary_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = cuts.relu %x : (tensor<4xi32>) -> tensor<4xi32>
  %1 = cuts.neg %0 : (tensor<4xi32>) -> tensor<4xi32>
  return %1 : tensor<4xi32>
}

// CHECK-LABEL: func.func @unary_attrs(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.leaky_relu %[[X]] {alpha = 1.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.hard_sigmoid %[[V0]] {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.gelu %[[V1]] {approximate = "none"} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = cuts.gelu %[[V2]] {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[V3]] : tensor<4xf32>
func.func @unary_attrs(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = cuts.leaky_relu %x {alpha = 1.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = cuts.hard_sigmoid %0 {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = cuts.gelu %1 {approximate = "none"} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = cuts.gelu %2 {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// CHECK-LABEL: func.func @clip(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-SAME: %[[I:[a-z0-9_]+]]: tensor<4xi32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.clip %[[X]] {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.clip %[[X]] {min = -1.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.clip %[[X]] {max = 1.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = cuts.clip %[[X]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = cuts.clip %[[I]] {max = 2.550000e+02 : f64, min = 0.000000e+00 : f64} : (tensor<4xi32>) -> tensor<4xi32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]], %[[V4]] : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
func.func @clip(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %0 = cuts.clip %x {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = cuts.clip %x {min = -1.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = cuts.clip %x {max = 1.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = cuts.clip %x : (tensor<4xf32>) -> tensor<4xf32>
  %4 = cuts.clip %i {max = 2.550000e+02 : f64, min = 0.000000e+00 : f64} : (tensor<4xi32>) -> tensor<4xi32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<2x3x4xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<4x5xf32>
// CHECK-SAME: %[[V:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-SAME: %[[M:[a-z0-9_]+]]: tensor<3x4xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.matmul %[[A]], %[[B]] : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.matmul %[[V]], %[[B]] : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.matmul %[[M]], %[[V]] : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]] : tensor<2x3x5xf32>, tensor<5xf32>, tensor<3xf32>
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>, %v: tensor<4xf32>, %m: tensor<3x4xf32>) -> (tensor<2x3x5xf32>, tensor<5xf32>, tensor<3xf32>) {
  %0 = cuts.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %1 = cuts.matmul %v, %b : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  %2 = cuts.matmul %m, %v : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<2x3x5xf32>, tensor<5xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @matmul_add(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<3x4xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<4x5xf32>
// CHECK-SAME: %[[C:[a-z0-9_]+]]: tensor<5xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.matmul_add %[[A]], %[[B]], %[[C]] : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3x5xf32>
func.func @matmul_add(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = cuts.matmul_add %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<4x3xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<5x4xf32>
// CHECK-SAME: %[[C:[a-z0-9_]+]]: tensor<5xf32>
// CHECK-SAME: %[[A2:[a-z0-9_]+]]: tensor<3x4xf32>
// CHECK-SAME: %[[B2:[a-z0-9_]+]]: tensor<4x5xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.gemm %[[A]], %[[B]], %[[C]] {alpha = 2.000000e+00 : f32, beta = 5.000000e-01 : f32, transA = true, transB = true} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.gemm %[[A2]], %[[B2]] {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<3x5xf32>, tensor<3x5xf32>
func.func @gemm(%a: tensor<4x3xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>, %a2: tensor<3x4xf32>, %b2: tensor<4x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = cuts.gemm %a, %b, %c {alpha = 2.000000e+00 : f32, beta = 5.000000e-01 : f32, transA = true, transB = true} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %1 = cuts.gemm %a2, %b2 {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0, %1 : tensor<3x5xf32>, tensor<3x5xf32>
}

// CHECK-LABEL: func.func @conv(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x3x8x8xf32>
// CHECK-SAME: %[[W:[a-z0-9_]+]]: tensor<4x3x3x3xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.conv %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.conv %[[X]], %[[W]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %0 = cuts.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %1 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0, %1 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// CHECK-LABEL: func.func @conv_grouped(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x4x9x9xf32>
// CHECK-SAME: %[[W:[a-z0-9_]+]]: tensor<8x2x3x3xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.conv %[[X]], %[[W]] {dilations = array<i64: 2, 2>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<1x8x4x4xf32>
func.func @conv_grouped(%x: tensor<1x4x9x9xf32>, %w: tensor<8x2x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %0 = cuts.conv %x, %w {dilations = array<i64: 2, 2>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
}

// CHECK-LABEL: func.func @conv_transpose(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x4x5x5xf32>
// CHECK-SAME: %[[W:[a-z0-9_]+]]: tensor<4x2x3x3xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<2xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.conv_transpose %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x10x10xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.conv_transpose %[[X]], %[[W]] {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x10x10xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<1x2x10x10xf32>, tensor<1x2x10x10xf32>
func.func @conv_transpose(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<2xf32>) -> (tensor<1x2x10x10xf32>, tensor<1x2x10x10xf32>) {
  %0 = cuts.conv_transpose %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x10x10xf32>
  %1 = cuts.conv_transpose %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x10x10xf32>
  return %0, %1 : tensor<1x2x10x10xf32>, tensor<1x2x10x10xf32>
}

// CHECK-LABEL: func.func @batch_normalization(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x4x6x6xf32>
// CHECK-SAME: %[[S:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-SAME: %[[M:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-SAME: %[[V:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.batch_normalization %[[X]], %[[S]], %[[B]], %[[M]], %[[V]] {epsilon = 9.99999974E-6 : f32} : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT: return %[[V0]] : tensor<1x4x6x6xf32>
func.func @batch_normalization(%x: tensor<1x4x6x6xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %0 = cuts.batch_normalization %x, %s, %b, %m, %v {epsilon = 9.99999974E-6 : f32} : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// CHECK-LABEL: func.func @layer_normalization(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3x4xf32>
// CHECK-SAME: %[[S:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<4xf32>
// CHECK-SAME: %[[S2:[a-z0-9_]+]]: tensor<3x4xf32>
// CHECK-NEXT: %[[V0_0:[a-zA-Z0-9_]+]], %[[V0_1:[a-zA-Z0-9_]+]], %[[V0_2:[a-zA-Z0-9_]+]] = cuts.layer_normalization %[[X]], %[[S]], %[[B]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
// CHECK-NEXT: %[[V1_0:[a-zA-Z0-9_]+]], %[[V1_1:[a-zA-Z0-9_]+]], %[[V1_2:[a-zA-Z0-9_]+]] = cuts.layer_normalization %[[X]], %[[S2]] {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
// CHECK-NEXT: return %[[V0_0]], %[[V0_1]], %[[V0_2]], %[[V1_0]], %[[V1_1]], %[[V1_2]] : tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>, tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
func.func @layer_normalization(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>, %s2: tensor<3x4xf32>)
    -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>, tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) {
  %0:3 = cuts.layer_normalization %x, %s, %b {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  %1:3 = cuts.layer_normalization %x, %s2 {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return %0#0, %0#1, %0#2, %1#0, %1#1, %1#2 : tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>, tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
}

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x5xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.softmax %[[X]] {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x5xf32>
func.func @softmax(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = cuts.softmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @pool(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x3x8x8xf32>
// CHECK-SAME: %[[Y:[a-z0-9_]+]]: tensor<1x3x7x7xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.max_pool %[[X]] {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.max_pool %[[Y]] {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.average_pool %[[X]] {ceil_mode = false, count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = cuts.global_average_pool %[[X]] : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]] : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>, tensor<1x3x1x1xf32>
func.func @pool(%x: tensor<1x3x8x8xf32>, %y: tensor<1x3x7x7xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>, tensor<1x3x1x1xf32>) {
  %0 = cuts.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  %1 = cuts.max_pool %y {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  %2 = cuts.average_pool %x {ceil_mode = false, count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %3 = cuts.global_average_pool %x : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
  return %0, %1, %2, %3 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>, tensor<1x3x1x1xf32>
}

// CHECK-LABEL: func.func @reduce(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3x4xf32>
// CHECK-SAME: %[[I:[a-z0-9_]+]]: tensor<2x3xi64>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.reduce_mean %[[X]] {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.reduce_sum %[[X]] {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.reduce_max %[[I]] {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xi64>) -> tensor<2xi64>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]] : tensor<2x1x4xf32>, tensor<3xf32>, tensor<2xi64>
func.func @reduce(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi64>) -> (tensor<2x1x4xf32>, tensor<3xf32>, tensor<2xi64>) {
  %0 = cuts.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %1 = cuts.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %2 = cuts.reduce_max %i {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xi64>) -> tensor<2xi64>
  return %0, %1, %2 : tensor<2x1x4xf32>, tensor<3xf32>, tensor<2xi64>
}

// CHECK-LABEL: func.func @reshape_like(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3x4xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.flatten %[[X]] {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.flatten %[[X]] {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.reshape %[[X]] {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = cuts.transpose %[[X]] {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]] : tensor<2x12xf32>, tensor<1x24xf32>, tensor<6x4xf32>, tensor<4x2x3xf32>
func.func @reshape_like(%x: tensor<2x3x4xf32>) -> (tensor<2x12xf32>, tensor<1x24xf32>, tensor<6x4xf32>, tensor<4x2x3xf32>) {
  %0 = cuts.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %1 = cuts.flatten %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  %2 = cuts.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %3 = cuts.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0, %1, %2, %3 : tensor<2x12xf32>, tensor<1x24xf32>, tensor<6x4xf32>, tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @concat(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: tensor<2x1xf32>
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<2x3xf32>
// CHECK-SAME: %[[C:[a-z0-9_]+]]: tensor<2x2xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.concat %[[A]], %[[B]], %[[C]] {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.concat %[[B]] {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<2x6xf32>, tensor<2x3xf32>
func.func @concat(%a: tensor<2x1xf32>, %b: tensor<2x3xf32>, %c: tensor<2x2xf32>) -> (tensor<2x6xf32>, tensor<2x3xf32>) {
  %0 = cuts.concat %a, %b, %c {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
  %1 = cuts.concat %b {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x6xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @split(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x6xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]]:3 = cuts.split %[[X]] {axis = 1 : i64, split = array<i64: 1, 2, 3>} : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.split %[[X]] {axis = 0 : i64, split = array<i64: 2>} : (tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: return %[[V0]]#0, %[[V0]]#1, %[[V0]]#2, %[[V1]] : tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<2x6xf32>
func.func @split(%x: tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<2x6xf32>) {
  %0:3 = cuts.split %x {axis = 1 : i64, split = array<i64: 1, 2, 3>} : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
  %1 = cuts.split %x {axis = 0 : i64, split = array<i64: 2>} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return %0#0, %0#1, %0#2, %1 : tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<2x6xf32>
}

// CHECK-LABEL: func.func @slice(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<4x6xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.slice %[[X]] {ends = array<i64: 3, 6>, starts = array<i64: 1, 0>, steps = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.slice %[[X]] {ends = array<i64: -1, -1>, starts = array<i64: 3, 5>, steps = array<i64: -1, -2>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<2x3xf32>, tensor<4x3xf32>
func.func @slice(%x: tensor<4x6xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %0 = cuts.slice %x {ends = array<i64: 3, 6>, starts = array<i64: 1, 0>, steps = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<2x3xf32>
  %1 = cuts.slice %x {ends = array<i64: -1, -1>, starts = array<i64: 3, 5>, steps = array<i64: -1, -2>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<4x3xf32>
}

// CHECK-LABEL: func.func @gather(
// CHECK-SAME: %[[D:[a-z0-9_]+]]: tensor<5x4xf32>
// CHECK-SAME: %[[I:[a-z0-9_]+]]: tensor<2x3xi64>
// CHECK-SAME: %[[J:[a-z0-9_]+]]: tensor<2xi32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.gather %[[D]], %[[I]] {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.gather %[[D]], %[[J]] {axis = 1 : i64} : (tensor<5x4xf32>, tensor<2xi32>) -> tensor<5x2xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<2x3x4xf32>, tensor<5x2xf32>
func.func @gather(%d: tensor<5x4xf32>, %i: tensor<2x3xi64>, %j: tensor<2xi32>) -> (tensor<2x3x4xf32>, tensor<5x2xf32>) {
  %0 = cuts.gather %d, %i {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %1 = cuts.gather %d, %j {axis = 1 : i64} : (tensor<5x4xf32>, tensor<2xi32>) -> tensor<5x2xf32>
  return %0, %1 : tensor<2x3x4xf32>, tensor<5x2xf32>
}

// CHECK-LABEL: func.func @gather_elements(
// CHECK-SAME: %[[D:[a-z0-9_]+]]: tensor<3x4xf32>
// CHECK-SAME: %[[I:[a-z0-9_]+]]: tensor<3x2xi64>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.gather_elements %[[D]], %[[I]] {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3x2xf32>
func.func @gather_elements(%d: tensor<3x4xf32>, %i: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %0 = cuts.gather_elements %d, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @gather_nd(
// CHECK-SAME: %[[D:[a-z0-9_]+]]: tensor<2x3x4xf32>
// CHECK-SAME: %[[I:[a-z0-9_]+]]: tensor<2x1xi64>
// CHECK-SAME: %[[K:[a-z0-9_]+]]: tensor<5x2xi64>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.gather_nd %[[D]], %[[I]] {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.gather_nd %[[D]], %[[K]] {batch_dims = 0 : i64} : (tensor<2x3x4xf32>, tensor<5x2xi64>) -> tensor<5x4xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<2x4xf32>, tensor<5x4xf32>
func.func @gather_nd(%d: tensor<2x3x4xf32>, %i: tensor<2x1xi64>, %k: tensor<5x2xi64>) -> (tensor<2x4xf32>, tensor<5x4xf32>) {
  %0 = cuts.gather_nd %d, %i {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  %1 = cuts.gather_nd %d, %k {batch_dims = 0 : i64} : (tensor<2x3x4xf32>, tensor<5x2xi64>) -> tensor<5x4xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<5x4xf32>
}

// CHECK-LABEL: func.func @squeeze_unsqueeze(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<3x4xf32>
// CHECK-SAME: %[[Y:[a-z0-9_]+]]: tensor<1x3x1x4xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.unsqueeze %[[X]] {axes = array<i64: 0, 3>} : (tensor<3x4xf32>) -> tensor<1x3x4x1xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.squeeze %[[Y]] {axes = array<i64: 0, 2>} : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<1x3x4x1xf32>, tensor<3x4xf32>
func.func @squeeze_unsqueeze(%x: tensor<3x4xf32>, %y: tensor<1x3x1x4xf32>) -> (tensor<1x3x4x1xf32>, tensor<3x4xf32>) {
  %0 = cuts.unsqueeze %x {axes = array<i64: 0, 3>} : (tensor<3x4xf32>) -> tensor<1x3x4x1xf32>
  %1 = cuts.squeeze %y {axes = array<i64: 0, 2>} : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
  return %0, %1 : tensor<1x3x4x1xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @expand(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<3x1xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.expand %[[X]] {shape = array<i64: 2, 1, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x3x4xf32>
func.func @expand(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = cuts.expand %x {shape = array<i64: 2, 1, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @pad(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3xf32>
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.pad %[[X]] {mode = "constant", pads = array<i64: 1, 0, 1, 2>, value = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = cuts.pad %[[X]] {mode = "reflect", pads = array<i64: 1, 2, 1, 2>, value = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<4x7xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = cuts.pad %[[X]] {mode = "edge", pads = array<i64: 1, 0, 0, 0>, value = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = cuts.pad %[[X]] {mode = "wrap", pads = array<i64: 0, 1, 0, 1>, value = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x5xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]] : tensor<4x5xf32>, tensor<4x7xf32>, tensor<3x3xf32>, tensor<2x5xf32>
func.func @pad(%x: tensor<2x3xf32>) -> (tensor<4x5xf32>, tensor<4x7xf32>, tensor<3x3xf32>, tensor<2x5xf32>) {
  %0 = cuts.pad %x {mode = "constant", pads = array<i64: 1, 0, 1, 2>, value = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<4x5xf32>
  %1 = cuts.pad %x {mode = "reflect", pads = array<i64: 1, 2, 1, 2>, value = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<4x7xf32>
  %2 = cuts.pad %x {mode = "edge", pads = array<i64: 1, 0, 0, 0>, value = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  %3 = cuts.pad %x {mode = "wrap", pads = array<i64: 0, 1, 0, 1>, value = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  return %0, %1, %2, %3 : tensor<4x5xf32>, tensor<4x7xf32>, tensor<3x3xf32>, tensor<2x5xf32>
}

// A group of the partition (cuts explain --mlir): ops inside read values
// from outside; what leaves it is yielded.
// CHECK-LABEL: func.func @group(
// CHECK-NEXT: %[[G:[a-zA-Z0-9_]+]]:2 = cuts.group attributes {anchor = "elementwise", enumerated = 4 : i64, fusion = "register", kept = 2 : i64, params = "block 1x1x1x4, thread 1x1x1x1 (N x K x H x W), C_input 1, FORMAT_shared NCHW", pul = 5.000000e-01 : f64, time_us = 2.500000e+00 : f64} : tensor<4xf32>, tensor<4xf32> {
// CHECK-NEXT: %[[R:[a-zA-Z0-9_]+]] = cuts.relu %arg0
// CHECK-NEXT: %[[N:[a-zA-Z0-9_]+]] = cuts.neg %[[R]]
// CHECK-NEXT: cuts.yield %[[R]], %[[N]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: }
func.func @group(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0:2 = cuts.group attributes {anchor = "elementwise", enumerated = 4 : i64, fusion = "register", kept = 2 : i64, params = "block 1x1x1x4, thread 1x1x1x1 (N x K x H x W), C_input 1, FORMAT_shared NCHW", pul = 5.000000e-01 : f64, time_us = 2.500000e+00 : f64} : tensor<4xf32>, tensor<4xf32> {
    %1 = cuts.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    %2 = cuts.neg %1 : (tensor<4xf32>) -> tensor<4xf32>
    cuts.yield %1, %2 : tensor<4xf32>, tensor<4xf32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>
}

// Imported weights are dense_resource blobs; they print back unchanged.
// CHECK-LABEL: func.func @constant_resource(
// CHECK-NEXT: %[[V0:[a-zA-Z0-9_]+]] = cuts.constant {value = dense_resource<weights> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
// CHECK: weights: "0x040000000000803F0000004000004040"
func.func @constant_resource() -> tensor<3xf32> {
  %0 = cuts.constant {value = dense_resource<weights> : tensor<3xf32>} : tensor<3xf32>
  return %0 : tensor<3xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weights: "0x040000000000803F0000004000004040"
    }
  }
#-}

// RUN: %cuts-opt %s --cuts-fold-constants | FileCheck %s

// Shape -> Gather -> Mul -> Unsqueeze -> Concat of static dims folds to
// one constant [d0, d1 * d2] (negative gather index counts from the back).
// CHECK-LABEL: func.func @shape_subgraph(
// CHECK-SAME: %[[X:[a-z0-9_]+]]
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[2, 12]> : tensor<2xi64>} : tensor<2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2xi64>
func.func @shape_subgraph(%x: tensor<2x3x4xf32>) -> tensor<2xi64> {
  %s = cuts.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %i0 = cuts.constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %i1 = cuts.constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %i2 = cuts.constant {value = dense<-1> : tensor<i64>} : tensor<i64>
  %d0 = cuts.gather %s, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %d1 = cuts.gather %s, %i1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %d2 = cuts.gather %s, %i2 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %p = cuts.mul %d1, %d2 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %u0 = cuts.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %u1 = cuts.unsqueeze %p {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %c = cuts.concat %u0, %u1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  return %c : tensor<2xi64>
}

// Shape with start/end folds to the selected dims.
// CHECK-LABEL: func.func @shape_start_end(
// CHECK-SAME: %[[X:[a-z0-9_]+]]
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[3, 4]> : tensor<2xi64>} : tensor<2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2xi64>
func.func @shape_start_end(%x: tensor<2x3x4x5xf32>) -> tensor<2xi64> {
  %s = cuts.shape %x {end = 3 : i64, start = 1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2xi64>
  return %s : tensor<2xi64>
}

// Elementwise arithmetic on inline constants folds with exact values.
// CHECK-LABEL: func.func @add_f32(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1.750000e+00, 2.000000e+00, 2.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @add_f32() -> tensor<3xf32> {
  %a = cuts.constant {value = dense<[1.5, -2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %b = cuts.constant {value = dense<[0.25, 4.0, -1.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.add %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// CHECK-LABEL: func.func @sub_f32(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1.250000e+00, -6.000000e+00, 4.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @sub_f32() -> tensor<3xf32> {
  %a = cuts.constant {value = dense<[1.5, -2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %b = cuts.constant {value = dense<[0.25, 4.0, -1.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.sub %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// CHECK-LABEL: func.func @mul_f32(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[3.750000e-01, -8.000000e+00, -3.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @mul_f32() -> tensor<3xf32> {
  %a = cuts.constant {value = dense<[1.5, -2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %b = cuts.constant {value = dense<[0.25, 4.0, -1.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.mul %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// CHECK-LABEL: func.func @div_f32(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[6.000000e+00, -5.000000e-01, -3.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @div_f32() -> tensor<3xf32> {
  %a = cuts.constant {value = dense<[1.5, -2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %b = cuts.constant {value = dense<[0.25, 4.0, -1.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.div %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// Folded f32 results are rounded to f32.
// CHECK-LABEL: func.func @div_f32_inexact(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[0.333333343, 0.666666686]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2xf32>
func.func @div_f32_inexact() -> tensor<2xf32> {
  %a = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %b = cuts.constant {value = dense<3.0> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.div %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// Broadcasting of one operand...
// CHECK-LABEL: func.func @add_broadcast(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}11, 22, 33], [14, 25, 36]]> : tensor<2x3xi64>} : tensor<2x3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xi64>
func.func @add_broadcast() -> tensor<2x3xi64> {
  %a = cuts.constant {value = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>} : tensor<2x3xi64>
  %b = cuts.constant {value = dense<[10, 20, 30]> : tensor<3xi64>} : tensor<3xi64>
  %0 = cuts.add %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// ...and of both operands ([2x1] x [3]).
// CHECK-LABEL: func.func @mul_broadcast_both(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}10, 20, 30], [20, 40, 60]]> : tensor<2x3xi64>} : tensor<2x3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xi64>
func.func @mul_broadcast_both() -> tensor<2x3xi64> {
  %a = cuts.constant {value = dense<[[1], [2]]> : tensor<2x1xi64>} : tensor<2x1xi64>
  %b = cuts.constant {value = dense<[10, 20, 30]> : tensor<3xi64>} : tensor<3xi64>
  %0 = cuts.mul %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// Integer division truncates toward zero (7/-2 = -3, not -4).
// CHECK-LABEL: func.func @div_int_truncates(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[3, -3, -3, 3]> : tensor<4xi64>} : tensor<4xi64>
// CHECK-NEXT: return %[[V0]] : tensor<4xi64>
func.func @div_int_truncates() -> tensor<4xi64> {
  %a = cuts.constant {value = dense<[7, -7, 7, -7]> : tensor<4xi64>} : tensor<4xi64>
  %b = cuts.constant {value = dense<[2, 2, -2, -2]> : tensor<4xi64>} : tensor<4xi64>
  %0 = cuts.div %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// CHECK-LABEL: func.func @div_i32_truncates(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[2, -2, 0]> : tensor<3xi32>} : tensor<3xi32>
// CHECK-NEXT: return %[[V0]] : tensor<3xi32>
func.func @div_i32_truncates() -> tensor<3xi32> {
  %a = cuts.constant {value = dense<[9, -9, 1]> : tensor<3xi32>} : tensor<3xi32>
  %b = cuts.constant {value = dense<[4, 4, 3]> : tensor<3xi32>} : tensor<3xi32>
  %0 = cuts.div %a, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// Integer division by zero is left to run time: no fold.
// CHECK-LABEL: func.func @div_int_by_zero(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1, 2]> : tensor<2xi64>} : tensor<2xi64>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[1, 0]> : tensor<2xi64>} : tensor<2xi64>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.div %[[V0]], %[[V1]] : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
// CHECK-NEXT: return %[[V2]] : tensor<2xi64>
func.func @div_int_by_zero() -> tensor<2xi64> {
  %a = cuts.constant {value = dense<[1, 2]> : tensor<2xi64>} : tensor<2xi64>
  %b = cuts.constant {value = dense<[1, 0]> : tensor<2xi64>} : tensor<2xi64>
  %0 = cuts.div %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// i32 arithmetic wraps at 32 bits.
// CHECK-LABEL: func.func @add_i32_wraps(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[-2147483648, 2147483647]> : tensor<2xi32>} : tensor<2xi32>
// CHECK-NEXT: return %[[V0]] : tensor<2xi32>
func.func @add_i32_wraps() -> tensor<2xi32> {
  %a = cuts.constant {value = dense<[2147483647, -2147483648]> : tensor<2xi32>} : tensor<2xi32>
  %b = cuts.constant {value = dense<[1, -1]> : tensor<2xi32>} : tensor<2xi32>
  %0 = cuts.add %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// CHECK-LABEL: func.func @pow(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[8.000000e+00, 3.000000e+00, 9.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @pow() -> tensor<3xf32> {
  %a = cuts.constant {value = dense<[2.0, 9.0, -3.0]> : tensor<3xf32>} : tensor<3xf32>
  %b = cuts.constant {value = dense<[3.0, 0.5, 2.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.pow %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// Pow with an integer exponent (the result has X's type).
// CHECK-LABEL: func.func @pow_int_exponent(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[4.000000e+00, 8.100000e+01, 9.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @pow_int_exponent() -> tensor<3xf32> {
  %a = cuts.constant {value = dense<[2.0, 9.0, -3.0]> : tensor<3xf32>} : tensor<3xf32>
  %b = cuts.constant {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
  %0 = cuts.pow %a, %b : (tensor<3xf32>, tensor<1xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// Comparisons fold to i1 constants.
// CHECK-LABEL: func.func @equal(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[true, false, true, false]> : tensor<4xi1>} : tensor<4xi1>
// CHECK-NEXT: return %[[V0]] : tensor<4xi1>
func.func @equal() -> tensor<4xi1> {
  %a = cuts.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %b = cuts.constant {value = dense<[1.0, 5.0, 3.0, 0.0]> : tensor<4xf32>} : tensor<4xf32>
  %0 = cuts.equal %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// CHECK-LABEL: func.func @equal_int_broadcast(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}true, false], [false, true]]> : tensor<2x2xi1>} : tensor<2x2xi1>
// CHECK-NEXT: return %[[V0]] : tensor<2x2xi1>
func.func @equal_int_broadcast() -> tensor<2x2xi1> {
  %a = cuts.constant {value = dense<[[1], [2]]> : tensor<2x1xi64>} : tensor<2x1xi64>
  %b = cuts.constant {value = dense<[1, 2]> : tensor<2xi64>} : tensor<2xi64>
  %0 = cuts.equal %a, %b : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi1>
  return %0 : tensor<2x2xi1>
}

// CHECK-LABEL: func.func @less(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[true, false, false]> : tensor<3xi1>} : tensor<3xi1>
// CHECK-NEXT: return %[[V0]] : tensor<3xi1>
func.func @less() -> tensor<3xi1> {
  %a = cuts.constant {value = dense<[-1, 5, 3]> : tensor<3xi64>} : tensor<3xi64>
  %b = cuts.constant {value = dense<[0, 5, 2]> : tensor<3xi64>} : tensor<3xi64>
  %0 = cuts.less %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// And / Or / Xor / Not.
// CHECK-LABEL: func.func @logic(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[true, false, false, false]> : tensor<4xi1>} : tensor<4xi1>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[true, true, true, false]> : tensor<4xi1>} : tensor<4xi1>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.constant {value = dense<[false, true, true, false]> : tensor<4xi1>} : tensor<4xi1>
// CHECK-NEXT: %[[V3:[a-z0-9_]+]] = cuts.constant {value = dense<[false, false, true, true]> : tensor<4xi1>} : tensor<4xi1>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]] : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
func.func @logic() -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %a = cuts.constant {value = dense<[true, true, false, false]> : tensor<4xi1>} : tensor<4xi1>
  %b = cuts.constant {value = dense<[true, false, true, false]> : tensor<4xi1>} : tensor<4xi1>
  %0 = cuts.and %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %1 = cuts.or %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %2 = cuts.xor %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %3 = cuts.not %a : (tensor<4xi1>) -> tensor<4xi1>
  return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// CHECK-LABEL: func.func @where(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e+00, 2.000000e+01, 3.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @where() -> tensor<3xf32> {
  %c = cuts.constant {value = dense<[true, false, true]> : tensor<3xi1>} : tensor<3xi1>
  %x = cuts.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %y = cuts.constant {value = dense<[10.0, 20.0, 30.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.where %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// Where broadcasts condition, X and Y.
// CHECK-LABEL: func.func @where_broadcast(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1, 2, 3], [-1, -1, -1]]> : tensor<2x3xi64>} : tensor<2x3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xi64>
func.func @where_broadcast() -> tensor<2x3xi64> {
  %c = cuts.constant {value = dense<[[true], [false]]> : tensor<2x1xi1>} : tensor<2x1xi1>
  %x = cuts.constant {value = dense<[1, 2, 3]> : tensor<3xi64>} : tensor<3xi64>
  %y = cuts.constant {value = dense<-1> : tensor<i64>} : tensor<i64>
  %0 = cuts.where %c, %x, %y : (tensor<2x1xi1>, tensor<3xi64>, tensor<i64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// Cast float -> int truncates.
// CHECK-LABEL: func.func @cast_f32_to_i32(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1, -1, 0, 300]> : tensor<4xi32>} : tensor<4xi32>
// CHECK-NEXT: return %[[V0]] : tensor<4xi32>
func.func @cast_f32_to_i32() -> tensor<4xi32> {
  %a = cuts.constant {value = dense<[1.7, -1.7, 0.0, 300.0]> : tensor<4xf32>} : tensor<4xf32>
  %0 = cuts.cast %a {to = i32} : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// Cast int -> f32 rounds to f32 (16777217 -> 16777216 = 0x4B800000).
// CHECK-LABEL: func.func @cast_i64_to_f32(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e+00, -2.000000e+00, 0x4B800000]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @cast_i64_to_f32() -> tensor<3xf32> {
  %a = cuts.constant {value = dense<[1, -2, 16777217]> : tensor<3xi64>} : tensor<3xi64>
  %0 = cuts.cast %a {to = f32} : (tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// A cast to the type its (non-constant) input already has is the input.
// CHECK-LABEL: func.func @cast_same_type(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x4xi1>
// CHECK-NEXT: return %[[X]] : tensor<1x4xi1>
func.func @cast_same_type(%x: tensor<1x4xi1>) -> tensor<1x4xi1> {
  %0 = cuts.cast %x {to = i1} : (tensor<1x4xi1>) -> tensor<1x4xi1>
  return %0 : tensor<1x4xi1>
}

// Cast to bool: non-zero is true.
// CHECK-LABEL: func.func @cast_to_bool(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[false, true, true]> : tensor<3xi1>} : tensor<3xi1>
// CHECK-NEXT: return %[[V0]] : tensor<3xi1>
func.func @cast_to_bool() -> tensor<3xi1> {
  %a = cuts.constant {value = dense<[0.0, 2.5, -0.5]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.cast %a {to = i1} : (tensor<3xf32>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// CHECK-LABEL: func.func @cast_bool_to_f32(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2xf32>
func.func @cast_bool_to_f32() -> tensor<2xf32> {
  %a = cuts.constant {value = dense<[true, false]> : tensor<2xi1>} : tensor<2xi1>
  %0 = cuts.cast %a {to = f32} : (tensor<2xi1>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// Cast to a narrower int wraps (300 -> 44, -129 -> 127).
// CHECK-LABEL: func.func @cast_i32_to_i8_wraps(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[44, 127, 5]> : tensor<3xi8>} : tensor<3xi8>
// CHECK-NEXT: return %[[V0]] : tensor<3xi8>
func.func @cast_i32_to_i8_wraps() -> tensor<3xi8> {
  %a = cuts.constant {value = dense<[300, -129, 5]> : tensor<3xi32>} : tensor<3xi32>
  %0 = cuts.cast %a {to = i8} : (tensor<3xi32>) -> tensor<3xi8>
  return %0 : tensor<3xi8>
}

// Slice with steps; data is [[0..3], [4..7], [8..11]].
// CHECK-LABEL: func.func @slice(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1, 3], [9, 11]]> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2xi64>
func.func @slice() -> tensor<2x2xi64> {
  %a = cuts.constant {value = dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]> : tensor<3x4xi64>} : tensor<3x4xi64>
  %0 = cuts.slice %a {ends = array<i64: 3, 4>, starts = array<i64: 0, 1>, steps = array<i64: 2, 2>} : (tensor<3x4xi64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// Slice with negative steps runs backwards (end -1 = to the front).
// CHECK-LABEL: func.func @slice_negative_step(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}11, 8], [7, 4], [3, 0]]> : tensor<3x2xi64>} : tensor<3x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<3x2xi64>
func.func @slice_negative_step() -> tensor<3x2xi64> {
  %a = cuts.constant {value = dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]> : tensor<3x4xi64>} : tensor<3x4xi64>
  %0 = cuts.slice %a {ends = array<i64: -1, -1>, starts = array<i64: 2, 3>, steps = array<i64: -1, -3>} : (tensor<3x4xi64>) -> tensor<3x2xi64>
  return %0 : tensor<3x2xi64>
}

// CHECK-LABEL: func.func @transpose(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>} : tensor<3x2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3x2xf32>
func.func @transpose() -> tensor<3x2xf32> {
  %a = cuts.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %0 = cuts.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// out[p][q][r] = in[q][r][p] with in[i][j][k] = 4i + 2j + k.
// CHECK-LABEL: func.func @transpose_3d(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}0, 2], [4, 6]], {{\[\[}}1, 3], [5, 7]]]> : tensor<2x2x2xi64>} : tensor<2x2x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2x2xi64>
func.func @transpose_3d() -> tensor<2x2x2xi64> {
  %a = cuts.constant {value = dense<[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]> : tensor<2x2x2xi64>} : tensor<2x2x2xi64>
  %0 = cuts.transpose %a {perm = array<i64: 2, 0, 1>} : (tensor<2x2x2xi64>) -> tensor<2x2x2xi64>
  return %0 : tensor<2x2x2xi64>
}

// Concat along an inner axis interleaves rows.
// CHECK-LABEL: func.func @concat_axis1(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1, 2, 5], [3, 4, 6]]> : tensor<2x3xi64>} : tensor<2x3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xi64>
func.func @concat_axis1() -> tensor<2x3xi64> {
  %a = cuts.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %b = cuts.constant {value = dense<[[5], [6]]> : tensor<2x1xi64>} : tensor<2x1xi64>
  %0 = cuts.concat %a, %b {axis = 1 : i64} : (tensor<2x2xi64>, tensor<2x1xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// CHECK-LABEL: func.func @concat_axis0(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00]> : tensor<5xf32>} : tensor<5xf32>
// CHECK-NEXT: return %[[V0]] : tensor<5xf32>
func.func @concat_axis0() -> tensor<5xf32> {
  %a = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %b = cuts.constant {value = dense<[3.0]> : tensor<1xf32>} : tensor<1xf32>
  %c = cuts.constant {value = dense<[4.0, 5.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.concat %a, %b, %c {axis = 0 : i64} : (tensor<2xf32>, tensor<1xf32>, tensor<2xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// Split folds every result.
// CHECK-LABEL: func.func @split(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[2, 3]> : tensor<2xi64>} : tensor<2xi64>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.constant {value = dense<[4, 5, 6]> : tensor<3xi64>} : tensor<3xi64>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]] : tensor<1xi64>, tensor<2xi64>, tensor<3xi64>
func.func @split() -> (tensor<1xi64>, tensor<2xi64>, tensor<3xi64>) {
  %a = cuts.constant {value = dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi64>} : tensor<6xi64>
  %0:3 = cuts.split %a {axis = 0 : i64, split = array<i64: 1, 2, 3>} : (tensor<6xi64>) -> (tensor<1xi64>, tensor<2xi64>, tensor<3xi64>)
  return %0#0, %0#1, %0#2 : tensor<1xi64>, tensor<2xi64>, tensor<3xi64>
}

// CHECK-LABEL: func.func @split_axis1(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1], [4]]> : tensor<2x1xi64>} : tensor<2x1xi64>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}2, 3], [5, 6]]> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<2x1xi64>, tensor<2x2xi64>
func.func @split_axis1() -> (tensor<2x1xi64>, tensor<2x2xi64>) {
  %a = cuts.constant {value = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>} : tensor<2x3xi64>
  %0:2 = cuts.split %a {axis = 1 : i64, split = array<i64: 1, 2>} : (tensor<2x3xi64>) -> (tensor<2x1xi64>, tensor<2x2xi64>)
  return %0#0, %0#1 : tensor<2x1xi64>, tensor<2x2xi64>
}

// Gather with a negative index (-3 = 0).
// CHECK-LABEL: func.func @gather(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}5, 6], [1, 2]]> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2xi64>
func.func @gather() -> tensor<2x2xi64> {
  %a = cuts.constant {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi64>} : tensor<3x2xi64>
  %i = cuts.constant {value = dense<[2, -3]> : tensor<2xi64>} : tensor<2xi64>
  %0 = cuts.gather %a, %i {axis = 0 : i64} : (tensor<3x2xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// Gather on an inner axis with i32 indices.
// CHECK-LABEL: func.func @gather_axis1(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}2.000000e+00, 1.000000e+00], [4.000000e+00, 3.000000e+00], [6.000000e+00, 5.000000e+00]]> : tensor<3x2xf32>} : tensor<3x2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3x2xf32>
func.func @gather_axis1() -> tensor<3x2xf32> {
  %a = cuts.constant {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : tensor<3x2xf32>
  %i = cuts.constant {value = dense<[1, 0]> : tensor<2xi32>} : tensor<2xi32>
  %0 = cuts.gather %a, %i {axis = 1 : i64} : (tensor<3x2xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// An out-of-range gather index is left to run time: no fold.
// CHECK-LABEL: func.func @gather_out_of_range(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1, 2, 3]> : tensor<3xi64>} : tensor<3xi64>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<3> : tensor<1xi64>} : tensor<1xi64>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.gather %[[V0]], %[[V1]] {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
// CHECK-NEXT: return %[[V2]] : tensor<1xi64>
func.func @gather_out_of_range() -> tensor<1xi64> {
  %a = cuts.constant {value = dense<[1, 2, 3]> : tensor<3xi64>} : tensor<3xi64>
  %i = cuts.constant {value = dense<[3]> : tensor<1xi64>} : tensor<1xi64>
  %0 = cuts.gather %a, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}

// out[i][j] = data[i][idx[i][j]].
// CHECK-LABEL: func.func @gather_elements(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1, 1], [4, 3]]> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2xi64>
func.func @gather_elements() -> tensor<2x2xi64> {
  %a = cuts.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %i = cuts.constant {value = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %0 = cuts.gather_elements %a, %i {axis = 1 : i64} : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// Index tuples select data[0][1] and data[1][0].
// CHECK-LABEL: func.func @gather_nd(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}2, 3], [4, 5]]> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2xi64>
func.func @gather_nd() -> tensor<2x2xi64> {
  %a = cuts.constant {value = dense<[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]> : tensor<2x2x2xi64>} : tensor<2x2x2xi64>
  %i = cuts.constant {value = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %0 = cuts.gather_nd %a, %i {batch_dims = 0 : i64} : (tensor<2x2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// batch_dims = 1: data[0][1] and data[1][0].
// CHECK-LABEL: func.func @gather_nd_batch(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}2, 3], [4, 5]]> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2xi64>
func.func @gather_nd_batch() -> tensor<2x2xi64> {
  %a = cuts.constant {value = dense<[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]> : tensor<2x2x2xi64>} : tensor<2x2x2xi64>
  %i = cuts.constant {value = dense<[[1], [0]]> : tensor<2x1xi64>} : tensor<2x1xi64>
  %0 = cuts.gather_nd %a, %i {batch_dims = 1 : i64} : (tensor<2x2x2xi64>, tensor<2x1xi64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// Range folds (its result has the element type of element_type).
// CHECK-LABEL: func.func @range_int(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1, 4, 7]> : tensor<3xi64>} : tensor<3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<3xi64>
func.func @range_int() -> tensor<3xi64> {
  %0 = cuts.range {delta = 3.0 : f64, element_type = i64, limit = 10.0 : f64, start = 1.0 : f64} : () -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// CHECK-LABEL: func.func @range_negative_delta(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[10, 7]> : tensor<2xi32>} : tensor<2xi32>
// CHECK-NEXT: return %[[V0]] : tensor<2xi32>
func.func @range_negative_delta() -> tensor<2xi32> {
  %0 = cuts.range {delta = -3.0 : f64, element_type = i32, limit = 4.0 : f64, start = 10.0 : f64} : () -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// CHECK-LABEL: func.func @range_float(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[5.000000e-01, 1.000000e+00, 1.500000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @range_float() -> tensor<3xf32> {
  %0 = cuts.range {delta = 0.5 : f64, element_type = f32, limit = 2.0 : f64, start = 0.5 : f64} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// Folded results of more than 16 elements become resource blobs (checked
// at the end of the file: i64 0..19, little endian, after the alignment word).
// CHECK-LABEL: func.func @range_large(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense_resource<folded> : tensor<20xi64>} : tensor<20xi64>
// CHECK-NEXT: return %[[V0]] : tensor<20xi64>
func.func @range_large() -> tensor<20xi64> {
  %0 = cuts.range {delta = 1.0 : f64, element_type = i64, limit = 20.0 : f64, start = 0.0 : f64} : () -> tensor<20xi64>
  return %0 : tensor<20xi64>
}

// ConstantOfShape folds to a splat.
// CHECK-LABEL: func.func @constant_of_shape(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<7> : tensor<2x3xi64>} : tensor<2x3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xi64>
func.func @constant_of_shape() -> tensor<2x3xi64> {
  %0 = cuts.constant_of_shape {shape = array<i64: 2, 3>, value = dense<7> : tensor<1xi64>} : () -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// CHECK-LABEL: func.func @constant_of_shape_f32(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<-2.500000e+00> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<4xf32>
func.func @constant_of_shape_f32() -> tensor<4xf32> {
  %0 = cuts.constant_of_shape {shape = array<i64: 4>, value = dense<-2.5> : tensor<1xf32>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Reductions fold; data is [[1, 2, 3], [4, 5, 6]].
// CHECK-LABEL: func.func @reduce_sum(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[6.000000e+00, 1.500000e+01]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2xf32>
func.func @reduce_sum() -> tensor<2xf32> {
  %a = cuts.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %0 = cuts.reduce_sum %a {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// CHECK-LABEL: func.func @reduce_mean_keepdims(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}2.500000e+00, 3.500000e+00, 5.000000e+00]]> : tensor<1x3xf32>} : tensor<1x3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<1x3xf32>
func.func @reduce_mean_keepdims() -> tensor<1x3xf32> {
  %a = cuts.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %0 = cuts.reduce_mean %a {axes = array<i64: 0>, keepdims = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// Integer ReduceMean truncates: [3/2, 9/2] = [1, 4].
// CHECK-LABEL: func.func @reduce_mean_int(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1, 4]> : tensor<2xi64>} : tensor<2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2xi64>
func.func @reduce_mean_int() -> tensor<2xi64> {
  %a = cuts.constant {value = dense<[[1, 2], [3, 6]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %0 = cuts.reduce_mean %a {axes = array<i64: 1>, keepdims = false} : (tensor<2x2xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// CHECK-LABEL: func.func @reduce_max_all(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<9> : tensor<i64>} : tensor<i64>
// CHECK-NEXT: return %[[V0]] : tensor<i64>
func.func @reduce_max_all() -> tensor<i64> {
  %a = cuts.constant {value = dense<[[3, -1], [9, 4]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %0 = cuts.reduce_max %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x2xi64>) -> tensor<i64>
  return %0 : tensor<i64>
}

// ReduceMax over the middle axis.
// CHECK-LABEL: func.func @reduce_max_middle(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}3.000000e+00, 8.000000e+00], [-1.000000e+00, -2.000000e+00]]> : tensor<2x2xf32>} : tensor<2x2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x2xf32>
func.func @reduce_max_middle() -> tensor<2x2xf32> {
  %a = cuts.constant {value = dense<[[[1.0, 8.0], [3.0, 2.0]], [[-1.0, -2.0], [-3.0, -4.0]]]> : tensor<2x2x2xf32>} : tensor<2x2x2xf32>
  %0 = cuts.reduce_max %a {axes = array<i64: 1>, keepdims = false} : (tensor<2x2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// Pad modes: constant (value 9), reflect, edge, wrap, negative pads.
// CHECK-LABEL: func.func @pad_constant(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}9, 9, 9], [1, 2, 9], [3, 4, 9]]> : tensor<3x3xi64>} : tensor<3x3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<3x3xi64>
func.func @pad_constant() -> tensor<3x3xi64> {
  %a = cuts.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %0 = cuts.pad %a {mode = "constant", pads = array<i64: 1, 0, 0, 1>, value = 9.0 : f64} : (tensor<2x2xi64>) -> tensor<3x3xi64>
  return %0 : tensor<3x3xi64>
}

// CHECK-LABEL: func.func @pad_reflect(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[3.000000e+00, 2.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 2.000000e+00, 1.000000e+00]> : tensor<7xf32>} : tensor<7xf32>
// CHECK-NEXT: return %[[V0]] : tensor<7xf32>
func.func @pad_reflect() -> tensor<7xf32> {
  %a = cuts.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.pad %a {mode = "reflect", pads = array<i64: 2, 2>, value = 0.0 : f64} : (tensor<3xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// CHECK-LABEL: func.func @pad_edge(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 3.000000e+00, 3.000000e+00]> : tensor<6xf32>} : tensor<6xf32>
// CHECK-NEXT: return %[[V0]] : tensor<6xf32>
func.func @pad_edge() -> tensor<6xf32> {
  %a = cuts.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.pad %a {mode = "edge", pads = array<i64: 1, 2>, value = 0.0 : f64} : (tensor<3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// CHECK-LABEL: func.func @pad_wrap(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[2.000000e+00, 3.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 1.000000e+00]> : tensor<6xf32>} : tensor<6xf32>
// CHECK-NEXT: return %[[V0]] : tensor<6xf32>
func.func @pad_wrap() -> tensor<6xf32> {
  %a = cuts.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.pad %a {mode = "wrap", pads = array<i64: 2, 1>, value = 0.0 : f64} : (tensor<3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// CHECK-LABEL: func.func @pad_negative(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2xf32>
func.func @pad_negative() -> tensor<2xf32> {
  %a = cuts.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %0 = cuts.pad %a {mode = "constant", pads = array<i64: -1, -1>, value = 0.0 : f64} : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// Expand folds by broadcasting.
// CHECK-LABEL: func.func @expand(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1, 1, 1], [2, 2, 2]]> : tensor<2x3xi64>} : tensor<2x3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xi64>
func.func @expand() -> tensor<2x3xi64> {
  %a = cuts.constant {value = dense<[[1], [2]]> : tensor<2x1xi64>} : tensor<2x1xi64>
  %0 = cuts.expand %a {shape = array<i64: 2, 3>} : (tensor<2x1xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// CHECK-LABEL: func.func @expand_rank(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<2x3xf32>} : tensor<2x3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xf32>
func.func @expand_rank() -> tensor<2x3xf32> {
  %a = cuts.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.expand %a {shape = array<i64: 2, 1>} : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// Reshape, Flatten, Unsqueeze, Squeeze of a constant re-type it.
// CHECK-LABEL: func.func @reshape_like(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1, 2, 3, 4]> : tensor<4xi64>} : tensor<4xi64>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1, 2, 3, 4]]> : tensor<1x4xi64>} : tensor<1x4xi64>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}1, 2]], {{\[\[}}3, 4]]]> : tensor<2x1x2xi64>} : tensor<2x1x2xi64>
// CHECK-NEXT: %[[V3:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]] : tensor<4xi64>, tensor<1x4xi64>, tensor<2x1x2xi64>, tensor<2x2xi64>
func.func @reshape_like() -> (tensor<4xi64>, tensor<1x4xi64>, tensor<2x1x2xi64>, tensor<2x2xi64>) {
  %a = cuts.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %0 = cuts.reshape %a {shape = array<i64: 4>} : (tensor<2x2xi64>) -> tensor<4xi64>
  %1 = cuts.flatten %a {axis = 0 : i64} : (tensor<2x2xi64>) -> tensor<1x4xi64>
  %2 = cuts.unsqueeze %a {axes = array<i64: 1>} : (tensor<2x2xi64>) -> tensor<2x1x2xi64>
  %3 = cuts.squeeze %2 {axes = array<i64: 1>} : (tensor<2x1x2xi64>) -> tensor<2x2xi64>
  return %0, %1, %2, %3 : tensor<4xi64>, tensor<1x4xi64>, tensor<2x1x2xi64>, tensor<2x2xi64>
}

// MatMul, 1-D MatMul, batched MatMul and Gemm (transA, transB, alpha,
// beta, broadcast C) fold.
// CHECK-LABEL: func.func @matmul(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}7.000000e+00, -1.000000e+00], [1.600000e+01, -1.000000e+00]]> : tensor<2x2xf32>} : tensor<2x2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x2xf32>
func.func @matmul() -> tensor<2x2xf32> {
  %a = cuts.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %b = cuts.constant {value = dense<[[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]]> : tensor<3x2xf32>} : tensor<3x2xf32>
  %0 = cuts.matmul %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @matmul_vector(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[7, -1]> : tensor<2xi64>} : tensor<2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2xi64>
func.func @matmul_vector() -> tensor<2xi64> {
  %a = cuts.constant {value = dense<[1, 2, 3]> : tensor<3xi64>} : tensor<3xi64>
  %b = cuts.constant {value = dense<[[1, 0], [0, 1], [2, -1]]> : tensor<3x2xi64>} : tensor<3x2xi64>
  %0 = cuts.matmul %a, %b : (tensor<3xi64>, tensor<3x2xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// CHECK-LABEL: func.func @matmul_batched(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}2.010000e+02, 2.010000e+03]], {{\[\[}}4.030000e+02, 4.030000e+03]]]> : tensor<2x1x2xf32>} : tensor<2x1x2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x1x2xf32>
func.func @matmul_batched() -> tensor<2x1x2xf32> {
  %a = cuts.constant {value = dense<[[[1.0, 2.0]], [[3.0, 4.0]]]> : tensor<2x1x2xf32>} : tensor<2x1x2xf32>
  %b = cuts.constant {value = dense<[[1.0, 10.0], [100.0, 1000.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %0 = cuts.matmul %a, %b : (tensor<2x1x2xf32>, tensor<2x2xf32>) -> tensor<2x1x2xf32>
  return %0 : tensor<2x1x2xf32>
}

// 2 * A^T B^T + 0.5 * C = 2 * [[7, 3], [10, 4]] + [5, 10].
// CHECK-LABEL: func.func @gemm(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}1.900000e+01, 1.600000e+01], [2.500000e+01, 1.800000e+01]]> : tensor<2x2xf32>} : tensor<2x2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x2xf32>
func.func @gemm() -> tensor<2x2xf32> {
  %a = cuts.constant {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %b = cuts.constant {value = dense<[[1.0, 2.0], [0.0, 1.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %c = cuts.constant {value = dense<[10.0, 20.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.gemm %a, %b, %c {alpha = 2.0 : f32, beta = 0.5 : f32, transA = true, transB = true} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// Float unary ops fold (values rounded to f32).
// CHECK-LABEL: func.func @unary_float(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[2.000000e+00, 1.41421354]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[1.000000e+00, 2.71828175]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.constant {value = dense<[1.38629436, 0.693147182]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: %[[V3:[a-z0-9_]+]] = cuts.constant {value = dense<[0.000000e+00, 0.842700779]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: %[[V4:[a-z0-9_]+]] = cuts.constant {value = dense<[0.000000e+00, 0.761594176]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: %[[V5:[a-z0-9_]+]] = cuts.constant {value = dense<[5.000000e-01, 0.731058597]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: %[[V6:[a-z0-9_]+]] = cuts.constant {value = dense<[2.500000e-01, 5.000000e-01]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]], %[[V4]], %[[V5]], %[[V6]] : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
func.func @unary_float() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %a = cuts.constant {value = dense<[4.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %b = cuts.constant {value = dense<[0.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.sqrt %a : (tensor<2xf32>) -> tensor<2xf32>
  %1 = cuts.exp %b : (tensor<2xf32>) -> tensor<2xf32>
  %2 = cuts.log %a : (tensor<2xf32>) -> tensor<2xf32>
  %3 = cuts.erf %b : (tensor<2xf32>) -> tensor<2xf32>
  %4 = cuts.tanh %b : (tensor<2xf32>) -> tensor<2xf32>
  %5 = cuts.sigmoid %b : (tensor<2xf32>) -> tensor<2xf32>
  %6 = cuts.reciprocal %a : (tensor<2xf32>) -> tensor<2xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// Activations on [-4, -1, 0.5, 4]; hard_swish(-4) is -0.
// CHECK-LABEL: func.func @activations(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[0.000000e+00, 0.000000e+00, 5.000000e-01, 4.000000e+00]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[4.000000e+00, 1.000000e+00, -5.000000e-01, -4.000000e+00]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.constant {value = dense<[-1.000000e+00, -2.500000e-01, 5.000000e-01, 4.000000e+00]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT: %[[V3:[a-z0-9_]+]] = cuts.constant {value = dense<[0.000000e+00, 2.500000e-01, 6.250000e-01, 1.000000e+00]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT: %[[V4:[a-z0-9_]+]] = cuts.constant {value = dense<[-0.000000e+00, -0.333333343, 0.291666657, 4.000000e+00]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT: %[[V5:[a-z0-9_]+]] = cuts.constant {value = dense<[-1.500000e+00, -1.000000e+00, 5.000000e-01, 2.000000e+00]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]], %[[V4]], %[[V5]] : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
func.func @activations() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = cuts.constant {value = dense<[-4.0, -1.0, 0.5, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %0 = cuts.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  %1 = cuts.neg %a : (tensor<4xf32>) -> tensor<4xf32>
  %2 = cuts.leaky_relu %a {alpha = 0.25 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = cuts.hard_sigmoid %a {alpha = 0.25 : f32, beta = 0.5 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %4 = cuts.hard_swish %a : (tensor<4xf32>) -> tensor<4xf32>
  %5 = cuts.clip %a {max = 2.0 : f64, min = -1.5 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Gelu, erf form and tanh form.
// CHECK-LABEL: func.func @gelu(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[-0.158655256, 0.000000e+00, 0.841344773]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[-0.158808008, 0.000000e+00, 8.411920e-01]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<3xf32>, tensor<3xf32>
func.func @gelu() -> (tensor<3xf32>, tensor<3xf32>) {
  %a = cuts.constant {value = dense<[-1.0, 0.0, 1.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.gelu %a {approximate = "none"} : (tensor<3xf32>) -> tensor<3xf32>
  %1 = cuts.gelu %a {approximate = "tanh"} : (tensor<3xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// Abs on floats (-0 is +0) and integers.
// CHECK-LABEL: func.func @abs(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[4.000000e+00, 0.000000e+00, 5.000000e-01]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[7, 0, 3]> : tensor<3xi32>} : tensor<3xi32>
// CHECK-NEXT: return %[[V0]], %[[V1]]
func.func @abs() -> (tensor<3xf32>, tensor<3xi32>) {
  %a = cuts.constant {value = dense<[-4.0, -0.0, 0.5]> : tensor<3xf32>} : tensor<3xf32>
  %i = cuts.constant {value = dense<[-7, 0, 3]> : tensor<3xi32>} : tensor<3xi32>
  %0 = cuts.abs %a : (tensor<3xf32>) -> tensor<3xf32>
  %1 = cuts.abs %i : (tensor<3xi32>) -> tensor<3xi32>
  return %0, %1 : tensor<3xf32>, tensor<3xi32>
}

// Mod: the divisor's sign (fmod = 0, cuts.mod) or the dividend's (cuts.fmod);
// an integer remainder by 0 is 0.
// CHECK-LABEL: func.func @mod(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[1, -1, 0]> : tensor<3xi64>} : tensor<3xi64>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[-2, 2, 0]> : tensor<3xi64>} : tensor<3xi64>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.constant {value = dense<[1.500000e+00, -1.500000e+00, 5.000000e-01]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]]
func.func @mod() -> (tensor<3xi64>, tensor<3xi64>, tensor<3xf32>) {
  %a = cuts.constant {value = dense<[-5, 5, 7]> : tensor<3xi64>} : tensor<3xi64>
  %b = cuts.constant {value = dense<[3, -3, 0]> : tensor<3xi64>} : tensor<3xi64>
  %x = cuts.constant {value = dense<[-4.5, 4.5, 2.5]> : tensor<3xf32>} : tensor<3xf32>
  %y = cuts.constant {value = dense<[3.0, -3.0, 2.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.mod %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %1 = cuts.fmod %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %2 = cuts.mod %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<3xi64>, tensor<3xi64>, tensor<3xf32>
}

// Max and Min, broadcasting (ONNX's variadic forms are chains of these).
// CHECK-LABEL: func.func @max_min(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}3, 2], [3, 4]]> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[-1.500000e+00, 2.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]]
func.func @max_min() -> (tensor<2x2xi64>, tensor<2xf32>) {
  %a = cuts.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %b = cuts.constant {value = dense<[3, 2]> : tensor<2xi64>} : tensor<2xi64>
  %x = cuts.constant {value = dense<[-1.5, 2.5]> : tensor<2xf32>} : tensor<2xf32>
  %y = cuts.constant {value = dense<[0.5, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = cuts.max %a, %b : (tensor<2x2xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  %1 = cuts.min %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1 : tensor<2x2xi64>, tensor<2xf32>
}

// Relu, Neg and Clip on integers stay exact.
// CHECK-LABEL: func.func @int_unary(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[0, 0, 3, 300]> : tensor<4xi32>} : tensor<4xi32>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[7, 1, -3, -300]> : tensor<4xi32>} : tensor<4xi32>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.constant {value = dense<[0, 0, 3, 255]> : tensor<4xi32>} : tensor<4xi32>
// CHECK-NEXT: %[[V3:[a-z0-9_]+]] = cuts.constant {value = dense<[-2, -1, 3, 300]> : tensor<4xi32>} : tensor<4xi32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]], %[[V3]] : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
func.func @int_unary() -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %a = cuts.constant {value = dense<[-7, -1, 3, 300]> : tensor<4xi32>} : tensor<4xi32>
  %0 = cuts.relu %a : (tensor<4xi32>) -> tensor<4xi32>
  %1 = cuts.neg %a : (tensor<4xi32>) -> tensor<4xi32>
  %2 = cuts.clip %a {max = 255.0 : f64, min = 0.0 : f64} : (tensor<4xi32>) -> tensor<4xi32>
  %3 = cuts.clip %a {min = -2.0 : f64} : (tensor<4xi32>) -> tensor<4xi32>
  return %0, %1, %2, %3 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

// Non-square operands catch index mix-ups. Gemm with transA, transB and a
// [M, 1] C: A^T B^T + C.
// CHECK-LABEL: func.func @gemm_rect(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}-3.000000e+00, 6.000000e+00, 6.000000e+00, 1.000000e+01], [-2.000000e+00, 1.000000e+01, 8.000000e+00, 1.400000e+01]]> : tensor<2x4xf32>} : tensor<2x4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x4xf32>
func.func @gemm_rect() -> tensor<2x4xf32> {
  %a = cuts.constant {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : tensor<3x2xf32>
  %b = cuts.constant {value = dense<[[1.0, 0.0, -1.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]> : tensor<4x3xf32>} : tensor<4x3xf32>
  %c = cuts.constant {value = dense<[[1.0], [2.0]]> : tensor<2x1xf32>} : tensor<2x1xf32>
  %0 = cuts.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = true, transB = true} : (tensor<3x2xf32>, tensor<4x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// Gemm without C and without transposes.
// CHECK-LABEL: func.func @gemm_rect_nt(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}5.000000e+00, 2.000000e+00, -1.000000e+00, -4.000000e+00], [1.100000e+01, 4.000000e+00, -3.000000e+00, -6.000000e+00], [1.700000e+01, 6.000000e+00, -5.000000e+00, -8.000000e+00]]> : tensor<3x4xf32>} : tensor<3x4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3x4xf32>
func.func @gemm_rect_nt() -> tensor<3x4xf32> {
  %a = cuts.constant {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : tensor<3x2xf32>
  %b = cuts.constant {value = dense<[[1.0, 0.0, -1.0, 2.0], [2.0, 1.0, 0.0, -3.0]]> : tensor<2x4xf32>} : tensor<2x4xf32>
  %0 = cuts.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// MatMul broadcasting A over B's batch.
// CHECK-LABEL: func.func @matmul_bcast_b(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}1, 2], [3, 4]], {{\[\[}}2, 1], [4, 3]]]> : tensor<2x2x2xi64>} : tensor<2x2x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2x2xi64>
func.func @matmul_bcast_b() -> tensor<2x2x2xi64> {
  %a = cuts.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %b = cuts.constant {value = dense<[[[1, 0], [0, 1]], [[0, 1], [1, 0]]]> : tensor<2x2x2xi64>} : tensor<2x2x2xi64>
  %0 = cuts.matmul %a, %b : (tensor<2x2xi64>, tensor<2x2x2xi64>) -> tensor<2x2x2xi64>
  return %0 : tensor<2x2x2xi64>
}

// MatMul broadcasting batch dims of both operands ([2x1] with [3]).
// CHECK-LABEL: func.func @matmul_bcast_both(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[\[}}3]], {{\[\[}}1]], {{\[\[}}2]]], {{\[\[\[}}7]], {{\[\[}}3]], {{\[\[}}4]]]]> : tensor<2x3x1x1xi64>} : tensor<2x3x1x1xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3x1x1xi64>
func.func @matmul_bcast_both() -> tensor<2x3x1x1xi64> {
  %a = cuts.constant {value = dense<[[[[1, 2]]], [[[3, 4]]]]> : tensor<2x1x1x2xi64>} : tensor<2x1x1x2xi64>
  %b = cuts.constant {value = dense<[[[1], [1]], [[1], [0]], [[0], [1]]]> : tensor<3x2x1xi64>} : tensor<3x2x1xi64>
  %0 = cuts.matmul %a, %b : (tensor<2x1x1x2xi64>, tensor<3x2x1xi64>) -> tensor<2x3x1x1xi64>
  return %0 : tensor<2x3x1x1xi64>
}

// MatMul of a matrix and a vector.
// CHECK-LABEL: func.func @matmul_mv(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<-2> : tensor<2xi64>} : tensor<2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2xi64>
func.func @matmul_mv() -> tensor<2xi64> {
  %a = cuts.constant {value = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>} : tensor<2x3xi64>
  %b = cuts.constant {value = dense<[1, 0, -1]> : tensor<3xi64>} : tensor<3xi64>
  %0 = cuts.matmul %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// Transpose of a 2x3x2 iota with perm [2, 0, 1].
// CHECK-LABEL: func.func @transpose_rect(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}0, 2, 4], [6, 8, 10]], {{\[\[}}1, 3, 5], [7, 9, 11]]]> : tensor<2x2x3xi64>} : tensor<2x2x3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2x3xi64>
func.func @transpose_rect() -> tensor<2x2x3xi64> {
  %a = cuts.constant {value = dense<[[[0, 1], [2, 3], [4, 5]], [[6, 7], [8, 9], [10, 11]]]> : tensor<2x3x2xi64>} : tensor<2x3x2xi64>
  %0 = cuts.transpose %a {perm = array<i64: 2, 0, 1>} : (tensor<2x3x2xi64>) -> tensor<2x2x3xi64>
  return %0 : tensor<2x2x3xi64>
}

// Concat / Split on the middle axis of rank-3 tensors.
// CHECK-LABEL: func.func @concat_mid(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}1, 2], [5, 6], [7, 8]], {{\[\[}}3, 4], [9, 10], [11, 12]]]> : tensor<2x3x2xi64>} : tensor<2x3x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3x2xi64>
func.func @concat_mid() -> tensor<2x3x2xi64> {
  %a = cuts.constant {value = dense<[[[1, 2]], [[3, 4]]]> : tensor<2x1x2xi64>} : tensor<2x1x2xi64>
  %b = cuts.constant {value = dense<[[[5, 6], [7, 8]], [[9, 10], [11, 12]]]> : tensor<2x2x2xi64>} : tensor<2x2x2xi64>
  %0 = cuts.concat %a, %b {axis = 1 : i64} : (tensor<2x1x2xi64>, tensor<2x2x2xi64>) -> tensor<2x3x2xi64>
  return %0 : tensor<2x3x2xi64>
}

// CHECK-LABEL: func.func @split_mid(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}1, 2]], {{\[\[}}3, 4]]]> : tensor<2x1x2xi64>} : tensor<2x1x2xi64>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}5, 6], [7, 8]], {{\[\[}}9, 10], [11, 12]]]> : tensor<2x2x2xi64>} : tensor<2x2x2xi64>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<2x1x2xi64>, tensor<2x2x2xi64>
func.func @split_mid() -> (tensor<2x1x2xi64>, tensor<2x2x2xi64>) {
  %a = cuts.constant {value = dense<[[[1, 2], [5, 6], [7, 8]], [[3, 4], [9, 10], [11, 12]]]> : tensor<2x3x2xi64>} : tensor<2x3x2xi64>
  %0:2 = cuts.split %a {axis = 1 : i64, split = array<i64: 1, 2>} : (tensor<2x3x2xi64>) -> (tensor<2x1x2xi64>, tensor<2x2x2xi64>)
  return %0#0, %0#1 : tensor<2x1x2xi64>, tensor<2x2x2xi64>
}

// Gather on the middle axis with 2-D indices (one negative).
// CHECK-LABEL: func.func @gather_mid(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[\[}}5, 6], [1, 2]], {{\[\[}}3, 4], [5, 6]]], {{\[\[\[}}11, 12], [7, 8]], {{\[\[}}9, 10], [11, 12]]]]> : tensor<2x2x2x2xi64>} : tensor<2x2x2x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2x2x2xi64>
func.func @gather_mid() -> tensor<2x2x2x2xi64> {
  %a = cuts.constant {value = dense<[[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]]> : tensor<2x3x2xi64>} : tensor<2x3x2xi64>
  %i = cuts.constant {value = dense<[[2, 0], [1, -1]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %0 = cuts.gather %a, %i {axis = 1 : i64} : (tensor<2x3x2xi64>, tensor<2x2xi64>) -> tensor<2x2x2x2xi64>
  return %0 : tensor<2x2x2x2xi64>
}

// GatherElements on axis 0 with fewer rows than data and a negative index.
// CHECK-LABEL: func.func @gather_elements_axis0(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}4, 8, 3], [7, 2, 9]]> : tensor<2x3xi64>} : tensor<2x3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xi64>
func.func @gather_elements_axis0() -> tensor<2x3xi64> {
  %a = cuts.constant {value = dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9]]> : tensor<3x3xi64>} : tensor<3x3xi64>
  %i = cuts.constant {value = dense<[[1, 2, 0], [2, 0, -1]]> : tensor<2x3xi64>} : tensor<2x3xi64>
  %0 = cuts.gather_elements %a, %i {axis = 0 : i64} : (tensor<3x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// GatherND of (i, j) pairs into a 2x3x4 iota.
// CHECK-LABEL: func.func @gather_nd_rect(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}20, 21, 22, 23], [4, 5, 6, 7], [12, 13, 14, 15]]> : tensor<3x4xi64>} : tensor<3x4xi64>
// CHECK-NEXT: return %[[V0]] : tensor<3x4xi64>
func.func @gather_nd_rect() -> tensor<3x4xi64> {
  %a = cuts.constant {value = dense<[[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], [[12, 13, 14, 15], [16, 17, 18, 19], [20, 21, 22, 23]]]> : tensor<2x3x4xi64>} : tensor<2x3x4xi64>
  %i = cuts.constant {value = dense<[[1, 2], [0, 1], [1, 0]]> : tensor<3x2xi64>} : tensor<3x2xi64>
  %0 = cuts.gather_nd %a, %i {batch_dims = 0 : i64} : (tensor<2x3x4xi64>, tensor<3x2xi64>) -> tensor<3x4xi64>
  return %0 : tensor<3x4xi64>
}

// GatherND with batch_dims = 1 and two index tuples per batch entry.
// CHECK-LABEL: func.func @gather_nd_batch_rect(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}8, 9, 10, 11], [0, 1, 2, 3]], {{\[\[}}16, 17, 18, 19], [20, 21, 22, 23]]]> : tensor<2x2x4xi64>} : tensor<2x2x4xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x2x4xi64>
func.func @gather_nd_batch_rect() -> tensor<2x2x4xi64> {
  %a = cuts.constant {value = dense<[[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], [[12, 13, 14, 15], [16, 17, 18, 19], [20, 21, 22, 23]]]> : tensor<2x3x4xi64>} : tensor<2x3x4xi64>
  %i = cuts.constant {value = dense<[[[2], [0]], [[1], [2]]]> : tensor<2x2x1xi64>} : tensor<2x2x1xi64>
  %0 = cuts.gather_nd %a, %i {batch_dims = 1 : i64} : (tensor<2x3x4xi64>, tensor<2x2x1xi64>) -> tensor<2x2x4xi64>
  return %0 : tensor<2x2x4xi64>
}

// Slice of a 2x3x4 iota: [1:2, 2::-2, 1:4:2].
// CHECK-LABEL: func.func @slice_3d(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}21, 23], [13, 15]]]> : tensor<1x2x2xi64>} : tensor<1x2x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<1x2x2xi64>
func.func @slice_3d() -> tensor<1x2x2xi64> {
  %a = cuts.constant {value = dense<[[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], [[12, 13, 14, 15], [16, 17, 18, 19], [20, 21, 22, 23]]]> : tensor<2x3x4xi64>} : tensor<2x3x4xi64>
  %0 = cuts.slice %a {ends = array<i64: 2, -1, 4>, starts = array<i64: 1, 2, 1>, steps = array<i64: 1, -2, 2>} : (tensor<2x3x4xi64>) -> tensor<1x2x2xi64>
  return %0 : tensor<1x2x2xi64>
}

// Reflect pad on both axes of [[1, 2, 3], [4, 5, 6]] (numpy.pad reflect).
// CHECK-LABEL: func.func @pad_2d_reflect(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[}}5, 4, 5, 6], [2, 1, 2, 3], [5, 4, 5, 6], [2, 1, 2, 3]]> : tensor<4x4xi64>} : tensor<4x4xi64>
// CHECK-NEXT: return %[[V0]] : tensor<4x4xi64>
func.func @pad_2d_reflect() -> tensor<4x4xi64> {
  %a = cuts.constant {value = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>} : tensor<2x3xi64>
  %0 = cuts.pad %a {mode = "reflect", pads = array<i64: 1, 1, 1, 0>, value = 0.0 : f64} : (tensor<2x3xi64>) -> tensor<4x4xi64>
  return %0 : tensor<4x4xi64>
}

// ReduceSum over the outer and inner axes of a 2x3x4 iota.
// CHECK-LABEL: func.func @reduce_3d(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[60, 92, 124]> : tensor<3xi64>} : tensor<3xi64>
// CHECK-NEXT: return %[[V0]] : tensor<3xi64>
func.func @reduce_3d() -> tensor<3xi64> {
  %a = cuts.constant {value = dense<[[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], [[12, 13, 14, 15], [16, 17, 18, 19], [20, 21, 22, 23]]]> : tensor<2x3x4xi64>} : tensor<2x3x4xi64>
  %0 = cuts.reduce_sum %a {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xi64>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// Expand a [3x1] to [2x3x2].
// CHECK-LABEL: func.func @expand_3d(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<{{\[\[\[}}1, 1], [2, 2], [3, 3]], {{\[\[}}1, 1], [2, 2], [3, 3]]]> : tensor<2x3x2xi64>} : tensor<2x3x2xi64>
// CHECK-NEXT: return %[[V0]] : tensor<2x3x2xi64>
func.func @expand_3d() -> tensor<2x3x2xi64> {
  %a = cuts.constant {value = dense<[[1], [2], [3]]> : tensor<3x1xi64>} : tensor<3x1xi64>
  %0 = cuts.expand %a {shape = array<i64: 2, 1, 2>} : (tensor<3x1xi64>) -> tensor<2x3x2xi64>
  return %0 : tensor<2x3x2xi64>
}

// f16 and bf16 results are rounded to their own precision (1/3 and 2/3).
// CHECK-LABEL: func.func @div_f16(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[3.332520e-01, 6.665040e-01]> : tensor<2xf16>} : tensor<2xf16>
// CHECK-NEXT: return %[[V0]] : tensor<2xf16>
func.func @div_f16() -> tensor<2xf16> {
  %a = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf16>} : tensor<2xf16>
  %b = cuts.constant {value = dense<3.0> : tensor<2xf16>} : tensor<2xf16>
  %0 = cuts.div %a, %b : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  return %0 : tensor<2xf16>
}

// CHECK-LABEL: func.func @div_bf16(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[3.339840e-01, 6.679690e-01]> : tensor<2xbf16>} : tensor<2xbf16>
// CHECK-NEXT: return %[[V0]] : tensor<2xbf16>
func.func @div_bf16() -> tensor<2xbf16> {
  %a = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xbf16>} : tensor<2xbf16>
  %b = cuts.constant {value = dense<3.0> : tensor<2xbf16>} : tensor<2xbf16>
  %0 = cuts.div %a, %b : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
  return %0 : tensor<2xbf16>
}

// Unsigned 8-bit arithmetic wraps modulo 256 and compares as unsigned.
// CHECK-LABEL: func.func @ui8(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[44, 250, 0]> : tensor<3xui8>} : tensor<3xui8>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.constant {value = dense<[false, true, false]> : tensor<3xi1>} : tensor<3xi1>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<3xui8>, tensor<3xi1>
func.func @ui8() -> (tensor<3xui8>, tensor<3xi1>) {
  %a = cuts.constant {value = dense<[200, 100, 255]> : tensor<3xui8>} : tensor<3xui8>
  %b = cuts.constant {value = dense<[100, 150, 1]> : tensor<3xui8>} : tensor<3xui8>
  %0 = cuts.add %a, %b : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  %1 = cuts.less %a, %b : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xi1>
  return %0, %1 : tensor<3xui8>, tensor<3xi1>
}

// Ops that are the identity for their types fold to their operand.
// CHECK-LABEL: func.func @no_op_folds(
// CHECK-SAME: %[[X:[a-z0-9_]+]]
// CHECK-NEXT: return %[[X]] : tensor<2x3xf32>
func.func @no_op_folds(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = cuts.identity %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = cuts.dropout %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = cuts.transpose %1 {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = cuts.slice %2 {ends = array<i64: 2, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = cuts.pad %3 {mode = "constant", pads = array<i64: 0, 0, 0, 0>, value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = cuts.expand %4 {shape = array<i64: 1, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = cuts.cast %5 {to = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = cuts.concat %6 {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = cuts.split %7 {axis = 1 : i64, split = array<i64: 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %9 = cuts.reshape %8 {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %9 : tensor<2x3xf32>
}

// An op with a non-constant operand does not fold (but its constant
// operand subgraph does).
// CHECK-LABEL: func.func @non_constant_operand(
// CHECK-SAME: %[[X:[a-z0-9_]+]]
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: %[[V1:[a-z0-9_]+]] = cuts.mul %[[X]], %[[V0]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[V2:[a-z0-9_]+]] = cuts.relu %[[V1]] : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT: return %[[V2]] : tensor<3xf32>
func.func @non_constant_operand(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = cuts.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %d = cuts.constant {value = dense<[1.0, 1.0, 1.0]> : tensor<3xf32>} : tensor<3xf32>
  %s = cuts.add %c, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %0 = cuts.mul %x, %s : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = cuts.relu %0 : (tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}

// Ops left without users are erased.
// CHECK-LABEL: func.func @dead_constants_removed(
// CHECK-SAME: %[[X:[a-z0-9_]+]]
// CHECK-NEXT: return %[[X]] : tensor<3xf32>
func.func @dead_constants_removed(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = cuts.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.neg %c : (tensor<3xf32>) -> tensor<3xf32>
  return %x : tensor<3xf32>
}

// A resource blob operand (how imported weights look: f32 [1, 2, 3]) folds
// like an inline one: [1, 2, 3] + [1, 1, -1].
// CHECK-LABEL: func.func @blob_operand(
// CHECK-NEXT: %[[V0:[a-z0-9_]+]] = cuts.constant {value = dense<[2.000000e+00, 3.000000e+00, 2.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @blob_operand() -> tensor<3xf32> {
  %w = cuts.constant {value = dense_resource<weights> : tensor<3xf32>} : tensor<3xf32>
  %one = cuts.constant {value = dense<[1.0, 1.0, -1.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = cuts.add %w, %one : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// The blob of @range_large: the 32-bit alignment (8), then i64 0, 1, ..., 19.
// CHECK: folded: "0x0800000000000000000000000100000000000000020000000000000003000000000000000400000000000000050000000000000006000000000000000700000000000000080000000000000009000000000000000A000000000000000B000000000000000C000000000000000D000000000000000E000000000000000F000000000000001000000000000000110000000000000012000000000000001300000000000000"

{-#
  dialect_resources: {
    builtin: {
      weights: "0x040000000000803F0000004000004040"
    }
  }
#-}

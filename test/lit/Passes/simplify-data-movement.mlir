// RUN: %cuts-opt %s --cuts-simplify-data-movement | FileCheck %s
// RUN: %cuts-opt %s --cuts-simplify-data-movement --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// BERT's attention mask as the PyTorch dynamo exporter builds it: the
// gather_nd indices (0, j) take the [1, 4] mask in order (negative indices
// count from the end: (0, -2) is (0, 2), (-1, 3) is (0, 3)), so it is a
// reshape; the and with an all-true constant (a resource blob, as imported)
// is a broadcast. The new ops keep the names of the ops they replace.
// CHECK-LABEL: func.func @bert_mask(
// CHECK-SAME: %[[M:[a-z0-9_]+]]: tensor<1x4xi64>
// CHECK-NOT: cuts.gather_nd
// CHECK: %[[C:[a-z0-9_]+]] = cuts.cast %[[M]] {to = i1} : (tensor<1x4xi64>) -> tensor<1x4xi1>
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = cuts.reshape %[[C]] {shape = array<i64: 1, 1, 1, 4>} : (tensor<1x4xi1>) -> tensor<1x1x1x4xi1>
// CHECK-NEXT: %[[E:[a-z0-9_]+]] = cuts.expand %[[R]] {shape = array<i64: 1, 1, 4, 4>} : (tensor<1x1x1x4xi1>) -> tensor<1x1x4x4xi1>
// CHECK-NEXT: %[[W:[a-z0-9_]+]] = cuts.where %[[E]],
// CHECK-NEXT: return %[[W]]
// LOC-LABEL: func.func @bert_mask(
// LOC: cuts.reshape {{.*}} loc("mask_gather")
// LOC-NEXT: cuts.expand {{.*}} loc("mask_and")
func.func @bert_mask(%mask: tensor<1x4xi64>) -> tensor<1x1x4x4xf32> {
  %idx = cuts.constant {value = dense<[[[[[0, 0], [0, 1], [0, -2], [-1, 3]]]]]> : tensor<1x1x1x4x2xi64>} : tensor<1x1x1x4x2xi64>
  %t = cuts.constant {value = dense_resource<all_true> : tensor<1x1x4x1xi1>} : tensor<1x1x4x1xi1>
  %zero = cuts.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %ninf = cuts.constant {value = dense<-1.0e9> : tensor<f32>} : tensor<f32>
  %0 = cuts.cast %mask {to = i1} : (tensor<1x4xi64>) -> tensor<1x4xi1>
  %1 = cuts.gather_nd %0, %idx {batch_dims = 0 : i64} : (tensor<1x4xi1>, tensor<1x1x1x4x2xi64>) -> tensor<1x1x1x4xi1> loc("mask_gather")
  %2 = cuts.and %1, %t : (tensor<1x1x1x4xi1>, tensor<1x1x4x1xi1>) -> tensor<1x1x4x4xi1> loc("mask_and")
  %3 = cuts.where %2, %zero, %ninf : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  return %3 : tensor<1x1x4x4xf32>
}

//===----------------------------------------------------------------------===//
// gather_nd
//===----------------------------------------------------------------------===//

// Whole rows in order, same shape as data: the gather_nd is data itself.
// CHECK-LABEL: func.func @gather_nd_identity(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3xf32>
// CHECK-NEXT: cuts.constant
// CHECK-NEXT: return %[[X]] : tensor<2x3xf32>
func.func @gather_nd_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %idx = cuts.constant {value = dense<[[0], [-1]]> : tensor<2x1xi64>} : tensor<2x1xi64>
  %0 = cuts.gather_nd %x, %idx {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// batch_dims = 1: each batch entry takes its own elements in order.
// CHECK-LABEL: func.func @gather_nd_batch_dims(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3xi64>
// CHECK-NOT: cuts.gather_nd
// CHECK: %[[R:[a-z0-9_]+]] = cuts.reshape %[[X]] {shape = array<i64: 2, 1, 3>} : (tensor<2x3xi64>) -> tensor<2x1x3xi64>
// CHECK-NEXT: return %[[R]]
func.func @gather_nd_batch_dims(%x: tensor<2x3xi64>) -> tensor<2x1x3xi64> {
  %idx = cuts.constant {value = dense<[[[[0], [1], [2]]], [[[0], [1], [-1]]]]> : tensor<2x1x3x1xi64>} : tensor<2x1x3x1xi64>
  %0 = cuts.gather_nd %x, %idx {batch_dims = 1 : i64} : (tensor<2x3xi64>, tensor<2x1x3x1xi64>) -> tensor<2x1x3xi64>
  return %0 : tensor<2x1x3xi64>
}

// Rows 1 and 2 of four, in order: a slice along axis 0 (no reshape needed).
// CHECK-LABEL: func.func @gather_nd_rows(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<4x8xf32>
// CHECK-NOT: cuts.gather_nd
// CHECK: %[[S:[a-z0-9_]+]] = cuts.slice %[[X]] {ends = array<i64: 3, 8>, starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: return %[[S]] : tensor<2x8xf32>
func.func @gather_nd_rows(%x: tensor<4x8xf32>) -> tensor<2x8xf32> {
  %idx = cuts.constant {value = dense<[[1], [2]]> : tensor<2x1xi64>} : tensor<2x1xi64>
  %0 = cuts.gather_nd %x, %idx {batch_dims = 0 : i64} : (tensor<4x8xf32>, tensor<2x1xi64>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// Elements 2..4 of row 1: a slice within the row, then a reshape.
// CHECK-LABEL: func.func @gather_nd_within_row(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x8xf32>
// CHECK-NOT: cuts.gather_nd
// CHECK: %[[S:[a-z0-9_]+]] = cuts.slice %[[X]] {ends = array<i64: 2, 5>, starts = array<i64: 1, 2>, steps = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = cuts.reshape %[[S]] {shape = array<i64: 3>} : (tensor<1x3xf32>) -> tensor<3xf32>
// CHECK-NEXT: return %[[R]] : tensor<3xf32>
func.func @gather_nd_within_row(%x: tensor<2x8xf32>) -> tensor<3xf32> {
  %idx = cuts.constant {value = dense<[[1, 2], [1, 3], [-1, -4]]> : tensor<3x2xi64>} : tensor<3x2xi64>
  %0 = cuts.gather_nd %x, %idx {batch_dims = 0 : i64} : (tensor<2x8xf32>, tensor<3x2xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// Reversed indices are not a run of data: the gather_nd stays.
// CHECK-LABEL: func.func @gather_nd_reversed(
// CHECK: cuts.gather_nd
// CHECK-NOT: cuts.reshape
// CHECK-NOT: cuts.slice
// CHECK: return
func.func @gather_nd_reversed(%x: tensor<1x4xi1>) -> tensor<1x4xi1> {
  %idx = cuts.constant {value = dense<[[[0, 3], [0, 2], [0, 1], [0, 0]]]> : tensor<1x4x2xi64>} : tensor<1x4x2xi64>
  %0 = cuts.gather_nd %x, %idx {batch_dims = 0 : i64} : (tensor<1x4xi1>, tensor<1x4x2xi64>) -> tensor<1x4xi1>
  return %0 : tensor<1x4xi1>
}

// Elements 2..5 of a [2, 4] tensor are contiguous but wrap to the next row,
// so no slice takes them: the gather_nd stays.
// CHECK-LABEL: func.func @gather_nd_run_not_a_slice(
// CHECK: cuts.gather_nd
// CHECK-NOT: cuts.slice
// CHECK: return
func.func @gather_nd_run_not_a_slice(%x: tensor<2x4xf32>) -> tensor<4xf32> {
  %idx = cuts.constant {value = dense<[[0, 2], [0, 3], [1, 0], [1, 1]]> : tensor<4x2xi64>} : tensor<4x2xi64>
  %0 = cuts.gather_nd %x, %idx {batch_dims = 0 : i64} : (tensor<2x4xf32>, tensor<4x2xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// An out-of-range index is left to run time.
// CHECK-LABEL: func.func @gather_nd_out_of_range(
// CHECK: cuts.gather_nd
// CHECK: return
func.func @gather_nd_out_of_range(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %idx = cuts.constant {value = dense<[[[0, 0], [0, 1], [0, 2], [0, 4]]]> : tensor<1x4x2xi64>} : tensor<1x4x2xi64>
  %0 = cuts.gather_nd %x, %idx {batch_dims = 0 : i64} : (tensor<1x4xf32>, tensor<1x4x2xi64>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// Indices that are not constant: the gather_nd stays.
// CHECK-LABEL: func.func @gather_nd_indices_not_constant(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x4xf32>, %[[I:[a-z0-9_]+]]: tensor<1x4x2xi64>
// CHECK-NEXT: %[[G:[a-z0-9_]+]] = cuts.gather_nd %[[X]], %[[I]]
// CHECK-NEXT: return %[[G]]
func.func @gather_nd_indices_not_constant(%x: tensor<1x4xf32>, %idx: tensor<1x4x2xi64>) -> tensor<1x4xf32> {
  %0 = cuts.gather_nd %x, %idx {batch_dims = 0 : i64} : (tensor<1x4xf32>, tensor<1x4x2xi64>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

//===----------------------------------------------------------------------===//
// and / or with a constant operand
//===----------------------------------------------------------------------===//

// and(x, T) with x already of the result type is x.
// CHECK-LABEL: func.func @and_true_same_type(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<2x3xi1>
// CHECK-NEXT: cuts.constant
// CHECK-NEXT: return %[[X]] : tensor<2x3xi1>
func.func @and_true_same_type(%x: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %t = cuts.constant {value = dense<true> : tensor<3xi1>} : tensor<3xi1>
  %0 = cuts.and %x, %t : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// and(T, x) where T broadcasts x: expand x to the result shape.
// CHECK-LABEL: func.func @true_and_broadcast(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<3xi1>
// CHECK-NOT: cuts.and
// CHECK: %[[E:[a-z0-9_]+]] = cuts.expand %[[X]] {shape = array<i64: 2, 3>} : (tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: return %[[E]] : tensor<2x3xi1>
func.func @true_and_broadcast(%x: tensor<3xi1>) -> tensor<2x3xi1> {
  %t = cuts.constant {value = dense<true> : tensor<2x1xi1>} : tensor<2x1xi1>
  %0 = cuts.and %t, %x : (tensor<2x1xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// A broadcast of an expand expands the expand's input once.
// CHECK-LABEL: func.func @and_true_of_expand(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<3xi1>
// CHECK-NOT: cuts.and
// CHECK: %[[E:[a-z0-9_]+]] = cuts.expand %[[X]] {shape = array<i64: 4, 2, 3>} : (tensor<3xi1>) -> tensor<4x2x3xi1>
// CHECK-NEXT: return %[[E]] : tensor<4x2x3xi1>
func.func @and_true_of_expand(%x: tensor<3xi1>) -> tensor<4x2x3xi1> {
  %t = cuts.constant {value = dense<true> : tensor<4x1x1xi1>} : tensor<4x1x1xi1>
  %0 = cuts.expand %x {shape = array<i64: 2, 3>} : (tensor<3xi1>) -> tensor<2x3xi1>
  %1 = cuts.and %0, %t : (tensor<2x3xi1>, tensor<4x1x1xi1>) -> tensor<4x2x3xi1>
  return %1 : tensor<4x2x3xi1>
}

// or(x, F) is x, or(F, x) too; with F broadcasting x, x is expanded.
// CHECK-LABEL: func.func @or_false(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<1x3xi1>
// CHECK-NOT: cuts.or
// CHECK: %[[E:[a-z0-9_]+]] = cuts.expand %[[X]] {shape = array<i64: 2, 3>} : (tensor<1x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: return %[[X]], %[[E]] : tensor<1x3xi1>, tensor<2x3xi1>
func.func @or_false(%x: tensor<1x3xi1>) -> (tensor<1x3xi1>, tensor<2x3xi1>) {
  %f = cuts.constant {value = dense<false> : tensor<3xi1>} : tensor<3xi1>
  %f2 = cuts.constant {value = dense<false> : tensor<2x1xi1>} : tensor<2x1xi1>
  %0 = cuts.or %x, %f : (tensor<1x3xi1>, tensor<3xi1>) -> tensor<1x3xi1>
  %1 = cuts.or %f2, %x : (tensor<2x1xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
  return %0, %1 : tensor<1x3xi1>, tensor<2x3xi1>
}

// and(x, F) is false and or(x, T) is true, of the result type.
// CHECK-LABEL: func.func @absorbing(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<3xi1>
// CHECK-NOT: cuts.and
// CHECK-NOT: cuts.or
// CHECK-DAG: %[[F:[a-z0-9_]+]] = cuts.constant {value = dense<false> : tensor<2x3xi1>} : tensor<2x3xi1>
// CHECK-DAG: %[[T:[a-z0-9_]+]] = cuts.constant {value = dense<true> : tensor<3xi1>} : tensor<3xi1>
// CHECK-NOT: cuts.and
// CHECK-NOT: cuts.or
// CHECK: return %[[F]], %[[T]] : tensor<2x3xi1>, tensor<3xi1>
func.func @absorbing(%x: tensor<3xi1>) -> (tensor<2x3xi1>, tensor<3xi1>) {
  %f = cuts.constant {value = dense<false> : tensor<2x1xi1>} : tensor<2x1xi1>
  %t = cuts.constant {value = dense<true> : tensor<1xi1>} : tensor<1xi1>
  %0 = cuts.and %x, %f : (tensor<3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  %1 = cuts.or %t, %x : (tensor<1xi1>, tensor<3xi1>) -> tensor<3xi1>
  return %0, %1 : tensor<2x3xi1>, tensor<3xi1>
}

// Neither operand constant: the and stays.
// CHECK-LABEL: func.func @and_not_constant(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<3xi1>, %[[Y:[a-z0-9_]+]]: tensor<2x1xi1>
// CHECK-NEXT: %[[A:[a-z0-9_]+]] = cuts.and %[[X]], %[[Y]]
// CHECK-NEXT: return %[[A]]
func.func @and_not_constant(%x: tensor<3xi1>, %y: tensor<2x1xi1>) -> tensor<2x3xi1> {
  %0 = cuts.and %x, %y : (tensor<3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// A constant that is not all true (nor all false) keeps the and and the or.
// CHECK-LABEL: func.func @mixed_constant(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<3xi1>
// CHECK: %[[C:[a-z0-9_]+]] = cuts.constant {value = dense<[true, false, true]> : tensor<3xi1>}
// CHECK-NEXT: %[[A:[a-z0-9_]+]] = cuts.and %[[X]], %[[C]]
// CHECK-NEXT: %[[O:[a-z0-9_]+]] = cuts.or %[[C]], %[[X]]
// CHECK-NEXT: return %[[A]], %[[O]]
func.func @mixed_constant(%x: tensor<3xi1>) -> (tensor<3xi1>, tensor<3xi1>) {
  %c = cuts.constant {value = dense<[true, false, true]> : tensor<3xi1>} : tensor<3xi1>
  %0 = cuts.and %x, %c : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %1 = cuts.or %c, %x : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  return %0, %1 : tensor<3xi1>, tensor<3xi1>
}

// A mixed resource blob (as imported) keeps the and too.
// CHECK-LABEL: func.func @mixed_blob(
// CHECK: cuts.and
// CHECK: return
func.func @mixed_blob(%x: tensor<1x4xi1>) -> tensor<4x4xi1> {
  %c = cuts.constant {value = dense_resource<mixed> : tensor<4x1xi1>} : tensor<4x1xi1>
  %0 = cuts.and %x, %c : (tensor<1x4xi1>, tensor<4x1xi1>) -> tensor<4x4xi1>
  return %0 : tensor<4x4xi1>
}

// all_true: the 8-bit alignment (1), then four true bytes; mixed: true,
// true, false, true.
{-#
  dialect_resources: {
    builtin: {
      all_true: "0x0100000001010101",
      mixed: "0x0100000001010001"
    }
  }
#-}

// Split becomes one slice per result.
// CHECK-LABEL: func.func @split_to_slices
// CHECK-NOT: cuts.split
// CHECK: cuts.slice %arg0 {ends = array<i64: 1, 4, 3>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>}
// CHECK: cuts.slice %arg0 {ends = array<i64: 1, 4, 9>, starts = array<i64: 0, 0, 3>, steps = array<i64: 1, 1, 1>}
func.func @split_to_slices(%x: tensor<1x4x9xf32>) -> (tensor<1x4x3xf32>, tensor<1x4x6xf32>) {
  %0:2 = cuts.split %x {axis = 2 : i64, split = array<i64: 3, 6>} : (tensor<1x4x9xf32>) -> (tensor<1x4x3xf32>, tensor<1x4x6xf32>)
  return %0#0, %0#1 : tensor<1x4x3xf32>, tensor<1x4x6xf32>
}

// A rank-5 transpose whose axes merge: ShuffleNet's channel shuffle is a
// rank-3 one between views (the batch of 1 dropped, H and W one axis). A
// rank-6 one whose axes all move (a window partition) stays.
// CHECK-LABEL: func.func @shuffle
// CHECK: %[[X:.+]] = cuts.reshape %arg0 {shape = array<i64: 2, 58, 784>} : (tensor<1x2x58x28x28xf32>) -> tensor<2x58x784xf32>
// CHECK: %[[T:.+]] = cuts.transpose %[[X]] {perm = array<i64: 1, 0, 2>} : (tensor<2x58x784xf32>) -> tensor<58x2x784xf32>
// CHECK: %[[Y:.+]] = cuts.reshape %[[T]] {shape = array<i64: 1, 58, 2, 28, 28>} : (tensor<58x2x784xf32>) -> tensor<1x58x2x28x28xf32>
// MaxViT's window partition does not merge into 4 axes: two swaps of
// adjacent blocks, each a transpose of rank 3 or 4 between views.
// CHECK: cuts.reshape %arg1 {shape = array<i64: 2, 3, 840>}
// CHECK: cuts.transpose %{{.+}} {perm = array<i64: 0, 2, 1>} : (tensor<2x3x840xf32>) -> tensor<2x840x3xf32>
// CHECK: cuts.reshape %{{.+}} {shape = array<i64: 8, 5, 6, 21>}
// CHECK: cuts.transpose %{{.+}} {perm = array<i64: 0, 2, 1, 3>} : (tensor<8x5x6x21xf32>) -> tensor<8x6x5x21xf32>
// CHECK-NOT: cuts.transpose
// CHECK: return %[[Y]]
func.func @shuffle(%x: tensor<1x2x58x28x28xf32>, %w: tensor<2x3x4x5x6x7xf32>) -> (tensor<1x58x2x28x28xf32>, tensor<2x4x6x5x7x3xf32>) {
  %0 = cuts.transpose %x {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x58x28x28xf32>) -> tensor<1x58x2x28x28xf32>
  %1 = cuts.transpose %w {perm = array<i64: 0, 2, 4, 3, 5, 1>} : (tensor<2x3x4x5x6x7xf32>) -> tensor<2x4x6x5x7x3xf32>
  return %0, %1 : tensor<1x58x2x28x28xf32>, tensor<2x4x6x5x7x3xf32>
}

// Rank above 4: a gather whose extent-1 axes drop (DistilBERT's mask) and an
// elementwise op whose axes merge (MaxViT's windows) become rank-4 ops
// between views.
// CHECK-LABEL: func.func @rank5
// CHECK-DAG: %[[D:.+]] = cuts.reshape %arg0 {shape = array<i64: 16>}
// CHECK-DAG: %[[I:.+]] = cuts.reshape %arg1 {shape = array<i64: 16>}
// CHECK: %[[G:.+]] = cuts.gather %[[D]], %[[I]] {axis = 0 : i64} : (tensor<16xi1>, tensor<16xi64>) -> tensor<16xi1>
// CHECK: cuts.reshape %[[G]] {shape = array<i64: 1, 1, 1, 16, 1>}
// CHECK-DAG: %[[A:.+]] = cuts.reshape %arg2 {shape = array<i64: 2, 12, 35>}
// CHECK-DAG: %[[B:.+]] = cuts.reshape %arg3 {shape = array<i64: 1, 12, 1>}
// CHECK: %[[M:.+]] = cuts.mul %[[A]], %[[B]] : (tensor<2x12x35xf32>, tensor<1x12x1xf32>) -> tensor<2x12x35xf32>
// CHECK: cuts.reshape %[[M]] {shape = array<i64: 2, 3, 4, 5, 7>}
func.func @rank5(%m: tensor<16x1xi1>, %i: tensor<1x1x1x16xi64>, %x: tensor<2x3x4x5x7xf32>, %s: tensor<3x4x1x1xf32>) -> (tensor<1x1x1x16x1xi1>, tensor<2x3x4x5x7xf32>) {
  %0 = cuts.gather %m, %i {axis = 0 : i64} : (tensor<16x1xi1>, tensor<1x1x1x16xi64>) -> tensor<1x1x1x16x1xi1>
  %1 = cuts.mul %x, %s : (tensor<2x3x4x5x7xf32>, tensor<3x4x1x1xf32>) -> tensor<2x3x4x5x7xf32>
  return %0, %1 : tensor<1x1x1x16x1xi1>, tensor<2x3x4x5x7xf32>
}

// RUN: %cuts-opt %s --split-input-file --verify-diagnostics
// One case per verifier / type-inference error. Type inference runs as the
// InferTypeOpInterface verifier: a failed inference reports its reason and
// then 'failed to infer returned types'; a declared result type that is not
// the inferred one reports both types.

// conv: W's input channels do not match X
func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{W [4x2x3x3] expects 2 input channels, X has 3}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// conv: group does not divide the channels
func.func @conv_group(%x: tensor<1x3x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{group 2 must divide the 3 input and 4 output channels}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// conv: pads needs begin and end per spatial axis
func.func @conv_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+2 {{'pads' has 2 entries, expected 4}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// conv: strides entries must be >= 1
func.func @conv_stride0(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{'strides' entries must be >= 1}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// conv: bias must have one entry per output channel
func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{B must have shape [4], got [3]}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// conv: X and W ranks
func.func @conv_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{Conv needs X and W of equal rank >= 3, got [1x3x8x8] and [4x3x3]}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w {dilations = array<i64: 1>, group = 1 : i64, pads = array<i64: 0, 0>, strides = array<i64: 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// conv: kernel larger than the padded input
func.func @conv_kernel(%x: tensor<1x3x2x2xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32> {
  // expected-error @+2 {{kernel larger than padded input on axis 2}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  return %0 : tensor<1x4x1x1xf32>
}

// -----

// conv: X and W element types
func.func @conv_types(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{X and W have different element types: f32 and f16}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// conv: declared result shape differs from the inferred one
func.func @conv_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+2 {{'cuts.conv' op inferred type(s) 'tensor<1x4x6x6xf32>' are incompatible with return type(s) of operation 'tensor<1x4x8x8xf32>'}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @conv_transpose_w(%x: tensor<1x4x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x2x7x7xf32> {
  // expected-error @+2 {{W [3x2x3x3] does not match 4 input channels in 1 groups}}
  // expected-error @+1 {{'cuts.conv_transpose' op failed to infer returned types}}
  %0 = cuts.conv_transpose %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  return %0 : tensor<1x2x7x7xf32>
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32> {
  // expected-error @+2 {{'output_padding' has 1 entries, expected 2}}
  // expected-error @+1 {{'cuts.conv_transpose' op failed to infer returned types}}
  %0 = cuts.conv_transpose %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  return %0 : tensor<1x2x7x7xf32>
}

// -----

func.func @matmul_inner(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+2 {{matmul inner dimensions differ: [3x4] x [5x6]}}
  // expected-error @+1 {{'cuts.matmul' op failed to infer returned types}}
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+2 {{shapes [2] and [3] do not broadcast}}
  // expected-error @+1 {{'cuts.matmul' op failed to infer returned types}}
  %0 = cuts.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

func.func @matmul_types(%a: tensor<3x4xf32>, %b: tensor<4x5xf16>) -> tensor<3x5xf32> {
  // expected-error @+2 {{A and B have different element types: f32 and f16}}
  // expected-error @+1 {{'cuts.matmul' op failed to infer returned types}}
  %0 = cuts.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf16>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4x5xf32>) -> tensor<5xf32> {
  // expected-error @+2 {{matmul operands must have rank >= 1}}
  // expected-error @+1 {{'cuts.matmul' op failed to infer returned types}}
  %0 = cuts.matmul %a, %b : (tensor<f32>, tensor<4x5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @matmul_add_grows(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<2x3x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+2 {{C of shape [2x3x5] does not broadcast to the product's shape [3x5]}}
  // expected-error @+1 {{'cuts.matmul_add' op failed to infer returned types}}
  %0 = cuts.matmul_add %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<2x3x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @gemm_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+2 {{Gemm operands must be 2-D, got [2x3x4] and [4x5]}}
  // expected-error @+1 {{'cuts.gemm' op failed to infer returned types}}
  %0 = cuts.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @gemm_inner(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+2 {{Gemm inner dimensions differ: 3 and 4}}
  // expected-error @+1 {{'cuts.gemm' op failed to infer returned types}}
  %0 = cuts.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = true, transB = false} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @gemm_c(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<4xf32>) -> tensor<3x5xf32> {
  // expected-error @+2 {{C of shape [4] does not broadcast to [3x5]}}
  // expected-error @+1 {{'cuts.gemm' op failed to infer returned types}}
  %0 = cuts.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<4xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{shapes [2x3] and [2] do not broadcast}}
  // expected-error @+1 {{'cuts.add' op failed to infer returned types}}
  %0 = cuts.add %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @add_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{operands have different element types: f32 and i32}}
  // expected-error @+1 {{'cuts.add' op failed to infer returned types}}
  %0 = cuts.add %a, %b : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @add_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3x3xf32> {
  // expected-error @+2 {{'cuts.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x3xf32>'}}
  // expected-error @+1 {{'cuts.add' op failed to infer returned types}}
  %0 = cuts.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @equal_result(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'cuts.equal' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = cuts.equal %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @where_types(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+2 {{X and Y have different element types: f32 and i64}}
  // expected-error @+1 {{'cuts.where' op failed to infer returned types}}
  %0 = cuts.where %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @where_broadcast(%c: tensor<2xi1>, %x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{shapes [2] and [3] do not broadcast}}
  // expected-error @+1 {{'cuts.where' op failed to infer returned types}}
  %0 = cuts.where %c, %x, %y : (tensor<2xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @sqrt_int(%x: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{'cuts.sqrt' op operand #0 must be statically shaped tensor of floating-point values, but got 'tensor<3xi32>'}}
  %0 = cuts.sqrt %x : (tensor<3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

func.func @relu_dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'cuts.relu' op operand #0 must be statically shaped tensor of floating-point or integer values, but got 'tensor<?xf32>'}}
  %0 = cuts.relu %x : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @and_float(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'cuts.and' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = cuts.and %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @gelu_approximate(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'cuts.gelu' op approximate must be "none" or "tanh", got "fast"}}
  %0 = cuts.gelu %x {approximate = "fast"} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+2 {{cannot reshape [2x3] (6 elements) to [4x2]}}
  // expected-error @+1 {{'cuts.reshape' op failed to infer returned types}}
  %0 = cuts.reshape %x {shape = array<i64: 4, 2>} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @reshape_unresolved(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error @+2 {{'shape' must be fully resolved (no -1)}}
  // expected-error @+1 {{'cuts.reshape' op failed to infer returned types}}
  %0 = cuts.reshape %x {shape = array<i64: -1>} : (tensor<2x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @transpose_perm(%x: tensor<2x3x4xf32>) -> tensor<2x2x4xf32> {
  // expected-error @+2 {{'perm' is not a permutation of [0, rank)}}
  // expected-error @+1 {{'cuts.transpose' op failed to infer returned types}}
  %0 = cuts.transpose %x {perm = array<i64: 0, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
  return %0 : tensor<2x2x4xf32>
}

// -----

func.func @transpose_perm_length(%x: tensor<2x3x4xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{'perm' has 2 entries for rank 3}}
  // expected-error @+1 {{'cuts.transpose' op failed to infer returned types}}
  %0 = cuts.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+2 {{Concat inputs [2x3] and [3x3] differ off axis 1}}
  // expected-error @+1 {{'cuts.concat' op failed to infer returned types}}
  %0 = cuts.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concat_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
  // expected-error @+2 {{Concat inputs differ in rank or element type}}
  // expected-error @+1 {{'cuts.concat' op failed to infer returned types}}
  %0 = cuts.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+2 {{axis 2 out of range [0, 2)}}
  // expected-error @+1 {{'cuts.concat' op failed to infer returned types}}
  %0 = cuts.concat %a, %b {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @split_sum(%x: tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>) {
  // expected-error @+2 {{'split' sums to 5, axis 1 has 6}}
  // expected-error @+1 {{'cuts.split' op failed to infer returned types}}
  %0:2 = cuts.split %x {axis = 1 : i64, split = array<i64: 2, 3>} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x3xf32>
}

// -----

func.func @split_results(%x: tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
  // expected-error @+2 {{'cuts.split' op inferred type(s) 'tensor<2x3xf32>', 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x2xf32>', 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'cuts.split' op failed to infer returned types}}
  %0:2 = cuts.split %x {axis = 1 : i64, split = array<i64: 3, 3>} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x4xf32>
}

// -----

func.func @slice_unnormalised(%x: tensor<4x6xf32>) -> tensor<2x6xf32> {
  // expected-error @+2 {{slice bounds on axis 0 are not normalised}}
  // expected-error @+1 {{'cuts.slice' op failed to infer returned types}}
  %0 = cuts.slice %x {ends = array<i64: -1, 6>, starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @slice_end_past_dim(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+2 {{slice bounds on axis 1 are not normalised}}
  // expected-error @+1 {{'cuts.slice' op failed to infer returned types}}
  %0 = cuts.slice %x {ends = array<i64: 4, 100>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @slice_step0(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+2 {{slice step must not be 0}}
  // expected-error @+1 {{'cuts.slice' op failed to infer returned types}}
  %0 = cuts.slice %x {ends = array<i64: 4, 6>, starts = array<i64: 0, 0>, steps = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @slice_entries(%x: tensor<4x6xf32>) -> tensor<2x6xf32> {
  // expected-error @+2 {{starts/ends/steps need one entry per axis (2)}}
  // expected-error @+1 {{'cuts.slice' op failed to infer returned types}}
  %0 = cuts.slice %x {ends = array<i64: 3>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @squeeze_non1(%x: tensor<1x3x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+2 {{cannot squeeze axis 1 of size 3}}
  // expected-error @+1 {{'cuts.squeeze' op failed to infer returned types}}
  %0 = cuts.squeeze %x {axes = array<i64: 1>} : (tensor<1x3x4xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

func.func @squeeze_empty(%x: tensor<1x3x4xf32>) -> tensor<1x3x4xf32> {
  // expected-error @+2 {{'axes' must not be empty}}
  // expected-error @+1 {{'cuts.squeeze' op failed to infer returned types}}
  %0 = cuts.squeeze %x {axes = array<i64>} : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  return %0 : tensor<1x3x4xf32>
}

// -----

func.func @unsqueeze_unsorted(%x: tensor<3x4xf32>) -> tensor<1x3x4x1xf32> {
  // expected-error @+2 {{'axes' must be sorted and unique}}
  // expected-error @+1 {{'cuts.unsqueeze' op failed to infer returned types}}
  %0 = cuts.unsqueeze %x {axes = array<i64: 3, 0>} : (tensor<3x4xf32>) -> tensor<1x3x4x1xf32>
  return %0 : tensor<1x3x4x1xf32>
}

// -----

func.func @unsqueeze_range(%x: tensor<3x4xf32>) -> tensor<3x4x1xf32> {
  // expected-error @+2 {{axis 3 out of range for rank 3}}
  // expected-error @+1 {{'cuts.unsqueeze' op failed to infer returned types}}
  %0 = cuts.unsqueeze %x {axes = array<i64: 3>} : (tensor<3x4xf32>) -> tensor<3x4x1xf32>
  return %0 : tensor<3x4x1xf32>
}

// -----

func.func @gather_axis(%d: tensor<5x4xf32>, %i: tensor<2xi64>) -> tensor<5x2xf32> {
  // expected-error @+2 {{axis 2 out of range [0, 2)}}
  // expected-error @+1 {{'cuts.gather' op failed to infer returned types}}
  %0 = cuts.gather %d, %i {axis = 2 : i64} : (tensor<5x4xf32>, tensor<2xi64>) -> tensor<5x2xf32>
  return %0 : tensor<5x2xf32>
}

// -----

func.func @gather_index_type(%d: tensor<5x4xf32>, %i: tensor<2xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'cuts.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = cuts.gather %d, %i {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @gather_elements_rank(%d: tensor<3x4xf32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+2 {{data and indices must have the same rank}}
  // expected-error @+1 {{'cuts.gather_elements' op failed to infer returned types}}
  %0 = cuts.gather_elements %d, %i {axis = 0 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @gather_nd_last(%d: tensor<2x3xf32>, %i: tensor<4x3xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{indices' last axis (3) indexes more axes than data has after batch_dims}}
  // expected-error @+1 {{'cuts.gather_nd' op failed to infer returned types}}
  %0 = cuts.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<4x3xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_nd_batch(%d: tensor<2x3x4xf32>, %i: tensor<3x1xi64>) -> tensor<3x4xf32> {
  // expected-error @+2 {{data and indices differ on batch axis 0}}
  // expected-error @+1 {{'cuts.gather_nd' op failed to infer returned types}}
  %0 = cuts.gather_nd %d, %i {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<3x1xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @pad_mode(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'cuts.pad' op mode must be constant, reflect, edge or wrap, got "mirror"}}
  %0 = cuts.pad %x {mode = "mirror", pads = array<i64: 1, 0, 1, 0>, value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @pad_reflect(%x: tensor<2x3xf32>) -> tensor<6x3xf32> {
  // expected-error @+1 {{'cuts.pad' op reflect pads on axis 0 must be smaller than its size 2}}
  %0 = cuts.pad %x {mode = "reflect", pads = array<i64: 2, 0, 2, 0>, value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<6x3xf32>
  return %0 : tensor<6x3xf32>
}

// -----

func.func @pad_entries(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'pads' needs 4 entries, has 2}}
  %0 = cuts.pad %x {mode = "constant", pads = array<i64: 1, 1>, value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @pad_negative(%x: tensor<2x3xf32>) -> tensor<0x3xf32> {
  // expected-error @+2 {{negative pads remove more than axis 0 holds}}
  // expected-error @+1 {{'cuts.pad' op failed to infer returned types}}
  %0 = cuts.pad %x {mode = "constant", pads = array<i64: -2, 0, -1, 0>, value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<0x3xf32>
  return %0 : tensor<0x3xf32>
}

// -----

func.func @constant_type() -> tensor<3xf32> {
  // expected-error @+1 {{'cuts.constant' op value type 'tensor<2xf32>' differs from result type 'tensor<3xf32>'}}
  %0 = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @constant_element_type() -> tensor<2xf16> {
  // expected-error @+1 {{'cuts.constant' op value type 'tensor<2xf32>' differs from result type 'tensor<2xf16>'}}
  %0 = cuts.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

func.func @constant_of_shape_value() -> tensor<2x3xf32> {
  // expected-error @+2 {{'value' must hold exactly one element}}
  // expected-error @+1 {{'cuts.constant_of_shape' op failed to infer returned types}}
  %0 = cuts.constant_of_shape {shape = array<i64: 2, 3>, value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @constant_of_shape_type() -> tensor<2x3xi64> {
  // expected-error @+2 {{'cuts.constant_of_shape' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xi64>'}}
  // expected-error @+1 {{'cuts.constant_of_shape' op failed to infer returned types}}
  %0 = cuts.constant_of_shape {shape = array<i64: 2, 3>, value = dense<1.0> : tensor<1xf32>} : () -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

func.func @shape_bounds(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+2 {{start/end must satisfy 0 <= start <= end <= rank}}
  // expected-error @+1 {{'cuts.shape' op failed to infer returned types}}
  %0 = cuts.shape %x {end = 3 : i64, start = 1 : i64} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @range_delta(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+2 {{range needs finite start, limit and a non-zero delta}}
  // expected-error @+1 {{'cuts.range' op failed to infer returned types}}
  %0 = cuts.range {delta = 0.0 : f64, element_type = i64, limit = 2.0 : f64, start = 0.0 : f64} : () -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @range_length() -> tensor<4xi64> {
  // expected-error @+2 {{'cuts.range' op inferred type(s) 'tensor<5xi64>' are incompatible with return type(s) of operation 'tensor<4xi64>'}}
  // expected-error @+1 {{'cuts.range' op failed to infer returned types}}
  %0 = cuts.range {delta = 2.0 : f64, element_type = i64, limit = 10.0 : f64, start = 0.0 : f64} : () -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @cast_index(%x: tensor<3xf32>) -> tensor<3xindex> {
  // expected-error @+2 {{cannot cast to index}}
  // expected-error @+1 {{'cuts.cast' op failed to infer returned types}}
  %0 = cuts.cast %x {to = index} : (tensor<3xf32>) -> tensor<3xindex>
  return %0 : tensor<3xindex>
}

// -----

func.func @cast_result(%x: tensor<3xf32>) -> tensor<3xi32> {
  // expected-error @+2 {{'cuts.cast' op inferred type(s) 'tensor<3xi64>' are incompatible with return type(s) of operation 'tensor<3xi32>'}}
  // expected-error @+1 {{'cuts.cast' op failed to infer returned types}}
  %0 = cuts.cast %x {to = i64} : (tensor<3xf32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

func.func @batch_norm_params(%x: tensor<1x4x6x6xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<3xf32>, %v: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{scale, B, mean and var must have shape [4], got [3]}}
  // expected-error @+1 {{'cuts.batch_normalization' op failed to infer returned types}}
  %0 = cuts.batch_normalization %x, %s, %b, %m, %v {epsilon = 1.0e-5 : f32} : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @layer_norm_axis(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) {
  // expected-error @+2 {{axis 3 out of range [0, 3)}}
  // expected-error @+1 {{'cuts.layer_normalization' op failed to infer returned types}}
  %0:3 = cuts.layer_normalization %x, %s {axis = 3 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
}

// -----

func.func @layer_norm_scale(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) {
  // expected-error @+2 {{scale/B of shape [3] does not broadcast to the normalised shape [4]}}
  // expected-error @+1 {{'cuts.layer_normalization' op failed to infer returned types}}
  %0:3 = cuts.layer_normalization %x, %s {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
}

// -----

func.func @layer_norm_stats(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  // expected-error @+2 {{'cuts.layer_normalization' op inferred type(s) 'tensor<2x3x4xf32>', 'tensor<2x3x1xf32>', 'tensor<2x3x1xf32>' are incompatible with return type(s) of operation 'tensor<2x3x4xf32>', 'tensor<2x3xf32>', 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'cuts.layer_normalization' op failed to infer returned types}}
  %0:3 = cuts.layer_normalization %x, %s {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

func.func @softmax_axis(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{axis -1 out of range [0, 2)}}
  // expected-error @+1 {{'cuts.softmax' op failed to infer returned types}}
  %0 = cuts.softmax %x {axis = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @max_pool_kernel(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+2 {{'kernel_shape' has 1 entries, expected 2}}
  // expected-error @+1 {{'cuts.max_pool' op failed to infer returned types}}
  %0 = cuts.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @max_pool_rank(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
  // expected-error @+2 {{pooling input must have rank >= 3, got [3x8]}}
  // expected-error @+1 {{'cuts.max_pool' op failed to infer returned types}}
  %0 = cuts.max_pool %x {ceil_mode = false, dilations = array<i64>, kernel_shape = array<i64>, pads = array<i64>, strides = array<i64>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @max_pool_ceil(%x: tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32> {
  // expected-error @+2 {{'cuts.max_pool' op inferred type(s) 'tensor<1x3x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x3x3x3xf32>'}}
  // expected-error @+1 {{'cuts.max_pool' op failed to infer returned types}}
  %0 = cuts.max_pool %x {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----

func.func @average_pool_window(%x: tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32> {
  // expected-error @+2 {{pooling window larger than padded input on axis 2}}
  // expected-error @+1 {{'cuts.average_pool' op failed to infer returned types}}
  %0 = cuts.average_pool %x {ceil_mode = false, count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32>
  return %0 : tensor<1x3x1x1xf32>
}

// -----

func.func @global_average_pool_rank(%x: tensor<3x8xf32>) -> tensor<3x1xf32> {
  // expected-error @+2 {{GlobalAveragePool input must have rank >= 3}}
  // expected-error @+1 {{'cuts.global_average_pool' op failed to infer returned types}}
  %0 = cuts.global_average_pool %x : (tensor<3x8xf32>) -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}

// -----

func.func @reduce_empty(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'axes' must not be empty}}
  // expected-error @+1 {{'cuts.reduce_sum' op failed to infer returned types}}
  %0 = cuts.reduce_sum %x {axes = array<i64>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_axis(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{axis -1 out of range for rank 2}}
  // expected-error @+1 {{'cuts.reduce_mean' op failed to infer returned types}}
  %0 = cuts.reduce_mean %x {axes = array<i64: -1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_keepdims(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'cuts.reduce_max' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'cuts.reduce_max' op failed to infer returned types}}
  %0 = cuts.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @flatten_axis(%x: tensor<2x3xf32>) -> tensor<6x1xf32> {
  // expected-error @+2 {{axis 3 out of range [0, 2]}}
  // expected-error @+1 {{'cuts.flatten' op failed to infer returned types}}
  %0 = cuts.flatten %x {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<6x1xf32>
  return %0 : tensor<6x1xf32>
}

// -----

func.func @expand_shape(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+2 {{shapes [3x2] and [3x4] do not broadcast}}
  // expected-error @+1 {{'cuts.expand' op failed to infer returned types}}
  %0 = cuts.expand %x {shape = array<i64: 3, 4>} : (tensor<3x2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @identity_result(%x: tensor<3xf32>) -> tensor<3xf16> {
  // expected-error @+2 {{'cuts.identity' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<3xf16>'}}
  // expected-error @+1 {{'cuts.identity' op failed to infer returned types}}
  %0 = cuts.identity %x : (tensor<3xf32>) -> tensor<3xf16>
  return %0 : tensor<3xf16>
}

// -----

// Element types, ranks and bounds that ONNX forbids.

// ConvTranspose: X and W must have the same element type (ONNX T); conv
// checks this, conv_transpose does not.
func.func @conv_transpose_types(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf16>) -> tensor<1x2x7x7xf32> {
  // expected-error @+2 {{element type}}
  // expected-error @+1 {{'cuts.conv_transpose' op failed to infer returned types}}
  %0 = cuts.conv_transpose %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf16>) -> tensor<1x2x7x7xf32>
  return %0 : tensor<1x2x7x7xf32>
}

// -----

// Conv: the bias has X's element type (ONNX T); only its shape is checked.
func.func @conv_bias_type(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf16>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{element type}}
  // expected-error @+1 {{'cuts.conv' op failed to infer returned types}}
  %0 = cuts.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf16>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// Gemm: C has A's element type (ONNX T); only its shape is checked.
func.func @gemm_c_type(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf16>) -> tensor<3x5xf32> {
  // expected-error @+2 {{element type}}
  // expected-error @+1 {{'cuts.gemm' op failed to infer returned types}}
  %0 = cuts.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5xf16>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Gemm: C must broadcast unidirectionally to [M, N], so its rank is <= 2.
// The check compares only the first two entries of the broadcast shape, so a
// rank-3 C of ones passes when M = N = 1.
func.func @gemm_c_rank(%a: tensor<1x4xf32>, %b: tensor<4x1xf32>, %c: tensor<1x1x1xf32>) -> tensor<1x1xf32> {
  // expected-error @+2 {{C of shape [1x1x1] does not broadcast to [1x1]}}
  // expected-error @+1 {{'cuts.gemm' op failed to infer returned types}}
  %0 = cuts.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<1x4xf32>, tensor<4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// LayerNormalization: scale and B have X's element type (ONNX T).
func.func @layer_norm_scale_type(%x: tensor<2x4xf32>, %s: tensor<4xf16>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>) {
  // expected-error @+2 {{element type}}
  // expected-error @+1 {{'cuts.layer_normalization' op failed to infer returned types}}
  %0:3 = cuts.layer_normalization %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4xf32>, tensor<4xf16>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>
}

// -----

// GatherElements: off the gather axis, indices may not be larger than data
// (the output position is also the data position there). Only the ranks are
// checked; the folder then reads past the end of the data.
func.func @gather_elements_off_axis(%d: tensor<2x2xf32>, %i: tensor<3x2xi64>) -> tensor<3x2xf32> {
  // expected-error @+2 {{indices}}
  // expected-error @+1 {{'cuts.gather_elements' op failed to infer returned types}}
  %0 = cuts.gather_elements %d, %i {axis = 1 : i64} : (tensor<2x2xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Pad: PadOp::verify (the reflect bound) runs before type inference and
// indexes pads[d + rank] without checking that pads has 2 * rank entries: it
// reads past the attribute and reports a bogus reflect error.
func.func @pad_reflect_entries(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'pads' needs 4 entries, has 2}}
  %0 = cuts.pad %x {mode = "reflect", pads = array<i64: 1, 1>, value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Expand: shape entries must be >= 0 (like constant_of_shape's). A negative
// entry broadcasts against 1 into the invalid type tensor<-1xf32>, which
// inference builds and then reports as the "inferred type".
func.func @expand_negative_shape(%x: tensor<1xf32>) -> tensor<1xf32> {
  // expected-error @+2 {{'shape' entries must be >= 0}}
  // expected-error @+1 {{'cuts.expand' op failed to infer returned types}}
  %0 = cuts.expand %x {shape = array<i64: -1>} : (tensor<1xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

// A group's results are what it yields.
func.func @group_yield_mismatch(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'cuts.group' op yields 1 values whose types are not the group's results}}
  %0 = cuts.group attributes {fusion = "none", enumerated = 1 : i64, kept = 1 : i64, pul = 1.0 : f64, time_us = 1.0 : f64} : tensor<2xf32> {
    %1 = cuts.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    cuts.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

// cuts.yield ends a group and nothing else.
func.func @yield_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'cuts.yield' op expects parent op 'cuts.group'}}
  cuts.yield %x : tensor<4xf32>
}

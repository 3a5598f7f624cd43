//===- CutsOps.td - ops of the cuts graph dialect ----------*- tablegen -*-===//
//
// One op per covered ONNX operator. Read this file to learn the op set: each
// op says which ONNX operator it is, how its attributes are normalised, and
// what its verifier checks. Result types are inferred (InferTypeOpAdaptor), so
// a module whose result types disagree with the operands fails to verify.
//
//===----------------------------------------------------------------------===//

#ifndef CUTS_OPS_TD
#define CUTS_OPS_TD

include "cuts/Dialect/Cuts/CutsDialect.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Cuts_Tensor : StaticShapeTensorOf<[AnyType]>;
def Cuts_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def Cuts_NumTensor : StaticShapeTensorOf<[AnyFloat, AnyInteger]>;
def Cuts_BoolTensor : StaticShapeTensorOf<[I1]>;
def Cuts_IndexTensor : StaticShapeTensorOf<[I32, I64]>;

//===----------------------------------------------------------------------===//
// Traits: what the compiler classifies ops by (CutsOps.h, cuts::OpTrait)
//===----------------------------------------------------------------------===//

// Each result element is a function of the operands' elements at the same
// position, operands broadcast numpy-style: fusable in registers.
def Cuts_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::cuts::OpTrait";
}
// Each result element is one operand element (or a pad value), moved: read
// through an index function rather than computed.
def Cuts_DataMovement : NativeOpTrait<"DataMovement"> {
  let cppNamespace = "::cuts::OpTrait";
}
// The result is the operand's memory, re-described: no kernel, no cost.
def Cuts_View : NativeOpTrait<"View"> {
  let cppNamespace = "::cuts::OpTrait";
}

//===----------------------------------------------------------------------===//
// Op classes
//===----------------------------------------------------------------------===//

// Every cuts op is a pure function of its operands; the generic assembly keeps
// the printed graph uniform: `%y = cuts.op %a, %b {attrs} : (types) -> type`.
class Cuts_Op<string mnemonic, list<Trait> traits = []>
    : Op<Cuts_Dialect, mnemonic, !listconcat([Pure, InferTypeOpAdaptor], traits)> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

class Cuts_UnaryOp<string mnemonic, string onnx, Type operandType,
                   list<Trait> traits = []>
    : Cuts_Op<mnemonic, !listconcat([Cuts_Elementwise], traits)> {
  let summary = "ONNX " # onnx # " (elementwise)";
  let arguments = (ins operandType:$X);
  let results = (outs operandType:$Y);
  let hasFolder = 1;
}

class Cuts_BinaryOp<string mnemonic, string onnx, Type operandType,
                    Type resultType, list<Trait> traits = []>
    : Cuts_Op<mnemonic, !listconcat([Cuts_Elementwise], traits)> {
  let summary = "ONNX " # onnx # " (elementwise, multidirectional broadcasting)";
  let description = [{
    Numpy-style broadcasting of A and B; both have the same element type.
  }];
  let arguments = (ins operandType:$A, operandType:$B);
  let results = (outs resultType:$C);
  let hasFolder = 1;
}

class Cuts_ReduceOp<string mnemonic, string onnx> : Cuts_Op<mnemonic> {
  let summary = "ONNX " # onnx;
  let description = [{
    `axes` is sorted, non-negative and never empty after import: ONNX's
    "empty axes" (reduce everything) is expanded to every axis, and
    noop_with_empty_axes=1 with empty axes imports as no op at all. The axes
    operand of opset 18 becomes this attribute.
  }];
  let arguments = (ins Cuts_NumTensor:$data, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keepdims);
  let results = (outs Cuts_NumTensor:$reduced);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Constants and shapes
//===----------------------------------------------------------------------===//

def Cuts_ConstantOp : Op<Cuts_Dialect, "constant", [ConstantLike, Pure]> {
  let summary = "ONNX Constant and graph initializers";
  let description = [{
    Every value_* form of ONNX Constant, and every initializer, becomes
    `value`. Imported tensors are `dense_resource` blobs (never printed
    inline); small results of constant folding are inline `dense` values.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Cuts_Tensor:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Cuts_ConstantOfShapeOp : Cuts_Op<"constant_of_shape"> {
  let summary = "ONNX ConstantOfShape";
  let description = [{
    The shape input becomes the `shape` attribute; `value` is a one-element
    tensor whose element type is the result's.
  }];
  let arguments = (ins DenseI64ArrayAttr:$shape, ElementsAttr:$value);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

def Cuts_ShapeOp : Cuts_Op<"shape"> {
  let summary = "ONNX Shape";
  let description = [{
    `start` and `end` are normalised to 0 <= start <= end <= rank. With static
    shapes this op always folds to a constant.
  }];
  let arguments = (ins Cuts_Tensor:$data, I64Attr:$start, I64Attr:$end);
  let results = (outs StaticShapeTensorOf<[I64]>:$shape);
  let hasFolder = 1;
}

def Cuts_RangeOp : Cuts_Op<"range"> {
  let summary = "ONNX Range";
  let description = [{
    The scalar inputs start, limit and delta must be constant at import (the
    result length depends on them); they become attributes and the result
    element type says whether they are read as integers or floats.
  }];
  let arguments = (ins F64Attr:$start, F64Attr:$limit, F64Attr:$delta,
                       TypeAttr:$element_type);
  let results = (outs Cuts_NumTensor:$output);
  let hasFolder = 1;
}

def Cuts_IdentityOp : Cuts_Op<"identity", [Cuts_View]> {
  let summary = "ONNX Identity";
  let arguments = (ins Cuts_Tensor:$input);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

def Cuts_AllReduceOp : Cuts_Op<"all_reduce"> {
  let summary = "The sum of X over the ranks of a tensor-parallel plan";
  let description = [{
    Not an ONNX operator: `cuts-tensor-parallel` places it where a product
    split by rows leaves each of the `ranks` ranks a partial sum. Every
    rank runs it on its own X; each gets the sum of all ranks' X.
  }];
  let arguments = (ins Cuts_FloatTensor:$X, I64Attr:$ranks);
  let results = (outs Cuts_FloatTensor:$Y);
}

def Cuts_DropoutOp : Cuts_Op<"dropout", [Cuts_View]> {
  let summary = "ONNX Dropout, inference mode";
  let description = [{
    Only inference is supported: the op is the identity. ratio and
    training_mode are dropped at import (training_mode = true is rejected);
    a used mask output is imported as a constant all-true tensor.
  }];
  let arguments = (ins Cuts_FloatTensor:$data);
  let results = (outs Cuts_FloatTensor:$output);
  let hasFolder = 1;
}

def Cuts_CastOp : Cuts_Op<"cast", [Cuts_Elementwise]> {
  let summary = "ONNX Cast";
  let arguments = (ins Cuts_Tensor:$input, TypeAttr:$to);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def Cuts_AddOp : Cuts_BinaryOp<"add", "Add", Cuts_NumTensor, Cuts_NumTensor, [Commutative]>;
def Cuts_SubOp : Cuts_BinaryOp<"sub", "Sub", Cuts_NumTensor, Cuts_NumTensor>;
def Cuts_MulOp : Cuts_BinaryOp<"mul", "Mul", Cuts_NumTensor, Cuts_NumTensor, [Commutative]>;
def Cuts_DivOp : Cuts_BinaryOp<"div", "Div", Cuts_NumTensor, Cuts_NumTensor>;
// ONNX Mod: fmod = 0 (the remainder takes the divisor's sign, as Python's
// %) and fmod = 1 (C's fmod: the dividend's sign). An integer remainder by
// 0 is 0; a float one is NaN, as fmod's.
def Cuts_ModOp : Cuts_BinaryOp<"mod", "Mod", Cuts_NumTensor, Cuts_NumTensor>;
def Cuts_FModOp : Cuts_BinaryOp<"fmod", "Mod", Cuts_NumTensor, Cuts_NumTensor>;
// ONNX Max and Min of two inputs (the importer folds more). Floats compare
// as fmaxf and fminf do: a NaN operand gives the other.
def Cuts_MaxOp : Cuts_BinaryOp<"max", "Max", Cuts_NumTensor, Cuts_NumTensor, [Commutative]>;
def Cuts_MinOp : Cuts_BinaryOp<"min", "Min", Cuts_NumTensor, Cuts_NumTensor, [Commutative]>;
def Cuts_EqualOp : Cuts_BinaryOp<"equal", "Equal", Cuts_Tensor, Cuts_BoolTensor, [Commutative]>;
def Cuts_LessOp : Cuts_BinaryOp<"less", "Less", Cuts_NumTensor, Cuts_BoolTensor>;

def Cuts_AndOp : Cuts_BinaryOp<"and", "And", Cuts_BoolTensor, Cuts_BoolTensor, [Commutative]>;
def Cuts_OrOp : Cuts_BinaryOp<"or", "Or", Cuts_BoolTensor, Cuts_BoolTensor, [Commutative]>;
def Cuts_XorOp : Cuts_BinaryOp<"xor", "Xor", Cuts_BoolTensor, Cuts_BoolTensor, [Commutative]>;
def Cuts_NotOp : Cuts_UnaryOp<"not", "Not", Cuts_BoolTensor>;

def Cuts_PowOp : Cuts_Op<"pow", [Cuts_Elementwise]> {
  let summary = "ONNX Pow (elementwise, multidirectional broadcasting)";
  let description = [{
    The result has X's element type; Y may have another numeric type.
  }];
  let arguments = (ins Cuts_NumTensor:$X, Cuts_NumTensor:$Y);
  let results = (outs Cuts_NumTensor:$Z);
  let hasFolder = 1;
}

def Cuts_WhereOp : Cuts_Op<"where", [Cuts_Elementwise]> {
  let summary = "ONNX Where (multidirectional broadcasting of all three)";
  let arguments = (ins Cuts_BoolTensor:$condition, Cuts_Tensor:$X, Cuts_Tensor:$Y);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

def Cuts_SqrtOp : Cuts_UnaryOp<"sqrt", "Sqrt", Cuts_FloatTensor>;
def Cuts_ExpOp : Cuts_UnaryOp<"exp", "Exp", Cuts_FloatTensor>;
def Cuts_LogOp : Cuts_UnaryOp<"log", "Log", Cuts_FloatTensor>;
def Cuts_ErfOp : Cuts_UnaryOp<"erf", "Erf", Cuts_FloatTensor>;
def Cuts_TanhOp : Cuts_UnaryOp<"tanh", "Tanh", Cuts_FloatTensor>;
def Cuts_SigmoidOp : Cuts_UnaryOp<"sigmoid", "Sigmoid", Cuts_FloatTensor>;
def Cuts_ReluOp : Cuts_UnaryOp<"relu", "Relu", Cuts_NumTensor>;
def Cuts_NegOp : Cuts_UnaryOp<"neg", "Neg", Cuts_NumTensor>;
def Cuts_AbsOp : Cuts_UnaryOp<"abs", "Abs", Cuts_NumTensor>;
def Cuts_ReciprocalOp : Cuts_UnaryOp<"reciprocal", "Reciprocal", Cuts_FloatTensor>;
def Cuts_HardSwishOp : Cuts_UnaryOp<"hard_swish", "HardSwish", Cuts_FloatTensor>;
def Cuts_SinOp : Cuts_UnaryOp<"sin", "Sin", Cuts_FloatTensor>;
def Cuts_CosOp : Cuts_UnaryOp<"cos", "Cos", Cuts_FloatTensor>;
def Cuts_TanOp : Cuts_UnaryOp<"tan", "Tan", Cuts_FloatTensor>;
def Cuts_AsinOp : Cuts_UnaryOp<"asin", "Asin", Cuts_FloatTensor>;
def Cuts_AcosOp : Cuts_UnaryOp<"acos", "Acos", Cuts_FloatTensor>;
def Cuts_AtanOp : Cuts_UnaryOp<"atan", "Atan", Cuts_FloatTensor>;
def Cuts_SinhOp : Cuts_UnaryOp<"sinh", "Sinh", Cuts_FloatTensor>;
def Cuts_CoshOp : Cuts_UnaryOp<"cosh", "Cosh", Cuts_FloatTensor>;
def Cuts_AsinhOp : Cuts_UnaryOp<"asinh", "Asinh", Cuts_FloatTensor>;
def Cuts_AcoshOp : Cuts_UnaryOp<"acosh", "Acosh", Cuts_FloatTensor>;
def Cuts_AtanhOp : Cuts_UnaryOp<"atanh", "Atanh", Cuts_FloatTensor>;
def Cuts_FloorOp : Cuts_UnaryOp<"floor", "Floor", Cuts_FloatTensor>;
def Cuts_CeilOp : Cuts_UnaryOp<"ceil", "Ceil", Cuts_FloatTensor>;
def Cuts_RoundOp : Cuts_UnaryOp<"round", "Round", Cuts_FloatTensor> {
  let description = [{ Halves round to even, as ONNX Round does. }];
}

def Cuts_LeakyReluOp : Cuts_UnaryOp<"leaky_relu", "LeakyRelu", Cuts_FloatTensor> {
  let arguments = (ins Cuts_FloatTensor:$X, F32Attr:$alpha);
}

def Cuts_HardSigmoidOp : Cuts_UnaryOp<"hard_sigmoid", "HardSigmoid", Cuts_FloatTensor> {
  let arguments = (ins Cuts_FloatTensor:$X, F32Attr:$alpha, F32Attr:$beta);
}

def Cuts_GeluOp : Cuts_UnaryOp<"gelu", "Gelu", Cuts_FloatTensor> {
  let description = [{ `approximate` is "none" (erf form) or "tanh". }];
  let arguments = (ins Cuts_FloatTensor:$X, StrAttr:$approximate);
  let hasVerifier = 1;
}

def Cuts_ClipOp : Cuts_UnaryOp<"clip", "Clip", Cuts_NumTensor> {
  let description = [{
    The bounds, attributes before opset 11 and optional inputs since, are
    attributes here; they must be constant at import. An absent bound is
    absent here too.
  }];
  let arguments = (ins Cuts_NumTensor:$X, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
}

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

def Cuts_MatMulOp : Cuts_Op<"matmul"> {
  let summary = "ONNX MatMul (numpy matmul: batched, broadcasting, 1-D operands)";
  let description = [{
    With `transB` (not ONNX: `cuts-transpose-weights` sets it), B is stored
    transposed: its last two axes are [N, K]. Y may be fp32 where A and B
    are fp16 or bf16 (not ONNX: the accumulators stored as they are, as
    `cuts-split-k` makes its partial products).
  }];
  let arguments = (ins Cuts_NumTensor:$A, Cuts_NumTensor:$B, UnitAttr:$transB);
  let results = (outs Cuts_NumTensor:$Y);
  let hasFolder = 1;
  let extraClassDeclaration = [{
    static bool isCompatibleReturnTypes(mlir::TypeRange inferred,
                                        mlir::TypeRange actual);
  }];
}

def Cuts_MatMulAddOp : Cuts_Op<"matmul_add"> {
  let summary = "MatMul followed by Add: the Gemm-like op of batched graphs";
  let description = [{
    Not an ONNX operator: `cuts-fuse-matmul-add` forms it from MatMul whose
    only use is an Add. Y = matmul(A, B) + C, where C broadcasts to the
    product's shape without changing it (a bias, or a residual). `transB`
    as for cuts.matmul.
  }];
  let arguments = (ins Cuts_FloatTensor:$A, Cuts_FloatTensor:$B, Cuts_FloatTensor:$C,
                       UnitAttr:$transB);
  let results = (outs Cuts_FloatTensor:$Y);
}

def Cuts_GemmOp : Cuts_Op<"gemm"> {
  let summary = "ONNX Gemm: Y = alpha * op(A) * op(B) + beta * C";
  let arguments = (ins Cuts_FloatTensor:$A, Cuts_FloatTensor:$B,
                       Optional<Cuts_FloatTensor>:$C, F32Attr:$alpha,
                       F32Attr:$beta, BoolAttr:$transA, BoolAttr:$transB);
  let results = (outs Cuts_FloatTensor:$Y);
  let hasFolder = 1;
}

def Cuts_ConvOp : Cuts_Op<"conv"> {
  let summary = "ONNX Conv (N spatial dims, groups, dilations)";
  let description = [{
    `pads` holds the begin pads of every spatial axis, then the end pads;
    auto_pad is resolved to explicit pads at import. kernel_shape is W's
    spatial shape. group = C gives a depthwise convolution.

    With `channels_last` (set by cuts-channels-last, never by the importer)
    the channels are the innermost axis: X is N x spatial x C, W is
    M x kernel x C/group and Y is N x spatial x M.
  }];
  let arguments = (ins Cuts_FloatTensor:$X, Cuts_FloatTensor:$W,
                       Optional<Cuts_FloatTensor>:$B,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group,
                       UnitAttr:$channels_last);
  let results = (outs Cuts_FloatTensor:$Y);
}

def Cuts_ConvSumOp : Cuts_Op<"conv_sum"> {
  let summary = "Two channels-last 1 x 1 convolutions summed, as one product";
  let description = [{
    Y = conv(X, W[..., :C]) + conv(X2, W[..., C:]) + B: X is N x H x W x C,
    X2 N x H2 x W2 x C2, W M x 1 x 1 x (C + C2), Y N x OH x OW x M; X is
    read at `strides`, X2 at `strides2`, neither padded. cuts-fuse-conv-sum
    makes it from a residual block's last conv and its projection shortcut:
    one implicit GEMM whose K runs through both inputs, so the first conv's
    result is never stored and read back.
  }];
  let arguments = (ins Cuts_FloatTensor:$X, Cuts_FloatTensor:$X2,
                       Cuts_FloatTensor:$W, Optional<Cuts_FloatTensor>:$B,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$strides2);
  let results = (outs Cuts_FloatTensor:$Y);
}

def Cuts_ConvTransposeOp : Cuts_Op<"conv_transpose"> {
  let summary = "ONNX ConvTranspose";
  let description = [{
    output_shape and auto_pad are resolved to explicit `pads` at import;
    `output_padding` stays (it only adds to the end of each spatial axis).
  }];
  let arguments = (ins Cuts_FloatTensor:$X, Cuts_FloatTensor:$W,
                       Optional<Cuts_FloatTensor>:$B,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$output_padding, I64Attr:$group);
  let results = (outs Cuts_FloatTensor:$Y);
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, pooling, reductions
//===----------------------------------------------------------------------===//

def Cuts_BatchNormalizationOp : Cuts_Op<"batch_normalization"> {
  let summary = "ONNX BatchNormalization, inference mode";
  let arguments = (ins Cuts_FloatTensor:$X, Cuts_FloatTensor:$scale,
                       Cuts_FloatTensor:$B, Cuts_FloatTensor:$mean,
                       Cuts_FloatTensor:$var, F32Attr:$epsilon);
  let results = (outs Cuts_FloatTensor:$Y);
}

def Cuts_LayerNormalizationOp : Cuts_Op<"layer_normalization"> {
  let summary = "ONNX LayerNormalization (normalises axes [axis, rank))";
  let description = [{
    `axis` is non-negative. Mean and InvStdDev (ONNX's optional outputs)
    are always present, with X's shape reduced to 1 on the normalised axes
    and f32 elements (stash_type 1, the only one ONNX defines); code
    generation computes only the results that are used.
  }];
  let arguments = (ins Cuts_FloatTensor:$X, Cuts_FloatTensor:$scale,
                       Optional<Cuts_FloatTensor>:$B, I64Attr:$axis,
                       F32Attr:$epsilon);
  let results = (outs Cuts_FloatTensor:$Y, StaticShapeTensorOf<[F32]>:$mean,
                      StaticShapeTensorOf<[F32]>:$inv_std_dev);
}

def Cuts_SoftmaxOp : Cuts_Op<"softmax"> {
  let summary = "ONNX Softmax (opset 13 semantics: along one axis)";
  let arguments = (ins Cuts_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Cuts_FloatTensor:$output);
}

def Cuts_MaxPoolOp : Cuts_Op<"max_pool"> {
  let summary = "ONNX MaxPool (the Indices output is not supported)";
  let description = [{
    With `channels_last` (cuts-channels-last) X and Y are N x spatial x C.
  }];
  let arguments = (ins Cuts_NumTensor:$X, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, BoolAttr:$ceil_mode,
                       UnitAttr:$channels_last);
  let results = (outs Cuts_NumTensor:$Y);
}

def Cuts_AveragePoolOp : Cuts_Op<"average_pool"> {
  let summary = "ONNX AveragePool";
  let description = [{
    With `channels_last` (cuts-channels-last) X and Y are N x spatial x C.
  }];
  let arguments = (ins Cuts_FloatTensor:$X, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, BoolAttr:$ceil_mode,
                       BoolAttr:$count_include_pad, UnitAttr:$channels_last);
  let results = (outs Cuts_FloatTensor:$Y);
}

def Cuts_GlobalAveragePoolOp : Cuts_Op<"global_average_pool"> {
  let summary = "ONNX GlobalAveragePool";
  let arguments = (ins Cuts_FloatTensor:$X);
  let results = (outs Cuts_FloatTensor:$Y);
}

def Cuts_ReduceMeanOp : Cuts_ReduceOp<"reduce_mean", "ReduceMean">;
def Cuts_ReduceSumOp : Cuts_ReduceOp<"reduce_sum", "ReduceSum">;
def Cuts_ReduceMaxOp : Cuts_ReduceOp<"reduce_max", "ReduceMax">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Cuts_FlattenOp : Cuts_Op<"flatten", [Cuts_View]> {
  let summary = "ONNX Flatten (axis normalised to [0, rank])";
  let arguments = (ins Cuts_Tensor:$input, I64Attr:$axis);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

def Cuts_ReshapeOp : Cuts_Op<"reshape", [Cuts_View]> {
  let summary = "ONNX Reshape";
  let description = [{
    The shape input becomes `shape`, fully resolved at import (no 0 and no
    -1 entries), so it equals the result's shape.
  }];
  let arguments = (ins Cuts_Tensor:$data, DenseI64ArrayAttr:$shape);
  let results = (outs Cuts_Tensor:$reshaped);
  let hasFolder = 1;
}

def Cuts_TransposeOp : Cuts_Op<"transpose", [Cuts_DataMovement]> {
  let summary = "ONNX Transpose (perm always given)";
  let arguments = (ins Cuts_Tensor:$data, DenseI64ArrayAttr:$perm);
  let results = (outs Cuts_Tensor:$transposed);
  let hasFolder = 1;
}

def Cuts_ConcatOp : Cuts_Op<"concat", [Cuts_DataMovement]> {
  let summary = "ONNX Concat (axis non-negative)";
  let arguments = (ins Variadic<Cuts_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Cuts_Tensor:$concat_result);
  let hasFolder = 1;
}

def Cuts_SplitOp : Cuts_Op<"split", [Cuts_DataMovement]> {
  let summary = "ONNX Split";
  let description = [{
    `split` lists every output's extent along `axis` (non-negative); the
    split input and num_outputs of newer opsets are resolved into it.
  }];
  let arguments = (ins Cuts_Tensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$split);
  let results = (outs Variadic<Cuts_Tensor>:$outputs);
  let hasFolder = 1;
}

def Cuts_SliceOp : Cuts_Op<"slice", [Cuts_DataMovement]> {
  let summary = "ONNX Slice";
  let description = [{
    starts, ends and steps have one entry per axis of `data`, clamped as ONNX
    says (so ends may be -1 for a negative step that runs to the front); an
    axis that is not sliced has start 0, end dim, step 1.
  }];
  let arguments = (ins Cuts_Tensor:$data, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

def Cuts_GatherOp : Cuts_Op<"gather", [Cuts_DataMovement]> {
  let summary = "ONNX Gather (axis non-negative; negative indices allowed)";
  let arguments = (ins Cuts_Tensor:$data, Cuts_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

def Cuts_GatherElementsOp : Cuts_Op<"gather_elements", [Cuts_DataMovement]> {
  let summary = "ONNX GatherElements (axis non-negative)";
  let arguments = (ins Cuts_Tensor:$data, Cuts_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

def Cuts_GatherNDOp : Cuts_Op<"gather_nd", [Cuts_DataMovement]> {
  let summary = "ONNX GatherND";
  let description = [{
    The last axis of `indices` (i64) indexes the leading axes of `data` after
    the first `batch_dims` axes, which both share.
  }];
  let arguments = (ins Cuts_Tensor:$data, StaticShapeTensorOf<[I64]>:$indices,
                       I64Attr:$batch_dims);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

def Cuts_UnsqueezeOp : Cuts_Op<"unsqueeze", [Cuts_View]> {
  let summary = "ONNX Unsqueeze (axes sorted, non-negative, in the output rank)";
  let arguments = (ins Cuts_Tensor:$data, DenseI64ArrayAttr:$axes);
  let results = (outs Cuts_Tensor:$expanded);
  let hasFolder = 1;
}

def Cuts_SqueezeOp : Cuts_Op<"squeeze", [Cuts_View]> {
  let summary = "ONNX Squeeze (axes sorted, non-negative; never empty)";
  let arguments = (ins Cuts_Tensor:$data, DenseI64ArrayAttr:$axes);
  let results = (outs Cuts_Tensor:$squeezed);
  let hasFolder = 1;
}

def Cuts_ExpandOp : Cuts_Op<"expand", [Cuts_DataMovement]> {
  let summary = "ONNX Expand (the shape input becomes an attribute)";
  let arguments = (ins Cuts_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
}

def Cuts_PadOp : Cuts_Op<"pad", [Cuts_DataMovement]> {
  let summary = "ONNX Pad";
  let description = [{
    `pads` has begin pads for every axis, then end pads (the axes input of
    opset 18 is resolved into it); `mode` is constant, reflect, edge or wrap;
    `value` is the constant input (0 when absent).
  }];
  let arguments = (ins Cuts_Tensor:$data, DenseI64ArrayAttr:$pads,
                       StrAttr:$mode, F64Attr:$value);
  let results = (outs Cuts_Tensor:$output);
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The partition
//===----------------------------------------------------------------------===//

def Cuts_GroupOp : Op<Cuts_Dialect, "group",
    [SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "ops the partition search runs as one kernel";
  let description = [{
    `cuts explain --mlir` prints the partition (thesis Algorithm 1) as these:
    each group's ops, in program order, in its region; its results are what
    leaves the group. `fusion` is none, register, shared or view; `anchor`
    the op family whose tiles the group's kernel takes (absent for a view);
    `params` the best-bound parameter set (thesis Table 3.3) of the
    `kept` of `enumerated`, `pul` its bound and `time_us` the group's
    lower-bound time with a launch. Ops inside may use values defined
    outside. No pass consumes the grouped graph: the compiler lowers the
    partition straight to kernels.
  }];
  let arguments = (ins StrAttr:$fusion, OptionalAttr<StrAttr>:$anchor,
                       OptionalAttr<StrAttr>:$params, F64Attr:$pul,
                       F64Attr:$time_us, I64Attr:$kept, I64Attr:$enumerated);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword `:` type($results) $body";
  let hasVerifier = 1;
}

def Cuts_YieldOp : Op<Cuts_Dialect, "yield",
    [Pure, Terminator, HasParent<"GroupOp">]> {
  let summary = "a group's results";
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // CUTS_OPS_TD

//===- Passes.td - graph clean-up passes of cuts -----------*- tablegen -*-===//
#ifndef CUTS_PASSES_TD
#define CUTS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldConstants : Pass<"cuts-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate every op whose operands are constants";
  let description = [{
    Runs the folders of the cuts ops to a fixed point, so shape subgraphs
    (Shape -> Gather -> Concat -> Reshape) and weight-only arithmetic become
    constants; ops left without users are erased.
  }];
}

def RemoveIdentity : Pass<"cuts-remove-identity", "mlir::func::FuncOp"> {
  let summary = "Remove Identity and (inference) Dropout";
}

def FoldBatchNorm : Pass<"cuts-fold-batchnorm", "mlir::func::FuncOp"> {
  let summary = "Fold BatchNormalization into the Conv that feeds it";
  let description = [{
    conv(X, W, B) followed by batch_normalization with constant W, B and
    statistics becomes one conv with W' = W * s and B' = (B - mean) * s + beta,
    s = scale / sqrt(var + epsilon), per output channel. The conv must have
    no other user.
  }];
}

def FuseMatMulAdd : Pass<"cuts-fuse-matmul-add", "mlir::func::FuncOp"> {
  let summary = "Recognise MatMul + Add as one cuts.matmul_add";
  let description = [{
    add(matmul(A, B), C), in either operand order, where the matmul has no
    other user and C broadcasts to the product's shape without growing it,
    becomes matmul_add(A, B, C): the Gemm-like op with a bias (or residual)
    epilogue that code generation fuses. First, a 2-D Gemm whose result is
    reshaped to leading axes and its columns (GPT-2's Conv1D),
    reshape(gemm(A, B, C)) with alpha = beta = 1, A untransposed and C a
    bias, becomes matmul_add(reshape(A), B, C) (matmul without C), so that
    what follows it can be its epilogue.
  }];
}

def SplitProducts : Pass<"cuts-split-products", "mlir::func::FuncOp"> {
  let summary = "One product per column range its users slice";
  let description = [{
    matmul(A, B) or matmul_add(A, B, C) with B a 2-D constant and C a
    constant bias, whose every user slices a range of its columns, the
    other axes whole (GPT-2's query/key/value projection, one product
    split three ways), becomes one product per slice, of B's columns (B's
    rows where transB is set) and C's entries in that range. No kernel then
    copies the slices out, and each part's epilogue, and a transpose after
    it that attention reads in place, apply to that part alone. The sliced
    constants fold (cuts-fold-constants). Only products whose every part
    has at least `min-elements` results are split: a smaller part fills
    less than a wave of the GPU, and parts in sequence then cost a launch
    latency each, more than the slices' copies they save (GPT-2 at batch 1
    on an H200 was 19 % slower split). The compiler passes one wave of
    128 x 128 tiles of the target.
  }];
  let options = [
    Option<"minElements", "min-elements", "int64_t", "0",
           "the fewest results a part may have">
  ];
}

def SplitK : Pass<"cuts-split-k", "mlir::func::FuncOp"> {
  let summary = "Split a long product over few tiles along K";
  let description = [{
    matmul(A, B) or matmul_add(A, B, C) on tensor-core operands, with B a
    2-D constant [K, N] (a linear layer), whose M x N output even in
    64 x 64 tiles fills less than half of `num-sm` SMs: BERT's and GPT-2's
    second MLP product at batch 1 (128 x 768, K = 3072: 24 tiles on 132
    SMs). It becomes S partial products, batched: A read as [S, M, K/S]
    (a transpose the kernel reads in place) times B as [S, K/S, N], with
    fp32 results; their sum, plus C, is cast back to the product's type.
    S is the most parts (at most 8) whose tiles fit one wave, each K/S a
    multiple of 64 and at least 512. The sum is an elementwise chain that
    fuses with what follows (the residual Add and LayerNorm's prologue).
    0 SMs: nothing is split.
  }];
  let options = [
    Option<"numSM", "num-sm", "int64_t", "0",
           "the SMs of the target GPU">
  ];
}

def SliceHeads : Pass<"cuts-slice-heads", "mlir::func::FuncOp"> {
  let summary = "Split into heads before slicing, so that products read the slices in place";
  let description = [{
    reshape(slice(x)), where the slice cuts one axis (unit step) and the
    reshape splits that axis into factors whose inner ones divide the
    slice's start and the axis (GPT-2's fused Q|K|V product sliced into Q,
    K and V, each split into heads), becomes slice(reshape(x)) on the outer
    factor. The slice then feeds the transpose a tensor-core product reads
    in place, and is read in place with it rather than copied by a kernel.
    It runs after cuts-tensor-parallel and cuts-split-products, which find
    a fused product by the slices of its result.
  }];
}

def SplitReductions : Pass<"cuts-split-reductions", "mlir::func::FuncOp"> {
  let summary = "Reduce rows longer than max-row in two steps";
  let description = [{
    A global average pool, or a mean, sum or max over the trailing axes,
    whose rows are longer than `max-row` (EfficientNet's squeeze over a
    112 x 112 map: 12544) becomes a reshape to rows of B elements (the
    largest divisor of the length up to `max-row`, a multiple of 32 where
    one is), the reduction of those, and the same reduction of the
    length / B partial results of each row. A row kernel holds a row in a
    warp's registers; one of 12544 would be unrolled into a megabyte of
    source. Means of equal parts average to the mean, so a float mean
    splits exactly up to rounding; an integer mean is left alone. A length
    with no divisor near `max-row` is padded with zeros (sums, means, and
    maxima known to be at least 0). A softmax or layer normalisation over
    rows no row kernel holds (over 2048) becomes its formula, its reductions split. First, a
    mean, sum or max over axes that are not the trailing ones becomes a
    transpose that makes them trailing and the reduction over those
    (reshaped back where keepdims is set): row kernels reduce trailing
    axes only. A reduction over an empty set is its identity (0, NaN for a
    mean, the lowest value for a max), a constant.
  }];
  let options = [
    Option<"maxRow", "max-row", "int64_t", "1024",
           "the longest row reduced in one step">
  ];
}

def FuseGelu : Pass<"cuts-fuse-gelu", "mlir::func::FuncOp"> {
  let summary = "Recognise decomposed GELUs as one cuts.gelu";
  let description = [{
    Exporters without a Gelu op spell it out: TorchScript's opset 17 as
    0.5 x (1 + erf(x / sqrt 2)), and GPT-2's gelu_new (any exporter) as
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 pow(x, 3)))). Either, with
    its products in any order and nesting and constants within 1e-3,
    becomes cuts.gelu (approximate "none" or "tanh"): one step of a fused
    chain instead of eight. The decomposition is left to dead-code removal.
  }];
}

def SimplifyDataMovement
    : Pass<"cuts-simplify-data-movement", "mlir::func::FuncOp"> {
  let summary = "Rewrite gather_nd / and / or that only reshape or broadcast, split as slices, high-rank transposes in fewer axes";
  let description = [{
    Exporters spell plain reshapes and broadcasts in roundabout ways (the
    PyTorch dynamo exporter builds BERT's attention mask as
    and(gather_nd(cast(mask), C), T)). This pass rewrites:

    * gather_nd(data, C) with constant indices C (any batch_dims; negative
      indices count from the end) whose output is a contiguous run of data in
      row-major order, data[c, c + n), into reshape(data) when the run is all
      of data, else into reshape(slice(data)) when the run is a slice; other
      indices stay.
    * and(x, T) and or(x, F), in either operand order, with T an all-true and
      F an all-false constant, into x, or expand(x) to the result shape.
    * and(x, F) into a constant false and or(x, T) into a constant true of
      the result type.
    * split(x) into one slice of x per result (GPT-2's query/key/value):
      kernels have one result each.
    * transpose(x) of rank above 4 whose axes merge into at most 4 (axes
      of extent 1 dropped, runs of input axes that stay adjacent and in
      order in the output merged: ShuffleNet's channel shuffle) into
      reshape(transpose(reshape(x))): kernels are generated up to rank 4.

    A cast to the type its input already has is left to the cast folder
    (cuts-fold-constants).
  }];
}

def ConvertPrecision : Pass<"cuts-convert-precision", "mlir::func::FuncOp"> {
  let summary = "Store the model's floating-point tensors in fp16 or bf16";
  let description = [{
    Every fp32 tensor of the function becomes `precision` (f16 or bf16):
    op results, constants (rounded to nearest even; a constant equal to
    +-FLT_MAX, the exporters' "dtype minimum" idiom of attention masks,
    becomes the 16-bit format's largest value; any other constant beyond
    the format's range is an error naming its user), cast targets and
    constant_of_shape values. Kernels still compute in fp32 (codegen:
    loads widen, stores round), so accumulators, softmax and normalization
    statistics, reductions and the exp / erf / tanh of GELU stay fp32; only
    the tensors between kernels are 16-bit. The model's fp32 inputs and
    outputs keep their type behind a cast (fused into the first and last
    kernels where the partition can), unless `io-precision` is set: then the
    function takes and returns the 16-bit type itself. With `precision`
    tf32 the tensors stay fp32 and the function gets the unit attribute
    `cuts.tf32`: its products may round their operands to tf32 on tensor
    cores (and cuts-transpose-weights and cuts-channels-last treat its fp32
    products and convs as they do 16-bit ones).
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"fp16\"",
           "fp16, bf16, or tf32 (fp32 tensors; marks the function cuts.tf32)">,
    Option<"ioPrecision", "io-precision", "std::string", "\"\"",
           "\"\" keeps fp32 inputs and outputs; fp16 or bf16 (the same as "
           "precision) passes 16-bit buffers">
  ];
}

def TransposeWeights : Pass<"cuts-transpose-weights", "mlir::func::FuncOp"> {
  let summary = "Read tensor-core matmul operands B as N x K (transB)";
  let description = [{
    matmul(A, B), matmul_add(A, B, C) and gemm(A, B, C) without transB, in
    fp16 or bf16, read B^T [N, K] with transB set where that is free:
    * B a constant [..., K, N] used once (a Linear layer's weight, which
      the exporters transpose, or its cuts-split-k parts): each matrix
      stored transposed now;
    * B = transpose(X, p) used once, p putting X's innermost axis on B's
      rows (attention's K^T): B^T = transpose(X, p with its last two
      entries swapped), which moves whole rows, or X itself where that is
      the identity.
    The tensor cores' wgmma reads B K-major, as transB stores it, and
    tf32 fragments can only be loaded from it. fp32 products are left as
    they are unless the function has `cuts.tf32`.
  }];
}

def ChannelsLast : Pass<"cuts-channels-last", "mlir::func::FuncOp"> {
  let summary = "Run tensor-core convolutions channels-last (NHWC)";
  let description = [{
    Tensor cores take a convolution as an implicit GEMM over output pixels,
    whose K slices are runs of input channels: contiguous only when the
    channels are innermost. Every 2-D conv of fp16 or bf16 tensors (fp32
    ones in a function with `cuts.tf32`) with group 1, input channels in
    whole 16-byte copies (or fewer: an image stem's, padded with zero
    channels) and output channels in multiples of 8, and every depthwise
    one, becomes
      transpose(conv{channels_last}(transpose(X, [0, 2, 3, 1]), W', B),
                [0, 3, 1, 2])
    with its weight stored M x kH x kW x C (folded). Then transposes move
    down past elementwise ops whose other operands are the same transpose
    or constants (transposed too, and folded), past concats of the same
    transposes and past max and average poolings (which then run
    channels-last), and a transpose of a
    transpose becomes one, or none: between two channels-last convs no
    transpose is left. Depthwise convs run channels-last on the SIMT units (their
    kernel reading and writing channels innermost), so MobileNet's blocks
    stay NHWC. The pass converts nothing in a function with another
    grouped conv, which has no channels-last kernel: each would cost two
    transposes.
  }];
}
def FuseConvSum : Pass<"cuts-fuse-conv-sum", "mlir::func::FuncOp"> {
  let summary = "A residual block's last conv and its shortcut as one product";
  let description = [{
    add(conv(X, W1, B1), conv(X2, W2, B2)), both channels-last 1 x 1 convs
    without padding or dilation, of group 1, with constant weights, input
    channels in multiples of 16 and no other user, becomes
    conv_sum(X, X2, concat(W1, W2), B1 + B2) (each conv's strides kept):
    ResNet's projection shortcut and its block's last conv as one implicit
    GEMM whose K runs through both inputs. The last conv's result (at
    batch 64 in ResNet-50's first stage, 103 MB in fp16) is then neither
    stored nor read back as the residual. Only where that saves time by the
    roofline: where the pair's operations per byte of that result stored
    and read back stay under `balance` (the GPU's peak over its DRAM
    bandwidth); with more, the pair is compute-bound either way and the
    tuner may still give each conv to a library. 0: every pair.
  }];
  let options = [
    Option<"balance", "balance", "double", "0",
           "the GPU's operations per byte of DRAM traffic at its peaks">
  ];
}

def TensorParallel : Pass<"cuts-tensor-parallel", "mlir::func::FuncOp"> {
  let summary = "Split products Megatron-style across tensor-parallel ranks";
  let description = [{
    Products with a constant weight are split by columns, and the split is
    followed through elementwise ops, reshapes, transposes, batched
    products and softmax to the product that contracts over it, which is
    split by rows; its partial sums meet in a cuts.all_reduce. Products
    sharing their input (Q, K, V) split together. Where a split value
    reaches anything else, that product stays whole. `rank` selects the
    rank whose graph is made; `simulate` makes one graph with every rank's
    ops and the partial sums added, which computes the same as the input
    (the check of the splits on one device).
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", "1", "tensor-parallel ranks">,
    Option<"rank", "rank", "int64_t", "0", "the rank whose graph is made">,
    Option<"simulate", "simulate", "bool", "false",
           "every rank in one graph, all-reduces as additions">
  ];
}

def DeadCode : Pass<"cuts-dce", "mlir::func::FuncOp"> {
  let summary = "Erase ops whose results are unused";
}

#endif // CUTS_PASSES_TD

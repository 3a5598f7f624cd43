#!/usr/bin/env python3
"""End-to-end checks of `cuts compile` and `cuts run` on small models.

usage: test_compile.py --cuts PATH/TO/cuts --work WORKDIR [-k SUBSTRING]
                       [--exported] [--gpu]

Each model (built with onnx.helper, fixed seeds) is compiled for sm_90 (the
CUBINs come from NVRTC, so this needs no GPU), its artifact is run with
`cuts run --emulate` (every kernel's own CUDA source compiled for the CPU)
and the outputs are compared with ONNX Runtime's (relative L2 <= 1e-5).
The artifact, model.h and libmodel.so must exist, --emit-source must write
readable kernels, and the error paths must fail cleanly: a corrupted or
truncated artifact, a wrong input shape or name, and (without a GPU) a run
on the GPU. A 2-layer BERT as PyTorch's dynamo exporter writes it is
compiled and emulated too. With --gpu the same models also run on the GPU and must match.
With --exported, MobileNetV2 (PyTorch export, batch 1) is compiled and
emulated too (slow: minutes).

Prints one line per check and `N passed, N failed`; exits 1 on a failure.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_models as tm  # noqa: E402  (the builders and ORT helpers)


def make_pools(path):
    b = tm.Builder(21)
    h = b.node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    h = b.node("AveragePool", [h], kernel_shape=[2, 2], strides=[1, 1],
               pads=[0, 0, 1, 1])
    h = b.node("Relu", [h])
    h = b.node("GlobalAveragePool", [h])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [2, 6, 11, 9])], [tm.vi("y", [2, 6, 1, 1])])


def make_rows(path):
    """Softmax and LayerNormalization over the last axis, and a reduction."""
    b = tm.Builder(22)
    h = b.node("MatMul", ["x", b.w([16, 24])])
    h = b.node("Softmax", [h], axis=-1)
    h = b.node("LayerNormalization", [h, b.w([24]), b.w([24])], axis=-1,
               epsilon=1e-5)
    b.node("ReduceMean", [h, b.const(np.array([-1], np.int64))], keepdims=0)
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [3, 5, 16])], [tm.vi("y", [3, 5])],
                   opset=18)


def make_elementwise(path):
    """A chain with broadcasting, a transposed input and a scalar."""
    b = tm.Builder(23)
    t = b.node("Transpose", ["x"], perm=[0, 2, 1])
    h = b.node("Mul", [t, b.w([1, 7])])
    h = b.node("Add", [h, "z"])
    h = b.node("Div", [h, b.const(np.array(1.5, np.float32))])
    h = b.node("Tanh", [h])
    b.node("Sigmoid", [h])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [2, 7, 5]), tm.vi("z", [2, 5, 7])],
                   [tm.vi("y", [2, 5, 7])])


def make_two_outputs(path):
    """Two outputs, one of them a view of an intermediate and one an input."""
    b = tm.Builder(24)
    h = b.node("Relu", [b.conv("x", 4, 4, 3, pads=[1, 1, 1, 1])])
    b.nodes.append(helper.make_node("Flatten", [h], ["flat"], axis=1))
    b.nodes.append(helper.make_node("Identity", ["x"], ["same"]))
    return b.model(path, [tm.vi("x", [1, 4, 6, 6])],
                   [tm.vi("flat", [1, 144]), tm.vi("same", [1, 4, 6, 6])])


def make_awkward_names(path):
    """Tensor names that are not C identifiers: a quote, a backslash, and
    two names that map to one identifier (model.h must still compile)."""
    nodes = [helper.make_node("Relu", ['in"put'], ["out.a"], name="r1"),
             helper.make_node("Sigmoid", ['in"put'], ["out_a"], name="r2"),
             helper.make_node("Neg", ['in"put'], ["x\\y"], name="r3")]
    g = helper.make_graph(
        nodes, "awkward", [tm.vi('in"put', [2, 3])],
        [tm.vi(n, [2, 3]) for n in ["out.a", "out_a", "x\\y"]])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    import onnx
    onnx.save(m, path)
    return path


def make_attention(path):
    """Batched matmuls as attention has them: scores = q k^T / 4,
    softmax, then the weighted sum of v."""
    b = tm.Builder(25)
    kt = b.node("Transpose", ["k"], perm=[0, 1, 3, 2])
    s = b.node("MatMul", ["q", kt])
    s = b.node("Div", [s, b.const(np.array(4.0, np.float32))])
    s = b.node("Softmax", [s], axis=-1)
    b.node("MatMul", [s, "v"])
    tm.rename_last(b, "y")
    shape = [2, 3, 5, 8]
    return b.model(path, [tm.vi("q", shape), tm.vi("k", shape),
                          tm.vi("v", shape)], [tm.vi("y", shape)])


def make_channel_shuffle(path):
    """ShuffleNet-V2's channel shuffle: a rank-5 transpose between reshapes
    (cuts-simplify-data-movement makes it rank 3), after a conv."""
    b = tm.Builder(29)
    h = b.conv("x", 8, 8, 1)
    h = b.node("Reshape", [h, b.const(np.array([1, 2, 4, 6, 6], np.int64))])
    h = b.node("Transpose", [h], perm=[0, 2, 1, 3, 4])
    h = b.node("Reshape", [h, b.const(np.array([1, 8, 6, 6], np.int64))])
    b.node("Relu", [h])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [1, 8, 6, 6])], [tm.vi("y", [1, 8, 6, 6])])


def make_window_partition(path):
    """MaxViT's window partition: a rank-6 transpose whose axes do not merge
    into 4 (cuts-simplify-data-movement makes two block swaps of it)."""
    b = tm.Builder(41)
    h = b.conv("x", 8, 8, 1)
    h = b.node("Reshape", [h, b.const(np.array([1, 8, 3, 2, 3, 2], np.int64))])
    h = b.node("Transpose", [h], perm=[0, 2, 4, 3, 5, 1])
    h = b.node("Reshape", [h, b.const(np.array([9, 4, 8], np.int64))])
    b.node("Relu", [h])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [1, 8, 6, 6])], [tm.vi("y", [9, 4, 8])])


def make_einsum(path):
    """Einsum as exporters write it (MaxViT's attention, a trace, an
    implicit output): a batched product with a transposed result, the
    diagonal of an ellipsis batch, a sum with a transpose, and a weight
    product whose output the equation leaves implicit (sorted: "behi")."""
    b = tm.Builder(27)
    s = b.node("Einsum", ["q", "k"], equation="bhid,bhjd->bhji")
    b.node("Softmax", [s], axis=-1, name="y1")
    b.node("Einsum", ["m"], equation="...ii->...i", name="y2")
    b.node("Einsum", ["q"], equation="bhid -> dhb", name="y3")
    b.node("Einsum", ["q", b.w([8, 6])], equation="bhid,de", name="y4")
    for n in b.nodes:
        if n.name.startswith("y"):
            n.output[0] = n.name
    f = TensorProto.FLOAT
    return b.model(path, [tm.vi("q", [2, 3, 5, 8]), tm.vi("k", [2, 3, 4, 8]),
                          tm.vi("m", [2, 3, 4, 4])],
                   [tm.vi("y1", [2, 3, 4, 5]), tm.vi("y2", [2, 3, 4]),
                    tm.vi("y3", [8, 3, 2]), tm.vi("y4", [2, 6, 3, 5], f)])


def make_upsample_neck(path):
    """A YOLO/FPN neck: a conv's map upsampled 2x by nearest Resize (as
    torch's F.interpolate exports it) and concatenated with a finer map,
    then a bilinear Resize to a size (half_pixel) and a bicubic one
    (align_corners), and an opset-9 Upsample."""
    b = tm.Builder(31)
    h = b.conv("x", 8, 8, 1)
    up = b.node("Resize", [h, "", b.const(np.array([1, 1, 2, 2], np.float32))],
                mode="nearest", coordinate_transformation_mode="asymmetric",
                nearest_mode="floor")
    h = b.conv(b.node("Concat", [up, "f"], axis=1), 16, 8, 3, pads=[1] * 4)
    b.node("Resize", [h, "", "", b.const(np.array([1, 8, 15, 17], np.int64))],
           mode="linear", name="y1")
    b.node("Resize", [h, "", b.const(np.array([1, 1, 0.5, 0.75], np.float32))],
           mode="cubic", coordinate_transformation_mode="align_corners",
           name="y2")
    for n in b.nodes:
        if n.name.startswith("y"):
            n.output[0] = n.name
    return b.model(path, [tm.vi("x", [1, 8, 6, 6]), tm.vi("f", [1, 8, 12, 12])],
                   [tm.vi("y1", [1, 8, 15, 17]), tm.vi("y2", [1, 8, 6, 9])])


def make_postprocess(path):
    """Heads' post-processing and RoBERTa's position ids: TopK, ArgMax and
    LogSoftmax of logits; an int32 CumSum over the non-padding mask."""
    b = tm.Builder(37)
    logits = b.node("Gemm", ["x", b.w([40, 16])], transB=1)
    b.node("TopK", [logits, b.const(np.array([5], np.int64))], nout=2,
           name="top")
    b.node("ArgMax", [logits], axis=1, keepdims=0, name="y3")
    b.node("LogSoftmax", [logits], axis=-1, name="y4")
    mask = b.node("Cast", [b.node("Not", [b.node("Equal", [
        "ids", b.const(np.array(1, np.int64))])])], to=TensorProto.INT32)
    pos = b.node("CumSum", [mask, b.const(np.array(1, np.int64))])
    b.node("Add", [b.node("Mul", [pos, mask]),
                   b.const(np.array(1, np.int32))], name="y5")
    for n in b.nodes:
        if n.name.startswith("y"):
            n.output[0] = n.name
        if n.name == "top":
            n.output[:] = ["y1", "y2"]
    i64, i32 = TensorProto.INT64, TensorProto.INT32
    return b.model(path, [tm.vi("x", [3, 16]), tm.vi("ids", [3, 7], i64)],
                   [tm.vi("y1", [3, 5]), tm.vi("y2", [3, 5], i64),
                    tm.vi("y3", [3], i64), tm.vi("y4", [3, 40]),
                    tm.vi("y5", [3, 7], i32)])


def make_topk_nan(path):
    """TopK over rows holding NaNs: ONNX Runtime ranks NaN above every
    number (first when largest, last when smallest), NaNs by position.
    The largest's values are NaN, so only its indices are compared."""
    b = tm.Builder(38)
    k = b.const(np.array([4], np.int64))
    b.node("TopK", ["x", k], nout=2, name="big")
    b.node("TopK", ["x", k], nout=2, largest=0, name="small")
    for n in b.nodes:
        if n.name == "big":
            n.output[:] = ["big_values", "y1"]
        if n.name == "small":
            n.output[:] = ["y2", "y3"]
    i64 = TensorProto.INT64
    return b.model(path, [tm.vi("x", [3, 12])],
                   [tm.vi("y1", [3, 4], i64), tm.vi("y2", [3, 4]),
                    tm.vi("y3", [3, 4], i64)])


def topk_nan_reference(x, k):
    """make_topk_nan's outputs: NaN ranks above every number (first when
    largest, last when smallest), ties and NaNs by position."""
    y1, y2, y3 = [], [], []
    for row in x:
        n = range(len(row))
        big = sorted(n, key=lambda i: (0, 0.0, i) if np.isnan(row[i])
                     else (1, -row[i], i))
        small = sorted(n, key=lambda i: (1, 0.0, i) if np.isnan(row[i])
                       else (0, row[i], i))
        y1.append(big[:k])
        y3.append(small[:k])
        y2.append(row[small[:k]])
    return {"y1": np.array(y1, np.int64), "y2": np.array(y2, np.float32),
            "y3": np.array(y3, np.int64)}


def make_masked_attention(path):
    """BERT's attention at batch 2: a [B, 1, S, S] mask added to every
    head's scores, and the heads' outputs transposed back to [B, S, H, D]
    and merged. The mask reads the batch's digit of the product's batch
    axis, and the transpose is the P x V product's store."""
    b = tm.Builder(26)
    kt = b.node("Transpose", ["k"], perm=[0, 1, 3, 2])
    s = b.node("MatMul", ["q", kt])
    s = b.node("Mul", [s, b.const(np.array(0.25, np.float32))])
    s = b.node("Add", [s, "mask"])
    s = b.node("Softmax", [s], axis=-1)
    o = b.node("Transpose", [b.node("MatMul", [s, "v"])], perm=[0, 2, 1, 3])
    b.node("Reshape", [o, b.const(np.array([2, 5, 24], np.int64))])
    tm.rename_last(b, "y")
    shape = [2, 3, 5, 8]
    return b.model(path, [tm.vi("q", shape), tm.vi("k", shape),
                          tm.vi("v", shape), tm.vi("mask", [2, 1, 5, 5])],
                   [tm.vi("y", [2, 5, 24])])


def make_long_rows(path):
    """Rows no warp holds (cuts-split-reductions): EfficientNet's squeeze
    over a 112 x 112 map, a max and a layer norm over 5000, and softmax
    over GPT-2's 50257-word vocabulary (a prime's multiple: padded)."""
    b = tm.Builder(29)
    b.node("GlobalAveragePool", ["x"])
    tm.rename_last(b, "pooled")
    b.node("ReduceMax", ["r"], axes=[1], keepdims=0)
    tm.rename_last(b, "top")
    b.node("Softmax", ["logits"], axis=-1)
    tm.rename_last(b, "p")
    rng = np.random.default_rng(29)
    b.node("LayerNormalization",
           ["r", b.const(rng.normal(1, 0.1, 5000).astype(np.float32)),
            b.const(rng.normal(0, 0.1, 5000).astype(np.float32))], axis=-1)
    tm.rename_last(b, "n")
    return b.model(path, [tm.vi("x", [1, 4, 112, 112]), tm.vi("r", [2, 5000]),
                          tm.vi("logits", [2, 50257])],
                   [tm.vi("pooled", [1, 4, 1, 1]), tm.vi("top", [2]),
                    tm.vi("p", [2, 50257]), tm.vi("n", [2, 5000])])


def make_gelu_tanh(path):
    """GPT-2's MLP GELU as its exporter writes it, after a Linear layer
    (cuts-fuse-gelu makes it one cuts.gelu, approximate tanh: cuBLASLt's
    epilogue); and a Split whose parts are combined."""
    b = tm.Builder(27)

    def c(v):
        return b.const(np.array(v, np.float32))
    b.nodes.append(helper.make_node("Split", ["x"], ["s0", "s1"], axis=2,
                                    num_outputs=2))
    rng = np.random.default_rng(27)
    x = b.node("MatMul", [b.node("Add", ["s0", "s1"]),
                          c(rng.normal(0, 0.5, (12, 12)))])
    x = b.node("Add", [x, c(rng.normal(0, 0.5, 12))])
    half = b.node("Mul", [x, c(0.5)])
    p = b.node("Mul", [b.node("Pow", [x, c(3.0)]), c(0.044715)])
    t = b.node("Tanh", [b.node("Mul", [b.node("Add", [x, p]), c(0.7978846)])])
    b.node("Mul", [half, b.node("Add", [t, c(1.0)])])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [2, 5, 24])], [tm.vi("y", [2, 5, 12])],
                   opset=18)


def make_gelu_erf(path):
    """The erf GELU as TorchScript's opset 17 writes it, 0.5 last: one
    cuts.gelu after cuts-fuse-gelu."""
    b = tm.Builder(29)

    def c(v):
        return b.const(np.array(v, np.float32))
    e = b.node("Erf", [b.node("Div", ["x", c(1.4142135)])])
    b.node("Mul", [b.node("Mul", ["x", b.node("Add", [e, c(1.0)])]), c(0.5)])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [3, 40])], [tm.vi("y", [3, 40])])


def make_dense_block(path, c=4, grow=(4, 5), n=1):
    """DenseNet's and Inception's data movement: a concat of the input and
    two convolutions' outputs, a batch normalization no conv absorbs (after
    the concat: a per-channel scale and shift), relu, and a 1x1 conv."""
    b = tm.Builder(28)
    a = b.node("Relu", [b.conv("x", c, grow[0], 3, pads=[1, 1, 1, 1])])
    d = b.node("Relu", [b.conv("x", c, grow[1], 1)])
    cat = b.node("Concat", ["x", a, d], axis=1)
    rng = np.random.default_rng(3)
    k = c + sum(grow)
    bn = b.node("BatchNormalization", [
        cat, b.const(rng.uniform(0.5, 1.5, k).astype(np.float32)),
        b.const(rng.normal(0, 0.1, k).astype(np.float32)),
        b.const(rng.normal(0, 0.1, k).astype(np.float32)),
        b.const(rng.uniform(0.5, 1.5, k).astype(np.float32))])
    h = b.node("Relu", [bn])
    b.conv(h, k, 6, 1)
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [n, c, 7, 7])], [tm.vi("y", [n, 6, 7, 7])])


def make_dense_block8(path):
    """make_dense_block with parts of 8 and 16 channels: in 16 bits,
    channels-last, its concat reads 16 bytes of a part at once."""
    return make_dense_block(path, 8, (8, 16), 2)


def make_embedding(path):
    """BERT's integer inputs: int64 ids into an embedding table, an int64
    attention mask made an additive float mask, and a bool output (the
    padding) computed from the mask."""
    b = tm.Builder(26)
    emb = b.node("Gather", [b.w([30, 8], 1.0), "input_ids"], axis=0)
    m = b.node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    m = b.node("Unsqueeze", [m, b.const(np.array([2], np.int64))])
    m = b.node("Sub", [b.const(np.array(1.0, np.float32)), m])
    m = b.node("Mul", [m, b.const(np.array(-100.0, np.float32))])
    b.node("Add", [emb, m])
    tm.rename_last(b, "y")
    b.nodes.append(helper.make_node(
        "Equal", ["attention_mask", b.const(np.array(0, np.int64))], ["pad"],
        name="pad"))
    return b.model(path, [tm.vi("input_ids", [2, 6], TensorProto.INT64),
                          tm.vi("attention_mask", [2, 6], TensorProto.INT64)],
                   [tm.vi("y", [2, 6, 8]),
                    tm.vi("pad", [2, 6], TensorProto.BOOL)])


def make_shared_conv(path):
    """Two tiled ops in one kernel (shared-memory-level fusion): a 1x1 conv
    + relu feeding a 3x3 stride-2 conv, whose tiles start before the image
    and overhang it; the next pair is a conv feeding a max pool."""
    b = tm.Builder(29)
    h = b.node("Relu", [b.conv("x", 3, 8, 1)])
    h = b.node("Relu", [b.conv(h, 8, 8, 3, strides=[2, 2], pads=[1, 1, 1, 1])])
    h = b.conv(h, 8, 8, 3, pads=[1, 1, 1, 1])
    b.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2],
           pads=[1, 1, 1, 1])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [1, 3, 13, 13])],
                   [tm.vi("y", [1, 8, 4, 4])])


def make_grouped_conv(path):
    """ResNeXt's grouped 3x3 conv (4 groups) + relu, then a depthwise conv
    with a channel multiplier of 2 (8 groups of one input, two outputs)."""
    b = tm.Builder(31)
    h = b.node("Relu", [b.conv("x", 8, 8, 3, group=4, pads=[1, 1, 1, 1])])
    b.conv(h, 8, 16, 3, group=8, strides=[2, 2])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [2, 8, 9, 9])], [tm.vi("y", [2, 16, 4, 4])])


def make_shared_layernorm(path):
    """BERT's output projection as one kernel: the product + bias +
    residual computed into shared memory, then layer-normalised by rows
    over warp lanes."""
    b = tm.Builder(30)
    h = b.node("MatMul", ["x", b.w([32, 64])])
    h = b.node("Add", [h, b.w([64])])
    h = b.node("Add", [h, "r"])
    b.node("LayerNormalization", [h, b.w([64]), b.w([64])], axis=-1,
           epsilon=1e-5)
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [1, 48, 32]), tm.vi("r", [1, 48, 64])],
                   [tm.vi("y", [1, 48, 64])], opset=18)


def make_half_transformer(path):
    """An fp16 model throughout (no fp32 detour): linear layers with bias,
    erf GELU, a residual, LayerNormalization and Softmax."""
    b = tm.Builder(25)
    f16 = np.float16
    h = b.node("MatMul", ["x", b.w([32, 48], dtype=f16)])
    h = b.node("Add", [h, b.w([48], dtype=f16)])
    e = b.node("Div", [h, b.const(np.array(1.4142135, f16))])
    e = b.node("Erf", [e])
    e = b.node("Add", [e, b.const(np.array(1.0, f16))])
    h = b.node("Mul", [h, e])
    h = b.node("Mul", [h, b.const(np.array(0.5, f16))])
    h = b.node("MatMul", [h, b.w([48, 32], dtype=f16)])
    h = b.node("Add", [h, "x"])
    h = b.node("LayerNormalization", [h, b.w([32], 0.5, dtype=f16),
                                      b.w([32], 0.5, dtype=f16)],
               axis=-1, epsilon=1e-5)
    b.node("Softmax", [h], axis=-1)
    tm.rename_last(b, "y")
    f = TensorProto.FLOAT16
    return b.model(path, [tm.vi("x", [2, 5, 32], f)],
                   [tm.vi("y", [2, 5, 32], f)])


def make_half_gpt_attention(path):
    """GPT-2's attention in fp16: a layer norm, one product for Q, K and V,
    split and cut into 4 heads of 16, K transposed for the scores, the
    heads merged back and projected. The scores' and P x V products read
    Q, K and V in place from the fused product (cuts-slice-heads, MmaView's
    offset): no slice kernel."""
    b = tm.Builder(27)
    f16 = np.float16
    h = b.node("LayerNormalization", ["x", b.w([64], 0.5, dtype=f16),
                                      b.w([64], 0.5, dtype=f16)],
               axis=-1, epsilon=1e-5)
    h = b.node("MatMul", [h, b.w([64, 192], dtype=f16)])
    h = b.node("Add", [h, b.w([192], dtype=f16)])
    q, k, v = b.node("Split", [h, b.const(np.array([64, 64, 64], np.int64))],
                     nout=3, axis=2)
    heads = b.const(np.array([1, 32, 4, 16], np.int64))
    q, k, v = (b.node("Reshape", [t, heads]) for t in (q, k, v))
    q = b.node("Transpose", [q], perm=[0, 2, 1, 3])
    k = b.node("Transpose", [k], perm=[0, 2, 3, 1])
    v = b.node("Transpose", [v], perm=[0, 2, 1, 3])
    s = b.node("MatMul", [q, k])
    s = b.node("Mul", [s, b.const(np.array(0.25, f16))])
    s = b.node("Softmax", [s], axis=-1)
    o = b.node("Transpose", [b.node("MatMul", [s, v])], perm=[0, 2, 1, 3])
    o = b.node("Reshape", [o, b.const(np.array([1, 32, 64], np.int64))])
    b.node("MatMul", [o, b.w([64, 64], dtype=f16)])
    tm.rename_last(b, "y")
    f = TensorProto.FLOAT16
    return b.model(path, [tm.vi("x", [1, 32, 64], f)],
                   [tm.vi("y", [1, 32, 64], f)])


def make_half_split_k(path):
    """An fp16 linear layer over few rows with a long K (BERT's second MLP
    product at batch 1, scaled down): 8 x 64 results, K = 1024, which
    cuts-split-k computes as two partial products and their sum, followed
    by the residual and LayerNormalization."""
    b = tm.Builder(26)
    f16 = np.float16
    h = b.node("MatMul", ["x", b.w([1024, 64], 0.05, dtype=f16)])
    h = b.node("Add", [h, b.w([64], dtype=f16)])
    h = b.node("Add", [h, "r"])
    b.node("LayerNormalization", [h, b.w([64], 0.5, dtype=f16),
                                  b.w([64], 0.5, dtype=f16)],
           axis=-1, epsilon=1e-5)
    tm.rename_last(b, "y")
    f = TensorProto.FLOAT16
    return b.model(path, [tm.vi("x", [1, 8, 1024], f),
                          tm.vi("r", [1, 8, 64], f)],
                   [tm.vi("y", [1, 8, 64], f)])


def make_half_convnet(path):
    """An fp16 convolution block: conv with bias, relu, max pooling, a
    depthwise conv and global average pooling."""
    b = tm.Builder(26)
    f16 = np.float16
    h = b.node("Conv", ["x", b.w([8, 4, 3, 3], 0.3, dtype=f16),
                        b.w([8], dtype=f16)], pads=[1, 1, 1, 1])
    h = b.node("Relu", [h])
    h = b.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    h = b.node("Conv", [h, b.w([8, 1, 3, 3], 0.3, dtype=f16)], group=8,
               pads=[1, 1, 1, 1])
    b.node("GlobalAveragePool", [h])
    tm.rename_last(b, "y")
    f = TensorProto.FLOAT16
    return b.model(path, [tm.vi("x", [1, 4, 12, 12], f)],
                   [tm.vi("y", [1, 8, 1, 1], f)])


def make_resnet_stage(path):
    """A ResNet stage in small: a 3-channel stem conv, max pooling, then a
    strided bottleneck with a projection shortcut. Under --precision fp16 /
    bf16 its convs run channels-last as implicit GEMMs, with ragged pixel
    tiles (2 x 7 x 7 rows) and zero padding; the stem's input is padded to
    8 channels, its K slices spanning window positions."""
    b = tm.Builder(27)
    h = b.node("Relu", [b.conv("x", 3, 16, 3, pads=[1, 1, 1, 1])])
    h = b.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    a = b.node("Relu", [b.bn(b.conv(h, 16, 32, 3, bias=False,
                                    pads=[1, 1, 1, 1]), 32)])
    a = b.node("Relu", [b.conv(a, 32, 32, 3, strides=[2, 2],
                               pads=[1, 1, 1, 1])])
    a = b.conv(a, 32, 64, 1)
    s = b.conv(h, 16, 64, 1, strides=[2, 2])
    b.node("GlobalAveragePool", [b.node("Relu", [b.node("Add", [a, s])])])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [2, 3, 14, 14])],
                   [tm.vi("y", [2, 64, 1, 1])])


def make_resnet_stem(path):
    """ResNet's stem at 30 x 30: a 7x7 stride-2 conv of 3 channels, batch
    norm and relu, then a 3x3 stride-2 max pooling with padding (under fp16
    and bf16 one pooled implicit GEMM: the conv's blocks compute boxes of
    its pixels, halos included, and pool them on chip); then DenseNet's
    transition, a 1x1 conv and a 2x2 average pooling (another)."""
    b = tm.Builder(47)
    h = b.node("Relu", [b.bn(b.conv("x", 3, 16, 7, bias=False, strides=[2, 2],
                                    pads=[3, 3, 3, 3]), 16)])
    h = b.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    h = b.conv(h, 16, 16, 1)
    b.node("AveragePool", [h], kernel_shape=[2, 2], strides=[2, 2])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [2, 3, 30, 30])],
                   [tm.vi("y", [2, 16, 4, 4])])


def make_planar_stem(path):
    """ResNet's stem with 32 channels (wide enough for wgmma's columns):
    a 7x7 stride-2 conv of 3 channels, batch norm, relu and a 3x3 stride-2
    max pooling, whose 16-bit kernel may read the model's NCHW input in
    place (the planar patch)."""
    b = tm.Builder(53)
    h = b.node("Relu", [b.bn(b.conv("x", 3, 32, 7, bias=False, strides=[2, 2],
                                    pads=[3, 3, 3, 3]), 32)])
    b.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2],
           pads=[1, 1, 1, 1])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [2, 3, 36, 36])],
                   [tm.vi("y", [2, 32, 9, 9])])


def make_resnet_chain(path):
    """Two bottlenecks: each one's last 1 x 1 conv, residual and ReLU feed
    the next one's first 1 x 1 conv and its residual. Under --precision
    fp16 / bf16 these convs are implicit GEMMs, which a chained product
    joins: the second reads the first's output tile on chip (9 x 9 x 2
    pixels: ragged tiles)."""
    b = tm.Builder(31)
    y = "x"
    for _ in range(2):
        a = b.node("Relu", [b.conv(y, 64, 32, 1)])
        a = b.node("Relu", [b.conv(a, 32, 32, 3, pads=[1, 1, 1, 1])])
        y = b.node("Relu", [b.node("Add", [b.conv(a, 32, 64, 1), y])])
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [2, 64, 9, 9])],
                   [tm.vi("y", [2, 64, 9, 9])])


def make_mlp(path):
    """A transformer MLP in small after a layer: three Linear layers (the
    middle one GELU-free), each reading the previous one's output in row
    tiles: cuSync's GEMM chain."""
    b = tm.Builder(29)
    h = b.node("Gemm", ["x", b.w([96, 64]), b.w([96])], transB=1)
    h = b.node("Relu", [b.node("Gemm", [h, b.w([192, 96]), b.w([192])],
                               transB=1)])
    b.node("Gemm", [h, b.w([64, 192]), b.w([64])], transB=1)
    tm.rename_last(b, "y")
    return b.model(path, [tm.vi("x", [80, 64])], [tm.vi("y", [80, 64])])


def feeds(shapes, seed):
    """Per (name, shape[, dtype, high]): float inputs standard normal (high
    "nan": every fifth element NaN), integer ones uniform in [0, high), or
    (high "mask") ones with trailing zeros in every row but the first."""
    r = np.random.default_rng(seed)
    out = {}
    for s in shapes:
        name, shape = s[0], s[1]
        dtype = s[2] if len(s) > 2 else np.float32
        if np.issubdtype(dtype, np.floating):
            out[name] = r.standard_normal(shape).astype(dtype)
            if len(s) > 3 and s[3] == "nan":
                out[name].reshape(-1)[::5] = np.nan
        elif s[3] == "mask":
            x = np.ones(shape, dtype)
            rows = x.reshape(-1, shape[-1])
            for k in range(1, rows.shape[0]):
                rows[k, shape[-1] - 1 - k % (shape[-1] - 1):] = 0
            out[name] = x
        else:
            out[name] = r.integers(0, s[3], shape).astype(dtype)
    return out


# name: (builder, input shapes, import args)
MODELS = {
    "conv_bn_relu": (tm.make_conv_bn_relu, [("x", (1, 3, 16, 16))], []),
    "resnet_block": (tm.make_resnet_block, [("x", (1, 8, 8, 8))], []),
    "mobilenet_block": (tm.make_mobilenet_block, [("x", (1, 8, 10, 10))], []),
    "se_gemm": (tm.make_se_gemm, [("x", (1, 16, 5, 5))], []),
    "conv_dynamic_batch": (tm.make_conv_dynamic_batch, [("x", (3, 3, 9, 9))],
                           ["--input-shape", "x=3x3x9x9"]),
    "dropout_identity": (tm.make_dropout_identity, [("x", (2, 16))], []),
    "pools": (make_pools, [("x", (2, 6, 11, 9))], []),
    "rows": (make_rows, [("x", (3, 5, 16))], []),
    "elementwise": (make_elementwise, [("x", (2, 7, 5)), ("z", (2, 5, 7))],
                    []),
    "two_outputs": (make_two_outputs, [("x", (1, 4, 6, 6))], []),
    "awkward_names": (make_awkward_names, [('in"put', (2, 3))], []),
    "attention": (make_attention, [("q", (2, 3, 5, 8)), ("k", (2, 3, 5, 8)),
                                   ("v", (2, 3, 5, 8))], []),
    "channel_shuffle": (make_channel_shuffle, [("x", (1, 8, 6, 6))], []),
    "window_partition": (make_window_partition, [("x", (1, 8, 6, 6))], []),
    "einsum": (make_einsum, [("q", (2, 3, 5, 8)), ("k", (2, 3, 4, 8)),
                             ("m", (2, 3, 4, 4))], []),
    "upsample_neck": (make_upsample_neck, [("x", (1, 8, 6, 6)),
                                           ("f", (1, 8, 12, 12))], []),
    "postprocess": (make_postprocess, [("x", (3, 16)),
                                       ("ids", (3, 7), np.int64, 4)], []),
    "topk_nan": (make_topk_nan, [("x", (3, 12), np.float32, "nan")], []),
    "masked_attention": (make_masked_attention,
                         [("q", (2, 3, 5, 8)), ("k", (2, 3, 5, 8)),
                          ("v", (2, 3, 5, 8)), ("mask", (2, 1, 5, 5))], []),
    "long_rows": (make_long_rows, [("x", (1, 4, 112, 112)),
                                   ("r", (2, 5000)),
                                   ("logits", (2, 50257))], []),
    "gelu_tanh": (make_gelu_tanh, [("x", (2, 5, 24))], []),
    "gelu_erf": (make_gelu_erf, [("x", (3, 40))], []),
    "dense_block": (make_dense_block, [("x", (1, 4, 7, 7))], []),
    "dense_block8": (make_dense_block8, [("x", (2, 8, 7, 7))], []),
    "embedding": (make_embedding, [("input_ids", (2, 6), np.int64, 30),
                                   ("attention_mask", (2, 6), np.int64,
                                    "mask")], []),
    "grouped_conv": (make_grouped_conv, [("x", (2, 8, 9, 9))], []),
    "shared_conv": (make_shared_conv, [("x", (1, 3, 13, 13))], []),
    "shared_layernorm": (make_shared_layernorm, [("x", (1, 48, 32)),
                                                 ("r", (1, 48, 64))], []),
    "half_transformer": (make_half_transformer,
                         [("x", (2, 5, 32), np.float16)], []),
    "half_convnet": (make_half_convnet, [("x", (1, 4, 12, 12), np.float16)],
                     []),
    "half_gpt_attention": (make_half_gpt_attention,
                           [("x", (1, 32, 64), np.float16)], []),
    "half_split_k": (make_half_split_k, [("x", (1, 8, 1024), np.float16),
                                         ("r", (1, 8, 64), np.float16)], []),
    "resnet_stage": (make_resnet_stage, [("x", (2, 3, 14, 14))], []),
    "mlp": (make_mlp, [("x", (80, 64))], []),
    "resnet_chain": (make_resnet_chain, [("x", (2, 64, 9, 9))], []),
    "resnet_stem": (make_resnet_stem, [("x", (2, 3, 30, 30))], []),
    "planar_stem": (make_planar_stem, [("x", (2, 3, 36, 36))], []),
}
# fp16 models: compared within 2e-3 (ORT rounds every op's result to fp16,
# a cuts kernel once at its store), tighter than the default for float16.
HALF_TOLERANCE = {"half_transformer": "2e-3", "half_convnet": "2e-3",
                  "half_split_k": "2e-3", "half_gpt_attention": "2e-3"}
# Models the compile must make a shared-memory-level fused kernel of (with a
# synthetic tuning cache that favours one: favour_shared).
SHARED = ("shared_conv", "shared_layernorm")


class Runner:
    def __init__(self, cuts, work, gpu=False):
        self.cuts, self.work, self.gpu = cuts, work, gpu
        self.passed = self.failed = 0

    def check(self, name, fn, *args):
        t = time.time()
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - reported, then counted
            self.failed += 1
            print("FAIL %s: %s" % (name, e), flush=True)
            return False
        self.passed += 1
        print("ok   %s (%.1f s)" % (name, time.time() - t), flush=True)
        return True

    def run(self, *args, timeout=900):
        return subprocess.run([self.cuts, *args], capture_output=True,
                              text=True, timeout=timeout)


def require(cond, msg):
    if not cond:
        raise AssertionError(msg)


def save_npy_feeds(d, f):
    args = []
    for k, v in f.items():
        p = os.path.join(d, k + ".npy")
        np.save(p, v)
        args += ["--input", "%s=%s" % (k, p)]
    return args


def synthetic_cache(runner, path, d, import_args, us):
    """`compile --candidates` into d, then d/cache.json giving each
    candidate x the synthetic time us(x, h), h a hash of its key; returns
    the candidates and the cache's path."""
    import hashlib
    import json
    cands = os.path.join(d, "candidates.json")
    r = runner.run("compile", path, "--arch", "sm_90", "-o",
                   os.path.join(d, "listing"), "--candidates", cands,
                   *import_args)
    require(r.returncode == 0, "compile --candidates: " + r.stderr)
    c = json.load(open(cands))["candidates"]
    entries = {}
    for x in c:
        h = int(hashlib.sha256(x["key"].encode()).hexdigest()[:8], 16)
        entries[x["key"]] = {"us": us(x, h), "note": "synthetic"}
    cache = os.path.join(d, "cache.json")
    json.dump({"format": 1, "entries": entries}, open(cache, "w"))
    return c, cache


def is_fused(candidate):
    return "shared-memory-level fusion" in candidate.get("source", "")


def favour_shared(runner, path, d, import_args):
    """A synthetic tuning cache in which the shared-memory-level fused
    candidates are the fastest: the compile then takes the fused group,
    whatever the model's bound prefers at the test's small sizes."""
    _, cache = synthetic_cache(
        runner, path, d, import_args,
        lambda x, h: (1 if is_fused(x) else 50) + h % 100 / 100.0)
    return ["--tuning", cache]


def compile_and_emulate(runner, name, path, import_args, shapes, gpu):
    d = os.path.join(runner.work, name)
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, "out")
    if name in SHARED:
        import_args = import_args + favour_shared(runner, path, d, import_args)
    # A kernel source an earlier compile left must not survive this one.
    os.makedirs(os.path.join(out, "kernels"), exist_ok=True)
    stale = os.path.join(out, "kernels", "stale_99.cu")
    open(stale, "w").write("// an earlier compile's kernel\n")
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                   "--emit-source", *import_args)
    require(r.returncode == 0, "compile failed: " + r.stderr)
    require(not os.path.exists(stale), "an earlier compile's kernel remains")
    for f in ("model.cuts", "model.h", "libmodel.so"):
        require(os.path.getsize(os.path.join(out, f)) > 0, f + " missing")
    kernels = os.listdir(os.path.join(out, "kernels"))
    require(any(k.endswith(".cu") for k in kernels), "no kernel sources")
    for k in kernels:
        if k.endswith(".cu"):
            text = open(os.path.join(out, "kernels", k)).read()
            require("__global__" in text and "// ptxas:" in text,
                    k + " lacks its kernel or ptxas report: " + text[:400])
    if name in SHARED:
        require(any(k.startswith("fused_") and k.endswith(".cu")
                    for k in kernels), "no shared-memory-level fused kernel: "
                + " ".join(sorted(kernels)))
    header = open(os.path.join(out, "model.h")).read()
    require("model_run(cuts_session *session" in header, "model.h: no run()")

    f = feeds(shapes, 7)
    _, ref = tm.ort_outputs(path, f)
    if name == "topk_nan":
        # ONNX Runtime 1.30 orders NaNs otherwise than 1.32 does (and
        # documents): the reference is that order's, computed here.
        ref = topk_nan_reference(f["x"], 4)
    refdir = os.path.join(d, "ref")
    os.makedirs(refdir, exist_ok=True)
    outs = list(ref)
    for n, v in ref.items():
        v = np.asarray(v)  # integer and bool outputs keep their dtype
        if np.issubdtype(v.dtype, np.floating):
            v = v.astype(np.float32)
        np.save(os.path.join(refdir, n + ".npy"), v)
    inputs = save_npy_feeds(d, f)
    art = os.path.join(out, "model.cuts")
    tol = (["--tolerance", HALF_TOLERANCE[name]] if name in HALF_TOLERANCE
           else [])
    r = runner.run("run", art, "--emulate", "--compare", refdir,
                   "--output-dir", d, *tol, *inputs)
    require(r.returncode == 0,
            "emulated outputs differ: " + r.stdout + r.stderr)
    require(r.stdout.count(" ok") == len(outs), "not every output compared: "
            + r.stdout)
    if gpu:
        r = runner.run("run", art, "--compare", refdir, *tol, *inputs)
        require(r.returncode == 0, "GPU outputs differ: " + r.stdout + r.stderr)
        check_bench_kernels(runner, art)
    return art, inputs


def check_bench_kernels(runner, art):
    """cuts bench --kernels: every kernel's time, its work from the compiler
    and its achieved rates against the target's ceilings (or given ones)."""
    import json
    r = runner.run("bench", art, "--kernels", "--json", "--iters", "3",
                   "--warmup", "1")
    require(r.returncode == 0, "bench --kernels: " + r.stderr)
    j = json.loads(r.stdout)
    c = j["ceilings"]
    require(c["from"].endswith(" descriptor") and
            c["peak_flop_per_s"] > 0 and c["bandwidth_bytes_per_s"] > 0,
            "ceilings: %s" % c)
    ks = j["kernels"]
    require(ks and all(k["median_us"] > 0 and k["bytes"] > 0 and
                       k["flops"] >= 0 for k in ks), "kernels: %s" % ks)
    for k in ks:
        rate = k["bytes"] / (k["median_us"] * 1e-6)
        require(abs(k["bytes_per_s"] - rate) <= 1e-6 * rate and
                abs(k["of_bandwidth"] - rate / c["bandwidth_bytes_per_s"])
                <= 1e-9, "rates: %s" % k)
    # Each kernel timed in a graph of its own, repeated: without the host's
    # launch work the kernels add up to about the model's time, not more.
    r = runner.run("bench", art, "--graph", "--kernels", "--json", "--iters",
                   "20")
    require(r.returncode == 0, "bench --graph --kernels: " + r.stderr)
    j = json.loads(r.stdout)
    total = sum(k["median_us"] for k in j["kernels"])
    require(0 < total <= 1.25 * j["median_ms"] * 1e3 + 10,
            "kernels in graphs add up to %.1f us of %.1f" %
            (total, j["median_ms"] * 1e3))
    r = runner.run("bench", art, "--kernels", "--json", "--iters", "3",
                   "--peak-tflops", "10", "--bandwidth-gbs", "1000")
    j = json.loads(r.stdout)
    require(r.returncode == 0 and j["ceilings"]["from"] == "given" and
            j["ceilings"]["peak_flop_per_s"] == 10e12, "given ceilings: %s"
            % j.get("ceilings"))
    # One given: the other is still the descriptor's, and the label says so.
    r = runner.run("bench", art, "--kernels", "--json", "--iters", "3",
                   "--peak-tflops", "10")
    j = json.loads(r.stdout)
    require(r.returncode == 0 and j["ceilings"]["from"].startswith(
        "peak given, the other from the ") and
            j["ceilings"]["bandwidth_bytes_per_s"] == c["bandwidth_bytes_per_s"],
            "one given ceiling: %s" % j.get("ceilings"))


def check_errors(runner, art, inputs, shapes):
    data = open(art, "rb").read()
    bad = os.path.join(os.path.dirname(art), "bad.cuts")
    for what, blob in (("truncated", data[: len(data) // 2]),
                       ("corrupted", data[:100] + bytes([data[100] ^ 1]) +
                        data[101:]),
                       ("empty", b"")):
        open(bad, "wb").write(blob)
        r = runner.run("run", bad, "--emulate", *inputs)
        require(r.returncode != 0 and "cuts: error:" in r.stderr and
                "bad.cuts" in r.stderr,
                "%s artifact: rc %d, %s" % (what, r.returncode, r.stderr))
    # A wrong input shape and an unknown input name are named.
    name, shape = shapes[0][:2]
    wrong = os.path.join(os.path.dirname(art), "wrong.npy")
    np.save(wrong, np.zeros([s + 1 for s in shape], np.float32))
    others = [a for a in inputs if not a.startswith(name + "=")]
    others = [a for a in others if a != "--input"]
    args = []
    for a in others:
        args += ["--input", a]
    r = runner.run("run", art, "--emulate", "--input", name + "=" + wrong,
                   *args)
    require(r.returncode != 0 and name in r.stderr and "shape" in r.stderr,
            "wrong shape: " + r.stderr)
    r = runner.run("run", art, "--emulate", "--input", "nosuch=" + wrong,
                   *inputs)
    require(r.returncode != 0 and "nosuch" in r.stderr,
            "unknown input: " + r.stderr)
    # --output-dir is made where missing (as cuts-mpi makes it); a file in
    # its way is named.
    outdir = os.path.join(os.path.dirname(art), "made", "here")
    shutil.rmtree(os.path.dirname(outdir), ignore_errors=True)
    r = runner.run("run", art, "--emulate", "--output-dir", outdir, *inputs)
    require(r.returncode == 0 and any(f.endswith(".npy")
                                      for f in os.listdir(outdir)),
            "--output-dir not made: " + r.stderr)
    r = runner.run("run", art, "--emulate", "--output-dir", art, *inputs)
    require(r.returncode != 0 and "cannot create" in r.stderr,
            "--output-dir on a file: " + r.stderr)


def check_unmeasured_fusion(runner, path):
    """A cache that measured every candidate but the shared-memory-level
    fused ones (as when --tune-seconds runs out): the last search prices
    those at the worst fraction of its bound a measured group achieved, so
    the slow measured kernels stay (priced at their bound, the unmeasured
    fused pairs would win), and a second compile chooses the same."""
    d = os.path.join(runner.work, "unmeasured_fusion")
    os.makedirs(d, exist_ok=True)
    c, cache = synthetic_cache(
        runner, path, d, [],
        lambda x, h: None if is_fused(x) else 1000 + h % 100 / 100.0)
    require(any(is_fused(x) for x in c), "no fused candidates")
    import json
    e = json.load(open(cache))
    e["entries"] = {k: v for k, v in e["entries"].items() if v["us"]}
    json.dump(e, open(cache, "w"))
    arts = []
    for k in ("a", "b"):
        out = os.path.join(d, k)
        r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                       "--tuning", cache, "--emit-source")
        require(r.returncode == 0, "compile --tuning: " + r.stderr)
        m = re.search(r"(\d+) of (\d+) kernels chosen by measured time",
                      r.stdout)
        require(m and m.group(1) == m.group(2),
                "an unmeasured group was chosen: " + r.stdout)
        require("groups left unmeasured were priced at" in r.stdout,
                "no pricing reported: " + r.stdout)
        require(not any(f.startswith("fused_") for f in
                        os.listdir(os.path.join(out, "kernels"))),
                "an unmeasured fused kernel was chosen")
        arts.append(open(os.path.join(out, "model.cuts"), "rb").read())
    require(arts[0] == arts[1], "two compiles from one cache differ")


def one_input(runner, name):
    """check_tuning_cache's name, model, inputs and reference directory for
    test model `name`, whose one input is x."""
    d = os.path.join(runner.work, name)
    return (name, d + ".onnx", ["--input", "x=" + os.path.join(d, "x.npy")],
            os.path.join(d, "ref"))


def check_tuning_cache(runner, name, path, inputs, refdir,
                       library="cudnn.conv", extra=(), chosen=True):
    """--candidates lists what a cache lacks; a cache of (synthetic) times
    makes the choice, every kernel chosen by time, `library` calls among
    them (emulated by the CPU) unless not `chosen`; two compiles from the
    same cache give byte-identical artifacts whose outputs still match.
    `extra`: compile arguments (--precision)."""
    import json
    d = os.path.join(runner.work, name + "_tuning" + "".join(extra))
    os.makedirs(d, exist_ok=True)

    def us(x, h):
        # The library "wins" its groups, so library kernels (emulated by a
        # CPU convolution or product) are in the plan too; two convolutions
        # fused at the shared-memory level hold no library call: they lose,
        # so the groups the library serves stay.
        if x.get("library") == library:
            return 1 + h % 100 / 100.0
        return 5 + h % 1000 / 10.0 + (1000 if is_fused(x) else 0)
    c, cache = synthetic_cache(runner, path, d, list(extra), us)
    require(len(c) > 3, "only %d candidates" % len(c))
    require(any(x.get("library") == library for x in c),
            "no %s candidates" % library)
    # Each candidate names its group; every group has a level-0 one (timed
    # first, so a budget never leaves a group with no time at all).
    groups = {x["group"] for x in c}
    require(min(groups) >= 0 and
            groups == {x["group"] for x in c if x["level"] == 0},
            "groups without a level-0 candidate: %s" %
            sorted({(x["group"], x["level"]) for x in c}))
    arts = []
    for k in ("b", "c"):
        out = os.path.join(d, k)
        r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                       "--tuning", cache, *extra)
        require(r.returncode == 0, "compile --tuning: " + r.stderr)
        m = re.search(r"(\d+) of (\d+) kernels chosen by measured time",
                      r.stdout)
        require(m and m.group(1) == m.group(2), "not all chosen by time: " +
                r.stdout)
        art = open(os.path.join(out, "model.cuts"), "rb").read()
        if chosen:
            require(re.search(r"\(([1-9]\d*) of them library", r.stdout),
                    "no library kernel chosen: " + r.stdout)
            require(library.encode() in art,
                    "no %s kernel in the plan" % library)
        # tuning.json: each group's fastest generated and library times,
        # and which one the plan took.
        t = json.load(open(os.path.join(out, "tuning.json")))["groups"]
        require(t and all((g["chosen"] == "library") ==
                          (g["libraryUs"] is not None and
                           (g["generatedUs"] is None or
                            g["libraryUs"] <= g["generatedUs"])) for g in t),
                "tuning.json: %s" % t)
        require(all(g["variant"] in ("", "prefetch", "persistent",
                                     "persistent, B resident", "patch")
                    for g in t),
                "tuning.json variants: %s" % t)
        here = os.path.dirname(os.path.abspath(__file__))
        rep = subprocess.run([sys.executable, os.path.join(
            here, "..", "..", "scripts", "tuning_report.py"),
            os.path.join(out, "tuning.json")], capture_output=True, text=True)
        require(rep.returncode == 0 and "with a library alternative" in
                rep.stdout, "tuning_report.py: " + rep.stdout + rep.stderr)
        arts.append(art)
    require(arts[0] == arts[1], "two compiles from one cache differ")
    # Each library step keeps its group's fastest generated kernel as the
    # alternative a run without a CUDA graph takes (the emulator too, but
    # for --graph): both ways match the reference.
    man = read_manifest(os.path.join(d, "b", "model.cuts"))
    ks = man["kernels"]
    lib_steps = [x for x in man["steps"]
                 if x["kernel"] >= 0 and ks[x["kernel"]].get("library")]
    if chosen:
        require(lib_steps and all(
            "hostKernel" in x and not ks[x["hostKernel"]].get("library")
            for x in lib_steps), "library steps without a generated "
            "alternative: %s" % lib_steps)
    for graph in ((), ("--graph",)):
        r = runner.run("run", os.path.join(d, "b", "model.cuts"), "--emulate",
                       *graph, "--compare", refdir, *inputs)
        require(r.returncode == 0, "tuned kernels differ%s: %s%s" %
                (" (graph)" if graph else "", r.stdout, r.stderr))
        # On the GPU too: the library calls replayed, the alternatives not
        # (cuBLASLt's: the synthetic times may pick a cuDNN algorithm the
        # GPU's cuDNN does not offer for the shape).
        if runner.gpu and library == "cublaslt.gemm":
            r = runner.run("run", os.path.join(d, "b", "model.cuts"), *graph,
                           "--compare", refdir, *inputs)
            require(r.returncode == 0, "on the GPU%s: %s%s" %
                    (" (graph)" if graph else "", r.stdout, r.stderr))
    if not runner.gpu:
        r = runner.run("tune", d, "--cache", os.path.join(d, "new.json"))
        require(r.returncode != 0 and "cuts: error:" in r.stderr,
                "tune without a GPU must fail cleanly: " + r.stderr)


def check_targets(runner):
    """Kernels build for every --arch: an fp16 model for sm_90 alone uses
    wgmma, for sm_90 and sm_80 only mma.sync (sm_80 has no wgmma)."""
    path = os.path.join(runner.work, "half_transformer.onnx")
    for archs, wgmma in (("sm_90", True), ("sm_90,sm_80", False)):
        out = os.path.join(runner.work, "targets", archs)
        r = runner.run("compile", path, "--arch", archs, "-o", out)
        require(r.returncode == 0, archs + ": " + r.stderr)
        art = open(os.path.join(out, "model.cuts"), "rb").read()
        require((b"wgmma.mma_async" in art) == wgmma and
                b"cuts_ldmatrix" in art, archs + ": wrong instructions")


def check_tf32(runner):
    """--precision tf32 keeps fp32 tensors and gives the library calls tf32
    math, which the CPU emulates by rounding their operands: the outputs
    match the fp32 reference within tf32's default tolerance, and not
    within fp32's."""
    name, path, inputs, ref = one_input(runner, "resnet_block")
    check_tuning_cache(runner, name, path, inputs, ref, "cudnn.conv",
                       ("--precision", "tf32"))
    art = os.path.join(runner.work, "resnet_block_tuning--precisiontf32", "b",
                       "model.cuts")
    require(b'"tf32"' in open(art, "rb").read(), "no tf32 in the artifact")
    r = runner.run("run", art, "--emulate", "--compare", ref, "--tolerance",
                   "1e-6", *inputs)
    require(r.returncode != 0, "tf32 products matched fp32 to 1e-6: " +
            r.stdout)


def check_validate(runner, path):
    """cuts validate samples kept and pruned sets of each conv as kernels
    for cuts tune; validate_report.py joins them with (synthetic) times."""
    import json
    d = os.path.join(runner.work, "validate")
    r = runner.run("validate", path, "--arch", "h200", "-o", d, "--samples",
                   "12")
    require(r.returncode == 0, "validate: " + r.stderr)
    v = json.load(open(os.path.join(d, "validation.json")))["samples"]
    c = json.load(open(os.path.join(d, "candidates.json")))["candidates"]
    require(len(v) == len(c) > 0, "%d samples, %d candidates" % (len(v), len(c)))
    require(any(s["kept"] for s in v) and any(not s["kept"] for s in v),
            "the samples must hold kept and pruned sets")
    # Synthetic times that follow the PUL ranking exactly: Spearman 1.
    cache = {s["key"]: {"us": 1.0 / s["pul"], "note": "synthetic"} for s in v}
    json.dump({"format": 1, "entries": cache},
              open(os.path.join(d, "cache.json"), "w"))
    here = os.path.dirname(os.path.abspath(__file__))
    report = os.path.join(here, "..", "..", "scripts", "validate_report.py")
    r = subprocess.run([sys.executable, report, d], capture_output=True,
                       text=True)
    require(r.returncode == 0 and "measured fastest kept in" in r.stdout,
            "validate_report: " + r.stdout + r.stderr)
    rows = json.load(open(os.path.join(d, "report.json")))
    require(rows and all(x["best_kept"] and x["spearman"] > 0.99
                         for x in rows), "report: %s" % rows)
    require("a kept set within 5 %% of it in %d;" % len(rows) in r.stdout,
            "validate_report: " + r.stdout)


def bf16_round(x):
    """float32 -> the nearest bfloat16 (ties to even), as float32."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7fff + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


def check_bf16(runner):
    """A bf16 linear layer + relu (ONNX Runtime's CPU has no bf16 MatMul:
    the reference is NumPy's, in float64 from the bf16 values)."""
    d = os.path.join(runner.work, "bf16_linear")
    os.makedirs(os.path.join(d, "ref"), exist_ok=True)
    r = np.random.default_rng(27)
    w = bf16_round(r.standard_normal((48, 24)) * 0.2)
    x = bf16_round(r.standard_normal((3, 48)))
    bits = (w.view(np.uint32) >> 16).astype(np.uint16)
    t = helper.make_tensor("w", TensorProto.BFLOAT16, [48, 24],
                           bits.tobytes(), raw=True)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["t"]),
         helper.make_node("Relu", ["t"], ["y"])], "bf16_linear",
        [tm.vi("x", [3, 48], TensorProto.BFLOAT16)],
        [tm.vi("y", [3, 24], TensorProto.BFLOAT16)], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(d, "bf16_linear.onnx")
    onnx.save(m, path)
    y = np.maximum(x.astype(np.float64) @ w.astype(np.float64), 0)
    np.save(os.path.join(d, "ref", "y.npy"), y.astype(np.float32))
    np.save(os.path.join(d, "x.npy"), x)  # float32 holding bf16 values
    out = os.path.join(d, "out")
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out)
    require(r.returncode == 0, "compile failed: " + r.stderr)
    r = runner.run("run", os.path.join(out, "model.cuts"), "--emulate",
                   "--compare", os.path.join(d, "ref"), "--tolerance", "4e-3",
                   "--input", "x=" + os.path.join(d, "x.npy"))
    require(r.returncode == 0, "emulated outputs differ: " + r.stdout
            + r.stderr)


# fp32 models compiled with --precision fp16 / bf16, against the fp32
# reference: within 2e-3 and 1e-2 (measured at most 5.2e-4 and 4.7e-3,
# tighter than cuts run's defaults for the precisions).
REDUCED = ("conv_bn_relu", "mobilenet_block", "rows", "attention",
           "masked_attention", "long_rows",
           "gelu_tanh", "embedding", "shared_conv", "shared_layernorm",
           "two_outputs", "resnet_stage", "dense_block", "dense_block8",
           "channel_shuffle", "upsample_neck", "resnet_stem", "planar_stem")
REDUCED_TOLERANCE = {"fp16": "2e-3", "bf16": "1e-2", "tf32": "2e-3"}
# Models whose convs or products run on tensor cores in tf32 too.
TF32 = ("conv_bn_relu", "mobilenet_block", "attention", "masked_attention",
        "shared_conv",
        "resnet_stage")


def check_reduced_precision(runner, name, precision):
    d = os.path.join(runner.work, name)
    out = os.path.join(d, precision)
    r = runner.run("compile", os.path.join(runner.work, name + ".onnx"),
                   "--arch", "sm_90", "--precision", precision, "-o", out)
    require(r.returncode == 0, "compile failed: " + r.stderr)
    shapes = MODELS[name][1]
    inputs = [a for s in shapes for a in
              ("--input", s[0] + "=" + os.path.join(d, s[0] + ".npy"))]
    r = runner.run("run", os.path.join(out, "model.cuts"), "--emulate",
                   "--compare", os.path.join(d, "ref"), "--tolerance",
                   REDUCED_TOLERANCE[precision], *inputs)
    require(r.returncode == 0, "emulated outputs differ: " + r.stdout
            + r.stderr)
    if precision == "tf32":
        art = open(os.path.join(out, "model.cuts"), "rb").read()
        require(b"cuts_mma_tf32" in art, "no tf32 tensor-core kernel")
    if runner.gpu:
        r = runner.run("run", os.path.join(out, "model.cuts"), "--compare",
                       os.path.join(d, "ref"), "--tolerance",
                       REDUCED_TOLERANCE[precision], *inputs)
        require(r.returncode == 0, "GPU outputs differ: " + r.stdout
                + r.stderr)


def check_cublas_gelu(runner):
    """A Linear layer's tanh GELU is cuBLASLt's GELU epilogue (activation
    2 in its spec), emulated by the CPU as the tanh form."""
    import json
    name, path, inputs, ref = one_input(runner, "gelu_tanh")
    check_tuning_cache(runner, name, path, inputs, ref, "cublaslt.gemm")
    c = json.load(open(os.path.join(runner.work, name + "_tuning",
                                    "candidates.json")))["candidates"]
    acts = [x["libraryParams"][11] for x in c
            if x.get("library") == "cublaslt.gemm"]
    require(2 in acts, "no cuBLASLt GELU epilogue among %s" % acts)
    if runner.gpu:
        # fp32's 1e-5 tells the tanh form from erf's (4e-4 apart).
        r = runner.run("run", os.path.join(runner.work, name + "_tuning", "b",
                                           "model.cuts"), "--compare", ref,
                       *inputs)
        require(r.returncode == 0, "cuBLASLt's GELU on the GPU: " + r.stdout
                + r.stderr)


def compare_emulated_and_gpu(runner, out, d, precision):
    """The artifact in `out`, run on input d/x.npy emulated (and on a GPU
    where there is one), matches d/ref within the precision's tolerance."""
    inputs = ["--input", "x=" + os.path.join(d, "x.npy")]
    for where in (["--emulate"], [] if runner.gpu else None):
        if where is None:
            continue
        r = runner.run("run", os.path.join(out, "model.cuts"), *where,
                       "--compare", os.path.join(d, "ref"), "--tolerance",
                       REDUCED_TOLERANCE[precision], *inputs)
        require(r.returncode == 0, "outputs differ %s: %s" % (
            where, r.stdout + r.stderr))


def favouring(marker):
    """Synthetic times (synthetic_cache's `us`): candidates whose source
    holds `marker` fastest, library calls slowest. A library call timed
    here is never tried: the GPU may refuse it (cuDNN's FFT algorithms
    on a bf16 NHWC conv), which a tuner's measurement would have found."""
    return lambda c, h: ((1 if marker in c.get("source", "")
                          else 100 if c.get("library") else 50)
                         + h % 100 / 100.0)


def compile_favouring(runner, name, precision, marker, tag):
    """Test model `name` compiled in `precision` from a synthetic tuning
    cache in which candidates whose source holds `marker` are fastest, into
    work/name/tag_precision (its candidates beside it); returns that."""
    d = os.path.join(runner.work, name)
    path = os.path.join(runner.work, name + ".onnx")
    args = ["--precision", precision]
    _, cache = synthetic_cache(
        runner, path, os.path.join(d, tag + "_cache_" + precision), args,
        favouring(marker))
    out = os.path.join(d, tag + "_" + precision)
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                   "--emit-source", "--tuning", cache, *args)
    require(r.returncode == 0, "compile failed: " + r.stderr)
    return out


def check_chained_product(runner, precision):
    """resnet_chain with a synthetic tuning cache in which chained products
    are fastest: the compile makes them, and their outputs (emulated, and on
    a GPU) match the fp32 reference within the precision's tolerance."""
    name = "resnet_chain"
    d = os.path.join(runner.work, name)
    out = compile_favouring(runner, name, precision, "// chained:", "chain")
    kernels = os.listdir(os.path.join(out, "kernels"))
    require(any(k.startswith("chain_") and k.endswith(".cu") for k in kernels),
            "no chained product: " + " ".join(sorted(kernels)))
    compare_emulated_and_gpu(runner, out, d, precision)


def check_pooled(runner, precision):
    """resnet_stem compiled untuned makes its stem and max pooling one
    pooled implicit GEMM, and its 1x1 conv and average pooling another,
    whose outputs (emulated, and on a GPU) match the fp32 reference within
    the precision's tolerance; tuned with patch variants fastest, the stem
    reads its input patch and matches too."""
    name = "resnet_stem"
    d = os.path.join(runner.work, name)
    out = os.path.join(d, "pooled_" + precision)
    r = runner.run("compile", os.path.join(runner.work, name + ".onnx"),
                   "--arch", "sm_90", "-o", out, "--emit-source",
                   "--precision", precision)
    require(r.returncode == 0, "compile failed: " + r.stderr)
    kernels = os.path.join(out, "kernels")
    pooled = [open(os.path.join(kernels, k)).read().split("\n")[2]
              for k in sorted(os.listdir(kernels))
              if k.startswith("pooled_") and k.endswith(".cu")]
    require(sum(", max pool 3x3" in h for h in pooled) == 1
            and sum(", average pool 2x2" in h for h in pooled) == 1,
            "not one max- and one average-pooled implicit GEMM: %s" % pooled)
    compare_emulated_and_gpu(runner, out, d, precision)
    # Tuned with patches fastest: the stem (4-channel pixels) reads A from
    # its input patch (one block a tile, or persistent blocks looping over
    # them), and still matches.
    import json
    out = compile_favouring(runner, name, precision, "copyPatch(", "patched")
    t = json.load(open(os.path.join(out, "tuning.json")))["groups"]
    kernels = os.path.join(out, "kernels")
    patched = [k for k in sorted(os.listdir(kernels)) if k.endswith(".cu")
               and "copyPatch(" in open(os.path.join(kernels, k)).read()]
    require(len(patched) == 1 and
            sum(g["variant"] in ("patch", "persistent") for g in t) == 1,
            "not one patch kernel: %s %s"
            % (patched, [(g["ops"], g["variant"]) for g in t]))
    compare_emulated_and_gpu(runner, out, d, precision)


def check_planar(runner, precision, io):
    """planar_stem with a synthetic tuning cache in which planar patch
    kernels are fastest: its stem reads the model's NCHW input in place
    (the transpose, the channel pad and, for an fp32 input, the cast in its
    kernel, no conversion kernel before it), and matches the fp32 reference
    emulated and on a GPU; with `io`, from an input in the precision
    (--io-precision)."""
    import json
    name = "planar_stem"
    d = os.path.join(runner.work, name)
    path = os.path.join(runner.work, name + ".onnx")
    args = ["--precision", precision]
    tag = "planar_" + precision
    x = os.path.join(d, "x.npy")
    if io:
        args += ["--io-precision", precision]
        tag += "_io"
        x = os.path.join(d, "x_" + precision + ".npy")
        np.save(x, np.load(os.path.join(d, "x.npy")).astype(np.float16))
    _, cache = synthetic_cache(
        runner, path, os.path.join(d, tag + "_cache"), args,
        favouring("The planar patch"))
    out = os.path.join(d, tag)
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                   "--emit-source", "--tuning", cache, *args)
    require(r.returncode == 0, "compile failed: " + r.stderr)
    groups = json.load(open(os.path.join(out, "tuning.json")))["groups"]
    stem = [g["ops"] for g in groups if "conv(" in g["ops"]]
    require(len(stem) == 1 and "transpose(" in stem[0]
            and "max_pool(" in stem[0],
            "the input's transpose is not in the stem's kernel: %s"
            % [g["ops"] for g in groups])
    kernels = os.path.join(out, "kernels")
    planar = [k for k in sorted(os.listdir(kernels)) if k.endswith(".cu")
              and "The planar patch" in open(os.path.join(kernels, k)).read()]
    require(len(planar) == 1, "not one planar patch kernel: %s" % planar)
    for where in (["--emulate"], [] if runner.gpu else None):
        if where is None:
            continue
        r = runner.run("run", os.path.join(out, "model.cuts"), *where,
                       "--compare", os.path.join(d, "ref"), "--tolerance",
                       REDUCED_TOLERANCE[precision], "--input", "x=" + x)
        require(r.returncode == 0, "outputs differ %s: %s" % (
            where, r.stdout + r.stderr))


def check_cudnn_nhwc(runner):
    """resnet_stage in fp16 runs every conv channels-last, its 3-channel
    stem padded to 4; cuDNN's calls for them are NHWC (ConvSpec's
    channelsLast), and emulated as such."""
    import json
    check_tuning_cache(runner, *one_input(runner, "resnet_stage"),
                       "cudnn.conv", ("--precision", "fp16"))
    d = os.path.join(runner.work, "resnet_stage_tuning--precisionfp16")
    c = json.load(open(os.path.join(d, "candidates.json")))["candidates"]
    last = [x["libraryParams"][21] for x in c
            if x.get("library") == "cudnn.conv"]
    require(last.count(1) >= 5 and last.count(0) == 0,
            "cuDNN calls NHWC / NCHW: %d / %d" % (last.count(1),
                                                  last.count(0)))


def check_precision_errors(runner):
    """A constant fp16 cannot hold, an unknown precision or layout and a
    mismatched --io-precision: clear errors, no artifact."""
    b = tm.Builder(28)
    b.node("Mul", ["x", b.const(np.full([4], 1e5, np.float32))])
    tm.rename_last(b, "y")
    path = b.model(os.path.join(runner.work, "big_constant.onnx"),
                   [tm.vi("x", [4])], [tm.vi("y", [4])])
    out = os.path.join(runner.work, "big_constant")
    shutil.rmtree(out, ignore_errors=True)  # a reused work folder's artifact
    for args, want in (
            (["--precision", "fp16"], "cannot hold a constant 100000"),
            (["--precision", "fp8"], "needs one of fp32, tf32, fp16, bf16"),
            (["--layout", "nhwc"], "--layout needs auto or nchw"),
            (["--precision", "tf32", "--io-precision", "fp16"],
             "--io-precision fp16 needs --precision fp16"),
            (["--precision", "fp16", "--io-precision", "bf16"],
             "--io-precision bf16 needs --precision bf16")):
        r = runner.run("compile", path, "--arch", "sm_90", "-o", out, *args)
        require(r.returncode != 0 and want in r.stderr
                and "cuts: error:" in r.stderr,
                " ".join(args) + ": " + r.stderr)
        require(not os.path.exists(os.path.join(out, "model.cuts")),
                " ".join(args) + " left an artifact")
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                   "--precision", "bf16")
    require(r.returncode == 0, "bf16 holds 1e5: " + r.stderr)
    # A cache where the tuned compile writes its report would be lost.
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out, "--tuning",
                   os.path.join(out, "tuning.json"))
    require(r.returncode != 0 and "tuned compile's report" in r.stderr,
            "--tuning DIR/tuning.json: " + r.stderr)


def check_integer_inputs(runner, art):
    """An int64 input takes an int32 file (converted) but refuses a float
    one, naming the input; outputs are written in their dtype."""
    d = os.path.dirname(os.path.dirname(art))
    ids = np.load(os.path.join(d, "input_ids.npy"))
    mask = os.path.join(d, "attention_mask.npy")
    p32 = os.path.join(d, "ids32.npy")
    np.save(p32, ids.astype(np.int32))
    r = runner.run("run", art, "--emulate", "--input", "input_ids=" + p32,
                   "--input", "attention_mask=" + mask, "--compare",
                   os.path.join(d, "ref"))
    require(r.returncode == 0, "int32 ids: " + r.stdout + r.stderr)
    pf = os.path.join(d, "idsf.npy")
    np.save(pf, ids.astype(np.float32))
    r = runner.run("run", art, "--emulate", "--input", "input_ids=" + pf,
                   "--input", "attention_mask=" + mask)
    require(r.returncode != 0 and "input 'input_ids'" in r.stderr and
            "float32" in r.stderr and "int64" in r.stderr,
            "float ids: " + r.stderr)
    pad = np.load(os.path.join(d, "pad.npy"))
    require(pad.dtype == np.bool_ and np.array_equal(
        pad, np.load(os.path.join(d, "ref", "pad.npy"))),
            "pad.npy: %s %s" % (pad.dtype, pad))


def check_exported_bert(runner):
    """BERT as the PyTorch dynamo exporter writes it (a 2-layer config,
    structure from test/models/exported, random weights): int64 ids and a
    padded mask, Gather, the mask's Cast/GatherND/And/Where, batched matmuls,
    LayerNorm and softmax over warp lanes; emulated against ONNX Runtime."""
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.path.join(runner.work, "bert_small")
    model = inflated("bert_small_s128_dyn20", d)
    r = runner.run("compile", model, "--arch", "sm_90", "-o",
                   os.path.join(d, "out"))
    require(r.returncode == 0, "compile: " + r.stderr)
    ref = subprocess.run(
        [sys.executable, os.path.join(here, "..", "..", "scripts",
                                      "reference.py"), model,
         os.path.join(d, "in"), os.path.join(d, "ref")],
        capture_output=True, text=True)
    require(ref.returncode == 0, "reference.py: " + ref.stderr)
    r = runner.run("run", os.path.join(d, "out", "model.cuts"), "--emulate",
                   "--compare", os.path.join(d, "ref"),
                   *ref.stdout.split())
    require(r.returncode == 0, "emulated BERT differs: " + r.stdout + r.stderr)
    # In fp16 its Linear layers run on wgmma and its attention products on
    # mma.sync: emulated, against the fp32 reference (measured 7.2e-4).
    r = runner.run("explain", model, "--arch", "sm_90", "--precision", "fp16")
    require(r.returncode == 0 and "[tc: wgmma]" in r.stdout and
            "[tc: mma.sync]" in r.stdout, "fp16 BERT off the tensor cores: " +
            r.stdout + r.stderr)
    r = runner.run("compile", model, "--arch", "sm_90", "-o",
                   os.path.join(d, "fp16"), "--precision", "fp16")
    require(r.returncode == 0, "compile --precision fp16: " + r.stderr)
    r = runner.run("run", os.path.join(d, "fp16", "model.cuts"), "--emulate",
                   "--compare", os.path.join(d, "ref"), "--tolerance", "2e-3",
                   *ref.stdout.split())
    require(r.returncode == 0, "emulated fp16 BERT differs: " + r.stdout +
            r.stderr)


def check_attention_fusion(runner):
    """The mask add joins the scores' product and the heads' transpose the
    P x V product, in fp32 (SIMT) and fp16 (tensor cores; fp16 inputs, as
    a mask computed in the model would be)."""
    model = os.path.join(runner.work, "masked_attention.onnx")
    for precision in (["fp32"], ["fp16", "--io-precision", "fp16"]):
        r = runner.run("explain", model, "--arch", "sm_90", "--json",
                       "--precision", *precision)
        require(r.returncode == 0, "explain: " + r.stderr)
        groups = [[o["op"] for o in g["ops"]]
                  for g in json.loads(r.stdout)["groups"]]
        for want in (["cuts.matmul", "cuts.mul", "cuts.add"],
                     ["cuts.matmul", "cuts.transpose"]):
            require(want in groups, "%s: no kernel %s in %s" %
                    (precision, want, groups))


def check_qkv_in_place(runner, path):
    """The scores' product reads Q and K, the P x V product V, in place
    from the fused Q|K|V product: their slices join the products' kernels
    and none is a kernel of its own."""
    r = runner.run("explain", path, "--arch", "sm_90", "--json")
    require(r.returncode == 0, "explain: " + r.stderr)
    groups = [[o["op"] for o in g["ops"]]
              for g in json.loads(r.stdout)["groups"]]
    slices = [g for g in groups if "cuts.slice" in g]
    require(len(slices) == 2 and
            all("cuts.matmul" in g for g in slices) and
            sum(g.count("cuts.slice") for g in slices) == 3,
            "Q, K and V not read in place: %s" % groups)


def check_split_k(runner):
    """The long product over one tile runs as two fp32 partial products
    (A read in place through a transpose) and their sum, which joins the
    residual's kernel; --split-k off keeps it whole."""
    model = os.path.join(runner.work, "half_split_k.onnx")
    for mode, split in (("auto", True), ("off", False)):
        r = runner.run("explain", model, "--arch", "sm_90", "--json",
                       "--split-k", mode)
        require(r.returncode == 0, "explain: " + r.stderr)
        groups = [[o["op"] for o in g["ops"]]
                  for g in json.loads(r.stdout)["groups"]]
        parts = ["cuts.transpose", "cuts.matmul"] in groups
        require(parts == split, "--split-k %s: kernels %s" % (mode, groups))
        if split:
            require(any("cuts.slice" in g and "cuts.add" in g
                        for g in groups), "no kernel sums the parts: %s"
                    % groups)


def check_split_k_kernel(runner, name, extra, library=False):
    """A synthetic tuning cache in which split-K kernels are the fastest:
    the product's blocks each sum a part of K and the last of a tile's adds
    the parts (Kernel::splitK). Emulated and on a GPU (blocks of a tile
    arriving in any order) the outputs match ONNX Runtime; the partials and
    counters are in the manifest, the counters as session state. With
    `library`, cuBLASLt is faster still: its call's generated alternative
    for host runs, which may touch only the call's tensors, is the split-K
    kernel's unsplit form."""
    path = os.path.join(runner.work, name + ".onnx")
    d = os.path.join(runner.work, name)
    if not os.path.isdir(os.path.join(d, "ref")):  # run alone (-k split)
        MODELS[name][0](path)
        compile_and_emulate(runner, name, path, MODELS[name][2],
                            MODELS[name][1], False)
    w = os.path.join(runner.work, name + "_splitk" + "".join(extra) +
                     ("_library" if library else ""))
    os.makedirs(w, exist_ok=True)

    def us(x, h):
        if x.get("library") == "cublaslt.gemm" and library:
            return 0.5
        return (1 if "split-K:" in x.get("source", "") else 50) + \
            h % 100 / 100.0
    c, cache = synthetic_cache(runner, path, w, list(extra), us)
    require(any("split-K:" in x.get("source", "") for x in c),
            "no split-K candidates")
    out = os.path.join(w, "out")
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                   "--tuning", cache, "--emit-source", *extra)
    require(r.returncode == 0, "compile: " + r.stderr)
    srcs = [open(os.path.join(out, "kernels", k)).read()
            for k in os.listdir(os.path.join(out, "kernels"))
            if k.endswith(".cu")]
    m = read_manifest(os.path.join(out, "model.cuts"))
    if library:
        require(any(k.get("library") for k in m["kernels"]),
                "no library call chosen")
        require(not any("split-K:" in s for s in srcs) and
                not any("_arrived" in t["name"] for t in m["tensors"]),
                "a library call's host alternative splits K")
        srcs = []
    require(library or any("split-K:" in s for s in srcs),
            "no split-K kernel chosen")
    kinds = {t["name"].rsplit("_", 1)[-1].rstrip("0123456789"): t["kind"]
             for t in m["tensors"] if "_partials" in t["name"] or
             "_arrived" in t["name"]}
    require(library or kinds == {"partials": "intermediate",
                                 "arrived": "state"},
            "split-K workspace: %s" % kinds)
    inputs = save_npy_feeds(d, feeds(MODELS[name][1], 7))
    tol = (["--tolerance", HALF_TOLERANCE[name]] if name in HALF_TOLERANCE
           else [])
    art = os.path.join(out, "model.cuts")
    for mode in [("--emulate",)] + ([()] if runner.gpu else []):
        r = runner.run("run", art, *mode, "--compare",
                       os.path.join(d, "ref"), *tol, *inputs)
        require(r.returncode == 0, "split-K run %s: %s" % (mode, r.stdout +
                                                             r.stderr))
    if runner.gpu:
        r = runner.run("bench", art, "--iters", "20", "--graph")
        require(r.returncode == 0, "bench --graph: " + r.stderr)


def inflated(name, d):
    """test/models/exported/NAME.onnx with its weights inflated into d
    (inflate.py); the model's path there."""
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([sys.executable, os.path.join(here, "inflate.py"),
                    os.path.join(here, "exported", name + ".onnx"), d],
                   check=True, capture_output=True)
    return os.path.join(d, name + ".onnx")


def check_unmeasured_tuning(runner):
    """Exported ResNet-50 at batch 1, compiled in fp16 from an empty tuning
    cache (a tuned compile's path, nothing measured: a GPU-less rebuild, or
    a tuning budget spent): every group the search picks has a kernel. Its
    last conv, residual add and ReLU once became a pooled implicit GEMM
    with the global average pooling, whose staged tile cannot be pooled
    with a residual, and the compile failed with no kernel for it."""
    d = os.path.join(runner.work, "unmeasured_r50")
    path = inflated("resnet50_b1_ts17", d)
    cache = os.path.join(d, "empty.json")
    with open(cache, "w") as f:
        json.dump({"entries": {}, "format": 1}, f)
    out = os.path.join(d, "out")
    r = runner.run("compile", path, "--arch", "h200", "--precision", "fp16",
                   "-o", out, "--tuning", cache)
    require(r.returncode == 0, "compile failed: " + r.stderr)
    groups = json.load(open(os.path.join(out, "tuning.json")))["groups"]
    pooled = [g["ops"] for g in groups if g.get("fusion") == "pooled"]
    require(not any("add(" in g for g in pooled),
            "a pooled group with a residual: %s" % pooled)


def read_manifest(art):
    """The artifact's manifest (its JSON section)."""
    import json
    import struct
    b = open(art, "rb").read()
    for i in range(struct.unpack_from("<I", b, 12)[0]):
        e = 64 + 64 * i
        if b[e:e + 32].rstrip(b"\0") == b"manifest":
            off, size = struct.unpack_from("<QQ", b, e + 32)
            return json.loads(b[off:off + size])
    raise AssertionError("no manifest in " + art)


def check_early_launches(runner, path, d):
    """Each kernel that lets its dependent launch at its start (not its
    blocks' exit) is followed by a programmatic dependent, and the two grids
    fit an H100's 132 SMs side by side; --no-sync launches none early."""
    early = 0
    for flag in ("", "--no-sync"):
        out = os.path.join(d, "early" + flag.replace("-", "_"))
        r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                       "--emit-source", *([flag] if flag else []))
        require(r.returncode == 0, "compile %s: %s" % (flag, r.stderr))
        m = read_manifest(os.path.join(out, "model.cuts"))
        for i, s in enumerate(m["steps"][:-1]):
            k = m["kernels"][s["kernel"]] if s["kernel"] >= 0 else None
            if k is None or k.get("library"):
                continue
            with open(os.path.join(out, "kernels", k["name"] + ".cu")) as f:
                if "griddepcontrol.launch_dependents" not in f.read():
                    continue
            early += 1
            nxt = m["steps"][i + 1]
            require(not flag and nxt.get("pdl") and
                    k["grid"] + m["kernels"][nxt["kernel"]]["grid"] <= 132,
                    "%s launches its dependent early: %s" % (flag, k["name"]))
    require(early > 0, "no early launch")


def check_sync_modes(runner, path, d):
    """By default each generated kernel after another is a programmatic
    dependent (PDL), launched early where both grids fit the SMs side by
    side; --no-sync leaves stream order alone; --sync-all adds a
    side stream, the semaphores and the epoch, each consumer over PDL (sm_90
    has it), and runs on the GPU as stream order does."""
    modes = {}
    for flag in ("", "--no-sync", "--sync-all"):
        out = os.path.join(d, "mode" + flag.replace("-", "_"))
        r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                       *([flag] if flag else []))
        require(r.returncode == 0, "compile %s: %s" % (flag, r.stderr))
        modes[flag] = read_manifest(os.path.join(out, "model.cuts"))
    steps = {f: m["steps"] for f, m in modes.items()}
    require(any(s.get("pdl") for s in steps[""]), "no PDL step by default")
    check_early_launches(runner, os.path.join(runner.work,
                                              "mobilenet_block.onnx"), d)
    require(not any(s.get("pdl") or s.get("stream") for s in
                    steps["--no-sync"]), "--no-sync kept PDL or streams")
    m = modes["--sync-all"]
    require(any(s.get("stream") == 1 for s in m["steps"]) and
            any(t["kind"] == "state" for t in m["tensors"]),
            "--sync-all made no pair")
    names = [m["kernels"][s["kernel"]]["name"] for s in m["steps"]]
    require(names[-1] == "cuts_sync_epoch" and "cuts_sync_wait" in names,
            "the epoch and wait kernels: %s" % names)
    waits = [i for i, n in enumerate(names) if n == "cuts_sync_wait"]
    require(all(m["steps"][i + 1].get("overPdl") for i in waits),
            "consumers not over PDL: %s" % m["steps"])
    if runner.gpu:
        r = runner.run("run", os.path.join(d, "mode__sync_all", "model.cuts"),
                       "--compare", os.path.join(d, "ref"),
                       *save_npy_feeds(d, feeds(MODELS["mlp"][1], 7)))
        require(r.returncode == 0, "synchronised run over PDL: " + r.stdout +
                r.stderr)


def check_sync_tuned(runner, path, d):
    """The tuner's word on a pair, read from the tuning cache: a policy
    measured faster than stream order and PDL makes the pair whatever the
    model predicts; one measured slower keeps it apart, and a consumer
    measured slower as a programmatic dependent runs without PDL."""
    import json
    cache = os.path.join(d, "pairs.json")
    if os.path.exists(cache):
        os.remove(cache)

    def compile_with(entries):
        if entries is not None:
            with open(cache, "w") as f:
                json.dump({"format": 1, "entries": entries}, f)
        out = os.path.join(d, "tuned-sync")
        r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                       "--tuning", cache)
        require(r.returncode == 0, "compile --tuning: " + r.stderr)
        with open(os.path.join(out, "tuning.json")) as f:
            report = json.load(f)["sync"]
        return r.stdout, report, read_manifest(os.path.join(out,
                                                            "model.cuts"))

    _, report, _ = compile_with(None)
    require(report and all(p["key"] and not p["measured"] for p in report),
            "untimed pairs: %s" % report)
    pair = report[0]

    def times(stream, pdl, policy, over_pdl=None):
        k = pair["key"] + "/pair/"
        t = {k + "stream": {"us": stream, "note": ""},
             k + "pdl": {"us": pdl, "note": ""},
             k + pair["policy"]: {"us": policy, "note": ""}}
        if over_pdl is not None:
            t[k + pair["policy"] + "/pdl"] = {"us": over_pdl, "note": ""}
        return t

    out, report, m = compile_with(times(100.0, 100.0, 50.0))
    require(report[0]["chosen"] and report[0]["measured"]["syncUs"] == 50.0,
            "a pair measured faster is made: %s" % report[0])
    # cuts explain --sync plans the same pairs from the same cache.
    r = runner.run("explain", path, "--arch", "h100", "--sync", "--json",
                   "--tuning", cache)
    require(r.returncode == 0, "explain --sync: " + r.stderr)
    explained = json.loads(r.stdout)["sync"]
    require([(p["producer"], p["chosen"]) for p in explained] ==
            [(p["producer"], p["chosen"]) for p in report],
            "explain --sync: %s, compile: %s" % (explained, report))
    require("made %s -> %s" % (pair["producer"], pair["consumer"]) in out and
            "measured 100.0 us in stream order" in out, out)
    require(any(s.get("stream") == 1 for s in m["steps"]), "no side stream")
    require(not report[0]["overPdl"] and
            not any(s.get("overPdl") for s in m["steps"]),
            "two streams measured, over PDL not: %s" % m["steps"])
    if runner.gpu:  # the pair on two streams
        r = runner.run("run", os.path.join(d, "tuned-sync", "model.cuts"),
                       "--compare", os.path.join(d, "ref"),
                       *save_npy_feeds(d, feeds(MODELS["mlp"][1], 7)))
        require(r.returncode == 0, "a pair on two streams: " + r.stdout +
                r.stderr)
    # Over PDL measured fastest: the consumer runs so.
    out, report, m = compile_with(times(100.0, 100.0, 50.0, 40.0))
    require(report[0]["chosen"] and report[0]["overPdl"] and
            report[0]["measured"]["syncUs"] == 40.0 and
            "over PDL" in out and
            any(s.get("overPdl") for s in m["steps"]),
            "a pair measured fastest over PDL runs so: %s" % report[0])
    out, report, m = compile_with(times(100.0, 150.0, 120.0))
    require(not report[0]["chosen"] and
            report[0]["why"] == "the tuner measured no gain",
            "a pair measured slower is kept apart: %s" % report[0])
    names = [m["kernels"][s["kernel"]]["name"] for s in m["steps"]]
    consumer = m["steps"][names.index(pair["consumer"])]
    require(not consumer.get("pdl") and not any(s.get("stream") for s in
                                                m["steps"]),
            "PDL measured slower is off: %s" % m["steps"])
    if not runner.gpu:
        return
    # On the GPU the tuner times the pair itself (every pair: --sync-all).
    os.remove(cache)
    out = os.path.join(d, "tuned-sync-gpu")
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out, "--tune",
                   "--tuning", cache, "--sync-all")
    require(r.returncode == 0, "compile --tune --sync-all: " + r.stderr)
    with open(os.path.join(out, "tuning.json")) as f:
        report = json.load(f)["sync"]
    require(report and all(p["chosen"] and p["measured"] and
                           p["measured"]["streamUs"] > 0 and
                           p["measured"]["syncUs"] > 0 for p in report),
            "every pair timed on the GPU: %s" % report)
    r = runner.run("run", os.path.join(out, "model.cuts"), "--compare",
                   os.path.join(d, "ref"),
                   *save_npy_feeds(d, feeds(MODELS["mlp"][1], 7)))
    require(r.returncode == 0, "tuned synchronised run: " + r.stdout +
            r.stderr)


def make_dynamic_batch(path, kind):
    """Models whose inputs' axis 0 is symbolic ("N"): a CNN head (conv,
    ReLU, global pool, flatten, product), a row model (a batched input
    scaled by an unbatched one, a product, softmax), or one that centres
    its rows on the batch's mean (which mixes rows)."""
    from onnx import helper as h, numpy_helper as nh, TensorProto as T
    r = np.random.default_rng(3)

    def w(name, *shape):
        return nh.from_array((r.standard_normal(shape) * 0.3)
                             .astype(np.float32), name)
    if kind == "cnn":
        nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"],
                             pads=[1, 1, 1, 1]),
                 h.make_node("Relu", ["c"], ["r"]),
                 h.make_node("GlobalAveragePool", ["r"], ["p"]),
                 h.make_node("Flatten", ["p"], ["f"]),
                 h.make_node("MatMul", ["f", "fw"], ["y"])]
        inputs = [h.make_tensor_value_info("x", T.FLOAT, ["N", 3, 8, 8])]
        outputs = [h.make_tensor_value_info("y", T.FLOAT, ["N", 5])]
        inits = [w("w", 8, 3, 3, 3), w("b", 8), w("fw", 8, 5)]
    elif kind == "centred":  # rows minus the batch's mean: mixes rows
        nodes = [h.make_node("ReduceMean", ["x"], ["mu"], axes=[0],
                             keepdims=1),
                 h.make_node("Sub", ["x", "mu"], ["c"]),
                 h.make_node("MatMul", ["c", "mw"], ["y"])]
        inputs = [h.make_tensor_value_info("x", T.FLOAT, ["N", 16])]
        outputs = [h.make_tensor_value_info("y", T.FLOAT, ["N", 8])]
        inits = [w("mw", 16, 8)]
    else:
        nodes = [h.make_node("Mul", ["x", "s"], ["m"]),
                 h.make_node("MatMul", ["m", "mw"], ["p"]),
                 h.make_node("Softmax", ["p"], ["y"], axis=-1)]
        inputs = [h.make_tensor_value_info("x", T.FLOAT, ["N", 6, 16]),
                  h.make_tensor_value_info("s", T.FLOAT, [16])]
        outputs = [h.make_tensor_value_info("y", T.FLOAT, ["N", 6, 8])]
        inits = [w("mw", 16, 8)]
    g = h.make_graph(nodes, kind, inputs, outputs, inits)
    # IR 8: what the ONNX Runtime of older hosts reads.
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)],
                           ir_version=8), path)
    return path


def section_sizes(art):
    """The artifact's sections by name: their sizes (the layout in
    runtime/include/cuts/Artifact.h)."""
    import struct
    with open(art, "rb") as f:
        b = f.read()
    count = struct.unpack_from("<I", b, 12)[0]
    out = {}
    for i in range(count):
        e = 64 + 64 * i
        name = b[e:e + 32].split(b"\0")[0].decode()
        out[name] = struct.unpack_from("<Q", b, e + 40)[0]
    return out


def check_batch_profiles(runner):
    """--batch 1,3,4 on models with a symbolic batch: one artifact that
    serves batches 1 to 4 (2 padded to 3) matching ONNX Runtime, emulated
    and on a GPU (host bindings with cuts run, device bindings with cuts
    bench); weights stored once; clear errors for batches and models that
    profiles cannot serve."""
    import onnxruntime as ort
    for kind in ("cnn", "rows"):
        d = os.path.join(runner.work, "batch_" + kind)
        os.makedirs(d, exist_ok=True)
        path = make_dynamic_batch(os.path.join(d, "model.onnx"), kind)
        out = os.path.join(d, "out")
        r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                       "--batch", "4,1,3")
        require(r.returncode == 0, "compile --batch: " + r.stderr)
        require("combine" not in r.stderr and "warning" not in r.stderr,
                "rows found mixed in %s: %s" % (kind, r.stderr))
        require(all("at batch %d" % b in r.stdout for b in (1, 3, 4)),
                r.stdout)
        art = os.path.join(out, "model.cuts")
        sizes = section_sizes(art)
        require("manifest.3" in sizes and "manifest.4" in sizes, sizes)
        one = os.path.join(d, "one")
        r = runner.run("compile", path, "--arch", "sm_90", "-o", one,
                       "--batch", "4")
        require(r.returncode == 0, r.stderr)
        require(sizes["weights"] ==
                section_sizes(os.path.join(one, "model.cuts"))["weights"],
                "the profiles store their weights once")
        sess = ort.InferenceSession(path)
        modes = [("--emulate",)] + ([()] if runner.gpu else [])
        for n in (1, 2, 3, 4):
            rng = np.random.default_rng(n)
            feeds = {"x": rng.standard_normal(
                (n, 3, 8, 8) if kind == "cnn" else (n, 6, 16))
                .astype(np.float32)}
            if kind == "rows":
                feeds["s"] = rng.standard_normal(16).astype(np.float32)
            ref = os.path.join(d, "ref%d" % n)
            os.makedirs(ref, exist_ok=True)
            np.save(os.path.join(ref, "y.npy"), sess.run(None, feeds)[0])
            args = save_npy_feeds(os.path.join(d, "ref%d" % n), feeds)
            for mode in modes:
                r = runner.run("run", art, *mode, "--compare", ref, *args)
                require(r.returncode == 0, "%s batch %d %s: %s%s" %
                        (kind, n, mode, r.stdout, r.stderr))
                if not mode:
                    require(("(padded)" in r.stdout) == (n == 2), r.stdout)
        x5 = os.path.join(d, "x5.npy")
        np.save(x5, np.zeros((5, 3, 8, 8) if kind == "cnn" else (5, 6, 16),
                             np.float32))
        r = runner.run("run", art, "--emulate", "--input", "x=" + x5,
                       *(["--input", "s=" + os.path.join(d, "ref1", "s.npy")]
                         if kind == "rows" else []))
        require(r.returncode != 0 and "axis 0 a batch from 1 to 4" in r.stderr,
                "batch 5: " + r.stderr)
        if kind == "rows":  # a non-batch dimension that differs
            x7 = os.path.join(d, "x7.npy")
            np.save(x7, np.zeros((2, 7, 16), np.float32))
            r = runner.run("run", art, "--emulate", "--input", "x=" + x7,
                           "--input", "s=" + os.path.join(d, "ref1", "s.npy"))
            require(r.returncode != 0 and "the model takes [2,6,16]" in
                    r.stderr, "a wrong non-batch dimension: " + r.stderr)
            # One tuning cache for every profile; the report lists them.
            tuned = os.path.join(d, "tuned")
            r = runner.run("compile", path, "--arch", "sm_90", "-o", tuned,
                           "--batch", "1,3,4", "--tuning",
                           os.path.join(d, "cache.json"))
            require(r.returncode == 0, "compile --batch --tuning: " + r.stderr)
            with open(os.path.join(tuned, "tuning.json")) as f:
                report = json.load(f)
            require([p["batch"] for p in report["profiles"]] == [1, 3, 4] and
                    all(p["groups"] for p in report["profiles"]),
                    "tuning.json per profile: %s" % report.keys())
        if runner.gpu:
            r = runner.run("bench", art, "--batch", "2", "--iters", "5")
            require(r.returncode == 0 and "padded to profile 3" in r.stdout,
                    "bench --batch 2: " + r.stdout + r.stderr)
            for extra in (("--graph",), ("--kernels",)):
                r = runner.run("bench", art, "--batch", "3", "--iters", "5",
                               *extra)
                require(r.returncode == 0 and "padded" not in r.stdout,
                        "bench --batch 3: " + r.stdout + r.stderr)
            r = runner.run("bench", art, "--batch", "5", "--iters", "5")
            require(r.returncode != 0 and "max_batch 5" in r.stderr,
                    "bench --batch 5: " + r.stderr)
            # A repeated device list: the split, without pre-loading, the
            # master-GPU baseline; each entry's breakdown.
            for extra in ((), ("--no-preload",), ("--master-gpu",)):
                r = runner.run("bench", art, "--gpus", "0,0", "--batch", "3",
                               "--iters", "5", "--json", *extra)
                require(r.returncode == 0, "bench --gpus %s: %s" %
                        (extra, r.stderr))
                j = json.loads(r.stdout)
                mv = j["movement"]
                require(len(mv) == 2 and all(m["runs"] == 5 and
                                             m["compute_ms"] > 0 for m in mv),
                        "bench --gpus %s: %s" % (extra, mv))
                master = "--master-gpu" in extra
                require((mv[1]["peer_ms"] > 0) == master and
                        mv[0]["h2d_ms"] > 0, "bench --gpus %s: %s" %
                        (extra, mv))
                if extra == ("--no-preload",):
                    require(j["h2d_hidden_fraction"] == 0, j)
            # The second entry's weights sent from the first; NCCL takes
            # one rank a device (or is missing).
            r = runner.run("bench", art, "--gpus", "0,0", "--batch", "3",
                           "--iters", "3", "--json", "--weights", "peer")
            require(r.returncode == 0 and
                    json.loads(r.stdout)["movement"][1]["broadcast_ms"] > 0,
                    "bench --weights peer: " + r.stdout + r.stderr)
            r = runner.run("bench", art, "--gpus", "0,0", "--batch", "3",
                           "--iters", "3", "--weights", "nccl")
            require(r.returncode != 0 and "NCCL" in r.stderr,
                    "bench --weights nccl on 0,0: " + r.stderr)
        r = runner.run("bench", art, "--gpus", "0", "--weights", "disk")
        require(r.returncode != 0 and "--weights needs host, peer or nccl"
                in r.stderr, "--weights disk: " + r.stderr)
        for alone in ("--master-gpu", "--no-preload"):
            r = runner.run("bench", art, alone)
            require(r.returncode != 0 and "go with --gpus" in r.stderr,
                    "bench %s alone: %s" % (alone, r.stderr))
        r = runner.run("bench", art, "--gpus", "0,x")
        require(r.returncode != 0 and "--gpus needs device ordinals" in
                r.stderr, "bench --gpus 0,x: " + r.stderr)
    for bad in ("0", "2,2", "x", ""):
        r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                       "--batch", bad)
        require(r.returncode != 0 and "--batch needs batch sizes" in r.stderr,
                "--batch %r: %s" % (bad, r.stderr))
    # A model whose rows depend on each other: a warning at compile time;
    # its profiles' own batches run (matching ONNX Runtime), a padded one
    # is refused, as is a device list's split.
    d = os.path.join(runner.work, "batch_centred")
    os.makedirs(d, exist_ok=True)
    path = make_dynamic_batch(os.path.join(d, "model.onnx"), "centred")
    out = os.path.join(d, "out")
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                   "--batch", "1,4")
    require(r.returncode == 0 and "reduce_mean" in r.stderr and
            "reduces over the batch axis" in r.stderr,
            "compile of a row-mixing model: " + r.stderr)
    sess = ort.InferenceSession(path)
    for n in (4, 2):
        x = np.random.default_rng(n).standard_normal((n, 16)) \
            .astype(np.float32)
        ref = os.path.join(d, "ref%d" % n)
        os.makedirs(ref, exist_ok=True)
        np.save(os.path.join(ref, "y.npy"), sess.run(None, {"x": x})[0])
        np.save(os.path.join(d, "x%d.npy" % n), x)
        for mode in [("--emulate",)] + ([()] if runner.gpu else []):
            r = runner.run("run", os.path.join(out, "model.cuts"), *mode,
                           "--input", "x=" + os.path.join(d, "x%d.npy" % n),
                           "--compare", ref)
            if n == 4:
                require(r.returncode == 0, "batch 4: " + r.stdout + r.stderr)
            else:
                require(r.returncode != 0 and "would be padded" in r.stderr,
                        "batch 2 %s: %s" % (mode, r.stderr))
    if runner.gpu:
        r = runner.run("run", os.path.join(out, "model.cuts"), "--gpus", "0,0",
                       "--input", "x=" + os.path.join(d, "x4.npy"))
        require(r.returncode != 0 and "splits its batch, but" in r.stderr,
                "a device list of a row-mixing model: " + r.stderr)
    fixed = os.path.join(runner.work, "mlp.onnx")
    if not os.path.exists(fixed):
        make_mlp(fixed)
    r = runner.run("compile", fixed, "--arch", "sm_90", "-o",
                   os.path.join(runner.work, "mlp_batch"), "--batch", "2,4")
    require(r.returncode != 0 and "no input has a symbolic batch dimension"
            in r.stderr, "--batch on a fixed model: " + r.stderr)


def check_compress(runner):
    """cuts compress: the 3:1 weight format on a compiled model: about 3x
    fewer bytes, the weights' error under the format's 2^-5, bf16 beside
    it, the outputs' error measured by running the restored model, and the
    restored artifact written and valid."""
    path = os.path.join(runner.work, "compress_mlp.onnx")
    make_mlp(path)
    out = os.path.join(runner.work, "compress_mlp")
    r = runner.run("compile", path, "--arch", "sm_90", "-o", out)
    require(r.returncode == 0, "compile: " + r.stderr)
    art = os.path.join(out, "model.cuts")
    restored = os.path.join(out, "restored.cuts")
    modes = [("--emulate",)] + ([()] if runner.gpu else [])
    for mode in modes:
        r = runner.run("compress", art, *mode, "--json", "-o", restored)
        require(r.returncode == 0, "compress %s: %s" % (mode, r.stderr))
        rep = json.loads(r.stdout)
        require(2.9 < rep["ratio"] <= 3.0 and rep["fp32_weights"] > 30000,
                "ratio: %s" % rep)
        require(0 < rep["weights"]["rel_l2"] < 1 / 32 and
                rep["bf16_truncation"]["rel_l2"] < rep["weights"]["rel_l2"],
                "weights' error: %s" % rep)
        require(0 < rep["outputs"]["rel_l2"] < 0.2, "outputs: %s" % rep)
    x = os.path.join(out, "x.npy")
    np.save(x, np.ones((80, 64), np.float32))
    r = runner.run("run", restored, "--emulate", "--input", "x=" + x)
    require(r.returncode == 0, "the restored artifact runs: " + r.stderr)
    r = runner.run("compress", os.path.join(out, "model.h"), "--emulate")
    require(r.returncode != 0 and "cuts: error:" in r.stderr,
            "compress of a non-artifact: " + r.stderr)


def check_weight_codecs(runner):
    """compile --weight-codecs ships the codecs' kernels; a device list
    sends its weights encoded only when asked, with clear errors otherwise.
    On a GPU, weights sent 3:1 give the outputs, bit for bit, of the
    artifact whose weights cuts compress restored on the CPU; bf16 stays
    within its truncation."""
    d = os.path.join(runner.work, "codecs")
    os.makedirs(d, exist_ok=True)
    path = make_dynamic_batch(os.path.join(d, "model.onnx"), "cnn")
    art, bare = os.path.join(d, "out", "model.cuts"), os.path.join(
        d, "bare", "model.cuts")
    for out, extra in ((art, ("--weight-codecs",)), (bare, ())):
        r = runner.run("compile", path, "--arch", "sm_90", "-o",
                       os.path.dirname(out), "--batch", "1,2,4", *extra)
        require(r.returncode == 0, "compile %s: %s" % (extra, r.stderr))
    require("codec.sm_90" in section_sizes(art) and
            "codec.sm_90" not in section_sizes(bare), section_sizes(art))
    x = os.path.join(d, "x.npy")
    np.save(x, np.random.default_rng(4).standard_normal((4, 3, 8, 8))
            .astype(np.float32))
    gpus = ("--gpus", "0,0", "--input", "x=" + x)
    for model, extra, want in (
            (art, ("--weight-codec", "3to1"), "needs weight_source"),
            (bare, ("--weights", "peer", "--weight-codec", "3to1"),
             "has no weight codecs"),
            (art, ("--emulate", "--weight-codec", "bf16"),
             "not with --emulate"),
            (art, ("--weight-codec", "zip"),
             "--weight-codec needs none, 3to1 or bf16")):
        r = runner.run("run", model, *gpus, *extra)
        require(r.returncode != 0 and want in r.stderr,
                "run %s: %s" % (extra, r.stderr))
    if not runner.gpu:
        return
    restored = os.path.join(d, "restored.cuts")
    r = runner.run("compress", art, "--emulate", "-o", restored)
    require(r.returncode == 0, "compress: " + r.stderr)
    outs = {}
    for name, model, extra in (
            ("plain", art, ()),
            ("restored", restored, ("--weights", "peer")),
            ("3to1", art, ("--weights", "peer", "--weight-codec", "3to1")),
            ("bf16", art, ("--weights", "peer", "--weight-codec", "bf16"))):
        o = os.path.join(d, "y_" + name)
        os.makedirs(o, exist_ok=True)
        r = runner.run("run", model, *gpus, "--output-dir", o, *extra)
        require(r.returncode == 0, "run %s: %s" % (name, r.stderr))
        outs[name] = np.load(os.path.join(o, "y.npy"))
    require(np.array_equal(outs["3to1"], outs["restored"]),
            "3:1 on the GPU differs from the CPU's restored weights: %s %s" %
            (outs["3to1"], outs["restored"]))
    # Two distinct GPUs where the host has them: each entry's own memory,
    # peer copies and NCCL (where it loads).
    if gpu_count() >= 2:
        two = ("--gpus", "0,1", "--input", "x=" + x)
        for name, model, extra in (
                ("restored01", restored, ("--weights", "peer")),
                ("3to1_01", art, ("--weights", "peer", "--weight-codec",
                                  "3to1")),
                ("nccl01", art, ("--weights", "nccl", "--weight-codec",
                                 "3to1"))):
            o = os.path.join(d, "y_" + name)
            os.makedirs(o, exist_ok=True)
            r = runner.run("run", model, *two, "--output-dir", o, *extra)
            if name == "nccl01" and "cannot load NCCL" in r.stderr:
                print("NCCL is not installed: its codec path not checked")
                continue
            require(r.returncode == 0, "run %s: %s" % (name, r.stderr))
            outs[name] = np.load(os.path.join(o, "y.npy"))
        for name in ("3to1_01", "nccl01"):
            if name in outs:
                require(np.array_equal(outs[name], outs["restored01"]),
                        "%s differs from the restored weights" % name)
    for name, limit in (("3to1", 0.1), ("bf16", 0.02)):
        err = (np.linalg.norm(outs[name] - outs["plain"]) /
               np.linalg.norm(outs["plain"]))
        require(0 < err < limit, "%s: relative L2 %g" % (name, err))
    r = runner.run("bench", art, "--gpus", "0,0", "--iters", "3", "--json",
                   "--weights", "peer", "--weight-codec", "3to1")
    require(r.returncode == 0, "bench --weight-codec: " + r.stderr)
    mv = json.loads(r.stdout)["movement"]
    require(mv[0]["codec_ms"] > 0 and mv[1]["codec_ms"] > 0 and
            mv[1]["broadcast_bytes"] > 0 and mv[0]["broadcast_bytes"] == 0,
            "bench --weight-codec: %s" % mv)


def gpu_count():
    """The GPUs nvidia-smi lists (0 without it)."""
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                           text=True)
    except OSError:
        return 0
    return r.stdout.count("GPU ") if r.returncode == 0 else 0


def check_collectives(runner):
    """cuts collectives: clear errors for bad options; on a GPU, every
    collective on copy engines over a repeated device list checks its
    result (the tool fails otherwise) and reports its bandwidth."""
    for extra, want in ((("--sizes", "1M"), "--gpus is required"),
                        (("--gpus", "0,x"), "--gpus needs device ordinals"),
                        (("--gpus", "0", "--sizes", "1Q"), "--sizes needs"),
                        (("--gpus", "0", "--collective", "gather"),
                         "--collective needs"),
                        (("--gpus", "0", "--engine", "dma"),
                         "--engine needs ce, nccl or both")):
        r = runner.run("collectives", *extra)
        require(r.returncode != 0 and want in r.stderr,
                "collectives %s: %s" % (extra, r.stderr))
    if not runner.gpu:
        return
    lists = ["0", "0,0", "0,0,0"] + (["0,1"] if gpu_count() >= 2 else [])
    for gpus in lists:
        r = runner.run("collectives", "--gpus", gpus, "--sizes", "64K,3M",
                       "--iters", "3", "--engine", "ce", "--json")
        require(r.returncode == 0, "collectives on %s: %s" % (gpus, r.stderr))
        rows = json.loads(r.stdout)["rows"]
        require(len(rows) == 6 and all(x["algbw_gbs"] > 0 for x in rows),
                "collectives on %s: %s" % (gpus, rows))


def check_bert_base_tp(runner, d, rng):
    """BERT-base (12 layers) compiled --tensor-parallel 2 on a repeated
    device (0,0, and 0,1 where there are two GPUs) against the unsplit
    model on the GPU (fp32, 1e-5)."""
    model = inflated("bert_base_s128_dyn20", d)
    ids, mask = os.path.join(d, "ids.npy"), os.path.join(d, "mask.npy")
    np.save(ids, rng.integers(0, 30000, (1, 128)).astype(np.int64))
    m = np.ones((1, 128), np.int64)
    m[0, 90:] = 0
    np.save(mask, m)
    feeds = ("--input", "input_ids=" + ids, "--input", "attention_mask=" + mask)
    ref = os.path.join(d, "ref")
    os.makedirs(ref, exist_ok=True)
    for ranks in (1, 2):
        out = os.path.join(d, "tp%d" % ranks)
        extra = ("--tensor-parallel", "2") if ranks > 1 else ()
        r = runner.run("compile", model, "--arch", "sm_90", "-o", out, *extra)
        require(r.returncode == 0, "BERT-base compile %s: %s" % (extra,
                                                                 r.stderr))
        art = os.path.join(out, "model.cuts")
        if ranks == 1:
            r = runner.run("run", art, *feeds, "--output-dir", ref)
            require(r.returncode == 0, "BERT-base on the GPU: " + r.stderr)
            continue
        for gpus in ["0,0"] + (["0,1"] if gpu_count() >= 2 else []):
            r = runner.run("run", art, "--gpus", gpus, *feeds, "--compare",
                           ref, "--tolerance", "1e-5")
            require(r.returncode == 0, "BERT-base on 2 ranks (%s): %s%s" %
                    (gpus, r.stdout, r.stderr))


def largest_step_weights(art):
    """The most weight bytes one step of the artifact's plan reads (each
    weight rounded up to 256, as a slot of streamed weights holds them)."""
    m = read_manifest(art)
    t = m["tensors"]
    size = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2,
            "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}

    def root(i):
        while t[i]["kind"] == "view":
            i = t[i]["viewOf"]
        return i
    most = 0
    for st in m["steps"]:
        args = (m["kernels"][st["kernel"]]["args"] if st["kernel"] >= 0
                else [st["from"]])
        ws = {root(a) for a in args if t[root(a)]["kind"] == "weight"}
        most = max(most, sum((int(np.prod(t[w]["shape"])) *
                              size[t[w]["dtype"]] + 255) // 256 * 256
                             for w in ws))
    return most


def check_weight_dedupe(runner):
    """Weight bytes are stored once: two constants of one value (as a tied
    embedding and its copy folded for a product are) share an offset in
    the artifact, and the model still computes (x + c) relu, times c."""
    d = os.path.join(runner.work, "dedupe")
    os.makedirs(d, exist_ok=True)
    c = np.random.default_rng(7).standard_normal(256).astype(np.float32)
    nodes = [helper.make_node("Add", ["x", "c1"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Mul", ["r", "c2"], ["y"])]
    g = helper.make_graph(
        nodes, "dedupe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 256])],
        [numpy_helper.from_array(c, "c1"),
         numpy_helper.from_array(c.reshape(1, 256), "c2")])
    path = os.path.join(d, "dedupe.onnx")
    onnx.save(helper.make_model(g, opset_imports=[
        helper.make_opsetid("", 17)]), path)
    r = runner.run("compile", path, "--arch", "sm_90", "-o", d)
    require(r.returncode == 0, "compile: " + r.stderr)
    art = os.path.join(d, "model.cuts")
    weights = [t for t in read_manifest(art)["tensors"]
               if t["kind"] == "weight"]
    require(len(weights) == 2 and
            len({t["weightOffset"] for t in weights}) == 1,
            "weights: %s" % weights)
    x = np.random.default_rng(8).standard_normal((4, 256)).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    r = runner.run("run", art, "--input", "x=" + os.path.join(d, "x.npy"),
                   "--output-dir", d, *([] if runner.gpu else ["--emulate"]))
    require(r.returncode == 0, "run: " + r.stderr)
    y = np.load(os.path.join(d, "y.npy"))
    require(np.allclose(y, np.maximum(x + c, 0) * c, atol=1e-6),
            "outputs differ from (x + c) relu, times c")


def check_offload(runner):
    """--weight-budget: BERT (2 layers) with at most a budget of weights on
    the GPU, the rest streamed from the artifact file chunk by chunk (two
    slots); its outputs are the resident run's, bit for bit, with a budget
    of a few chunks and with one chunk a step, and so are those of its
    cuSync pairs (--sync-all, over PDL) streamed; bench reports the bytes
    streamed a run, their read rate and a plain sequential read's. A budget
    below the largest step's weights, or one that is not a size, is a
    clear error."""
    d = os.path.join(runner.work, "offload")
    r = runner.run("compile", inflated("bert_small_s128_dyn20", d),
                   "--arch", "sm_90", "-o", d)
    require(r.returncode == 0, "compile: " + r.stderr)
    art = os.path.join(d, "model.cuts")
    ids, mask = os.path.join(d, "ids.npy"), os.path.join(d, "mask.npy")
    rng = np.random.default_rng(4)
    np.save(ids, rng.integers(0, 1000, (1, 128)).astype(np.int64))
    np.save(mask, np.ones((1, 128), np.int64))
    feeds = ("--input", "input_ids=" + ids, "--input", "attention_mask=" + mask)
    r = runner.run("run", art, *feeds, "--weight-budget", "12Q")
    require(r.returncode != 0 and "--weight-budget needs a size" in r.stderr,
            "--weight-budget 12Q: " + r.stderr)
    # --gpu-memory counts the activations too (said before any GPU).
    r = runner.run("run", art, *feeds, "--gpu-memory", "4K")
    require(r.returncode != 0 and "leaves no room for weights" in r.stderr,
            "--gpu-memory 4K: " + r.stderr)
    r = runner.run("bench", art, "--gpu-memory", "1G", "--weight-budget",
                   "1G")
    require(r.returncode != 0 and "two ways to say one thing" in r.stderr,
            "--gpu-memory with --weight-budget: " + r.stderr)
    if not runner.gpu:
        return
    most = largest_step_weights(art)
    ref = os.path.join(d, "ref")
    os.makedirs(ref, exist_ok=True)
    r = runner.run("run", art, *feeds, "--output-dir", ref)
    require(r.returncode == 0, "resident run: " + r.stderr)
    for budget in (2 * most, 8 * most):
        r = runner.run("run", art, *feeds, "--weight-budget", str(budget),
                       "--compare", ref, "--tolerance", "1e-12")
        require(r.returncode == 0, "budget %d: %s%s" % (budget, r.stdout,
                                                        r.stderr))
    # cuSync pairs (over PDL) whose steps chunks may start at.
    synced = os.path.join(d, "sync")
    r = runner.run("compile", os.path.join(d, "bert_small_s128_dyn20.onnx"),
                   "--arch", "sm_90", "-o", synced, "--sync-all")
    require(r.returncode == 0 and "cuSync: 0 of" not in r.stdout,
            "compile --sync-all: " + r.stdout + r.stderr)
    for budget in (2 * most, 8 * most):
        r = runner.run("run", os.path.join(synced, "model.cuts"), *feeds,
                       "--weight-budget", str(budget), "--compare", ref,
                       "--tolerance", "1e-12")
        require(r.returncode == 0, "synchronised, budget %d: %s%s"
                % (budget, r.stdout, r.stderr))
    # A total of the arena and two slots of two steps streams too.
    arena = int(json.loads(runner.run("bench", art, "--iters", "1",
                                      "--json").stdout)["arena_bytes"])
    r = runner.run("run", art, *feeds, "--gpu-memory", str(arena + 4 * most),
                   "--compare", ref, "--tolerance", "1e-12")
    require(r.returncode == 0, "--gpu-memory: %s%s" % (r.stdout, r.stderr))
    r = runner.run("bench", art, "--weight-budget", str(2 * most), "--iters",
                   "5", "--json")
    require(r.returncode == 0, "bench with streamed weights: " + r.stderr)
    j = json.loads(r.stdout)
    require(j["streamed_bytes_per_run"] > 0 and j["stream_read_gbs"] > 0 and
            j["sequential_read_gbs"] > 0, "streaming figures: %s" % j)
    r = runner.run("run", art, *feeds, "--weight-budget", str(most))
    require(r.returncode != 0 and "more than a slot" in r.stderr,
            "a budget below a step's weights: " + r.stderr)


def check_plan(runner):
    """cuts plan: the BigCuts planner ranks every split of a cluster (its
    splits of 32 GPUs, both schedules); impossible cluster files and GPU
    counts are clear errors."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    model = os.path.join(root, "examples", "bigcuts", "gpt3-175b.json")
    cluster = os.path.join(root, "perfmodel", "cluster", "clusters", "a.json")
    r = runner.run("plan", model, "--cluster", cluster, "--json")
    require(r.returncode == 0, "plan: " + r.stderr)
    j = json.loads(r.stdout)
    rows = j["configs"]
    require(j["gpus"] == 32 and len(rows) == 42 and
            all(x["dp"] * x["wp"] * x["p"] == 32 for x in rows) and
            rows[0]["normalised"] >= 1 and
            rows == sorted(rows, key=lambda x: (not x["feasible"],
                                                x["time_tot_s"])),
            "plan rows: %s" % rows[:3])
    # A compiled model: its weight-reading kernels give the averages.
    d = os.path.join(runner.work, "plan_bert")
    r = runner.run("compile", inflated("bert_small_s128_dyn20", d),
                   "--arch", "sm_90", "-o", d)
    require(r.returncode == 0, "compile: " + r.stderr)
    c = os.path.join(root, "perfmodel", "cluster", "clusters", "c.json")
    r = runner.run("plan", os.path.join(d, "model.cuts"), "--cluster", c,
                   "--batch", "512", "--micro-batch", "8", "--json")
    require(r.returncode == 0, "plan of a compiled model: " + r.stderr)
    rows = json.loads(r.stdout)["configs"]
    require(len(rows) == 30 and all(x["time_compute_s"] > 0 for x in rows),
            "plan of a compiled model: %s" % rows[:2])
    r = runner.run("plan", os.path.join(d, "model.cuts"), "--cluster", c,
                   "--batch", "12", "--micro-batch", "8")
    require(r.returncode != 0 and "multiple of --micro-batch" in r.stderr,
            "--batch 12 --micro-batch 8: " + r.stderr)
    bad = os.path.join(runner.work, "zero_bandwidth.json")
    c = json.load(open(cluster))
    c["storage_gbs_per_gpu"] = 0
    json.dump(c, open(bad, "w"))
    for extra, want in ((("--cluster", bad), "storage_gbs_per_gpu"),
                        (("--cluster", cluster, "--gpus", "64"),
                         "more than its 8 nodes x 4 GPUs"),
                        ((), "needs a model description and --cluster")):
        r = runner.run("plan", model, *extra)
        require(r.returncode != 0 and want in r.stderr,
                "plan %s: %s" % (extra, r.stderr))


def check_c3(runner):
    """cuts c3: clear errors for bad options; on a GPU, two of Table II's
    scenarios at a small scale: the slowdown tables of every split, every
    configuration timed (the collectives' results checked first), each as
    % of the ideal speedup, and the model's pick among them."""
    for extra, want in ((("--gpus", "0,0,1"), "as many ranks as the others"),
                        (("--gpus", "0"), "takes 2 to 8 ranks"),
                        (("--scale", "2"), "--scale needs a factor"),
                        (("--scenarios", "cb9_1G"), "no scenario 'cb9_1G'"),
                        (("--collective", "gather"), "--collective needs")):
        r = runner.run("c3", *extra)
        require(r.returncode != 0 and want in r.stderr,
                "c3 %s: %s" % (extra, r.stderr))
    if not runner.gpu:
        return
    r = runner.run("c3", "--gpus", "0,0", "--scenarios", "cb1_896M,mb1_896M",
                   "--scale", "0.25", "--splits", "16,32", "--iters", "2",
                   "--json")
    require(r.returncode == 0, "c3: " + r.stderr)
    runs = [json.loads(r.stdout)]
    # On real peers (a rank a GPU: each runs the GEMM and pulls its chunks
    # over the links, or the copy engines move them), where there are two.
    if gpu_count() >= 2:
        r = runner.run("c3", "--gpus", "0,1", "--scenarios", "cb1_896M",
                       "--scale", "0.25", "--splits", "16,32", "--iters",
                       "2", "--json")
        require(r.returncode == 0, "c3 on 0,1: " + r.stderr)
        runs.append(json.loads(r.stdout))
        require(runs[-1]["gpus"] == 2, "c3 on 0,1: %s" % runs[-1]["gpus"])
    for j in runs:
        rows, splits = j["scenarios"], j["tables"]["splits"]
        require(len(rows) in (2, 4) and len(splits) == 2 and
                all(s["comm_sms"] > 0 and s["cb1_slowdown"] > 0
                    for s in splits), "c3 tables: %s" % j["tables"])
        for row in rows:
            names = [c["config"] for c in row["configs"]]
            require(len(names) == 7 and row["pick"] in names and
                    all(c["ms"] > 0 and math.isfinite(c["pct_ideal"])
                        for c in row["configs"]), "c3 row: %s" % row)


def check_tensor_parallel(runner):
    """compile --tensor-parallel-check N on BERT (2 layers, random weights):
    Q, K, V and FFN1 split by columns, the output projection and FFN2 by
    rows, every rank's part in one graph with the all-reduces as
    additions; emulated, its outputs equal the unsplit model's (fp32,
    relative L2 1e-5) for 2 and 4 ranks, and more kernels show the split
    happened. A rank count nothing divides leaves the graph whole. GPT-2
    with 2 ranks likewise. --tensor-parallel N writes rank plans, emulated
    in lockstep and, on a GPU, run on a repeated device list against the
    unsplit model on that GPU."""
    d = os.path.join(runner.work, "tensor_parallel")
    model = inflated("bert_small_s128_dyn20", d)
    rng = np.random.default_rng(2)
    ids, mask = os.path.join(d, "ids.npy"), os.path.join(d, "mask.npy")
    np.save(ids, rng.integers(0, 1000, (1, 128)).astype(np.int64))
    m = np.ones((1, 128), np.int64)
    m[0, 100:] = 0
    np.save(mask, m)
    feeds = ("--input", "input_ids=" + ids, "--input", "attention_mask=" + mask)
    kernels = {}
    for ranks in (1, 2, 3, 4):
        out = os.path.join(d, "tp%d" % ranks)
        extra = ("--tensor-parallel-check", str(ranks)) if ranks > 1 else ()
        r = runner.run("compile", model, "--arch", "sm_90", "-o", out, *extra)
        require(r.returncode == 0, "compile %s: %s" % (extra, r.stderr))
        kernels[ranks] = int(re.search(r"(\d+) kernels", r.stdout).group(1))
        ref = os.path.join(d, "ref")
        os.makedirs(ref, exist_ok=True)
        r = runner.run("run", os.path.join(out, "model.cuts"), "--emulate",
                       *feeds, *(("--output-dir", ref) if ranks == 1 else
                                 ("--compare", ref, "--tolerance", "1e-5")))
        require(r.returncode == 0, "%d ranks: %s%s" % (ranks, r.stdout,
                                                        r.stderr))
    require(kernels[2] > kernels[1] and kernels[4] > kernels[2] and
            kernels[3] == kernels[1], "kernels by ranks: %s" % kernels)
    # A plan per rank (--tensor-parallel): the ranks emulated in lockstep,
    # all-reduced between their kernels, give the same outputs; on a GPU,
    # run on a device list of a rank an entry (a repeated device: the copy
    # engines' all-reduce between buffers of one card), the outputs of the
    # unsplit model run there. One device alone is refused, naming why.
    ref = os.path.join(d, "ref")
    gpu_ref = os.path.join(d, "gpu_ref")
    if runner.gpu:
        os.makedirs(gpu_ref, exist_ok=True)
        r = runner.run("run", os.path.join(d, "tp1", "model.cuts"), *feeds,
                       "--output-dir", gpu_ref)
        require(r.returncode == 0, "unsplit on the GPU: " + r.stderr)
    for ranks in (2, 4):
        out = os.path.join(d, "ranks%d" % ranks)
        r = runner.run("compile", model, "--arch", "sm_90", "-o", out,
                       "--tensor-parallel", str(ranks))
        require(r.returncode == 0, "--tensor-parallel %d: %s" % (ranks,
                                                                  r.stderr))
        art = os.path.join(out, "model.cuts")
        sections = section_sizes(art)
        require(all("manifest.rank%d" % k in sections
                    for k in range(1, ranks)) and
                "collective.sm_90" in sections, sections)
        r = runner.run("run", art, "--emulate", *feeds, "--compare", ref,
                       "--tolerance", "1e-5")
        require(r.returncode == 0, "%d ranks emulated: %s%s" %
                (ranks, r.stdout, r.stderr))
        r = runner.run("run", art, *feeds)
        require(r.returncode != 0 and "runs on a device list of %d" % ranks
                in r.stderr, "a tensor-parallel artifact on one device: " +
                r.stderr)
        if runner.gpu:
            lists = [",".join(["0"] * ranks)]
            if gpu_count() >= ranks:
                lists.append(",".join(str(k) for k in range(ranks)))
            for gpus in lists:
                r = runner.run("run", art, "--gpus", gpus, *feeds,
                               "--compare", gpu_ref, "--tolerance", "1e-5")
                require(r.returncode == 0, "%d ranks on %s: %s%s" %
                        (ranks, gpus, r.stdout, r.stderr))
            r = runner.run("bench", art, "--gpus", lists[0], "--iters", "5")
            require(r.returncode == 0, "bench of %d ranks: %s" %
                    (ranks, r.stderr))
    # The crossover the H200 descriptor measured puts BERT's small
    # all-reduces on NCCL (the H100's, unmeasured, keeps copy engines); a
    # repeated device list falls back to the copy engines.
    out = os.path.join(d, "h200")
    r = runner.run("compile", model, "--arch", "h200", "-o", out,
                   "--tensor-parallel", "2")
    require(r.returncode == 0, "--tensor-parallel 2 for h200: " + r.stderr)
    engines = [[x.get("engine", "ce") for x in read_manifest(
        os.path.join(o, "model.cuts"))["steps"] if "collective" in x]
        for o in (out, os.path.join(d, "ranks2"))]
    require(engines[0] and set(engines[0]) == {"nccl"} and
            set(engines[1]) == {"ce"}, "all-reduce engines: %s" % engines)
    # Past the ranks the crossover was measured on (two for the H200's),
    # NCCL at every size: a descriptor whose crossover is 1 byte keeps
    # copy engines on 2 ranks and gives 4 NCCL.
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    with open(os.path.join(root, "perfmodel", "arch", "h200.json")) as f:
        desc = json.load(f)
    desc["collectiveCrossoverBytes"] = 1
    desc_path = os.path.join(d, "h200-ce.json")
    with open(desc_path, "w") as f:
        json.dump(desc, f)
    by_ranks = {}
    for ranks in (2, 4):
        o = os.path.join(d, "ce%d" % ranks)
        r = runner.run("compile", model, "--arch", desc_path, "-o", o,
                       "--tensor-parallel", str(ranks))
        require(r.returncode == 0, "--tensor-parallel %d with %s: %s" %
                (ranks, desc_path, r.stderr))
        by_ranks[ranks] = {x.get("engine", "ce") for x in read_manifest(
            os.path.join(o, "model.cuts"))["steps"] if "collective" in x}
    require(by_ranks == {2: {"ce"}, 4: {"nccl"}},
            "engines by rank count: %s" % by_ranks)
    if runner.gpu:
        r = runner.run("run", os.path.join(out, "model.cuts"), "--gpus", "0,0",
                       *feeds, "--compare", gpu_ref, "--tolerance", "1e-5")
        require(r.returncode == 0, "NCCL's all-reduces on 0,0: %s%s" %
                (r.stdout, r.stderr))
        if gpu_count() >= 2:
            r = runner.run("run", os.path.join(out, "model.cuts"), "--gpus",
                           "0,1", *feeds, "--compare", gpu_ref,
                           "--tolerance", "1e-5")
            require(r.returncode == 0, "NCCL's all-reduces on 0,1: %s%s" %
                    (r.stdout, r.stderr))
    r = runner.run("compile", model, "--arch", "sm_90", "-o", d,
                   "--tensor-parallel", "2", "--batch", "1,2")
    require(r.returncode != 0 and "--tensor-parallel takes neither" in
            r.stderr, "--tensor-parallel with --batch: " + r.stderr)
    # In fp16 and bf16 each rank's partial sum is rounded to 16 bits before
    # the all-reduce adds them (in fp32, rank order): the split model is
    # held to the precision's default tolerance against the fp32 outputs,
    # emulated (fp16) and on the GPU (both).
    for prec in ("fp16", "bf16") if runner.gpu else ("fp16",):
        out = os.path.join(d, prec + "_tp2")
        r = runner.run("compile", model, "--arch", "sm_90", "-o", out,
                       "--precision", prec, "--tensor-parallel", "2")
        require(r.returncode == 0, "%s --tensor-parallel 2: %s" %
                (prec, r.stderr))
        art = os.path.join(out, "model.cuts")
        modes = [(("--emulate",), ref)] if prec == "fp16" else []
        if runner.gpu:
            modes.append((("--gpus", "0,0"), gpu_ref))
        for mode, against in modes:
            r = runner.run("run", art, *mode, *feeds, "--compare", against)
            require(r.returncode == 0, "%s on 2 ranks %s: %s%s" %
                    (prec, mode, r.stdout, r.stderr))
    # GPT-2 (12 layers): its fused Q|K|V product split by segments, its
    # FFN2 adding the residual on rank 0 only.
    g = os.path.join(d, "gpt2")
    gpt2 = inflated("gpt2_s128_dyn20", g)
    ids = os.path.join(g, "ids.npy")
    np.save(ids, rng.integers(0, 50000, (1, 128)).astype(np.int64))
    gref = os.path.join(g, "ref")
    os.makedirs(gref, exist_ok=True)
    for ranks in (1, 2):
        out = os.path.join(g, "tp%d" % ranks)
        extra = ("--tensor-parallel-check", "2") if ranks > 1 else ()
        r = runner.run("compile", gpt2,
                       "--arch", "sm_90", "-o", out, *extra)
        require(r.returncode == 0, "GPT-2 compile %s: %s" % (extra, r.stderr))
        r = runner.run("run", os.path.join(out, "model.cuts"), "--emulate",
                       "--input", "input_ids=" + ids,
                       *(("--output-dir", gref) if ranks == 1 else
                         ("--compare", gref, "--tolerance", "1e-5")))
        require(r.returncode == 0, "GPT-2 on %d ranks: %s%s" %
                (ranks, r.stdout, r.stderr))
    if runner.gpu:  # its rank plans on a repeated device, against one GPU
        out, gpu_gref = os.path.join(g, "ranks2"), os.path.join(g, "gpu_ref")
        os.makedirs(gpu_gref, exist_ok=True)
        r = runner.run("run", os.path.join(g, "tp1", "model.cuts"),
                       "--input", "input_ids=" + ids, "--output-dir", gpu_gref)
        require(r.returncode == 0, "GPT-2 on the GPU: " + r.stderr)
        r = runner.run("compile", gpt2,
                       "--arch", "sm_90", "-o", out, "--tensor-parallel", "2")
        require(r.returncode == 0, "GPT-2 --tensor-parallel 2: " + r.stderr)
        r = runner.run("run", os.path.join(out, "model.cuts"), "--gpus", "0,0",
                       "--input", "input_ids=" + ids, "--compare", gpu_gref,
                       "--tolerance", "1e-5")
        require(r.returncode == 0, "GPT-2 on 2 ranks (0,0): %s%s" %
                (r.stdout, r.stderr))
        check_bert_base_tp(runner, os.path.join(d, "bert_base"), rng)
    r = runner.run("compile", model, "--arch", "sm_90", "-o", d,
                   "--tensor-parallel-check", "1")
    require(r.returncode != 0 and "--tensor-parallel-check needs" in r.stderr,
            "--tensor-parallel-check 1: " + r.stderr)


def check_sync(runner):
    """--sync-all: every kernel pair the tile analysis follows runs as a
    cuSync producer and consumer (a side stream, semaphores, the wait and
    epoch kernels). Emulated (and on a GPU, run and profiled), the outputs
    equal the unsynchronised compile's bit for bit."""
    made = 0
    for name in ("resnet_block", "mobilenet_block", "resnet_stage", "mlp",
                 "half_transformer", "half_gpt_attention"):
        path = os.path.join(runner.work, name + ".onnx")
        d = os.path.join(runner.work, name)
        if not os.path.isdir(os.path.join(d, "ref")):  # run alone (-k sync)
            MODELS[name][0](path)
            compile_and_emulate(runner, name, path, MODELS[name][2],
                                MODELS[name][1], runner.gpu)
        out = os.path.join(d, "sync")
        r = runner.run("compile", path, "--arch", "sm_90", "-o", out,
                       "--sync-all", *MODELS[name][2])
        require(r.returncode == 0, "compile --sync-all: " + r.stderr)
        m = re.search(r"cuSync: (\d+) of (\d+) kernel pairs", r.stdout)
        made += int(m.group(1)) if m else 0  # no report: no candidates
        # The scores' product waits for Q and K, both read in place.
        require(name != "half_gpt_attention" or
                re.search(r"made matmul_\d+ -> matmul_\d+", r.stdout),
                "no Q|K|V -> scores pair: " + r.stdout)
        inputs = save_npy_feeds(d, feeds(MODELS[name][1], 7))
        got = os.path.join(d, "sync-out")
        os.makedirs(got, exist_ok=True)
        art = os.path.join(out, "model.cuts")
        modes = [("--emulate",)] + ([()] if runner.gpu else [])
        for mode in modes:
            # Against the plain compile run the same way: the GPU's tensor
            # cores and exp need not round as the host's emulation does.
            plain = d
            if not mode:
                plain = os.path.join(d, "gpu-plain")
                os.makedirs(plain, exist_ok=True)
                r = runner.run("run", os.path.join(d, "out", "model.cuts"),
                               "--output-dir", plain, *inputs)
                require(r.returncode == 0, "plain run: " + r.stderr)
            r = runner.run("run", art, *mode, "--compare",
                           os.path.join(d, "ref"), "--output-dir", got,
                           *inputs)
            require(r.returncode == 0, "synchronised run: " + r.stdout +
                    r.stderr)
            for f in os.listdir(os.path.join(d, "ref")):
                a = np.load(os.path.join(got, f))
                b = np.load(os.path.join(plain, f))
                require(a.tobytes() == b.tobytes(),
                        "%s %s: %s differs from the unsynchronised run" %
                        (name, mode, f))
        if runner.gpu:  # profiled (the pairs in stream order) and graphed
            for args in (("--kernels",), ("--graph",)):
                r = runner.run("bench", art, "--iters", "5", *args)
                require(r.returncode == 0, "bench %s: %s" % (args, r.stderr))
    require(made >= 3, "only %d pairs synchronised" % made)
    check_sync_modes(runner, os.path.join(runner.work, "mlp.onnx"),
                     os.path.join(runner.work, "mlp"))
    check_sync_tuned(runner, os.path.join(runner.work, "mlp.onnx"),
                     os.path.join(runner.work, "mlp"))


def check_no_gpu(runner, art, inputs):
    r = runner.run("run", art, *inputs)
    require(r.returncode != 0 and "cuts: error:" in r.stderr,
            "a GPU run without a GPU must fail cleanly: " + r.stderr)
    for bad in ("-1", "x", "inf"):
        r = runner.run("bench", art, "--kernels", "--peak-tflops", bad)
        require(r.returncode != 0 and "--peak-tflops needs a positive number"
                in r.stderr, "bench --peak-tflops %s: %s" % (bad, r.stderr))
    r = runner.run("bench", art, "--bandwidth-gbs")
    require(r.returncode != 0 and "--bandwidth-gbs" in r.stderr,
            "bench --bandwidth-gbs without a value: " + r.stderr)


def has_gpu():
    """Whether nvidia-smi sees a GPU (the --gpu tests skip without one)."""
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuts", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("-k", default="")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--exported", action="store_true")
    a = ap.parse_args()
    if a.gpu and not has_gpu():
        print("no GPU here: skipped")
        return 77  # ctest's SKIP_RETURN_CODE
    os.makedirs(a.work, exist_ok=True)
    runner = Runner(os.path.abspath(a.cuts), a.work, a.gpu)
    first = None
    for name, (build, shapes, import_args) in MODELS.items():
        if a.k not in name:
            continue
        path = build(os.path.join(a.work, name + ".onnx"))
        result = {}

        def go():
            result["art"] = compile_and_emulate(runner, name, path,
                                                import_args, shapes, a.gpu)
        if runner.check("compile+emulate " + name, go):
            if first is None:
                first = (result["art"], shapes)
            if name == "half_gpt_attention":
                runner.check("QKV read in place", check_qkv_in_place, runner,
                             path)
            if name == "embedding":
                runner.check("integer inputs", check_integer_inputs, runner,
                             result["art"][0])
            if name in REDUCED:
                for p in ("fp16", "bf16") + (("tf32",) if name in TF32
                                             else ()):
                    runner.check("%s --precision %s" % (name, p),
                                 check_reduced_precision, runner, name, p)
    runner.gpu = a.gpu
    if first and not a.k:
        runner.check("validate", check_validate, runner,
                     os.path.join(a.work, "resnet_block.onnx"))
        runner.check("tuning cache", check_tuning_cache, runner,
                     *one_input(runner, "mobilenet_block"))
        runner.check("unmeasured fusion", check_unmeasured_fusion, runner,
                     os.path.join(runner.work, "shared_conv.onnx"))
        runner.check("attention fusion", check_attention_fusion, runner)
        for p in ("fp16", "bf16"):
            runner.check("chained product " + p, check_chained_product,
                         runner, p)
            runner.check("pooled implicit GEMM " + p, check_pooled,
                         runner, p)
            for io in (False, True) if p == "fp16" else (False,):
                runner.check("planar stem %s%s" % (p, " io" if io else ""),
                             check_planar, runner, p, io)
        runner.check("split-k", check_split_k, runner)
        d = os.path.join(runner.work, "attention")
        runner.check("tuning cache (cuBLASLt)", check_tuning_cache, runner,
                     "attention", os.path.join(runner.work, "attention.onnx"),
                     [a for n in ("q", "k", "v") for a in
                      ("--input", n + "=" + os.path.join(d, n + ".npy"))],
                     os.path.join(d, "ref"), "cublaslt.gemm")
        # Where the library wins every group it can serve, the product that
        # stores transposed (a cuBLASLt call cannot) stays right.
        d = os.path.join(runner.work, "masked_attention")
        runner.check("tuning cache (cuBLASLt, transposed store)",
                     check_tuning_cache, runner, "masked_attention",
                     os.path.join(runner.work, "masked_attention.onnx"),
                     [a for n in ("q", "k", "v", "mask") for a in
                      ("--input", n + "=" + os.path.join(d, n + ".npy"))],
                     os.path.join(d, "ref"), "cublaslt.gemm", (), False)
        # The libraries in 16 bits: cuBLASLt on a native fp16 model (its
        # Linear weights transposed), cuDNN on an fp32 one made bf16.
        runner.check("tuning cache (cuBLASLt fp16)", check_tuning_cache,
                     runner, *one_input(runner, "half_transformer"),
                     "cublaslt.gemm")
        runner.check("tuning cache (cuDNN bf16)", check_tuning_cache,
                     runner, *one_input(runner, "resnet_block"),
                     "cudnn.conv", ("--precision", "bf16"))
        runner.check("tuning cache (cuDNN fp16 NHWC)", check_cudnn_nhwc,
                     runner)
        runner.check("tuning cache (cuBLASLt GELU)", check_cublas_gelu,
                     runner)
        runner.check("tuning cache (cuDNN tf32)", check_tf32, runner)
        runner.check("fp16 for sm_90 and sm_80", check_targets, runner)
    if not a.k or "split" in a.k:
        # Its product whole, and as cuts-split-k's batched parts.
        for mode in ("off", "auto"):
            runner.check("split-K kernel, --split-k " + mode,
                         check_split_k_kernel, runner, "half_split_k",
                         ("--split-k", mode))
        runner.check("split-K kernel behind a library call",
                     check_split_k_kernel, runner, "half_split_k",
                     ("--split-k", "off"), True)
    if not a.k or "sync" in a.k:
        runner.check("cuSync pairs (--sync-all)", check_sync, runner)
    if not a.k or "batch" in a.k:
        runner.check("batch profiles", check_batch_profiles, runner)
    if not a.k or "compress" in a.k:
        runner.check("weight compression", check_compress, runner)
        runner.check("weight codecs on a device list", check_weight_codecs,
                     runner)
    if not a.k or "tensor" in a.k:
        runner.check("tensor-parallel split", check_tensor_parallel, runner)
    if not a.k or "collectives" in a.k:
        runner.check("copy-engine collectives", check_collectives, runner)
    if not a.k or "offload" in a.k:
        runner.check("weights streamed from storage", check_offload, runner)
    if not a.k or "dedupe" in a.k:
        runner.check("weights stored once", check_weight_dedupe, runner)
    if not a.k or "plan" in a.k:
        runner.check("BigCuts planner (cuts plan)", check_plan, runner)
    if not a.k or "c3" in a.k:
        runner.check("C3 study (cuts c3)", check_c3, runner)
    if not a.k or "bf16" in a.k:
        runner.check("bf16 linear layer", check_bf16, runner)
        runner.check("precision errors", check_precision_errors, runner)
    if not a.k or "bert" in a.k:
        runner.check("exported BERT (2 layers)", check_exported_bert, runner)
    if not a.k or "unmeasured" in a.k:
        runner.check("exported ResNet-50 from an empty tuning cache",
                     check_unmeasured_tuning, runner)
    if first:
        (art, inputs), shapes = first
        runner.check("bad artifacts and inputs", check_errors, runner, art,
                     inputs, shapes)
        if not a.gpu:
            runner.check("GPU run without a GPU", check_no_gpu, runner, art,
                         inputs)
    print("%d passed, %d failed" % (runner.passed, runner.failed))
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())

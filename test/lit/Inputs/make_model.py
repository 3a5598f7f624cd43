#!/usr/bin/env python3
"""Writes small (mostly broken) ONNX models for the lit tests of `cuts import`.

usage: make_model.py KIND OUT.onnx

KIND is one of the functions below (dashes for underscores); see KINDS.
Weights are deterministic (fixed seeds). Models that are meant to be invalid
skip onnx.checker, of course.
"""
import inspect
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, shape, et=F):
    return helper.make_tensor_value_info(name, et, shape)


def w(name, shape, seed=0, scale=0.3):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(
        (rng.standard_normal(shape) * scale).astype(np.float32), name)


def model(nodes, inputs, outputs, inits=(), opset=17, check=True,
          name="test", domains=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    ops = [helper.make_opsetid("", opset)] + [
        helper.make_opsetid(d, 1) for d in domains]
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m, full_check=True)
    return m


def conv_bn_relu():
    """x[1,3,8,8] -> Conv(4, 3x3, pads 1) -> BatchNormalization -> Relu."""
    rng = np.random.default_rng(1)
    var = numpy_helper.from_array((rng.random(4) + 0.5).astype(np.float32),
                                  "bn_var")
    return model(
        [helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"],
                          name="conv0", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization",
                          ["c", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                          ["bn"], name="bn0", epsilon=1e-5),
         helper.make_node("Relu", ["bn"], ["y"], name="relu0")],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])],
        [w("conv_w", [4, 3, 3, 3], 2), w("conv_b", [4], 3),
         w("bn_scale", [4], 4), w("bn_bias", [4], 5), w("bn_mean", [4], 6),
         var])


def unsupported_op():
    return model(
        [helper.make_node("Relu", ["x"], ["r"], name="relu0"),
         helper.make_node("Det", ["r"], ["y"], name="my_det")],
        [vi("x", [2, 3, 3])], [vi("y", [2])], opset=17)


def custom_domain():
    return model(
        [helper.make_node("FancyGelu", ["x"], ["y"], name="fancy0",
                          domain="com.example")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], check=False,
        domains=["com.example"])


def bad_auto_pad():
    return model(
        [helper.make_node("Conv", ["x", "conv_w"], ["y"], name="conv_foo",
                          kernel_shape=[3, 3], auto_pad="FOO")],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])],
        [w("conv_w", [4, 3, 3, 3])], check=False)


def add_mismatch():
    return model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="bad_add")],
        [vi("a", [2, 3]), vi("b", [4, 5])], [vi("y", None)], check=False)


def matmul_mismatch():
    return model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="bad_matmul")],
        [vi("a", [2, 3]), vi("b", [4, 5])], [vi("y", None)], check=False)


def output_shape_mismatch():
    """Relu of a 2x3 input whose output claims 3x2."""
    return model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", [2, 3])], [vi("y", [3, 2])], check=False)


def output_type_mismatch():
    """Relu of a float input whose output claims int64."""
    return model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", [2, 3])], [vi("y", [2, 3], I64)], check=False)


def symbolic_input():
    """x[batch, 3, 8, 8] -> Relu."""
    return model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", ["batch", 3, 8, 8])], [vi("y", ["batch", 3, 8, 8])])


def reshape_dynamic():
    """Reshape(x, shape_in + 0): the shape is computed from a graph input."""
    return model(
        [helper.make_node("Add", ["shape_in", "zero"], ["new_shape"],
                          name="shape_add"),
         helper.make_node("Reshape", ["x", "new_shape"], ["y"],
                          name="dyn_reshape")],
        [vi("x", [2, 6]), vi("shape_in", [2], I64)], [vi("y", None)],
        [numpy_helper.from_array(np.zeros(2, np.int64), "zero")],
        check=False)


def external_missing():
    """An initializer whose data lives in missing_weights.bin (not there)."""
    t = w("ext_w", [4, 3])
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "missing_weights.bin"), ("offset", "0"),
                 ("length", "48")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return model(
        [helper.make_node("MatMul", ["x", "ext_w"], ["y"], name="mm0")],
        [vi("x", [2, 4])], [vi("y", [2, 3])], [t], check=False)


def external_short(path):
    """A 64 KiB initializer whose external file holds half of it (a slice
    large enough to be memory-mapped)."""
    t = w("ext_w", [128, 128])
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "short_weights.bin"), ("offset", "0"),
                 ("length", str(128 * 128 * 4))):
        e = t.external_data.add()
        e.key, e.value = k, v
    with open(os.path.join(os.path.dirname(path), "short_weights.bin"),
              "wb") as f:
        f.write(bytes(128 * 128 * 2))
    return model(
        [helper.make_node("MatMul", ["x", "ext_w"], ["y"], name="mm0")],
        [vi("x", [2, 128])], [vi("y", [2, 128])], [t], check=False)


def raw_data_size():
    """An initializer of shape [4, 3] float (48 bytes) with 44 bytes."""
    t = w("short_w", [4, 3])
    t.raw_data = t.raw_data[:44]
    return model(
        [helper.make_node("MatMul", ["x", "short_w"], ["y"], name="mm0")],
        [vi("x", [2, 4])], [vi("y", [2, 3])], [t], check=False)


def undefined_tensor():
    """A node reading a tensor nothing produces."""
    return model(
        [helper.make_node("Add", ["x", "nowhere"], ["y"], name="add0")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], check=False)


# Models that cuts accepted although they are invalid or imported with a
# wrong shape when these tests were written (see the .test files).

def gather_oob_index():
    """Gather(x[3, 2], indices = [7]) on axis 0: 7 is out of range."""
    return model(
        [helper.make_node("Gather", ["x", "idx"], ["y"], name="bad_gather",
                          axis=0)],
        [vi("x", [3, 2])], [vi("y", None)],
        [numpy_helper.from_array(np.array([7], np.int64), "idx")],
        check=False)


def _slice(starts, ends, steps):
    i64 = lambda v, n: numpy_helper.from_array(np.array([v], np.int64), n)
    return model(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"],
                          ["y"], name="slice0")],
        [vi("x", [2, 3])], [vi("y", None)],
        [i64(starts, "starts"), i64(ends, "ends"), i64(1, "axes"),
         i64(steps, "steps")], check=False)


def slice_huge_step():
    """x[:, 0:10:INT64_MAX] of a 2x3 x: one column."""
    return _slice(0, 10, 2**63 - 1)


def slice_min_step():
    """x[:, INT64_MAX:INT64_MIN:INT64_MIN] of a 2x3 x: one column (the last)."""
    return _slice(2**63 - 1, -2**63, -2**63)


def expand_overflow():
    """Expand x[1, 1] to [2^32, 2^32] (2^64 elements), then Reshape to [0]
    with allowzero: the element count wraps to 0 in int64."""
    return model(
        [helper.make_node("Expand", ["x", "big"], ["e"], name="big_expand"),
         helper.make_node("Reshape", ["e", "zero"], ["y"], name="reshape0",
                          allowzero=1)],
        [vi("x", [1, 1])], [vi("y", None)],
        [numpy_helper.from_array(np.array([2**32, 2**32], np.int64), "big"),
         numpy_helper.from_array(np.array([0], np.int64), "zero")],
        check=False)


def duplicate_output():
    """Two nodes both produce 'y' (ONNX graphs are SSA)."""
    return model(
        [helper.make_node("Relu", ["x"], ["y"], name="n1"),
         helper.make_node("Neg", ["x"], ["y"], name="n2")],
        [vi("x", [2])], [vi("y", [2])], check=False)


def _einsum(equation, shapes):
    # Not checked: ONNX's own checker rejects some of these, a user's file
    # need not have been.
    return model(
        [helper.make_node("Einsum", ["x%d" % i for i in range(len(shapes))],
                          ["y"], name="bad_einsum", equation=equation)],
        [vi("x%d" % i, s) for i, s in enumerate(shapes)], [vi("y", [2])],
        opset=17, check=False)


def einsum_three():
    return _einsum("ij,jk,kl->il", [[2, 2], [2, 2], [2, 2]])


def einsum_triple_index():
    return _einsum("iii->i", [[2, 2, 2]])


def einsum_extents():
    return _einsum("ij,ij->i", [[2, 3], [2, 4]])


def einsum_rank():
    return _einsum("ijk->i", [[2, 3]])


def attention_causal():
    """Q, K, V [1, 2, 4, 8] -> causal Attention (opset 23)."""
    return model(
        [helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn",
                          is_causal=1)],
        [vi("q", [1, 2, 4, 8]), vi("k", [1, 2, 4, 8]), vi("v", [1, 2, 4, 8])],
        [vi("y", [1, 2, 4, 8])], opset=23)


def attention_no_heads():
    """3-D Q, K, V without q_num_heads and kv_num_heads."""
    return model(
        [helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn")],
        [vi("q", [1, 4, 16]), vi("k", [1, 4, 16]), vi("v", [1, 4, 16])],
        [vi("y", [1, 4, 16])], opset=23, check=False)


def attention_k_uint8():
    """Attention whose K is uint8 (the fuzzer's crash): an error."""
    return model(
        [helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn",
                          q_num_heads=3, kv_num_heads=3, is_causal=1)],
        [vi("q", [2, 4, 24]), vi("k", [2, 6, 24], TensorProto.UINT8),
         vi("v", [2, 6, 24])], [vi("y", [2, 4, 24])], opset=23, check=False)


def group_norm_bad_groups():
    """GroupNormalization of 6 channels in 4 groups."""
    return model(
        [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"],
                          name="gn", num_groups=4)],
        [vi("x", [1, 6, 2, 2])], [vi("y", [1, 6, 2, 2])],
        [w("s", [6], 1), w("b", [6], 2)], opset=21, check=False)


def onehot_runtime_depth():
    """OneHot whose depth is a graph input, not a constant."""
    return model(
        [helper.make_node("OneHot", ["i", "d", "vals"], ["y"], name="oh")],
        [vi("i", [3], I64), vi("d", [], I64)], [vi("y", [3, None])],
        [numpy_helper.from_array(np.array([0, 1], np.float32), "vals")],
        opset=17, check=False)


def scatternd_mask():
    """Swin's attention mask: constant zeros with constant slices written by
    ScatterND, added to x."""
    zeros = numpy_helper.from_array(np.zeros((4, 4), np.float32), "zeros")
    idx = numpy_helper.from_array(
        np.array([[[2, 2], [2, 3]], [[3, 2], [3, 3]]], np.int64), "idx")
    upd = numpy_helper.from_array(np.full((2, 2), 7, np.float32), "upd")
    return model(
        [helper.make_node("ScatterND", ["zeros", "idx", "upd"], ["mask"],
                          name="sc"),
         helper.make_node("Add", ["x", "mask"], ["y"], name="add")],
        [vi("x", [4, 4])], [vi("y", [4, 4])], [zeros, idx, upd])


def scatternd_runtime_indices():
    """ScatterND whose indices are a graph input."""
    return model(
        [helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="sc")],
        [vi("x", [4, 4]), vi("i", [2, 1], I64), vi("u", [2, 4])],
        [vi("y", [4, 4])])


def truncated():
    """conv_bn_relu, serialized and cut in half (returns bytes)."""
    data = conv_bn_relu().SerializeToString()
    return data[:len(data) // 2]


def not_protobuf():
    """A text file (returns bytes)."""
    return b"this is not an ONNX model, just some text\n" * 4


KINDS = {k.replace("_", "-"): v for k, v in dict(globals()).items()
         if inspect.isfunction(v) and v.__module__ == __name__ and
         not k.startswith("_") and k not in ("vi", "w", "model", "main")}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in KINDS:
        sys.exit("usage: make_model.py {%s} OUT.onnx" %
                 ",".join(sorted(KINDS)))
    kind, out = sys.argv[1], sys.argv[2]
    d = os.path.dirname(os.path.abspath(out))
    os.makedirs(d, exist_ok=True)
    # A kind that writes files next to the model takes its path.
    make = KINDS[kind]
    m = make(out) if inspect.signature(make).parameters else make()
    data = m if isinstance(m, bytes) else m.SerializeToString()
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()

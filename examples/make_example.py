#!/usr/bin/env python3
"""Builds examples/models/tiny_convnet.onnx, the model the README's demo
command compiles: a small image classifier in the shape of the networks
cuts targets (conv-bn-relu stem, a depthwise-separable block with a
residual, global pooling, a classifier), as PyTorch's exporter writes them
(Identity-fed weights, Constant-fed Clip bounds, a Shape->Reshape subgraph).
Weights are random with a fixed seed.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(0)


def w(name, *shape, scale=0.1):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def main():
    inits = [
        w("stem.w", 16, 3, 3, 3), w("stem.bn.scale", 16, scale=1.0),
        w("stem.bn.bias", 16), w("stem.bn.mean", 16),
        nh.from_array((rng.random(16) + 0.5).astype(np.float32), "stem.bn.var"),
        w("expand.w", 32, 16, 1, 1), w("expand.b", 32),
        w("dw.w", 32, 1, 3, 3), w("dw.b", 32),
        w("project.w", 16, 32, 1, 1), w("project.b", 16),
        w("fc.w", 10, 16), w("fc.b", 10),
        nh.from_array(np.array([0], dtype=np.int64), "zero_axis"),
        nh.from_array(np.array([-1], dtype=np.int64), "minus_one"),
    ]
    nodes = [
        h.make_node("Conv", ["input", "stem.w"], ["c0"], name="stem.conv",
                    strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c0", "stem.bn.scale", "stem.bn.bias",
                                           "stem.bn.mean", "stem.bn.var"],
                    ["b0"], name="stem.bn"),
        h.make_node("Relu", ["b0"], ["r0"], name="stem.relu"),
        h.make_node("Identity", ["expand.w"], ["expand.w.id"], name="expand.w.identity"),
        h.make_node("Conv", ["r0", "expand.w.id", "expand.b"], ["e"], name="expand.conv"),
        h.make_node("Constant", [], ["six"], name="six",
                    value=nh.from_array(np.array(6.0, dtype=np.float32))),
        h.make_node("Constant", [], ["zero"], name="zero",
                    value=nh.from_array(np.array(0.0, dtype=np.float32))),
        h.make_node("Clip", ["e", "zero", "six"], ["e6"], name="expand.relu6"),
        h.make_node("Conv", ["e6", "dw.w", "dw.b"], ["d"], name="dw.conv",
                    group=32, pads=[1, 1, 1, 1]),
        h.make_node("Clip", ["d", "zero", "six"], ["d6"], name="dw.relu6"),
        h.make_node("Conv", ["d6", "project.w", "project.b"], ["p"], name="project.conv"),
        h.make_node("Add", ["p", "r0"], ["res"], name="residual"),
        h.make_node("GlobalAveragePool", ["res"], ["g"], name="pool"),
        h.make_node("Shape", ["g"], ["gs"], name="pool.shape"),
        h.make_node("Gather", ["gs", "zero_axis"], ["batch"], name="pool.batch", axis=0),
        h.make_node("Concat", ["batch", "minus_one"], ["flat_shape"], name="flat.shape", axis=0),
        h.make_node("Reshape", ["g", "flat_shape"], ["flat"], name="flatten"),
        h.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    ]
    graph = h.make_graph(
        nodes, "tiny_convnet",
        [h.make_tensor_value_info("input", T.FLOAT, ["batch", 3, 32, 32])],
        [h.make_tensor_value_info("logits", T.FLOAT, ["batch", 10])], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)],
                         producer_name="cuts examples")
    onnx.checker.check_model(model, full_check=True)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models",
                       "tiny_convnet.onnx")
    onnx.save(model, out)
    print("wrote", out)


if __name__ == "__main__":
    main()

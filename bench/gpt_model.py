#!/usr/bin/env python3
"""A GPT-style decoder as ONNX, with random weights kept as external data:
token and position embeddings, LAYERS pre-norm blocks (causal attention,
GELU MLP of 4x), a final LayerNorm and the LM head tied to the token
embedding. What BigCuts' executor streams (bench/bigcuts.sh): the GPT-3
sizes of Brown et al. 2020 by name, or any with --layers/--hidden.

  gpt_model.py OUT.onnx --size gpt3-1.3b --sequence 128
  cuts compile OUT.onnx --input-shape input_ids=8x128 ...
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIZES = {  # layers, d_model, heads (Brown et al. 2020, Table 2.1)
    "gpt3-125m": (12, 768, 12),
    "gpt3-350m": (24, 1024, 16),
    "gpt3-1.3b": (24, 2048, 16),
    "gpt3-2.7b": (32, 2560, 32),
}


class Builder:
    def __init__(self, seed):
        self.nodes, self.inits, self.rng, self.n = [], [], np.random.default_rng(seed), 0

    def name(self, what):
        self.n += 1
        return "%s_%d" % (what, self.n)

    def weight(self, what, shape, scale=0.02):
        n = self.name(what)
        a = (self.rng.standard_normal(shape, dtype=np.float32) * scale)
        self.inits.append(numpy_helper.from_array(a.astype(np.float32), n))
        return n

    def const(self, what, array):
        n = self.name(what)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def op(self, kind, inputs, **attrs):
        out = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out


def block(b, x, h, heads, s, mask):
    """One pre-norm decoder block on x [1, s, h]."""
    d = h // heads
    ln = b.op("LayerNormalization", [x, b.const("ln1_g", np.ones(h, np.float32)),
                                     b.const("ln1_b", np.zeros(h, np.float32))],
              axis=-1)
    qkv = b.op("Add", [b.op("MatMul", [ln, b.weight("qkv_w", [h, 3 * h])]),
                       b.weight("qkv_b", [3 * h])])
    q, k, v = (b.name("q"), b.name("k"), b.name("v"))
    b.nodes.append(helper.make_node(
        "Split", [qkv, b.const("split", np.array([h, h, h], np.int64))],
        [q, k, v], axis=-1))
    shape = b.const("heads", np.array([0, s, heads, d], np.int64))

    def split_heads(t, perm):
        return b.op("Transpose", [b.op("Reshape", [t, shape])], perm=perm)
    qh, kh, vh = (split_heads(q, [0, 2, 1, 3]), split_heads(k, [0, 2, 3, 1]),
                  split_heads(v, [0, 2, 1, 3]))
    scores = b.op("Add", [b.op("Mul", [b.op("MatMul", [qh, kh]),
                                       b.const("scale", np.float32(d ** -0.5))]),
                          mask])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), vh])
    ctx = b.op("Reshape", [b.op("Transpose", [ctx], perm=[0, 2, 1, 3]),
                           b.const("merge", np.array([0, s, h], np.int64))])
    x = b.op("Add", [x, b.op("Add", [b.op("MatMul", [ctx, b.weight("proj_w", [h, h])]),
                                     b.weight("proj_b", [h])])])
    ln = b.op("LayerNormalization", [x, b.const("ln2_g", np.ones(h, np.float32)),
                                     b.const("ln2_b", np.zeros(h, np.float32))],
              axis=-1)
    up = b.op("Add", [b.op("MatMul", [ln, b.weight("fc1_w", [h, 4 * h])]),
                      b.weight("fc1_b", [4 * h])])
    gelu = b.op("Mul", [b.op("Mul", [up, b.const("half", np.float32(0.5))]),
                        b.op("Add", [b.op("Erf", [b.op("Mul", [up, b.const(
                            "rsqrt2", np.float32(2 ** -0.5))])]),
                            b.const("one", np.float32(1))])])
    down = b.op("Add", [b.op("MatMul", [gelu, b.weight("fc2_w", [4 * h, h])]),
                        b.weight("fc2_b", [h])])
    return b.op("Add", [x, down])


def build(layers, h, heads, s, vocab, batch):
    b = Builder(0)
    wte = b.weight("wte", [vocab, h])
    x = b.op("Add", [b.op("Gather", [wte, "input_ids"]),
                     b.weight("wpe", [s, h], 0.01)])
    causal = np.triu(np.full((s, s), -1e4, np.float32), 1)
    mask = b.const("causal", causal)
    for _ in range(layers):
        x = block(b, x, h, heads, s, mask)
    x = b.op("LayerNormalization", [x, b.const("lnf_g", np.ones(h, np.float32)),
                                    b.const("lnf_b", np.zeros(h, np.float32))],
             axis=-1)
    logits = b.op("MatMul", [x, b.op("Transpose", [wte], perm=[1, 0])])
    b.nodes[-1].output[0] = "logits"
    batch = batch or "batch"
    graph = helper.make_graph(
        b.nodes, "gpt",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                       [batch, s])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       [batch, s, vocab])], b.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", choices=sorted(SIZES), default="gpt3-125m")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--sequence", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--batch", type=int, default=0,
                    help="0: a symbolic batch (cuts compile --input-shape)")
    a = ap.parse_args()
    layers, h, heads = SIZES[a.size]
    layers, h, heads = a.layers or layers, a.hidden or h, a.heads or heads
    m = build(layers, h, heads, a.sequence, a.vocab, a.batch)
    location = a.out.rsplit("/", 1)[-1] + ".data"
    onnx.save_model(m, a.out, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location,
                    size_threshold=1024)
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    print("%s: %d layers, d_model %d, %d heads, %.2fB parameters" %
          (a.out, layers, h, heads, params / 1e9))


if __name__ == "__main__":
    main()

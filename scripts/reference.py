#!/usr/bin/env python3
"""Writes random inputs for a model and ONNX Runtime's (CPU) outputs for them,
as .npy files named after the tensors: the references `cuts run --compare`
checks against.

usage: reference.py MODEL.onnx INPUT_DIR REF_DIR [--seed S]
                    [--shape NAME=D0xD1...] [--int-high [NAME=]N]...
Prints the `--input NAME=FILE` arguments for `cuts run`.

Inputs get values valid for what the model does with them:
  float inputs          standard normal, in the input's float type
  *mask* (int or bool)  ones with a few trailing zeros per row (the last
                        axis), as padding masks have; the first row unpadded
  *token_type* / *segment* ids   zeros
  other int inputs      uniform in [0, N): N from --int-high NAME=N, else
                        the row count of the table the first Gather that
                        takes the input as indices reads (input_ids ->
                        the word embeddings: the vocabulary size), else
                        --int-high N, else 1 (zeros) with a warning
  other bool inputs     uniform 0/1
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto

# Ops through which an index tensor reaches a Gather unchanged in value.
PASS_THROUGH = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten",
                "Identity", "Expand", "Transpose"}


def table_rows(model, name):
    """Rows of the table the first Gather that takes `name` (or a value
    computed from it by PASS_THROUGH ops) as indices reads, or None."""
    g = model.graph
    dims = {i.name: list(i.dims) for i in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value" and a.t is not None:
                    dims[n.output[0]] = list(a.t.dims)
    consumers = {}
    for n in g.node:
        for i, x in enumerate(n.input):
            consumers.setdefault(x, []).append((n, i))
    seen, todo = set(), [name]
    while todo:
        v = todo.pop(0)
        if v in seen:
            continue
        seen.add(v)
        for n, i in consumers.get(v, []):
            if n.op_type == "Gather" and i == 1 and n.input[0] in dims:
                axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
                d = dims[n.input[0]]
                if d:
                    return int(d[axis % len(d)])
            if n.op_type in PASS_THROUGH and i == 0:
                todo.extend(n.output)
    return None


def mask_values(dims, dtype, rng):
    """Ones with 1..S/4 trailing zeros per row of the last axis (S its
    extent); row 0 has none, no row is all zeros."""
    x = np.ones(dims, dtype=dtype)
    if not dims or dims[-1] < 2:
        return x
    s = dims[-1]
    rows = x.reshape(-1, s)
    for r in range(1, rows.shape[0]):
        k = int(rng.integers(1, max(1, s // 4) + 1))
        rows[r, s - min(k, s - 1):] = 0
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("refs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--int-high", action="append", default=[],
                    help="[NAME=]N: integer inputs (NAME's, or any without "
                         "a table bound) are drawn from [0, N)")
    a = ap.parse_args()
    shapes = {}
    for s in a.shape:
        n, d = s.rsplit("=", 1)
        shapes[n] = [int(x) for x in d.split("x")]
    highs, default_high = {}, None
    for s in a.int_high:
        if "=" in s:
            n, v = s.rsplit("=", 1)
            highs[n] = int(v)
        else:
            default_high = int(s)
    m = onnx.load(a.model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(a.seed)
    feeds, args = {}, []
    os.makedirs(a.inputs, exist_ok=True)
    os.makedirs(a.refs, exist_ok=True)
    for i in m.graph.input:
        if i.name in inits:
            continue
        dims = shapes.get(i.name) or [d.dim_value for d in
                                      i.type.tensor_type.shape.dim]
        if any(d <= 0 for d in dims):
            raise SystemExit("input %s has a symbolic shape: pass --shape" %
                             i.name)
        elem = i.type.tensor_type.elem_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        lower = i.name.lower()
        if elem == TensorProto.BOOL or np.issubdtype(dtype, np.integer):
            if "mask" in lower:
                x = mask_values(dims, dtype, rng)
            elif "token_type" in lower or "segment" in lower:
                x = np.zeros(dims, dtype)
            elif elem == TensorProto.BOOL:
                x = rng.integers(0, 2, dims).astype(dtype)
            else:
                high = highs.get(i.name) or table_rows(m, i.name) or \
                    default_high
                if high is None:
                    print("reference.py: warning: no bound for the values of "
                          "integer input %s (no Gather reads a table with "
                          "it): zeros; pass --int-high %s=N" %
                          (i.name, i.name), file=sys.stderr)
                    high = 1
                x = rng.integers(0, high, dims).astype(dtype)
        else:
            x = rng.standard_normal(dims).astype(dtype)
        feeds[i.name] = x
        p = os.path.join(a.inputs, i.name + ".npy")
        np.save(p, x)
        args.append("--input %s=%s" % (i.name, p))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # Newer onnx packages write IR versions ONNX Runtime may not read yet;
    # the graph itself needs nothing newer than IR 10.
    full = onnx.load(a.model)
    full.ir_version = min(full.ir_version, 10)
    try:
        model = full.SerializeToString()
    except Exception:  # protobuf's 2 GB limit: a copy with external data
        copy = os.path.join(a.refs, "reference.onnx")
        os.makedirs(a.refs, exist_ok=True)
        onnx.save(full, copy, save_as_external_data=True,
                  location="reference.onnx.data")
        del full
        model = copy
    sess = ort.InferenceSession(model, so,
                                providers=["CPUExecutionProvider"])
    for o, v in zip(sess.get_outputs(), sess.run(None, feeds)):
        np.save(os.path.join(a.refs, o.name + ".npy"), np.asarray(v))
    print(" ".join(args))


if __name__ == "__main__":
    main()

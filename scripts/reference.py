#!/usr/bin/env python3
"""Writes random inputs for a model and ONNX Runtime's (CPU) outputs for them,
as .npy files named after the tensors: the references `cuts run --compare`
checks against.

usage: reference.py MODEL.onnx INPUT_DIR REF_DIR [--seed S] [--shape NAME=D0xD1...]
Prints the `--input NAME=FILE` arguments for `cuts run`.
"""
import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("refs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", action="append", default=[])
    a = ap.parse_args()
    shapes = {}
    for s in a.shape:
        n, d = s.rsplit("=", 1)
        shapes[n] = [int(x) for x in d.split("x")]
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
        x = rng.standard_normal(dims).astype(np.float32)
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
    sess = ort.InferenceSession(full.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    for o, v in zip(sess.get_outputs(), sess.run(None, feeds)):
        np.save(os.path.join(a.refs, o.name + ".npy"), np.asarray(v))
    print(" ".join(args))


if __name__ == "__main__":
    main()

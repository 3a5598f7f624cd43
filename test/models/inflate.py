#!/usr/bin/env python3
"""Writes random weights for a model whose float weights were stripped to
external data (scripts/export_models.py --strip): copies MODEL.onnx into
OUTDIR and writes OUTDIR/weights.bin at the offsets the graph records.
Deterministic: the same graph always gets the same weights.

usage: inflate.py MODEL.onnx OUTDIR
"""
import os
import shutil
import sys

import numpy as np
import onnx


def main():
    src, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    model = onnx.load(src, load_external_data=False)
    rng = np.random.default_rng(0)
    chunks = []
    for t in model.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in t.external_data}
        n = int(np.prod(t.dims)) if len(t.dims) else 1
        data = (rng.standard_normal(n) * 0.05).astype(np.float32).tobytes()
        assert len(data) == int(info["length"]), t.name
        chunks.append((int(info["offset"]), data))
    size = max((o + len(d) for o, d in chunks), default=0)
    buf = bytearray(size)
    for o, d in chunks:
        buf[o:o + len(d)] = d
    with open(os.path.join(outdir, "weights.bin"), "wb") as f:
        f.write(buf)
    shutil.copy(src, os.path.join(outdir, os.path.basename(src)))


if __name__ == "__main__":
    main()

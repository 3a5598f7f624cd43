#!/usr/bin/env python3
"""Seed corpus for the importer fuzzer: the models of the ONNX node tests
whose ops cuts covers (read from the importer's table), plus the inputs that
once crashed the importer (test/fuzz/*.onnx).

usage: fuzz_seeds.py NODE_TEST_DIR OUT_DIR
"""
import glob
import hashlib
import os
import re
import subprocess
import sys

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    node_dir, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    src = open(os.path.join(ROOT, "compiler/onnx/OnnxImporter.cpp")).read()
    ops = set(re.findall(r'\{"(\w+)", &Importer::conv', src))
    seeds = []
    for path in sorted(glob.glob(os.path.join(node_dir, "*", "model.onnx"))):
        m = onnx.load(path)
        if all(n.op_type in ops for n in m.graph.node):
            seeds.append(open(path, "rb").read())
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "fuzz", "*.onnx"))):
        seeds.append(open(path, "rb").read())
    for f in seeds:
        name = hashlib.sha1(f).hexdigest()
        with open(os.path.join(out, name), "wb") as fh:
            fh.write(f)
    print(f"{len(seeds)} seeds in {out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed onnx package (the
newest this machine has: the PyPI wheel ships the generators, not the data)
in the layout of onnx/backend/test/data/node: DIR/test_x/model.onnx and
DIR/test_x/test_data_set_0/{input,output}_N.pb.

usage: gen_node_tests.py DIR
"""
import os
import sys
import warnings

import onnx.backend.test.case.node as node_test
from onnx import TensorProto, numpy_helper


def main():
    out = sys.argv[1]
    warnings.simplefilter("ignore")
    n = 0
    for case in node_test.collect_testcases():
        d = os.path.join(out, case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds, exist_ok=True)
            for kind, vals, infos in (("input", inputs, case.model.graph.input),
                                      ("output", outputs, case.model.graph.output)):
                for j, v in enumerate(vals):
                    if not infos[j].type.HasField("tensor_type"):
                        continue
                    t = v if isinstance(v, TensorProto) else \
                        numpy_helper.from_array(v, infos[j].name)
                    with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(t.SerializeToString())
        n += 1
    print(f"{n} node tests written to {out}")


if __name__ == "__main__":
    main()

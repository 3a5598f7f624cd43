#!/usr/bin/env python3
"""How the tuner's tensor-core choices compare with every set it could time.

  tc_ranking.py models DIR
      writes DIR/mlp_b1.onnx and DIR/mlp_b32.onnx: BERT-base's linear
      shapes at sequence 128 (768 -> 3072 -> 768 -> 768, each with a bias;
      fixed seed, random weights)
  tc_ranking.py report ALL.json DEFAULT.json CACHE.json
      per group of ALL.json (`cuts compile --candidates`, many sets a group)
      with the times CACHE.json holds (`cuts tune`): the fastest library
      call, the fastest generated kernel and its place in the search's
      order, and the fastest of the ones DEFAULT.json (the same model at the
      default --tune-candidates) would have timed.

scripts/gpu_tc_ranking.sh runs both on a GPU machine.
"""
import json
import sys


def models(out):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    for batch in (1, 32):
        nodes, inits = [], []
        x = "x"
        for i, (k, n) in enumerate([(768, 3072), (3072, 768), (768, 768)]):
            w = (rng.standard_normal((k, n)) * 0.03).astype(np.float32)
            b = (rng.standard_normal(n) * 0.1).astype(np.float32)
            inits += [numpy_helper.from_array(w, "w%d" % i),
                      numpy_helper.from_array(b, "b%d" % i)]
            nodes += [helper.make_node("MatMul", [x, "w%d" % i], ["m%d" % i]),
                      helper.make_node("Add", ["m%d" % i, "b%d" % i],
                                       ["y%d" % i])]
            x = "y%d" % i
        shape = [batch, 128, 768]
        g = helper.make_graph(
            nodes, "mlp",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
            inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.save(m, "%s/mlp_b%d.onnx" % (out, batch))


def report(all_path, default_path, cache_path):
    every = json.load(open(all_path))["candidates"]
    default = {c["key"] for c in json.load(open(default_path))["candidates"]}
    times = json.load(open(cache_path))["entries"]

    def us(c):
        return times.get(c["key"], {}).get("us")

    for g in sorted({c["group"] for c in every}):
        cands = [c for c in every if c["group"] == g]
        gen = [c for c in cands if c["name"] == "cuts_kernel"]
        lib = [us(c) for c in cands if c["name"] != "cuts_kernel" and us(c)]
        timed = [(us(c), i, c) for i, c in enumerate(gen) if us(c)]
        if not timed:
            continue
        best = min(timed, key=lambda t: t[0])
        picked = [t for t in timed if t[2]["key"] in default]
        lines = gen[0]["source"].split("\n")
        print("group %d: %s" % (g, lines[0].split(": ", 1)[-1]))
        if lib:
            print("  cuBLASLt %8.2f us" % min(lib))
        print("  fastest  %8.2f us  (place %d of %d: %s)" %
              (best[0], best[1], len(gen), best[2]["source"].split("\n")[1]
               .lstrip("/ ")))
        if picked:
            p = min(picked, key=lambda t: t[0])
            print("  timed by default %8.2f us  (%d sets; %.0f %% of the "
                  "fastest's speed)" % (p[0], len(picked),
                                         100 * best[0] / p[0]))
            if lib:
                print("  default vs cuBLASLt: %.0f %%" % (100 * min(lib) /
                                                          p[0]))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "models":
        models(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "report":
        report(*sys.argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Issue 3: re-ranks an earlier validation run's timed parameter sets under
the current performance model, without a GPU.

The sets' bounds come from a dump of every parameter set of the model's
convs and matmuls with the current model:

  build/tools/cuts-dump-sets/cuts-dump-sets model.onnx -o sets.tsv

Then, for each op that DIR (a scripts/gpu_validate.sh folder:
validation.json and cache.json) timed, this script prints:
- the measured fastest set's rank under the current model;
- whether it is kept (top 1 %, at least 8);
- how much slower the fastest kept timed set is;
- how many timed sets ran faster than their bound allows.

usage: validate_rerank.py DIR sets.tsv
"""
import collections
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_report import timed  # noqa: E402


def norm_old(s):  # "32x16x1x1/2x1x1x1 Cin 64 CHNW" (samples before paramsText)
    m = re.match(r"(\d+)x(\d+)x(\d+)x(\d+)/(\d+)x(\d+)x(\d+)x(\d+) Cin (\d+) (\w+)", s)
    return tuple(int(x) for x in m.groups()[:9]) + (m.group(10),) if m else None


def norm_new(s):  # paramsText: "block 32x16x1x1, thread 2x1x1x1 (N x K x H x W), ..."
    m = re.match(r"block (\d+)x(\d+)x(\d+)x(\d+), thread (\d+)x(\d+)x(\d+)x(\d+) "
                 r"\(N x K x H x W\), C_input (\d+), FORMAT_shared (\w+)", s)
    return tuple(int(x) for x in m.groups()[:9]) + (m.group(10),) if m else None


def load(folder, tsv):
    """{op: (its timed sets' {params: us}, the dump's {params: row})} for
    each op the validation folder timed."""
    meas = collections.defaultdict(dict)
    for op, xs in timed(folder).items():
        for s, us in xs:
            meas[op.split(":")[0]][norm_old(s["params"]) or norm_new(s["params"])] = us
    alias = {}  # op -> the op of the same shape whose rows the dump wrote
    with open(tsv) as f:
        for line in f:
            if line.startswith("#alias\t"):
                x = line.rstrip("\n").split("\t")
                alias[x[1]] = x[2]
    wanted = set(meas) | {alias[op] for op in meas if op in alias}
    rows = collections.defaultdict(dict)
    with open(tsv) as f:
        hdr = f.readline().rstrip("\n").split("\t")
        for line in f:
            if line.split("\t", 1)[0] not in wanted:
                continue
            x = line.rstrip("\n").split("\t")
            r = {k: float(v) for k, v in zip(hdr[2:], x[2:])}
            r["params"] = norm_new(x[1])
            rows[x[0]][r["params"]] = r
    return {op: (m, rows[op] or rows[alias.get(op, op)]) for op, m in meas.items()}


def ranking(sets, key):
    """Each set's rank under `key` (best first; ties keep the dump's order)
    and how many of them the model keeps: the top 1 %, at least 8."""
    rank = {p: i for i, p in enumerate(sorted(sets, key=key))}
    return rank, min(len(sets), max(8, math.ceil(len(sets) * 0.01)))


def main():
    data = load(sys.argv[1], sys.argv[2])
    kept_total = 0
    for op, (m, sets) in data.items():
        n = len(sets)
        rank, k = ranking(sets, lambda p: (-sets[p]["pul"], -sets[p]["headroom"]))
        # Sets the current enumeration no longer produces (its rules changed
        # since the run) have no rank: left out, and counted.
        gone = [p for p in m if p not in rank]
        m = {p: us for p, us in m.items() if p in rank}
        if not m:
            print(f"{op[:60]:60s} none of its {len(gone)} timed sets is enumerated now")
            continue
        best = min(m, key=m.get)
        kept = [p for p in m if rank[p] < k]
        bk = min(kept, key=m.get) if kept else None
        over = sum(sets[p]["tlb"] > us for p, us in m.items())
        kept_total += rank[best] < k
        print(f"{op[:60]:60s} sets {n:7d} timed {len(m):4d} fastest at rank {rank[best]:6d} "
              f"({'kept' if rank[best] < k else 'pruned'}); fastest kept "
              f"{'%.3fx' % (m[bk] / m[best]) if bk else 'none timed'}; bound above measured {over}"
              + (f"; {len(gone)} timed sets not enumerated now" if gone else ""))
    print(f"measured fastest kept in {kept_total} of {len(data)} ops")


if __name__ == "__main__":
    main()

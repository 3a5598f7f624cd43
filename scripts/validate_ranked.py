#!/usr/bin/env python3
"""Issue 3: scores the current model on an earlier GPU validation's timed
sets, from a ranked dump (tools/cuts-dump-sets with --sets), so
large ops (batch 64: millions of sets each) need no full dump.

  scripts/validate_ranked.py sets DIR > sets.txt
  build/tools/cuts-dump-sets/cuts-dump-sets model.onnx --sets sets.txt \\
    -o ranked.tsv
  scripts/validate_ranked.py score DIR:ranked.tsv [DIR:ranked.tsv ...]

For each op: the measured fastest set's rank among all the op's sets and
whether it is kept (top 1 %, at least 8, at most 4096); how much slower the
fastest kept timed set is; the fastest of the first 8 distinct tilings among
the timed sets (what the tuner times, approximately: it times the first 8
tilings of the whole space); Spearman(bound, measured); the share of sets that ran
faster than their (finite) bound; a set COEF_r rules out has an infinite
bound and is not counted. VERBOSE=1 lists the best-ranked timed sets.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_report import spearman, timed  # noqa: E402
from validate_rerank import norm_new  # noqa: E402


def sets(folder):
    for op, xs in timed(folder).items():
        for s, _ in xs:
            print(f"{op.split(':')[0]}\t{s['params']}")


def load(tsv):
    rows = {}
    with open(tsv) as f:
        hdr = f.readline().rstrip("\n").split("\t")
        for line in f:
            x = line.rstrip("\n").split("\t")
            r = {k: float(v) for k, v in zip(hdr[2:], x[2:])}
            rows[(x[0], norm_new(x[1]))] = r
    return rows


def score(folder, tsv, verbose):
    rows = load(tsv)
    kept_ops, worst, top8s, rhos, over, n_all, n_ops = 0, 1.0, [], [], 0, 0, 0
    for op, xs in timed(folder).items():
        name = op.split(":")[0]
        m = {norm_new(s["params"]): us for s, us in xs}
        r = {p: rows[(name, p)] for p in m if (name, p) in rows}
        if not r:
            print(f"  {name[:60]}: no ranked rows")
            continue
        n_ops += 1
        m = {p: us for p, us in m.items() if p in r}
        total = next(iter(r.values()))["total"]
        # keepCount: the top 1 %, at least 8 and at most 4096 (PruneOptions)
        k = min(total, max(8, min(4096, -(-total // 100))))
        best = min(m, key=m.get)
        kept = [p for p in m if r[p]["rank"] < k]
        slower = min(m[p] for p in kept) / m[best] if kept else float("inf")
        kept_ops += r[best]["rank"] < k
        worst = max(worst, slower)
        order = sorted(m, key=lambda p: r[p]["rank"])
        tilings = []
        for p in order:
            if p[:9] not in [q[:9] for q in tilings]:
                tilings.append(p)
            if len(tilings) == 8:
                break
        top8 = min(m[p] for p in tilings) / m[best]
        top8s.append(top8)
        rhos.append(spearman([r[p]["tlb"] for p in m], [m[p] for p in m]))
        over += sum(math.isfinite(r[p]["tlb"]) and r[p]["tlb"] > us
                    for p, us in m.items())
        n_all += len(m)
        print(f"  {name[:58]:58s} fastest rank {int(r[best]['rank']):7d} of {int(total)}"
              f" ({'kept' if r[best]['rank'] < k else 'pruned'}); kept {slower:.2f}x;"
              f" first 8 tilings {top8:.2f}x; rho {rhos[-1]:.2f}")
        if verbose:
            for p in order[:8] + [best]:
                print(f"    rank {int(r[p]['rank']):7d} bound {r[p]['tlb']:7.1f} us "
                      f"measured {m[p]:7.1f} regs {int(r[p]['regs']):3d} "
                      f"resident {int(r[p]['resident'])} {p}")
    top8s.sort()
    rhos.sort()
    print(f"{os.path.basename(folder.rstrip('/'))}: fastest kept in {kept_ops}/{n_ops}, "
          f"worst kept {worst:.2f}x; first 8 tilings median {top8s[len(top8s) // 2]:.2f}x, "
          f"worst {top8s[-1]:.2f}x; median Spearman {rhos[len(rhos) // 2]:.2f}; "
          f"{over / max(1, n_all):.0%} beat their bound")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "sets":
        return sets(sys.argv[2])
    if len(sys.argv) < 3 or sys.argv[1] != "score":
        sys.exit(__doc__)
    for arg in sys.argv[2:]:
        folder, tsv = arg.split(":")
        score(folder, tsv, os.environ.get("VERBOSE"))


if __name__ == "__main__":
    main()

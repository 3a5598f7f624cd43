#!/usr/bin/env python3
"""Issue 3's validation report: joins DIR/validation.json (from cuts validate:
each sampled parameter set's op, PUL rank, kept flag and kernel key) with the
times `cuts tune DIR --cache DIR/cache.json` measured, and prints per op: sets
timed, whether the measured fastest set was kept (inside the top T %), the
fastest kept set's time against the fastest overall, and the Spearman rank
correlation between PUL and measured throughput; last, in how many ops the
fastest was kept and in how many a kept set came within 5 % of it. Writes
DIR/report.json.

usage: validate_report.py DIR [DIR ...]
"""
import json
import os
import sys

NEAR = 1.05  # "close to the fastest": the spread between two machines' runs


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    n = len(x)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx) ** 0.5
    vy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (vx * vy) if vx and vy else float("nan")


def timed(d):
    """DIR's timed samples by op: [(sample, measured us)]."""
    v = json.load(open(os.path.join(d, "validation.json")))
    cache = json.load(open(os.path.join(d, "cache.json")))["entries"]
    ops = {}
    for s in v["samples"]:
        e = cache.get(s["key"])
        if e and e.get("us") is not None:
            ops.setdefault(s["op"], []).append((s, e["us"]))
    return ops


def main():
    rows = []
    for d in sys.argv[1:]:
        for op, xs in timed(d).items():
            best = min(xs, key=lambda t: t[1])
            kept = [t for t in xs if t[0]["kept"]]
            best_kept = min(kept, key=lambda t: t[1]) if kept else None
            rho = spearman([t[0]["pul"] for t in xs], [1 / t[1] for t in xs])
            rows.append({
                "model": os.path.basename(d.rstrip("/")), "op": op,
                "timed": len(xs), "kept_timed": len(kept),
                "enumerated": xs[0][0]["enumerated"],
                "best_us": best[1], "best_rank": best[0]["rank"],
                "best_kept": best[0]["kept"],
                "best_kept_us": best_kept[1] if best_kept else None,
                "best_params": best[0].get("params"),
                "best_kept_params": best_kept[0].get("params")
                if best_kept else None,
                "best_kept_rank": best_kept[0]["rank"] if best_kept else None,
                "spearman": rho})
        json.dump(rows, open(os.path.join(d, "report.json"), "w"), indent=1)
    print("%-10s %5s %5s %8s %9s %9s %6s %8s  %s" % (
        "model", "timed", "kept", "enum", "best(us)", "kept(us)", "rank",
        "spearman", "op"))
    for r in rows:
        print("%-10s %5d %5d %8d %9.2f %9s %6d %8.2f  %s%s" % (
            r["model"][:10], r["timed"], r["kept_timed"], r["enumerated"],
            r["best_us"],
            "%.2f" % r["best_kept_us"] if r["best_kept_us"] else "-",
            r["best_rank"], r["spearman"],
            "" if r["best_kept"] else "PRUNED WINNER: ", r["op"][:90]))
    for r in rows:
        if not r["best_kept"]:
            print("  %s: fastest %s (rank %d), fastest kept %s (rank %s)" % (
                r["op"][:60], r["best_params"], r["best_rank"],
                r["best_kept_params"], r["best_kept_rank"]))
    pruned = sum(not r["best_kept"] for r in rows)
    # Kernels within a few per cent of each other swap places from one
    # machine to the next: how often a kept set is that close, too.
    near = sum(r["best_kept_us"] is not None and
               r["best_kept_us"] <= NEAR * r["best_us"] for r in rows)
    print("%d ops, measured fastest kept in %d, a kept set within %d %% of it "
          "in %d; median Spearman %.2f" % (
              len(rows), len(rows) - pruned, round(100 * (NEAR - 1)), near,
              sorted(r["spearman"] for r in rows)[len(rows) // 2] if rows else 0))


if __name__ == "__main__":
    main()

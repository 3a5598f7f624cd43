#!/usr/bin/env python3
"""A replayed graph's nodes in order, from scripts/cupti_trace.cpp's CSV:
each node's median duration and the median gap before it (its start less
the latest end of the nodes that started before it; negative: it overlapped
them), then the span of a replay and the sums. Nodes outside a graph (an
eager run's) are left out, and so are the first --skip replays.

usage: graph_trace.py TRACE.csv [--skip N] [--json OUT]
"""
import argparse
import json
import statistics
from collections import defaultdict


def load(path):
    """{graph node: [(start_ns, end_ns, name), ...]} in start order."""
    nodes = defaultdict(list)
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(",", 4)
            if len(parts) != 5 or parts[3] == "0":
                continue
            nodes[int(parts[3])].append((int(parts[0]), int(parts[1]),
                                         parts[4]))
    for runs in nodes.values():
        runs.sort()
    return nodes


def replays(nodes, skip):
    """Each replay as [(start, end, name, node)], in start order."""
    count = min(len(r) for r in nodes.values())
    out = []
    for i in range(skip, count):
        out.append(sorted((r[i][0], r[i][1], r[i][2], n)
                          for n, r in nodes.items()))
    return out


def table(reps):
    per = defaultdict(lambda: {"dur": [], "gap": [], "off": []})
    spans = []
    for rep in reps:
        t0, latest = rep[0][0], rep[0][0]
        for start, end, name, node in rep:
            p = per[node]
            p["name"] = name
            p["dur"].append((end - start) / 1e3)
            p["gap"].append((start - latest) / 1e3)
            p["off"].append((start - t0) / 1e3)
            latest = max(latest, end)
        spans.append((latest - t0) / 1e3)
    rows = [{"node": n, "name": p["name"],
             "offset_us": statistics.median(p["off"]),
             "us": statistics.median(p["dur"]),
             "gap_us": statistics.median(p["gap"])} for n, p in per.items()]
    rows.sort(key=lambda r: r["offset_us"])
    return rows, statistics.median(spans)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--skip", type=int, default=3,
                    help="replays left out at the start (uploads, warm-up)")
    ap.add_argument("--json")
    a = ap.parse_args()
    nodes = load(a.trace)
    if not nodes:
        raise SystemExit(f"{a.trace}: no graph nodes traced")
    reps = replays(nodes, a.skip)
    if not reps:
        raise SystemExit(f"{a.trace}: fewer than {a.skip + 1} replays")
    rows, span = table(reps)
    print(f"{'#':>3} {'start':>8} {'us':>7} {'gap':>6}  node")
    for i, r in enumerate(rows):
        print(f"{i:3d} {r['offset_us']:8.1f} {r['us']:7.2f} "
              f"{r['gap_us']:6.2f}  {r['name'][:90]}")
    gaps = sum(max(r["gap_us"], 0) for r in rows)
    print(f"{len(reps)} replays: span {span:.1f} us, nodes' time "
          f"{sum(r['us'] for r in rows):.1f} us, idle gaps {gaps:.1f} us")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"span_us": span, "nodes": rows}, f, indent=1)


if __name__ == "__main__":
    main()

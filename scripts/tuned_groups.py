#!/usr/bin/env python3
"""Each group's measured candidates, from a tuning cache's entries joined
with the candidates file of the same compile: which groups the tuner timed,
how many of their candidates, and the fastest.

  cuts compile MODEL.onnx --arch ARCH -o DIR --tuning EMPTY.json --candidates cand.json
  scripts/tuned_groups.py cand.json ENTRIES.json [--grep TEXT]

ENTRIES.json: a tuning cache (cuts compile --tuning) or just its "entries"
object (the cache without its binaries). Candidates are keyed by their
source and arch, so the candidates file may be written on another machine
by the same cuts. Prints one row per group: id, candidates, measured, the
fastest time (us) and the first line of its kernel's source.
"""
import json
import sys
from collections import defaultdict


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    grep = sys.argv[sys.argv.index("--grep") + 1] if "--grep" in sys.argv else None
    if grep:
        args.remove(grep)
    cands = json.load(open(args[0]))["candidates"]
    entries = json.load(open(args[1]))
    entries = entries.get("entries", entries)
    groups = defaultdict(list)
    for c in cands:
        what = (c["source"].split("\n")[0].removeprefix("// ") if c["source"]
                else f"{c['library']} {c['libraryParams']}")
        e = entries.get(c["key"])
        groups[int(c["group"])].append((e.get("us") if e else None, what))
    print("group\tcandidates\tmeasured\tfastest_us\tkernel")
    for g, rows in sorted(groups.items()):
        times = [t for t, _ in rows if t is not None]
        what = min(rows, key=lambda r: (r[0] is None, r[0] or 0))[1]
        if grep and grep not in what:
            continue
        best = f"{min(times):.1f}" if times else "-"
        print(f"{g}\t{len(rows)}\t{len(times)}\t{best}\t{what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

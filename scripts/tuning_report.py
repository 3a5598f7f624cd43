#!/usr/bin/env python3
"""Per-layer view of a tuned compile: each group's fastest generated kernel
next to its fastest library call (cuDNN / cuBLASLt), both measured by the
tuner on the GPU, with the performance model's lower bound.

usage: tuning_report.py OUT/tuning.json [--markdown]

Prints one row per group that has a library alternative (convolutions and
matrix products), the generated/library time ratio, then the totals over
those groups; --markdown prints the table as markdown.
"""
import json
import sys


def fmt(v):
    return "-" if v is None else "%.2f" % v


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    md = "--markdown" in sys.argv
    r = json.load(open(args[0]))
    rows = [g for g in r["groups"] if g["libraryUs"] is not None]
    head = ["group", "fusion", "bound us", "generated us", "library us",
            "generated / library", "chosen"]
    table = []
    gen_total = lib_total = best_total = 0.0
    for g in rows:
        ratio = (g["generatedUs"] / g["libraryUs"]
                 if g["generatedUs"] is not None else None)
        ops = g["ops"] if len(g["ops"]) <= 70 else g["ops"][:67] + "..."
        table.append([ops, g["fusion"], fmt(g["boundUs"]),
                      fmt(g["generatedUs"]) + (" " + g["variant"]
                                               if g.get("variant") else ""),
                      fmt(g["libraryUs"]) + " " + g["library"],
                      "-" if ratio is None else "%.2fx" % ratio, g["chosen"]])
        if g["generatedUs"] is not None:
            gen_total += g["generatedUs"]
            lib_total += g["libraryUs"]
            best_total += min(g["generatedUs"], g["libraryUs"])
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for t in table:
            print("| " + " | ".join(t) + " |")
    else:
        w = [max(len(str(x[i])) for x in table + [head]) for i in
             range(len(head))]
        for t in [head] + table:
            print("  ".join(str(x).ljust(w[i]) for i, x in enumerate(t)))
    won = sum(1 for g in rows if g["chosen"] == "generated")
    print("%s: %d groups with a library alternative, generated kernel chosen "
          "for %d; sums over those with both measured: generated %.1f us, "
          "library %.1f us, the faster of each %.1f us" %
          (r["arch"], len(rows), won, gen_total, lib_total, best_total))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The data-movement breakdown of bench/dataparallel.sh's cells as stacked
bars (one PNG): per model at its smallest batch, a bar per device count and
mode, each segment the mean per run and device entry of host-to-device
(hidden by pre-loading, and not), peer, compute, gather and device-to-host
milliseconds.

    bench/plot_movement.py bench/out/dataparallel-h200.jsonl out.png
"""
import json
import sys


def main():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return 0
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    models = sorted({r["name"] for r in rows})
    parts = [("h2d shown", "tab:blue"), ("h2d hidden", "lightsteelblue"),
             ("peer", "tab:orange"), ("compute", "tab:green"),
             ("gather", "tab:purple"), ("d2h", "tab:red")]
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4),
                             squeeze=False)
    for ax, model in zip(axes[0], models):
        mine = [r for r in rows if r["name"] == model]
        batch = min(r["batch"] for r in mine)
        cells = sorted((r for r in mine if r["batch"] == batch),
                       key=lambda r: (len(r["gpus"].split(",")), r["mode"]))
        labels, bottoms = [], [0.0] * len(cells)
        for name, color in parts:
            values = []
            for r in cells:
                mv = r["movement"]
                mean = lambda k: sum(m[k] for m in mv) / len(mv)
                v = {"h2d shown": mean("h2d_ms") - mean("h2d_hidden_ms"),
                     "h2d hidden": mean("h2d_hidden_ms"),
                     "peer": mean("peer_ms"), "compute": mean("compute_ms"),
                     "gather": mean("gather_ms"), "d2h": mean("d2h_ms")}[name]
                values.append(v)
            ax.bar(range(len(cells)), values, bottom=bottoms, color=color,
                   label=name)
            bottoms = [b + v for b, v in zip(bottoms, values)]
        labels = ["%s\n%s" % (r["gpus"], r["mode"]) for r in cells]
        ax.set_xticks(range(len(cells)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_title("%s, batch %d" % (model, batch))
        ax.set_ylabel("ms per run and device")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)
    print("wrote", sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())

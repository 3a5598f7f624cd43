#!/usr/bin/env python3
"""Writes report.md and the plots of a benchmark run from its results.json.

Everything shown is read from results.json (written by bench/run.py on the
GPU machine) or derived from it here: the roofline floor of each cell and
each system's percentage of it. Needs no PyTorch; the plots need matplotlib
(skipped with a note when it is missing).

usage: report.py RESULTS_DIR [--readme README.md]

--readme replaces the part of README.md between the markers
<!-- bench:performance:begin --> and <!-- bench:performance:end --> with the
latest table, so that the README's numbers also come from a run.
"""
import argparse
import json
import math
import os
import sys

# The peer systems, in column order, with the names the report shows.
PEERS = [
    ("eager", "eager"),
    ("cuda_graph", "eager + CUDA graph"),
    ("compile_default", "compile (reduce-overhead)"),
    ("compile_max_autotune", "compile (max-autotune)"),
]
# The GEMM ceiling that bounds a cell's arithmetic: fp32 cells run with TF32
# off, so their FLOPs are bounded by the SIMT FP32 rate, not the TF32 one.
RATE_FOR = {"fp32": "gemm_fp32_simt", "tf32": "gemm_tf32", "fp16": "gemm_fp16",
            "bf16": "gemm_bf16"}
PRECISION_ORDER = ["fp32", "tf32", "fp16", "bf16"]
COLORS = {"eager": "tab:blue", "cuda_graph": "tab:orange", "compile_default": "tab:green",
          "compile_max_autotune": "tab:purple", "cuts": "tab:red"}
BEGIN, END = "<!-- bench:performance:begin -->", "<!-- bench:performance:end -->"


def ok(entry):
    return isinstance(entry, dict) and entry.get("status") == "ok"


def cell_list(results):
    """The cells in the order the run planned them (model, batch, precision)."""
    cells = results.get("plan", {}).get("cells")
    if cells:
        return cells
    out = []
    for key in sorted(results.get("peers", {})):
        model, b, prec = key.split("/")
        out.append({"key": key, "model": model, "batch": int(b[1:]), "precision": prec})
    return out


def derive(results):
    """Per cell: roofline floor (max of FLOPs / GEMM rate and bytes / copy
    bandwidth), which side bounds it, best peer, % of floor per system, and
    cuts' ratio to the best peer."""
    ceil = results.get("ceilings", {})
    out = {}
    for c in cell_list(results):
        key, prec = c["key"], c["precision"]
        d = {"floor_ms": None, "bound": None, "best_peer": None, "best_ms": None,
             "pct_of_floor": {}, "cuts_ms": None, "cuts_vs_best": None}
        fl = results.get("floors", {}).get(f"{c['model']}/b{c['batch']}")
        rate, bw = ceil.get(RATE_FOR[prec], {}), ceil.get("copy", {})
        # tf32 moves fp32's bytes, bf16 fp16's (floors counts those two).
        moved = prec if prec in (fl or {}).get("bytes", {}) else \
            {"tf32": "fp32", "bf16": "fp16"}.get(prec)
        if ok(fl) and ok(rate) and ok(bw) and moved in fl.get("bytes", {}):
            t_compute = fl["flops"] / rate["flops_per_s"]
            t_memory = fl["bytes"][moved]["total"] / bw["bytes_per_s"]
            d["floor_ms"] = max(t_compute, t_memory) * 1e3
            d["bound"] = "compute" if t_compute >= t_memory else "memory"
            d["compute_ms"], d["memory_ms"] = t_compute * 1e3, t_memory * 1e3
        peers = results.get("peers", {}).get(key, {})
        for name, _ in PEERS:
            e = peers.get(name)
            if not ok(e):
                continue
            if d["best_ms"] is None or e["median_ms"] < d["best_ms"]:
                d["best_ms"], d["best_peer"] = e["median_ms"], name
            if d["floor_ms"] is not None:
                d["pct_of_floor"][name] = 100.0 * d["floor_ms"] / e["median_ms"]
        cuts = results.get("cuts", {}).get(key)
        if ok(cuts):
            d["cuts_ms"] = cuts["median_ms"]
            if d["floor_ms"] is not None:
                d["pct_of_floor"]["cuts"] = 100.0 * d["floor_ms"] / cuts["median_ms"]
            if d["best_ms"] is not None:
                d["cuts_vs_best"] = cuts["median_ms"] / d["best_ms"]
        out[key] = d
    return out


def fmt_ms(v):
    if v is None:
        return "—"
    return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 10 else f"{v:.1f}"


def fmt_status(entry, notes):
    """A latency, or a short word for why there is none; the full reason goes
    to the notes under the table."""
    if entry is None:
        return "—"
    if ok(entry):
        return fmt_ms(entry["median_ms"])
    status = entry.get("status", "?")
    if status.startswith("skipped: autotuned only"):
        # Compiled by bench/warm_parallel.py; the next call times it alone.
        return f"autotuned ({sum(entry['attempts_s']):.0f} s)"
    if status.startswith("skipped") and entry.get("attempts_s"):
        # Ran and was stopped at the call's limit: it resumes from the
        # carried Inductor cache, and the seconds spent so far say how far.
        return f"stopped ({sum(entry['attempts_s']):.0f} s)"
    if status.startswith("skipped"):
        return "skipped"
    if status.startswith("not available"):
        return "N/A"
    if status not in notes:  # one note for each distinct reason
        notes.append(status)
    return f"error [{notes.index(status) + 1}]"


def label(name):
    return dict(PEERS).get(name, name)


def main_table(results, derived, notes, with_details=True):
    hdr = ["model", "batch", "precision"] + [lab + " (ms)" for _, lab in PEERS] + [
        "best peer", "floor (ms)", "best % of floor", "cuts (ms)", "cuts / best peer"]
    if with_details:
        hdr.append("cuts compile + tune (s)")
    rows = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for c in cell_list(results):
        key, d = c["key"], derived[c["key"]]
        peers = results.get("peers", {}).get(key, {})
        cuts = results.get("cuts", {}).get(key)
        row = [c["model"], str(c["batch"]), c["precision"]]
        row += [fmt_status(peers.get(name), notes) for name, _ in PEERS]
        best = d["best_peer"]
        row.append(f"{label(best)}: {fmt_ms(d['best_ms'])}" if best else "—")
        row.append(fmt_ms(d["floor_ms"]) + (f" ({d['bound']})" if d["bound"] else ""))
        row.append(f"{d['pct_of_floor'][best]:.1f} %" if best in d["pct_of_floor"] else "—")
        row.append(fmt_status(cuts, notes))
        row.append(f"{d['cuts_vs_best']:.2f}×" if d["cuts_vs_best"] else "N/A")
        if with_details:
            row.append(f"{cuts['compile_s']:.0f}" if ok(cuts) and "compile_s" in cuts else "N/A")
        rows.append("| " + " | ".join(row) + " |")
    return rows


def floor_table(results, derived):
    hdr = ["model", "batch", "precision", "GFLOP", "MB moved", "compute (ms)",
           "memory (ms)", "floor (ms)"] + [lab + " %" for _, lab in PEERS] + ["cuts %"]
    rows = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for c in cell_list(results):
        d = derived[c["key"]]
        fl = results.get("floors", {}).get(f"{c['model']}/b{c['batch']}")
        row = [c["model"], str(c["batch"]), c["precision"]]
        if ok(fl):
            moved = fl["bytes"].get(c["precision"], {}).get("total")
            row += [f"{fl['flops'] / 1e9:.2f}",
                    f"{moved / 1e6:.1f}" if moved is not None else "-"]
        else:
            row += ["—", "—"]
        row += [fmt_ms(d.get("compute_ms")), fmt_ms(d.get("memory_ms")), fmt_ms(d["floor_ms"])]
        for name in [n for n, _ in PEERS] + ["cuts"]:
            p = d["pct_of_floor"].get(name)
            row.append(f"{p:.1f}" if p is not None else "—")
        rows.append("| " + " | ".join(row) + " |")
    return rows


def compile_table(results):
    hdr = ["model", "batch", "precision", "reduce-overhead compile (s)",
           "max-autotune compile (s)", "largest rel. L2 error vs eager"]
    rows = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for c in cell_list(results):
        peers = results.get("peers", {}).get(c["key"], {})
        row = [c["model"], str(c["batch"]), c["precision"]]
        for name in ("compile_default", "compile_max_autotune"):
            e = peers.get(name)
            # *: autotuned alongside other cells (warm_parallel.py), see below.
            mark = "*" if ok(e) and e.get("warm_parallel") else ""
            row.append(f"{e['compile_s']:.1f}{mark}" if ok(e) else "—")
        errs = [e["rel_err"] for e in peers.values() if ok(e) and e.get("rel_err") is not None]
        if any(math.isnan(e) for e in errs) or (ok(peers.get("eager"))
                                                and peers["eager"].get("output_finite") is False):
            # A random-weight model can overflow in fp16: nothing to compare.
            row.append("n/a: eager output not finite")
        else:
            row.append(f"{max(errs):.1e}" if errs else "—")
        rows.append("| " + " | ".join(row) + " |")
    return rows


def ceilings_lines(results):
    names = {"copy": "device-to-device copy (bytes read + written)",
             "gemm_fp32_simt": "FP32 GEMM, TF32 off (SIMT)", "gemm_tf32": "TF32 GEMM",
             "gemm_fp16": "fp16 GEMM", "gemm_bf16": "bf16 GEMM"}
    rows = ["| ceiling | measured | how |", "|---|---|---|"]
    for key, title in names.items():
        e = results.get("ceilings", {}).get(key)
        if not ok(e):
            rows.append(f"| {title} | {e.get('status') if e else 'not measured'} | |")
        elif key == "copy":
            rows.append(f"| {title} | {e['bytes_per_s'] / 1e12:.2f} TB/s | "
                        f"{e['buffer_bytes'] / 2**30:.1f} GiB buffer, median of {e['iters']} |")
        else:
            rows.append(f"| {title} | {e['flops_per_s'] / 1e12:.1f} TFLOP/s | "
                        f"{e['m']}×{e['n']}×{e['k']}, median of {e['iters']} |")
    return rows


def env_lines(results):
    env = results.get("env", {})
    keys = ["gpu_name", "gpu_capability", "gpu_sm_count", "gpu_memory_gib", "driver",
            "clocks", "torch", "cuda", "cudnn", "torchvision", "transformers",
            "onnx", "onnxruntime", "python", "cudnn_benchmark", "tf32_matmul",
            "tf32_cudnn", "commit", "date"]
    return [f"- {k}: {env[k]}" for k in keys if k in env]


def models_lines(results):
    models = results.get("models", {})
    if not models:
        return ["Not exported in this run."]
    rows = ["| file | MB | export (s) | sha256 |", "|---|---|---|---|"]
    for key in sorted(models):
        e = models[key]
        if ok(e):
            rows.append(f"| {e['file']} | {e['bytes'] / 1e6:.1f} | {e['export_s']:.1f} | "
                        f"{e['sha256'][:16]} |")
        else:
            rows.append(f"| {key} | {e.get('status')} | | |")
    return rows


def write_report(results, out_dir, plots):
    derived = derive(results)
    notes = []
    env = results.get("env", {})
    lines = [f"# Benchmark: {env.get('gpu_name', '?')}, {env.get('date', '?')}", "",
             "Written by bench/report.py from results.json (bench/run.py measured every "
             "number on the GPU). Latency: median of CUDA-event timings of one inference "
             "after warm-up, inputs resident on the GPU. fp32 runs with TF32 off; tf32 is "
             "PyTorch's default (TF32 in cuDNN convolutions, not in matmuls); fp16 and bf16 "
             "are model.half() and model.bfloat16(); cuts compiles with --precision. Floor: max(FLOPs / measured GEMM rate of the precision, minimal "
             "bytes / measured copy bandwidth); % of floor = floor / latency.", "",
             "## Latency", ""]
    lines += main_table(results, derived, notes)
    if notes:
        lines += [""] + [f"[{i + 1}] {n}" for i, n in enumerate(notes)]
    lines += ["", "'skipped': not run within the phase's time budget; a later run "
              "with the same --out resumes there. 'stopped (N s)': a compile stopped at "
              "the run's budget after N s in all; with Inductor's cache carried, the next "
              "run resumes it. 'autotuned (N s)': compiled by bench/warm_parallel.py in N s, to "
              "be timed alone by the next run.", "", "## Roofline floor and % of floor", ""]
    lines += floor_table(results, derived)
    lines += ["", "## torch.compile wall time and agreement with eager", ""]
    lines += compile_table(results)
    if any("*" in r for r in compile_table(results)[2:]):
        lines += ["", "\\* Autotuned by bench/warm_parallel.py, several cells at once, each "
                  "process with its share of the cores and GPU timings taken one at a time: "
                  "the wall time is longer than the same compile run alone would take."]
    lines += ["", "## Ceilings", ""] + ceilings_lines(results)
    lines += ["", "## ONNX exports (for the cuts phase)", ""] + models_lines(results)
    lines += ["", "## Environment", ""] + env_lines(results)
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return derived


def write_plots(results, derived, out_dir):
    """latency.png (log scale) and floor.png, one panel per precision."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib not installed, no plots", file=sys.stderr)
        return []
    cells = cell_list(results)
    precisions = sorted({c["precision"] for c in cells}, key=PRECISION_ORDER.index)
    systems = [n for n, _ in PEERS] + ["cuts"]
    written = []
    for fname, ylabel, value, log in (
            ("latency.png", "latency (ms, log scale)", lambda k, s: latency(results, k, s), True),
            ("floor.png", "% of roofline floor", lambda k, s: derived[k]["pct_of_floor"].get(s), False)):
        present = [s for s in systems if any(value(c["key"], s) is not None for c in cells)]
        fig, axes = plt.subplots(len(precisions), 1, figsize=(15, 4.2 * len(precisions)),
                                 squeeze=False)
        for ax, prec in zip(axes[:, 0], precisions):
            row = [c for c in cells if c["precision"] == prec]
            width = 0.8 / max(1, len(present))
            for i, s in enumerate(present):
                xs, ys = [], []
                for j, c in enumerate(row):
                    v = value(c["key"], s)
                    if v is not None:
                        xs.append(j + (i - (len(present) - 1) / 2) * width)
                        ys.append(v)
                if xs:  # a system with no result in this panel gets no legend entry
                    ax.bar(xs, ys, width, label=dict(PEERS).get(s, s), color=COLORS[s])
            if log:
                fx = [j for j, c in enumerate(row) if derived[c["key"]]["floor_ms"]]
                if fx:
                    ax.hlines([derived[row[j]["key"]]["floor_ms"] for j in fx],
                              [j - 0.45 for j in fx], [j + 0.45 for j in fx], color="black",
                              linestyles="dashed", label="roofline floor", zorder=3)
                ax.set_yscale("log")
            else:
                ax.axhline(100, color="black", linewidth=0.8)
            ax.set_xticks(range(len(row)))
            ax.set_xticklabels([f"{c['model']}\nb{c['batch']}" for c in row], fontsize=8)
            ax.set_ylabel(ylabel)
            ax.set_title(prec)
            ax.grid(axis="y", alpha=0.3)
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.suptitle(f"{results.get('env', {}).get('gpu_name', '?')}, "
                     f"{results.get('env', {}).get('date', '?')}")
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, fname), dpi=80)
        plt.close(fig)
        written.append(fname)
    return written


def latency(results, key, system):
    e = (results.get("cuts", {}).get(key) if system == "cuts"
         else results.get("peers", {}).get(key, {}).get(system))
    return e["median_ms"] if ok(e) else None


def measured_dates(section):
    """The first and last day a section's units were measured (their 'at'
    stamps), as text; '' where none carries one."""
    days = sorted({u["at"][:10] for u in section.values()
                   if isinstance(u, dict) and u.get("at")})
    return "" if not days else days[0] if len(days) == 1 else \
        f"{days[0]} to {days[-1]}"


def readme_block(results, out_dir, readme):
    env = results.get("env", {})
    cuts_days = measured_dates(results.get("cuts", {}))
    peer_days = measured_dates({f"{c}/{p}": u for c, ps in
                                results.get("peers", {}).items()
                                if isinstance(ps, dict)
                                for p, u in ps.items()}) or env.get("date", "?")
    rel = os.path.relpath(out_dir, os.path.dirname(os.path.abspath(readme)))
    notes = []
    derived = derive(results)
    lines = [BEGIN,
             f"Measured on **{env.get('gpu_name', '?')}** on {peer_days}"
             + (f" (the cuts cells {cuts_days})" if cuts_days and
                cuts_days != peer_days else "") + " "
             f"(driver {env.get('driver', '?')}, PyTorch {env.get('torch', '?')}) by "
             f"`bench/run.py`; generated by `bench/report.py` from "
             f"[{rel}/results.json]({rel}/results.json), full report in "
             f"[{rel}/report.md]({rel}/report.md). Median latency in ms; fp32 with TF32 "
             "off; tf32 is PyTorch's default (TF32 in cuDNN's convolutions, "
             "not in matmuls), cuts' `--precision tf32` (TF32 in both).", ""]
    lines += main_table(results, derived, notes, with_details=False)
    if notes:
        lines += [""] + [f"[{i + 1}] {n}" for i, n in enumerate(notes)]
    lines.append(END)
    return "\n".join(lines)


def update_readme(results, out_dir, readme):
    text = open(readme).read()
    if BEGIN not in text or END not in text:
        sys.exit(f"report: {readme}: markers {BEGIN} / {END} not found")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(readme, "w") as f:
        f.write(head + readme_block(results, out_dir, readme) + tail)


def generate(out_dir, readme=None):
    with open(os.path.join(out_dir, "results.json")) as f:
        results = json.load(f)
    derived = derive(results)
    plots = write_plots(results, derived, out_dir)
    write_report(results, out_dir, plots)
    if readme:
        update_readme(results, out_dir, readme)
    return derived


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results_dir")
    ap.add_argument("--readme", help="README.md whose Performance block to regenerate")
    a = ap.parse_args()
    generate(a.results_dir, a.readme)
    print(f"report: wrote {os.path.join(a.results_dir, 'report.md')}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Issue 3: the hardware counters of a validation sample (scripts/gpu_profile.sh)
next to the performance model's counts.

  scripts/profile_report.py metrics [simple]
      the counters scripts/gpu_profile.sh asks ncu for, comma-separated
      (simple: those of the ops without shared memory, global memory's
      requests, sectors and hits, blocks launched and why warps wait).
  scripts/profile_report.py extract PROFILE_DIR OUT_DIR
      ncu's raw CSVs (<op>.csv) -> compact <op>.tsv (the candidate's key and
      the counters below), with <op>.validation.json copied alongside.
  scripts/profile_report.py compare DIR DUMP.tsv [CACHE.json]
      DUMP.tsv: the model's rows for the sample (tools/cuts-dump-sets with
      --sets from `scripts/validate_ranked.py sets`); CACHE.json: the
      timings to rank by (a validation call's, not the profiled run's).
      Per op and layout class: measured shared-load instructions over the
      model's N_load, measured shared wavefronts over N_load x COEF_bc; then
      Spearman(time, floor) of the floors the counters give (issue slots,
      shared wavefronts, DRAM bytes) against Spearman(time, bound).
"""
import csv
import glob
import io
import json
import math
import os
import re
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_report import spearman  # noqa: E402
from validate_ranked import load as load_dump  # noqa: E402
from validate_rerank import norm_new  # noqa: E402

# The GPU the counters come from (its descriptor: SMs, DRAM bandwidth).
ARCH = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                   "..", "perfmodel", "arch", "h200.json")))

METRICS = [
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.max",
    "smsp__inst_executed.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
]
STALLS = ["short_scoreboard", "mio_throttle", "long_scoreboard", "barrier",
          "math_pipe_throttle", "wait", "not_selected", "lg_throttle",
          "dispatch_stall"]
METRICS += [f"smsp__warp_issue_stalled_{s}_per_warp_active.pct" for s in STALLS]

SIMPLE_METRICS = [
    "gpu__time_duration.sum",
    "sm__cycles_active.avg",
    "smsp__inst_executed.sum",
    "smsp__inst_executed_op_global_ld.sum",
    "smsp__inst_executed_op_global_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__ctas_launched.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
]
SIMPLE_METRICS += [f"smsp__warp_issue_stalled_{s}_per_warp_active.pct"
                   for s in ["long_scoreboard", "lg_throttle", "drain",
                             "no_instruction", "wait", "not_selected",
                             "dispatch_stall", "short_scoreboard",
                             "branch_resolving", "selected"]]


def extract(src, out):
    os.makedirs(out, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(src, "*.csv"))):
        lines = [x for x in open(path) if not x.startswith("==")]
        rows = list(csv.reader(io.StringIO("".join(lines))))
        if not rows:
            continue
        hdr = rows[0]
        tag = os.path.basename(path)[:-4]
        # Whichever list the profile asked for (METRICS or SIMPLE_METRICS).
        names = [m for m in dict.fromkeys(METRICS + SIMPLE_METRICS)
                 if m in hdr]
        with open(os.path.join(out, tag + ".tsv"), "w") as f:
            f.write("key\t" + "\t".join(names) + "\n")
            for r in rows[2:]:  # rows[1]: units
                d = dict(zip(hdr, r))
                # "cuts-tune:sm_90:13.0:<hash>/cuts_kernel" (NVTX renamed)
                name = d["Kernel Name"].split("/")[0]
                key = name.replace("cuts-tune:", "", 1).replace(":", "/")
                vals = [d.get(m, "").replace(",", "") for m in names]
                f.write(key + "\t" + "\t".join(vals) + "\n")
        v = os.path.join(src, tag + ".validation.json")
        if os.path.exists(v):
            shutil.copy(v, out)


def layout(params):
    f = re.search(r"FORMAT_shared (\w+)", params).group(1)
    return "C inner" if f.endswith("C") else "W inner" if f.endswith("W") \
        else "other"


def q(xs):
    xs = sorted(xs)
    near = sum(abs(t - 1) < 0.15 for t in xs) / len(xs)
    return (f"median {statistics.median(xs):.2f}, p10-p90 "
            f"{xs[len(xs) // 10]:.2f}-{xs[9 * len(xs) // 10]:.2f}, "
            f"{100 * near:.0f} % within 15 %")


def compare(folder, dump, cache):
    model = load_dump(dump)
    times = json.load(open(cache))["entries"] if cache else {}
    for tsv in sorted(glob.glob(os.path.join(folder, "*.tsv"))):
        tag = os.path.basename(tsv)[:-4]
        samples = json.load(
            open(os.path.join(folder, tag + ".validation.json")))["samples"]
        counters = {}
        with open(tsv) as f:
            hdr = f.readline().rstrip("\n").split("\t")
            for line in f:
                x = line.rstrip("\n").split("\t")
                counters[x[0]] = {k: float(v) if v else math.nan
                                  for k, v in zip(hdr[1:], x[1:])}
        by_class, floors, bounds, us = {}, [], [], []
        for s in samples:
            m = counters.get(s["key"])
            r = model.get((s["op"].split(":")[0], norm_new(s["params"])))
            if m is None or r is None:
                continue
            warps = r["blocks"] * math.ceil(r["threads"] / 32)
            lds = m["smsp__inst_executed_op_shared_ld.sum"] / warps
            wf = m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] / warps
            c = by_class.setdefault(layout(s["params"]), ([], []))
            c[0].append(lds / r["nLoad"])
            c[1].append(wf / (r["nLoad"] * r["coefBc"]))
            t = times.get(s["key"], {}).get("us") if times else \
                m["gpu__time_duration.sum"] / 1e3
            if not t:
                continue
            # The SM's clock during the run, from the counters themselves.
            ghz = m["sm__cycles_elapsed.max"] / m["gpu__time_duration.sum"]
            sms = ARCH["numSM"]
            floor = max(
                m["smsp__inst_executed.sum"] / (4 * sms * ghz * 1e3),
                (m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] +
                 m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"]) /
                (sms * ghz * 1e3),
                (m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]) /
                (ARCH["bwGlobal"] * 1e-6))
            floors.append(floor)
            bounds.append(r["tlb"])
            us.append(t)
        print(f"{tag}: {len(us)} sets")
        for k, (a, b) in sorted(by_class.items()):
            print(f"  {k:8s} n={len(a):3d}  LDS / N_load: {q(a)}")
            print(f"  {'':8s} {'':5s}  wavefronts / (N_load x COEF_bc): {q(b)}")
        if len(us) > 2:
            print(f"  Spearman(time, counters' floor) {spearman(floors, us):.2f}, "
                  f"Spearman(time, bound) {spearman(bounds, us):.2f}")


if __name__ == "__main__":
    if len(sys.argv) in (2, 3) and sys.argv[1] == "metrics":
        simple = sys.argv[2:] == ["simple"]
        print(",".join(SIMPLE_METRICS if simple else METRICS))
    elif len(sys.argv) >= 4 and sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3],
                sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        sys.exit(__doc__)

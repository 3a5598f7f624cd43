#!/usr/bin/env python3
"""BigCuts' executor against its planner (issues 35 and 36; Figure 5.4's
method): a GPT-3-sized decoder (bench/gpt_model.py) with its weights
streamed from local disk under a budget, run by cuts-mpi in every split of
its ranks into data-parallel groups (DP) and pipeline stages (P), under
both schedules:

- AR (activation-resident): each micro-batch streams the stage's weights
  again (an artifact compiled at micro-batch / DP sequences; each group
  takes its share of every micro-batch, as the thesis's F1 splits it);
- PR (parameter-resident): a group's whole share of the mini-batch runs
  through each chunk of weights once (an artifact compiled at mini-batch /
  DP sequences), its activations kept on the GPU.

On one GPU (--gpus 0) one or two ranks share it and its disk, so the
planner sees a node of two GPUs with half the peak each; on several
(--gpus 0,1,2,3) a rank has a GPU, up to as many ranks. Either way the
node's one disk is shared by the ranks: its rate is a plain sequential
O_DIRECT read just before each configuration runs (a virtual disk's rate
drifts between minutes). Printed: the storage figures (the streamed read
rate against `cuts bench`'s sequential read of the same file), then each
configuration's planner estimate next to the measured time of a
mini-batch. Results in bench/out/bigcuts-<arch>.json.

  bench/bigcuts.py [--bin .gpu-bin/bin] [--size gpt3-1.3b] [--gpus 0,1,2,3]
  bench/bigcuts.py --table bench/out/bigcuts-h200.json   (README table)
"""
import argparse
import json
import mmap
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(*cmd, env=None):
    t = time.time()
    r = subprocess.run(list(cmd), capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("failed (%s): %s\n%s%s" % (" ".join(cmd), r.returncode,
                                            r.stdout[-2000:], r.stderr[-3000:]))
    return r.stdout, time.time() - t


def mpirun(tool, ranks, *args):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    out, _ = sh("mpirun", "-np", str(ranks), "--bind-to", "none", tool, *args,
                env=env)
    return json.loads(out.strip().splitlines()[-1])


def read_gbs(path, block=256 << 20):
    """A plain sequential O_DIRECT pass over `path` in 256 MiB reads, GB/s:
    the disk's rate (a virtual disk's drifts from minute to minute)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    buf, total, t = mmap.mmap(-1, block), 0, time.time()
    try:
        while True:
            n = os.readv(fd, [buf])
            if n <= 0:
                break
            total += n
    finally:
        os.close(fd)
    return total / (time.time() - t) / 1e9


def cluster(path, ranks, shared_gpu, peak_tflops, read_gbs):
    """A node of `ranks` GPUs (one GPU's shares where they share it), each
    rank with its share of the node's one disk, reading its own weights
    (cuts-mpi's do)."""
    c = {"name": "%d rank(s)" % ranks, "nodes": 1, "gpus_per_node": ranks,
         "peak_tflops": peak_tflops / (ranks if shared_gpu else 1),
         "intra_node_gbs": 10, "inter_node_gbs": 10,
         "storage_gbs_per_gpu": read_gbs / ranks,
         "shared_parameter_reads": False}
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def table(report):
    """The README's table from a run's output (bench/out/bigcuts-<arch>.json)."""
    j = json.load(open(report))
    print("| configuration | artifact batch | disk GB/s | estimate s | "
          "measured s | measured / estimate |")
    print("|---|---|---|---|---|---|")
    for r in sorted(j["rows"], key=lambda r: r["estimate_s"]):
        print("| (DP %d, WP 1, P %d, %s) | %d | %.2f | %.2f | %.2f | %.2f |" %
              (r["dp"], r["p"], r["schedule"], r["artifact_batch"],
               r["disk_gbs"], r["estimate_s"], r["measured_s"],
               r["measured_s"] / r["estimate_s"]))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        return table(sys.argv[2])
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".gpu-bin/bin")
    ap.add_argument("--arch", default="h200")
    ap.add_argument("--size", default="gpt3-1.3b")
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--sequence", type=int, default=128)
    ap.add_argument("--gpus", default="0",
                    help="one GPU: ranks share it, 1 or 2 of them; several: "
                         "a rank a GPU, up to as many")
    ap.add_argument("--mini", type=int)
    ap.add_argument("--micro", type=int)
    ap.add_argument("--budget", default="1GiB")
    ap.add_argument("--work", default="/tmp/cuts-bigcuts")
    ap.add_argument("--iters", type=int, default=2)
    a = ap.parse_args()
    cuts, tool = os.path.join(a.bin, "cuts"), os.path.join(a.bin, "cuts-mpi")
    gpus = len(set(a.gpus.split(",")))
    shared = gpus == 1
    most = 2 if shared else gpus  # ranks
    sizes = [1 << k for k in range(most.bit_length())]  # 1, 2, 4, .. most
    splits = [(n // p, p) for n in sizes for p in sizes if p <= n]
    # Each DP group takes its share of every micro-batch: at least one
    # sequence a group.
    a.micro = a.micro or max(2, most)
    a.mini = a.mini or 4 * a.micro
    w, s = a.work, a.sequence
    os.makedirs(w, exist_ok=True)
    onnx_path = os.path.join(w, a.size + ".onnx")
    if not os.path.exists(onnx_path):
        out, secs = sh(sys.executable, os.path.join(HERE, "gpt_model.py"),
                       onnx_path, "--size", a.size, "--sequence", str(s))
        print("%s(%.0f s)" % (out, secs), flush=True)
    # An artifact per batch: AR at micro / DP, PR at mini / DP.
    batches = sorted({1} | {(a.micro if sched else a.mini) // dp
                            for dp, _ in splits for sched in (0, 1)})
    art, jobs, t = {}, {}, time.time()
    for b in batches:  # compiled side by side
        d = os.path.join(w, "b%d" % b)
        art[b] = os.path.join(d, "model.cuts")
        if not os.path.exists(art[b]):
            jobs[b] = subprocess.Popen(
                [cuts, "compile", onnx_path, "--arch", a.arch, "--precision",
                 a.precision, "--input-shape", "input_ids=%dx%d" % (b, s),
                 "-o", d], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True)
    for b, job in jobs.items():
        _, err = job.communicate()
        if job.returncode != 0:
            sys.exit("compile of batch %d failed: %s" % (b, err[-3000:]))
        print("compiled batch %d (%.2f GB), %.0f s in all" %
              (b, os.path.getsize(art[b]) / 1e9, time.time() - t), flush=True)
    os.sync()  # no reads measured while the artifacts are still written back
    ids = os.path.join(w, "ids.npy")
    np.save(ids, np.random.default_rng(0).integers(
        0, 50000, (a.mini, s)).astype(np.int64))
    # Storage: the streamed read rate against a sequential read.
    out, _ = sh(cuts, "bench", art[a.micro], "--weight-budget", a.budget,
                "--iters", "3", "--json")
    storage = json.loads(out)
    print("storage: streamed %.2f GB a run at %.2f GB/s reading; a "
          "sequential O_DIRECT read %.2f GB/s (%.0f%%)" %
          (storage["streamed_bytes_per_run"] / 1e9,
           storage["stream_read_gbs"], storage["sequential_read_gbs"],
           100 * storage["stream_read_gbs"] / storage["sequential_read_gbs"]),
          flush=True)
    # Each configuration: the disk's rate measured just before it, the
    # planner's estimate with it, the run.
    peak = {"fp16": 989, "bf16": 989, "tf32": 494, "fp32": 67}[a.precision]
    rows = []
    for dp, p in splits:
        for sched in ("PR", "AR"):
            b = (a.mini if sched == "PR" else a.micro) // dp
            disk = read_gbs(art[b])
            c = cluster(os.path.join(w, "cluster.json"), dp * p, shared, peak,
                        disk)
            # Per sample (one sequence): the batch-1 plan's kernels.
            out, _ = sh(cuts, "plan", art[1], "--cluster", c, "--batch",
                        str(a.mini), "--micro-batch", str(a.micro), "--json")
            est = next(x for x in json.loads(out)["configs"]
                       if (x["dp"], x["wp"], x["p"], x["schedule"]) ==
                       (dp, 1, p, sched))
            res = mpirun(tool, dp * p, art[b], "--pipeline", str(p),
                         "--gpus", a.gpus, "--weight-budget", a.budget,
                         "--input", "input_ids=" + ids, "--iters",
                         str(a.iters), "--json")
            rows.append({"dp": dp, "p": p, "schedule": sched,
                         "artifact_batch": b, "disk_gbs": disk,
                         "measured_s": res["ms_per_mini_batch"] / 1e3,
                         "estimate_s": est["time_tot_s"],
                         "estimate_storage_s": est["time_storage_s"],
                         "estimate_compute_s": est["time_compute_s"],
                         "run": res})
            r = rows[-1]
            print("(DP %d, P %d, %s) batch %d, disk %.2f GB/s: estimate "
                  "%.3f s, measured %.3f s (%+.0f%%)" %
                  (dp, p, sched, b, disk, r["estimate_s"], r["measured_s"],
                   100 * (r["measured_s"] / r["estimate_s"] - 1)), flush=True)
    ranked = sorted(rows, key=lambda r: r["estimate_s"])
    print("\nconfiguration        estimate s  measured s   measured/estimate")
    for r in ranked:
        print("(DP %d, WP 1, P %d, %s) %10.3f %11.3f %10.2f" %
              (r["dp"], r["p"], r["schedule"], r["estimate_s"],
               r["measured_s"], r["measured_s"] / r["estimate_s"]))
    within = sum(abs(r["measured_s"] / r["estimate_s"] - 1) <= 0.25
                 for r in ranked[:5])
    print("top 5 of the planner's ranking within 25%%: %d of 5" % within)
    os.makedirs("bench/out", exist_ok=True)
    with open("bench/out/bigcuts-%s.json" % a.arch, "w") as f:
        json.dump({"size": a.size, "precision": a.precision, "sequence": s,
               "gpus": a.gpus,
                   "mini": a.mini, "micro": a.micro, "budget": a.budget,
                   "storage": storage, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Autotunes several cells' max-autotune compiles at once, one process each,
into Inductor's cache; a later run.py call (with that cache) measures each
cell alone.

Why: a max-autotune compile of DenseNet-121 or Inception-v3 spends most of
its 10-35 minutes in ptxas, one Triton choice after another on one CPU core
(bench/README.md, "Max-autotune's compile time"), while the GPU idles. Five cells
autotuned side by side take the time of the slowest. To keep the choices'
timings honest, the processes share a lock (BENCH_GPU_LOCK, see
run.install_gpu_lock): a choice is compiled outside it and timed inside it,
so no two timings overlap, and the time spent waiting for it is not counted
as compile time. Each child is `run.py --warm-only`, which records the
attempt's seconds as a stopped attempt; the next call resumes the cell from
the cache, adds that attempt's seconds, and measures the latency with nothing
else on the GPU.

Each child has its own copy of the Inductor cache: Inductor rewrites its
autotuning results file whole (read at the start of a shape, written after
its benchmark), so processes sharing one would lose each other's entries.
At the end the children's results files are merged into --out's, and their
caches into --cache (the autotuning JSON merged key by key, every other file
copied).

usage: warm_parallel.py --out DIR --cache DIR [--models M ...] [--batches ...]
                        [--precisions ...] [--budget S]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

PEER = "compile_max_autotune"


def pending(results, cells):
    """Cells whose max-autotune compile has not completed yet (neither
    measured nor autotuned by an earlier --warm-only run)."""
    out = []
    for c in cells:
        e = results.get("peers", {}).get(c["key"], {}).get(PEER)
        if not (isinstance(e, dict) and e.get("status") in ("ok", run.WARMED)):
            out.append(c)
    return out


def deep_merge(into, other):
    """Adds other's keys to into, recursively; at a leaf, other's value wins
    (the same choice timed twice: either is a measurement)."""
    for k, v in other.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            deep_merge(into[k], v)
        else:
            into[k] = v
    return into


def merge_caches(base, children):
    """Merges the children's Inductor caches into base: the autotuning
    results (cache/<system hash>, one JSON for all shapes) key by key, other
    files (content-addressed: code, graphs) copied where new, compiled
    kernels (triton/) left out. Returns the number of autotuned inputs."""
    tuning = {}
    for d in [base] + children:
        folder = os.path.join(d, "cache")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            try:
                data = json.load(open(os.path.join(folder, name)))
            except (OSError, ValueError):
                continue  # a child stopped mid-write: its previous file is gone too
            if name in tuning:
                deep_merge(tuning[name]["cache"], data.get("cache", {}))
            else:
                tuning[name] = data
    for d in children:
        for root, _, files in os.walk(d):
            rel = os.path.relpath(root, d)
            # Compiled kernels (triton/) are rebuilt from the code, and never packed.
            if rel.split(os.sep)[0] in ("cache", "triton"):
                continue
            os.makedirs(os.path.join(base, rel), exist_ok=True)
            for f in files:
                dst = os.path.join(base, rel, f)
                if not os.path.exists(dst):
                    shutil.copy2(os.path.join(root, f), dst)
    os.makedirs(os.path.join(base, "cache"), exist_ok=True)
    for name, data in tuning.items():
        tmp = os.path.join(base, "cache", f".{name}.tmp")
        with open(tmp, "w") as f:
            json.dump(data, f, indent=4)
        os.replace(tmp, os.path.join(base, "cache", name))
    return sum(len(v) for data in tuning.values() for v in data.get("cache", {}).values())


def merge_results(results, child, key, note):
    """Copies the child's entry of the cell into results, with note added;
    None (results left alone) where the child recorded nothing new, e.g. it
    failed before the unit started."""
    e = child.get("peers", {}).get(key, {}).get(PEER)
    cell = results.setdefault("peers", {}).setdefault(key, {})
    if not isinstance(e, dict) or e == cell.get(PEER):
        return None
    cell[PEER] = {**e, "warm_parallel": note}
    for k in ("env", "plan"):
        if k not in results and k in child:
            results[k] = child[k]
    return cell[PEER]


def slug(key):
    return key.replace("/", "_")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder with results.json (run.py's --out)")
    ap.add_argument("--cache", required=True, help="Inductor cache folder to start from and merge into")
    ap.add_argument("--models", nargs="+", choices=list(run.SUITE))
    ap.add_argument("--batches", nargs="+", choices=("small", "large"), default=["small", "large"])
    ap.add_argument("--precisions", nargs="+", choices=run.PRECISIONS, default=list(run.PRECISIONS))
    ap.add_argument("--budget", type=float, default=530, help="seconds each child may run")
    args = ap.parse_args(argv)

    path = os.path.join(args.out, "results.json")
    results = json.load(open(path)) if os.path.exists(path) else {}
    plan_args = run.parse_args(["--batches", *args.batches, "--precisions", *args.precisions] +
                               (["--models", *args.models] if args.models else []))
    cells = pending(results, run.plan(plan_args))
    if not cells:
        print("warm_parallel: every cell is measured already")
        return 0
    keys = [c["key"] for c in cells]
    print(f"warm_parallel: {len(cells)} cells at once: {' '.join(keys)}", flush=True)
    work = os.path.join(args.out, "warm")
    os.makedirs(work, exist_ok=True)
    lock = os.path.join(work, "gpu.lock")
    children = []
    started = run.now_iso()
    threads = max(1, (os.cpu_count() or 1) // len(cells))
    for c in cells:
        d = os.path.join(work, slug(c["key"]))
        cache = os.path.join(d, "inductor")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        if os.path.isdir(args.cache):
            shutil.copytree(args.cache, cache, symlinks=True)
        if os.path.exists(path):
            shutil.copy2(path, os.path.join(d, "results.json"))
        # Inductor's compile pool has a worker per core in every process;
        # the cores are shared out instead (it changes no choice, only speed).
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, BENCH_GPU_LOCK=lock,
                   TORCHINDUCTOR_COMPILE_THREADS=str(threads))
        cmd = [sys.executable, os.path.join(HERE, "run.py"), "--out", d, "--phases", "peers",
               "--peers", PEER, "--models", c["model"],
               "--batches", "small" if c["batch"] == 1 else "large",
               "--precisions", c["precision"], "--budget", str(args.budget),
               "--phase-budget", str(args.budget), "--warm-only", "--retry-errors",
               "--no-report"]
        log = open(os.path.join(d, "run.log"), "w")
        children.append((c, d, cache, subprocess.Popen(cmd, env=env, stdout=log,
                                                       stderr=subprocess.STDOUT)))
    # Each child's watchdog ends it within its budget + grace; this is the backstop.
    deadline = time.time() + args.budget + 90
    t0 = time.time()
    while any(p.poll() is None for *_, p in children):
        if time.time() > deadline:
            for *_, p in children:
                p.kill()
            break
        time.sleep(5)
        if int(time.time() - t0) % 60 < 5:  # how busy the cores are, once a minute
            print(f"  [{time.time() - t0:4.0f} s] load {os.getloadavg()[0]:.1f} on "
                  f"{os.cpu_count()} cores, {sum(p.poll() is None for *_, p in children)} "
                  f"running", flush=True)
    for *_, p in children:
        p.wait()
    note = {"cells": len(cells), "gpu_lock": True, "compile_threads": threads}
    for c, d, _, p in children:
        try:
            child = json.load(open(os.path.join(d, "results.json")))
        except (OSError, ValueError):
            child = {}
        e = merge_results(results, child, c["key"], note)
        if e is None:
            print(f"  {c['key']}: exit {p.returncode}, nothing recorded (see {d}/run.log)",
                  flush=True)
            continue
        print(f"  {c['key']}: exit {p.returncode}, {e.get('status')}, "
              f"{e.get('stopped_after_s', 0):.0f} s so far, lock waits "
              f"{e.get('gpu_lock_wait_s', 0):.1f} s over {e.get('gpu_lock_timings', 0)} timings",
              flush=True)
    results.setdefault("runs", []).append({"started": started, "finished": run.now_iso(),
                                           "argv": ["warm_parallel.py"] + (argv or sys.argv[1:]),
                                           "warm_parallel": keys, "budget_s": args.budget})
    os.makedirs(args.out, exist_ok=True)
    run.write_results(path, results)
    n = merge_caches(args.cache, [cache for _, _, cache, _ in children])
    print(f"warm_parallel: merged {len(children)} caches into {args.cache} "
          f"({n} autotuned inputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""cuts-mpi: BERT (2 layers) cut into pipeline stages across MPI ranks,
in data-parallel groups over the micro-batches of a mini-batch. Its
outputs are, bit for bit, what one `cuts run` a micro-batch gives, for
DP x P = 1x1, 1x2, 1x3, 2x2 and 2x1: emulated on the CPU, or with --gpu
on device 0 shared by every rank (its weights resident, then streamed
under a budget). Wrong rank counts, inputs that do not stack micro-batches
and missing inputs are clear errors. Exits 77 (skipped) without mpirun or
cuts-mpi, or with --gpu and no GPU."""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_compile import (Runner, has_gpu, inflated,  # noqa: E402
                          largest_step_weights, require)

SKIP = 77


def mpi_tool(cuts):
    """cuts-mpi beside cuts (installed) or in the build tree; None if not
    built."""
    here = os.path.dirname(cuts)
    for p in (os.path.join(here, "cuts-mpi"),
              os.path.join(here, "..", "cuts-mpi", "cuts-mpi")):
        if os.access(p, os.X_OK):
            return os.path.abspath(p)
    return None


def mpirun(tool, np_, *args):
    # As root in a container: allowed, more ranks than cores, and no
    # cross-memory attach between ranks (a container may forbid ptrace).
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    return subprocess.run(["mpirun", "-np", str(np_), tool, *args],
                          capture_output=True, text=True, timeout=600, env=env)


def references(runner, art, d, ids, mask, emulate):
    """One `cuts run` a micro-batch, the outputs stacked on axis 0."""
    outs = []
    for m in range(ids.shape[0]):
        md = os.path.join(d, "micro%d" % m)
        os.makedirs(md, exist_ok=True)
        np.save(os.path.join(md, "ids.npy"), ids[m:m + 1])
        np.save(os.path.join(md, "mask.npy"), mask[m:m + 1])
        r = runner.run("run", art, "--input",
                       "input_ids=" + os.path.join(md, "ids.npy"), "--input",
                       "attention_mask=" + os.path.join(md, "mask.npy"),
                       "--output-dir", md, *(["--emulate"] if emulate else []))
        require(r.returncode == 0, "micro-batch %d: %s" % (m, r.stderr))
        outs.append({f: np.load(os.path.join(md, f))
                     for f in os.listdir(md) if f not in ("ids.npy",
                                                          "mask.npy")})
    ref = os.path.join(d, "ref")
    os.makedirs(ref, exist_ok=True)
    for f in outs[0]:
        np.save(os.path.join(ref, f), np.concatenate([o[f] for o in outs]))
    return ref


def check_pipeline(runner, tool):
    d = os.path.join(runner.work, "pipeline")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    r = runner.run("compile", inflated("bert_small_s128_dyn20", d), "--arch",
                   "sm_90", "-o", d)
    require(r.returncode == 0, "compile: " + r.stderr)
    art = os.path.join(d, "model.cuts")
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 1000, (3, 128)).astype(np.int64)
    mask = np.ones((3, 128), np.int64)
    mask[1, 100:] = 0
    np.save(os.path.join(d, "ids.npy"), ids)
    np.save(os.path.join(d, "mask.npy"), mask)
    feeds = ["--input", "input_ids=" + os.path.join(d, "ids.npy"),
             "--input", "attention_mask=" + os.path.join(d, "mask.npy")]
    ref = references(runner, art, d, ids, mask, not runner.gpu)
    mode = ["--gpus", "0"] if runner.gpu else ["--emulate"]
    runs = [(1, 1, []), (2, 2, []), (3, 3, []), (4, 2, []), (2, 1, [])]
    if runner.gpu:  # each stage's weights streamed under a budget
        budget = str(4 * largest_step_weights(art))
        runs += [(2, 2, ["--weight-budget", budget, "--json"])]
    for ranks, p, extra in runs:
        r = mpirun(tool, ranks, art, "--pipeline", str(p), *mode, *extra,
                   *feeds, "--compare", ref, "--tolerance", "1e-30")
        oks = [ln for ln in r.stdout.splitlines() if ln.startswith("ok")]
        require(r.returncode == 0 and len(oks) == len(os.listdir(ref)),
                "%d ranks, %d stages %s: %s%s" % (ranks, p, extra, r.stdout,
                                                  r.stderr))
        if "--json" in extra:  # every stage streamed its weights
            stats = json.loads(r.stdout.splitlines()[-1])["rank_stats"]
            require(all(x["streamed_bytes"] > 0 for x in stats),
                    "streamed: %s" % stats)
    # Errors, each on every rank's exit.
    r = mpirun(tool, 3, art, "--pipeline", "2", *mode, *feeds)
    require(r.returncode != 0 and "do not form groups" in r.stderr,
            "3 ranks, 2 stages: " + r.stderr)
    np.save(os.path.join(d, "bad.npy"), ids[:, :100])
    r = mpirun(tool, 2, art, "--pipeline", "2", *mode, "--input",
               "input_ids=" + os.path.join(d, "bad.npy"), "--input",
               "attention_mask=" + os.path.join(d, "mask.npy"))
    require(r.returncode != 0 and "stacks them on axis 0" in r.stderr,
            "input of the wrong shape: " + r.stderr)
    r = mpirun(tool, 2, art, "--pipeline", "2", *mode, *feeds[:2])
    require(r.returncode != 0 and "no --input for the model's input "
            "'attention_mask'" in r.stderr, "a missing input: " + r.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuts", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--gpu", action="store_true")
    a = ap.parse_args()
    tool = mpi_tool(os.path.abspath(a.cuts))
    if tool is None or shutil.which("mpirun") is None:
        print("no cuts-mpi or no mpirun here: skipped")
        return SKIP
    if a.gpu and not has_gpu():
        print("no GPU here: skipped")
        return SKIP
    os.makedirs(a.work, exist_ok=True)
    runner = Runner(os.path.abspath(a.cuts), a.work, a.gpu)
    runner.check("pipeline and data-parallel ranks (cuts-mpi)",
                 check_pipeline, runner, tool)
    print("%d passed, %d failed" % (runner.passed, runner.failed))
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())

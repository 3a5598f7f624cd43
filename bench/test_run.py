#!/usr/bin/env python3
"""Checks run.py's bookkeeping without a GPU or PyTorch: a unit skipped for
time keeps the seconds of the attempts the watchdog stopped, and such a unit
is resumed only where Inductor's cache was carried, and with it carried any
compile is started whenever 90 s are left; --redo measures again what
predates --redo-after, and only that, keeping an earlier result where the
budget does not allow it.

usage: python3 bench/test_run.py
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402


def context(folder, budget):
    ctx = run.Context(run.parse_args(["--out", folder, "--budget", str(budget)]))
    ctx.path = os.path.join(folder, "results.json")
    return ctx


def main():
    with tempfile.TemporaryDirectory() as folder:
        ctx = context(folder, 100)
        stopped = {"status": "skipped: time budget (stopped after 566 s)",
                   "stopped_after_s": 566.0}
        ctx.store("peers", "m/b1/fp32", "compile_max_autotune", stopped)
        assert run.earlier_attempts(stopped) == [566.0]
        assert run.earlier_attempts({"status": "ok"}) == []
        assert run.earlier_attempts({"stopped_after_s": 9, "attempts_s": [4, 5]}) == [4, 5]

        # Over budget: skipped again, the attempt's seconds kept.
        ran = []
        ctx.unit("peers", "m/b1/fp32", "compile_max_autotune", lambda: ran.append(1), 1e9)
        e = ctx.entry("peers", "m/b1/fp32", "compile_max_autotune")
        assert not ran and e["status"] == "skipped: time budget", e
        assert e["attempts_s"] == [566.0] and e["stopped_after_s"] == 566.0, e

        os.environ.pop("BENCH_INDUCTOR_CACHE_CARRIED", None)
        assert not run.resumable(ctx, e)
        os.environ["BENCH_INDUCTOR_CACHE_CARRIED"] = "1"
        assert run.resumable(ctx, e)
        assert not run.resumable(ctx, {"status": "skipped: time budget", "needed_s": 9})

        # Estimates: this model's slowest compile (or stopped attempt), but
        # with the cache carried any compile starts with 90 s left.
        os.environ.pop("BENCH_INDUCTOR_CACHE_CARRIED", None)
        assert run.peer_estimate(ctx, "m", "compile_max_autotune") > 566
        assert run.peer_estimate(ctx, "other", "compile_max_autotune") == \
            run.COMPILE_GUESS_S["compile_max_autotune"] + 5
        assert run.peer_estimate(ctx, "m", "eager") == 8
        os.environ["BENCH_INDUCTOR_CACHE_CARRIED"] = "1"
        assert run.peer_estimate(ctx, "m", "compile_max_autotune") == run.RESUME_MIN_S

        # Autotuned by warm_parallel.py (run.py --warm-only): not measured, so
        # the next call resumes it, with the attempt's seconds.
        warm = {"status": run.WARMED, "stopped_after_s": 700.0, "attempts_s": [500.0, 200.0],
                "warm_parallel": {"cells": 5}}
        ctx.store("peers", "m/b4/fp32", "compile_max_autotune", warm)
        assert not ctx.done("peers", "m/b4/fp32", "compile_max_autotune")
        assert run.resumable(ctx, warm) and run.earlier_attempts(warm) == [500.0, 200.0]
        # Its compile completed there: this call's, from the cache, is apart.
        assert run.compile_seconds(ctx, warm, 40.0) == \
            ([500.0, 200.0], 700.0, {"compile_cached_s": 40.0})
        # A stopped one goes on here: its attempts and this one add up.
        assert run.compile_seconds(ctx, stopped, 40.0) == ([566.0, 40.0], 606.0, {})
        assert run.compile_seconds(ctx, None, 40.0) == ([40.0], 40.0, {})
        os.environ.pop("BENCH_INDUCTOR_CACHE_CARRIED", None)  # cache lost: starts over
        assert run.compile_seconds(ctx, warm, 900.0) == ([900.0], 900.0, {})
        os.environ["BENCH_INDUCTOR_CACHE_CARRIED"] = "1"

        # A unit that was never stopped has no attempts to carry.
        ctx.unit("peers", "m/b8/fp32", "compile_max_autotune", lambda: {}, 1e9)
        assert "attempts_s" not in ctx.entry("peers", "m/b8/fp32", "compile_max_autotune")
    # --redo: units of the named sections measured before --redo-after are
    # measured again; what this session measured is not.
    with tempfile.TemporaryDirectory() as folder:
        ctx = context(folder, 100)
        ctx.args.redo, ctx.args.redo_after = ["cuts", "peers/eager"], "2026-11-25"
        old = {"status": "ok", "median_ms": 1.0, "at": "2026-11-24T10:00:00+00:00"}
        new = dict(old, at="2026-11-25T01:00:00+00:00")
        ctx.store("cuts", "m/b1/fp32", None, old)
        ctx.store("cuts", "m/b8/fp32", None, new)
        ctx.store("cuts", "m/b16/fp32", None, {"status": "ok"})  # before "at"
        ctx.store("peers", "m/b1/fp32", "eager", old)
        ctx.store("peers", "m/b1/fp32", "cuda_graph", old)
        assert not ctx.done("cuts", "m/b1/fp32") and ctx.done("cuts", "m/b8/fp32")
        assert not ctx.done("cuts", "m/b16/fp32")
        assert not ctx.done("peers", "m/b1/fp32", "eager")
        assert ctx.done("peers", "m/b1/fp32", "cuda_graph")
        # One that does not fit the budget keeps its earlier result.
        ctx.unit("cuts", "m/b1/fp32", None, lambda: {"median_ms": 0.5}, 1e9)
        assert ctx.entry("cuts", "m/b1/fp32") == old
        ctx.unit("cuts", "m/b1/fp32", None, lambda: {"median_ms": 0.5}, 1)
        e = ctx.entry("cuts", "m/b1/fp32")
        assert e["median_ms"] == 0.5 and e["at"] >= "2026-11-24", e
    try:
        run.main(["--redo", "cuts"])
        raise AssertionError("--redo without --redo-after must fail")
    except SystemExit as e:
        assert "--redo-after" in str(e.code), e.code
    # Every precision is a cell of its own; tf32 and bf16 too.
    cells = run.plan(run.parse_args(["--models", "resnet50", "--batches", "small",
                                     "--precisions", "tf32", "bf16"]))
    assert [c["key"] for c in cells] == ["resnet50/b1/tf32", "resnet50/b1/bf16"], cells
    assert run.ELEMENT_BYTES["tf32"] == 4 and run.ELEMENT_BYTES["bf16"] == 2
    assert set(run.PRECISIONS) == set(run.ELEMENT_BYTES)
    print("bench run.py bookkeeping: ok")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks report.py on a synthetic results.json written to a temporary folder
(no GPU, no PyTorch): floors, % of floor, best peer, statuses, README block.
The synthetic numbers never leave the temporary folder.

usage: python3 bench/test_report.py
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


def synthetic():
    ok = {"status": "ok"}
    cells = [{"key": f"toy/b{b}/{p}", "model": "toy", "batch": b, "precision": p}
             for b in (1, 8) for p in ("fp32", "fp16")]
    peers = {}
    for c in cells:
        scale = c["batch"] * (1 if c["precision"] == "fp32" else 0.5)
        peers[c["key"]] = {
            "eager": {**ok, "median_ms": 2.0 * scale, "iters": 10},
            "cuda_graph": {**ok, "median_ms": 1.0 * scale, "iters": 10, "rel_err": 1e-7},
            "compile_default": {**ok, "median_ms": 1.5 * scale, "compile_s": 30.0,
                                "rel_err": 2e-6, "iters": 10},
            "compile_max_autotune": {"status": "skipped: time budget"},
        }
    peers["toy/b8/fp16"]["compile_default"] = {"status": "error: RuntimeError: boom"}
    peers["toy/b8/fp32"]["compile_max_autotune"] = {
        "status": "skipped: time budget (stopped after 387 s)", "stopped_after_s": 387.1,
        "attempts_s": [500.2, 387.1]}
    peers["toy/b1/fp16"]["compile_max_autotune"] = {
        "status": "skipped: autotuned only (--warm-only), measured in a later call",
        "stopped_after_s": 700.0, "attempts_s": [500.0, 200.0]}
    peers["toy/b8/fp16"]["compile_max_autotune"] = {
        **ok, "median_ms": 3.0, "compile_s": 950.0, "compile_cached_s": 40.0,
        "warm_parallel": {"cells": 3}}
    return {
        "schema": 1,
        "env": {"gpu_name": "Toy GPU", "date": "2000-01-01", "driver": "0", "torch": "0"},
        "plan": {"cells": cells},
        "ceilings": {
            "copy": {**ok, "bytes_per_s": 1e12, "buffer_bytes": 2**30, "iters": 10},
            "gemm_fp32_simt": {**ok, "flops_per_s": 1e13, "m": 8, "n": 8, "k": 8, "iters": 10},
            "gemm_tf32": {**ok, "flops_per_s": 1e14, "m": 8, "n": 8, "k": 8, "iters": 10},
            "gemm_fp16": {**ok, "flops_per_s": 1e15, "m": 8, "n": 8, "k": 8, "iters": 10},
            "gemm_bf16": {**ok, "flops_per_s": 1e15, "m": 8, "n": 8, "k": 8, "iters": 10},
        },
        # b1: 1e10 FLOP -> 1 ms at fp32 (compute bound); 1e8 bytes -> 0.1 ms
        "floors": {f"toy/b{b}": {**ok, "flops": 1e10 * b,
                                 "bytes": {"fp32": {"total": 1e8}, "fp16": {"total": 5e7}}}
                   for b in (1, 8)},
        "peers": peers,
        "cuts": {c["key"]: {"status": "not available (cuts compile not implemented yet)"}
                 for c in cells},
    }


def main():
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump(synthetic(), f)
        readme = os.path.join(d, "README.md")
        with open(readme, "w") as f:
            f.write(f"# x\n\n## Performance\n\n{report.BEGIN}\nold\n{report.END}\n\nafter\n")
        derived = report.generate(d, readme)
        b1 = derived["toy/b1/fp32"]
        assert abs(b1["floor_ms"] - 1.0) < 1e-9 and b1["bound"] == "compute", b1
        assert b1["best_peer"] == "cuda_graph" and abs(b1["pct_of_floor"]["cuda_graph"] - 100) < 1e-9
        fp16 = derived["toy/b1/fp16"]  # 1e10 / 1e15 = 0.01 ms < 5e7 / 1e12 = 0.05 ms
        assert fp16["bound"] == "memory" and abs(fp16["floor_ms"] - 0.05) < 1e-9, fp16
        md = open(os.path.join(d, "report.md")).read()
        assert "| toy | 1 | fp32 | 2.00 | 1.00 | 1.50 | skipped |" in md, md
        assert "| toy | 8 | fp32 | 16.0 | 8.00 | 12.0 | stopped (887 s) |" in md, md
        assert "| toy | 1 | fp16 | 1.00 | 0.500 | 0.750 | autotuned (700 s) |" in md, md
        assert "| toy | 8 | fp16 | — | 950.0* |" in md, md
        assert "\\* Autotuned by bench/warm_parallel.py" in md
        assert "error [1]" in md and "[1] error: RuntimeError: boom" in md
        assert "| N/A | N/A |" in md
        text = open(readme).read()
        assert "old" not in text and "after" in text and "Toy GPU" in text
        plots = [p for p in ("latency.png", "floor.png") if os.path.exists(os.path.join(d, p))]
        print(f"report.md ok, README block ok, plots: {plots or 'none (no matplotlib)'}")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()

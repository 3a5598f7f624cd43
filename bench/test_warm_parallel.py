#!/usr/bin/env python3
"""Checks warm_parallel.py's merging without a GPU or PyTorch: only cells not
measured are autotuned; the children's autotuning results are merged key by
key (a child's entries are never lost to another's whole-file write), other
cache files copied where new and compiled kernels left out; a child's new entry
lands in the results with the note saying how it was run, and one that
recorded nothing leaves the entry as it was.

usage: python3 bench/test_warm_parallel.py
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import warm_parallel as wp  # noqa: E402


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(data if isinstance(data, str) else json.dumps(data))


def main():
    cells = [{"key": k} for k in ("a/b1/fp32", "a/b1/fp16", "b/b1/fp32", "b/b1/fp16")]
    results = {"peers": {"a/b1/fp32": {wp.PEER: {"status": "ok"}},
                         "b/b1/fp16": {wp.PEER: {"status": wp.run.WARMED}},
                         "a/b1/fp16": {wp.PEER: {"status": "skipped: time budget",
                                                 "stopped_after_s": 300}}}}
    assert [c["key"] for c in wp.pending(results, cells)] == ["a/b1/fp16", "b/b1/fp32"]

    assert wp.deep_merge({"x": {"y": 1, "z": 2}}, {"x": {"z": 3, "w": 4}, "v": 5}) == \
        {"x": {"y": 1, "z": 3, "w": 4}, "v": 5}

    with tempfile.TemporaryDirectory() as t:
        base, c1, c2 = (os.path.join(t, n) for n in ("base", "c1", "c2"))
        system = {"hash": "h"}
        write(f"{base}/cache/h", {"system": system, "cache": {"mm": {"s0": {"k1": 1.0}}}})
        # Each child started from base and added its own shapes.
        write(f"{c1}/cache/h", {"system": system, "cache": {"mm": {"s0": {"k1": 1.0},
                                                                   "s1": {"k1": 2.0}}}})
        write(f"{c2}/cache/h", {"system": system, "cache": {"mm": {"s0": {"k1": 1.0},
                                                                   "s2": {"k2": 3.0}},
                                                            "conv": {"s3": {"k": 4.0}}}})
        write(f"{c1}/ab/code.py", "c1's code")
        write(f"{c2}/ab/code.py", "c2's code, same name")
        write(f"{c2}/fxgraph/g", "graph")
        write(f"{c2}/triton/0/kernel.cubin", "binary")
        write(f"{c1}/cache/.tmp-being-written", "{not json")
        n = wp.merge_caches(base, [c1, c2])
        merged = json.load(open(f"{base}/cache/h"))
        assert merged["system"] == system
        assert merged["cache"] == {"mm": {"s0": {"k1": 1.0}, "s1": {"k1": 2.0},
                                          "s2": {"k2": 3.0}},
                                   "conv": {"s3": {"k": 4.0}}}, merged
        assert n == 4, n
        assert open(f"{base}/ab/code.py").read() == "c1's code"
        assert open(f"{base}/fxgraph/g").read() == "graph"
        assert not os.path.exists(f"{base}/triton")

    results = {"peers": {}}
    note = {"cells": 2, "gpu_lock": True}
    child = {"env": {"gpu_name": "H200"},
             "peers": {"a/b1/fp16": {wp.PEER: {"status": "skipped: autotuned only",
                                               "stopped_after_s": 420.0,
                                               "attempts_s": [300, 120.0]}}}}
    e = wp.merge_results(results, child, "a/b1/fp16", note)
    assert e["attempts_s"] == [300, 120.0] and e["warm_parallel"] == note, e
    assert results["env"] == {"gpu_name": "H200"}
    # A child that failed before its unit leaves the entry it was given.
    before = {"status": "skipped: time budget", "stopped_after_s": 387.0}
    results["peers"]["b/b1/fp32"] = {wp.PEER: before}
    assert wp.merge_results(results, {}, "b/b1/fp32", note) is None
    assert wp.merge_results(results, {"peers": {"b/b1/fp32": {wp.PEER: dict(before)}}},
                            "b/b1/fp32", note) is None
    assert results["peers"]["b/b1/fp32"][wp.PEER] == before
    print("bench warm_parallel.py merging: ok")


if __name__ == "__main__":
    main()

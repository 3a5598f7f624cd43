#!/usr/bin/env python3
"""Tests of the Python package `cuts` (python/): describe, load, run and
compile, against ONNX Runtime.

Without --gpu (CPU): cuts.compile with batch profiles, the model's
description, runs emulated on the CPU (every batch of the profiles, inputs
converted where exact), and the errors (CutsError with the message of the
runtime or the compiler). With --gpu (ctest label gpu; exit 77 without
one): runs on the GPU from numpy and, where torch is installed, from torch
tensors on the device through DLPack (outputs too), the padded batch's run
info, benchmark, and sessions of one model on four threads at once.

usage: test_package.py --cuts build/tools/cuts/cuts --work DIR [--gpu]
(PYTHONPATH must hold the package: build/python)
"""
import argparse
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models"))
import test_compile  # noqa: E402  (the dynamic-batch model)

import cuts  # noqa: E402


def require(cond, msg):
    if not cond:
        raise AssertionError(msg)


def raises(fn, text):
    try:
        fn()
    except cuts.CutsError as e:
        require(text in str(e), "CutsError %r lacks %r" % (str(e), text))
        return
    raise AssertionError("no CutsError (wanted %r)" % text)


def reference(path, feeds):
    import onnxruntime as ort
    return ort.InferenceSession(path).run(None, feeds)[0]


def feeds_at(n):
    rng = np.random.default_rng(n)
    return {"x": rng.standard_normal((n, 6, 16)).astype(np.float32),
            "s": rng.standard_normal(16).astype(np.float32)}


def pinned_copy(x):
    p = cuts.pinned_empty(x.shape, x.dtype)
    p[...] = x
    return p


def check_cpu(work, onnx_path, art):
    require(cuts.api_version() == 8, "API version")
    m = cuts.load(art, emulate=True)
    require(m.profiles == [1, 3, 4] and m.max_batch == 4, m)
    require([t.name for t in m.inputs] == ["x", "s"], m.inputs)
    require(m.inputs[0].batch_axis == 0 and m.inputs[1].batch_axis == -1,
            m.inputs)
    require(m.outputs[0].shape == (4, 6, 8), m.outputs)
    s = m.session()
    for n in (1, 2, 3, 4):
        f = feeds_at(n)
        got = s.run(f)["y"]
        want = reference(onnx_path, f)
        require(got.shape == want.shape and np.allclose(got, want, atol=1e-5),
                "batch %d differs from ONNX Runtime" % n)
    f = feeds_at(2)
    got = s.run({"x": f["x"].astype(np.float64), "s": list(f["s"])})["y"]
    require(np.allclose(got, reference(onnx_path, f), atol=1e-5),
            "float64 and list inputs are converted")
    raises(lambda: s.run({"x": f["x"]}), "no value for input 's'")
    raises(lambda: s.run({**f, "z": f["s"]}), "the model has no input 'z'")
    raises(lambda: s.run({"x": f["x"].astype(np.int64), "s": f["s"]}),
           "input 'x': int64 given, the model's is float32")
    raises(lambda: s.run({"x": np.zeros((5, 6, 16), np.float32),
                          "s": f["s"]}), "axis 0 a batch from 1 to 4")
    raises(lambda: s.run(f, device_outputs=True), "no device outputs")
    raises(lambda: s.submit(f), "an emulated model runs with run()")
    bad = os.path.join(work, "bad.cuts")
    with open(bad, "wb") as fh:
        fh.write(b"not an artifact")
    raises(lambda: cuts.load(bad, emulate=True), "bad magic")
    raises(lambda: cuts.load(art, weight_codec="zip"),
           "weight_codec must be one of")
    raises(lambda: cuts.load(art, emulate=True, weight_budget=1 << 20),
           "an emulated model has none")
    raises(lambda: cuts.load(art, weight_budget=-1), "byte count >= 0")
    # Checked before any device is opened.
    raises(lambda: cuts.load(art, devices=[0, 0], weight_budget=1 << 20),
           "no device list")
    # Checked before any device is opened.
    raises(lambda: cuts.load(art, devices=[0, 0], weight_codec="3to1"),
           "needs weight_source")
    raises(lambda: cuts.compile(os.path.join(work, "missing.onnx"), "sm_90",
                                os.path.join(work, "x")), "missing.onnx")


def scaled_weights(work, onnx_path):
    """The model recompiled with every weight doubled: a hot swap's new
    weights."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(onnx_path)
    for i, t in enumerate(m.graph.initializer):
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(
            numpy_helper.to_array(t) * 2, t.name))
    path = os.path.join(work, "rows2.onnx")
    onnx.save(m, path)
    return cuts.compile(path, "sm_90", os.path.join(work, "out2"),
                        batch=[4, 1, 3], args=("--weight-codecs",),
                        progress=False)


def check_swap(art, art2, other):
    """A hot weight swap while another thread runs: every run gives the
    old weights' outputs or the new ones', none fails; later runs the
    new. Each weight source on a repeated device list, and weights sent
    3:1 compressed (the outputs those of a load with the codec)."""
    f = feeds_at(3)
    for source, devices, codec in (("host", [0], "none"),
                                   ("peer", [0, 0], "none"),
                                   ("peer", [0, 0], "3to1")):
        def load(path):
            return cuts.load(path, devices=devices, weight_source=source,
                             weight_codec=codec)
        old = load(art).session().run(f)["y"]
        new = load(art2).session().run(f)["y"]
        require(not np.array_equal(old, new), "the swap changes the outputs")
        m = load(art)
        s = m.session(cuda_graph=True)
        seen, errors, stop = [], [], threading.Event()

        def serve():
            try:
                while not stop.is_set():
                    seen.append(s.run(f)["y"])
            except Exception as e:  # reported below
                errors.append(e)
        t = threading.Thread(target=serve)
        t.start()
        while len(seen) < 5 and t.is_alive():
            time.sleep(0.001)
        m.swap_weights(art2)
        n = len(seen)
        while len(seen) < n + 5 and t.is_alive():
            time.sleep(0.001)
        stop.set()
        t.join()
        require(not errors, "runs during the swap: %s" % errors)
        kinds = [0 if np.array_equal(y, old) else 1 if np.array_equal(y, new)
                 else 2 for y in seen]
        require(2 not in kinds and kinds[0] == 0 and kinds[-1] == 1 and
                kinds == sorted(kinds), "%s %s swap: %s" %
                (source, codec, kinds))
        require(np.array_equal(s.run(f)["y"], new), source)
        require(np.array_equal(m.session().run(f)["y"], new), source)
        if codec != "none":
            mv = s.movement()
            require(mv[1]["codec_ms"] > 0 and mv[1]["broadcast_bytes"] > 0,
                    "the swap's distribution: %s" % mv)
    raises(lambda: cuts.load(art).swap_weights(other),
           "does not hold this model's weights")
    raises(lambda: cuts.load(art, devices=[0, 0], weight_source="nccl"),
           "NCCL")


def check_gpu(onnx_path, art):
    m = cuts.load(art, device=0)
    require(m.profiles == [1, 3, 4], m.profiles)
    s = m.session(cuda_graph=True)
    for n in (1, 2, 3, 4):
        f = feeds_at(n)
        got = s.run(f)["y"]
        require(np.allclose(got, reference(onnx_path, f), atol=1e-5),
                "GPU batch %d differs from ONNX Runtime" % n)
        require(s.run_info() == (n, 3 if n == 2 else n), s.run_info())
    require(len(s.benchmark(warmup=2, iters=5, batch=2)) == 5, "benchmark")
    # Sessions of one model on four threads at once.
    errors = []

    def worker(k):
        try:
            mine = m.session()
            f = feeds_at(1 + k % 4)
            want = reference(onnx_path, f)
            for _ in range(20):
                require(np.allclose(mine.run(f)["y"], want, atol=1e-5),
                        "thread %d" % k)
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    require(not errors, "threads: %s" % errors)
    # Data parallel on a repeated device list: every batch split (batch 1:
    # fewer rows than devices), the same outputs as one device.
    for master in (False, True):  # the split, and the master-GPU baseline
        ds = cuts.load(art, devices=[0, 0, 0], master_gpu=master).session()
        for n in (1, 2, 4):
            f = feeds_at(n)
            require(np.allclose(ds.run(f)["y"], s.run(f)["y"], atol=1e-6),
                    "data parallel batch %d (master %s)" % (n, master))
    # Pipelined host runs, two in flight, from pageable and from pinned
    # memory, pre-loading on and off: the outputs of run().
    for devices in ([0], [0, 0]):
        ps = cuts.load(art, devices=devices).session(cuda_graph=True)
        for preload in (True, False):
            ps.set_preload(preload)
            pending = []
            for n in (4, 3, 1, 2, 4):
                f = feeds_at(n)
                if n % 2:
                    f = {k: pinned_copy(v) for k, v in f.items()}
                pending.append((f, ps.submit(f)))
            for f, p in pending:
                require(np.array_equal(p.wait()["y"], s.run(f)["y"]),
                        "pipelined batch %d on %s (preload %s)" %
                        (f["x"].shape[0], devices, preload))
        mv = ps.movement()
        require(len(mv) == len(devices) and mv[0]["runs"] > 0 and
                mv[0]["h2d_ms"] > 0 and mv[0]["compute_ms"] > 0 and
                mv[0]["broadcast_ms"] > 0, "movement: %s" % mv)
    # A device that fails to load: named, and nothing stays loaded.
    raises(lambda: cuts.load(art, devices=[0, 99]),
           "device 99 (entry 1 of the device list): CUDA device 99 does not "
           "exist")
    raises(lambda: cuts.load(art, devices=[0, 0], device_shares=[1]),
           "one share per device")
    try:
        import torch
    except ImportError:
        print("torch is not installed: DLPack from torch not checked")
        return
    f = feeds_at(3)
    x = torch.from_numpy(f["x"]).cuda()
    sc = torch.from_numpy(f["s"]).cuda()
    # The two lines: inputs read on the device, outputs left there.
    y = cuts.load(art).session().run({"x": x, "s": sc},
                                     device_outputs=True)["y"]
    require(isinstance(y, torch.Tensor) and y.is_cuda, type(y))
    require(np.allclose(y.cpu().numpy(), reference(onnx_path, f),
                        atol=1e-5), "torch outputs differ")
    got = s.run({"x": x, "s": sc})["y"]  # device inputs, host outputs
    require(isinstance(got, np.ndarray) and
            np.allclose(got, reference(onnx_path, f), atol=1e-5),
            "device inputs, numpy outputs")
    print("torch %s: DLPack in and out" % torch.__version__)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuts", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--gpu", action="store_true")
    a = ap.parse_args()
    if a.gpu and not test_compile.has_gpu():
        print("no GPU here: skipped")
        return 77
    os.environ["CUTS_EXECUTABLE"] = os.path.abspath(a.cuts)
    os.makedirs(a.work, exist_ok=True)
    onnx_path = test_compile.make_dynamic_batch(
        os.path.join(a.work, "rows.onnx"), "rows")
    art = cuts.compile(onnx_path, "sm_90", os.path.join(a.work, "out"),
                       batch=[4, 1, 3], args=("--weight-codecs",),
                       progress=False)
    require(os.path.exists(art), art)
    if a.gpu:
        check_gpu(onnx_path, art)
        other = cuts.compile(test_compile.make_dynamic_batch(
            os.path.join(a.work, "cnn.onnx"), "cnn"), "sm_90",
            os.path.join(a.work, "out_cnn"), batch=[4], progress=False)
        check_swap(art, scaled_weights(a.work, onnx_path), other)
    else:
        check_cpu(a.work, onnx_path, art)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

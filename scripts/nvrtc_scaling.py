#!/usr/bin/env python3
"""How NVRTC's throughput scales with threads and with processes, on the
tuner's own kernels: is the tuner's compile pool (one thread per core,
compiler/tune/Measure.cpp) limited by the cores or by contention in one
process?

  cuts compile MODEL.onnx --arch h200 -o DIR --tuning /tmp/c.json --candidates cand.json
  scripts/nvrtc_scaling.py cand.json [N=160] [LIBNVRTC]

Prints seconds per candidate per worker for 1, 4, 8 and all-core threads,
and for all-core forked processes. With perfect scaling the per-worker
figure stays flat; a figure that grows with threads but not with processes
points at contention inside NVRTC or the allocator.
"""
import ctypes
import functools
import json
import multiprocessing as mp
import os
import random
import sys
import threading
import time

LIB = sys.argv[3] if len(sys.argv) > 3 else "/usr/local/cuda/lib64/libnvrtc.so"
OPTS = [b"-arch=sm_90", b"-std=c++17", b"--ptxas-options=--verbose"]  # as Nvrtc.cpp


@functools.lru_cache(maxsize=None)
def nvrtc():
    """Loaded once a process (forked workers inherit it), outside the timing."""
    return ctypes.CDLL(LIB)


def compile_one(src):
    lib = nvrtc()
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu", 0, None, None):
        return -1
    arr = (ctypes.c_char_p * len(OPTS))(*OPTS)
    rc = lib.nvrtcCompileProgram(prog, len(OPTS), arr)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc


def threads(sources, n):
    queue, lock, failed = list(sources), threading.Lock(), []

    def work():
        while True:
            with lock:
                if not queue:
                    return
                src = queue.pop()
            if compile_one(src):
                failed.append(1)
    pool = [threading.Thread(target=work) for _ in range(n)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return len(failed)


def processes(sources, n):
    with mp.get_context("fork").Pool(n) as p:
        return sum(rc != 0 for rc in p.map(compile_one, sources, chunksize=1))


def main():
    cands = json.load(open(sys.argv[1]))["candidates"]
    gen = [c["source"] for c in cands if not c["library"]]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 160
    random.seed(3)
    sample = random.sample(gen, min(n, len(gen)))
    cores = os.cpu_count() or 1
    nvrtc()
    print(f"{cores} cores, {len(sample)} of {len(gen)} generated candidates, {LIB}")
    for kind, run, workers in ([("threads", threads, w) for w in sorted({1, 4, 8, cores})] +
                               [("processes", processes, cores)]):
        part = sample[:max(8, len(sample) // 4)] if workers == 1 else sample
        t = time.time()
        failed = run(part, workers)
        dt = time.time() - t
        print(f"{workers:3d} {kind:9s}: {dt:7.2f} s for {len(part)}, "
              f"{dt * workers / len(part):.3f} s per candidate per worker"
              + (f" ({failed} failed)" if failed else ""), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where a max-autotune compile spends its time (what it found: bench/README.md,
"Max-autotune's compile time"): compiles a torchvision model with
mode="max-autotune", dumping every thread's stack to STACKS every 45 s and
printing whether Inductor's compile process pool is in use every 15 s.

  TORCHINDUCTOR_CACHE_DIR=/tmp/ind_probe timeout 130 \
    python3 bench/probe_max_autotune.py densenet121 1 fp32 /tmp/stacks.txt

Run it under `timeout`: a cold compile of a large model takes far longer
than the stacks needed to see it. fp32 is with TF32 off, as in run.py.
"""
import faulthandler
import sys
import threading
import time

import torch
import torchvision
from torch._inductor.async_compile import AsyncCompile


def main():
    name, batch, prec, stacks = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    faulthandler.dump_traceback_later(45, repeat=True, file=open(stacks, "w"))
    t0 = time.time()

    def poll():
        while True:
            print(f"[{time.time() - t0:6.1f}] use_process_pool={AsyncCompile().use_process_pool()}",
                  flush=True)
            time.sleep(15)
    threading.Thread(target=poll, daemon=True).start()
    torch.manual_seed(0)
    dtype = torch.float16 if prec == "fp16" else torch.float32
    m = getattr(torchvision.models, name)().cuda().eval().to(dtype)
    size = 299 if "inception" in name else 224
    x = torch.randn(batch, 3, size, size, device="cuda", dtype=dtype)
    with torch.no_grad():
        torch.compile(m, mode="max-autotune")(x)
        torch.cuda.synchronize()
    print(f"compiled in {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()

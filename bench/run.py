#!/usr/bin/env python3
"""The benchmark suite of issue 5: cuts against the peers and the roofline.

Run on a GPU machine with PyTorch, torchvision, transformers, onnx and
onnxscript (no network needed). Phases, in this order unless --phases says
otherwise:

  ceilings  device-to-device copy bandwidth; FP32 (TF32 off), TF32, fp16 and
            bf16 GEMM rates
  floors    FLOPs of each model (FlopCounterMode on the eager model) and the
            minimal bytes it must move (weights once, inputs and outputs once)
  peers     PyTorch eager, eager under a CUDA graph, torch.compile
            (reduce-overhead, max-autotune), fp32 with TF32 off and fp16
  models    ONNX export of every model and batch for the cuts phase
  cuts      `cuts compile --tune`, outputs checked against ONNX Runtime CPU,
            `cuts bench`; "not available" until cuts has those commands

Every result is merged into OUT/results.json as soon as it is measured, so a
run that stops (time budget, crash) loses at most the unit in flight, and a
second run with the same --out skips what is already there (a unit that
failed is retried with --retry-errors; one skipped for time always is; a
section named by --redo is measured again where its units predate
--redo-after, e.g. the cuts cells after a code generator change, so that
every call of that session skips what it already redid).
Each phase stops starting units when its budget (--phase-budget) or the
run's (--budget) would be exceeded, and records them as "skipped: time
budget"; a watchdog ends the process if a unit overruns the run's budget by
more than --grace seconds. At the end report.py writes report.md and plots.
A compile the watchdog stopped keeps its attempts' seconds; where the next
call brings Inductor's cache back (BENCH_INDUCTOR_CACHE_CARRIED, set by
scripts/gpu_e2e.sh), it resumes from the autotuning already done and its
compile time is the sum of its attempts; with the cache carried, compiles
start whenever 90 s are left.

usage: run.py [--out DIR] [--phases P ...] [--models M ...]
              [--precisions fp32 tf32 fp16 bf16]
              [--batches small large] [--budget S] [--cuts PATH] [--dry-run]
"""
import argparse
import copy
import datetime
import gc
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, HERE)
from export_models import SUITE  # noqa: E402  (no torch needed to read it)
import report  # noqa: E402

PHASES = ("ceilings", "floors", "peers", "models", "cuts")
PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
# Bytes an element of each precision moves (tf32 keeps fp32 tensors).
ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
PEERS = tuple(name for name, _ in report.PEERS)
# Compile time guesses (s) for the budget check until a model has been
# compiled once in this results file; then its measured time is used.
COMPILE_GUESS_S = {"compile_default": 60, "compile_max_autotune": 240}
# The least time left for which a compile is started when Inductor's cache
# is carried between calls (scripts/gpu_e2e.sh INDUCTOR_CACHE).
RESUME_MIN_S = 90
NOT_AVAILABLE = "not available (cuts compile not implemented yet)"


def log(ctx, msg):
    print(f"[{time.time() - ctx.t0:6.0f}s] {msg}", flush=True)


def clamp(v, lo, hi):
    return max(lo, min(hi, v))


# ---------------------------------------------------------------- bookkeeping

class Context:
    """The run's state: arguments, results (as in results.json), deadlines,
    the unit in flight (for the watchdog), and caches of built models."""

    def __init__(self, args):
        self.args = args
        self.t0 = time.time()
        self.deadline = self.t0 + args.budget
        self.phase_deadline = self.deadline
        self.lock = threading.RLock()
        self.current = None  # (section, key, name) of the unit in flight
        self.results = {}
        self.path = None
        self.cpu_models = {}
        self.gpu_models = {}
        self.gpu_inputs = {}
        self.refs = {}

    def save(self):
        with self.lock:
            write_results(self.path, self.results)

    def entry(self, section, key, name=None):
        d = self.results.setdefault(section, {})
        if name is None:
            return d.get(key)
        return d.get(key, {}).get(name)

    def store(self, section, key, name, value):
        with self.lock:
            d = self.results.setdefault(section, {})
            if name is None:
                d[key] = value
            else:
                d.setdefault(key, {})[name] = value
        self.save()

    def done(self, section, key, name=None):
        e = self.entry(section, key, name)
        if not isinstance(e, dict):
            return False
        if self.redone(section, name) and e.get("at", "") < self.args.redo_after:
            return False  # measured before the change --redo is for
        status = e.get("status", "")
        if status == "ok" and section == "models" and not os.path.exists(e.get("path", "")):
            return False  # resumed on another machine: export again
        if status == "ok":
            return True
        # Errors are final unless asked to retry: retrying a model that does not
        # export or compile would spend the budget on the same failure.
        return status.startswith("error") and not self.args.retry_errors

    def redone(self, section, name):
        """Whether --redo names this unit's section (or section/name)."""
        return any(r == section or r == f"{section}/{name}" for r in self.args.redo)

    def remaining(self):
        return min(self.deadline, self.phase_deadline) - time.time()

    def unit(self, section, key, name, fn, estimate_s):
        """Runs one measurement unless already done or over budget; stores its
        dict (status "ok" added) or the error; returns the stored entry."""
        label = f"{section} {key}" + (f" {name}" if name else "")
        if self.done(section, key, name):
            return self.entry(section, key, name)
        if estimate_s > self.remaining():
            before = self.entry(section, key, name)
            if isinstance(before, dict) and before.get("status") == "ok":
                # A redo that does not fit keeps the earlier measurement
                # (its "at" says when it was taken).
                log(self, f"{label}: kept the result of {before.get('at', '?')} "
                          f"(needs ~{estimate_s:.0f} s, "
                          f"{max(0, self.remaining()):.0f} s left)")
                return before
            value = {"status": "skipped: time budget",
                     "needed_s": round(estimate_s), "left_s": round(max(0, self.remaining()))}
            attempts = earlier_attempts(self.entry(section, key, name))
            if attempts:  # kept for the call that resumes it
                value.update(stopped_after_s=sum(attempts), attempts_s=attempts)
            self.store(section, key, name, value)
            log(self, f"{label}: skipped (needs ~{estimate_s:.0f} s, "
                      f"{max(0, self.remaining()):.0f} s left)")
            return value
        self.current = (section, key, name, time.time())
        GPU_LOCK.update(wait_s=0.0, timings=0)
        try:
            value = fn()
            value = {"status": "ok", **value}
        except Exception as e:  # one unit's failure must not stop the others
            msg = f"{type(e).__name__}: {e}".strip().splitlines()
            value = {"status": "error: " + (msg[0] if msg else "?")[:600]}
            traceback.print_exc(limit=-4)  # the innermost frames say what failed
        self.current = None
        value["at"] = now_iso()
        self.store(section, key, name, value)
        shown = {k: v for k, v in value.items() if k in ("status", "median_ms", "compile_s",
                                                         "flops_per_s", "bytes_per_s", "flops")}
        log(self, f"{label}: {shown}")
        cleanup()
        return value


def write_results(path, results):
    """Atomic write: a run killed mid-write leaves the previous file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def cleanup():
    if "torch" in sys.modules:
        import torch
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def watchdog(ctx):
    """Ends the process if a unit runs past the run's budget by more than
    --grace s (a compile cannot be interrupted from Python): the unit in
    flight is recorded as skipped, the report written, and the process
    exits, so the run ends before the machine's time limit."""
    hard = ctx.deadline + ctx.args.grace
    while True:
        time.sleep(1)
        if time.time() < hard or ctx.current is None:
            continue
        section, key, name, started = ctx.current
        # Earlier calls' attempts at this unit count too: with Inductor's
        # autotune cache carried between calls, each attempt resumes the last.
        # Time spent waiting for the GPU lock (warm_parallel.py) is not compiling.
        before = ctx.entry(section, key, name)
        attempts = earlier_attempts(before) + [time.time() - started - GPU_LOCK["wait_s"]]
        took = sum(attempts)
        value = {"status": f"skipped: time budget (stopped after {took:.0f} s)",
                 "stopped_after_s": took, "attempts_s": attempts, "at": now_iso()}
        if GPU_LOCK["installed"]:
            value.update(gpu_lock_wait_s=GPU_LOCK["wait_s"], gpu_lock_timings=GPU_LOCK["timings"])
        if isinstance(before, dict) and "warm_parallel" in before:
            value["warm_parallel"] = before["warm_parallel"]
        ctx.store(section, key, name, value)
        log(ctx, f"watchdog: stopped {section} {key} {name or ''}: run budget exceeded")
        finish(ctx)
        os._exit(3)


def earlier_attempts(entry):
    """Seconds spent by earlier calls' stopped attempts at a unit."""
    if not isinstance(entry, dict) or "stopped_after_s" not in entry:
        return []
    return list(entry.get("attempts_s", [entry["stopped_after_s"]]))


def resumable(ctx, entry):
    """Whether a unit resumes earlier stopped attempts: it has some, and
    Inductor's cache came along with this call."""
    return bool(earlier_attempts(entry)) and bool(os.environ.get("BENCH_INDUCTOR_CACHE_CARRIED"))


def finish(ctx):
    ctx.results.setdefault("runs", [])[-1]["finished"] = now_iso()
    with ctx.lock:
        ctx.results["derived"] = report.derive(ctx.results)
    ctx.save()
    if not ctx.args.no_report:
        try:
            report.generate(ctx.out)
            log(ctx, f"wrote {os.path.join(ctx.out, 'report.md')}")
        except Exception:
            traceback.print_exc()


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------- plan

def plan(args):
    """The cells (model x batch x precision) this run covers."""
    cells = []
    for model, spec in SUITE.items():
        if args.models and model not in args.models:
            continue
        for which in args.batches:
            batch = 1 if which == "small" else spec.large_batch
            for prec in args.precisions:
                cells.append({"key": f"{model}/b{batch}/{prec}", "model": model,
                              "batch": batch, "precision": prec})
    return cells


def model_batches(cells):
    """(model, batch) pairs in plan order, each once."""
    seen = []
    for c in cells:
        if (c["model"], c["batch"]) not in seen:
            seen.append((c["model"], c["batch"]))
    return seen


def dry_run(args, cells):
    existing = {}
    path = os.path.join(args.out, "results.json") if args.out else None
    if path and os.path.exists(path):
        existing = json.load(open(path))

    def mark(section, key, name=None):
        e = existing.get(section, {}).get(key)
        e = e.get(name) if (e and name) else e
        return f"  [{e['status']}]" if isinstance(e, dict) else ""

    print(f"phases: {' '.join(args.phases)}; budget {args.budget} s, "
          f"each phase at most {args.phase_budget} s")
    print(f"out: {args.out or 'bench/out/<gpu>-<date> (named on the GPU)'}")
    if "ceilings" in args.phases:
        for k in ("copy", "gemm_fp32_simt", "gemm_tf32", "gemm_fp16", "gemm_bf16"):
            print(f"ceilings {k}{mark('ceilings', k)}")
    if "floors" in args.phases:
        for m, b in model_batches(cells):
            print(f"floors {m}/b{b}{mark('floors', f'{m}/b{b}')}")
    if "peers" in args.phases:
        for name in args.peers:
            for c in peer_order(cells, name):
                print(f"peers {c['key']} {name}{mark('peers', c['key'], name)}")
    if "models" in args.phases:
        for m, b in model_batches(cells):
            spec = SUITE[m]
            print(f"models {m}/b{b} -> {os.path.join(args.models_dir, spec.file_name(m, b))}"
                  f" ({spec.exporter}, opset {spec.opset}){mark('models', f'{m}/b{b}')}")
    if "cuts" in args.phases:
        for c in cells:
            print(f"cuts {c['key']}: " + ("compile --tune, run --compare, bench"
                                          if args.cuts else NOT_AVAILABLE))
    print(f"{len(cells)} cells")


def small_first(cells):
    """Compiles go batch 1 first: if the budget runs out, the cheap small
    cells are the ones measured and the large batches the ones skipped."""
    return sorted(cells, key=lambda c: c["batch"] != 1)


def peer_order(cells, peer):
    return small_first(cells) if peer.startswith("compile") else cells


# ---------------------------------------------------------------- environment

def environment(args):
    import torch
    env = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "python": sys.version.split()[0], "torch": torch.__version__,
           "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
           "commit": os.environ.get("BENCH_COMMIT") or git_commit()}
    for mod in ("torchvision", "transformers", "onnx", "onnxruntime", "onnxscript"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception as e:
            env[mod] = f"not importable: {type(e).__name__}"
    p = torch.cuda.get_device_properties(0)
    env.update(gpu_name=p.name, gpu_capability=f"{p.major}.{p.minor}",
               gpu_sm_count=p.multi_processor_count,
               gpu_memory_gib=round(p.total_memory / 2**30, 1))
    l2 = getattr(p, "L2_cache_size", None)
    if l2:
        env["gpu_l2_mib"] = round(l2 / 2**20, 1)
    env.update(nvidia_smi())
    try:  # max-autotune compiles its Triton choices on this many threads
        import torch._inductor.config as inductor
        env["inductor_compile_threads"] = inductor.compile_threads
    except Exception as e:
        env["inductor_compile_threads"] = f"unknown: {type(e).__name__}"
    env.update(cudnn_benchmark=torch.backends.cudnn.benchmark,
               tf32_matmul=torch.backends.cuda.matmul.allow_tf32,
               tf32_cudnn=torch.backends.cudnn.allow_tf32)
    slug = re.sub(r"[^a-z0-9]+", "-", p.name.lower().replace("nvidia", "")).strip("-")
    env["results_dir_name"] = f"{slug}-{env['date']}"
    return env


def nvidia_smi():
    q = "driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout
        vals = [v.strip() for v in out.splitlines()[0].split(",")]
        return {"driver": vals[0],
                "clocks": f"SM {vals[1]} (max {vals[3]}), memory {vals[2]} (max {vals[4]}) "
                          f"at start; power limit {vals[5]}"}
    except Exception as e:
        return {"driver": f"unreadable ({type(e).__name__})"}


def git_commit():
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or None
    except Exception:
        return None


def set_tf32(enabled):
    """TF32 off for fp32 cells, through the flags users set (the legacy ones;
    mixing them with the new fp32_precision API makes PyTorch raise)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def set_math(prec):
    """The PyTorch math of a cell: tf32 is PyTorch's default (TF32 in cuDNN
    convolutions, not in matmuls); every other precision with TF32 off."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = prec == "tf32"


def torch_dtype(prec):
    import torch
    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec, torch.float32)


# ---------------------------------------------------------------- timing

def measure(ctx, fn):
    """Median latency of fn in ms from CUDA events. The GPU is idle before each
    timed call (synchronize), so the time is one request's latency including
    launch overhead, not the throughput of calls queued back to back."""
    import torch
    a = ctx.args
    fn()  # first call: lazy initialisation, cuDNN's algorithm search
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    est = max(time.perf_counter() - t, 1e-6)
    for _ in range(clamp(int(a.warmup_s / est), 2, a.warmup)):
        fn()
    n = clamp(int(a.target_s / est), a.min_iters, a.iters)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(n)]
    for start, end in events:
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in events)
    return {"median_ms": statistics.median(ms), "min_ms": ms[0],
            "p90_ms": ms[min(n - 1, int(0.9 * n))], "iters": n}


# ---------------------------------------------------------------- ceilings

def phase_ceilings(ctx):
    import torch
    dev = torch.device("cuda")

    def copy_bw():
        free, _ = torch.cuda.mem_get_info()
        # 1 GiB a buffer (far beyond L2), smaller if the GPU has little free
        n = min(2**28, int(free * 0.2) // 4)
        src = torch.randn(n, device=dev)
        dst = torch.empty_like(src)
        r = measure(ctx, lambda: dst.copy_(src))
        nbytes = src.numel() * src.element_size()
        return {"bytes_per_s": 2 * nbytes / (r["median_ms"] * 1e-3),
                "buffer_bytes": nbytes, **r}

    def gemm(dtype, tf32):
        def run():
            size = ctx.args.gemm_size
            a = torch.randn(size, size, device=dev, dtype=dtype)
            b = torch.randn(size, size, device=dev, dtype=dtype)
            c = torch.empty(size, size, device=dev, dtype=dtype)
            set_tf32(tf32)
            try:
                r = measure(ctx, lambda: torch.matmul(a, b, out=c))
            finally:
                set_tf32(False)
            return {"flops_per_s": 2 * size**3 / (r["median_ms"] * 1e-3),
                    "m": size, "n": size, "k": size, "dtype": str(dtype), **r}
        return run

    units = {"copy": copy_bw,
             "gemm_fp32_simt": gemm(torch.float32, False),
             "gemm_tf32": gemm(torch.float32, True),
             "gemm_fp16": gemm(torch.float16, False),
             "gemm_bf16": gemm(torch.bfloat16, False)}
    for key, fn in units.items():
        ctx.unit("ceilings", key, None, fn, 10)


# ---------------------------------------------------------------- models on the GPU

def tensor_outputs(model):
    """Wraps a model so that it returns a tuple of tensors (transformers
    return ModelOutput dicts), the same for every peer and for the counts."""
    import torch

    class TensorOutputs(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args, **kwargs):
            out = self.m(*args, **kwargs)
            if isinstance(out, torch.Tensor):
                return (out,)
            vals = out.values() if isinstance(out, dict) else out
            return tuple(v for v in vals if isinstance(v, torch.Tensor))

    return TensorOutputs(model).eval()


def cpu_model(ctx, name):
    """Built once per model, at its large batch (the weights do not depend on
    the batch: build() seeds before making the model, then the inputs)."""
    if name not in ctx.cpu_models:
        spec = SUITE[name]
        model, args = spec.build(spec.large_batch)
        ctx.cpu_models[name] = (model.eval(), args)
    return ctx.cpu_models[name]


def gpu_model(ctx, name, prec):
    if (name, prec) not in ctx.gpu_models:
        model, _ = cpu_model(ctx, name)
        m = copy.deepcopy(model).cuda()
        if prec in ("fp16", "bf16"):
            m = m.to(torch_dtype(prec))
        ctx.gpu_models[(name, prec)] = tensor_outputs(m)
    return ctx.gpu_models[(name, prec)]


def gpu_inputs(ctx, name, batch, prec):
    """Inputs resident on the GPU; floating ones in the cell's precision."""
    key = (name, batch, prec)
    if key not in ctx.gpu_inputs:
        _, args = cpu_model(ctx, name)
        out = []
        for a in args:
            a = a[:batch].cuda()
            if a.is_floating_point():
                a = a.to(torch_dtype(prec))
            out.append(a.contiguous())
        ctx.gpu_inputs[key] = tuple(out)
    return ctx.gpu_inputs[key]


def capturable_inputs(name, x, prec):
    """Inputs a CUDA graph can capture the model with. transformers builds
    its additive attention mask with a host scalar (torch.tensor(0.0, ...)
    in masking_utils.eager_mask), a host-to-device copy that capture
    refuses; a 4-D mask is taken as already prepared and used as is. So the
    transformers get the same mask made 4-D and additive beforehand: BERT's
    padding mask, GPT-2's causal one. Returns (args, kwargs); other models'
    inputs are unchanged."""
    import torch
    dtype = torch_dtype(prec)
    low = torch.finfo(dtype).min
    if name == "bert_base":
        ids, mask = x
        s = mask.shape[1]
        add = (1.0 - mask[:, None, None, :].to(dtype)) * low
        return (ids,), {"attention_mask": add.expand(-1, 1, s, -1).contiguous()}
    if name == "gpt2":
        (ids,) = x
        s = ids.shape[1]
        causal = torch.full((s, s), low, dtype=dtype, device=ids.device).triu(1)
        return (ids,), {"attention_mask": causal.expand(ids.shape[0], 1, s, s).contiguous()}
    return x, {}


def rel_err(out, ref):
    """Relative L2 error of a peer's first output against eager's; None when
    eager's output is not finite (a random-weight model can overflow in
    fp16), since then there is nothing to compare."""
    import torch
    o, r = out[0].float(), ref.float()
    if not torch.isfinite(r).all():
        return None
    return (torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r).clamp_min(1e-30)).item()


# ---------------------------------------------------------------- floors

def phase_floors(ctx, cells):
    """FLOPs (FlopCounterMode counts matmuls, convolutions and attention, 2 per
    multiply-add; element-wise work is not counted, which keeps the floor a
    lower bound) and minimal bytes: every weight the model reads, once (an
    embedding table only for the rows the inputs select), inputs and outputs
    once, each in the cell's precision."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    set_tf32(False)

    for name, batch in model_batches(cells):
        def run(name=name, batch=batch):
            m = gpu_model(ctx, name, "fp32")
            x = gpu_inputs(ctx, name, batch, "fp32")
            rows = {}  # embedding module -> rows its lookups touch

            def hook(mod, inp, _out):
                rows[mod] = torch.unique(inp[0]).numel()
            handles = [mod.register_forward_hook(hook) for mod in m.modules()
                       if isinstance(mod, torch.nn.Embedding)]
            try:
                with FlopCounterMode(display=False) as counter:
                    outs = m(*x)
            finally:
                for h in handles:
                    h.remove()
            by_op = {str(k): v for k, v in counter.get_flop_counts().get("Global", {}).items()}
            emb = {id(p): mod for mod in rows for p in mod.parameters()}
            bytes_ = {}
            for prec, size in ELEMENT_BYTES.items():
                weights = 0
                for p in list(m.parameters()) + [b for b in m.buffers() if b.is_floating_point()]:
                    n = p.numel()
                    if id(p) in emb:
                        n = rows[emb[id(p)]] * p.shape[1]
                    weights += n * size
                inputs = sum(t.numel() * (size if t.is_floating_point() else t.element_size())
                             for t in x)
                outputs = sum(t.numel() * size for t in outs)
                bytes_[prec] = {"weights": weights, "inputs": inputs, "outputs": outputs,
                                "total": weights + inputs + outputs}
            return {"flops": counter.get_total_flops(), "flops_by_op": by_op,
                    "params": sum(p.numel() for p in m.parameters()), "bytes": bytes_}
        ctx.unit("floors", f"{name}/b{batch}", None, run, 15)


# ---------------------------------------------------------------- peers

def phase_peers(ctx, cells):
    import torch
    set_tf32(False)
    # Tier by cost: eager and CUDA graph everywhere first, then the compiles.
    for peer in ctx.args.peers:
        for c in peer_order(cells, peer):
            name, batch, prec, key = c["model"], c["batch"], c["precision"], c["key"]
            est = peer_estimate(ctx, name, peer)
            fn = {"eager": run_eager, "cuda_graph": run_cuda_graph,
                  "compile_default": lambda *a: run_compile(*a, mode="reduce-overhead"),
                  "compile_max_autotune": lambda *a: run_compile(*a, mode="max-autotune")}[peer]
            set_math(prec)
            ctx.unit("peers", key, peer, lambda: fn(ctx, name, batch, prec, key), est)
        if peer.startswith("compile"):
            torch._dynamo.reset()


def peer_estimate(ctx, name, peer):
    """Seconds a peer's unit is expected to take, for the budget check."""
    if peer in ("eager", "cuda_graph"):
        return 8
    # This model's slowest compile so far (or how long one ran before the
    # watchdog stopped it) predicts the next one better than a guess.
    seen = [p[peer].get("compile_s", p[peer].get("stopped_after_s"))
            for k, p in ctx.results.get("peers", {}).items()
            if k.split("/")[0] == name and isinstance(p.get(peer), dict)]
    seen = [t for t in seen if t is not None]
    est = (max(seen) * 1.15 if seen else COMPILE_GUESS_S[peer]) + 5
    if os.environ.get("BENCH_INDUCTOR_CACHE_CARRIED"):
        # Inductor's cache goes on to the next call: a compile the watchdog
        # stops resumes there, so any minute and a half left is worth it.
        est = min(est, RESUME_MIN_S)
    return est


def reference(ctx, name, batch, prec, key):
    """Eager output of a cell, to check the other peers against."""
    import torch
    if key not in ctx.refs:
        with torch.no_grad():
            ctx.refs[key] = gpu_model(ctx, name, prec)(*gpu_inputs(ctx, name, batch, prec))[0].clone()
    return ctx.refs[key]


def run_eager(ctx, name, batch, prec, key):
    import torch
    m, x = gpu_model(ctx, name, prec), gpu_inputs(ctx, name, batch, prec)
    with torch.no_grad():
        finite = bool(torch.isfinite(reference(ctx, name, batch, prec, key)).all())
        return {**measure(ctx, lambda: m(*x)), "output_finite": finite}


def run_cuda_graph(ctx, name, batch, prec, key):
    import torch
    m, x = gpu_model(ctx, name, prec), gpu_inputs(ctx, name, batch, prec)
    x, kw = capturable_inputs(name, x, prec)
    with torch.no_grad():
        ref = reference(ctx, name, batch, prec, key)
        # Warm up on a side stream before capture, as torch.cuda.graphs asks.
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                m(*x, **kw)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        t = time.perf_counter()
        with torch.cuda.graph(graph):
            out = m(*x, **kw)
        capture_s = time.perf_counter() - t
        graph.replay()
        torch.cuda.synchronize()
        err = rel_err(out, ref)
        r = measure(ctx, graph.replay)
        del graph, out
    return {**r, "rel_err": err, "capture_s": capture_s}


PEER_OF_MODE = {"reduce-overhead": "compile_default", "max-autotune": "compile_max_autotune"}
WARMED = "skipped: autotuned only (--warm-only), measured in a later call"


def compile_seconds(ctx, before, this_s):
    """(attempts, compile_s, extra fields) of a compile that took this_s now.
    A resumed compile adds its earlier attempts; one that --warm-only already
    completed (autotuned and compiled, only not measured) is that run's time,
    and this one's, from the cache, is kept apart as compile_cached_s."""
    earlier = earlier_attempts(before) if resumable(ctx, before) else []
    if earlier and before.get("status") == WARMED:
        return earlier, sum(earlier), {"compile_cached_s": this_s}
    attempts = earlier + [this_s]
    return attempts, sum(attempts), {}

# Seconds this process waited for BENCH_GPU_LOCK since the unit in flight
# began, and how many timings took it.
GPU_LOCK = {"wait_s": 0.0, "timings": 0, "installed": False}


def install_gpu_lock(path):
    """Serialises Inductor's GPU timings among processes that autotune at
    once (bench/warm_parallel.py). Each timing's callable is run once outside
    the lock (its first call compiles the kernel: ptxas on the CPU, the slow
    part that the processes share out), then timed holding an flock on path,
    so no two processes' timings overlap. The wait is left out of the
    compile time."""
    import fcntl
    import torch
    from torch._inductor.runtime import benchmarking
    cls = type(benchmarking.benchmarker)
    original = cls.benchmark_gpu

    held = threading.local()

    def benchmark_gpu(self, _callable, *args, **kwargs):
        if getattr(held, "lock", False):  # nested: a second flock would wait on the first
            return original(self, _callable, *args, **kwargs)
        _callable()
        torch.cuda.synchronize()
        t = time.perf_counter()
        with open(path, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            GPU_LOCK["wait_s"] += time.perf_counter() - t
            GPU_LOCK["timings"] += 1
            held.lock = True
            try:
                return original(self, _callable, *args, **kwargs)
            finally:
                held.lock = False
                fcntl.flock(f, fcntl.LOCK_UN)
    cls.benchmark_gpu = benchmark_gpu
    GPU_LOCK["installed"] = True


def run_compile(ctx, name, batch, prec, key, mode):
    import torch
    m, x = gpu_model(ctx, name, prec), gpu_inputs(ctx, name, batch, prec)
    torch._dynamo.reset()
    if os.environ.get("BENCH_GPU_LOCK") and not GPU_LOCK["installed"]:
        install_gpu_lock(os.environ["BENCH_GPU_LOCK"])
    with torch.no_grad():
        ref = reference(ctx, name, batch, prec, key)
        compiled = torch.compile(m, mode=mode)
        t = time.perf_counter()
        out = compiled(*x)  # compiles (and autotunes) on the first call
        torch.cuda.synchronize()
        # Resumed: the compile time is every attempt's, not this one's.
        before = ctx.entry("peers", key, PEER_OF_MODE[mode])
        attempts, compile_s, cached = compile_seconds(
            ctx, before, time.perf_counter() - t - GPU_LOCK["wait_s"])
        # Autotuned alongside other cells (warm_parallel.py): said in every
        # later entry of the cell, since its compile time includes that.
        parallel = ({"warm_parallel": before["warm_parallel"]}
                    if resumable(ctx, before) and "warm_parallel" in before else {})
        if ctx.args.warm_only:
            del out
            torch._dynamo.reset()
            return {"status": WARMED, "stopped_after_s": compile_s, "attempts_s": attempts,
                    "gpu_lock_wait_s": GPU_LOCK["wait_s"], "gpu_lock_timings": GPU_LOCK["timings"],
                    **parallel}
        err = rel_err(out, ref)
        del out

        def step():
            # CUDA-graph trees reuse output memory; marking each call as a new
            # step tells them the previous outputs are no longer needed.
            torch.compiler.cudagraph_mark_step_begin()
            compiled(*x)
        r = measure(ctx, step)
    torch._dynamo.reset()
    extra = {"compile_attempts_s": attempts} if len(attempts) > 1 else {}
    return {**r, "compile_s": compile_s, "rel_err": err, "mode": mode, **extra, **cached,
            **parallel}


# ---------------------------------------------------------------- models (ONNX)

def phase_models(ctx, cells):
    """Exports on the CPU from a fresh build (the same seeds as
    scripts/export_models.py), so the file is what that script writes."""
    import torch
    os.makedirs(ctx.args.models_dir, exist_ok=True)
    for name, batch in model_batches(cells):
        spec = SUITE[name]

        def run(name=name, batch=batch, spec=spec):
            path = os.path.join(ctx.args.models_dir, spec.file_name(name, batch))
            model, args = spec.build(batch)
            t = time.perf_counter()
            with torch.enable_grad():  # as scripts/export_models.py runs it
                spec.export(model, args, path)
            export_s = time.perf_counter() - t
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 24), b""):
                    h.update(chunk)
            return {"file": os.path.basename(path), "path": os.path.abspath(path),
                    "bytes": os.path.getsize(path), "sha256": h.hexdigest(),
                    "export_s": export_s, "exporter": spec.exporter, "opset": spec.opset,
                    "inputs": [{"name": n, "shape": list(a.shape), "dtype": str(a.dtype)}
                               for n, a in zip(spec.input_names, args)]}
        est = 20 if spec.exporter == "torchscript" else 60
        ctx.unit("models", f"{name}/b{batch}", None, run, est * (2 if batch > 1 else 1))


# ---------------------------------------------------------------- cuts

def cuts_available(ctx):
    """(True, "") if the given cuts binary has the compile command, else
    (False, the reason shown in the cuts columns)."""
    exe = ctx.args.cuts
    if not exe:
        return False, NOT_AVAILABLE
    try:
        p = subprocess.run([exe, "compile", "--help"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"not available ({exe}: {type(e).__name__}: {e})"
    text = (p.stdout + p.stderr).strip()
    if p.returncode != 0 and ("unknown command" in text or "usage" not in text):
        errors = [line for line in text.splitlines() if "error" in line]
        first = (errors or text.splitlines() or [f"exit {p.returncode}"])[0]
        return False, f"{NOT_AVAILABLE[:-1]}: {first.strip()})"
    return True, ""


def phase_cuts(ctx, cells):
    """Per cell: cuts compile --tune (wall time), outputs of cuts run checked
    against ONNX Runtime on the CPU with --compare, latency from cuts bench
    --json, following the command line in shared/DESIGN.md. Nothing is
    recorded but what those commands print."""
    available, why = cuts_available(ctx)
    if not available:
        for c in cells:
            ctx.store("cuts", c["key"], None, {"status": why})
        log(ctx, f"cuts: {why}")
        return
    import torch
    arch = cuts_arch(ctx, torch.cuda.get_device_properties(0))
    log(ctx, f"cuts: --arch {arch}")
    usage = subprocess.run([ctx.args.cuts, "--help"], capture_output=True, text=True,
                           timeout=60).stdout
    for c in small_first(cells):
        # compile + tune may take up to 10 minutes (issue 6); without tuning
        # compile, reference, check and timing take a minute or two.
        est = ctx.args.cuts_estimate or (600 if "--tune" in usage else 120)
        ctx.unit("cuts", c["key"], None, lambda c=c: run_cuts(ctx, c, arch), est)


def cuts_arch(ctx, prop):
    """The descriptor cuts models this GPU with: the one whose name (H200,
    H100-SXM -> H100) is in the device's and whose compute arch is its
    capability; else the capability itself (sm_90 is the H100's descriptor,
    whose bandwidth an H200 exceeds by 43%)."""
    cc = f"sm_{prop.major}{prop.minor}"
    try:
        archs = json.loads(subprocess.run([ctx.args.cuts, "arch", "--json"], capture_output=True,
                                          text=True, timeout=60).stdout)
    except (ValueError, OSError, subprocess.SubprocessError):
        return cc
    dev = prop.name.upper()
    for a in sorted(archs, key=lambda a: -len(a.get("name", ""))):
        base = a.get("name", "").split("-")[0].upper()
        if base and base in dev and a.get("computeArch") == cc and a.get("aliases"):
            return a["aliases"][0]
    return cc


def run_cuts(ctx, cell, arch):
    import numpy as np
    import onnxruntime as ort
    model = ctx.entry("models", f"{cell['model']}/b{cell['batch']}")
    if not (model and model.get("status") == "ok" and os.path.exists(model["path"])):
        raise RuntimeError("no ONNX export of this model and batch (run the models phase)")
    work = tempfile.mkdtemp(prefix="cuts-bench-")
    try:
        out = os.path.join(work, "out")
        # --tune and --precision only where this cuts offers them (its
        # usage lists them); otherwise the performance model alone chooses,
        # in fp32, and the result says so.
        usage = subprocess.run([ctx.args.cuts, "--help"], capture_output=True,
                               text=True, timeout=60).stdout
        tuned = "--tune" in usage
        if cell["precision"] != "fp32" and "--precision" not in usage:
            raise RuntimeError(f"cuts has no --precision: {cell['precision']} is not compiled")
        if ctx.args.keep:
            # The artifact and tuning cache stay for inspection (cuts bench
            # --kernels) and for compiles from the cache without a GPU.
            out = os.path.join(ctx.args.keep, f"{cell['model']}_b{cell['batch']}_{cell['precision']}")
            os.makedirs(out, exist_ok=True)
        cmd = [ctx.args.cuts, "compile", model["path"], "--arch", arch, "-o", out]
        if tuned:
            cmd.append("--tune")
            if ctx.args.cuts_tune_seconds:
                cmd += ["--tune-seconds", str(ctx.args.cuts_tune_seconds)]
            if ctx.args.keep:
                cmd += ["--tuning", os.path.join(out, "tuning-cache.json")]
        if "--precision" in usage:
            cmd += ["--precision", cell["precision"]]
        # 16-bit cells take and return 16-bit tensors, as the peers are given
        # their inputs in the cell's precision and the floor counts them.
        io16 = cell["precision"] in ("fp16", "bf16") and "--io-precision" in usage
        if io16:
            cmd += ["--io-precision", cell["precision"]]
        t = time.perf_counter()
        compile_out = run_checked(cmd, 900)
        compile_s = time.perf_counter() - t
        artifact = os.path.join(out, "model.cuts")
        # Reference: ONNX Runtime on the CPU, same inputs as the export.
        _, args = SUITE[cell["model"]].build(cell["batch"])
        feeds = {}
        for n, a in zip(SUITE[cell["model"]].input_names, args):
            # The fp32 reference serves every precision; with --io-precision
            # cuts gets the same inputs rounded, as the peers do.
            feeds[n] = a.numpy()
        sess = ort.InferenceSession(model["path"], providers=["CPUExecutionProvider"])
        refdir = os.path.join(work, "ref")
        os.makedirs(refdir)
        ref = sess.run(None, feeds)
        for meta, val in zip(sess.get_outputs(), ref):
            np.save(os.path.join(refdir, meta.name + ".npy"), val)
        inputs = []
        for n, arr in feeds.items():
            inputs += ["--input", f"{n}={save_input(work, n, arr, cell['precision'] if io16 else None)}"]
        # A reduced-precision cell may differ from fp32 by up to twice
        # PyTorch's own error in that precision: random-weight CNNs amplify
        # rounding (fp16 MobileNetV2 and Inception-v3 ran 1.7e-2 and
        # 5.7e-2 from fp32 in PyTorch eager itself, H200).
        tolerance, peer_error = [], None
        if cell["precision"] in REDUCED_TOLERANCE:
            peer_error = precision_error(ctx, cell, args, ref[0])
            tol = REDUCED_TOLERANCE[cell["precision"]]
            if peer_error is not None:
                tol = max(tol, 2 * peer_error)
            tolerance = ["--tolerance", f"{tol:.3g}"]
        check = run_checked([ctx.args.cuts, "run", artifact, *inputs, "--compare", refdir,
                             *tolerance], 600)
        # Replayed as a CUDA graph, as the eager + CUDA graph peer is.
        bench = run_checked([ctx.args.cuts, "bench", artifact, "--iters",
                             str(ctx.args.iters), "--graph", "--json"], 600)
        stats = json.loads(bench)
        median = stats.get("median_ms")
        if median is None:
            raise RuntimeError(f"cuts bench --json printed no median_ms: {bench[:200]}")
        return {"median_ms": median, "compile_s": compile_s, "tuned": tuned,
                "tune_seconds": ctx.args.cuts_tune_seconds if tuned else None,
                "compare": check.strip()[-2000:], "bench": stats,
                "tolerance": tolerance[1] if tolerance else None,
                "peer_error": peer_error,
                # Its summary: kernels, the time per step, tuning rounds.
                "compile": compile_out.strip()[-1500:]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def save_input(work, name, arr, io16):
    """arr as cuts run reads it: .npy, or where `io16` names a 16-bit
    precision and arr is floating, rounded to it (bf16 as an ONNX
    TensorProto: .npy has no bfloat16). Returns the file's path."""
    import numpy as np
    if io16 and arr.dtype.kind == "f":
        if io16 == "fp16":
            arr = arr.astype(np.float16)
        else:
            from onnx import TensorProto, helper
            bits = np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32)
            # Round to nearest even, as a cast to bfloat16 does (in 64 bits:
            # no wrap past 0xFFFFFFFF); a NaN stays a NaN.
            wide = bits.astype(np.uint64)
            bf = ((wide + 0x7FFF + ((wide >> 16) & 1)) >> 16).astype(np.uint16)
            bf[np.isnan(arr)] = 0x7FC0
            path = os.path.join(work, name + ".pb")
            t = helper.make_tensor(name, TensorProto.BFLOAT16, list(arr.shape),
                                   bf.tobytes(), raw=True)
            with open(path, "wb") as f:
                f.write(t.SerializeToString())
            return path
    path = os.path.join(work, name + ".npy")
    np.save(path, arr)
    return path


# cuts run --compare's default tolerance of a reduced precision (tf32
# calls are held to fp16's).
REDUCED_TOLERANCE = {"tf32": 1e-2, "fp16": 1e-2, "bf16": 5e-2}


def precision_error(ctx, cell, args, ref):
    """PyTorch eager's relative L2 error in the cell's precision against the
    fp32 reference, on the cuts cell's own inputs; None if not finite."""
    import numpy as np
    import torch
    prec = cell["precision"]
    m = gpu_model(ctx, cell["model"], prec)
    x = [a.cuda().to(torch_dtype(prec)) if a.is_floating_point() else a.cuda()
         for a in args]
    set_math(prec)
    try:
        with torch.no_grad():
            out = m(*x)[0].float().cpu().numpy()
    finally:
        set_tf32(False)
    if not np.isfinite(out).all():
        return None
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def run_checked(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        # stdout first: cuts run --compare prints each output's error there.
        said = (p.stdout.strip()[-400:] + " | " + p.stderr.strip()[-300:]).strip(" |")
        said = " / ".join(x.strip() for x in said.splitlines())
        raise RuntimeError(f"{' '.join(cmd[:2])}: exit {p.returncode}: {said}")
    return p.stdout


# ---------------------------------------------------------------- main

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="results folder (default bench/out/<gpu>-<date>, ignored by git)")
    ap.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    ap.add_argument("--models", nargs="+", choices=list(SUITE))
    ap.add_argument("--batches", nargs="+", choices=("small", "large"),
                    default=["small", "large"], help="small = 1, large = 64 CNNs / 32 transformers")
    ap.add_argument("--precisions", nargs="+", choices=PRECISIONS, default=list(PRECISIONS))
    ap.add_argument("--peers", nargs="+", choices=PEERS, default=list(PEERS))
    ap.add_argument("--budget", type=float, default=540,
                    help="seconds for the whole run: no unit starts that would end after it")
    ap.add_argument("--phase-budget", type=float, default=540,
                    help="seconds for each phase (each stays under 10 minutes)")
    ap.add_argument("--grace", type=float, default=30,
                    help="seconds a unit may overrun --budget before the watchdog ends the run")
    ap.add_argument("--iters", type=int, default=50, help="most timed iterations")
    ap.add_argument("--min-iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=10, help="most warm-up iterations")
    ap.add_argument("--warmup-s", type=float, default=0.5)
    ap.add_argument("--target-s", type=float, default=1.5,
                    help="timed seconds per measurement (iterations fitted between the bounds)")
    ap.add_argument("--gemm-size", type=int, default=8192)
    ap.add_argument("--no-cudnn-benchmark", action="store_true",
                    help="keep cuDNN's heuristic algorithm choice (default: benchmark mode)")
    ap.add_argument("--models-dir", default=os.path.join(HERE, "models"))
    ap.add_argument("--cuts", help="path of a cuts binary for the cuts phase")
    ap.add_argument("--cuts-estimate", type=float, default=0,
                    help="seconds a cuts cell is expected to take, for the budget check "
                         "(default: 600 with tuning, 120 without)")
    ap.add_argument("--cuts-tune-seconds", type=float, default=0,
                    help="cuts compile --tune-seconds S (default: none, tune everything)")
    ap.add_argument("--keep", help="folder where each cuts cell's artifact and tuning cache stay")
    ap.add_argument("--retry-errors", action="store_true")
    ap.add_argument("--redo", nargs="*", default=[], metavar="SECTION[/NAME]",
                    help="measure again the units of these sections (cuts, "
                         "peers/compile_max_autotune, ...) measured before --redo-after")
    ap.add_argument("--redo-after", default="", metavar="ISO-TIME",
                    help="with --redo: units measured before this UTC time "
                         "(2026-11-25 or 2026-11-25T10:00) are measured again")
    ap.add_argument("--warm-only", action="store_true",
                    help="compile peers only autotune (into Inductor's cache) and record "
                         "the attempt; a later run measures them (bench/warm_parallel.py)")
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="list the units and exit")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.redo and not args.redo_after:
        sys.exit("run.py: --redo needs --redo-after TIME (units measured before it are redone)")
    cells = plan(args)
    if args.dry_run:
        dry_run(args, cells)
        return 0
    import torch
    if not torch.cuda.is_available():
        sys.exit("run.py: no CUDA GPU visible (use --dry-run to list the units)")
    torch.set_grad_enabled(False)
    torch.backends.cudnn.benchmark = not args.no_cudnn_benchmark
    set_tf32(False)
    try:
        import transformers
        transformers.logging.set_verbosity_error()
    except ImportError:
        pass

    ctx = Context(args)
    env = environment(args)
    # Per-run output stays out of the tree; bench/results/<gpu>/ holds the
    # report that is copied there on purpose (bench/README.md).
    ctx.out = args.out or os.path.join(HERE, "out", env["results_dir_name"])
    os.makedirs(ctx.out, exist_ok=True)
    ctx.path = os.path.join(ctx.out, "results.json")
    if os.path.exists(ctx.path):
        ctx.results = json.load(open(ctx.path))
        old = ctx.results.get("env", {})
        if old.get("gpu_name") and old["gpu_name"] != env["gpu_name"]:
            sys.exit(f"run.py: {ctx.path} holds results of {old['gpu_name']}, this GPU is "
                     f"{env['gpu_name']}: use another --out")
        # A resumed run keeps the first run's date: it names the results folder.
        for k in ("date", "results_dir_name"):
            env[k] = old.get(k, env[k])
    ctx.results["schema"] = 1
    ctx.results["env"] = env
    planned = {c["key"]: c for c in ctx.results.get("plan", {}).get("cells", [])}
    planned.update({c["key"]: c for c in cells})
    order = [c["key"] for c in plan(parse_args([]))]
    ctx.results["plan"] = {"cells": sorted(planned.values(), key=lambda c: order.index(c["key"]))}
    ctx.results.setdefault("runs", []).append({"started": now_iso(), "argv": sys.argv[1:],
                                               "budget_s": args.budget,
                                               "clocks": env.get("clocks")})
    ctx.save()
    log(ctx, f"{env['gpu_name']}, torch {env['torch']}; results in {ctx.path}")
    threading.Thread(target=watchdog, args=(ctx,), daemon=True).start()

    for phase in args.phases:
        ctx.phase_deadline = time.time() + args.phase_budget
        log(ctx, f"phase {phase}")
        if phase == "ceilings":
            phase_ceilings(ctx)
        elif phase == "floors":
            phase_floors(ctx, cells)
        elif phase == "peers":
            phase_peers(ctx, cells)
        elif phase == "models":
            phase_models(ctx, cells)
        elif phase == "cuts":
            phase_cuts(ctx, cells)
    finish(ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The model zoo of issue 32: what the two PyTorch exporters make of every
torchvision classification model and of the transformers families, through
cuts. Needs torch, torchvision, transformers, onnxscript, onnxruntime and a
GPU: run it on the GPU machine.

  zoo.py run --out DIR --cuts CUTS [--only SUBSTR ...] [--exporters ts dyn]
             [--budget S] [--redo]
      per model and exporter (TorchScript at opset 17, dynamo at 20): the
      export, `cuts compile` without tuning (its wall time), and `cuts run
      --compare` on the GPU against ONNX Runtime's outputs for the same
      inputs (scripts/reference.py), within twice PyTorch's own fp32 GPU
      error against them (at least 1e-5). Results go to DIR/zoo.json after each
      step; a unit already recorded is skipped (resumable) unless --redo.
      No unit starts after --budget seconds. Each unit's files are removed
      after it unless --keep.
      With --time, a unit that matches is also tuned (--tune-seconds S,
      20) and timed (`cuts bench --graph`) against PyTorch fp32 eager under
      a CUDA graph and torch.compile, in the same run.
  zoo.py report ZOO.json [--readme README.md]
      the table (markdown), and with --readme between its zoo markers.
  zoo.py list
      the models (needs torchvision).

Weights are random (fixed seeds), batch 1, images 224 x 224 (299 for
Inception-v3), sequences of 128 tokens.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPORTERS = {"ts": 17, "dyn": 20}
SEQ = 128


def hidden_state(model, names):
    """model called with its inputs by name, returning last_hidden_state:
    one tensor out, and no positional clash with the keyword arguments
    (use_cache) that transformers' decorators add."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, *xs):
            return self.m(**dict(zip(names, xs))).last_hidden_state

    return Wrapped().eval()


def transformers_models():
    """name -> (build() -> (module, args), input names)."""
    def text(config, model, names=("input_ids", "attention_mask")):
        def build():
            import torch
            import transformers as tf
            torch.manual_seed(0)
            cfg = getattr(tf, config)()
            cfg._attn_implementation = "eager"
            if hasattr(cfg, "use_cache"):
                cfg.use_cache = False
            m = hidden_state(getattr(tf, model)(cfg).eval(), names)
            ids = torch.randint(0, cfg.vocab_size, (1, SEQ))
            mask = torch.ones(1, SEQ, dtype=torch.int64)
            return m, (ids, mask)[:len(names)]
        return build, list(names)

    def image(config, model, **kw):
        def build():
            import torch
            import transformers as tf
            torch.manual_seed(0)
            cfg = getattr(tf, config)(**kw)
            cfg._attn_implementation = "eager"
            m = hidden_state(getattr(tf, model)(cfg).eval(), ["pixel_values"])
            return m, (torch.randn(1, 3, 224, 224),)
        return build, ["pixel_values"]

    return {
        "bert": text("BertConfig", "BertModel"),
        "distilbert": text("DistilBertConfig", "DistilBertModel"),
        "roberta": text("RobertaConfig", "RobertaModel"),
        "gpt2": text("GPT2Config", "GPT2Model", ("input_ids",)),
        "t5_encoder": text("T5Config", "T5EncoderModel"),
        "vit": image("ViTConfig", "ViTModel"),
        "swin": image("SwinConfig", "SwinModel"),
        # The ResNet-50 backbone from its config, not fetched by name.
        "detr": image("DetrConfig", "DetrModel", use_timm_backbone=False,
                      use_pretrained_backbone=False, backbone=None,
                      backbone_config={"model_type": "resnet",
                                       "out_features": ["stage4"]}),
    }


def torchvision_models():
    import torchvision

    def build_for(name):
        def build():
            import torch
            sys.path.insert(0, os.path.join(ROOT, "scripts"))
            from export_models import calibrate
            torch.manual_seed(0)
            size = 299 if name == "inception_v3" else 224
            m = torchvision.models.get_model(name, weights=None)
            # Heads initialised to zeros (the ViTs') would make every output
            # 0 and the comparison empty.
            with torch.no_grad():
                for p in m.parameters():
                    if p.dim() >= 2 and not p.any():
                        p.normal_(0, 0.02)
            calibrate(m, size)
            return m, (torch.randn(1, 3, size, size),)
        return build, ["input"]

    return {n: build_for(n)
            for n in torchvision.models.list_models(module=torchvision.models)}


def all_models():
    models = {}
    try:
        models.update(torchvision_models())
    except ImportError:
        pass
    models.update(transformers_models())
    return models


def export_one(name, exporter, path):
    """Exports in this process (run as a child: an exporter may crash)."""
    import torch
    build, names = all_models()[name]
    model, args = build()
    opset = EXPORTERS[exporter]
    # nn.MultiheadAttention's fast path (torchvision's ViT) is an aten op
    # the TorchScript exporter does not know.
    torch.backends.mha.set_fastpath_enabled(False)
    with torch.no_grad():
        if exporter == "ts":
            torch.onnx.export(model, args, path, opset_version=opset,
                              dynamo=False, do_constant_folding=True,
                              input_names=names)
        else:
            prog = torch.onnx.export(model, args, dynamo=True,
                                     opset_version=opset, input_names=names)
            prog.save(path)


def torch_output(name, in_dir, path):
    """PyTorch eager's first output in fp32 on the GPU (TF32 off) for the
    inputs in in_dir, saved to path (run as a child, as export_one)."""
    import numpy as np
    import torch
    build, names = all_models()[name]
    model, _ = build()
    xs = [torch.from_numpy(np.load(os.path.join(in_dir, n + ".npy"))).cuda()
          for n in names]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        y = model.cuda()(*xs)
    if isinstance(y, (tuple, list)):
        y = y[0]
    np.save(path, y.float().cpu().numpy())


def torch_time(name, in_dir, path):
    """Median latency (ms) of PyTorch fp32 (TF32 off) on the GPU: eager
    replayed as a CUDA graph, and torch.compile (default mode, its compile
    time too), written to path as JSON (run as a child, as export_one)."""
    import numpy as np
    import torch
    build, names = all_models()[name]
    model, _ = build()
    model = model.cuda()
    xs = [torch.from_numpy(np.load(os.path.join(in_dir, n + ".npy"))).cuda()
          for n in names]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    def median_ms(fn, iters=50):
        for _ in range(5):
            fn()
        times = []
        for _ in range(iters):
            a, b = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return sorted(times)[len(times) // 2]

    out = {}
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up off the capture stream
            for _ in range(3):
                model(*xs)
        torch.cuda.current_stream().wait_stream(s)
        # transformers' models copy host scalars to the GPU as they run,
        # which a CUDA graph cannot capture: those are timed eager.
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                model(*xs)
            out["eager_graph_ms"] = median_ms(graph.replay)
        except RuntimeError:
            torch.cuda.synchronize()
            out["eager_ms"] = median_ms(lambda: model(*xs))
        t = time.time()
        compiled = torch.compile(model)
        compiled(*xs)
        torch.cuda.synchronize()
        out["compile_s"] = time.time() - t
        out["compile_ms"] = median_ms(lambda: compiled(*xs))
    json.dump(out, open(path, "w"))


def rel_l2(a, b):
    import numpy as np
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def l2_errors(report):
    """The relative L2 errors `cuts run --compare` printed."""
    return [float(line.split("relative L2")[1].split()[0])
            for line in report.splitlines() if "relative L2" in line]


def last_line(text):
    """A failure's last line, without the work folder's paths."""
    lines = [l for l in text.strip().splitlines() if l.strip()]
    line = lines[-1][:300] if lines else ""
    return re.sub(r"cuts: error: \S+?: (\S+?: )?", "", line)


def step(cmd, timeout):
    """(ok, seconds, output) of a command, a timeout counted as a failure."""
    t = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
        return r.returncode == 0, time.time() - t, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        return False, time.time() - t, "timed out after %d s" % timeout


def run_unit(a, name, exporter, entry):
    d = os.path.join(a.out, "work", "%s_%s" % (name, exporter))
    os.makedirs(d, exist_ok=True)
    onnx_path = os.path.join(d, "model.onnx")
    ok, s, out = step([sys.executable, __file__, "export-one", name, exporter,
                       onnx_path], 600)
    entry["export"] = {"ok": ok, "s": round(s, 1), "opset": EXPORTERS[exporter]}
    if not ok:
        entry["export"]["error"] = last_line(out)
        return
    ok, s, out = step([a.cuts, "compile", onnx_path, "--arch", a.arch, "-o",
                       os.path.join(d, "out")], 900)
    entry["compile"] = {"ok": ok, "s": round(s, 1)}
    if not ok:
        entry["compile"]["error"] = last_line(out)
        return
    ref = subprocess.run([sys.executable, os.path.join(ROOT, "scripts",
                                                       "reference.py"),
                          onnx_path, os.path.join(d, "in"),
                          os.path.join(d, "ref")],
                         capture_output=True, text=True, timeout=900)
    if ref.returncode != 0:
        entry["compare"] = {"ok": False, "error": "reference: " +
                            last_line(ref.stdout + ref.stderr)}
        return
    inputs = ref.stdout.split()
    # The tolerance: fp32 kernels that sum in another order than ONNX
    # Runtime's differ by what PyTorch's own GPU kernels differ, so twice
    # PyTorch's relative L2 error against ONNX Runtime, at least 1e-5 (cuts
    # run's default), as bench/run.py does for reduced precisions.
    import numpy as np
    import onnx
    first = onnx.load(onnx_path, load_external_data=False).graph.output[0].name
    ok, _, out = step([sys.executable, __file__, "torch-output", name,
                       os.path.join(d, "in"), os.path.join(d, "torch.npy")],
                      900)
    peer = (rel_l2(np.load(os.path.join(d, "torch.npy")),
                   np.load(os.path.join(d, "ref", first + ".npy")))
            if ok else None)
    tol = max(1e-5, 2 * peer) if peer is not None else 1e-5
    ok, s, out = step([a.cuts, "run", os.path.join(d, "out", "model.cuts"),
                       "--compare", os.path.join(d, "ref"), "--tolerance",
                       "%.3g" % tol, *inputs], 900)
    errs = l2_errors(out)
    entry["compare"] = {"ok": ok, "s": round(s, 1), "tolerance": tol,
                        "peer_error": peer,
                        "error_l2": max(errs) if errs else None}
    if not ok:
        entry["compare"]["error"] = last_line(out)
    elif a.time:
        time_unit(a, name, d, entry)


def time_unit(a, name, d, entry):
    """Tuned cuts against PyTorch's fp32 peers, in the same run."""
    t = entry["time"] = {}
    ok, s, out = step([a.cuts, "compile", os.path.join(d, "model.onnx"),
                       "--arch", a.arch, "-o", os.path.join(d, "tuned"),
                       "--tune", "--tune-seconds", str(a.tune_seconds)], 900)
    t["tune_s"] = round(s, 1)
    if not ok:
        t["error"] = "tune: " + last_line(out)
        return
    ok, _, out = step([a.cuts, "bench", os.path.join(d, "tuned", "model.cuts"),
                       "--graph", "--json"], 300)
    try:
        t["cuts_ms"] = json.loads(out[out.index("{"):])["median_ms"]
    except (ValueError, KeyError):
        t["error"] = "bench: " + last_line(out)
        return
    ok, _, out = step([sys.executable, __file__, "torch-time", name,
                       os.path.join(d, "in"), os.path.join(d, "torch.json")],
                      900)
    if not ok:
        t["error"] = "torch: " + last_line(out)
        return
    t.update(json.load(open(os.path.join(d, "torch.json"))))


def cmd_run(a):
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "zoo.json")
    results = json.load(open(path)) if os.path.exists(path) else {}
    start = time.time()
    models = all_models()
    for name in sorted(models):
        if a.only and not any(s in name for s in a.only):
            continue
        for exporter in a.exporters:
            key = "%s/%s" % (name, exporter)
            if key in results and not a.redo:
                continue
            if time.time() - start > a.budget:
                print("budget spent: stopping before", key, flush=True)
                return
            entry = {"at": time.strftime("%Y-%m-%dT%H:%M:%S")}
            try:
                run_unit(a, name, exporter, entry)
            except subprocess.TimeoutExpired as err:
                entry.setdefault("compare", {"ok": False,
                                             "error": "timed out: %s" % err})
            finally:
                if not a.keep:  # models and artifacts reach gigabytes
                    shutil.rmtree(os.path.join(a.out, "work"),
                                  ignore_errors=True)
            results[key] = entry
            json.dump(results, open(path, "w"), indent=1, sort_keys=True)
            print("%-40s %s" % (key, outcome(entry)), flush=True)


def outcome(entry):
    for phase in ("export", "compile", "compare"):
        p = entry.get(phase)
        if p is None or not p["ok"]:
            return "%s failed: %s" % (phase, (p or {}).get("error", "?"))
    c = entry["compare"]
    return "ok (relative L2 %.1e, PyTorch %s)" % (
        c["error_l2"] or 0.0,
        "%.1e" % c["peer_error"] if c.get("peer_error") is not None else "?")


def timing(e):
    """Tuned cuts, eager + CUDA graph and torch.compile (ms), and cuts'
    speedup over the faster peer; dashes where not timed. Eager without a
    graph (a model no graph captures) is marked "(no graph)"."""
    t = e.get("time", {})
    if "compile_ms" not in t:
        return "— | — | — | —"
    eager = t.get("eager_graph_ms", t.get("eager_ms"))
    best = min(eager, t["compile_ms"])
    return "%.3f | %.3f%s | %.3f | %.2fx" % (
        t["cuts_ms"], eager, "" if "eager_graph_ms" in t else " (no graph)",
        t["compile_ms"], best / t["cuts_ms"])


def table(results):
    rows = ["| model | exporter | compile (s) | cuts tuned (ms) | eager + graph "
            "(ms) | torch.compile (ms) | vs best peer | result |",
            "|---|---|---|---|---|---|---|---|"]
    for key in sorted(results):
        name, exporter = key.split("/")
        e = results[key]
        c = e.get("compile", {})
        rows.append("| %s | %s%d | %s | %s | %s |" % (
            name, exporter, e["export"]["opset"],
            "%.1f" % c["s"] if c.get("ok") else "—", timing(e),
            outcome(e).replace("|", "\\|")))
    ok = sum(outcome(e).startswith("ok") for e in results.values())
    rows.append("")
    rows.append("%d of %d match ONNX Runtime." % (ok, len(results)))
    return "\n".join(rows)


def cmd_report(a):
    text = table(json.load(open(a.results)))
    if not a.readme:
        print(text)
        return
    readme = open(a.readme).read()
    begin, end = "<!-- zoo:begin -->", "<!-- zoo:end -->"
    if begin not in readme or end not in readme:
        sys.exit("zoo.py: %s has no %s ... %s markers" % (a.readme, begin, end))
    head, rest = readme.split(begin, 1)
    tail = rest.split(end, 1)[1]
    open(a.readme, "w").write(head + begin + "\n" + text + "\n" + end + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--cuts", required=True)
    r.add_argument("--arch", default="sm_90")
    r.add_argument("--only", nargs="*", default=[])
    r.add_argument("--exporters", nargs="*", default=list(EXPORTERS),
                   choices=list(EXPORTERS))
    r.add_argument("--budget", type=float, default=3600)
    r.add_argument("--redo", action="store_true")
    r.add_argument("--time", action="store_true",
                   help="also tune and time cuts against PyTorch's peers")
    r.add_argument("--tune-seconds", type=int, default=20)
    r.add_argument("--keep", action="store_true",
                   help="keep each unit's model, inputs and artifact")
    p = sub.add_parser("report")
    p.add_argument("results")
    p.add_argument("--readme")
    sub.add_parser("list")
    for child in ("torch-output", "torch-time"):
        t = sub.add_parser(child)
        t.add_argument("name")
        t.add_argument("in_dir")
        t.add_argument("path")
    e = sub.add_parser("export-one")
    e.add_argument("name")
    e.add_argument("exporter", choices=list(EXPORTERS))
    e.add_argument("path")
    a = ap.parse_args()
    if a.cmd == "run":
        a.cuts = os.path.abspath(a.cuts)
        cmd_run(a)
    elif a.cmd == "report":
        cmd_report(a)
    elif a.cmd == "list":
        print("\n".join(sorted(all_models())))
    elif a.cmd == "torch-output":
        torch_output(a.name, a.in_dir, a.path)
    elif a.cmd == "torch-time":
        torch_time(a.name, a.in_dir, a.path)
    else:
        export_one(a.name, a.exporter, a.path)


if __name__ == "__main__":
    main()

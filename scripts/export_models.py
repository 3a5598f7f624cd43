#!/usr/bin/env python3
"""Export the models cuts is tested and benchmarked on (needs torch,
torchvision, transformers, onnxscript: run it on the GPU machine).

Weights are random (fixed seeds). The benchmark suite (bench/run.py) builds
its models with the same functions (SUITE below), so the ONNX files it
exports and the PyTorch modules it times hold the same weights. With --strip, every float initializer of
more than 1024 elements is moved to external data and the data file is
dropped: what remains is the graph exactly as the exporter wrote it, small
enough to keep in the repository; test/models/inflate.py writes random
weights back so that the graph can be imported.

usage: export_models.py OUTDIR [--strip] [--only NAME ...]
"""
import argparse
import os
import sys
import traceback

# onnx and torch are imported where they are used, so that SUITE can be read
# on a machine without them (bench/run.py --dry-run).


def export_torchscript(model, args, path, opset, dynamic_batch=False):
    """dynamic_batch: axis 0 of the input and output is symbolic ("N"), for
    cuts compile --batch."""
    import torch
    axes = {"input": {0: "N"}, "output": {0: "N"}} if dynamic_batch else None
    torch.onnx.export(model, args, path, opset_version=opset, dynamo=False,
                      do_constant_folding=True, dynamic_axes=axes,
                      input_names=["input"], output_names=["output"])


def export_dynamo(model, args, path, opset, input_names,
                  dynamic_batch=False):
    """dynamic_batch: axis 0 of every input is torch.export's symbol (traced
    at batch 2: a batch of 1 would be specialised)."""
    import torch
    kw = {}
    if dynamic_batch:
        batch = torch.export.Dim("batch", min=1, max=4096)
        kw["dynamic_shapes"] = tuple({0: batch} for _ in args)
    prog = torch.onnx.export(model, args, dynamo=True, opset_version=opset,
                             input_names=input_names, **kw)
    prog.save(path)


def calibrate(model, size):
    """Sets every BatchNorm's running statistics to those of random images,
    as training would have. With the initial ones (mean 0, variance 1) the
    random weights leave MobileNetV2's logits near 1e-9, below fp16's
    smallest value, and overflow fp16 inside Inception-v3. The global RNG
    is left as it was (dropout runs in these train-mode passes)."""
    import torch
    for mod in model.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            mod.reset_running_stats()
            mod.momentum = None  # a cumulative average over the batches
    g = torch.Generator().manual_seed(1)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        model.train()
        for _ in range(4):
            model(torch.randn(8, 3, size, size, generator=g))
    model.eval()


def cnn(name, batch):
    import torch
    import torchvision
    torch.manual_seed(0)
    size = 299 if name == "inception_v3" else 224
    m = getattr(torchvision.models, name)(weights=None)
    calibrate(m, size)
    x = torch.randn(batch, 3, size, size)
    return m, (x,)


def bert(batch, seq, small):
    import torch
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    cfg = BertConfig() if not small else BertConfig(
        vocab_size=1000, hidden_size=128, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=512,
        max_position_embeddings=256)
    cfg._attn_implementation = "eager"
    m = BertModel(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.int64)
    return m, (ids, mask)


def gpt2(batch, seq):
    import torch
    from transformers import GPT2Config, GPT2Model
    torch.manual_seed(0)
    cfg = GPT2Config(use_cache=False)
    cfg._attn_implementation = "eager"
    m = GPT2Model(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (batch, seq))
    return m, (ids,)


class Spec:
    """One model of the benchmark suite: build(batch) -> (module, args) with
    fixed seeds, and how it is exported (the exporter its users would use)."""

    def __init__(self, build, exporter, opset, input_names, large_batch):
        self.build, self.exporter, self.opset = build, exporter, opset
        self.input_names, self.large_batch = input_names, large_batch

    def file_name(self, name, batch):
        tag = "ts" if self.exporter == "torchscript" else "dyn"
        return f"{name}_b{batch}_{tag}{self.opset}.onnx"

    def export(self, model, args, path):
        if self.exporter == "torchscript":
            export_torchscript(model, args, path, self.opset)
        else:
            export_dynamo(model, args, path, self.opset, self.input_names)


# The six models of issue 5: CNNs by the TorchScript exporter at opset 17,
# transformers (sequence 128, eager attention) by the dynamo exporter at 20.
SUITE = {
    "resnet50": Spec(lambda b: cnn("resnet50", b), "torchscript", 17, ["input"], 64),
    "mobilenet_v2": Spec(lambda b: cnn("mobilenet_v2", b), "torchscript", 17, ["input"], 64),
    "densenet121": Spec(lambda b: cnn("densenet121", b), "torchscript", 17, ["input"], 64),
    "inception_v3": Spec(lambda b: cnn("inception_v3", b), "torchscript", 17, ["input"], 64),
    "bert_base": Spec(lambda b: bert(b, 128, False), "dynamo", 20,
                      ["input_ids", "attention_mask"], 32),
    "gpt2": Spec(lambda b: gpt2(b, 128), "dynamo", 20, ["input_ids"], 32),
}


def strip(path):
    """Moves float initializers of > 1024 elements to external data in
    weights.bin (offsets kept, file not written)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    offset = 0
    for t in model.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        if t.data_type != onnx.TensorProto.FLOAT or n <= 1024:
            continue
        length = numpy_helper.to_array(t).nbytes
        t.ClearField("raw_data")
        t.ClearField("float_data")
        del t.external_data[:]
        for k, v in (("location", "weights.bin"), ("offset", str(offset)),
                     ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        t.data_location = onnx.TensorProto.EXTERNAL
        offset += (length + 63) // 64 * 64
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


MODELS = {
    "mobilenetv2_b1_ts17": lambda p: export_torchscript(*cnn("mobilenet_v2", 1), p, 17),
    "resnet50_b1_ts17": lambda p: export_torchscript(*cnn("resnet50", 1), p, 17),
    # Batch 64 and the other two CNNs of the suite: the performance model's
    # validation at batch 64 and `cuts explain` need only their graphs.
    "resnet50_b64_ts17": lambda p: export_torchscript(*cnn("resnet50", 64), p, 17),
    "mobilenetv2_b64_ts17": lambda p: export_torchscript(*cnn("mobilenet_v2", 64), p, 17),
    "densenet121_b1_ts17": lambda p: export_torchscript(*cnn("densenet121", 1), p, 17),
    "densenet121_b64_ts17": lambda p: export_torchscript(*cnn("densenet121", 64), p, 17),
    "inception_v3_b1_ts17": lambda p: export_torchscript(*cnn("inception_v3", 1), p, 17),
    "inception_v3_b64_ts17": lambda p: export_torchscript(*cnn("inception_v3", 64), p, 17),
    "bert_small_s128_dyn20": lambda p: export_dynamo(*bert(1, 128, True), p, 20,
                                                      ["input_ids", "attention_mask"]),
    "bert_base_s128_dyn20": lambda p: export_dynamo(*bert(1, 128, False), p, 20,
                                                     ["input_ids", "attention_mask"]),
    "gpt2_s128_dyn20": lambda p: export_dynamo(*gpt2(1, 128), p, 20, ["input_ids"]),
    # A symbolic batch (axis 0): what cuts compile --batch 1,8,32 serves.
    "resnet50_bN_ts17": lambda p: export_torchscript(*cnn("resnet50", 2), p, 17,
                                                     dynamic_batch=True),
    "vgg16_bN_ts17": lambda p: export_torchscript(*cnn("vgg16", 2), p, 17,
                                                  dynamic_batch=True),
    "bert_base_s128_bN_dyn20": lambda p: export_dynamo(
        *bert(2, 128, False), p, 20, ["input_ids", "attention_mask"],
        dynamic_batch=True),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--strip", action="store_true")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    failed = 0
    for name, fn in MODELS.items():
        if a.only and name not in a.only:
            continue
        path = os.path.join(a.outdir, name + ".onnx")
        try:
            fn(path)
            if a.strip:
                strip(path)
                for extra in os.listdir(a.outdir):
                    if extra.endswith(".data") or extra == "weights.bin":
                        os.remove(os.path.join(a.outdir, extra))
            print(f"{name}: {os.path.getsize(path)} bytes", flush=True)
        except Exception:
            failed += 1
            print(f"{name}: FAILED", flush=True)
            traceback.print_exc()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

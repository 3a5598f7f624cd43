#!/usr/bin/env python3
"""PyTorch's tensor parallelism on GPT-2 and BERT-base: the peer that
bench/tensor_parallel.sh sets cuts' rank plans against (issues 38, 36).

The models are GPT-2 small (pre-LN, causal, GELU tanh, 50257-word head) and
BERT-base (post-LN, GELU erf, pooler) as exported for cuts, with random
weights, batch 1, sequence 128, in --dtype (fp32: TF32 off, as cuts' fp32
plans).

  python3 bench/torch_tp.py --model gpt2 [--compile MODE]        # one GPU
  torchrun --nproc-per-node 2 bench/torch_tp.py --model gpt2 --tp [--async-tp]

--tp splits Megatron-style with sequence parallelism (DTensor): Q, K, V and
FFN1 by columns, the output projection and FFN2 by rows, layer norms on
sequence shards, so the collectives are all-gathers and reduce-scatters;
--async-tp adds PyTorch's async TP (symmetric memory, the all-gather
micro-pipelined with the matmul; needs --compile). Prints one line, or one
JSON object with --json: the median of --iters runs on rank 0.
"""
import argparse
import json
import os
import statistics

import torch
import torch.nn as nn
import torch.nn.functional as F

SPECS = {  # vocab, positions, causal, pre-LN, GELU approximation
    "gpt2": (50257, 1024, True, True, "tanh"),
    "bert": (30522, 512, False, False, "none"),
}
D, HEADS, LAYERS, SEQ = 768, 12, 12, 128


class Attention(nn.Module):
    def __init__(self, causal):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
        self.causal = causal

    def forward(self, x):
        b, t, _ = x.shape
        # -1 heads: a rank's share once Q, K and V are split by columns.
        q, k, v = (f(x).view(b, t, -1, D // HEADS).transpose(1, 2)
                   for f in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


class Mlp(nn.Module):
    def __init__(self, gelu):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.gelu = gelu

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate=self.gelu))


class Block(nn.Module):
    def __init__(self, causal, pre, gelu):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn, self.mlp, self.pre = Attention(causal), Mlp(gelu), pre

    def forward(self, x):
        if self.pre:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class Gather(nn.Module):
    """Identity; under --tp its input is gathered from the sequence shards."""

    def forward(self, x):
        return x


class Model(nn.Module):
    def __init__(self, name):
        super().__init__()
        vocab, positions, causal, pre, gelu = SPECS[name]
        self.name = name
        self.tok, self.pos = nn.Embedding(vocab, D), nn.Embedding(positions, D)
        self.blocks = nn.ModuleList(
            Block(causal, pre, gelu) for _ in range(LAYERS))
        self.norm = nn.LayerNorm(D)
        self.gather = Gather()
        self.head = (nn.Linear(D, vocab, bias=False) if name == "gpt2"
                     else nn.Linear(D, D))
        self.shard, self.shards = 0, 1  # this rank's sequence shard

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1],
                                                  device=ids.device))
        if self.name == "bert":
            x = self.norm(x)  # BERT normalises the embeddings
        x = x.chunk(self.shards, dim=1)[self.shard]
        for b in self.blocks:
            x = b(x)
        if self.name == "gpt2":
            x = self.norm(x)
        x = self.gather(x)
        if self.name == "gpt2":
            return self.head(x)
        return x, torch.tanh(self.head(x[:, 0]))


def parallelize(model, mesh):
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel,
                                                   PrepareModuleInput,
                                                   RowwiseParallel,
                                                   SequenceParallel,
                                                   parallelize_module)
    gather = PrepareModuleInput(input_layouts=(Shard(1),),
                                desired_input_layouts=(Replicate(),),
                                use_local_output=True)
    for b in model.blocks:
        parallelize_module(b, mesh, {
            "ln1": SequenceParallel(use_local_output=True),
            "ln2": SequenceParallel(use_local_output=True),
            "attn": gather, "mlp": gather,
            "attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(),
            "attn.v": ColwiseParallel(),
            "attn.o": RowwiseParallel(output_layouts=Shard(1)),
            "mlp.fc1": ColwiseParallel(),
            "mlp.fc2": RowwiseParallel(output_layouts=Shard(1)),
        })
    plan = {"gather": gather}
    if model.name == "gpt2":
        plan["norm"] = SequenceParallel(use_local_output=True)
    parallelize_module(model, mesh, plan)
    model.shard, model.shards = mesh.get_local_rank(), mesh.size()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(SPECS), default="gpt2")
    ap.add_argument("--tp", action="store_true")
    ap.add_argument("--async-tp", action="store_true")
    ap.add_argument("--compile", default="none",
                    choices=["none", "default", "reduce-overhead",
                             "max-autotune-no-cudagraphs"])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dtype", choices=["fp32", "fp16", "bf16"],
                    default="fp32")
    a = ap.parse_args()
    if a.async_tp and (not a.tp or a.compile == "none"):
        ap.error("--async-tp needs --tp and --compile")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rank, world = 0, 1
    if a.tp:
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        mesh = init_device_mesh("cuda", (world,))
    torch.manual_seed(0)
    dtype = {"fp32": torch.float32, "fp16": torch.float16,
             "bf16": torch.bfloat16}[a.dtype]
    model = Model(a.model).cuda().to(dtype).eval()
    if a.tp:
        parallelize(model, mesh)
        if a.async_tp:
            from torch.distributed._symmetric_memory import \
                enable_symm_mem_for_group
            torch._inductor.config._micro_pipeline_tp = True
            enable_symm_mem_for_group(dist.group.WORLD.group_name)
    if a.compile != "none":
        model = torch.compile(model, mode=a.compile)
    ids = torch.randint(0, SPECS[a.model][0] - 1, (1, SEQ), device="cuda")
    times = []
    with torch.inference_mode():
        for i in range(10 + a.iters):
            start, stop = (torch.cuda.Event(enable_timing=True)
                           for _ in range(2))
            if a.tp:
                dist.barrier()
            start.record()
            model(ids)
            stop.record()
            torch.cuda.synchronize()
            if i >= 10:
                times.append(start.elapsed_time(stop))
    mode = ("async TP" if a.async_tp else "TP") + " %d" % world if a.tp \
        else "one GPU"
    row = {"model": a.model, "mode": mode, "compile": a.compile,
           "dtype": a.dtype,
           "median_ms": statistics.median(times), "min_ms": min(times),
           "torch": torch.__version__}
    if rank == 0:
        print(json.dumps(row) if a.json else
              "torch %s %s %s (%s, compile %s): median %.3f ms, min %.3f ms"
              % (row["torch"], a.model, a.dtype, mode, a.compile,
                 row["median_ms"],
               row["min_ms"]))
    if a.tp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# cuSync's microbenchmark on a GPU host: the GPT-3 and LLaMA MLP GEMM chains
# (fp32 SIMT and fp16 on tensor cores) and the ResNet-38 / VGG-19 conv
# chains, each against stream order and PDL, each policy on two streams and
# over PDL (and the MLPs against cuBLAS back to back, the fp16 ones over 3
# tilings of each GEMM; tools/cuts-sync-bench), then
# compute-sanitizer's racecheck, synccheck and memcheck on a synchronised
# conv chain and tensor-core chain. Output in bench/out/sync-<gpu>.txt.
#
#   bench/sync.sh [path to cuts-sync-bench, default .gpu-bin/bin/...] [arch]
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.gpu-bin/bin/cuts-sync-bench}
ARCH=${2:-h200}
mkdir -p bench/out
OUT=bench/out/sync-$ARCH.txt
{
  nvidia-smi -L
  for m in gpt3 llama; do
    timeout 300 "$BIN" --arch "$ARCH" --model $m \
      --rows 1,64,128,256,512,1024,2048 2>/dev/null
    timeout 300 "$BIN" --arch "$ARCH" --model $m --fp16 --rows 1,64,128 \
      2>/dev/null
    # Every pair of the first 3 block shapes: a line "best" per row size.
    timeout 300 "$BIN" --arch "$ARCH" --model $m --fp16 --tilings 3 \
      --rows 256,512,1024,2048 2>/dev/null
  done
  for m in conv64 conv128 conv256 conv512; do
    timeout 120 "$BIN" --arch "$ARCH" --model $m --rows 1,2,4,8,16 2>/dev/null
  done
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # racecheck on the tensor-core chain runs past 100 s: sync and memory only.
  for tool in racecheck synccheck memcheck; do
    chains=("conv256 --rows 1")
    [ $tool = racecheck ] || chains+=("llama --fp16 --rows 128")
    for chain in "${chains[@]}"; do
      timeout 200 "$CS" --tool $tool --error-exitcode 9 "$BIN" --arch "$ARCH" \
        --model $chain --iters 1 > bench/out/sanitize-$tool.log 2>&1
      echo "compute-sanitizer $tool on $chain: exit $? ($(grep -E 'SUMMARY' \
        bench/out/sanitize-$tool.log | tail -1))"
    done
  done
} | tee "$OUT"

#!/usr/bin/env bash
# On the GPU host (after scripts/package_gpu.sh here, with .gpu-bin
# carried): whether the tuner times the fastest tensor-core sets. An MLP of
# BERT-base's linear shapes (scripts/tc_ranking.py) at batch 1 and 32 is
# compiled twice, with the default --tune-candidates and with TOP (48) sets
# a group; `cuts tune` times every candidate in the model (16-bit output,
# bias, operands from DRAM) and tc_ranking.py reports, per layer, cuBLASLt,
# the fastest generated set and its place, and the fastest of the default's.
# PRECISION=bf16 for bf16 (default fp16).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/tc-ranking}
mkdir -p "$OUT"
cuts=$PWD/.gpu-bin/bin/cuts
p=${PRECISION:-fp16}
python3 scripts/tc_ranking.py models "$OUT"
for b in 1 32; do
  for n in default all; do
    k=$([ $n = all ] && echo "${TOP:-48}" || echo 8)
    $cuts compile "$OUT/mlp_b$b.onnx" --arch sm_90 -o "$OUT/b$b-$n" \
      --precision $p --io-precision $p --tune-candidates $k \
      --candidates "$OUT/b$b-$n/candidates.json" | tail -1
  done
  $cuts tune "$OUT/b$b-all" --cache "$OUT/cache.json" | tail -1
  echo "== batch $b, $p"
  python3 scripts/tc_ranking.py report "$OUT/b$b-all/candidates.json" \
    "$OUT/b$b-default/candidates.json" "$OUT/cache.json"
done

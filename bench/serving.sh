#!/usr/bin/env bash
# Batch profiles and dynamic batching on a GPU host: ResNet-50 and BERT-base
# (test/models/exported/*_bN_*: a symbolic batch, random weights) compiled
# in fp16 with --batch 1,8,32; cuts bench --batch B --graph (device buffers)
# and cuts bench --gpus 0 --batch B (host buffers, as a server runs) for
# every batch 1..32 (a padded batch against its profile), then
# examples/server with dynamic batching against one request a run
# (--max-batch 1) at several arrival rates. Output in
# bench/out/serving-<arch>.txt.
#
#   bench/serving.sh [directory of cuts and cuts-server, default .gpu-bin/bin] [arch]
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.gpu-bin/bin}
ARCH=${2:-h200}
W=${WORK:-/tmp/cuts-serving}
source bench/prepare.sh
mkdir -p bench/out "$W"
OUT=bench/out/serving-$ARCH.txt
{
  nvidia-smi -L
  for spec in "resnet50_bN_ts17:1000 4000 8000 16000" \
              "bert_base_s128_bN_dyn20:500 1500 3000 6000"; do
    m=${spec%%:*} rates=${spec#*:}
    compile_model "$W" "$m" "$W/$m" --arch "$ARCH" --precision fp16 \
      --batch 1,8,32 || continue
    for b in $(seq 1 32); do
      echo "$m batch $b: $("$BIN/cuts" bench "$W/$m/model.cuts" --batch $b \
        --graph --iters 50 | sed 's/.*: median/median/')"
      # A server's run: host buffers in and out, two in flight; a padded
      # batch's rows go straight into the profile's buffers (no extra copy).
      echo "$m batch $b host: $("$BIN/cuts" bench "$W/$m/model.cuts" \
        --gpus 0 --batch $b --iters 50 | head -1 | sed 's/.*batch/batch/')"
    done
    for rate in $rates; do
      n=$((rate < 2000 ? 2000 : rate))
      for mb in 32 1; do
        echo "$m rate $rate: $(timeout 200 "$BIN/cuts-server" "$W/$m/model.cuts" \
          --workers 2 --requests $n --rate "$rate" --graph --max-batch $mb | tail -1)"
      done
    done
  done
} 2>&1 | tee "$OUT"

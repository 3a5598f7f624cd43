#!/usr/bin/env bash
# Data-parallel serving (issues 34 and 36): ResNet-50, VGG-16 and BERT-base
# (test/models/exported/*_bN_*, random weights) compiled in fp16 with batch
# profiles for every slice size, then `cuts bench --gpus` at batches 64-512
# on 1, 2, 4 and 8 GPUs: the CPU-centric split with pre-loading, without
# it, and the master-GPU baseline, pinned host buffers in and out, two runs
# in flight. Resumable: a cell already in the JSON lines file is skipped.
# Output in bench/out/dataparallel-<arch>.jsonl (each cell's bench JSON with
# its data-movement breakdown), a table of throughput and scaling (against
# one GPU) and bench/out/dataparallel-<arch>.png (the breakdown as stacked
# bars, where matplotlib is installed).
#
#   bench/dataparallel.sh [directory of cuts, default .gpu-bin/bin] [arch]
#   GPUS="0 0,1 0,1,2,3 0,1,2,3,4,5,6,7" BATCHES="64 128 256 512"
#   (one GPU: GPUS="0 0,0" exercises the paths on a repeated device list)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.gpu-bin/bin}
ARCH=${2:-h200}
W=${WORK:-/tmp/cuts-dataparallel}
source bench/device_lists.sh
source bench/prepare.sh
GPUS=${GPUS:-0 $(device_lists)}
BATCHES=${BATCHES:-64 128 256 512}
MODELS=${MODELS:-resnet50_bN_ts17 vgg16_bN_ts17 bert_base_s128_bN_dyn20}
OUT=bench/out/dataparallel-$ARCH.jsonl
mkdir -p bench/out "$W"
touch "$OUT"
for m in $MODELS; do
  compile_model "$W" "$m" "$W/$m" --arch "$ARCH" --precision fp16 \
    --batch 8,16,32,64,128,256,512 || continue
  for g in $GPUS; do
    for b in $BATCHES; do
      for mode in split no-preload master; do
        key="\"cell\": \"$m $g $b $mode\""
        grep -qF "$key" "$OUT" && continue
        flag=""
        [ $mode = master ] && flag=--master-gpu
        [ $mode = no-preload ] && flag=--no-preload
        r=$("$BIN/cuts" bench "$W/$m/model.cuts" --gpus "$g" --batch "$b" \
              --iters 20 --json $flag 2>&1) || { echo "$m $g $b $mode: $r" | tail -1; continue; }
        python3 -c "import json,sys; j=json.load(sys.stdin); j.update(cell='$m $g $b $mode', name='$m', gpus='$g', mode='$mode'); print(json.dumps(j))" <<<"$r" >>"$OUT"
      done
    done
  done
done
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
base = {(r["name"], r["batch"], r["mode"]): r["throughput_per_s"]
        for r in rows if r["gpus"] == "0"}
print(f"{'model':24s} {'gpus':16s} {'batch':>5s} {'split/s':>9s} {'no-pre/s':>9s} "
      f"{'master/s':>9s} {'scaling':>8s} {'hidden':>7s}")
cells = {}
for r in rows:
    cells.setdefault((r["name"], r["gpus"], r["batch"]), {})[r["mode"]] = r
for (m, g, b), v in sorted(cells.items()):
    n = len(g.split(","))
    t = {k: x["throughput_per_s"] for k, x in v.items()}
    one = base.get((m, b, "split"))
    scale = t.get("split", 0) / (n * one) if one else float("nan")
    hidden = v["split"]["h2d_hidden_fraction"] if "split" in v else float("nan")
    print(f"{m:24s} {g:16s} {b:5d} {t.get('split', 0):9.0f} {t.get('no-preload', 0):9.0f} "
          f"{t.get('master', 0):9.0f} {scale:8.2f} {100 * hidden:6.0f}%")
PY
python3 bench/plot_movement.py "$OUT" "${OUT%.jsonl}.png" || true

#!/usr/bin/env bash
# Data-parallel serving (issues 34 and 36): ResNet-50 and BERT-base
# (test/models/exported/*_bN_*, random weights) compiled in fp16 with batch
# profiles for every slice size, then `cuts bench --gpus` at batches 64-512
# on 1, 2, 4 and 8 GPUs: the CPU-centric split against the master-GPU
# baseline, host buffers in and out. Resumable: a cell already in the JSON
# lines file is skipped. Output in bench/out/dataparallel-<arch>.jsonl and a
# table of throughput and scaling (against one GPU) at the end.
#
#   bench/dataparallel.sh [directory of cuts, default .gpu-bin/bin] [arch]
#   GPUS="0 0,1 0,1,2,3 0,1,2,3,4,5,6,7" BATCHES="64 128 256 512"
#   (one GPU: GPUS="0 0,0" exercises the paths on a repeated device list)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.gpu-bin/bin}
ARCH=${2:-h200}
W=${WORK:-/tmp/cuts-dataparallel}
n=$(nvidia-smi -L | wc -l)
default="0"
for g in 2 4 8; do
  [ "$n" -ge $g ] && default="$default $(seq -s, 0 $((g - 1)))"
done
GPUS=${GPUS:-$default}
BATCHES=${BATCHES:-64 128 256 512}
MODELS=${MODELS:-resnet50_bN_ts17 bert_base_s128_bN_dyn20}
OUT=bench/out/dataparallel-$ARCH.jsonl
mkdir -p bench/out "$W"
touch "$OUT"
for m in $MODELS; do
  [ -d "$W/in/$m" ] || python3 test/models/inflate.py \
    "test/models/exported/$m.onnx" "$W/in/$m" >/dev/null
  [ -f "$W/$m/model.cuts" ] || "$BIN/cuts" compile "$W/in/$m/$m.onnx" \
    --arch "$ARCH" --precision fp16 -o "$W/$m" \
    --batch 8,16,32,64,128,256,512 >"$W/$m.log" 2>&1 || { tail -3 "$W/$m.log"; continue; }
  for g in $GPUS; do
    for b in $BATCHES; do
      for mode in split master; do
        key="\"model\": \"$W/$m/model.cuts\", \"gpus\": \"$g\", \"batch\": $b, \"mode\": \"$mode\""
        grep -qF "$key" "$OUT" && continue
        flag=""; [ $mode = master ] && flag=--master-gpu
        r=$("$BIN/cuts" bench "$W/$m/model.cuts" --gpus "$g" --batch "$b" \
              --iters 20 --json $flag 2>&1) || { echo "$m $g $b $mode: $r" | tail -1; continue; }
        t=$(python3 -c "import json,sys; print(json.load(sys.stdin)['throughput_per_s'])" <<<"$r")
        echo "{$key, \"throughput_per_s\": $t}" >>"$OUT"
      done
    done
  done
done
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
base = {(r["model"], r["batch"], r["mode"]): r["throughput_per_s"]
        for r in rows if r["gpus"] == "0"}
print(f"{'model':28s} {'gpus':16s} {'batch':>5s} {'split/s':>9s} {'master/s':>9s} {'scaling':>8s}")
cells = {}
for r in rows:
    cells.setdefault((r["model"], r["gpus"], r["batch"]), {})[r["mode"]] = r["throughput_per_s"]
for (m, g, b), v in sorted(cells.items()):
    n = len(g.split(","))
    one = base.get((m, b, "split"))
    scale = v.get("split", 0) / (n * one) if one else float("nan")
    print(f"{m.split('/')[-2]:28s} {g:16s} {b:5d} {v.get('split', 0):9.0f} {v.get('master', 0):9.0f} {scale:8.2f}")
PY

#!/usr/bin/env bash
# Weight distribution on a device list (issues 34 and 36): ResNet-50,
# VGG-16 and BERT-base (random weights) compiled in fp32 with the weight
# codecs, loaded with `cuts bench --gpus`, the entries after the first
# given the weights from the host, by peer copies or by an NCCL broadcast,
# and the last two as they are, 3:1 compressed (ScaleDNN) or bf16
# truncated. Each cell's time per entry (encoding, sending and decoding),
# the bytes sent and the codec's share. Resumable: a cell already in the
# JSON lines file is skipped. Output in bench/out/broadcast-<arch>.jsonl and
# a table.
#
#   bench/broadcast.sh [directory of cuts, default .gpu-bin/bin] [arch]
#   GPUS="0,1 0,1,2,3 0,1,2,3,4,5,6,7" (one GPU: GPUS="0,0"; NCCL then
#   fails, one rank a device, and its cells are reported missing)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.gpu-bin/bin}
ARCH=${2:-h200}
W=${WORK:-/tmp/cuts-broadcast}
source bench/device_lists.sh
source bench/prepare.sh
lists=$(device_lists)
GPUS=${GPUS:-${lists:-0,0}}
MODELS=${MODELS:-resnet50_bN_ts17 vgg16_bN_ts17 bert_base_s128_bN_dyn20}
OUT=bench/out/broadcast-$ARCH.jsonl
mkdir -p bench/out "$W"
touch "$OUT"
for m in $MODELS; do
  compile_model "$W" "$m" "$W/$m" --arch "$ARCH" --batch 8 \
    --weight-codecs || continue
  for g in $GPUS; do
    for cell in host:none peer:none peer:3to1 peer:bf16 nccl:none nccl:3to1 nccl:bf16; do
      src=${cell%:*} codec=${cell#*:}
      key="\"cell\": \"$m $g $cell\""
      grep -qF "$key" "$OUT" && continue
      r=$("$BIN/cuts" bench "$W/$m/model.cuts" --gpus "$g" --iters 1 \
            --warmup 1 --json --weights "$src" --weight-codec "$codec" 2>&1) ||
        { echo "$m $g $cell: $(echo "$r" | tail -1)"; continue; }
      python3 -c "import json,sys; j=json.load(sys.stdin); j.update(cell='$m $g $cell', name='$m', gpus='$g', source='$src', codec='$codec'); print(json.dumps(j))" <<<"$r" >>"$OUT"
    done
  done
done
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'model':24s} {'gpus':16s} {'source':6s} {'codec':5s} {'MiB sent':>9s} "
      f"{'ratio':>6s} {'max ms':>8s} {'codec ms':>9s} {'GB/s':>7s}")
for r in sorted(rows, key=lambda r: (r["name"], r["gpus"], r["source"], r["codec"])):
    mv = r["movement"][1:] or r["movement"]
    sent = max(m["broadcast_bytes"] for m in mv)
    ms = max(m["broadcast_ms"] for m in mv)
    codec = max(m["codec_ms"] for m in mv)
    w = r["weight_bytes"]
    print(f"{r['name']:24s} {r['gpus']:16s} {r['source']:6s} {r['codec']:5s} "
          f"{sent / 2**20:9.1f} {w / sent if sent else 0:6.2f} {ms:8.2f} "
          f"{codec:9.2f} {w / (ms * 1e6) if ms else 0:7.1f}")
PY

#!/usr/bin/env bash
# Copy-engine collectives against NCCL (issues 38 and 36; ConCCL's Figure
# 9): all-gather, all-to-all and reduce-scatter from 64 KiB to 1 GiB (what
# each rank receives) on every device list, with `cuts collectives`; each
# result is checked before it is timed. Resumable: a list already in the
# JSON lines file is skipped. Output in bench/out/collectives-<arch>.jsonl
# and a table with the crossover: the smallest size from which the copy
# engines' bus bandwidth stays at or above NCCL's.
#
#   bench/collectives.sh [directory of cuts, default .gpu-bin/bin] [arch]
#   GPUS="0,1 0,1,2,3 0,1,2,3,4,5,6,7" (one GPU: GPUS="0,0"; NCCL then
#   needs distinct devices and only the copy engines are measured)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.gpu-bin/bin}
ARCH=${2:-h200}
source bench/device_lists.sh
lists=$(device_lists)
GPUS=${GPUS:-${lists:-0,0}}
SIZES=${SIZES:-64K,256K,1M,4M,16M,64M,256M,1G}
OUT=bench/out/collectives-$ARCH.jsonl
mkdir -p bench/out
touch "$OUT"
for g in $GPUS; do
  grep -qF "\"gpus\": \"$g\"" "$OUT" && continue
  r=$("$BIN/cuts" collectives --gpus "$g" --sizes "$SIZES" --iters 10 \
        --json) || { echo "collectives on $g failed"; continue; }
  python3 -c "import json,sys; j=json.load(sys.stdin); j['gpus']='$g'; print(json.dumps(j))" <<<"$r" >>"$OUT"
done
python3 - "$OUT" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    j = json.loads(line)
    print(f"GPUs {j['gpus']}")
    print(f"  {'collective':15s} {'bytes':>12s} {'ce GB/s':>9s} {'nccl GB/s':>10s}")
    cells = {}
    for r in j["rows"]:
        cells.setdefault((r["collective"], r["bytes"]), {})[r["engine"]] = r["busbw_gbs"]
    for c in sorted({k[0] for k in cells}):
        sizes = sorted(b for (x, b) in cells if x == c)
        cross = None
        for b in sizes:
            v = cells[(c, b)]
            print(f"  {c:15s} {b:12.0f} {v.get('ce', 0):9.1f} {v.get('nccl', 0):10.1f}")
        if all("nccl" in cells[(c, b)] for b in sizes):
            for i, b in enumerate(sizes):
                if all(cells[(c, x)]["ce"] >= cells[(c, x)]["nccl"] for x in sizes[i:]):
                    cross = b
                    break
            print(f"  {c}: copy engines at or above NCCL from "
                  f"{'%.0f bytes' % cross if cross else 'no size'}")
PY

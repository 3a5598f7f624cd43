#!/usr/bin/env bash
# On the GPU host (with .gpu-bin carried): each node of a model's replayed
# CUDA graph timed on the GPU (CUPTI, scripts/cupti_trace.cpp), in order,
# with the gap before it, as `scripts/graph_trace.py` prints it.
#   scripts/gpu_trace.sh MODEL.cuts [ITERS]
# The trace and the table go to $OUT (default /tmp/trace).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/trace}
mkdir -p "$OUT"
lib=$PWD/.gpu-bin/lib/libcuts_trace.so
[ -f "$lib" ] || { echo "no $lib: run scripts/package_gpu.sh"; exit 1; }
CUDA_INJECTION64_PATH=$lib CUPTI_TRACE_OUT=$OUT/trace.csv \
  .gpu-bin/bin/cuts bench "$1" --iters "${2:-30}" --graph | grep median
python3 scripts/graph_trace.py "$OUT/trace.csv" --json "$OUT/trace.json" |
  tee "$OUT/table.txt"

#!/usr/bin/env bash
# On the GPU host: the same parameter sets timed under two cuts builds, for a
# change that leaves the performance model alone (an emitter change, say), so
# that `cuts validate` draws the same sample under both. scripts/gpu_validate.sh
# runs once with each build, $A (the base, .gpu-bin-base/bin/cuts, a copy of
# .gpu-bin with another cuts) and $B (.gpu-bin/bin/cuts); then
# scripts/validate_ab.py prints per op the sets both timed, the fastest under
# each, and the median, p10 and p90 of B/A over those sets. $MODELS (default:
# DenseNet-121's concats and ResNet-50's simple ops), $BATCH (64), $SAMPLES,
# $MAX_SECONDS and the *_OPS lists are gpu_validate.sh's. Where the two builds
# rank differently, only the sets both drew are compared.
# Each side's reports and caches go to $OUT/A and $OUT/B, the table to
# $OUT/ab.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/same-set-ab}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A bin=([A]=${A:-$PWD/.gpu-bin-base/bin/cuts} [B]=${B:-$PWD/.gpu-bin/bin/cuts})
export MODELS=${MODELS:-densenet121-simple resnet50-simple} BATCH=${BATCH:-64}
for side in A B; do
  CUTS=${bin[$side]} WORK=$work/$side OUT=$OUT/$side \
    scripts/gpu_validate.sh > "$OUT/$side.log" 2>&1
  grep "tuned in" "$OUT/$side.log"
done
python3 scripts/validate_ab.py "$OUT/A" "$OUT/B" $MODELS | tee "$OUT/ab.txt"

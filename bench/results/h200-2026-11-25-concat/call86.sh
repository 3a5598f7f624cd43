#!/usr/bin/env bash
# Call 86: simple ops validated (B: Pick concat, concat read once), then
# DenseNet-121 b64 A/B (A: HEAD d652715's build).
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
t0=$(date +%s)
BATCH=64 MODELS="densenet121-simple resnet50-simple" MAX_SECONDS=${MAX_SECONDS:-90} OUT=$OUT/val \
  scripts/gpu_validate.sh > $OUT/val.log 2>&1
grep -E "tuned in|kept|Spearman|fastest" $OUT/val.log | cut -c1-220 | tail -30
echo "validate: $(( $(date +%s) - t0 )) s"
MODELS="${AB_MODELS:-densenet121_b64_ts17}" TUNE_SECONDS=60 OUT=/tmp/ab scripts/gpu_model_ab.sh > $OUT/ab.log 2>&1
cat /tmp/ab/table.txt
for f in /tmp/ab/*/kernels.txt; do echo "$f $(awk 'NR>3 && /concat/ && /elementwise chain/ {a+=$2;n++} END{print n, a}' $f)"; done
rm -rf /tmp/ab/*/out
tar czf $OUT/ab.tgz -C /tmp ab
tar czf $OUT/val.tgz -C $OUT val && rm -rf $OUT/val
echo "total: $(( $(date +%s) - t0 )) s"

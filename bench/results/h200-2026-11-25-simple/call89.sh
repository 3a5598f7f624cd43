#!/usr/bin/env bash
# Call 89: the streaming bound (B, this session) validated on the simple ops
# (a fresh sample: half kept under B), then DenseNet-121 and ResNet-50 b64
# A/B (A: 15cb99d's build, the bound before it).
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
t0=$(date +%s)
BATCH=64 MODELS="densenet121-simple resnet50-simple" MAX_SECONDS=${MAX_SECONDS:-70} OUT=$OUT/val \
  scripts/gpu_validate.sh > $OUT/val.log 2>&1
grep -E "tuned in|kept|Spearman|fastest" $OUT/val.log | cut -c1-220 | tail -30
echo "validate: $(( $(date +%s) - t0 )) s"
MODELS="${AB_MODELS:-densenet121_b64_ts17 resnet50_b64_ts17}" TUNE_SECONDS=45 OUT=/tmp/ab \
  scripts/gpu_model_ab.sh > $OUT/ab.log 2>&1
cat /tmp/ab/table.txt
for f in /tmp/ab/*/kernels.txt; do echo "$f $(awk 'NR>3 && /elementwise chain/ {a+=$2;n++} END{print n, a}' $f)"; done
rm -rf /tmp/ab/*/out
tar czf $OUT/ab.tgz -C /tmp ab
tar czf $OUT/val.tgz -C $OUT val && rm -rf $OUT/val
echo "total: $(( $(date +%s) - t0 )) s"

#!/usr/bin/env bash
# Call 87: A/B of the Pick concat on $AB_MODELS (A: HEAD d652715's build).
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
t0=$(date +%s)
MODELS="${AB_MODELS}" TUNE_SECONDS=60 OUT=/tmp/ab timeout 520 scripts/gpu_model_ab.sh > $OUT/ab.log 2>&1
cat /tmp/ab/table.txt
for f in /tmp/ab/*/kernels.txt; do echo "$f $(awk 'NR>3 && /concat/ && /elementwise chain/ {a+=$2;n++} END{print n, a}' $f)"; done
rm -rf /tmp/ab/*/out
tar czf $OUT/ab.tgz -C /tmp ab
echo "total: $(( $(date +%s) - t0 )) s"

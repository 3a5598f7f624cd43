#!/usr/bin/env bash
# Call 91: the streaming bound counting requests as the emitter makes them
# and L2 transactions of at least two sectors (B, this session) validated on
# a fresh sample of six elementwise ops (half kept under B), then
# DenseNet-121, ResNet-50 and MobileNetV2 at batch 64 A/B (A: 2ba4ac9's
# build: the same emitter, the bound before).
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
t0=$(date +%s)
BATCH=64 MODELS="densenet121-simple resnet50-simple" MAX_SECONDS=${MAX_SECONDS:-60} OUT=$OUT/val \
  DENSENET_SIMPLE_OPS=denseblock1/Concat,denseblock1/denselayer3/Concat,denseblock2/Concat,denseblock3/Concat \
  RESNET_SIMPLE_OPS=layer1.0/Add,layer3.0/Add \
  scripts/gpu_validate.sh > $OUT/val.log 2>&1
grep -E "tuned in|fastest kept|Spearman" $OUT/val.log | cut -c1-220
echo "validate: $(( $(date +%s) - t0 )) s"
models="densenet121_b64_ts17 resnet50_b64_ts17"
[ $(( $(date +%s) - t0 )) -lt 150 ] && models="$models mobilenetv2_b64_ts17"
MODELS="$models" TUNE_SECONDS=45 OUT=/tmp/ab scripts/gpu_model_ab.sh > $OUT/ab.log 2>&1
cat /tmp/ab/table.txt
for f in /tmp/ab/*/kernels.txt; do echo "$f $(awk 'NR>3 && /elementwise chain/ {a+=$2;n++} END{print n, a}' $f)"; done
rm -rf /tmp/ab/*/out
tar czf $OUT/ab.tgz -C /tmp ab
tar czf $OUT/val.tgz -C $OUT val && rm -rf $OUT/val
echo "total: $(( $(date +%s) - t0 )) s"

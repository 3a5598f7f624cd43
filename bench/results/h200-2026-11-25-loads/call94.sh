#!/usr/bin/env bash
# Call 94: issue 3's named ops validated under this session's build (the
# conv and matmul bounds are call 85's; the emitter's vector stores now go
# through __stwb in every epilogue): ResNet-50's convs and MobileNetV2's
# depthwise convs at batch 64, BERT-base's GEMMs. Fresh samples, half kept.
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
t0=$(date +%s)
BATCH=64 MODELS="mobilenetv2 resnet50 bert" MAX_SECONDS=${MAX_SECONDS:-140} OUT=$OUT/val \
  scripts/gpu_validate.sh > $OUT/val.log 2>&1
grep -E "tuned in|fastest kept|Spearman|PRUNED" $OUT/val.log | cut -c1-200
tar czf $OUT/val.tgz -C $OUT val && rm -rf $OUT/val
echo "total: $(( $(date +%s) - t0 )) s"

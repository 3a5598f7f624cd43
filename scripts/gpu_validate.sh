#!/usr/bin/env bash
# On the GPU host (with .gpu-bin carried): issue 3's validation of the
# performance model. For each of $MODELS (bert: BERT-base's GEMMs;
# mobilenetv2: MobileNetV2's depthwise convs; mobilenetv2-1x1: five of its
# 1x1 convs, the ops named in $MNV2_OPS; resnet50: ResNet-50's convs,
# the ops named in $RESNET_OPS; resnet50-simple: its pools and two Adds
# ($RESNET_SIMPLE_OPS); densenet121-simple: DenseNet-121's block concats
# and a pool ($DENSENET_SIMPLE_OPS); batch $BATCH (1; the CNNs also 64), random
# weights), `cuts validate` samples $SAMPLES (200) parameter sets per
# distinct op (half kept, half spread over the pruned ranking), `cuts tune`
# times them, and scripts/validate_report.py reports per op whether the
# fastest was kept, the fastest and fastest kept sets' parameters, and the
# Spearman correlation of PUL with measured throughput. Reports and caches go to $OUT/<model>.
# Resumable across calls: with $RESUME holding <model>/cache.json from an
# earlier call, only what it lacks is timed; $MAX_SECONDS bounds each tune.
# $CUTS (default .gpu-bin/bin/cuts) and $WORK (/tmp/val) pick another
# binary and work folder (scripts/gpu_same_set_ab.sh: the same sets under two
# builds).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/validate}
mkdir -p "$OUT"
cuts=${CUTS:-$PWD/.gpu-bin/bin/cuts}
w=${WORK:-/tmp/val}
ops=${RESNET_OPS:-layer1.0/conv1,layer1.0/conv2,layer2.1/conv2,layer3.1/conv2,layer3.1/conv3,layer4.1/conv2}
# Five of MobileNetV2's 1x1 convs: features.1's projection and four expansions.
mnv2ops=${MNV2_OPS:-features.1/conv/conv.1/,features.2/conv/conv.0/conv.0.0/,features.3/conv/conv.0/conv.0.0/,features.5/conv/conv.0/conv.0.0/,features.8/conv/conv.0/conv.0.0/}
for m in ${MODELS:-bert mobilenetv2 resnet50}; do
  case $m in
    bert) src=bert_base_s128_dyn20; args="--kinds matmul" ;;
    mobilenetv2) src=mobilenetv2_b${BATCH:-1}_ts17; args="--kinds depthwise" ;;
    mobilenetv2-1x1) src=mobilenetv2_b${BATCH:-1}_ts17; args="--kinds conv --ops $mnv2ops" ;;
    resnet50) src=resnet50_b${BATCH:-1}_ts17; args="--kinds conv --ops $ops" ;;
    resnet50-simple) src=resnet50_b${BATCH:-1}_ts17
      args="--kinds pool,reduction,elementwise --ops ${RESNET_SIMPLE_OPS:-/maxpool/,/avgpool/,layer1.0/Add,layer3.0/Add}" ;;
    densenet121-simple) src=densenet121_b${BATCH:-1}_ts17
      args="--kinds pool,elementwise --ops ${DENSENET_SIMPLE_OPS:-denseblock1/Concat,denseblock2/Concat,denseblock3/Concat,denseblock4/Concat,denseblock1/denselayer3/Concat,transition1/pool/}" ;;
    *) echo "unknown model $m"; continue ;;
  esac
  python3 test/models/inflate.py test/models/exported/$src.onnx /tmp/$src >/dev/null
  mkdir -p $w/$m $OUT/$m
  [ -n "${RESUME:-}" ] && [ -f $RESUME/$m/cache.json ] && cp $RESUME/$m/cache.json $w/$m/
  $cuts validate /tmp/$src/$src.onnx --arch h200 -o $w/$m $args \
    --samples ${SAMPLES:-200} | tail -1
  /usr/bin/time -f "$m: tuned in %e s" $cuts tune $w/$m --cache $w/$m/cache.json \
    --target-ms ${TARGET_MS:-1} --max-seconds ${MAX_SECONDS:-100000} | tail -2
  cp $w/$m/cache.json $w/$m/validation.json $OUT/$m/
  python3 scripts/validate_report.py $w/$m | tail -30
  cp $w/$m/report.json $OUT/$m/
done

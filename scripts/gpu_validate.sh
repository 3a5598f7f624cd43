#!/usr/bin/env bash
# On the GPU host (with .gpu-bin carried): issue 3's validation of the
# performance model. For BERT-base's GEMMs, MobileNetV2's depthwise convs and
# ResNet-50's convs (batch 1), `cuts validate` samples 200 parameter sets per
# distinct op (every kept one, the rest spread over the pruned ranking),
# `cuts tune` times them, and scripts/validate_report.py reports per op
# whether the fastest was kept and the Spearman correlation of PUL with
# measured throughput. Reports go to $OUT/<model>.json.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/validate}
mkdir -p "$OUT"
cuts=$PWD/.gpu-bin/bin/cuts
python3 bench/run.py --out /tmp/exp --phases models --models resnet50 mobilenet_v2 \
  --batches small --precisions fp32 --no-report >/dev/null 2>&1
python3 test/models/inflate.py test/models/exported/bert_base_s128_dyn20.onnx /tmp/bert >/dev/null
w=/tmp/val
specs=""
for m in ${MODELS:-bert mobilenetv2 resnet50}; do
  case $m in
    bert) specs="$specs bert:/tmp/bert/bert_base_s128_dyn20.onnx:matmul" ;;
    mobilenetv2) specs="$specs mobilenetv2:$(ls bench/models/mobilenet_v2_b1_*.onnx | head -1):depthwise" ;;
    resnet50) specs="$specs resnet50:$(ls bench/models/resnet50_b1_*.onnx | head -1):conv,matmul" ;;
  esac
done
for spec in $specs; do
  IFS=: read name model kinds <<< "$spec"
  $cuts validate "$model" --arch h200 -o $w/$name --kinds $kinds --samples ${SAMPLES:-200}
  /usr/bin/time -f "$name: tuned in %e s" $cuts tune $w/$name --cache $w/$name/cache.json \
    --target-ms ${TARGET_MS:-2} | tail -1
  python3 scripts/validate_report.py $w/$name | tail -40
  cp $w/$name/report.json $OUT/$name.json
done

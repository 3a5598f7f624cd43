#!/usr/bin/env bash
# On the GPU host (after scripts/package_gpu.sh here, with .gpu-bin carried):
# the benchmark's models, peers (PyTorch eager, eager + CUDA graph, fp32, TF32
# off) and cuts phases (compile --tune, run --compare against ONNX Runtime,
# bench --graph) for ResNet-50 and MobileNetV2 at batch 1 and 64, in one run.
# Results go to $OUT/bench/results.json.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/e2e}
mkdir -p "$OUT"
cuts=$PWD/.gpu-bin/bin/cuts
models=${MODELS:-resnet50 mobilenet_v2}
nvidia-smi -L
$cuts --version || exit 1
python3 bench/run.py --out "$OUT/bench" --phases models peers cuts \
  --models $models --precisions fp32 --peers eager cuda_graph \
  --cuts "$cuts" --cuts-estimate ${CUTS_ESTIMATE:-150} \
  --budget ${BUDGET:-540} --phase-budget ${BUDGET:-540} \
  --no-report 2>&1 | grep -v "^$" | tail -30

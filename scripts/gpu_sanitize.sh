#!/usr/bin/env bash
# On the GPU host (with .gpu-bin carried, .gpu-bin/demo holding the example
# model compiled here with its inputs and reference): compute-sanitizer
# memcheck and racecheck on `cuts run` of the example model and of
# MobileNetV2 (compiled there), then the example server (examples/server)
# serving MobileNetV2 with 4 worker sessions, plain and with CUDA graphs.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
b=$PWD/.gpu-bin
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  echo "== $tool: example model"
  $cs --tool $tool --error-exitcode 9 $b/bin/cuts-run run $b/demo/model.cuts \
    --input input=$b/demo/in/input.npy --compare $b/demo/ref 2>&1 | tail -3
done
python3 bench/run.py --out /tmp/exp --phases models --models mobilenet_v2 \
  --batches small --precisions fp32 --no-report >/dev/null 2>&1
f=$(ls bench/models/mobilenet_v2_b1_*.onnx | head -1)
$b/bin/cuts compile "$f" --arch sm_90 -o /tmp/mb | tail -1
python3 scripts/reference.py "$f" /tmp/mb/in /tmp/mb/ref > /tmp/mb/inputs.txt
echo "== memcheck: MobileNetV2"
$cs --tool memcheck --error-exitcode 9 $b/bin/cuts-run run /tmp/mb/model.cuts \
  $(cat /tmp/mb/inputs.txt) --compare /tmp/mb/ref 2>&1 | tail -3
echo "== server"
$b/bin/cuts-server /tmp/mb/model.cuts --workers 4 --requests 2000
$b/bin/cuts-server /tmp/mb/model.cuts --workers 4 --requests 2000 --graph
$b/bin/cuts-server /tmp/mb/model.cuts --workers 1 --requests 500 --rate 500

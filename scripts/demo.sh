#!/usr/bin/env bash
# README command (a): set up, build, then the main job on the bundled example
# model: let the performance model group it into kernels (explain), compile it
# for sm_90 into out/demo/ (artifact, model.h, libmodel.so, kernel sources),
# run it - on the GPU if this machine has one, else every kernel emulated on
# the CPU - and compare its output with ONNX Runtime's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cuts=build/tools/cuts/cuts
model=examples/models/tiny_convnet.onnx
out=out/demo
shape=input=1x3x32x32
$cuts explain "$model" --input-shape $shape --arch h100
$cuts compile "$model" --input-shape $shape --arch sm_90 -o $out --emit-source
inputs=$(python3 scripts/reference.py "$model" $out/inputs $out/reference \
  --shape $shape)
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "running on the GPU"
  $cuts run $out/model.cuts $inputs --compare $out/reference
  $cuts bench $out/model.cuts --iters 200
else
  echo "no GPU here: running every kernel on the CPU (--emulate)"
  $cuts run $out/model.cuts $inputs --emulate --compare $out/reference
fi

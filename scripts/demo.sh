#!/usr/bin/env bash
# README command (a): set up, build, run the main job on the bundled example
# model: import it into the cuts dialect (the cleaned graph is printed), then
# let the performance model group it into kernels for an H100.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
model=examples/models/tiny_convnet.onnx
build/tools/cuts/cuts import "$model" --input-shape input=1x3x32x32
build/tools/cuts/cuts explain "$model" --input-shape input=1x3x32x32 --arch h100

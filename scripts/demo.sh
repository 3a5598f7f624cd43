#!/usr/bin/env bash
# README command (a): set up, build, run the main job on the bundled example
# model (today: import it into the cuts dialect and print the cleaned graph).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/tools/cuts/cuts import examples/models/tiny_convnet.onnx --input-shape input=1x3x32x32

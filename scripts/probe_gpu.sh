#!/usr/bin/env bash
# Builds tools/cuts-probe with nvcc alone (no CMake, no MLIR: a bare GPU
# machine has neither) and runs it on GPU 0; arguments go to cuts-probe, e.g.
#   scripts/probe_gpu.sh -o h100.json --name H100-SXM
# SASS for sm_80 and sm_90 (A100, H100/H200) plus sm_90 PTX for newer chips.
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p build-probe
"$NVCC" -O2 -std=c++17 \
  -gencode arch=compute_80,code=sm_80 \
  -gencode arch=compute_90,code='[sm_90,compute_90]' \
  -o build-probe/cuts-probe tools/cuts-probe/cuts-probe.cu
exec build-probe/cuts-probe "$@"

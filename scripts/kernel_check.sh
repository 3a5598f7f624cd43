#!/usr/bin/env bash
# Builds tools/cuts-kernel-check without CMake or MLIR (the GPU host has
# neither MLIR nor nlohmann-json: pass an include dir holding nlohmann/ as
# $1) and runs it: generated GEMM kernels vs cuBLAS on GPU 0.
#   scripts/kernel_check.sh INCLUDE_DIR [cuts-kernel-check args...]
set -euo pipefail
cd "$(dirname "$0")/.."
inc=${1:-/usr/include}
shift || true
cuda=${CUDA_HOME:-/usr/local/cuda}
out=build-gpu
mkdir -p "$out"
cmake "-DOUT=$out/ArchData.inc" "-DFILES=$(ls perfmodel/arch/*.json | tr '\n' ';')" \
  -P perfmodel/embed.cmake
g++ -O2 -std=c++17 -I. -I"$out" -I"$inc" -I"$cuda/include" -DCUTS_HAVE_NVRTC=1 \
  codegen/dfg/Dfg.cpp codegen/ops/Epilogue.cpp codegen/ops/MatMul.cpp \
  codegen/emit/Cuda.cpp codegen/emit/Nvrtc.cpp \
  perfmodel/Arch.cpp perfmodel/Roofline.cpp perfmodel/Params.cpp \
  tools/cuts-kernel-check/main.cpp \
  -L"$cuda/lib64" -L"$cuda/lib64/stubs" -lcuda -lcudart -lnvrtc -lcublas \
  -o "$out/cuts-kernel-check"
exec "$out/cuts-kernel-check" "$@"

#!/usr/bin/env bash
# SASS of a generated kernel (a .cu from `cuts compile --emit-source`), to see
# what nvcc made of it: how global loads, shared stores and barriers are
# scheduled. The local CUDA toolkit has nvcc and ptxas but no cuobjdump or
# nvdisasm; they come from their PyPI wheels, unpacked once into .whl/ (not
# tracked).
#
#   scripts/sass.sh out/kernels/matmul_13.cu [sm_90] [all]
#
# Prints the memory and barrier instructions in order (everything with
# `all`), then ptxas's register and spill report.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(realpath "$1")
arch=${2:-sm_90}
bin=.whl/nvidia/cu13/bin
if [ ! -x $bin/cuobjdump ] || [ ! -x $bin/nvdisasm ]; then
  mkdir -p .whl/dl
  pip download --quiet --no-deps -d .whl/dl nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
  for w in .whl/dl/*.whl; do (cd .whl && unzip -oq "dl/$(basename "$w")"); done
  chmod +x $bin/*
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/local/cuda/bin/nvcc -arch="$arch" -cubin -Xptxas -v -o "$tmp/k.cubin" \
  "$src" 2> "$tmp/ptxas.txt"
PATH=$PWD/$bin:$PATH cuobjdump -sass "$tmp/k.cubin" > "$tmp/k.sass"
if [ "${3:-}" = all ]; then
  cat "$tmp/k.sass"
else
  grep -E "LDG|STG|LDS|STS|BAR\.|BRA" "$tmp/k.sass" |
    awk '{$1 = $1; sub(/ *;.*/, ""); print}'
fi
grep -E "registers|spill" "$tmp/ptxas.txt" || true

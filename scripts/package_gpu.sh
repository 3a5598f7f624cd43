#!/usr/bin/env bash
# Builds a cuts that runs on a GPU host without LLVM, MLIR or protobuf
# (CUTS_STATIC_LLVM: only libnvrtc and the C/C++ runtime are shared) and lays
# it out as an installed tree in .gpu-bin/ (bin/cuts, bin/cuts-run,
# bin/cuts-kernel-check, bin/cuts-tensor-core-check, bin/cuts-sync-bench,
# bin/cuts-server, bin/cuts-mpi (libmpi shared),
# lib/libcuts_runtime.a, include/cuts/, and lib/libcuts_trace.so with the
# CUPTI it loads), small enough to carry to the device.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-static -G Ninja -DCUTS_STATIC_LLVM=ON -DCUTS_BUILD_TESTS=OFF >/dev/null
ninja -C build-static cuts cuts-run cuts-kernel-check cuts-tensor-core-check \
  cuts-sync-bench cuts-server cuts_runtime cuts-mpi
rm -rf .gpu-bin
mkdir -p .gpu-bin/bin .gpu-bin/lib .gpu-bin/include/cuts
cp build-static/tools/cuts/cuts build-static/tools/cuts-run/cuts-run \
  build-static/tools/cuts-kernel-check/cuts-kernel-check \
  build-static/tools/cuts-tensor-core-check \
  build-static/tools/cuts-sync-bench/cuts-sync-bench \
  build-static/examples/server/cuts-server \
  build-static/tools/cuts-mpi/cuts-mpi .gpu-bin/bin/
strip .gpu-bin/bin/*
cp build-static/runtime/libcuts_runtime.a .gpu-bin/lib/
cp runtime/include/cuts/*.h .gpu-bin/include/cuts/
# The CUPTI tracer (scripts/gpu_trace.sh) and the CUPTI it loads.
cupti=$(ls /usr/local/cuda/lib64/libcupti.so.* /usr/local/cuda/lib/libcupti.so.* \
  /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.* 2>/dev/null | head -1 || true)
if [ -n "$cupti" ]; then
  g++ -O2 -shared -fPIC -std=c++17 scripts/cupti_trace.cpp \
    -I/usr/local/cuda/include "$cupti" -Wl,-rpath,'$ORIGIN' \
    -o .gpu-bin/lib/libcuts_trace.so
  cp -L "$cupti" .gpu-bin/lib/
fi
mkdir -p .gpu-bin/include/nlohmann
du -sh .gpu-bin

#!/usr/bin/env bash
# Builds a fuzzer with clang + libFuzzer + ASan and runs it: the importer's
# (CUTS_FUZZ_TARGET=import, the default), the artifact / tensor-file
# parsers' (CUTS_FUZZ_TARGET=artifact) or the GPU descriptor parser's
# (CUTS_FUZZ_TARGET=arch).
#   scripts/fuzz.sh [SECONDS] [extra libFuzzer args...]
# The seed corpus is the covered ONNX node tests' models plus the small test
# models; new inputs found go to build-fuzz/corpus (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang-19 CXX=clang++-19 cmake -G Ninja -S . -B build-fuzz \
    -DCMAKE_BUILD_TYPE=Release -DCUTS_BUILD_TESTS=OFF -DCUTS_FUZZ=ON \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address -g" >/dev/null
fi
target=${CUTS_FUZZ_TARGET:-import}
ninja -C build-fuzz cuts-fuzz-$target
if [ "$target" = arch ]; then
  # Seeds: the built-in descriptors.
  mkdir -p build-fuzz/corpus-arch
  exec build-fuzz/tools/fuzz/cuts-fuzz-arch build-fuzz/corpus-arch perfmodel/arch \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=16384 \
    -print_final_stats=1 "$@"
fi
if [ "$target" = artifact ]; then
  # Seeds: a compiled small model (first byte 0 selects the artifact
  # parser), a .npy and a TensorProto (1 and 2), written by the main build.
  seeds=build-fuzz/seeds-artifact
  if [ ! -d "$seeds" ]; then
    mkdir -p "$seeds.tmp"
    build/tools/cuts/cuts compile examples/models/tiny_convnet.onnx \
      --input-shape input=1x3x32x32 --arch sm_90 -o build-fuzz/seed-model >/dev/null
    { printf '\x00'; cat build-fuzz/seed-model/model.cuts; } >"$seeds.tmp/artifact"
    # The same read without its weights (first byte 3).
    { printf '\x03'; cat build-fuzz/seed-model/model.cuts; } >"$seeds.tmp/cut"
    # With batch profiles: manifest.<batch> sections.
    build/tools/cuts/cuts compile examples/models/tiny_convnet.onnx \
      --input-shape input=1x3x32x32 --batch 1,2 --arch sm_90 \
      -o build-fuzz/seed-profiles >/dev/null
    { printf '\x00'; cat build-fuzz/seed-profiles/model.cuts; } >"$seeds.tmp/profiles"
    python3 - "$seeds.tmp" <<'PY'
import io, sys
import numpy as np
from onnx import numpy_helper
d = sys.argv[1]
b = io.BytesIO(); np.save(b, np.arange(12, dtype=np.float32).reshape(3, 4))
open(d + "/npy", "wb").write(b"\x01" + b.getvalue())
t = numpy_helper.from_array(np.ones((2, 3), np.float32), "x")
open(d + "/pb", "wb").write(b"\x02" + t.SerializeToString())
PY
    mv "$seeds.tmp" "$seeds"
  fi
  mkdir -p build-fuzz/corpus-artifact
  cp test/fuzz/*.artifact build-fuzz/corpus-artifact/ # past crashes first
  exec build-fuzz/tools/fuzz/cuts-fuzz-artifact build-fuzz/corpus-artifact "$seeds" \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=262144 \
    -print_final_stats=1 "$@"
fi
seeds=build-fuzz/seeds
if [ ! -d "$seeds" ]; then
  python3 test/conformance/gen_node_tests.py build-fuzz/node >/dev/null
  python3 scripts/fuzz_seeds.py build-fuzz/node "$seeds.tmp"
  mv "$seeds.tmp" "$seeds"
fi
mkdir -p build-fuzz/corpus
exec build-fuzz/tools/fuzz/cuts-fuzz-import build-fuzz/corpus "$seeds" \
  -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
  -print_final_stats=1 "$@"

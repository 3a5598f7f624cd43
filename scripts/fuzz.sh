#!/usr/bin/env bash
# Builds the importer fuzzer with clang + libFuzzer + ASan and runs it.
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
ninja -C build-fuzz cuts-fuzz-import
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

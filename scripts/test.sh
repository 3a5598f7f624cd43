#!/usr/bin/env bash
# README command (b): set up, build, run every test. CI runs this.
#   unit (Catch2), lit (FileCheck), models (ONNX helper + PyTorch exports),
#   conformance (ONNX node tests), compile (cuts compile + run --emulate),
#   install (the installed package), then the importer's, the artifact
#   parsers' and the GPU descriptor parser's fuzzers for a bounded time each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd build && ctest --output-on-failure)
FUZZ_SECONDS=${CUTS_FUZZ_SECONDS:-60}
if [ "$FUZZ_SECONDS" != 0 ]; then
  echo "fuzz: running the importer fuzzer for ${FUZZ_SECONDS}s"
  scripts/fuzz.sh "$FUZZ_SECONDS" >build/fuzz.log 2>&1 || {
    tail -40 build/fuzz.log
    echo "fuzz: the importer fuzzer failed (log: build/fuzz.log)"
    exit 1
  }
  grep -E "stat::number_of_executed_units|Done" build/fuzz.log | tail -2
  echo "fuzz: running the artifact / tensor-file fuzzer for ${FUZZ_SECONDS}s"
  CUTS_FUZZ_TARGET=artifact scripts/fuzz.sh "$FUZZ_SECONDS" \
    >build/fuzz-artifact.log 2>&1 || {
    tail -40 build/fuzz-artifact.log
    echo "fuzz: the artifact fuzzer failed (log: build/fuzz-artifact.log)"
    exit 1
  }
  grep -E "stat::number_of_executed_units|Done" build/fuzz-artifact.log | tail -2
  ARCH_SECONDS=$(((FUZZ_SECONDS + 2) / 3))
  echo "fuzz: running the GPU descriptor fuzzer for ${ARCH_SECONDS}s"
  CUTS_FUZZ_TARGET=arch scripts/fuzz.sh "$ARCH_SECONDS" \
    >build/fuzz-arch.log 2>&1 || {
    tail -40 build/fuzz-arch.log
    echo "fuzz: the descriptor fuzzer failed (log: build/fuzz-arch.log)"
    exit 1
  }
  grep -E "stat::number_of_executed_units|Done" build/fuzz-arch.log | tail -2
fi

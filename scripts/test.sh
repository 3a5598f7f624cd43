#!/usr/bin/env bash
# README command (b): set up, build, run every test. CI runs this.
#   unit (Catch2), lit (FileCheck), models (ONNX helper + PyTorch exports),
#   conformance (ONNX node tests), compile (cuts compile + run --emulate),
#   install (the installed package), then the importer's, the artifact
#   parsers' and the GPU descriptor parser's fuzzers for a bounded time each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Tests run side by side, one per core (each has its own work folder).
(cd build && ctest --output-on-failure -j"$(nproc)")
FUZZ_SECONDS=${CUTS_FUZZ_SECONDS:-60}
# fuzz TARGET SECONDS WHAT: one fuzzer (scripts/fuzz.sh), its log in build/.
fuzz() {
  local log=build/fuzz-$1.log
  echo "fuzz: running the $3 fuzzer for $2s"
  CUTS_FUZZ_TARGET=$1 scripts/fuzz.sh "$2" >"$log" 2>&1 || {
    tail -40 "$log"
    echo "fuzz: the $3 fuzzer failed (log: $log)"
    exit 1
  }
  grep -E "stat::number_of_executed_units|Done" "$log" | tail -2
}
if [ "$FUZZ_SECONDS" != 0 ]; then
  fuzz import "$FUZZ_SECONDS" importer
  fuzz artifact "$FUZZ_SECONDS" "artifact / tensor-file"
  fuzz arch $(((FUZZ_SECONDS + 2) / 3)) "GPU descriptor"
fi

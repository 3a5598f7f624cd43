#!/usr/bin/env bash
# The runtime's and cuts-run's CPU paths under valgrind (memcheck, definite
# leaks are errors): a truncated artifact, a wrong input name, a GPU run on
# a machine without one (all must fail cleanly) and the whole example model
# emulated on the CPU (host-compiled kernels run as fibers). Needs valgrind
# (apt-get install valgrind); exits non-zero on any valgrind error.
set -uo pipefail
cd "$(dirname "$0")/.."
d=${OUT:-/tmp/cuts-valgrind}
mkdir -p "$d"
cuts=build/tools/cuts/cuts
run=build/tools/cuts-run/cuts-run
$cuts compile examples/models/tiny_convnet.onnx --arch sm_90 -o "$d" \
  --input-shape input=1x3x32x32 > /dev/null || exit 1
python3 scripts/reference.py examples/models/tiny_convnet.onnx "$d/in" "$d/ref" \
  --shape input=1x3x32x32 > /dev/null || exit 1
head -c 3000 "$d/model.cuts" > "$d/truncated.cuts"
vg=(valgrind -q --error-exitcode=99 --leak-check=full
    --errors-for-leak-kinds=definite --max-stackframe=300000)
in=(--input "input=$d/in/input.npy")
failed=0
check() { # name, expected exit code, command...
  local name=$1 want=$2
  shift 2
  "${vg[@]}" "$@" > "$d/$name.log" 2>&1
  local rc=$?
  if [ $rc = 99 ] || [ $rc != "$want" ]; then
    echo "FAIL $name (exit $rc)"; tail -20 "$d/$name.log"; failed=1
  else
    echo "ok   $name"
  fi
}
check truncated 1 $run run "$d/truncated.cuts" "${in[@]}"
check wrong-name 1 $run run "$d/model.cuts" --input "nosuch=$d/in/input.npy"
if ! nvidia-smi -L > /dev/null 2>&1; then
  check no-gpu 1 $run run "$d/model.cuts" "${in[@]}"
fi
check emulate 0 $run run "$d/model.cuts" "${in[@]}" --emulate --compare "$d/ref"
exit $failed

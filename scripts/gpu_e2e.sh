#!/usr/bin/env bash
# On the GPU host (after scripts/package_gpu.sh here, with .gpu-bin carried):
# the benchmark's models, peers (PyTorch eager, eager + CUDA graph, fp32, TF32
# off) and cuts phases (compile --tune, run --compare against ONNX Runtime,
# bench --graph) in one run. MODELS (default: ResNet-50 and MobileNetV2) and
# BATCHES (small large) choose the cells, PHASES the phases (default models
# peers cuts), PRECISIONS (fp32) and PEERS (eager cuda_graph) the peers'
# cells, TUNE_SECONDS cuts compile's --tune-seconds. Results go to
# $OUT/bench/results.json, the whole log to $OUT/run.log; each cuts cell's
# artifact and tuning cache stay in $OUT/keep/, with its per-kernel times
# (cuts bench --graph --kernels, against the measured ceilings) in
# kernels.txt. RESUME=results.json starts from an earlier run's results
# (its units are skipped, failed ones retried);
# REDO="cuts" REDO_AFTER=2026-11-25 measures again the cuts cells measured
# before that UTC time (after a code generator change; every call of the
# session passes the same time, so none redoes another's work).
# Inductor's caches live in /tmp/inductor; they are packed (without compiled
# kernels) into $OUT/inductor.tgz, and INDUCTOR_CACHE=that file (carried)
# brings them back, so a max-autotune compile the watchdog stopped resumes
# from the autotuning it had done (its compile time is all attempts' sum).
# WARM_PARALLEL=1 autotunes the max-autotune cells of MODELS x BATCHES x
# PRECISIONS side by side (bench/warm_parallel.py) without measuring them.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/e2e}
mkdir -p "$OUT"
cuts=$PWD/.gpu-bin/bin/cuts
models=${MODELS:-resnet50 mobilenet_v2}
nvidia-smi -L
$cuts --version || exit 1
extra=()
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
mkdir -p $TORCHINDUCTOR_CACHE_DIR
if [ -n "${INDUCTOR_CACHE:-}" ] && [ -f "$INDUCTOR_CACHE" ]; then
  tar xzf "$INDUCTOR_CACHE" -C $TORCHINDUCTOR_CACHE_DIR
  export BENCH_INDUCTOR_CACHE_CARRIED=1
fi
if [ -n "${RESUME:-}" ]; then
  mkdir -p "$OUT/bench"
  cp "$RESUME" "$OUT/bench/results.json"
  extra=(--retry-errors)
fi
if [ -n "${REDO:-}" ]; then
  extra+=(--redo $REDO --redo-after "${REDO_AFTER:?REDO needs REDO_AFTER}")
fi
if [ "${WARM_PARALLEL:-0}" = 1 ]; then
  # Max-autotune's cells autotuned side by side, one process each, and only
  # that: the next call (without WARM_PARALLEL) measures each alone.
  python3 bench/warm_parallel.py --out "$OUT/bench" --cache $TORCHINDUCTOR_CACHE_DIR \
    --models $models --batches ${BATCHES:-small large} --precisions ${PRECISIONS:-fp32} \
    --budget ${BUDGET:-540} > "$OUT/run.log" 2>&1
  for f in "$OUT"/bench/warm/*/run.log; do
    echo "== $f" >> "$OUT/run.log"
    grep -v "^$" "$f" | tail -15 >> "$OUT/run.log"
  done
else
python3 bench/run.py "${extra[@]}" --out "$OUT/bench" --phases ${PHASES:-models peers cuts} \
  --models $models --batches ${BATCHES:-small large} --precisions ${PRECISIONS:-fp32} \
  --peers ${PEERS:-eager cuda_graph} --cuts "$cuts" \
  --cuts-estimate ${CUTS_ESTIMATE:-150} --keep "$OUT/keep" \
  --cuts-tune-seconds ${TUNE_SECONDS:-0} \
  --budget ${BUDGET:-540} --phase-budget ${BUDGET:-540} \
  --no-report > "$OUT/run.log" 2>&1
fi
grep -v "^$" "$OUT/run.log" | tail -40
# Autotuning results and generated sources only: compiled kernels (Triton's
# cache, shared objects) are large and are rebuilt from them. The autotuning
# results (cache/, one JSON file for all models, 0.8 MB after 19 cells) are
# what lets a stopped compile resume. Files up to 8 MiB (find's -size rounds
# up to whole units: -2M would keep files up to 1 MiB only);
# INDUCTOR_PACK_TRITON=1 packs Triton's cache too. The tarball must stay
# under 16 MiB to come back.
triton=(! -path './triton/*')
[ "${INDUCTOR_PACK_TRITON:-0}" = 1 ] && triton=()
(cd $TORCHINDUCTOR_CACHE_DIR && find . -type f "${triton[@]}" ! -name '*.so' \
  ! -name '*.cubin' -size -$((8 * 1024 * 1024 + 1))c -print0 |
  tar czf "$OUT/inductor.tgz" --null -T -)
ls -la "$OUT/inductor.tgz"
[ "$(stat -c %s "$OUT/inductor.tgz")" -gt $((15 * 1024 * 1024)) ] &&
  echo "warning: inductor.tgz is over 15 MiB and may not come back"
# What the tarball leaves out, for the resumption question.
(cd $TORCHINDUCTOR_CACHE_DIR && du -sh -- * 2>/dev/null | sort -h | tail -8;
 echo "files over 8 MiB (not packed):"
 find . -type f -size +$((8 * 1024 * 1024))c -printf '%s %p\n' | sort -n | tail -8)
# Achieved rates against the measured ceilings (copy bandwidth, FP32 SIMT
# GEMM) where the results have them, else the descriptor's.
ceil=($(python3 - "$OUT/bench/results.json" <<'PY' 2>/dev/null
import json, sys
c = json.load(open(sys.argv[1])).get("ceilings", {})
f = c.get("gemm_fp32_simt", {}).get("flops_per_s")
b = c.get("copy", {}).get("bytes_per_s")
print(" ".join((["--peak-tflops", "%.3f" % (f / 1e12)] if f else []) +
               (["--bandwidth-gbs", "%.1f" % (b / 1e9)] if b else [])))
PY
))
for d in "$OUT"/keep/*/; do
  [ -f "$d/model.cuts" ] || continue
  $cuts bench "$d/model.cuts" --graph --kernels "${ceil[@]}" > "$d/kernels.txt" 2>&1
  echo "== $d"; head -30 "$d/kernels.txt"
done

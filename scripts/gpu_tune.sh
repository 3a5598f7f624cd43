#!/usr/bin/env bash
# On the GPU host (after scripts/package_gpu.sh here, with .gpu-bin carried):
# for each MODEL:BATCH in $CELLS, export it (bench/run.py's models phase),
# `cuts compile --tune` it with a tuning cache in $OUT, check the outputs
# against ONNX Runtime (CPU) with `cuts run --compare`, time it with
# `cuts bench` (plain and CUDA graph) and list its kernels, keep its
# tuning.json (each layer: fastest generated kernel and library call); then compile it
# again from the cache alone and check that the artifact is byte-identical.
# EMULATE=1 also runs each batch-1 artifact with --emulate and compares.
# PRECISIONS="fp16 bf16" compiles each cell in those (default fp32),
# compared by the precision's default tolerance.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/tune}
mkdir -p "$OUT"
cuts=$PWD/.gpu-bin/bin/cuts
cells=${CELLS:-resnet50:1 mobilenet_v2:1}
models=$(for c in $cells; do echo ${c%%:*}; done | sort -u)
batches=$(for c in $cells; do [ ${c##*:} = 1 ] && echo small || echo large; done | sort -u)
python3 bench/run.py --out "$OUT/export" --phases models --models $models \
  --batches $batches --precisions fp32 --no-report 2>&1 | grep -v "^$" | tail -4
for c in $cells; do
  m=${c%%:*}; b=${c##*:}
  f=$(ls bench/models/${m}_b${b}_*.onnx | head -1)
  for p in ${PRECISIONS:-fp32}; do
  d=$OUT/$m-b$b-$p
  mkdir -p $d
  echo "== $m batch $b $p"
  /usr/bin/time -f "compile+tune wall %e s" $cuts compile "$f" --arch sm_90 -o $d/out \
    --precision $p --tune --tuning $OUT/cache.json --jobs 16 2>&1 | tail -4
  [ -d $d/ref ] || python3 scripts/reference.py "$f" $d/in $d/ref > $d/inputs.txt || continue
  $cuts run $d/out/model.cuts $(cat $d/inputs.txt) --compare $d/ref | tail -2
  if [ -n "${EMULATE:-}" ] && [ "$b" = 1 ]; then
    # The same artifact on the CPU: every kernel's own source, library
    # calls as CPU convolutions and products.
    /usr/bin/time -f "emulated in %e s" $cuts run $d/out/model.cuts \
      $(cat $d/inputs.txt) --compare $d/ref --emulate 2>&1 | tail -3
  fi
  # Each layer's fastest generated kernel next to its fastest library call.
  cp $d/out/tuning.json $OUT/$m-b$b-$p.tuning.json
  python3 scripts/tuning_report.py $d/out/tuning.json | tail -1
  $cuts bench $d/out/model.cuts --iters 200 --graph | head -1
  $cuts bench $d/out/model.cuts --iters 50 --graph --kernels > $OUT/$m-b$b-$p.kernels.txt 2>&1
  $cuts compile "$f" --arch sm_90 -o $d/again --precision $p --tuning $OUT/cache.json --jobs 16 | tail -1
  cmp $d/out/model.cuts $d/again/model.cuts && echo "byte-identical from the cache"
  rm -rf $d/in $d/again
  done
done
ls -la $OUT/cache.json

#!/usr/bin/env bash
# On the GPU host: an A/B of two cuts builds on whole models. For each
# exported model in $MODELS (test/models/exported, random weights), each
# build compiles it with --tune (its own tuning cache, $TUNE_SECONDS each)
# and `cuts bench --graph` times the artifact, then again in the other
# order, so neither build always runs on a warmer GPU. $A (the base,
# .gpu-bin-base/bin/cuts, a copy of .gpu-bin with another cuts) and $B
# (.gpu-bin/bin/cuts) pick the builds.
# Prints a row a model and build as each finishes (also in $OUT/table.txt);
# logs and caches go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/ab}
mkdir -p "$OUT"
declare -A bin=([A]=${A:-$PWD/.gpu-bin-base/bin/cuts} [B]=${B:-$PWD/.gpu-bin/bin/cuts})
: > $OUT/table.txt
for m in ${MODELS:-resnet50_b64_ts17 mobilenetv2_b64_ts17}; do
  python3 test/models/inflate.py test/models/exported/$m.onnx /tmp/$m >/dev/null
  for side in A B; do
    d=$OUT/$m-$side
    mkdir -p $d
    /usr/bin/time -f "%e" -o $d/compile_s ${bin[$side]} compile /tmp/$m/$m.onnx \
      --arch h200 -o $d/out --tune --tuning $OUT/$side-cache.json \
      --tune-seconds ${TUNE_SECONDS:-60} --jobs 16 > $d/compile.log 2>&1
    [ -f $d/out/model.cuts ] || continue
    # Twice, alternating with the other build's artifact below.
    ${bin[$side]} bench $d/out/model.cuts --iters 200 --graph > $d/bench1.txt 2>&1
    ${bin[$side]} bench $d/out/model.cuts --iters 50 --kernels > $d/kernels.txt 2>&1
  done
  for side in B A; do
    d=$OUT/$m-$side
    [ -f $d/out/model.cuts ] && ${bin[$side]} bench $d/out/model.cuts --iters 200 --graph > $d/bench2.txt 2>&1
  done
  for side in A B; do
    d=$OUT/$m-$side
    if [ -f $d/out/model.cuts ]; then
      echo "$m $side compile $(tail -1 $d/compile_s)s | $(grep -o 'median [0-9.]* ms' $d/bench1.txt | head -1) | $(grep -o 'median [0-9.]* ms' $d/bench2.txt | head -1)"
    else
      echo "$m $side compile failed ($d/compile.log)"
    fi | tee -a $OUT/table.txt
  done
  rm -rf $OUT/$m-*/out # the artifacts hold the weights
done

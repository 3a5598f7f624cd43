#!/usr/bin/env bash
# On the GPU host (with .gpu-bin carried): the hardware counters of issue 3's
# validation sample, one op at a time. For each op in $RESNET_OPS of
# ResNet-50 at batch $BATCH, `cuts validate` samples the same 200 sets as
# scripts/gpu_validate.sh (the sample is deterministic), and `cuts tune`
# runs them under Nsight Compute. The tuner names each candidate's one sizing
# launch with an NVTX range "cuts-tune:<key>", so ncu profiles exactly that
# launch and names the row by the key. One CSV per op (ncu's raw page) goes
# into $OUT/profile.tgz with the op's validation.json;
# scripts/profile_report.py joins them with the model's counts.
# $NCU_SECONDS bounds each op's run, $METRICS replaces the list.
# Another model's ops: $SRC (an exported model, default ResNet-50 at
# $BATCH), $KINDS (the --kinds of `cuts validate`, default conv) and $OPS;
# KINDS other than conv ask for the simple ops' counters.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/profile}
cuts=${CUTS:-$PWD/.gpu-bin/bin/cuts}
w=${WORK:-/tmp/prof}
raw=$w/out
mkdir -p "$OUT" "$raw"
ncu=${NCU:-$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)}
[ -x "$ncu" ] || { echo "no ncu on this host"; exit 1; }
# What the bound counts (shared loads and their wavefronts, FFMAs, DRAM
# bytes) and why a kernel waits: the list profile_report.py reads back.
kinds=${KINDS:-conv}
set=$([ "$kinds" = conv ] || echo simple)
metrics=${METRICS:-$(python3 scripts/profile_report.py metrics $set)}
# Keep only the metrics this ncu knows, so one wrong name costs a column,
# not the call.
known=$("$ncu" --query-metrics 2>/dev/null | awk '{print $1}')
keep=""
for m in ${metrics//,/ }; do
  if grep -qx "${m%%.*}" <<<"$known"; then keep+="${keep:+,}$m"; else echo "ncu lacks $m"; fi
done
"$ncu" --version | tail -1
src=${SRC:-resnet50_b${BATCH:-1}_ts17}
python3 test/models/inflate.py test/models/exported/$src.onnx /tmp/$src >/dev/null
ops=${OPS:-${RESNET_OPS:-layer1.0/conv1,layer2.1/conv2,layer3.1/conv3,layer4.1/conv2}}
for op in ${ops//,/ }; do
  tag=${op//[\/.]/_}
  d=$w/$tag
  rm -rf "$d"
  mkdir -p "$d"
  $cuts validate /tmp/$src/$src.onnx --arch h200 -o "$d" --kinds "$kinds" \
    --ops "$op" --samples ${SAMPLES:-200} | tail -1
  start=$(date +%s)
  timeout ${NCU_SECONDS:-300} "$ncu" --nvtx --nvtx-include "regex:cuts-tune:.*/" \
    --print-nvtx-rename kernel --clock-control none --metrics "$keep" \
    --csv --page raw --log-file "$raw/$tag.csv" \
    $cuts tune "$d" --cache "$d/cache.json" --target-ms 0.1 | tail -1
  echo "$op: profiled $(grep -c "cuts-tune:" "$raw/$tag.csv") launches in $(($(date +%s) - start)) s"
  cp "$d/validation.json" "$raw/$tag.validation.json"
  cp "$d/cache.json" "$raw/$tag.cache.json" 2>/dev/null
  # After each op, so a later op's timeout loses only that op. The device
  # tool returns few files per call: one archive.
  tar -C "$raw" -czf "$OUT/profile.tgz" .
done

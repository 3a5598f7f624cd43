#!/usr/bin/env bash
# Call 88: the probe's new LAT_global and block-dispatch measurements, then
# the simple ops' validation sample (call 86's sets) under Nsight Compute:
# global requests, sectors, L1/L2 hits, DRAM bytes, blocks, stalls.
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
t0=$(date +%s)
scripts/probe_gpu.sh -o $OUT/probe.json --name "NVIDIA H200" 2>&1 | tail -3
echo "probe: $(( $(date +%s) - t0 )) s"
export BATCH=64 KINDS=elementwise NCU_SECONDS=${NCU_SECONDS:-170} WORK=/tmp/prof
SRC=densenet121_b64_ts17 OPS="denseblock1/Concat,denseblock1/denselayer3/Concat" \
  OUT=/tmp/p1 scripts/gpu_profile.sh 2>&1 | tail -4
SRC=resnet50_b64_ts17 OPS="layer1.0/Add" OUT=/tmp/p2 WORK=/tmp/prof2 \
  scripts/gpu_profile.sh 2>&1 | tail -3
cp /tmp/p1/profile.tgz $OUT/densenet.tgz; cp /tmp/p2/profile.tgz $OUT/resnet.tgz
echo "total: $(( $(date +%s) - t0 )) s"

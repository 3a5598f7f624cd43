#!/usr/bin/env bash
# Call 90: the streaming kernels' emitter change (B: every load of a thread
# before its first store; vector stores through __stwb) against the emitter
# before it (A: 230566d's build, .gpu-bin-base), same performance model.
# 1. SASS: where the loads of a one-element-along-W concat and Add sit
#    against their stores, A and B.
# 2. The same sampled sets of five elementwise ops timed under A and B.
# 3. DenseNet-121 and ResNet-50 at batch 64 end to end, A/B.
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
source scripts/gpu_env.sh
t0=$(date +%s)
A=$PWD/.gpu-bin-base/bin/cuts B=$PWD/.gpu-bin/bin/cuts
for m in densenet121_b64_ts17 resnet50_b64_ts17; do
  python3 test/models/inflate.py test/models/exported/$m.onnx /tmp/$m >/dev/null
done
# 1. SASS of the first sampled sets with thread 1x1x4x1.
for side in A B; do
  for op in densenet121_b64_ts17:denseblock1/Concat resnet50_b64_ts17:layer1.0/Add; do
    m=${op%%:*} o=${op#*:} d=/tmp/sass-$side-${o//\//_}
    ${!side} validate /tmp/$m/$m.onnx --arch h200 -o $d --kinds elementwise --ops $o --samples 300 >/dev/null
    python3 - $d <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1] + '/candidates.json'))
for c in d['candidates']:
    if 'thread 1x1x4x1 ' in c['source']:
        open(sys.argv[1] + '/k.cu', 'w').write(c['source']); break
PY
    nvcc -arch=sm_90 -cubin -O3 -o $d/k.cubin $d/k.cu 2>/dev/null
    echo "$side $o: $(cuobjdump -sass $d/k.cubin | grep -oE '\b(LDG|STG)[.A-Z0-9]*' | uniq -c | tr -s ' \n' ' ')"
  done
done
echo "sass: $(( $(date +%s) - t0 )) s"
# 2. The same sets under both emitters.
for side in A B; do
  CUTS=${!side} WORK=/tmp/val$side OUT=$OUT/val$side BATCH=64 MAX_SECONDS=${MAX_SECONDS:-45} \
    MODELS="densenet121-simple resnet50-simple" \
    DENSENET_SIMPLE_OPS=denseblock1/Concat,denseblock1/denselayer3/Concat,denseblock2/Concat,denseblock3/Concat \
    RESNET_SIMPLE_OPS=layer1.0/Add,layer3.0/Add \
    scripts/gpu_validate.sh > $OUT/val$side.log 2>&1
  grep -E "tuned in" $OUT/val$side.log
done
python3 - $OUT <<'PY'
import json, sys
def times(side, m):
    c = json.load(open(f'{sys.argv[1]}/val{side}/{m}/cache.json'))
    v = json.load(open(f'{sys.argv[1]}/val{side}/{m}/validation.json'))
    e = c.get('entries', c)
    out = {}
    for s in v['samples']:
        t = e.get(s['key'])
        us = t.get('us') if isinstance(t, dict) else None
        if us: out[(s['op'].split(':')[0], s['params'])] = us
    return out
for m in ['densenet121-simple', 'resnet50-simple']:
    a, b = times('A', m), times('B', m)
    ops = sorted({k[0] for k in a})
    for op in ops:
        common = [k for k in a if k[0] == op and k in b]
        if not common: continue
        r = sorted(b[k] / a[k] for k in common)
        print(f"{op[:58]:58s} sets {len(common):3d} best A {min(a[k] for k in common):7.1f} B {min(b[k] for k in common):7.1f} us; B/A median {r[len(r)//2]:.2f} p10 {r[len(r)//10]:.2f} p90 {r[9*len(r)//10]:.2f}")
PY
echo "validate: $(( $(date +%s) - t0 )) s"
# 3. End to end, if the call has time left.
if [ $(( $(date +%s) - t0 )) -lt 330 ]; then
  MODELS="densenet121_b64_ts17 resnet50_b64_ts17" TUNE_SECONDS=45 OUT=/tmp/ab \
    scripts/gpu_model_ab.sh > $OUT/ab.log 2>&1
  cat /tmp/ab/table.txt
  for f in /tmp/ab/*/kernels.txt; do echo "$f $(awk 'NR>3 && /elementwise chain/ {a+=$2;n++} END{print n, a}' $f)"; done
  rm -rf /tmp/ab/*/out
  tar czf $OUT/ab.tgz -C /tmp ab
fi
tar czf $OUT/val.tgz -C $OUT valA valB && rm -rf $OUT/valA $OUT/valB
echo "total: $(( $(date +%s) - t0 )) s"

#!/usr/bin/env bash
# Call 92: the Pick emitter (B: a thread bisects the parts once per position
# up to the concat axis and reads through the chosen part's pointer)
# against one bisection and load per element (A: f6e8328's build), the same
# bound. DenseNet-121's 25-part concat compiled to 145 KB of code for 16
# elements a thread; its 32- and 64-thread blocks ran 1.5-1.8x slower than
# its 1024-thread ones, where ResNet-50's Adds of the same shape did not.
# 1. Code size of one sampled set per concat, A and B.
# 2. The same sampled sets of four DenseNet-121 concats timed under A and B.
# 3. DenseNet-121 b64 end to end, A/B.
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
source scripts/gpu_env.sh
t0=$(date +%s)
A=$PWD/.gpu-bin-base/bin/cuts B=$PWD/.gpu-bin/bin/cuts
m=densenet121_b64_ts17
python3 test/models/inflate.py test/models/exported/$m.onnx /tmp/$m >/dev/null
for side in A B; do
  d=/tmp/size-$side
  ${!side} validate /tmp/$m/$m.onnx --arch h200 -o $d --kinds elementwise \
    --ops denseblock1/Concat,denseblock2/Concat,denseblock3/Concat --samples 30 >/dev/null
  python3 - $d $side <<'PY'
import json, re, subprocess, sys, os
d, side = sys.argv[1], sys.argv[2]
seen = set()
for c in json.load(open(d + '/candidates.json'))['candidates']:
    parts = re.search(r'over (\d+) input', c['source']).group(1)
    t = re.search(r'thread (\S+) ', c['source']).group(1)
    if parts in seen or eval(t.replace('x', '*')) != 16: continue
    seen.add(parts)
    open(d + '/k.cu', 'w').write(c['source'])
    subprocess.run(['nvcc', '-arch=sm_90', '-cubin', '-O3', '-o', d + '/k.cubin', d + '/k.cu'], capture_output=True)
    sass = subprocess.run(['cuobjdump', '-sass', d + '/k.cubin'], capture_output=True, text=True).stdout
    n = len(re.findall(r'/\*[0-9a-f]{4,}\*/', sass))
    print(f"{side} {parts} parts thread {t}: cubin {os.path.getsize(d + '/k.cubin')} B, {n} instructions")
PY
done
echo "size: $(( $(date +%s) - t0 )) s"
for side in A B; do
  CUTS=${!side} WORK=/tmp/val$side OUT=$OUT/val$side BATCH=64 MAX_SECONDS=${MAX_SECONDS:-50} \
    MODELS="densenet121-simple" \
    DENSENET_SIMPLE_OPS=denseblock1/Concat,denseblock1/denselayer3/Concat,denseblock2/Concat,denseblock3/Concat \
    scripts/gpu_validate.sh > $OUT/val$side.log 2>&1
  grep -E "tuned in" $OUT/val$side.log
done
python3 - $OUT <<'PY'
import json, sys
def times(side, m):
    c = json.load(open(f'{sys.argv[1]}/val{side}/{m}/cache.json'))['entries']
    v = json.load(open(f'{sys.argv[1]}/val{side}/{m}/validation.json'))
    return {(s['op'].split(':')[0], s['params']): c[s['key']]['us'] for s in v['samples']
            if c.get(s['key'], {}).get('us')}
a, b = times('A', 'densenet121-simple'), times('B', 'densenet121-simple')
for op in sorted({k[0] for k in a}):
    common = [k for k in a if k[0] == op and k in b]
    if not common: continue
    r = sorted(b[k] / a[k] for k in common)
    print(f"{op[:58]:58s} sets {len(common):3d} best A {min(a[k] for k in common):7.1f} B {min(b[k] for k in common):7.1f} us; B/A median {r[len(r)//2]:.2f} p10 {r[len(r)//10]:.2f} p90 {r[9*len(r)//10]:.2f}")
PY
echo "validate: $(( $(date +%s) - t0 )) s"
MODELS="densenet121_b64_ts17" TUNE_SECONDS=45 OUT=/tmp/ab scripts/gpu_model_ab.sh > $OUT/ab.log 2>&1
cat /tmp/ab/table.txt
for f in /tmp/ab/*/kernels.txt; do echo "$f $(awk 'NR>3 && /elementwise chain/ {a+=$2;n++} END{print n, a}' $f)"; done
rm -rf /tmp/ab/*/out
tar czf $OUT/ab.tgz -C /tmp ab
tar czf $OUT/val.tgz -C $OUT valA valB && rm -rf $OUT/valA $OUT/valB
echo "total: $(( $(date +%s) - t0 )) s"

#!/usr/bin/env bash
# Call 93: a concat's picks read 128- and 64-bit vectors through the chosen
# part's pointer, and the streaming bound counts them so (B), against
# scalar picks through the pointer (A: 9f5ef6c's build, whose bound counted
# picks one word a lane).
# 1. Code size of one sampled set per concat, A and B.
# 2. B's validation: fresh samples (half kept under B's bound) of four
#    DenseNet-121 concats and ResNet-50's two Adds.
# 3. DenseNet-121, ResNet-50 and MobileNetV2 at batch 64 end to end, A/B.
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
    if parts in seen or eval(t.replace('x', '*')) != 16 or not t.endswith('x4'): continue
    seen.add(parts)
    open(d + '/k.cu', 'w').write(c['source'])
    subprocess.run(['nvcc', '-arch=sm_90', '-cubin', '-O3', '-o', d + '/k.cubin', d + '/k.cu'], capture_output=True)
    sass = subprocess.run(['cuobjdump', '-sass', d + '/k.cubin'], capture_output=True, text=True).stdout
    ldg = sorted(set(re.findall(r'LDG\S*', sass)))
    print(f"{side} {parts} parts thread {t}: cubin {os.path.getsize(d + '/k.cubin')} B, {sass.count('LDG')} LDG {ldg}")
PY
done
echo "size: $(( $(date +%s) - t0 )) s"
BATCH=64 MODELS="densenet121-simple resnet50-simple" MAX_SECONDS=${MAX_SECONDS:-50} OUT=$OUT/val \
  DENSENET_SIMPLE_OPS=denseblock1/Concat,denseblock1/denselayer3/Concat,denseblock2/Concat,denseblock3/Concat \
  RESNET_SIMPLE_OPS=layer1.0/Add,layer3.0/Add \
  scripts/gpu_validate.sh > $OUT/val.log 2>&1
grep -E "tuned in|fastest kept|Spearman" $OUT/val.log | cut -c1-220
echo "validate: $(( $(date +%s) - t0 )) s"
MODELS="densenet121_b64_ts17 resnet50_b64_ts17 mobilenetv2_b64_ts17" TUNE_SECONDS=45 OUT=/tmp/ab \
  scripts/gpu_model_ab.sh > $OUT/ab.log 2>&1
cat /tmp/ab/table.txt
for f in /tmp/ab/*/kernels.txt; do echo "$f $(awk 'NR>3 && /elementwise chain/ {a+=$2;n++} END{print n, a}' $f)"; done
rm -rf /tmp/ab/*/out
tar czf $OUT/ab.tgz -C /tmp ab
tar czf $OUT/val.tgz -C $OUT val && rm -rf $OUT/val
echo "total: $(( $(date +%s) - t0 )) s"

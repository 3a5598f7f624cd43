#!/usr/bin/env bash
# Times .exp/prof/*.json candidates (cuts tune) and profiles some with ncu.
source scripts/gpu_env.sh
cuts=$PWD/.gpu-bin/bin/cuts
mkdir -p /tmp/o; cd .exp/prof
for f in *.json; do
  n=${f%.json}; d=/tmp/p/$n; rm -rf $d; mkdir -p $d; cp $f $d/candidates.json
  $cuts tune $d --cache $d/cache.json --target-ms 5 > $d/log 2>&1
  us=$(python3 -c "
import json;c=json.load(open('$d/cache.json'));
def walk(x):
  if isinstance(x,dict):
    for k,v in x.items():
      if k in ('us','ms','seconds','time','timeUs','time_us'): print(k,v)
      walk(v)
  elif isinstance(x,list):
    for v in x: walk(v)
walk(c)" | tr '\n' ' ')
  echo "$n $us"
  cp $d/cache.json /tmp/o/cache_$n.json
done
for n in ${NCU:-A Ax B Bx C Cx F Fx}; do
  d=/tmp/p/$n; rm -f $d/c2.json
  timeout 120 ncu --clock-control none --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
    --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --csv --page raw \
    $cuts tune $d --cache $d/c2.json --target-ms 1 > /tmp/o/ncu_$n.csv 2> /tmp/o/ncu_$n.err
  echo "ncu $n rc=$? $(wc -l < /tmp/o/ncu_$n.csv) lines"
done
tar czf $OUT/prof.tgz -C /tmp/o .

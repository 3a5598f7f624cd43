#!/usr/bin/env python3
"""The same parameter sets timed with two builds (scripts/gpu_validate.sh with
$CUTS and $WORK set for the old one): per op, each set's new/old time.

  scripts/validate_ab.py OLD_DIR NEW_DIR MODEL [MODEL ...]
"""
import sys, statistics
sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from validate_report import timed
old, new = sys.argv[1], sys.argv[2]
for m in sys.argv[3:]:
    a, b = timed(f'{old}/{m}'), timed(f'{new}/{m}')
    for op in a:
        if op not in b:
            continue
        ta = {s['params']: us for s, us in a[op]}
        tb = {s['params']: us for s, us in b[op]}
        common = [p for p in ta if p in tb]
        if not common:
            continue
        r = sorted(tb[p] / ta[p] for p in common)
        print(f"{op.split(':')[0][:50]:50s} n {len(common):3d} best old {min(ta.values()):8.1f} new {min(tb.values()):8.1f} us"
              f"  new/old median {statistics.median(r):.2f} p10 {r[len(r)//10]:.2f} p90 {r[9*len(r)//10]:.2f}")

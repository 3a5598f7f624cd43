"""Checks the JSON of `cuts explain --json` (schema in the README) on stdin."""
import json
import sys

r = json.load(sys.stdin)
assert r["arch"] == "H100-SXM", r["arch"]
assert r["topPercent"] == 1 and r["minKeep"] == 8 and r["maxKeep"] == 4096 and r["fusion"] is True
assert r["precision"] == "fp32"
t = r["totals"]
assert t["ops"] == 11 and 3 <= t["kernels"] <= 10 and not t["truncated"], t
total = 0.0
covered = []
for g in r["groups"]:
    covered += [o["name"] for o in g["ops"]]
    total += g["timeLowerBoundUs"]
    if g["fusion"] == "view":
        continue
    b = g["best"]
    for f in ("pul", "gmRatio", "smRatio", "wbRatio", "coefR", "latRatio"):
        assert 0 <= b[f] <= 1, (f, b[f])
    # The thesis's product (simple ops) or the issue roofline's least
    # ceiling (convs, matmuls, depthwise convs: perfmodel/Roofline.h).
    product = b["gmRatio"] * b["smRatio"] * b["wbRatio"] * b["coefR"]
    roofline = min(b["gmRatio"], b["smRatio"] * b["wbRatio"]) * b["coefR"]
    issue = g["anchor"] in ("conv", "matmul", "depthwise_conv")
    assert abs(b["pul"] - (roofline if issue else product) * b["latRatio"]) < 1e-12, g
    assert 0 < g["kept"] <= g["enumerated"], g
    p = b["params"]
    assert p["Nb"] % p["Nt"] == 0 and p["Kb"] % p["Kt"] == 0
    assert len(p["formatShared"]) == 4
assert sorted(covered) == sorted(set(covered)) and len(covered) == 11, covered
assert abs(total - t["timeLowerBoundUs"]) < 1e-6 * max(1.0, total)
print("ok")

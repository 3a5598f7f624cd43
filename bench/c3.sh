#!/usr/bin/env bash
# ConCCL's C3 study (issues 38, 36): Table II's 15 scenarios with
# all-gather and all-to-all among the ranks of $GPUS (default 0,0: two
# ranks on one GPU; 0,1,...: a rank a GPU, each running the GEMM beside its
# part of the collective), the slowdown tables, every configuration's % of
# the ideal speedup and the model's pick. Output:
# bench/out/c3-<arch>[-<n>gpu].json and .txt.
#
#   GPUS=0,1 bench/c3.sh [directory of cuts, default .gpu-bin/bin] [arch] [extra cuts c3 options]
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.gpu-bin/bin}
ARCH=${2:-h200}
shift $(( $# < 2 ? $# : 2 ))
GPUS=${GPUS:-0,0}
n=$(tr , '\n' <<<"$GPUS" | sort -u | wc -l)
TAG=$ARCH$([ "$n" -gt 1 ] && echo "-${n}gpu")
mkdir -p bench/out
"$BIN/cuts" c3 --gpus "$GPUS" --json "$@" > bench/out/c3-$TAG.json || exit 1
python3 - "$TAG" <<'PY'
import json, sys
j = json.load(open("bench/out/c3-%s.json" % sys.argv[1]))
out = open("bench/out/c3-%s.txt" % sys.argv[1], "w")
def p(*a):
    print(*a); print(*a, file=out)
p("%s, %d SMs, %d ranks on %d GPU(s), sizes x%.2f, %d iters" % (j["device"], j["sms"], j["ranks"], j.get("gpus", 1), j["scale"], j["iters"]))
t = j["tables"]
p("isolated: cb1 %.2f ms, mb1 %.2f ms; all-gather %.2f ms on SMs (%d blocks of 512 threads), %.2f ms on copy engines (%.0f GB/s read+written)" % (
    t["gemm_all_ms"]["cb1"], t["gemm_all_ms"]["mb1"], t["comm_sm_ms"], t["comm_blocks"], t["comm_ce_ms"], t["copy_engine_gbs"]))
p("SM collective by grid: " + ", ".join("%d blocks %.2f ms" % (g["blocks"], g["ms"]) for g in t["comm_grid_sweep"]))
p("SMs to the collective | GEMM SMs | cb1 on them | mb1 on them | collective on its SMs | mb1 beside the collective")
for s in t["splits"]:
    p("%d | %d | %.2f | %.2f | %.2f | %.2f" % (s["comm_sms"], s["gemm_sms"], s["cb1_slowdown"], s["mb1_slowdown"], s["comm_slowdown"], s["mb1_beside_comm"]))
p("mb1 beside the copy engines' collective: %.2f" % t["mb1_beside_ce"])
def pct(r, prefix):
    v = [c["pct_ideal"] for c in r["configs"] if c["config"] == prefix or c["config"].startswith(prefix + "(")]
    return max(v) if v else float("nan")
p("scenario | collective | type | G ms | C ms (SM) | C ms (CE) | ideal (SM, CE) | base | sp | rp | conccl | conccl_rp | best | pick | pick/best")
for r in j["scenarios"]:
    p("%s | %s | %s | %.2f | %.2f | %.2f | %.2fx, %.2fx | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %s | %s | %.3f" % (
        r["scenario"], r["collective"], r["type"], r["gemm_ms"], r["comm_sm_ms"], r["comm_ce_ms"], r["ideal_speedup"], r["ideal_speedup_ce"],
        pct(r, "c3_base"), pct(r, "c3_sp"), pct(r, "c3_rp"), pct(r, "conccl"), pct(r, "conccl_rp"), r["best"], r["pick"], r["pick_over_best"]))
s = j["summary"]
p("mean %% of ideal: c3_base %.0f, c3_sp %.0f, c3_rp %.0f, conccl %.0f, conccl_rp %.0f, heuristic %.0f; pick within 10%% of the best: %d of %d" % (
    s["c3_base"], s["c3_sp"], s["c3_rp"], s["conccl"], s["conccl_rp"], s["heuristic"], s["hits"], s["scenarios"]))
PY

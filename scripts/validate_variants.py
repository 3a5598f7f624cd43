#!/usr/bin/env python3
"""Issue 3: scores variants of the bound against earlier GPU validations,
without a GPU, so a model change can be tried before it is written in C++.

Each argument pairs a scripts/gpu_validate.sh folder with a dump of every
parameter set's factors under the current model (tools/cuts-dump-sets):

  build/tools/cuts-dump-sets/cuts-dump-sets model.onnx -o sets.tsv
  scripts/validate_variants.py DIR:sets.tsv [DIR:sets.tsv ...]

For each variant (a time bound computed from the dumped factors) and each
folder it prints: in how many ops the measured fastest set is kept (top 1 %,
at least 8), how much slower the fastest kept set is at worst, and the share
of timed sets that ran faster than their bound allows. A folder whose name
has "mobilenet" holds depthwise convs (their per-step loads differ).
The variants other than "current" recombine a dump's factors as the
thesis's product defined them: they mean what they say on dumps made before
the issue roofline (commit of 2026-11-24, perfmodel/Roofline.h), such as
/tmp dumps of that model; on later dumps GMRatio and SMRatio are the
roofline's. Parsing a dump is slow (a minute for ResNet-50); it is cached next to it.
VERBOSE=1 prints each op; ONLY=a,b picks variants.
"""
import hashlib
import math
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_rerank import load, ranking  # noqa: E402
from validate_report import spearman  # noqa: E402

PEAK = 66.9e12  # the H200 descriptor's FP32 peak, as the dump's bounds use
LAT_SHARED = 23
NUM_SM = 132
RIDGE = PEAK / 4.8e12
LAUNCH_US = 0.549


def score(data, bound, verbose):
    kept_ops, worst, over, timed_n = 0, 1.0, 0, 0
    top8, rho = [], []
    for op, (m, sets) in data.items():
        n = len(sets)
        t = {p: bound(r) for p, r in sets.items()}
        rank, k = ranking(sets, lambda p: (t[p], -sets[p]["headroom"]))
        m = {p: us for p, us in m.items() if p in rank}
        best = min(m, key=m.get)
        kept = [p for p in m if rank[p] < k]
        slower = min(m[p] for p in kept) / m[best] if kept else math.inf
        kept_ops += rank[best] < k
        worst = max(worst, slower)
        over += sum(t[p] > us for p, us in m.items())
        timed_n += len(m)
        # What the tuner times: the best set of each of the first 8
        # distinct tilings (FORMAT_shared aside), best bound first.
        tilings = []
        for p in sorted(m, key=lambda p: rank[p]):
            if p[:9] not in [q[:9] for q in tilings]:
                tilings.append(p)
            if len(tilings) == 8:
                break
        top8.append(min(m[p] for p in tilings) / m[best])
        rho.append(spearman([t[p] for p in m], [m[p] for p in m]))
        if verbose:
            print(f"  {op[:50]:50s} fastest at rank {rank[best]:6d} of {n}; "
                  f"fastest kept {slower:.3f}x; bound {t[best]:.1f} us, measured {m[best]:.1f}")
    top8.sort()
    rho.sort()
    return (f"{kept_ops}/{len(data)} kept, worst {worst:.3f}x, {over / timed_n:.0%} beat their bound; "
            f"first 8 tilings: median {top8[len(top8) // 2]:.3f}x, worst {top8[-1]:.3f}x; "
            f"median Spearman {rho[len(rho) // 2]:.2f}")



def variants():
    def with_factors(combine):
        """The dumped bound with GMRatio x SMRatio replaced by combine(row)."""
        def bound(r):
            if r["coefR"] == 0 or r["wb"] == 0:
                return math.inf
            return max(r["work"] / (combine(r) * r["wb"] * PEAK) * 1e6, r["chain"])
        return bound

    def warps_per_scheduler(r):
        return max(1.0, r["resident"] * math.ceil(r["threads"] / 32) / 4)

    def loads_per_step(r):  # one channel (and tap) of a thread's tile
        _, _, _, _, nt, kt, ht, wt, _, _ = r["params"]
        return kt + (kt if r.get("depthwise") else 1) * nt * ht * wt

    def sm_pipelined(r):
        # A step's loads are independent: in flight together, their latency
        # is paid once per step, not once per load.
        if r["sm"] >= 1:
            return 1.0
        loads = loads_per_step(r)
        fma = loads * r["compThread"] / r["nLoad"]
        return min(1.0, warps_per_scheduler(r) * fma /
                   (loads * r["coefBc"] + LAT_SHARED + fma))

    def sm_throughput(r):
        # The shared-memory roofline: an SM serves one 128-byte wavefront
        # of shared loads a cycle and issues 4 warp FMAs; a load costs
        # COEF_bc wavefronts.
        # (COMP_thread counts FLOPs: an H200 SM does 256 a cycle.) Complex
        # ops only: depthwise convs are memory-bound.
        if r.get("depthwise"):
            return math.inf
        return r["compThread"] / (8 * r["nLoad"] * r["coefBc"])

    def gm_per_sm(r):
        # Busy SMs share BW_global, each drawing at most what one SM alone
        # draws (bwL2PerSM, measured by cuts-probe on the H200: 95.2 GB/s).
        active = min(NUM_SM, r["blocks"])
        share = min(NUM_SM / active, 95.2e9 / (4.8e12 / NUM_SM))
        return min(1.0, r["oiTB"] / RIDGE * share)

    def sm_throughput_words(r):
        # As sm_throughput, with a matmul's 128-bit B loads (lanes at
        # distinct columns) costing 4 wavefronts each.
        _, _, _, _, nt, kt, _, _, _, _ = r["params"]
        if r.get("matmul") and kt % 4 == 0:
            extra = r["C"] * kt * 0.75  # words beyond the instructions
            return r["compThread"] / (8 * (r["nLoad"] + extra) * r["coefBc"])
        return sm_throughput(r)

    def gm_active(r):
        # A grid that leaves SMs idle leaves their bandwidth to the others.
        active = min(NUM_SM, r["blocks"])
        return min(1.0, r["oiTB"] / RIDGE * NUM_SM / active)

    def issue_time(r, lat=6.0, fetch_instr=8.0):
        # Instruction issue: a thread issues an FFMA per FMA (COMP_thread / 2),
        # an LDS per shared load and fetch_instr instructions per element it
        # fetches (LDG, STS, address arithmetic, bounds checks); a scheduler
        # issues one a cycle when its warps cover each one's own latency
        # (1 + lat cycles): efficiency min(1, warps / (1 + lat)).
        if r["coefR"] == 0 or r["wb"] == 0:
            return math.inf
        fetched = r["numTrans"] * 32 / r["threads"]
        instr = r["compThread"] / 2 + r["nLoad"] * r["coefBc"] + fetched * fetch_instr
        warps = math.ceil(r["threads"] / 32)
        per_sched = r["resident"] * warps / 4
        eff = min(1.0, per_sched / (1 + lat))
        active = min(NUM_SM, r["blocks"])
        blocks_per_sm = math.ceil(r["blocks"] / (active * r["resident"])) * r["resident"]
        cycles = blocks_per_sm * warps * instr / 4 / eff
        return cycles / 1.98e3  # us

    def mem_time(r):
        # GMRatio's DRAM time, over the SMs the grid keeps busy when they are
        # too few to draw BW_global (95.2 GB/s each, cuts-probe on the H200).
        if r["coefR"] == 0 or r["wb"] == 0:
            return math.inf
        active = min(NUM_SM, r["blocks"])
        return r["work"] / (r["gm"] * PEAK) * 1e6 / min(1.0, active * 95.2e9 / 4.8e12)

    def smem_time(r):
        # An SM's shared memory serves one wavefront a cycle; a warp's load
        # costs COEF_bc of them.
        if r["coefR"] == 0 or r["wb"] == 0:
            return math.inf
        warps = math.ceil(r["threads"] / 32)
        active = min(NUM_SM, r["blocks"])
        blocks_per_sm = math.ceil(r["blocks"] / (active * r["resident"])) * r["resident"]
        return blocks_per_sm * warps * r["nLoad"] * r["coefBc"] / 1.98e3

    def roof(lat, fi):
        # The issue roofline (perfmodel/Roofline.h): the least ceiling, as
        # the time's maximum. Written from a dump of the thesis's product,
        # whose GMRatio had no per-SM cap; the C++ model is lat 3, fetch 16.
        return lambda r: max(mem_time(r), issue_time(r, lat, fi), r["chain"], smem_time(r))

    out = {f"issue roofline, latency {l}, fetch {f}": roof(l, f)
           for l in (3, 4, 5, 6) for f in (8, 16, 24, 32)}
    return {**out,
        "current": lambda r: r["tlb"],
        # A kernel's graph launch (the descriptor's launchSeconds), which the
        # group estimate adds: ranks the same, bounds tighter.
        "current + launch": lambda r: r["tlb"] + LAUNCH_US,
        "min(GM, SM)": with_factors(lambda r: min(r["gm"], r["sm"])),
        "sqrt(GM x SM)": with_factors(lambda r: math.sqrt(r["gm"] * r["sm"])),
        "GM x SM pipelined": with_factors(lambda r: r["gm"] * sm_pipelined(r)),
        "GM over active SMs": with_factors(lambda r: gm_active(r) * r["sm"]),
        "GM per-SM cap + shared roof": with_factors(
            lambda r: min(gm_per_sm(r) * r["sm"], sm_throughput(r))),
        "SM capped by shared words": with_factors(
            lambda r: r["gm"] * min(r["sm"], sm_throughput_words(r))),
        "shared throughput as its own roof": with_factors(
            lambda r: min(r["gm"] * r["sm"], sm_throughput(r))),
        "SM capped by shared throughput": with_factors(
            lambda r: r["gm"] * min(r["sm"], sm_throughput(r))),
    }


def main():
    folders = []
    for arg in sys.argv[1:]:
        folder, tsv = arg.split(":")
        tag = hashlib.md5(os.path.abspath(folder).encode()).hexdigest()[:8]
        cache = f"{tsv}.{tag}.pkl"
        if os.path.exists(cache) and os.path.getmtime(cache) > os.path.getmtime(tsv):
            with open(cache, "rb") as f:
                data = pickle.load(f)
        else:
            data = load(folder, tsv)
            with open(cache, "wb") as f:
                pickle.dump(data, f)
        if "bert" in folder:
            for _, sets in data.values():
                for r in sets.values():
                    r["matmul"] = True
        if "mobilenet" in folder:
            for _, sets in data.values():
                for r in sets.values():
                    r["depthwise"] = True
        folders.append((os.path.basename(os.path.normpath(folder)), data))
    only = os.environ.get("ONLY")
    for name, bound in variants().items():
        if only and name not in only.split(","):
            continue
        print(name)
        for folder, data in folders:
            print(f" {folder}: {score(data, bound, bool(os.environ.get('VERBOSE')))}")


if __name__ == "__main__":
    main()

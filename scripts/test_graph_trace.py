#!/usr/bin/env python3
"""graph_trace.py on a synthetic trace (ctest graph-trace): nodes ordered by
their start, gaps against the latest end before them (an overlap negative),
eager kernels and the first replays left out."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    lines = ["0,5000,7,0,eager_kernel"]  # not in a graph: left out
    for r in range(5):
        t = 100000 * r + (50000 if r == 0 else 0)  # replay 0 is skipped
        lines += [f"{t + 1000},{t + 11000},7,11,first",
                  f"{t + 10000},{t + 30000},7,12,overlapping",  # -1 us
                  f"{t + 31000},{t + 31500},9,13,MEMSET 4",
                  f"{t + 33500},{t + 40000},7,14,after_gap"]  # 2 us
    with tempfile.TemporaryDirectory() as d:
        trace, out = os.path.join(d, "t.csv"), os.path.join(d, "t.json")
        with open(trace, "w") as f:
            f.write("\n".join(lines) + "\n")
        run = subprocess.run([sys.executable, os.path.join(HERE, "graph_trace.py"),
                              trace, "--skip", "1", "--json", out],
                             capture_output=True, text=True, check=True)
        got = json.load(open(out))
    names = [n["name"] for n in got["nodes"]]
    assert names == ["first", "overlapping", "MEMSET 4", "after_gap"], names
    gaps = [round(n["gap_us"], 3) for n in got["nodes"]]
    assert gaps == [0.0, -1.0, 1.0, 2.0], gaps
    assert [round(n["us"], 3) for n in got["nodes"]] == [10.0, 20.0, 0.5, 6.5]
    assert round(got["span_us"], 3) == 39.0, got["span_us"]
    assert "4 replays" in run.stdout, run.stdout
    print("graph_trace: ok")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""ctest driver of the ONNX node-test conformance run.

Generates the node tests of the installed onnx package (cached per onnx
version), runs cuts-conformance on them (with --numeric: every test whose
shapes pass is also compiled and run on the CPU, each output compared with the
test's) and checks that
  - at least 97 % of the tests whose ops and element types cuts covers pass,
  - every failure is listed in expected_failures.txt (no regressions),
  - every listed failure still fails (the list stays honest),
and the same for the numeric results against expected_numeric_failures.txt.
With --data DIR (Debian's libonnx-testdata) the tests on disk are run, against
the lists named with the --lists prefix; without DIR the test is skipped.
"""
import argparse
import json
import os
import subprocess
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--data", help="node tests on disk (Debian's "
                    "libonnx-testdata) instead of the onnx package's")
    ap.add_argument("--shapes-only", action="store_true",
                    help="import and check shapes; compile and run nothing")
    ap.add_argument("--lists", default="",
                    help="prefix of the expected-failure lists")
    a = ap.parse_args()
    data = os.path.join(a.work, "node-" + onnx.__version__)
    if a.data:
        data = a.data
        if not os.path.isdir(data):
            print(f"no node tests at {data}: skipped")
            return 77  # ctest's SKIP_RETURN_CODE
    elif not os.path.isdir(data):
        subprocess.run([sys.executable, os.path.join(HERE, "gen_node_tests.py"),
                        data + ".tmp"], check=True)
        os.rename(data + ".tmp", data)
    os.makedirs(a.work, exist_ok=True)
    report = os.path.join(a.work, a.lists + "conformance.json")
    run = subprocess.run([a.runner, data, "--json", report] +
                         ([] if a.shapes_only else ["--numeric"]) +
                         ["--jobs", str(os.cpu_count() or 1)],
                         capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print("cuts-conformance exited with", run.returncode)
        return 1
    results = json.load(open(report))

    def listed(fname):
        out = {}
        for line in open(os.path.join(HERE, fname)):
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, why = line.partition(" ")
                out[name] = why.strip()
        return out

    def against(expected, failed, passed, fname, what):
        good = True
        for name in sorted(failed - set(expected)):
            print(f"REGRESSION: {name} fails {what}and is not listed in "
                  f"{fname}")
            good = False
        for name in sorted(set(expected) & passed):
            print(f"NOW PASSING: {name}: remove it from {fname}")
            good = False
        return good

    failed = {r["name"] for r in results if r["status"] == "failed"}
    passed = {r["name"] for r in results if r["status"] == "passed"}
    lists = a.lists + "expected_failures.txt"
    numeric_lists = a.lists + "expected_numeric_failures.txt"
    ok = against(listed(lists), failed, passed, lists, "")
    num = {k: {r["name"] for r in results if r.get("numeric") == k}
           for k in ("passed", "failed", "skipped")}
    ok &= against(listed(numeric_lists), num["failed"], num["passed"],
                  numeric_lists, "numerically ")
    print(f"conformance, numeric: {len(num['passed'])} of the "
          f"{len(passed)} passing node tests compiled, ran on the CPU and "
          f"matched their outputs, {len(num['failed'])} did not, "
          f"{len(num['skipped'])} are not compiled yet")
    covered = len(passed) + len(failed)
    rate = len(passed) / covered if covered else 0.0
    print(f"conformance: {len(passed)}/{covered} covered node tests pass "
          f"({100 * rate:.1f} %), {len(results) - covered} skipped")
    if rate < 0.97:
        print("conformance: below the 97 % bar")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

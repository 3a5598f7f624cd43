#!/usr/bin/env python3
"""Checks the source tree keeps the shape the project holds itself to:

- no function in compiler/, codegen/ or runtime/ is over 150 lines
  (lizard counts them);
- nothing outside runtime/ includes a runtime header other than its public
  ones (runtime/include/cuts/) or its internal target's
  (runtime/internal/cuts/rt/), and those only by their include paths;
- bench/results/ holds one report per GPU: tracked files under 3 MB in all,
  and no per-call scripts (call*.sh) anywhere.

usage: check_tree.py [ROOT]     (exit 1, each breach on a line, if any)
"""
import os
import re
import subprocess
import sys

MAX_FUNCTION_LINES = 150
MAX_RESULTS_BYTES = 3 << 20
SOURCES = (".cpp", ".h", ".cu", ".td", ".inc")


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files"], check=True,
                         capture_output=True, text=True).stdout
    return [p for p in out.splitlines() if os.path.exists(os.path.join(root, p))]


def long_functions(root, files):
    import lizard
    bad = []
    for path in files:
        if not path.startswith(("compiler/", "codegen/", "runtime/")) or \
                not path.endswith((".cpp", ".h")):
            continue
        info = lizard.analyze_file(os.path.join(root, path))
        for f in info.function_list:
            if f.length > MAX_FUNCTION_LINES:
                bad.append("%s:%d: %s is %d lines (at most %d)" %
                           (path, f.start_line, f.name, f.length,
                            MAX_FUNCTION_LINES))
    return bad


def runtime_includes(root, files):
    """#include "runtime/..." outside runtime/, or of a header that lives
    only in runtime/ (its private ones)."""
    private = {os.path.basename(p) for p in files
               if p.startswith("runtime/") and p.count("/") == 1 and
               p.endswith(".h")}
    bad = []
    pattern = re.compile(r'#\s*include\s*"([^"]+)"')
    for path in files:
        if path.startswith("runtime/") or not path.endswith(SOURCES):
            continue
        with open(os.path.join(root, path), errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = pattern.search(line)
                if not m:
                    continue
                inc = m.group(1)
                if inc.startswith("runtime/") or inc in private:
                    bad.append("%s:%d: includes %s, a private runtime header "
                               "(use cuts/*.h or cuts/rt/*.h)" % (path, n, inc))
    return bad


def results(root, files):
    bad = []
    size = sum(os.path.getsize(os.path.join(root, p)) for p in files
               if p.startswith("bench/results/"))
    if size > MAX_RESULTS_BYTES:
        bad.append("bench/results/: %.1f MB tracked (at most %.0f MB)" %
                   (size / 2**20, MAX_RESULTS_BYTES / 2**20))
    for p in files:
        if re.fullmatch(r"call\d+\.(sh|py)", os.path.basename(p)):
            bad.append("%s: a per-call script (make it a parameterised "
                       "script in scripts/)" % p)
    return bad


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    files = tracked(root)
    bad = long_functions(root, files) + runtime_includes(root, files) + \
        results(root, files)
    for line in bad:
        print(line)
    print("check_tree: %d problem(s) in %d tracked files" %
          (len(bad), len(files)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# `pip install .` of the source tree (as the README's set-up leaves it: no
# network needed, the build requirements installed), into a directory of
# its own; the package imported from there runs a model emulated.
#   test_install.sh SOURCE_DIR WORK_DIR CUTS
set -euo pipefail
src=$1 work=$2 cuts=$3
rm -rf "$work" && mkdir -p "$work"
python3 -m pip install -q --disable-pip-version-check --no-build-isolation \
  --no-deps --target "$work/site" "$src" 2>&1 | grep -v "Running pip as" || true
test -f "$work/site/cuts/__init__.py"
cd "$work"
PYTHONPATH="$work/site" CUTS_EXECUTABLE="$cuts" python3 - "$src" <<'PY'
import os, sys
import numpy as np
import cuts
assert os.path.dirname(cuts.__file__).startswith(os.getcwd()), cuts.__file__
sys.path.insert(0, os.path.join(sys.argv[1], "test", "models"))
import test_compile
onnx = test_compile.make_dynamic_batch("rows.onnx", "rows")
art = cuts.compile(onnx, "sm_90", "out", batch=[2], progress=False)
y = cuts.load(art, emulate=True).session().run(
    {"x": np.ones((2, 6, 16), np.float32), "s": np.ones(16, np.float32)})["y"]
assert y.shape == (2, 6, 8) and np.allclose(y.sum(-1), 1), y
print("pip install . ok:", cuts.__file__)
PY

#!/usr/bin/env bash
# On the GPU host (after scripts/package_gpu.sh here, with .gpu-bin carried):
# the benchmark's models, peers (PyTorch eager, eager + CUDA graph, fp32, TF32
# off) and cuts phases for ResNet-50 and MobileNetV2 at batch 1 and 64, then
# the per-kernel view of each model at batch 1. Results go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
# cuDNN 9 for the library alternative: the system's, else PyTorch's copy.
if ! ldconfig -p | grep -q libcudnn.so.9; then
  d=$(python3 -c "import nvidia.cudnn as c, os; print(os.path.join(list(c.__path__)[0], 'lib'))" 2>/dev/null)
  [ -n "$d" ] && export LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
fi
OUT=${OUT:-/tmp/e2e}
mkdir -p "$OUT"
cuts=$PWD/.gpu-bin/bin/cuts
models=${MODELS:-resnet50 mobilenet_v2}
nvidia-smi -L
$cuts --version || exit 1
python3 bench/run.py --out "$OUT/bench" --phases models peers cuts \
  --models $models --precisions fp32 --peers eager cuda_graph \
  --cuts "$cuts" --budget ${BUDGET:-420} --phase-budget ${BUDGET:-420} \
  --no-report 2>&1 | tail -40
for m in $models; do
  f=$(ls bench/models/${m}_b1_*.onnx 2>/dev/null | head -1)
  [ -n "$f" ] || continue
  $cuts compile "$f" --arch sm_90 -o "$OUT/$m" --emit-source > "$OUT/$m.compile.txt" 2>&1
  $cuts bench "$OUT/$m/model.cuts" --iters 100 --kernels > "$OUT/$m.kernels.txt" 2>&1
  $cuts bench "$OUT/$m/model.cuts" --iters 200 --graph >> "$OUT/$m.kernels.txt" 2>&1
  tail -3 "$OUT/$m.compile.txt"; head -1 "$OUT/$m.kernels.txt"; tail -1 "$OUT/$m.kernels.txt"
  tar czf "$OUT/$m.kernels.tgz" -C "$OUT/$m" kernels && rm -rf "$OUT/$m"
done
python3 - "$OUT/bench/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("cell                  eager(ms)  graph(ms)  cuts(ms)  cuts/graph  compile(s)")
for key in sorted(r.get("cuts", {})):
    c = r["cuts"][key]
    p = r.get("peers", {}).get(key, {})
    def med(e):
        return e.get("median_ms") if isinstance(e, dict) else None
    eager, graph = med(p.get("eager", {})), med(p.get("cuda_graph", {}))
    cm = c.get("median_ms")
    ratio = cm / graph if cm and graph else None
    fmt = lambda v: "%9.3f" % v if v else "        -"
    print("%-20s %s  %s  %s  %s  %s  %s" % (key, fmt(eager), fmt(graph), fmt(cm),
          fmt(ratio), fmt(c.get("compile_s")), c.get("status", c.get("error", ""))[:80]))
PY

#!/usr/bin/env bash
# Tensor-parallel latency (issues 38, 36): GPT-2 and BERT-base (seq 128,
# batch 1, in $PRECISION: fp16 unless set) compiled whole and with --tensor-parallel 2 and 4, each
# rank plan run on every device list of its size (bench/device_lists.sh,
# or a repeated device where the host has fewer), host runs (cuts bench
# --gpus), against the whole model on one GPU, and PyTorch's tensor
# parallelism and async TP where torch is installed (bench/torch_tp.py).
# The outputs of every device list are checked against one GPU's first
# (cuts run --compare).
# Resumable; output in bench/out/tensor-parallel-<arch>.txt.
#
#   bench/tensor_parallel.sh [directory of cuts, default .gpu-bin/bin] [arch]
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.gpu-bin/bin}
ARCH=${2:-h200}
PRECISION=${PRECISION:-fp16}
W=${WORK:-/tmp/cuts-tp}/$PRECISION
OUT=bench/out/tensor-parallel-$ARCH-$PRECISION.txt
source bench/prepare.sh
mkdir -p bench/out "$W"
NL=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=${NL:+$NL:}${LD_LIBRARY_PATH:-}
lists_of() { # device lists of $1 entries: distinct GPUs where there are enough
  local n=$1 have
  have=$(nvidia-smi -L | grep -c "^GPU ")
  if [ "$have" -ge "$n" ]; then seq -s, 0 $((n - 1)); fi
  python3 -c "print(','.join(['0'] * $n))"
}
# fp32 splits match to 1e-5; 16-bit ones round each rank's partial sum,
# so they get the precision's default tolerance.
tol=$([ "$PRECISION" = fp32 ] && echo "--tolerance 1e-5")
tdtype=$([ "$PRECISION" = tf32 ] && echo fp32 || echo "$PRECISION")
{
  nvidia-smi -L
  for m in gpt2_s128_dyn20 bert_base_s128_dyn20; do
    inflate_model "$W" "$m"
    feeds=$(python3 - "$W/in/$m" "$m" <<'PY'
import numpy as np, os, sys
d, m = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(1)
np.save(os.path.join(d, "ids.npy"), rng.integers(0, 30000, (1, 128)).astype(np.int64))
args = "--input input_ids=%s" % os.path.join(d, "ids.npy")
if m.startswith("bert"):
    np.save(os.path.join(d, "mask.npy"), np.ones((1, 128), np.int64))
    args += " --input attention_mask=%s" % os.path.join(d, "mask.npy")
print(args)
PY
)
    for r in 1 2 4; do
      a=$W/$m/tp$r; mkdir -p "$W/$m"
      extra=$([ $r -gt 1 ] && echo "--tensor-parallel $r")
      compile_model "$W" "$m" "$a" --arch "$ARCH" --precision "$PRECISION" \
        $extra || continue
      if [ $r -eq 1 ]; then
        mkdir -p "$W/$m/ref"
        "$BIN/cuts" run "$a/model.cuts" $feeds --output-dir "$W/$m/ref" >/dev/null
        echo "$m whole: $("$BIN/cuts" bench "$a/model.cuts" --gpus 0 --iters 50 | head -1 | sed 's/.*: //')"
        continue
      fi
      for gpus in $(lists_of $r); do
        "$BIN/cuts" run "$a/model.cuts" --gpus "$gpus" $feeds --compare "$W/$m/ref" \
          $tol >/dev/null 2>&1 || echo "$m tp$r on $gpus: OUTPUTS DIFFER"
        echo "$m tp$r on $gpus: $("$BIN/cuts" bench "$a/model.cuts" --gpus "$gpus" --iters 50 | head -1 | sed 's/.*: //')"
      done
    done
  done
  # The peer: PyTorch on one GPU (eager, compiled) and tensor-parallel with
  # sequence parallelism, with and without async TP (bench/torch_tp.py).
  if python3 -c "import torch" 2>/dev/null; then
    have=$(nvidia-smi -L | grep -c "^GPU ")
    for m in gpt2 bert; do
      for c in none default; do
        python3 bench/torch_tp.py --model $m --compile $c --iters 30 \
          --dtype "$tdtype"
      done
      for n in 2 4; do
        [ "$have" -ge $n ] || continue
        for async in "" --async-tp; do
          python3 -m torch.distributed.run --nproc-per-node $n \
            bench/torch_tp.py --model $m --tp $async --compile default \
            --iters 30 --dtype "$tdtype" 2>&1 | grep "^torch"
        done
      done
    done
  fi
} 2>&1 | tee "$OUT"

#!/usr/bin/env bash
# On the GPU host (after scripts/package_gpu.sh here, with .gpu-bin
# carried): the code generator's GPU check.
#  1. test_compile.py --gpu: every small test model (shared-memory-level
#     fused, grouped, rows over lanes, ...) compiled, emulated on the CPU and
#     run on the GPU, each against ONNX Runtime;
#  2. compute-sanitizer memcheck and racecheck on the shared-memory-level
#     fused artifacts (the producer phase's stores and barriers) and on the
#     fp16 models (tensor-core main loops: cp.async, ldmatrix, wgmma);
#  3. tools/cuts-kernel-check: generated GEMMs (BERT-base shapes, kept and
#     pruned sets) against cuBLAS SGEMM, JSON in $OUT/gemm.json;
#  4. the same with --tensor-core fp16: tensor-core GEMMs (BERT-base and
#     GPT-2 shapes, mma.sync and wgmma tilings) against cublasGemmEx.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-/tmp/codegen-check}
mkdir -p "$OUT"
b=$PWD/.gpu-bin
w=/tmp/tc
echo "== test_compile --gpu"
python3 test/models/test_compile.py --gpu --cuts $b/bin/cuts --work $w \
  2>&1 | tee $OUT/test_compile.txt | grep -v "^ok" | tail -15
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
# A model's artifact is $w/NAME/out, or $w/NAME/PRECISION for the reduced-
# precision compiles (resnet_stage's conv_sum, the stem's paired pixels).
for m in shared_conv shared_layernorm grouped_conv half_transformer \
  half_convnet resnet_stage/fp16 resnet_stage/bf16; do
  d=$w/${m%%/*}
  art=$w/$m/model.cuts
  [ "$m" = "${m%%/*}" ] && art=$w/$m/out/model.cuts
  ins=""
  for f in $d/*.npy; do
    n=$(basename $f .npy)
    [ -f $d/ref/$n.npy ] || ins="$ins --input $n=$f"
  done
  case $m in */fp16) tol="--tolerance 2e-3" ;; */bf16) tol="--tolerance 1e-2" ;;
    *) tol="" ;; esac
  for tool in memcheck racecheck; do
    printf "== %s %s: " $tool $m
    log=$OUT/sanitize-$tool-${m//\//-}.txt
    $cs --tool $tool --error-exitcode 9 $b/bin/cuts-run run $art \
      $ins --compare $d/ref $tol > $log 2>&1
    echo "rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $log)"
    grep -E "Program hit|Invalid|out of bounds|hazard" $log | sort | uniq -c | head -3
  done
done
echo "== generated GEMMs vs cuBLAS"
$b/bin/cuts-kernel-check --arch h200 --kept ${KEPT:-24} \
  --pruned ${PRUNED:-12} --json $OUT/gemm.json 2>&1 | tee $OUT/gemm-summary.txt | tail -9
echo "== tensor-core GEMMs (fp16) vs cublasGemmEx"
$b/bin/cuts-kernel-check --tensor-core fp16 --json $OUT/tc-fp16.json \
  2> $OUT/tc-fp16-errors.txt | tee $OUT/tc-fp16-summary.txt | tail -18

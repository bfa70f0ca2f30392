#!/usr/bin/env bash
# run_gpu_bf16x3.sh — one bounded device call checking `--compute fp32`'s bf16x3 GEMM (issue 15,
# rs_gpu_gemm.h) where it matters: every stage has its own time limit, the summary comes back last
# (also OUTDIR/summary.txt).
#   eval/cuda/tests/run_gpu_bf16x3.sh BINDIR OUTDIR
#   A. test_gpu_gemm (full shapes; RS_GEMM_BENCH=1: the methods at the 4B shapes), memcheck on
#      --quick; test_gpu_ops --quick and test_gpu_batch (the scorer on the default)   -> OUTDIR/tests.log
#   B. the bundled models, kl --policy none --tokens 8192: the CPU evaluator (this host's CPUs),
#      the GPU with bf16x3, with RS_GPU_GEMM=sgemm, and bf16x3 with the tf32x3-v2 / simt attention;
#      nll_drift.py GPU vs CPU for each
#   C. parity with transformers at the 4B shapes (run_gpu_4b.sh parity: chunked, step-by-step, and
#      step-by-step with the GEMMs padded to the chunk's rows; RS_PARITY_MODELS, default qwen3_5_4b)
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN=${1:?bindir} OUTD=${2:?outdir}
mkdir -p "$OUTD" /tmp/b3
S="$OUTD/summary.txt"
: > "$S"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/local/cuda/lib64"
: > "$OUTD/tests.log"
STAGE_TMP=/tmp/b3 STAGE_ALL="$OUTD/tests.log"
. eval/cuda/tests/gpu_stage.sh
T0=$(date +%s)
RS_GEMM_BENCH=1 stage gemm 90 "$BIN/test_gpu_gemm"
grep -E 'bf16x3' /tmp/b3/gemm.log | grep -E '^(ok|FAIL)' | sed 's/; padding.*//' | cut -c1-200 >> "$S"
grep -E '^bench .*(GEMMs of one chunk|Qwen|Nemotron)' /tmp/b3/gemm.log | cut -c1-330 >> "$S"
stage memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 3 "$BIN/test_gpu_gemm" --quick
grep -E 'ERROR SUMMARY' /tmp/b3/memcheck.log | tail -1 >> "$S"
stage ops 60 "$BIN/test_gpu_ops" --quick
stage scan 60 "$BIN/test_cuda_scan" --quick
stage batch 60 "$BIN/test_gpu_batch" .
t0=$(date +%s)
for m in gdn-tiny mamba2-tiny; do
  timeout 60 "$BIN/replayssm" kl --device cpu --threads 2 --model data/models/$m --tokens 8192 --policy none --quiet \
    --out "$OUTD/$m-cpu.h5" > /tmp/b3/kl-$m-cpu.log 2>&1
  echo "kl --policy none $m cpu: exit $?" >> "$S"
  for g in bf16x3 sgemm bf16x3:tf32x3-v2 bf16x3:simt; do
    gm=${g%%:*} at=${g#*:}
    [ "$at" = "$g" ] && at=
    RS_GPU_GEMM=$gm RS_GPU_ATTN=$at timeout 40 "$BIN/replayssm" kl --device cuda --model data/models/$m --tokens 8192 \
      --policy none --quiet --out "$OUTD/$m-gpu-${g/:/-}.h5" > /tmp/b3/kl-$m-${g/:/-}.log 2>&1
    echo "kl --policy none $m gpu $g: exit $? $(grep -o -E 'gemm [a-z0-9]*|attention [a-z0-9-]*' /tmp/b3/kl-$m-${g/:/-}.log | head -2 | tr '\n' ' ')" >> "$S"
    python3 eval/cuda/tests/nll_drift.py "$OUTD/$m-cpu.h5" "$OUTD/$m-gpu-${g/:/-}.h5" 2>&1 | tail -4 >> "$S"
  done
done
echo "bundled drift: $(( $(date +%s) - t0 )) s" >> "$S"
t0=$(date +%s)
RS_MODELS=${RS_PARITY_MODELS:-qwen3_5_4b} timeout ${RS_PARITY_LIMIT:-240} bash eval/cuda/tests/run_gpu_4b.sh "$BIN" "$OUTD/4b" parity \
  > /tmp/b3/parity.log 2>&1
echo "parity (bf16x3): exit $?" >> "$S"
grep -E '^(PASS|FAIL|info|\[)' /tmp/b3/parity.log | cut -c1-300 >> "$S"
echo "parity: $(( $(date +%s) - t0 )) s; total $(( $(date +%s) - T0 )) s" >> "$S"
cat "$S"

#!/usr/bin/env bash
# run_gpu_drift.sh — issue 15 acceptance 1 in one bounded device call: the GPU-vs-CPU drift of the
# reference NLL on both bundled models (8192 positions, book 244), decomposed by arithmetic
# variants, with the CPU logs made beside it on the host's cores (the same static CLI, in parallel
# with the GPU work), then eval/cuda/tests/drift_pairs.py on every pair and compare_gpu_cpu.py on
# the acceptance pair (GPU default vs 5 CPU seeds of the default, --fp32).
#   eval/cuda/tests/run_gpu_drift.sh BINDIR OUTDIR        (BINDIR: kernels/build_static.sh's programs)
# GPU variants: default (bf16x3 GEMM, tf32x3 = v2 attention), --policy fp32, RS_GPU_ATTN=tf32x3-v1,
# RS_GPU_ATTN=simt, RS_GPU_GEMM=f64 (the double-summed diagnostic GEMM). CPU variants: the default
# (double-summed GEMM and attention) seeds 0-4 with the default policies, RS_CPU_GEMM=sgemm +
# RS_CPU_ATTN=fp32 (the fp32 kernels: the default before 2026-12-01), each of the two alone,
# RS_CPU_GEMM=loop. Also: test_gpu_ops --quick, test_gpu_gemm --quick, test_gpu_batch, kill -9 +
# --resume (chunk 16 so the kill lands mid-run; datasets outside /provenance compared bitwise),
# compute-sanitizer memcheck on test_gpu_gemm --quick and on a short RS_GPU_GEMM=f64 run.
# First run 2026-12-01 (docs/evaluator.md, acceptance 1) as a pack script with the binaries before
# the default changes, the variants selected by the same environment switches.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN=${1:?bindir} OUTD=${2:?outdir} L=/tmp/rs_drift TOK=${TOK:-8192}
mkdir -p "$OUTD" $L
export LD_LIBRARY_PATH="$BIN:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RS=$BIN/replayssm S=$OUTD/summary.txt
: > "$S"
T0=$(date +%s)
J=$L/cpujobs.txt; : > $J
for m in gdn-tiny mamba2-tiny; do
  C="$RS kl --model data/models/$m --tokens $TOK --threads 2 --quiet"
  for s in 0 1 2 3 4; do echo "$C --seed $s --out $L/$m-cpu-s$s.h5" >> $J; done
  echo "RS_CPU_GEMM=sgemm RS_CPU_ATTN=fp32 $C --policy none --out $L/$m-cpu-fp32.h5" >> $J
  echo "RS_CPU_ATTN=fp32 $C --policy none --out $L/$m-cpu-attn32.h5" >> $J
  echo "RS_CPU_GEMM=sgemm $C --policy none --out $L/$m-cpu-sgemm.h5" >> $J
  echo "RS_CPU_GEMM=loop RS_CPU_ATTN=fp32 $C --policy none --out $L/$m-cpu-loop.h5" >> $J
done
( xargs -P $(( $(nproc) / 2 > 1 ? $(nproc) / 2 - 1 : 1 )) -I{} bash -c "{} > /dev/null 2>> $L/cpu_err.txt" < $J
  echo "cpu jobs done at $(( $(date +%s) - T0 )) s" >> "$S" ) &
CPUPID=$!
st() { local n=$1 lim=$2 t0=$(date +%s); shift 2; timeout "$lim" "$@" > $L/$n.log 2>&1; local r=$?
  echo "$n: exit $r ($(( $(date +%s) - t0 )) s) $(grep -c '^ok' $L/$n.log) ok $(grep -c '^FAIL' $L/$n.log) FAIL" >> "$S"
  grep '^FAIL' $L/$n.log | head -5 | cut -c1-200 >> "$S"; }
gk() { local n=$1; shift; local t0=$(date +%s); env "$@" > $L/$n.txt 2>&1; echo "gpu $n: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"; }
for m in gdn-tiny mamba2-tiny; do
  K="$RS kl --device cuda --model data/models/$m --tokens $TOK --quiet"
  gk $m-gpu $K --out $L/$m-gpu.h5
  gk $m-gpu-fp32pol $K --policy fp32 --out $L/$m-gpu-fp32pol.h5
  gk $m-gpu-v1 RS_GPU_ATTN=tf32x3-v1 $K --policy none --out $L/$m-gpu-v1.h5
  gk $m-gpu-simt RS_GPU_ATTN=simt $K --policy none --out $L/$m-gpu-simt.h5
  gk $m-gpu-f64 RS_GPU_GEMM=f64 $K --policy none --out $L/$m-gpu-f64.h5
done
st ops 90 $BIN/test_gpu_ops --quick
st gemm 60 $BIN/test_gpu_gemm --quick
st batch 120 $BIN/test_gpu_batch .
K="$RS kl --device cuda --model data/models/gdn-tiny --tokens $TOK --chunk 16 --quiet"
$K --out $L/whole.h5 > /dev/null 2>&1
$K --out $L/killed.h5 > /dev/null 2>&1 & kp=$!
sleep "${KILL_AFTER:-3}"; kill -9 $kp 2> /dev/null && echo "killed after ${KILL_AFTER:-3} s" >> "$S" || echo "the run finished before the kill" >> "$S"
wait $kp 2> /dev/null
python3 -c "import h5py,sys; print('committed at the kill:', list(h5py.File(sys.argv[1],'r')['books/completed_positions'][...]))" $L/killed.h5 >> "$S" 2>&1
$K --resume --out $L/killed.h5 > $L/resume.txt 2>&1; echo "--resume: exit $?" >> "$S"
python3 eval/cuda/tests/drift_pairs.py --same $L/whole.h5 $L/killed.h5 >> "$S" 2>&1
st memcheck_gemm 150 compute-sanitizer --tool memcheck --error-exitcode 3 $BIN/test_gpu_gemm --quick
st memcheck_f64kl 120 env RS_GPU_GEMM=f64 compute-sanitizer --tool memcheck --error-exitcode 3 $RS kl --device cuda \
  --model data/models/gdn-tiny --tokens 96 --chunk 32 --quiet --out $L/san.h5
echo "gpu part done at $(( $(date +%s) - T0 )) s" >> "$S"
wait $CPUPID
grep -v "^device:\|^compute:\|^$" $L/cpu_err.txt | head -c 2000 >> "$S"
python3 eval/cuda/tests/drift_pairs.py $L "$OUTD" >> "$S" 2>&1
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
cat "$S"

#!/usr/bin/env bash
# run_gpu_fused.sh — one bounded device call for issue 18's fused standard-decode launch (prologue folded
# into the main kernels), from programs kernels/build_static.sh built here (test_cuda_decode,
# test_cuda_lpread, replayssm, libreplayssm-gpu.so):
#   1. test_cuda_decode and test_cuda_lpread (full sizes)                      -> OUTDIR/tests.log
#   2. replayssm bench --sweep std,lp on the four shapes: the default launch choice (AUTO), the separate
#      prologue (-prep rows) and the fused launch (-fused rows) side by side    -> OUTDIR/bench.h5, bench.log
#   3. compute-sanitizer memcheck + racecheck on both tests with --quick        -> OUTDIR/san.log
# Every stage runs under a deadline (DEADLINE seconds from the start, default 300) so the summary,
# printed last, always comes back. (2026-12-01's call ran it with DEADLINE=250 and the stage limits of
# before: test_cuda_lpread's full run needs ~55 s and its racecheck > 60 s, hence the limits below.)
#   kernels/run_gpu_fused.sh BINDIR OUTDIR
set -uo pipefail
BIN=${1:?bindir}
OUTD=${2:?outdir}
DEADLINE=${DEADLINE:-300}
mkdir -p "$OUTD"
export LD_LIBRARY_PATH="$BIN:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T0=$(date +%s)
S="$OUTD/summary.txt"
: > "$S"
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
lim() { local l; l=$(left); l=$(( l - ${2:-0} )); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> "$S" 2>&1
: > "$OUTD/tests.log"
for t in test_cuda_decode test_cuda_lpread; do
  t1=$(date +%s)
  L=$(lim 100 130)
  OMP_NUM_THREADS=$(nproc) timeout "$L" "$BIN/$t" > "$OUTD/$t.log" 2>&1
  rc=$?
  cat "$OUTD/$t.log" >> "$OUTD/tests.log" && rm -f "$OUTD/$t.log"
  echo "$t: exit $rc ($(( $(date +%s) - t1 )) s, limit $L); $(grep -c '^ok' "$OUTD/tests.log") ok so far, $(grep -c '^FAIL' "$OUTD/tests.log") FAIL so far" >> "$S"
done
grep '^FAIL' "$OUTD/tests.log" | head -20 >> "$S"
t1=$(date +%s)
L=$(lim 60 90)
timeout "$L" "$BIN/replayssm" bench --sweep std,lp --out "$OUTD/bench.h5" --force > "$OUTD/bench.log" 2>&1
echo "bench: exit $? ($(( $(date +%s) - t1 )) s, limit $L)" >> "$S"
: > "$OUTD/san.log"
for t in test_cuda_decode test_cuda_lpread; do
  for tool in memcheck racecheck; do
    t1=$(date +%s)
    L=$(lim $([ $tool = racecheck ] && echo 90 || echo 40) 5)
    timeout "$L" compute-sanitizer --tool $tool --error-exitcode 3 "$BIN/$t" --quick > "$OUTD/san_one.log" 2>&1
    rc=$?
    echo "== $tool $t exit $rc" >> "$OUTD/san.log"; cat "$OUTD/san_one.log" >> "$OUTD/san.log"
    echo "compute-sanitizer $tool $t: exit $rc ($(( $(date +%s) - t1 )) s, limit $L): $(grep -c '^ok' "$OUTD/san_one.log") ok, $(grep -c '^FAIL' "$OUTD/san_one.log") FAIL; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTD/san_one.log" | tail -1)" >> "$S"
  done
done
rm -f "$OUTD/san_one.log"
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
sed -n '/## summary/,$p' "$OUTD/bench.log"
grep -E "^\S+ +(conv|replay) +(fp32|cycle-bf16ring|cycle-bf16ring-prep|cycle-bf16ring-fused) +1 " "$OUTD/bench.log"
cat "$S"

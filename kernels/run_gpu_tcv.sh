#!/usr/bin/env bash
# run_gpu_tcv.sh — one bounded device call for issue 18's tensor-core verification (kernels-notes v6),
# from programs kernels/build_static.sh built here (packed with eval/cuda/tests/make_gpu_pack.sh):
#   1. test_cuda_verify (full): both main kernels against the engine and float64    -> OUTDIR/verify.log
#   2. replayssm bench --sweep verify --quick, the four shapes (tc and -cores rows side by side, B = 256
#      and B = 1)                                                                  -> OUTDIR/bench_tcv.h5
#   3. Nsight Compute: one launch of the tensor-core kernel, Nemotron-3-Super, B = 256, T = 8, a = 1
#      (the bench's verify sweep: the tc launches of its T = 1 case come first: 5 graph replays x 16
#      steps with --reps 2)                                                        -> OUTDIR/ncu.txt
#   4. compute-sanitizer memcheck + racecheck on test_cuda_verify --quick           -> OUTDIR/san.tgz
# Every stage has its own time limit; the summary is printed last.
#   kernels/run_gpu_tcv.sh BINDIR OUTDIR
# RS_TCV_SHORT=1 (the second call, v6b): test_cuda_verify --quick; replayssm bench --sweep tcv (T = 8, B = 256
# and 1, every main kernel side by side) -> OUTDIR/bench_tcv.h5; memcheck + racecheck on
# test_cuda_verify --quick --tc-only (the default kernel's runs); no Nsight Compute.
set -uo pipefail
BIN=${1:?bindir}
OUTD=${2:?outdir}
mkdir -p "$OUTD/san"
export LD_LIBRARY_PATH="$BIN:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
S="$OUTD/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader > "$S" 2>&1
if [ "${RS_TCV_SHORT:-0}" = 1 ]; then
  t0=$(date +%s)
  OMP_NUM_THREADS=$(nproc) timeout 20 "$BIN/test_cuda_verify" --quick > "$OUTD/verify.log" 2>&1
  echo "test_cuda_verify --quick: exit $? ($(( $(date +%s) - t0 )) s); $(grep -c '^ok' "$OUTD/verify.log") ok, $(grep -c '^FAIL' "$OUTD/verify.log") FAIL" >> "$S"
  grep '^FAIL' "$OUTD/verify.log" | head -8 | cut -c1-300 >> "$S"
  t2=$(date +%s)
  timeout 45 "$BIN/replayssm" bench --sweep tcv --out "$OUTD/bench_tcv.h5" --force > "$OUTD/bench.log" 2>&1
  echo "bench --sweep tcv (4 shapes): exit $? ($(( $(date +%s) - t2 )) s)" >> "$S"
  for tool in memcheck racecheck; do
    t1=$(date +%s)
    timeout $([ $tool = memcheck ] && echo 18 || echo 26) compute-sanitizer --tool $tool --error-exitcode 3 "$BIN/test_cuda_verify" --quick --tc-only > "$OUTD/san/$tool.log" 2>&1
    echo "compute-sanitizer $tool test_cuda_verify --quick --tc-only: exit $? ($(( $(date +%s) - t1 )) s); $(grep -c '^ok' "$OUTD/san/$tool.log") ok, $(grep -c '^FAIL' "$OUTD/san/$tool.log") FAIL; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTD/san/$tool.log" | tail -1)" >> "$S"
  done
  tar czf "$OUTD/san.tgz" -C "$OUTD" san && rm -rf "$OUTD/san"
  grep -E "verify-replay|conv " "$OUTD/bench.log" | cut -c1-130 >> "$S"
  echo "total $(( $(date +%s) - t0 )) s" >> "$S"
  cat "$S"
  exit 0
fi
t0=$(date +%s)
OMP_NUM_THREADS=$(nproc) timeout "${RS_TEST_S:-110}" "$BIN/test_cuda_verify" > "$OUTD/verify.log" 2>&1
echo "test_cuda_verify: exit $? ($(( $(date +%s) - t0 )) s); $(grep -c '^ok' "$OUTD/verify.log") ok, $(grep -c '^FAIL' "$OUTD/verify.log") FAIL" >> "$S"
grep '^FAIL' "$OUTD/verify.log" | head -8 | cut -c1-300 >> "$S"
t2=$(date +%s)
timeout "${RS_BENCH_S:-50}" "$BIN/replayssm" bench --sweep verify --quick --out "$OUTD/bench_tcv.h5" --force > "$OUTD/bench.log" 2>&1
echo "bench verify --quick (4 shapes): exit $? ($(( $(date +%s) - t2 )) s)" >> "$S"
t3=$(date +%s)
ncu_run() { # $1: extra metrics option (tensor pipe); without it if this ncu does not know the metric
  timeout "${RS_NCU_S:-40}" ncu --clock-control none --graph-profiling node --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    $1 -k regex:rs_k_verify_tc --launch-skip 84 --launch-count 1 \
    "$BIN/replayssm" bench --model nemotron-3-super --sweep verify --quick --reps 2 --out /tmp/ncu.h5 --force > "$OUTD/ncu.txt" 2>&1
}
ncu_run "--metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active"
nrc=$?
if [ $nrc != 0 ] && grep -q -i "metric" "$OUTD/ncu.txt"; then ncu_run ""; nrc=$?; fi
echo "ncu: exit $nrc ($(( $(date +%s) - t3 )) s)" >> "$S"
grep -E "tensor_op|Stall|stalled|spends" "$OUTD/ncu.txt" | head -8 | cut -c1-260 >> "$S"
grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Executed Ipc A|Block Limit" "$OUTD/ncu.txt" | head -16 >> "$S"
for tool in memcheck racecheck; do
  t1=$(date +%s)
  timeout "${RS_SAN_S:-65}" compute-sanitizer --tool $tool --error-exitcode 3 "$BIN/test_cuda_verify" --quick > "$OUTD/san/$tool.log" 2>&1
  echo "compute-sanitizer $tool test_cuda_verify --quick: exit $? ($(( $(date +%s) - t1 )) s); $(grep -c '^ok' "$OUTD/san/$tool.log") ok, $(grep -c '^FAIL' "$OUTD/san/$tool.log") FAIL; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTD/san/$tool.log" | tail -1)" >> "$S"
done
tar czf "$OUTD/san.tgz" -C "$OUTD" san && rm -rf "$OUTD/san"
grep -E "verify-(replay|snapshot)|conv " "$OUTD/bench.log" | cut -c1-130 >> "$S"
echo "total $(( $(date +%s) - t0 )) s" >> "$S"
cat "$S"

#!/usr/bin/env bash
# run_gpu.sh — the whole GPU batch of issue 8 on the lent H200, from binaries built elsewhere by
# kernels/build_static.sh (the GPU image has no HDF5/GSL, so nothing is compiled there):
#   1. test_kernels            correctness driver (every check; exit 0 = all pass)
#   2. compute-sanitizer        memcheck and racecheck on test_kernels --quick   (RS_SANITIZE=1)
#   3. bench_kernels            the `replayssm bench` sweep -> bench.h5 + bench.log (RS_SKIP_BENCH=1 skips)
#   4. ncu                      Nsight Compute on the ReplaySSM decode and verify kernels (RS_NCU=1)
#   kernels/run_gpu.sh BINDIR OUTDIR
# Env: RS_BENCH_ARGS (extra bench options, e.g. "--quick"), RS_SKIP_TEST=1.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:?bindir}
OUTD=${2:?outdir}
mkdir -p "$OUTD/logs"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv; \
  nvidia-smi -q | head -40; } > "$OUTD/logs/nvidia-smi.txt" 2>&1
rc=0
if [ "${RS_SKIP_TEST:-0}" != 1 ]; then
  t0=$(date +%s)
  OMP_NUM_THREADS=$(nproc) "$BIN/test_kernels" > "$OUTD/test_kernels.log" 2>&1
  rc=$?
  echo "test_kernels: exit $rc ($(( $(date +%s) - t0 )) s); $(grep -c '^ok' "$OUTD/test_kernels.log") ok, $(grep -c '^FAIL' "$OUTD/test_kernels.log") FAIL"
  grep '^FAIL' "$OUTD/test_kernels.log" | head -20
fi
if [ "${RS_SANITIZE:-0}" = 1 ]; then
  for tool in memcheck racecheck; do
    t0=$(date +%s)
    timeout 170 compute-sanitizer --tool $tool --error-exitcode 3 "$BIN/test_kernels" --quick > "$OUTD/logs/sanitizer_$tool.log" 2>&1
    echo "compute-sanitizer $tool: exit $? ($(( $(date +%s) - t0 )) s) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTD/logs/sanitizer_$tool.log" | tail -1)"
  done
fi
if [ "${RS_SKIP_BENCH:-0}" != 1 ]; then
  t0=$(date +%s)
  "$BIN/bench_kernels" --out "$OUTD/bench.h5" --force ${RS_BENCH_ARGS:-} > "$OUTD/bench.log" 2>&1
  echo "bench: exit $? ($(( $(date +%s) - t0 )) s)"
  sed -n '/## summary/,$p' "$OUTD/bench.log"
fi
if [ "${RS_NCU:-0}" = 1 ]; then
  t0=$(date +%s)
  NCU="timeout 150 ncu --clock-control none --graph-profiling node --section SpeedOfLight --section MemoryWorkloadAnalysis
       --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
  # ReplaySSM standard decode at B = 256 (the cycle graph: 16 steps, 1/16 of the rows flush), then conv
  $NCU -k "regex:rs_k_replay_(main|prep)|rs_k_conv_decode" --launch-skip 40 --launch-count 5 \
    "$BIN/bench_kernels" --model nemotron-3-super --sweep std --quick --reps 2 --out /tmp/ncu1.h5 --force > "$OUTD/ncu.txt" 2>&1
  echo "ncu std: exit $?" >> "$OUTD/ncu.txt"
  $NCU -k "regex:rs_k_verify_main|rs_k_snapshot_verify" --launch-skip 30 --launch-count 3 \
    "$BIN/bench_kernels" --model qwen3.5-4b --sweep verify --quick --reps 2 --out /tmp/ncu2.h5 --force >> "$OUTD/ncu.txt" 2>&1
  echo "ncu verify: exit $?" >> "$OUTD/ncu.txt"
  echo "ncu: $(( $(date +%s) - t0 )) s"
fi
tar czf "$OUTD/logs.tgz" -C "$OUTD" logs && rm -rf "$OUTD/logs"
exit $rc

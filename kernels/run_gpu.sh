#!/usr/bin/env bash
# run_gpu.sh — the whole GPU batch on the lent H200, from the programs kernels/build_static.sh built
# here (the GPU image has no HDF5/GSL/cJSON, so nothing is compiled there):
#   1. the kernel tests      test_cuda_codec, _decode, _verify, _lpread (exit 0 = all pass)
#   2. compute-sanitizer     memcheck and racecheck on each test with --quick      (RS_SANITIZE=1)
#   3. replayssm bench       the benchmark sweep -> bench.h5 + bench.log           (RS_SKIP_BENCH=1 skips)
#   4. ncu                   Nsight Compute on the ReplaySSM decode and verify kernels (RS_NCU=1)
#   kernels/run_gpu.sh BINDIR OUTDIR
# Env: RS_BENCH_ARGS (extra bench options, e.g. "--quick"), RS_SKIP_TEST=1, RS_TESTS (names to run).
# OUTDIR gets tests.log (every test's output), bench.log, bench.h5, ncu.txt and logs.tgz (nvidia-smi,
# one log per test, sanitizer logs): few files, as a device call brings back at most 8.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:?bindir}
OUTD=${2:?outdir}
mkdir -p "$OUTD/logs"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" # libcjson beside replayssm (the rest: rpath)
# cuBLAS of the image (the GPU evaluator): the toolkit's, else PyTorch's pip wheel (gpu_stage.sh's lookup)
. eval/cuda/tests/gpu_stage.sh
gpu_cublas_path
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv; \
  nvidia-smi -q | head -40; } > "$OUTD/logs/nvidia-smi.txt" 2>&1
TESTS=${RS_TESTS:-$(cd "$BIN" && ls test_cuda_* test_gpu_* 2>/dev/null | tr '\n' ' ')}
rc=0
if [ "${RS_SKIP_TEST:-0}" != 1 ]; then
  : > "$OUTD/tests.log"
  for t in $TESTS; do
    t0=$(date +%s)
    OMP_NUM_THREADS=$(nproc) "$BIN/$t" > "$OUTD/logs/$t.log" 2>&1
    trc=$?
    [ $trc = 0 ] || rc=1
    cat "$OUTD/logs/$t.log" >> "$OUTD/tests.log"
    echo "$t: exit $trc ($(( $(date +%s) - t0 )) s); $(grep -c '^ok' "$OUTD/logs/$t.log") ok, $(grep -c '^FAIL' "$OUTD/logs/$t.log") FAIL"
    grep '^FAIL' "$OUTD/logs/$t.log" | head -20
  done
fi
if [ "${RS_SANITIZE:-0}" = 1 ]; then
  for t in $TESTS; do
    for tool in memcheck racecheck; do
      t0=$(date +%s)
      timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 "$BIN/$t" --quick > "$OUTD/logs/sanitizer_${t}_$tool.log" 2>&1
      echo "compute-sanitizer $tool $t: exit $? ($(( $(date +%s) - t0 )) s) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTD/logs/sanitizer_${t}_$tool.log" | tail -1)"
    done
  done
fi
if [ "${RS_SKIP_BENCH:-0}" != 1 ]; then
  t0=$(date +%s)
  "$BIN/replayssm" bench --out "$OUTD/bench.h5" --force ${RS_BENCH_ARGS:-} > "$OUTD/bench.log" 2>&1
  echo "replayssm bench: exit $? ($(( $(date +%s) - t0 )) s)"
  sed -n '/## summary/,$p' "$OUTD/bench.log"
fi
if [ "${RS_NCU:-0}" = 1 ]; then
  t0=$(date +%s)
  NCU="timeout 150 ncu --clock-control none --graph-profiling node --section SpeedOfLight --section MemoryWorkloadAnalysis
       --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
  # ReplaySSM standard decode at B = 256 (the cycle graph: 16 steps, 1/16 of the rows flush), then conv
  $NCU -k "regex:rs_k_replay_(main|prep)|rs_k_conv_decode" --launch-skip 40 --launch-count 5 \
    "$BIN/replayssm" bench --model nemotron-3-super --sweep std --quick --reps 2 --out /tmp/ncu1.h5 --force > "$OUTD/ncu.txt" 2>&1
  echo "ncu std: exit $?" >> "$OUTD/ncu.txt"
  $NCU -k "regex:rs_k_verify_main|rs_k_snapshot_verify" --launch-skip 30 --launch-count 3 \
    "$BIN/replayssm" bench --model qwen3.5-4b --sweep verify --quick --reps 2 --out /tmp/ncu2.h5 --force >> "$OUTD/ncu.txt" 2>&1
  echo "ncu verify: exit $?" >> "$OUTD/ncu.txt"
  echo "ncu: $(( $(date +%s) - t0 )) s"
fi
tar czf "$OUTD/logs.tgz" -C "$OUTD" logs && rm -rf "$OUTD/logs"
exit $rc

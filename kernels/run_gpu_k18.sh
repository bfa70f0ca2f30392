#!/usr/bin/env bash
# run_gpu_k18.sh — one bounded device call for issue 18's functional GPU paths (checkpoint rounding
# at flush, GDN two-precision records, verification up to T = 16 / L + T = 64), from programs
# kernels/build_static.sh built here:
#   1. the kernel tests (kernels/run_gpu.sh, RS_TESTS, no bench)           -> OUTDIR/t/tests.log
#   2. compute-sanitizer memcheck + racecheck, --quick, on the changed tests -> OUTDIR/s/
#   3. replayssm bench --sweep verify --quick on one Mamba-2 and one GDN shape (T up to 16, L + T = 64)
# Every stage has its own time limit so the whole call ends inside the device limit and the
# summary (printed last) always comes back.
#   kernels/run_gpu_k18.sh BINDIR OUTDIR [seconds for the tests, default 170]
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:?bindir}
OUTD=${2:?outdir}
TT=${3:-170}
mkdir -p "$OUTD"
S="$OUTD/summary.txt"
: > "$S"
t0=$(date +%s)
RS_TESTS="${RS_TESTS:-test_cuda_codec test_cuda_decode test_cuda_verify test_cuda_lpread}" RS_SKIP_BENCH=1 \
  timeout "$TT" bash kernels/run_gpu.sh "$BIN" "$OUTD/t" > "$OUTD/tests_stage.log" 2>&1
echo "tests: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
cat "$OUTD/tests_stage.log" >> "$S" && rm -f "$OUTD/tests_stage.log"
t1=$(date +%s)
RS_TESTS="${RS_SAN_TESTS:-test_cuda_decode test_cuda_verify test_cuda_lpread}" RS_SKIP_TEST=1 RS_SANITIZE=1 RS_SKIP_BENCH=1 \
  timeout "${RS_SAN_S:-100}" bash kernels/run_gpu.sh "$BIN" "$OUTD/s" > "$OUTD/san_stage.log" 2>&1
echo "sanitizer: exit $? ($(( $(date +%s) - t1 )) s)" >> "$S"
cat "$OUTD/san_stage.log" >> "$S" && rm -f "$OUTD/san_stage.log"
t2=$(date +%s)
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
: > "$OUTD/bench.log"
for m in nemotron-3-super qwen3.5-4b; do
  timeout 20 "$BIN/replayssm" bench --model $m --sweep verify --quick --out "$OUTD/bench_$m.h5" --force >> "$OUTD/bench.log" 2>&1
  echo "bench verify $m: exit $?" >> "$S"
done
echo "bench: $(( $(date +%s) - t2 )) s" >> "$S"
grep -E "verify-(replay|snapshot)" "$OUTD/bench.log" >> "$S"
echo "total $(( $(date +%s) - t0 )) s" >> "$S"
cat "$S"

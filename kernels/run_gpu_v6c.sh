#!/usr/bin/env bash
# run_gpu_v6c.sh — one bounded device call for issue 18's verification step v6c (docs/kernels-notes.md "v6c"):
# the tf32 split by integer ops with lo unrounded (RS_VTC_SPLIT = 1) and Mamba-2's B operands staged pre-split.
#   1. run_gpu_ab.sh OLD NEW, sweep tcv (T = 8, every main kernel, B = 256 and 1), bench only    -> ab1/
#   2. run_gpu_ab.sh SPLIT0 NEW (the same without the integer split), sweep tcv, bench only    -> ab2/
#   3. NEW's test_cuda_verify --tc-only in full (the list, then v6a's >= 1000-token runs on the four shapes
#      against the engine and float64); if it fails, SPLIT0's as well                           -> verify_*.log
#   4. compute-sanitizer memcheck and racecheck of NEW's test_cuda_verify --quick --tc-only      -> san_*.log
#   5. NEW's `replayssm bench --sweep verify` (T = 1..16, L + T = 64), four shapes                  -> verify.h5
#   6. Nsight Compute of one v6a launch, Nemotron-3-Super, B = 256, T = 8 (the tcv sweep's first rows: a = 1) -> ncu.txt
# Everything lands in OUTDIR/all.tar.xz beside OUTDIR/summary.txt (a device call brings back <= 8 files).
#   kernels/run_gpu_v6c.sh PACK_OLD PACK_NEW PACK_SPLIT0 OUTDIR     (make_gpu_pack.sh folders)
set -uo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?old} NEW=${2:?new} S0=${3:?split0} OUTD=${4:?outdir}
W=/tmp/rs_v6c
rm -rf "$W" && mkdir -p "$W" "$OUTD"
S="$OUTD/summary.txt"
: > "$S"
T0=$(date +%s)
RS_SWEEPS=tcv RS_SKIP_TESTS=1 RS_DEADLINE=${RS_AB_S:-90} bash kernels/run_gpu_ab.sh "$OLD" "$NEW" "$W/ab1" > /dev/null 2>&1
echo "== ab1 (A = old, B = new): $(grep -c . "$W/ab1/table.txt") table lines" >> "$S"
RS_SWEEPS=tcv RS_SKIP_TESTS=1 RS_DEADLINE=${RS_AB_S:-90} bash kernels/run_gpu_ab.sh "$S0" "$NEW" "$W/ab2" > /dev/null 2>&1
echo "== ab2 (A = split 0, B = new): $(grep -c . "$W/ab2/table.txt") table lines" >> "$S"
STAGE_TMP=$W STAGE_ALL="$W/tests.log"
: > "$STAGE_ALL"
. eval/cuda/tests/gpu_stage.sh
BN=$(gpu_pack_bindir "$NEW" n "$W") || { echo "no binaries in $NEW" >> "$S"; exit 2; }
B0=$(gpu_pack_bindir "$S0" z "$W") || { echo "no binaries in $S0" >> "$S"; exit 2; }
CUB=$(gpu_cublas_ld)
export LD_LIBRARY_PATH="$BN$CUB"
t0=$(date +%s)
timeout ${RS_VERIFY_S:-200} "$BN/test_cuda_verify" --tc-only > "$W/verify_new.log" 2>&1
rc=$?
echo "test_cuda_verify --tc-only (new): exit $rc ($(( $(date +%s) - t0 )) s), $(grep -c '^ok' "$W/verify_new.log") ok, $(grep -c '^FAIL' "$W/verify_new.log") FAIL" >> "$S"
grep '^FAIL' "$W/verify_new.log" | head -6 | cut -c1-400 >> "$S"
if [ $rc != 0 ]; then
  t0=$(date +%s)
  LD_LIBRARY_PATH="$B0$CUB" timeout ${RS_VERIFY_S:-200} "$B0/test_cuda_verify" --tc-only > "$W/verify_split0.log" 2>&1
  echo "test_cuda_verify --tc-only (split 0): exit $? ($(( $(date +%s) - t0 )) s), $(grep -c '^ok' "$W/verify_split0.log") ok, $(grep -c '^FAIL' "$W/verify_split0.log") FAIL" >> "$S"
fi
for tool in memcheck racecheck; do
  t0=$(date +%s)
  timeout $([ $tool = memcheck ] && echo 40 || echo 90) compute-sanitizer --tool $tool --error-exitcode 3 "$BN/test_cuda_verify" --quick --tc-only > "$W/san_$tool.log" 2>&1
  echo "compute-sanitizer $tool test_cuda_verify --quick --tc-only: exit $? ($(( $(date +%s) - t0 )) s); $(grep -c '^ok' "$W/san_$tool.log") ok, $(grep -c '^FAIL' "$W/san_$tool.log") FAIL; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/san_$tool.log" | tail -1)" >> "$S"
done
t0=$(date +%s)
timeout ${RS_BENCH_S:-90} "$BN/replayssm" bench --shape all --sweep verify --out "$W/verify.h5" --force > "$W/verify_bench.log" 2>&1
echo "bench --sweep verify (new): exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
t0=$(date +%s)
timeout ${RS_NCU_S:-60} ncu --clock-control none --graph-profiling node --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section WarpStateStats --section SchedulerStats --section InstructionStats -k regex:rs_k_verify_tc --launch-skip 20 --launch-count 1 \
  "$BN/replayssm" bench --shape nemotron-3-super --sweep tcv --quick --reps 2 --out "$W/ncu.h5" --force > "$W/ncu.txt" 2>&1
echo "ncu: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
grep -E "rs_k_verify_tc|Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Executed Instructions  " "$W/ncu.txt" | head -12 | cut -c1-160 >> "$S"
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
for a in ab1 ab2; do echo "== $a table (tcv)" >> "$S"; cat "$W/$a/table.txt" >> "$S"; done
tar -cJf "$OUTD/all.tar.xz" -C "$W" ab1 ab2 $(cd "$W" && ls verify_*.log san_*.log verify.h5 verify_bench.log ncu.txt tests.log 2>/dev/null)
cat "$S"

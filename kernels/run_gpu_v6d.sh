#!/usr/bin/env bash
# run_gpu_v6d.sh — one bounded device call for issue 18's verification step v6d (docs/kernels-notes.md "v6c"):
# v6c plus the next tile staged by cp.async (Mamba-2, T <= 8), then the committed benchmark of the winner.
#   1. run_gpu_ab.sh V6C V6D, sweep tcv (T = 8, every main kernel, B = 256 and 1), bench only   -> ab/
#   2. V6D's test_cuda_verify --tc-only in full, compute-sanitizer memcheck + racecheck of its --quick --tc-only
#   3. the winner: V6D if its tests and sanitizers pass and its B = 256 default rows (a = 1 and a = 8) are
#      faster than V6C's by >= 1 % (geometric mean of both rounds), else V6C (tested in the call before)
#   4. the winner's `replayssm bench --out bench.h5 --force` (every sweep, every shape), alone on the machine
#   kernels/run_gpu_v6d.sh PACK_V6C PACK_V6D OUTDIR     (make_gpu_pack.sh folders)
# OUTDIR: summary.txt, bench.h5, bench.log, all.tar.xz (the A/B folder and the test logs).
set -uo pipefail
cd "$(dirname "$0")/.."
PC=${1:?v6c} PD=${2:?v6d} OUTD=${3:?outdir}
W=/tmp/rs_v6d
rm -rf "$W" && mkdir -p "$W" "$OUTD"
S="$OUTD/summary.txt"
: > "$S"
T0=$(date +%s)
RS_SWEEPS=tcv RS_SKIP_TESTS=1 RS_DEADLINE=${RS_AB_S:-90} bash kernels/run_gpu_ab.sh "$PC" "$PD" "$W/ab" > /dev/null 2>&1
STAGE_TMP=$W STAGE_ALL="$W/tests.log"
: > "$STAGE_ALL"
. eval/cuda/tests/gpu_stage.sh
BC=$(gpu_pack_bindir "$PC" c "$W") || { echo "no binaries in $PC" >> "$S"; exit 2; }
BD=$(gpu_pack_bindir "$PD" d "$W") || { echo "no binaries in $PD" >> "$S"; exit 2; }
CUB=$(gpu_cublas_ld)
export LD_LIBRARY_PATH="$BD$CUB"
ok=1
t0=$(date +%s)
timeout ${RS_VERIFY_S:-200} "$BD/test_cuda_verify" --tc-only > "$W/verify_v6d.log" 2>&1 || ok=0
echo "test_cuda_verify --tc-only (v6d): ok=$ok ($(( $(date +%s) - t0 )) s), $(grep -c '^ok' "$W/verify_v6d.log") ok, $(grep -c '^FAIL' "$W/verify_v6d.log") FAIL" >> "$S"
grep '^FAIL' "$W/verify_v6d.log" | head -6 | cut -c1-400 >> "$S"
for tool in memcheck racecheck; do
  t0=$(date +%s)
  timeout $([ $tool = memcheck ] && echo 40 || echo 90) compute-sanitizer --tool $tool --error-exitcode 3 "$BD/test_cuda_verify" --quick --tc-only > "$W/san_$tool.log" 2>&1 || ok=0
  echo "compute-sanitizer $tool test_cuda_verify --quick --tc-only (v6d): exit ok=$ok ($(( $(date +%s) - t0 )) s); $(grep -c '^ok' "$W/san_$tool.log") ok, $(grep -c '^FAIL' "$W/san_$tool.log") FAIL; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/san_$tool.log" | tail -1)" >> "$S"
done
gm=$(awk '$2 == "tcv" && $3 == 256 && ($5 == "bf16ring-a1-T8" || $5 == "bf16ring-a8-T8") { s += log($10) + log($11); n += 2 } END { if (n) printf "%.4f", exp(s / n); else print "nan" }' "$W/ab/table.txt")
win=c
[ "$ok" = 1 ] && awk -v g="$gm" 'BEGIN { exit !(g + 0 < 0.99) }' && win=d
echo "v6d / v6c, B = 256 default rows (geometric mean): $gm; tests ok=$ok; winner: v6$win" >> "$S"
WB=$([ $win = d ] && echo "$BD" || echo "$BC")
t0=$(date +%s)
LD_LIBRARY_PATH="$WB$CUB" timeout 240 "$WB/replayssm" bench --out "$OUTD/bench.h5" --force > "$OUTD/bench.log" 2>&1
echo "replayssm bench (v6$win): exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
sed -n '/## summary/,/^$/p' "$OUTD/bench.log" | cut -c1-200 >> "$S"
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
echo "== ab table (A = v6c, B = v6d)" >> "$S"
grep -E "^model| 256 " "$W/ab/table.txt" >> "$S"
tar -cJf "$OUTD/all.tar.xz" -C "$W" ab $(cd "$W" && ls verify_*.log san_*.log tests.log 2>/dev/null)
cat "$S"

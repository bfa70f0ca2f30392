#!/usr/bin/env bash
# run_gpu_merged.sh — the merged build's GPU checks in one bounded device call (issues 15 and 18), with
# an optional libFuzzer campaign on the host's spare cores beside them (issue 14; the checks here are
# correctness checks, not timings, so the campaign's load changes no number they report):
#   A. test_gpu_ops --quick (every op, the twin cases included), test_cuda_verify --quick (the AUTO
#      verification kernel choice), test_cuda_decode --quick, test_gpu_batch
#   B. --compute twin and the default on both bundled models, 8192 positions, against the CPU logs of
#      the pack (twin_compare.py: bit-identical positions, max rel)
#   C. compute-sanitizer memcheck and racecheck on short kl runs (default mode, both models; twin memcheck)
#   eval/cuda/tests/run_gpu_merged.sh PACK OUTDIR
# PACK holds gpu.tar.xz (make_gpu_pack.sh), cpu/<model>-cpu-s0.h5 (CPU logs, `kl --tokens 8192
# --threads 2`, book 244, seed 0) and, for the campaign, fuzz.tar.xz (tests/fuzz/make_campaign_pack.sh);
# env RS_FUZZ_SECS (0: no campaign), RS_FUZZ_JOBS (12), RS_SAN_LIMIT (seconds per sanitizer run, 240: gdn-tiny's
# racecheck did not finish in 120 s beside a 12-job campaign on 2026-12-02).
set -uo pipefail
cd "$(dirname "$0")/../../.."
P=${1:?pack} OUTD=${2:?outdir}
B=/tmp/rs_merged_bin
mkdir -p "$B" "$OUTD" /tmp/rs_merged
tar -xJf "$P/gpu.tar.xz" -C "$B" || exit 1
export LD_LIBRARY_PATH="$B:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
S="$OUTD/summary.txt"
: > "$S"
STAGE_TMP=/tmp/rs_merged
. eval/cuda/tests/gpu_stage.sh
T0=$(date +%s)
FZ=${RS_FUZZ_SECS:-0}
if [ "$FZ" -gt 0 ] && [ -f "$P/fuzz.tar.xz" ]; then
  fuzz_campaign_start "$P/fuzz.tar.xz" "$FZ" "${RS_FUZZ_JOBS:-12}" "$OUTD/fuzz"
fi
RS=$B/replayssm
stage gpu_ops 120 "$B/test_gpu_ops" --quick
stage cuda_verify 90 "$B/test_cuda_verify" --quick
stage cuda_decode 120 "$B/test_cuda_decode" --quick
stage gpu_batch 150 "$B/test_gpu_batch"
for m in gdn-tiny mamba2-tiny; do
  for mode in twin fp32; do
    t0=$(date +%s.%N)
    timeout 60 "$RS" kl --device cuda --compute $mode --model data/models/$m --tokens 8192 --quiet --force \
      --out "/tmp/rs_merged/$m-$mode.h5" > "/tmp/rs_merged/$m-$mode.txt" 2>&1
    echo "kl --compute $mode $m 8192: exit $? ($(python3 -c "import time; print(round(time.time() - $t0, 1))") s)" >> "$S"
    [ -f "$P/cpu/$m-cpu-s0.h5" ] && python3 eval/cuda/tests/twin_compare.py "/tmp/rs_merged/$m-$mode.h5" \
      "$P/cpu/$m-cpu-s0.h5" 2>&1 | head -3 | cut -c1-300 >> "$S"
  done
done
for m in gdn-tiny mamba2-tiny; do
  for tool in memcheck racecheck; do
    timeout "${RS_SAN_LIMIT:-240}" compute-sanitizer --tool $tool --error-exitcode 3 "$RS" kl --device cuda --model data/models/$m \
      --tokens 96 --chunk 32 --quiet --force --out /tmp/rs_merged/san.h5 > "/tmp/rs_merged/san_${m}_${tool}.log" 2>&1
    echo "compute-sanitizer $tool kl $m (default): exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "/tmp/rs_merged/san_${m}_${tool}.log" | tail -1)" >> "$S"
  done
done
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 "$RS" kl --device cuda --compute twin \
  --model data/models/gdn-tiny --tokens 96 --chunk 32 --quiet --force --out /tmp/rs_merged/san.h5 > /tmp/rs_merged/san_twin.log 2>&1
echo "compute-sanitizer memcheck kl gdn-tiny (twin): exit $? $(grep -E 'ERROR SUMMARY' /tmp/rs_merged/san_twin.log | tail -1)" >> "$S"
echo "checks done after $(( $(date +%s) - T0 )) s" >> "$S"
if [ "$FZ" -gt 0 ]; then # the campaign ends on its own; wait for its summary
  fuzz_campaign_wait $(( FZ + 60 )) "$OUTD/fuzz"
fi
tar -cJf "$OUTD/logs.tar.xz" -C /tmp/rs_merged . 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
cat "$S"

#!/usr/bin/env bash
# run_gpu_final_bench.sh — one bounded device call: issue 18's committed benchmark, then correctness
# checks with a libFuzzer campaign (issue 14) on the host's spare cores beside them. The timings run
# first and alone (no campaign yet), so the campaign's load changes no number they report.
#   1. bench   `replayssm bench` (every sweep, every shape) -> OUTDIR/bench.h5, bench.log
#   2. ncu     Nsight Compute on the fused standard decode (v5, issue 18: the version without a profile):
#              rs_k_replay_main<..., FUSED = true> at B = 1 and at B = 256 on Nemotron-3-Super, and
#              the fused v4 low-precision read rs_k_replay_lpw<..., true> at B = 256 -> OUTDIR/ncu.txt
#   3. fuzz    tests/fuzz/campaign.sh from PACK/fuzz.tar.xz until ~RS_DEADLINE s after the start
#   4. dk      beside the campaign: test_cuda_decode --quick (d_k = 64 / 256 cases included),
#              test_cuda_dk_refuse, compute-sanitizer memcheck and racecheck of test_cuda_decode --quick
#   5. checks  beside the campaign: `kl --compute twin` on both bundled models against the pack's
#              CPU logs (twin_compare.py), compute-sanitizer racecheck + memcheck of a short gdn-tiny
#              `kl` run, test_gpu_ops --quick
#   kernels/run_gpu_final_bench.sh PACK OUTDIR
# PACK: gpu.tar.xz (eval/cuda/tests/make_gpu_pack.sh), fuzz.tar.xz (make_campaign_pack.sh),
# cpu/<model>-cpu-s0.h5 (`kl --tokens 8192 --threads 2 --book-ids 244 --seed 0`). Env: RS_STAGES
# (default "bench ncu fuzz dk checks"; also "san": the gdn-tiny kl sanitizer runs first, alone, with their output), RS_DEADLINE (seconds from the start at which everything has
# ended, 560), RS_FUZZ_JOBS (14). OUTDIR gets at most 8 files (what a device call brings back): summary.txt,
# bench.h5, bench.log, ncu.txt, logs.tar.xz and the campaign's fuzz-summary.txt, fuzz-new-corpus.tar.xz
# and (only if a job found something) fuzz-crashes.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/.."
P=${1:?pack} OUTD=${2:?outdir}
B=/tmp/rs_final_bin W=/tmp/rs_final
mkdir -p "$B" "$OUTD" "$W"
tar -xJf "$P/gpu.tar.xz" -C "$B" || exit 1
export LD_LIBRARY_PATH="$B:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
S="$OUTD/summary.txt"
: > "$S"
STAGE_TMP=$W
. eval/cuda/tests/gpu_stage.sh
gpu_cublas_path
T0=$(date +%s)
DL=${RS_DEADLINE:-560}
left() { echo $(( DL - ($(date +%s) - T0) )); }
STAGES=" ${RS_STAGES:-bench ncu fuzz dk checks} "
want() { case "$STAGES" in *" $1 "*) return 0 ;; esac; return 1; }
RS=$B/replayssm
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >> "$S" 2>&1
if want san; then # the GPU evaluator's sanitizer runs alone (nothing beside them): gdn-tiny, default mode
  for tool in racecheck memcheck; do
    san_stage $tool 240 kl-gdn-tiny-alone "$RS" kl --device cuda --model data/models/gdn-tiny --tokens 96 --chunk 32 \
      --force --out $W/san_alone.h5
  done
fi
if want bench; then
  t0=$(date +%s)
  timeout 240 "$RS" bench --out "$OUTD/bench.h5" --force > "$OUTD/bench.log" 2>&1
  echo "replayssm bench: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
  sed -n '/## summary/,$p' "$OUTD/bench.log" | cut -c1-200 >> "$S"
fi
if want ncu; then
  t0=$(date +%s)
  NCU="ncu --clock-control none --kernel-name-base demangled --section SpeedOfLight --section MemoryWorkloadAnalysis
       --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
  : > "$OUTD/ncu.txt"
  # the std sweep of one shape runs B = 1 first: the first fused launches after the warm-up are B = 1
  echo "== fused std decode, Nemotron-3-Super, B = 1" >> "$OUTD/ncu.txt"
  timeout 60 $NCU -k "regex:rs_k_replay_main<.*bool.1, .int.128>" --launch-skip 20 --launch-count 2 \
    "$RS" bench --shape nemotron-3-super --sweep std --reps 2 --out $W/ncu1.h5 --force >> "$OUTD/ncu.txt" 2>&1
  echo "ncu fused B=1: exit $?" >> "$S"
  echo "== fused std decode, Nemotron-3-Super, B = 256 (--quick: B = 256 only)" >> "$OUTD/ncu.txt"
  timeout 60 $NCU -k "regex:rs_k_replay_main<.*bool.1, .int.128>" --launch-skip 20 --launch-count 2 \
    "$RS" bench --shape nemotron-3-super --sweep std --quick --reps 2 --out $W/ncu2.h5 --force >> "$OUTD/ncu.txt" 2>&1
  echo "ncu fused B=256: exit $?" >> "$S"
  echo "== fused v4 low-precision read, Nemotron-3-Super, B = 256" >> "$OUTD/ncu.txt"
  timeout 60 $NCU -k "regex:rs_k_replay_lpw<.*bool.1>" --launch-skip 20 --launch-count 3 \
    "$RS" bench --shape nemotron-3-super --sweep lp --quick --reps 2 --out $W/ncu3.h5 --force >> "$OUTD/ncu.txt" 2>&1
  echo "ncu fused lpw: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
  grep -E "^  [a-z_]*rs_k_|void rs_k_|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Duration|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible" "$OUTD/ncu.txt" | cut -c1-160 >> "$S"
fi
FZ=0
if want fuzz && [ -f "$P/fuzz.tar.xz" ]; then
  FZ=$(( $(left) - 25 ))
  if [ "$FZ" -gt 60 ]; then fuzz_campaign_start "$P/fuzz.tar.xz" "$FZ" "${RS_FUZZ_JOBS:-14}" $W/fuzz || FZ=0
  else FZ=0; fi
fi
if want dk; then # d_k = 64 / 256 standard decode (issue 18): the tests, then both sanitizers on --quick
  stage cuda_decode 150 "$B/test_cuda_decode" --quick
  stage cuda_dk_refuse 30 "$B/test_cuda_dk_refuse"
  for tool in memcheck racecheck; do
    lim=$(( $(left) - 200 )); [ "$lim" -gt 150 ] && lim=150
    san_stage $tool "$lim" test_cuda_decode-quick "$B/test_cuda_decode" --quick
  done
fi
if want checks; then
  for m in gdn-tiny mamba2-tiny; do
    t0=$(date +%s)
    timeout 60 "$RS" kl --device cuda --compute twin --model data/models/$m --tokens 8192 --quiet --force \
      --out "$W/$m-twin.h5" > "$W/$m-twin.txt" 2>&1
    echo "kl --compute twin $m 8192: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
    [ -f "$P/cpu/$m-cpu-s0.h5" ] && python3 eval/cuda/tests/twin_compare.py "$W/$m-twin.h5" "$P/cpu/$m-cpu-s0.h5" 2>&1 |
      head -3 | cut -c1-300 >> "$S"
  done
  for tool in racecheck memcheck; do
    lim=$(( $(left) - 90 )); [ "$lim" -gt 240 ] && lim=240
    san_stage $tool "$lim" kl-gdn-tiny "$RS" kl --device cuda --model data/models/gdn-tiny --tokens 96 --chunk 32 \
      --quiet --force --out $W/san.h5
  done
  lim=$(( $(left) - 40 )); [ "$lim" -gt 120 ] && lim=120
  [ "$lim" -ge 20 ] && stage gpu_ops "$lim" "$B/test_gpu_ops" --quick
fi
if [ "$FZ" -gt 0 ]; then # the campaign ends on its own; wait for its summary
  fuzz_campaign_wait $(( $(left) + 20 )) $W/fuzz
  # a call brings back at most 8 files: the campaign's summary, new corpus and crashes (if any) come
  # back as files, its logs inside logs.tar.xz
  cp $W/fuzz/summary.txt "$OUTD/fuzz-summary.txt" 2>/dev/null
  cp $W/fuzz/new-corpus.tar.xz "$OUTD/fuzz-new-corpus.tar.xz" 2>/dev/null
  cp $W/fuzz/crashes.tar.xz "$OUTD/fuzz-crashes.tar.xz" 2>/dev/null
  rm -f $W/fuzz/new-corpus.tar.xz $W/fuzz/crashes.tar.xz
fi
tar -cJf "$OUTD/logs.tar.xz" -C $W --exclude='*.h5' . 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
cat "$S"

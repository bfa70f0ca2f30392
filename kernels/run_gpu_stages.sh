#!/usr/bin/env bash
# run_gpu_stages.sh — one bounded device call for issue 18's kernel work, in stages chosen by RS_STAGES, in place
# of the one-off scripts of earlier sessions (run_gpu_v6c.sh, run_gpu_v6d.sh, ...; removed, in git history):
#   kernels/run_gpu_stages.sh PACK [PACK_B] OUTDIR     (make_gpu_pack.sh or build_static.sh folders)
# The pack under test is PACK_B when given, else PACK. Stages (RS_STAGES, a space-separated list, run in
# this order; default "ab verify lpread san"):
#   ab      kernels/run_gpu_ab.sh PACK PACK_B (RS_SWEEPS, default "lp,verify"; no tests) -> ab/table.txt
#   verify  test_cuda_verify in full (RS_VERIFY_S, default 240 s; RS_VERIFY_ARGS, e.g. --tc-only, or --rest: the
#           full list takes over 200 s since the twelfth session, so two calls of --tc-only and --rest cover it;
#           --bf16: the bf16-ring and misaligned runs alone; --v6a: the forced-v6a runs of --tc-only alone)
#   verifyA test_cuda_verify of pack A (when two packs are given; RS_VERIFY_A_ARGS), e.g. the default build beside a
#           build-time variant under test
#   lpread  test_cuda_lpread, test_cuda_decode (RS_DECODE_ARGS, default --quick when unset; "" runs it in full)
#           and test_cuda_dk_refuse (RS_LPREAD_TESTS: a subset of these three)
#   san     compute-sanitizer memcheck and racecheck of test_cuda_lpread --quick and test_cuda_verify --quick --tc-only
#           (RS_SAN_TESTS: another list of test programs, each run with --quick; RS_SAN_S: each run's limit, 90 s;
#           RS_SAN_VERIFY_ARGS: test_cuda_verify's selector in place of --tc-only, e.g. --bf16 or --rest)
#   ncusrc  Nsight Compute source counters (executed instructions and stall samples per SASS line), one launch
#           each of the kernels named in RS_NCU (default "fp8 nvfp4"): fp8 / nvfp4 the v4 low-precision reads
#           (rs_k_replay_lpw, Mamba-2, bf16 ring, the separate-prologue path) on Nemotron-3-Super at B = 256;
#           vtc_m2 / vtc_gdn the tensor-core verification (rs_k_verify_tc, bf16 ring, T <= 8, GDN with GS, the first
#           T = 8 case of `bench --sweep verify --quick`: B = 256, a = 1) on Nemotron-3-Super / Qwen3.5-4B;
#           flush / nonflush the fp32 main kernel (rs_k_replay_main) of Nemotron-3-Super's std rows allflush /
#           nonflush-h7 at B = 256 (the row's launches picked by its NVTX range); b1 / b1conv the same row choice for
#           the amortised step's main kernel and the conventional step at B = 1 (cycle-bf16ring / fp32 rows)
#           -> ncusrc_*.csv (+ the SpeedOfLight etc. sections in ncusrc_*.txt)
#   bench   `replayssm bench --out OUTDIR/bench.h5 --force` (every sweep and shape, or RS_BENCH_ARGS, e.g.
#           "--sweep std" for a variant's rows beside the default's in one build), after everything else; RS_SMI_MS:
#           nvidia-smi's clocks, power and throttle reasons every RS_SMI_MS ms (smi.csv) beside the bench's output
#           with a time stamp a line (bench_ts.log)
# RS_DEADLINE: seconds from the start by which the stages before bench have ended (default 420; a stage
# that would start later is skipped and says so). OUTDIR: summary.txt, all.tar.xz (logs, ab/, ncu output),
# and bench.h5 + bench.log with the bench stage (+ smi.csv, bench_ts.log with RS_SMI_MS: six files), within the eight
# a device call brings back.
set -uo pipefail
cd "$(dirname "$0")/.."
PA=${1:?pack}
if [ $# -ge 3 ]; then PB=$2 OUTD=$3; else PB=$1 OUTD=${2:?outdir}; fi
W=/tmp/rs_stages
rm -rf "$W" && mkdir -p "$W" "$OUTD"
S="$OUTD/summary.txt"
: > "$S"
T0=$(date +%s)
DL=${RS_DEADLINE:-420}
STAGES=" ${RS_STAGES:-ab verify lpread san} "
want() { case "$STAGES" in *" $1 "*) return 0 ;; esac; return 1; }
left() { echo $(( DL - ($(date +%s) - T0) )); }
STAGE_TMP=$W STAGE_ALL="$W/tests.log"
: > "$STAGE_ALL"
. eval/cuda/tests/gpu_stage.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >> "$S" 2>&1
BT=$(gpu_pack_bindir "$PB" t "$W") || { echo "no binaries in $PB" >> "$S"; exit 2; }
CUB=$(gpu_cublas_ld)
export LD_LIBRARY_PATH="$BT$CUB"
echo "pack under test: $PB (pack A: $PA); stages:$STAGES" >> "$S"

if want ab && [ "$PA" != "$PB" ]; then
  t0=$(date +%s)
  RS_SWEEPS=${RS_SWEEPS:-lp,verify} RS_SKIP_TESTS=1 RS_DEADLINE=${RS_AB_S:-150} \
    bash kernels/run_gpu_ab.sh "$PA" "$PB" "$W/ab" > "$W/ab.out" 2>&1
  echo "ab: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
  [ -f "$W/ab/table.txt" ] && grep -E "^model| 256 " "$W/ab/table.txt" >> "$S"
fi
if want verify; then
  if [ "$(left)" -gt 40 ]; then stage test_cuda_verify $(( $(left) < ${RS_VERIFY_S:-240} ? $(left) : ${RS_VERIFY_S:-240} )) "$BT/test_cuda_verify" ${RS_VERIFY_ARGS:-}
  else echo "test_cuda_verify: skipped (no time left)" >> "$S"; fi
fi
if want verifyA && [ "$PA" != "$PB" ]; then # pack A's test_cuda_verify, e.g. the default build beside a variant
  BA=$(gpu_pack_bindir "$PA" a "$W") || BA=
  if [ -z "$BA" ]; then echo "test_cuda_verify_A: no binaries in $PA" >> "$S"
  elif [ "$(left)" -gt 40 ]; then
    LD_LIBRARY_PATH="$BA$CUB" stage test_cuda_verify_A $(( $(left) < ${RS_VERIFY_S:-240} ? $(left) : ${RS_VERIFY_S:-240} )) \
      "$BA/test_cuda_verify" ${RS_VERIFY_A_ARGS:-}
  else echo "test_cuda_verify_A: skipped (no time left)" >> "$S"; fi
fi
if want lpread; then
  for t in ${RS_LPREAD_TESTS:-test_cuda_lpread test_cuda_decode test_cuda_dk_refuse}; do
    [ $t = test_cuda_decode ] && t="test_cuda_decode ${RS_DECODE_ARGS---quick}"
    set -- $t
    if [ "$(left)" -gt 30 ]; then stage "$1" $(( $(left) < 150 ? $(left) : 150 )) "$BT/$1" "${@:2}"
    else echo "$1: skipped (no time left)" >> "$S"; fi
  done
fi
if want san; then
  for t in ${RS_SAN_TESTS:-test_cuda_lpread test_cuda_verify}; do
    for tool in memcheck racecheck; do
      lim=$(( $(left) < ${RS_SAN_S:-90} ? $(left) : ${RS_SAN_S:-90} ))
      san_stage $tool $lim $t "$BT/$t" --quick $([ $t = test_cuda_verify ] && echo ${RS_SAN_VERIFY_ARGS---tc-only})
    done
  done
fi
if want ncusrc; then
  NCU="ncu --clock-control none --kernel-name-base mangled --import-source no --section SpeedOfLight
       --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats
       --section InstructionStats --section SourceCounters"
  for n in ${RS_NCU:-fp8 nvfp4}; do
    nv=
    # kernel (mangled: the demangled names of the tenth session's first try matched nothing), shape, bench arguments
    case $n in
      fp8 | nvfp4) k="_Z15rs_k_replay_lpwILi0ELi2ELi$([ $n = fp8 ] && echo 3 || echo 4)ELb0ELb0ELb0E"
                   sh=nemotron-3-super a="--sweep lp" ;;
      vtc_m2) k="_Z14rs_k_verify_tcILi0ELi2ELi1ELb0ELb0EE" sh=nemotron-3-super a="--sweep verify --quick" ;;
      vtc_gdn) k="_Z14rs_k_verify_tcILi1ELi2ELi1ELb0ELb1EE" sh=qwen3.5-4b a="--sweep verify --quick" ;;
      # one std row's main kernel, chosen by the bench's NVTX range of that row (rs_bench_case.label)
      flush | nonflush) k="rs_k_replay_main" sh=nemotron-3-super a="--sweep std --quick"
                        nv="std:nemotron-3-super:$([ $n = flush ] && echo allflush || echo nonflush-h7):256/" ;;
      # B = 1: the amortised step's main kernel and the conventional step (the B = 1 target), Nemotron-3-Super
      b1) k="rs_k_replay_main" sh=nemotron-3-super a="--sweep std" nv="std:nemotron-3-super:cycle-bf16ring:1/" ;;
      b1conv) k="rs_k_conv_decode" sh=nemotron-3-super a="--sweep std" nv="std:nemotron-3-super:fp32:1/" ;;
      *) echo "ncusrc $n: unknown (RS_NCU: fp8 nvfp4 vtc_m2 vtc_gdn flush nonflush b1 b1conv)" >> "$S"; continue ;;
    esac
    if [ "$(left)" -lt 40 ]; then echo "ncusrc $n: skipped (no time left)" >> "$S"; continue; fi
    t0=$(date +%s)
    timeout 90 $NCU -k "regex:$k" --launch-skip 4 --launch-count 1 ${nv:+--nvtx --nvtx-include "$nv"} \
      -o "$W/ncusrc_$n" "$BT/replayssm" bench --shape $sh $a --reps 2 --out "$W/ncu_$n.h5" --force \
      > "$W/ncusrc_$n.txt" 2>&1
    r=$?
    ncu -i "$W/ncusrc_$n.ncu-rep" --page details >> "$W/ncusrc_$n.txt" 2>&1
    ncu -i "$W/ncusrc_$n.ncu-rep" --page source --csv --print-source sass > "$W/ncusrc_$n.csv" 2> "$W/ncusrc_${n}_err.txt" ||
      ncu -i "$W/ncusrc_$n.ncu-rep" --page source --csv > "$W/ncusrc_$n.csv" 2>> "$W/ncusrc_${n}_err.txt"
    echo "ncusrc $n: exit $r ($(( $(date +%s) - t0 )) s), csv $(wc -l < "$W/ncusrc_$n.csv") lines" >> "$S"
    grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|No Eligible|Issued Warp|Executed Ipc A" \
      "$W/ncusrc_$n.txt" | head -12 | cut -c1-150 >> "$S"
  done
fi
tar -cJf "$OUTD/all.tar.xz" -C "$W" --exclude='bin_*' --exclude='*.h5' . 2>> "$S"
if want bench; then
  t0=$(date +%s)
  if [ -n "${RS_SMI_MS:-}" ]; then # clocks, power and throttle reasons every RS_SMI_MS ms beside time-stamped rows
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
      --format=csv -lms "$RS_SMI_MS" > "$OUTD/smi.csv" 2>&1 &
    smi=$!
    timeout 240 "$BT/replayssm" bench --out "$OUTD/bench.h5" --force ${RS_BENCH_ARGS:-} 2>&1 |
      while IFS= read -r l; do printf '%s %s\n' "$(date +%H:%M:%S.%3N)" "$l"; done > "$OUTD/bench_ts.log"
    r=${PIPESTATUS[0]}
    kill $smi 2> /dev/null
    cut -d' ' -f2- "$OUTD/bench_ts.log" > "$OUTD/bench.log"
  else
    timeout 240 "$BT/replayssm" bench --out "$OUTD/bench.h5" --force ${RS_BENCH_ARGS:-} > "$OUTD/bench.log" 2>&1
    r=$?
  fi
  echo "replayssm bench: exit $r ($(( $(date +%s) - t0 )) s)" >> "$S"
  sed -n '/## summary/,/^$/p' "$OUTD/bench.log" | cut -c1-200 >> "$S"
fi
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
cat "$S"

#!/usr/bin/env bash
# run_gpu_v4a_vs_head.sh — one bounded device call (issue 18): is the low-precision read regression
# (v4 fp8 Nemotron-3-Super 109.9 us in the v4a run, 134.2 us in the committed bench) in the kernels
# between commit cab45fc and HEAD, or before cab45fc? Two builds side by side on the same GPU:
#   1. bench  `replayssm bench --sweep lp --model SHAPE` for nemotron-3-super and qwen3.5-4b, the
#             builds alternately (old, new, old, new), so drift between the rounds shows
#   2. ncu    Nsight Compute of the v4 fp8 read rs_k_replay_lpw (Mamba-2, bf16 ring, prologue path)
#             of each build (3 launches), then, while time is left: the prologue rs_k_replay_prep of
#             each build, the v4 nvfp4 read of each build, the new build's fused fp8 read
#   3. a side-by-side table (printed last; also the end of OUTDIR/summary.txt)
#   kernels/run_gpu_v4a_vs_head.sh BINDIR_OLD BINDIR_NEW OUTDIR [BINDIR_CAP]
# BINDIR_CAP (optional, a third build "cap"): HEAD built with RS_NVCC_DEFS=-DRS_CUDA_CAP_PROLOGUE_PATH=1
# (the fused kernels' register cap on the separate-prologue kernels: Mamba-2 fp32 read 113 -> 96
# registers, v4 reads 123 -> 96 with 12 / 28 bytes of spills, GDN v4 nvfp4 141 -> 128); it runs in every
# bench round after new, and ncu profiles its v4 fp8 / nvfp4 reads and the fp32 prologue-path read.
# BINDIR_*: a kernels/build_static.sh folder (replayssm, libreplayssm-gpu.so, libcudart.so.13,
# libcjson.so.1), or a make_gpu_pack.sh folder holding gpu.tar.xz (extracted to /tmp). Each build
# runs with its own folder first on LD_LIBRARY_PATH (the programs' $ORIGIN rpath is a RUNPATH, which
# LD_LIBRARY_PATH overrides; both builds' libraries are named libreplayssm-gpu.so).
# The old CLI (cab45fc) knows --model NAME, not --shape; HEAD takes --model NAME as --shape NAME.
# Row names: old `nonflush-h7-FMT` (v4, prologue: the only v4 launch then) and `-v3`; new: `` (AUTO:
# the prologue for v4 reads), `-prep`, `-fused`, `-v3`. So old FMT <-> new FMT-prep.
# ncu's demangled names: template ints as (int)3, bools as (bool)0; cab45fc's rs_k_replay_lpw has four
# template arguments <FAM, RDT, CKF, TWO>, HEAD's five <..., FUSED>; rs_k_replay_prep<FAM, RDT> and
# <FAM, RDT, DK>. Mamba-2 = (int)0, bf16 ring = (int)2, fp8 = (int)3, nvfp4 = (int)4.
# Env: RS_DEADLINE (seconds from the start by which everything has ended, default 290), RS_REPS (timed
# replays per bench case, 50). OUTDIR gets 4 files (a call brings back at most 8): summary.txt,
# bench.log (every bench's stdout, headed), ncu.txt (every ncu report, headed), bench_h5.tar.xz.
set -uo pipefail
OLD_IN=${1:?usage: run_gpu_v4a_vs_head.sh BINDIR_OLD BINDIR_NEW OUTDIR}
NEW_IN=${2:?usage: run_gpu_v4a_vs_head.sh BINDIR_OLD BINDIR_NEW OUTDIR}
OUTD=${3:?usage: run_gpu_v4a_vs_head.sh BINDIR_OLD BINDIR_NEW OUTDIR}
CAP_IN=${4:-}
T0=$(date +%s)
DL=${RS_DEADLINE:-$([ -n "$CAP_IN" ] && echo 420 || echo 290)}
REPS=${RS_REPS:-50}
left() { echo $(( DL - ($(date +%s) - T0) )); }
W=/tmp/rs_v4a_vs_head
rm -rf "$W" && mkdir -p "$W" "$OUTD"
S="$OUTD/summary.txt"
: > "$S"
: > "$OUTD/bench.log"
: > "$OUTD/ncu.txt"
. "$(dirname "$0")/../eval/cuda/tests/gpu_stage.sh" # gpu_pack_bindir

OLD=$(gpu_pack_bindir "$OLD_IN" old "$W") || { echo "no replayssm in $OLD_IN (nor gpu.tar.xz)" | tee -a "$S"; exit 2; }
NEW=$(gpu_pack_bindir "$NEW_IN" new "$W") || { echo "no replayssm in $NEW_IN (nor gpu.tar.xz)" | tee -a "$S"; exit 2; }
TAGS="old new" CAP=
if [ -n "$CAP_IN" ]; then
  CAP=$(gpu_pack_bindir "$CAP_IN" cap "$W") || { echo "no replayssm in $CAP_IN (nor gpu.tar.xz)" | tee -a "$S"; exit 2; }
  TAGS="old new cap"
fi
CUDA_LIBS=/usr/local/cuda/lib64
for d in $(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null); do
  [ -e "$d/libcublas.so.13" ] && CUDA_LIBS="$CUDA_LIBS:$d"
done
dir_of() { case $1 in old) echo "$OLD" ;; cap) echo "$CAP" ;; *) echo "$NEW" ;; esac; }
# run with one build's libraries: rs TAG ARGS... (replayssm) / rsx TAG PROGRAM ARGS... (e.g. ncu ... replayssm)
rs() { local d; d=$(dir_of "$1"); shift; LD_LIBRARY_PATH="$d:$CUDA_LIBS" "$d/replayssm" "$@"; }
rsx() { local d; d=$(dir_of "$1"); shift; LD_LIBRARY_PATH="$d:$CUDA_LIBS" "$@"; }

smi() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,clocks_throttle_reasons.active --format=csv,noheader 2>&1 | head -2; }
echo "gpu at start: $(smi)" >> "$S"
for t in $TAGS; do
  d=$(dir_of $t)
  lib=$(LD_LIBRARY_PATH="$d:$CUDA_LIBS" ldd "$d/replayssm" | awk '/libreplayssm-gpu/ {print $3}')
  echo "$t: $d/replayssm, libreplayssm-gpu.so from $lib ($(md5sum < "$lib" | cut -c1-12))" >> "$S"
  [ "$lib" = "$d/libreplayssm-gpu.so" ] || echo "WARNING: $t loads another build's library" >> "$S"
done

# ---- 1. bench: old, new, old, new ----
SHAPES="nemotron-3-super qwen3.5-4b"
for round in 1 2; do
  for t in $TAGS; do
    for m in $SHAPES; do
      lim=$(( $(left) - 150 )) # keep ~150 s for ncu and the table
      [ $round = 2 ] && lim=$(( $(left) - 110 ))
      [ "$lim" -gt 60 ] && lim=60
      if [ "$lim" -lt 15 ]; then echo "bench $t r$round $m: skipped (no time left)" >> "$S"; continue; fi
      t0=$(date +%s)
      rs $t bench --model $m --sweep lp --reps "$REPS" --out "$W/bench_${t}_r${round}_$m.h5" --force > "$W/b.log" 2>&1
      r=$?
      { echo "== bench $t round $round $m (exit $r, $(( $(date +%s) - t0 )) s)"; cat "$W/b.log"; } >> "$OUTD/bench.log"
      echo "bench $t r$round $m: exit $r ($(( $(date +%s) - t0 )) s)" >> "$S"
      # rows: "r<round> <tag> <model> <variant> <median_us> <GB/s> <%copy>"
      awk -v r=$round -v t=$t '$3 ~ /^nonflush-h7-/ && $2 == "replay" {print "r" r, t, $1, $3, $8, $9, $10}' "$W/b.log" >> "$W/rows.txt"
    done
  done
done
echo "gpu after bench: $(smi)" >> "$S"

# ---- 2. Nsight Compute ----
NCU="ncu --clock-control none --kernel-name-base demangled --section SpeedOfLight --section MemoryWorkloadAnalysis
     --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
# prof TAG NAME REGEX SKIP COUNT SHAPE: one ncu run of the lp sweep (2 replays a case) of one build
prof() {
  local t=$1 name=$2 re=$3 skip=$4 cnt=$5 m=$6 lim t0 r d
  lim=$(( $(left) - 15 )); [ "$lim" -gt 75 ] && lim=75
  if [ "$lim" -lt 25 ]; then echo "ncu $t $name: skipped (no time left)" >> "$S"; return; fi
  d=$(dir_of $t)
  t0=$(date +%s)
  rsx $t timeout "$lim" $NCU -k "regex:$re" --launch-skip "$skip" --launch-count "$cnt" \
    "$d/replayssm" bench --model $m --sweep lp --reps 2 --out "$W/ncu_${t}_$name.h5" --force > "$W/n.log" 2>&1
  r=$?
  { echo "== ncu $t $name ($m, -k regex:$re, skip $skip, count $cnt; exit $r, $(( $(date +%s) - t0 )) s)"; cat "$W/n.log"; } >> "$OUTD/ncu.txt"
  echo "ncu $t $name: exit $r ($(( $(date +%s) - t0 )) s), $(grep -c '^==PROF== Profiling "void rs_k_replay_' "$W/n.log") launches profiled" >> "$S"
  # per profiled launch and metric: "ncu <tag> <name>|<metric and unit>|<value>"
  awk -v t=$t -v n=$name '
    $NF ~ /^[0-9][0-9.,]*$/ && /Duration|DRAM Throughput|Compute \(SM\) Throughput|SM Frequency|DRAM Frequency|Registers Per Thread|Theoretical Occupancy|Achieved Occupancy|Block Limit Registers|Block Limit Shared Mem|Dynamic Shared Memory Per Block|Warp Cycles Per Issued Instruction|Issue Slots Busy|No Eligible|Grid Size|Block Size/ {
      v = $NF; $NF = ""; sub(/^ +/, ""); sub(/ +$/, ""); gsub(/ +/, " "); print "ncu " t " " n "|" $0 "|" v }' "$W/n.log" >> "$W/ncu_rows.txt"
}
M2FP8_OLD='rs_k_replay_lpw<.int.0, .int.2, .int.3, .bool.0>'
M2FP8_NEW='rs_k_replay_lpw<.int.0, .int.2, .int.3, .bool.0, .bool.0>'
prof old lpw-fp8 "$M2FP8_OLD" 4 3 nemotron-3-super
prof new lpw-fp8 "$M2FP8_NEW" 4 3 nemotron-3-super
prof old prep 'rs_k_replay_prep<.int.0, .int.2>' 4 2 nemotron-3-super
prof new prep 'rs_k_replay_prep<.int.0, .int.2, .int.128>' 4 2 nemotron-3-super
prof old lpw-nvfp4 'rs_k_replay_lpw<.int.0, .int.2, .int.4, .bool.0>' 4 2 nemotron-3-super
prof new lpw-nvfp4 'rs_k_replay_lpw<.int.0, .int.2, .int.4, .bool.0, .bool.0>' 4 2 nemotron-3-super
if [ -n "$CAP" ]; then
  prof cap lpw-fp8 "$M2FP8_NEW" 4 3 nemotron-3-super
  prof cap lpw-nvfp4 'rs_k_replay_lpw<.int.0, .int.2, .int.4, .bool.0, .bool.0>' 4 2 nemotron-3-super
  prof new main-fp32 'rs_k_replay_main<.int.0, .int.2, .int.0, .int.4, .bool.0, .bool.0, .int.128>' 4 2 nemotron-3-super
  prof cap main-fp32 'rs_k_replay_main<.int.0, .int.2, .int.0, .int.4, .bool.0, .bool.0, .int.128>' 4 2 nemotron-3-super
fi
prof new lpw-fp8-fused 'rs_k_replay_lpw<.int.0, .int.2, .int.3, .bool.0, .bool.1>' 4 2 nemotron-3-super
echo "gpu at end: $(smi)" >> "$S"

# ---- 3. the side-by-side table ----
tar -cJf "$OUTD/bench_h5.tar.xz" -C "$W" $(cd "$W" && ls bench_*.h5 2>/dev/null) 2>/dev/null
{
  echo
  echo "## lp sweep, B = 256, L = 16, h = 7, bf16 ring: median us per step (old = cab45fc build, new = HEAD build)"
  echo "## old FMT (v4, prologue) is matched with new FMT-prep; new FMT (AUTO) and FMT-fused are new-only"
  printf "%-18s %-24s %9s %9s %9s %9s %9s %9s %8s %8s\n" model variant old_r1 new_r1 cap_r1 old_r2 new_r2 cap_r2 new/old cap/new
  [ -f "$W/rows.txt" ] && awk '
    { key = $3 " " $4; if ($2 == "old" && $4 !~ /-v3$/) key = key "-prep"; # old v4 / fp32 rows: the prologue path
      v[$1 " " $2 " " key] = $5; if (!(key in seen)) { seen[key] = 1; order[n++] = key } }
    END { for (i = 0; i < n; ++i) { k = order[i]; split(k, a, " ");
            o1 = v["r1 old " k]; n1 = v["r1 new " k]; o2 = v["r2 old " k]; n2 = v["r2 new " k];
            c1 = v["r1 cap " k]; c2 = v["r2 cap " k];
            so = (o1 != "") + (o2 != ""); sn = (n1 != "") + (n2 != ""); sc = (c1 != "") + (c2 != "");
            ratio = (so && sn) ? sprintf("%.3f", ((n1 + n2) / sn) / ((o1 + o2) / so)) : "-";
            rc = (sc && sn) ? sprintf("%.3f", ((c1 + c2) / sc) / ((n1 + n2) / sn)) : "-";
            printf "%-18s %-24s %9s %9s %9s %9s %9s %9s %8s %8s\n", a[1], a[2], o1 == "" ? "-" : o1, n1 == "" ? "-" : n1,
                   c1 == "" ? "-" : c1, o2 == "" ? "-" : o2, n2 == "" ? "-" : n2, c2 == "" ? "-" : c2, ratio, rc } }' "$W/rows.txt" | sort -s -k1,1
  echo
  echo "## Nsight Compute (Nemotron-3-Super, B = 256, --clock-control none): old | new | cap, one value per profiled launch"
  [ -f "$W/ncu_rows.txt" ] && awk -F'|' '
    { split($1, h, " "); k = h[3] "|" $2; v[h[2] "|" k] = v[h[2] "|" k] (v[h[2] "|" k] == "" ? "" : " ") $3;
      if (!(k in seen)) { seen[k] = 1; order[n++] = k } }
    END { for (i = 0; i < n; ++i) { split(order[i], a, "|"); o = v["old|" order[i]]; w = v["new|" order[i]];
            c = v["cap|" order[i]];
            printf "%-14s %-42s %-22s | %-22s | %s\n", a[1], a[2], o == "" ? "-" : o, w == "" ? "-" : w, c == "" ? "-" : c } }' "$W/ncu_rows.txt"
  echo
  echo "total $(( $(date +%s) - T0 )) s"
} >> "$S"
cat "$S"

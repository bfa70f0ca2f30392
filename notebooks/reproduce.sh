#!/usr/bin/env bash
# reproduce.sh — run the replayssm experiments behind the precision figures (paper Figures 5, 12,
# 13, Table 11, Appendix C.6) and redraw them, with one command:
#
#   bash notebooks/reproduce.sh --quick   # sized for a 2-core CPU machine: <= 15 minutes (4 books x 4096)
#   bash notebooks/reproduce.sh --full    # 131072 positions x 4 books: for a long CPU run / big host
#   options: --reuse   keep logs that are already complete (default: --full yes, --quick no)
#            --logs DIR  where the HDF5 logs go (default out/figures-<mode>/, git-ignored)
#            --no-readme do not rewrite the precision section of notebooks/figures/README.md
#            --dry-run   print the replayssm commands with the chosen sizes, run nothing
#
# Needs: the replayssm binary ($REPLAYSSM, default build/replayssm; this script builds nothing:
# `cmake -S . -B build && cmake --build build -j2`) and Python with notebooks/requirements.txt.
# Writes notebooks/figures/<name>.png|pdf|json (+ table11_rtn_vs_sr.md) and regenerates the section
# of notebooks/figures/README.md between the precision-figures markers. Sizes can be overridden with the
# environment variables TOKENS, BOOKS, SEEDS, WIN_TOKENS, WIN_BOOKS, WINDOWS, THREADS, MC_STEPS (e.g.
# TOKENS=16384 BOOKS=4 bash notebooks/reproduce.sh --quick). SEEDS (default 2): the SR policies of
# Figures 5/12 and Table 11 also run with --seed 1 .. SEEDS-1 (one more log per seed and model), so
# their confidence bands cover seeds as well as books.
# docs/figures.md explains every step.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bin="${REPLAYSSM:-$repo/build/replayssm}"
case "$bin" in /*) ;; */*) bin="$PWD/$bin" ;; esac  # a relative path is relative to where you ran this
cd "$repo"
mode=quick reuse="" logs="" readme=1 dry=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --reuse) reuse=1 ;;
    --logs) logs="$2"; shift ;;
    --no-readme) readme=0 ;;
    --dry-run) dry=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "reproduce.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$mode" = quick ]; then
  # >= 4 books for the confidence bands over books; 4096 positions keep it <= 15 min on 2 cores
  : "${TOKENS:=4096}" "${BOOKS:=4}" "${SEEDS:=2}"  # Figure 5 / 12 / Table 11 logs, per model
  : "${WIN_TOKENS:=4096}" "${WIN_BOOKS:=1}"    # Figure 13 window sweep (gdn-tiny)
  : "${THREADS:=2}" "${MC_STEPS:=2000}"
  : "${reuse:=0}"
else
  : "${TOKENS:=131072}" "${BOOKS:=4}" "${SEEDS:=2}"
  : "${WIN_TOKENS:=131072}" "${WIN_BOOKS:=4}"
  : "${THREADS:=$(nproc)}" "${MC_STEPS:=2000}"
  : "${reuse:=1}"
fi
: "${GDN_MODEL:=data/models/gdn-tiny}" "${MAMBA_MODEL:=data/models/mamba2-tiny}" "${DATA:=data/pg19-sample}"
: "${WINDOWS:=4,8,16,32,64}"
logs="${logs:-out/figures-$mode}"
figs="${FIG_DIR:-notebooks/figures}"
py="${PYTHON:-python3}"

if [ "$dry" = 0 ] && [ ! -x "$bin" ]; then
  echo "reproduce.sh: no replayssm binary at $bin." >&2
  echo "  build it first: cmake -S . -B build && cmake --build build -j2   (or set REPLAYSSM=/path/to/replayssm)" >&2
  exit 1
fi
if [ "$dry" = 0 ] && ! "$py" -c 'import numpy, h5py, matplotlib' 2> /dev/null; then
  echo "reproduce.sh: $py lacks numpy/h5py/matplotlib: $py -m pip install -r notebooks/requirements.txt" >&2
  exit 1
fi
mkdir -p "$logs" "$figs"
t0=$(date +%s)
timings="$logs/timings.tsv"
: > "$timings"
say() { echo "[reproduce $mode +$(( $(date +%s) - t0 ))s] $*"; }
log_complete() { # 0 if $1 is a complete replayssm KL log
  [ -f "$1" ] && "$py" -c 'import sys, h5py
with h5py.File(sys.argv[1], "r", locking=False) as f: sys.exit(0 if f.attrs.get("status") in ("complete", b"complete") else 1)' "$1" 2> /dev/null
}
experiment() { # name out.h5 replayssm-args...: run (or resume / reuse) one replayssm kl|sweep
  local name="$1" out="$2"; shift 2
  local s=$(date +%s) how="--force"
  if [ "$dry" = 1 ]; then say "$name: (dry run) $bin $* --out $out"; return; fi
  if [ -f "$out" ] && [ "$reuse" = 1 ]; then
    if log_complete "$out"; then say "$name: reusing complete $out"; printf '%s\t%s\t0\treused\n' "$name" "$out" >> "$timings"; return; fi
    how="--resume"
  fi
  say "$name: $bin $* --out $out $how"
  "$bin" "$@" --out "$out" $how > "$out.txt"
  local dt=$(( $(date +%s) - s ))
  printf '%s\t%s\t%s\t%s\n' "$name" "$out" "$dt" "$*" >> "$timings"
  say "$name: done in ${dt}s (summary: $out.txt)"
}

FIG5="shared:fp8-sr,shared:nvfp4-sr,split:nvfp4-rtn/fp32,split:nvfp4-rtn/fp16-sr,conv:fp16-sr"
RTN="shared:nvfp4-rtn,split:nvfp4-rtn/fp16-rtn"   # Table 11 partners of shared:nvfp4-sr and split:nvfp4-rtn/fp16-sr
SR="shared:fp8-sr,shared:nvfp4-sr,split:nvfp4-rtn/fp16-sr,conv:fp16-sr"  # the stochastic ones: rerun per extra seed
common=(--data "$DATA" --books "$BOOKS" --tokens "$TOKENS" --threads "$THREADS" --seed 0 --window 16)
wcommon=(--data "$DATA" --books "$WIN_BOOKS" --tokens "$WIN_TOKENS" --threads "$THREADS" --seed 0)
say "sizes: $BOOKS books x $TOKENS positions, SEEDS = $SEEDS for the SR policies (Figures 5, 12, Table 11), $WIN_BOOKS x $WIN_TOKENS (Figure 13, L = $WINDOWS), $THREADS threads; logs in $logs"

# %% experiments -------------------------------------------------------------------------------
experiment "gdn-tiny: Figure 5 + Table 11" "$logs/kl_gdn-tiny.h5" kl --model "$GDN_MODEL" "${common[@]}" --policy "$FIG5" --policy "$RTN"
experiment "mamba2-tiny: Figure 12 + Table 11" "$logs/kl_mamba2-tiny.h5" kl --model "$MAMBA_MODEL" "${common[@]}" --policy "$FIG5" --policy "$RTN"
seedlogs_gdn=() seedlogs_mamba=()
for ((sd = 1; sd < SEEDS; sd++)); do
  seed_common=(--data "$DATA" --books "$BOOKS" --tokens "$TOKENS" --threads "$THREADS" --seed "$sd" --window 16)
  experiment "gdn-tiny: SR policies, seed $sd" "$logs/kl_gdn-tiny.seed$sd.h5" kl --model "$GDN_MODEL" "${seed_common[@]}" --policy "$SR"
  experiment "mamba2-tiny: SR policies, seed $sd" "$logs/kl_mamba2-tiny.seed$sd.h5" kl --model "$MAMBA_MODEL" "${seed_common[@]}" --policy "$SR"
  seedlogs_gdn+=("$logs/kl_gdn-tiny.seed$sd.h5") seedlogs_mamba+=("$logs/kl_mamba2-tiny.seed$sd.h5")
done
experiment "gdn-tiny: Figure 13, shared NVFP4+SR over L" "$logs/sweep_shared.h5" sweep --model "$GDN_MODEL" "${wcommon[@]}" \
  --modes shared --formats nvfp4 --rounding sr --windows "$WINDOWS"
experiment "gdn-tiny: Figure 13, split NVFP4/FP32 over L" "$logs/sweep_split.h5" sweep --model "$GDN_MODEL" "${wcommon[@]}" \
  --modes split --formats nvfp4 --rounding rtn --hp fp32 --windows "$WINDOWS"
if [ "$dry" = 1 ]; then say "C.6: (dry run) $bin theory --model qwen3.5-4b --mc-steps $MC_STEPS --out $logs/theory.h5 --force"; exit 0; fi
s=$(date +%s)
say "C.6: $bin theory --model qwen3.5-4b --mc-steps $MC_STEPS --out $logs/theory.h5 --force"
"$bin" theory --model qwen3.5-4b --mc-steps "$MC_STEPS" --out "$logs/theory.h5" --force > "$logs/theory.txt"
printf '%s\t%s\t%s\t%s\n' "C.6 theory" "$logs/theory.h5" "$(( $(date +%s) - s ))" "theory --model qwen3.5-4b --mc-steps $MC_STEPS" >> "$timings"
say "experiments done"

# %% figures -------------------------------------------------------------------------------------
fig() { say "figure: $*"; "$py" "$@" --out-dir "$figs" | sed 's/^/    /'; }
fig notebooks/fig05_kl_vs_length.py "$logs/kl_gdn-tiny.h5" "${seedlogs_gdn[@]}"
fig notebooks/fig12_kl_other_models.py "$logs/kl_mamba2-tiny.h5" "${seedlogs_mamba[@]}"
fig notebooks/fig13_kl_vs_window.py "$logs/sweep_shared.h5" "$logs/sweep_split.h5"
fig notebooks/table11_rtn_vs_sr.py "$logs/kl_gdn-tiny.h5" "${seedlogs_gdn[@]}" "$logs/kl_mamba2-tiny.h5" "${seedlogs_mamba[@]}"
fig notebooks/theory_error_accumulation.py "$logs/theory.h5"
fig notebooks/fig_bpb_vs_length.py "$logs/kl_gdn-tiny.h5" "$logs/kl_mamba2-tiny.h5" --train-context 16384
total=$(( $(date +%s) - t0 ))
if [ "$readme" = 1 ]; then
  say "$figs/README.md: regenerating the precision-figures section"
  "$py" notebooks/precision_report.py --fig-dir "$figs" --readme "$figs/README.md" --mode "$mode" \
    --timings "$timings" --total-seconds "$total" --command "bash notebooks/reproduce.sh --$mode"
fi
say "all done in $((total / 60)) min $((total % 60)) s (figures in $figs/, logs in $logs/)"

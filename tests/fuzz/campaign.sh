#!/usr/bin/env bash
# campaign.sh — a parallel libFuzzer campaign from a pack of tests/fuzz/make_campaign_pack.sh
# (docs/fuzzing.md, "Campaigns on a bigger machine"); bash and coreutils only (no python, no clang):
#   bash campaign.sh SECONDS OUTDIR
# Runs JOBS (default: the machine's cores) libFuzzer jobs at once for SECONDS, split over the pack's
# targets by needs.txt: a target's core-seconds are still_needed / (execs_per_s x SPEED); the
# targets get ceil(1.15 x their core-seconds / SECONDS) jobs, smallest first (at least one each),
# each with -runs = its share of still_needed x 1.05, so it stops once its share is done; the
# largest target gets the jobs left (perhaps none) without a cap. A job that ends early hands its slot to the target furthest behind (the running jobs
# projected from their last "#N" line), or to the slowest target when none is behind.
# Every job has its own -seed and corpus folder (seeded by the pack's seeds and committed corpus),
# -max_len=8192 -timeout=60 -print_final_stats=1 -max_total_time=<seconds left>.
# Writes OUTDIR/summary.txt (per job: target, seed, stat::number_of_executed_units, ok / crash /
# leak / timeout / oom / interrupted / exit-<code>;
# per target totals), OUTDIR/crashes.tar.xz when a job left a crash / leak / timeout / oom file,
# and OUTDIR/new-corpus.tar.xz (the jobs' corpora per target, by file name, capped per target).
# Environment: JOBS, SPEED (this machine's speed per core relative to the measured rates, 1.0),
# CORPUS_CAP_KB (per target, 1500), NEEDS (another needs file), KEEP_JOBS=1 (keep the job folders;
# by default only summary.txt, campaign.log and the archives stay, logs.tar.xz holding the logs).
set -uo pipefail
SECS=${1:?usage: campaign.sh SECONDS OUTDIR}
OUT=${2:?usage: campaign.sh SECONDS OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
JOBS=${JOBS:-$(nproc)}
SPEED=${SPEED:-1.0}
CAP_KB=${CORPUS_CAP_KB:-1500}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export LD_LIBRARY_PATH="$HERE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RS_FUZZ_FIXTURES="$HERE/fixtures/tests/fixtures"
log() { echo "campaign: $*" | tee -a "$OUT/campaign.log"; }
# clang 14's ASan cannot start on kernels with 32 bits of mmap randomisation (Ubuntu 24.04's
# default): when a program cannot run one input, run everything again without address randomisation
probe=$(ls "$HERE"/bin/fuzz_* | head -1)
if ! "$probe" -runs=1 > "$OUT/probe.log" 2>&1; then
  if [ -z "${RS_FZ_NO_ASLR:-}" ] && command -v setarch > /dev/null; then
    log "$(basename "$probe") does not start ($(grep -m1 -E 'ERROR|DEADLY' "$OUT/probe.log")): again under setarch -R"
    RS_FZ_NO_ASLR=1 exec setarch "$(uname -m)" -R bash "$0" "$@"
  fi
  log "$(basename "$probe") does not start: see $OUT/probe.log"; exit 3
fi

# ---- the plan ------------------------------------------------------------------------------
declare -A NEED RATE CORE_S WANT GIVEN TOTAL
TARGETS=()
while read -r t need rate; do
  [[ -z "$t" || "$t" == \#* ]] && continue
  [ -x "$HERE/bin/fuzz_$t" ] || continue
  TARGETS+=("$t"); NEED[$t]=$need; RATE[$t]=$rate; TOTAL[$t]=0
  CORE_S[$t]=$(awk -v n="$need" -v r="$rate" -v s="$SPEED" 'BEGIN {printf "%d", n / (r * s)}')
  WANT[$t]=$(awk -v c="${CORE_S[$t]}" -v S="$SECS" 'BEGIN {w = 1.15 * c / S; printf "%d", (w == int(w)) ? w : int(w) + 1}')
done < "${NEEDS:-$HERE/needs.txt}"
NT=${#TARGETS[@]}
[ "$NT" -gt 0 ] || { echo "campaign.sh: no targets" >&2; exit 2; }
# smallest core-seconds first; the last one takes what is left
mapfile -t ORDER < <(for t in "${TARGETS[@]}"; do echo "${CORE_S[$t]} $t"; done | sort -n | awk '{print $2}')
left=$JOBS
for i in "${!ORDER[@]}"; do
  t=${ORDER[$i]}; after=$(( NT - i - 2 )) # targets after this one that need a job kept for them
  if [ "$after" -lt 0 ]; then g=$left # the largest: what is left (maybe nothing; it gets the slots handed on)
  else
    g=${WANT[$t]}; [ "$g" -gt $(( left - after )) ] && g=$(( left - after ))
    [ "$g" -lt 1 ] && g=1
    [ "$g" -gt "$left" ] && g=$left # fewer jobs than targets: the smallest ones first
  fi
  GIVEN[$t]=$g; left=$(( left - g ))
done
LAST=${ORDER[$((NT - 1))]}
log "$(date -u +%FT%TZ) $JOBS jobs for $SECS s (SPEED $SPEED)"
for t in "${ORDER[@]}"; do log "  $t: still needed ${NEED[$t]}, ~${CORE_S[$t]} core-s at ${RATE[$t]}/s x $SPEED -> ${GIVEN[$t]} jobs"; done

# ---- jobs -------------------------------------------------------------------------------------
T0=$(date +%s); TEND=$(( T0 + SECS ))
declare -A JPID JT JSEED JDIR JSTART JLEN JCAP JUNITS JSTATE JSECS
NJOB=0; RUNNING=()
launch() { # target runs-cap (-1: none)
  local t=$1 cap=$2 now; now=$(date +%s)
  local len=$(( TEND - now ))
  NJOB=$(( NJOB + 1 ))
  local n=$NJOB d="$OUT/job$(printf %02d $NJOB)-$t" seed=$(( 7100 + NJOB ))
  mkdir -p "$d/corpus"
  ( cd "$d" && exec "$HERE/bin/fuzz_$t" -seed=$seed -max_len=8192 -timeout=60 -print_final_stats=1 \
      -max_total_time=$len -runs=$cap -artifact_prefix="$d/" corpus "$HERE/seeds/$t" "$HERE/corpus/$t" \
      > "$d/log" 2>&1 ) &
  JPID[$n]=$!; JT[$n]=$t; JSEED[$n]=$seed; JDIR[$n]=$d; JSTART[$n]=$now; JLEN[$n]=$len; JCAP[$n]=$cap
  RUNNING+=("$n")
}
units_of() { # job -> executed units (final stats, else the last progress line)
  local u
  u=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "${JDIR[$1]}/log" 2>/dev/null | grep -o '[0-9]*$' | tail -1)
  [ -z "$u" ] && u=$(grep -ao '^#[0-9]*' "${JDIR[$1]}/log" 2>/dev/null | tail -1 | tr -d '#')
  echo "${u:-0}"
}
projected() { # target -> finished units + running jobs' projection to their end
  local t=$1 p=${TOTAL[$1]} n now u e; now=$(date +%s)
  for n in "${RUNNING[@]}"; do
    [ "${JT[$n]}" = "$t" ] || continue
    u=$(units_of "$n"); e=$(( now - JSTART[$n] )); [ "$e" -lt 1 ] && e=1
    u=$(( u * JLEN[$n] / e )); [ "${JCAP[$n]}" -gt 0 ] && [ "$u" -gt "${JCAP[$n]}" ] && u=${JCAP[$n]}
    p=$(( p + u ))
  done
  echo "$p"
}
cap_for() { # target jobs -> -runs per job
  local t=$1 g=$2
  [ "$g" -lt 1 ] && g=1
  if [ "$t" = "$LAST" ]; then echo -1; else echo $(( (NEED[$t] * 105 / 100 + g - 1) / g )); fi
}
for t in "${ORDER[@]}"; do
  c=$(cap_for "$t" "${GIVEN[$t]}")
  for ((k = 0; k < GIVEN[$t]; k++)); do launch "$t" "$c"; done
done

finish_job() { # job
  local n=$1 rc=0 st=ok
  wait "${JPID[$n]}"; rc=$?
  JUNITS[$n]=$(units_of "$n")
  TOTAL[${JT[$n]}]=$(( TOTAL[${JT[$n]}] + JUNITS[$n] ))
  if compgen -G "${JDIR[$n]}/crash-*" >/dev/null; then st=crash
  elif compgen -G "${JDIR[$n]}/leak-*" >/dev/null; then st=leak
  elif compgen -G "${JDIR[$n]}/timeout-*" >/dev/null; then st=timeout
  elif compgen -G "${JDIR[$n]}/oom-*" >/dev/null; then st=oom
  elif [ "$rc" -eq 72 ]; then st=interrupted # libFuzzer's exit code after SIGINT (stats printed)
  elif [ "$rc" -ne 0 ]; then st="exit-$rc"; fi
  JSTATE[$n]=$st
  JSECS[$n]=$(( $(date +%s) - JSTART[$n] ))
  # the targets' scratch folders (removed at a normal exit; not after a crash or SIGINT)
  rm -rf "/dev/shm/rs_fuzz_${JPID[$n]}" "/tmp/rs_fuzz_${JPID[$n]}"
  log "job $n ${JT[$n]} seed ${JSEED[$n]}: ${JUNITS[$n]} units, $st ($(( $(date +%s) - JSTART[$n] )) s)"
}
# SIGINT / SIGTERM: the jobs are interrupted (libFuzzer still prints its stats) and the results written
STOP=0
trap 'STOP=1; for n in "${RUNNING[@]}"; do kill -INT "${JPID[$n]}" 2>/dev/null; done' INT TERM
alive() { local s; s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ -n "$s" ] && [ "$s" != Z ]; }
while [ "${#RUNNING[@]}" -gt 0 ]; do
  sleep 2
  if [ "$(date +%s)" -gt $(( TEND + 90 )) ]; then # stragglers: SIGINT makes libFuzzer print its stats
    for n in "${RUNNING[@]}"; do kill -INT "${JPID[$n]}" 2>/dev/null; done
  fi
  still=(); ended=()
  for n in "${RUNNING[@]}"; do if alive "${JPID[$n]}"; then still+=("$n"); else ended+=("$n"); fi; done
  [ "${#ended[@]}" -eq 0 ] && continue
  RUNNING=("${still[@]}")
  for n in "${ended[@]}"; do
    finish_job "$n"
    # the slot goes on while there is time for a start-up and some work
    [ "$STOP" = 0 ] && [ $(( TEND - $(date +%s) )) -gt 15 ] || continue
    best=""; bestgap=0
    for t in "${ORDER[@]}"; do
      [ "$t" = "$LAST" ] && continue
      gap=$(( NEED[$t] * 105 / 100 - $(projected "$t") ))
      gs=$(( gap / RATE[$t] )) # core-seconds behind at the measured rate
      if [ "$gap" -gt 0 ] && [ "$gs" -gt "$bestgap" ]; then best=$t; bestgap=$gs; fi
    done
    if [ -n "$best" ]; then launch "$best" $(( NEED[$best] * 105 / 100 - $(projected "$best") )); else launch "$LAST" -1; fi
    log "slot of job $n -> job $NJOB (${JT[$NJOB]}, -runs ${JCAP[$NJOB]}, ${JLEN[$NJOB]} s)"
  done
done

# ---- results ----------------------------------------------------------------------------------
{
  echo "# campaign $(date -u +%FT%TZ): $JOBS parallel jobs, $SECS s, $(nproc) cores, $(uname -n)"
  echo "# job target seed executed_units result seconds"
  for ((n = 1; n <= NJOB; n++)); do echo "job$n ${JT[$n]} ${JSEED[$n]} ${JUNITS[$n]} ${JSTATE[$n]} ${JSECS[$n]}"; done
  echo "# target total_executed_units jobs still_needed_before reached problems"
  for t in "${ORDER[@]}"; do
    j=0; bad=0
    for ((n = 1; n <= NJOB; n++)); do
      [ "${JT[$n]}" = "$t" ] || continue; j=$(( j + 1 )); case ${JSTATE[$n]} in ok|interrupted) ;; *) bad=$(( bad + 1 )) ;; esac
    done
    r=no; [ "${TOTAL[$t]}" -ge "${NEED[$t]}" ] && r=yes
    echo "total $t ${TOTAL[$t]} $j ${NEED[$t]} $r $bad"
  done
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
arts=$(cd "$OUT" && ls -d job*/crash-* job*/leak-* job*/timeout-* job*/oom-* 2>/dev/null)
if [ -n "$arts" ]; then
  # shellcheck disable=SC2086
  (cd "$OUT" && tar -cJf crashes.tar.xz $arts $(for a in $arts; do echo "$(dirname "$a")/log"; done | sort -u))
  log "problems: $(echo "$arts" | wc -l) files in crashes.tar.xz"
fi
rm -rf "$OUT/new-corpus"
for t in "${ORDER[@]}"; do
  mkdir -p "$OUT/new-corpus/$t"
  for d in "$OUT"/job*-"$t"/corpus; do cp -n "$d"/* "$OUT/new-corpus/$t/" 2>/dev/null; done
  # cap: drop the largest inputs first until the target's folder fits
  while [ "$(du -sk "$OUT/new-corpus/$t" | cut -f1)" -gt "$CAP_KB" ]; do
    big=$(ls -S "$OUT/new-corpus/$t" | head -50); [ -n "$big" ] || break
    (cd "$OUT/new-corpus/$t" && echo "$big" | xargs rm -f)
  done
done
(cd "$OUT" && tar -cJf new-corpus.tar.xz new-corpus && rm -rf new-corpus)
# the jobs' logs in one archive; the job folders (thousands of corpus files) go unless KEEP_JOBS=1
(cd "$OUT" && tar -cJf logs.tar.xz job*/log)
[ "${KEEP_JOBS:-0}" = 1 ] || rm -rf "$OUT"/job*
log "$(date -u +%FT%TZ) done: $OUT/summary.txt"

#!/usr/bin/env bash
# bench_mpi_scaling.sh — wall time of one sweep spread over 1, 2, 4, 8 ranks on one host's CPU
# cores, as a table, each rank count's log checked against the 1-rank log (docs/evaluator.md
# "Scale-out with MPI" has measured tables).
#
#   scripts/bench_mpi_scaling.sh [BIN] [RANKS] [TOKENS] [THREADS]
#     BIN      replayssm binary [build/replayssm]
#     RANKS    rank counts ["1 2 4 8"]
#     TOKENS   positions per book [2048]
#     THREADS  --threads per rank [2]  (8 ranks x 2 threads = 16 cores)
#   env OUT=dir (work folder [bench-mpi-out]), MPIEXEC=path, KEEP=1 (keep the logs),
#       FORCE_MODE=procs|mpi (skip the detection)
#
# The work: the 4 bundled books (data/pg19-sample) x 16 runs (shared / split x NVFP4 / FP8 x SR /
# RTN x L = 4, 16) on data/models/gdn-tiny, RS_MPI_RUN_GROUPS=4 (16 items of one book and 4 runs,
# the same items for every rank count, so every row does the same arithmetic). Run it from the
# repository root.
#
# Modes, chosen by what it finds (it says which, and why, before the table):
#   mpi    BIN links an MPI library and mpiexec runs: `mpiexec -np K BIN sweep ...` (the MPI driver)
#   procs  otherwise (a binary built with RS_MPI=OFF, or no mpiexec): K independent
#          `BIN sweep` processes, item i on process i mod K (the
#          static schedule of equal items), then `BIN merge` of the 16 logs — the same split of
#          the work without the MPI driver's messages (which are a few bytes per item).
# Every run's log is compared with the 1-rank log, bit for bit (tests/mpi/compare_logs.py, h5py),
# when python3 has h5py; the table says "unchecked" otherwise.
set -uo pipefail
BIN=${1:-build/replayssm}
RANKS=${2:-"1 2 4 8"}
TOKENS=${3:-2048}
THREADS=${4:-2}
OUT=${OUT:-bench-mpi-out}
SRC=$(cd "$(dirname "$0")/.." && pwd)
M=$SRC/data/models/gdn-tiny D=$SRC/data/pg19-sample
export OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$BIN" ] || { echo "bench_mpi_scaling: no executable $BIN" >&2; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
mkdir -p "$OUT" && cd "$OUT" || exit 1

echo "== what this machine has"
echo "host: $(hostname), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $BIN ($("$BIN" --version 2>&1 | head -1))"
BIN_MPI=$(ldd "$BIN" 2>/dev/null | awk '/libmpi/ {print $1 " => " $3}' | head -1)
echo "binary's MPI library: ${BIN_MPI:-none (built without MPI: RS_MPI=OFF)}"
MPIEXEC=${MPIEXEC:-$(command -v mpiexec || command -v mpirun || true)}
PY=$(command -v python3 || true)
if [ -z "$MPIEXEC" ] && [ -n "$PY" ]; then # mpi4py's MPI may bring its own mpiexec (pip wheels of MPICH / Open MPI)
  d=$("$PY" -c 'import mpi4py, os; c = mpi4py.get_config(); print(os.path.dirname(c.get("mpicc", "")))' 2>/dev/null)
  [ -n "$d" ] && [ -x "$d/mpiexec" ] && MPIEXEC=$d/mpiexec
fi
echo "mpiexec: ${MPIEXEC:-not found} $( [ -n "$MPIEXEC" ] && "$MPIEXEC" --version 2>&1 | head -1)"
if [ -n "$PY" ]; then
  echo "mpi4py: $("$PY" -c 'import mpi4py, mpi4py.MPI as M; print(mpi4py.__version__, "|", M.Get_library_version().splitlines()[0], "|", mpi4py.get_config())' 2>&1 | tail -1)"
  h=$(ls /usr/include/mpi.h /usr/include/*/mpi.h /usr/lib/x86_64-linux-gnu/*/include/mpi.h 2>/dev/null | head -1)
  echo "mpi.h: ${h:-none (no MPI development files: an MPI build of replayssm must be made elsewhere)}"
fi
HAVE_H5PY=0
[ -n "$PY" ] && "$PY" -c 'import h5py, numpy' 2>/dev/null && HAVE_H5PY=1
MODE=procs
WHY="the binary has no MPI"
if [ -n "$BIN_MPI" ] && [ -n "$MPIEXEC" ]; then
  if "$MPIEXEC" -np 1 true > /dev/null 2>&1 || "$MPIEXEC" --oversubscribe -np 1 true > /dev/null 2>&1; then
    MODE=mpi WHY="the binary links $BIN_MPI and mpiexec runs"
  else
    WHY="mpiexec -np 1 true failed"
  fi
elif [ -n "$BIN_MPI" ]; then
  WHY="no mpiexec found"
fi
if [ -n "${FORCE_MODE:-}" ]; then MODE=$FORCE_MODE WHY="FORCE_MODE=$FORCE_MODE"; fi
echo "mode: $MODE ($WHY)"
EXTRA=()
[ "$MODE" = mpi ] && "$MPIEXEC" --version 2>&1 | grep -qi "open mpi\|openrte" && EXTRA=(--oversubscribe --bind-to none)

# the 16 runs in 4 groups of 4: group = (mode, window), as the sweep orders them (mode, window, format, rounding)
COMMON=(--model "$M" --data "$D" --tokens "$TOKENS" --chunk 64 --threads "$THREADS" --quiet --formats nvfp4,fp8
        --rounding sr,rtn --hp fp32)
BOOKS=(244 1424 2097 2496)
GROUPS_=("shared 4" "shared 16" "split 4" "split 16")
export RS_MPI_RUN_GROUPS=4

run_procs_() { # K: items (book b, group g) -> process i mod K; then merge in item order
  local K=$1 dir=procs-$1
  rm -rf "$dir" && mkdir -p "$dir"
  local pids=() i
  for ((k = 0; k < K; k++)); do
    (
      for ((i = k; i < 16; i += K)); do
        b=${BOOKS[$((i / 4))]} g=(${GROUPS_[$((i % 4))]})
        "$BIN" sweep "${COMMON[@]}" --book-ids "$b" --modes "${g[0]}" --windows "${g[1]}" \
          --out "$dir/$(printf 'i%02d' "$i").h5" > /dev/null 2>> "$dir/err" || exit 1
      done
    ) &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc -eq 0 ] && "$BIN" merge "$dir"/i*.h5 -o "$dir.h5" --force > /dev/null 2>> "$dir/err" || rc=1
  [ -z "${KEEP:-}" ] && rm -rf "$dir"
  return $rc
}

run_mpi_() {
  rm -rf "mpi-$1.h5" "mpi-$1.h5.shards"
  "$MPIEXEC" "${EXTRA[@]}" -np "$1" "$BIN" sweep "${COMMON[@]}" --books 4 --modes shared,split --windows 4,16 \
    --out "mpi-$1.h5" > "mpi-$1.out" 2> "mpi-$1.err"
}

echo
echo "== sweep: 4 books x $TOKENS positions x 16 runs (gdn-tiny), 16 items of 4 runs, --threads $THREADS per rank"
printf "%-6s %-6s %10s %8s %11s %s\n" ranks mode "wall (s)" speedup efficiency "log == 1-rank log"
base=""
t1=""
for K in $RANKS; do
  t0=$(date +%s.%N)
  if [ "$MODE" = mpi ]; then run_mpi_ "$K"; rc=$?; log=mpi-$K.h5; else run_procs_ "$K"; rc=$?; log=procs-$K.h5; fi
  t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
  if [ $rc -ne 0 ]; then
    printf "%-6s %-6s %10s %8s %11s %s\n" "$K" "$MODE" "$t" - - "FAILED (see $OUT/)"
    continue
  fi
  [ -z "$t1" ] && t1=$t
  [ -z "$base" ] && base=$log
  same=unchecked
  if [ $HAVE_H5PY -eq 1 ]; then
    if [ "$log" = "$base" ]; then same="(reference)"
    elif "$PY" "$SRC/tests/mpi/compare_logs.py" "$base" "$log" > "cmp-$K.txt" 2>&1; then same=yes
    else same="NO ($OUT/cmp-$K.txt)"; fi
  fi
  awk -v K="$K" -v m="$MODE" -v t="$t" -v t1="$t1" -v s="$same" \
    'BEGIN {printf "%-6s %-6s %10.2f %7.2fx %10.0f%% %s\n", K, m, t, t1 / t, 100 * t1 / t / (K / '"${RANKS%% *}"'), s}'
done
echo "(speedup and efficiency relative to the first row; $(nproc) cores, $THREADS threads per rank)"
[ -z "${KEEP:-}" ] && rm -f procs-*.h5 mpi-*.h5
exit 0

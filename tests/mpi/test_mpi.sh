#!/usr/bin/env bash
# test_mpi.sh REPLAYSSM MPIEXEC SRC_DIR WORK_DIR — `mpirun replayssm sweep` and `replayssm merge`
# against single-process runs (docs/evaluator.md "Scale-out with MPI").
# Every comparison is tests/mpi/compare_logs.py: h5py reads both logs and requires every dataset
# bit for bit and every attribute but the provenance (time, command line, host) to be equal.
#  1. mpirun -np 3 over 4 bundled books x 8 runs (shared / split NVFP4, SR / RTN, L = 4, 16) ==
#     the single-process sweep; every rank printed progress lines prefixed with its rank, rank 0
#     the combined ETA; the shard folder is gone.
#  2. the rank running the last item SIGKILLs itself after one chunk of it (RS_MPI_TEST_KILL):
#     the job fails, no output, shards left (one finished, others not); --resume with 2 ranks
#     (and 2 run groups: the test hook kills with the same item list) completes it == the
#     uninterrupted run, and does not recompute the finished shards (no progress line for them).
#  3. merge of two half-sweeps by books, and of two by runs, == the full sweep (and the half);
#     refused with a message naming what differs: another model, other --tokens, a hole (a book
#     without some run), an unfinished input, an existing output without --force.
# Also: a too-short book is skipped under MPI as in one process, and `kl --policy none` spreads.
set -uo pipefail
BIN=$1 MPIEXEC=$2 SRC=$3 W=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
PY=${PYTHON:-python3}
if ! "$PY" -c 'import h5py, numpy' 2>/dev/null; then
  echo "test_mpi: no h5py/numpy for $PY"
  [ -n "${RS_REQUIRE_PYTHON:-}" ] && exit 1
  exit 77
fi
CMP="$PY $SRC/tests/mpi/compare_logs.py"
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# mpirun from a 2-core CI machine: --oversubscribe for 3 ranks
MPIRUN=("$MPIEXEC" --oversubscribe)
M=$SRC/data/models/gdn-tiny D=$SRC/data/pg19-sample
# 192 positions = 3 chunks of 64 per book: a kill can land between chunks of an item
ARGS=(--model "$M" --data "$D" --tokens 192 --chunk 64 --modes shared,split --formats nvfp4 --rounding sr,rtn
      --hp fp32 --windows 4,16 --threads 1)

"$BIN" sweep "${ARGS[@]}" --books 4 --quiet --out full.h5 > full.out || bad "single-process sweep"

# ---- 1. three ranks == one process ----------------------------------------------------------
"${MPIRUN[@]}" -np 3 "$BIN" sweep "${ARGS[@]}" --books 4 --out mpi3.h5 > mpi3.out 2> mpi3.err
rc=$?
[ $rc -eq 0 ] && ok "mpirun -np 3 sweep: exit 0" || { bad "mpirun -np 3 sweep: exit $rc"; cat mpi3.err; }
$CMP full.h5 mpi3.h5 && ok "3 ranks == 1 process, bit for bit" || bad "3 ranks != 1 process"
for r in 0 1 2; do
  grep -q "^\[rank $r\] item .*positions" mpi3.err && ok "rank $r printed its progress" || bad "no progress line of rank $r"
done
grep -q "^\[rank 0\] all 3 ranks: 4/4 items, 100% .*ETA" mpi3.err && ok "rank 0 printed the combined ETA" \
  || bad "no combined ETA line on rank 0"
[ ! -e mpi3.h5.shards ] && ok "shard folder removed after the merge" || bad "mpi3.h5.shards left behind"
grep -q "mean KL" mpi3.out && ok "summary table printed" || bad "no summary on stdout"
"${MPIRUN[@]}" -np 2 "$BIN" sweep "${ARGS[@]}" --books 4 --quiet --out mpi3.h5 > /dev/null 2> exists.err
[ $? -ne 0 ] && grep -q "exists: use --force" exists.err && ok "existing output refused without --force" \
  || bad "existing output not refused"

# a too-short book is skipped as in one process (a data folder of one real and one 10-byte book),
# and a reference-only log (--policy none) spreads too
mkdir -p short/test && cp "$D/test/244.txt.gz" short/test/ && echo "tiny text" > short/test/999.txt
printf '244,A,1887,http://a\n999,Short,1900,http://b\n' > short/metadata.csv
for pol in shared:nvfp4-sr none; do
  S=(--model "$M" --data short --books 2 --tokens 64 --threads 1 --policy "$pol" --quiet)
  "$BIN" kl "${S[@]}" --out "s1-${pol%%:*}.h5" > /dev/null 2>&1 || bad "single-process kl --policy $pol"
  "${MPIRUN[@]}" -np 2 "$BIN" kl "${S[@]}" --out "s2-${pol%%:*}.h5" > /dev/null 2> s2.err || bad "mpirun kl --policy $pol"
  grep -q "^\[rank .\] replayssm kl: book 999 has 10 tokens.*skipped" s2.err && ok "short book reported by its rank" \
    || bad "no skip message: $(cat s2.err)"
  $CMP "s1-${pol%%:*}.h5" "s2-${pol%%:*}.h5" && ok "--policy $pol, a skipped book: 2 ranks == 1 process" \
    || bad "--policy $pol with a skipped book differs"
done

# ranks started with different evaluations (an MPMD launch) are refused before any work: once,
# by rank 0, naming the rank; the same for a GPU rank beside a CPU rank (where CUDA is built)
"${MPIRUN[@]}" -np 1 "$BIN" sweep "${ARGS[@]}" --books 2 --out mpmd.h5 : \
  -np 1 "$BIN" sweep "${ARGS[@]/192/128}" --books 2 --out mpmd.h5 > /dev/null 2> mpmd.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c 'rank 1 was started with another evaluation than rank 0' mpmd.err)" = 1 ] && [ ! -e mpmd.h5 ] \
  && [ ! -e mpmd.h5.shards ] && ok "ranks with other --tokens refused before any work (exit 2, one message)" \
  || bad "MPMD with other --tokens: exit $rc, $(cat mpmd.err)"
"${MPIRUN[@]}" -np 1 "$BIN" sweep "${ARGS[@]}" --books 2 --out mixed.h5 : \
  -np 1 "$BIN" sweep "${ARGS[@]}" --books 2 --out mixed.h5 --device cuda > /dev/null 2> mixed.err
rc=$?
if grep -q "this build has no CUDA" mixed.err; then
  echo "skip a GPU rank beside a CPU rank (this build has no CUDA)"
elif [ $rc -eq 2 ] && grep -q "rank 1 runs on another device kind than rank 0 (rank 0: cpu): mixing GPU and CPU" mixed.err \
  && [ ! -e mixed.h5 ]; then ok "a GPU rank beside a CPU rank refused before any work"
else bad "mixed devices: exit $rc, $(cat mixed.err)"; fi

# ---- 2. SIGKILL of one rank, --resume with 2 ranks --------------------------------------------
export RS_MPI_RUN_GROUPS=2 # 8 items: (book, runs 0-3) and (book, runs 4-7)
RS_MPI_TEST_KILL=7:1 "${MPIRUN[@]}" -np 3 "$BIN" sweep "${ARGS[@]}" --books 4 --out kill.h5 > kill.out 2> kill.err
rc=$?
[ $rc -ne 0 ] && ok "killed job failed (exit $rc)" || bad "killed job exited 0"
[ ! -e kill.h5 ] && [ -d kill.h5.shards ] && ok "no output, shards kept" || bad "after the kill: output or no shards"
cp -r kill.h5.shards killed-shards
"$PY" - <<'PYEOF' > kill.state || bad "shard states"
import glob, h5py
for p in sorted(glob.glob("killed-shards/*.h5")):
    with h5py.File(p, "r") as f:
        c, n = int(f["books/completed_positions"][0]), int(f["books/length"][0])
        print(p.split("/")[-1], f["books/id"][0].decode(), "complete" if c == n else "partial", c, n)
PYEOF
cat kill.state
grep -q complete kill.state && ok "a finished shard before the kill" || bad "no finished shard at the kill"
grep -q partial kill.state && ok "an unfinished shard at the kill" || bad "no unfinished shard at the kill"
"${MPIRUN[@]}" -np 2 "$BIN" sweep "${ARGS[@]}" --books 4 --out kill.h5 --resume > resume.out 2> resume.err
rc=$?
[ $rc -eq 0 ] && ok "--resume with 2 ranks: exit 0" || { bad "--resume: exit $rc"; cat resume.err; }
$CMP full.h5 kill.h5 && ok "killed + resumed == uninterrupted, bit for bit" || bad "resumed log differs"
# the merged history (rs_h5log_merge folds the shards' entries by command line and host): the killed
# invocation shows as "running", the --resume one as "complete", and the model files' digests are kept
"$PY" - kill.h5 << 'PYEOF' && ok "merged provenance: killed invocation 'running', resumed 'complete', file digests" || bad "merged provenance history / files"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    p = f["provenance"]
    cmd = [c.decode() for c in p["history_command_line"][()]]
    st = [s.decode() for s in p["history_status"][()]]
    ok = (st[0] == "running" and "--resume" not in cmd[0] and all(s == "complete" for s in st[1:])
          and all("--resume" in c for c in cmd[1:]) and len(p["file_sha256"]) > 0
          and all(len(h) == 64 for h in p["file_sha256"][()]) and "host" in p.attrs)
    sys.exit(0 if ok else 1)
PYEOF
# finished shards are only re-checked: no progress line names their (book, runs)
while read -r shard book state c n; do
  [ "$state" = complete ] || continue
  g=${shard#*-g}; g=$((10#${g%.h5})); lo=$((g * 4)); hi=$((lo + 3))
  if grep -q "book $book, runs $lo-$hi:" resume.err; then bad "finished shard $shard recomputed"; else ok "finished shard $shard not recomputed"; fi
done < kill.state
unset RS_MPI_RUN_GROUPS
mkdir -p partial && cp "killed-shards/$(awk '$3 == "partial" {print $1; exit}' kill.state)" partial/p.h5

# ---- 3. merge -----------------------------------------------------------------------------------
"$BIN" sweep "${ARGS[@]}" --book-ids 244,1424 --quiet --out h1.h5 > /dev/null 2>&1 || bad "half sweep 1"
"$BIN" sweep "${ARGS[@]}" --book-ids 2097,2496 --quiet --out h2.h5 > /dev/null 2>&1 || bad "half sweep 2"
"$BIN" merge h1.h5 h2.h5 -o books.h5 > merge.out && ok "merge of two book halves: exit 0" || bad "merge by books"
$CMP full.h5 books.h5 && ok "merge of book halves == full sweep" || bad "merge of book halves differs"
HALF=(--model "$M" --data "$D" --tokens 192 --chunk 64 --formats nvfp4 --rounding sr,rtn --hp fp32 --windows 4,16
      --threads 1 --book-ids 244,1424 --quiet)
"$BIN" sweep "${HALF[@]}" --modes shared --out rs.h5 > /dev/null 2>&1 || bad "run half 1"
"$BIN" sweep "${HALF[@]}" --modes split --out rp.h5 > /dev/null 2>&1 || bad "run half 2"
"$BIN" merge rs.h5 rp.h5 -o runs.h5 > /dev/null && ok "merge of two run halves: exit 0" || bad "merge by runs"
$CMP h1.h5 runs.h5 && ok "merge of run halves == the sweep of all runs" || bad "merge of run halves differs"
refused() { # name, expected message part, merge arguments...
  local name=$1 want=$2; shift 2
  rm -f refused.h5
  "$BIN" merge "$@" -o refused.h5 > /dev/null 2> refused.err
  local rc=$?
  if [ $rc -eq 1 ] && grep -q -- "$want" refused.err && [ ! -e refused.h5 ]; then ok "refused: $name ($(head -c 160 refused.err))"
  else bad "$name: exit $rc, message: $(cat refused.err)"; fi
}
"$BIN" sweep "${ARGS[@]}" --model "$SRC/data/models/mamba2-tiny" --book-ids 2097 --quiet --out other-model.h5 > /dev/null 2>&1 \
  || bad "mamba2 sweep"
refused "another model" "model_config_hash is .*(a different model)" h1.h5 other-model.h5
"$BIN" sweep "${ARGS[@]}" --tokens 128 --book-ids 2097 --quiet --out other-tokens.h5 > /dev/null 2>&1 || bad "tokens sweep"
refused "other --tokens" "tokens is 128 there and 192 here (a different --tokens)" h1.h5 other-tokens.h5
"$BIN" kl --model "$M" --data "$D" --tokens 192 --chunk 64 --threads 1 --book-ids 2097 --policy shared:nvfp4-sr \
  --window 4 --quiet --out one-run.h5 > /dev/null 2>&1 || bad "one-run kl"
refused "a hole" "no input has run .* for book 2097, so the merged log would have a hole" h1.h5 one-run.h5
refused "an unfinished input" "positions committed (an interrupted run" h1.h5 partial/p.h5
cp h2.h5 refused.h5
"$BIN" merge h1.h5 h2.h5 -o refused.h5 > /dev/null 2> refused.err
[ $? -eq 1 ] && grep -q "exists" refused.err && cmp -s h2.h5 refused.h5 && ok "existing output kept without --force" \
  || bad "existing output not protected"
"$BIN" merge h1.h5 h2.h5 -o refused.h5 --force > /dev/null && $CMP full.h5 refused.h5 > /dev/null \
  && ok "--force replaces it" || bad "--force merge"

echo "test_mpi: $fails failure(s)"
[ $fails -eq 0 ]

#!/usr/bin/env bash
# run_gpu_twin.sh — `--compute twin` on the lent H200 in one bounded device call (docs/evaluator.md
# "The twin compute mode", issue 15 acceptance 1), from a pack folder holding gpu.tar.xz
# (make_gpu_pack.sh of a kernels/build_static.sh build), this script's python helpers and the CPU
# logs made beside it on the development machine (cpu/<model>-cpu-s<seed>.h5, cpu/<model>-cpu-fp32.h5):
#   1. test_gpu_ops --twin (the twin ops bit for bit against the CPU backend and the engine, full size)
#      and test_gpu_ops --quick (every op, the existing tolerances);
#   2. kl --device cuda on both bundled models, 8192 positions, book 244, seed 0, the default
#      policies and --policy fp32, in --compute twin and in the default --compute fp32 (wall times);
#   3. twin_compare.py (max rel, positions over 1e-5, bit-identical positions) and compare_gpu_cpu.py
#      (acceptance 1's checks against CPU seeds 0-4) for both modes, with the CPU logs the pack holds
#      (all the GPU logs come back in gpu_logs.tar.xz for the comparisons on the development machine);
#   4. compute-sanitizer memcheck on a short twin run, racecheck on test_gpu_ops --twin --quick, as far as
#      the deadline (RS_TWIN_DEADLINE seconds, 200) allows.
#   eval/cuda/tests/run_gpu_twin.sh PACK OUTDIR        (run from the repository root on the device)
set -uo pipefail
P=${1:?pack} OUTD=${2:?outdir}
B=/tmp/rs_twin_bin L=/tmp/rs_twin_logs
mkdir -p "$B" "$L" "$OUTD"
tar -xJf "$P/gpu.tar.xz" -C "$B" || exit 1
export LD_LIBRARY_PATH="$B:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PYTHONUNBUFFERED=1
RS=$B/replayssm S=$OUTD/summary.txt
: > "$S"
T0=$(date +%s.%N)
el() { python3 -c "import time; print(round(time.time() - $1, 1))"; }
st() { local n=$1 lim=$2 t0; t0=$(date +%s.%N); shift 2; timeout "$lim" "$@" > "$L/$n.log" 2>&1; local r=$?
  echo "$n: exit $r ($(el "$t0") s) $(grep -c '^ok' "$L/$n.log") ok $(grep -c '^FAIL' "$L/$n.log") FAIL" | tee -a "$S"
  grep -E '^(FAIL|ok twin)' "$L/$n.log" | cut -c1-300 | tee -a "$S"; }
DEADLINE=${RS_TWIN_DEADLINE:-200} # seconds after the start: later steps are skipped (the logs still come back)
left() { python3 -c "import time; print(int($DEADLINE - (time.time() - $T0)))"; }
kl_() { local m=$1 mode=$2 what=$3 pol=() t0; [ "$what" = fp32pol ] && pol=(--policy fp32)
  [ "$(left)" -gt 20 ] || { echo "skipped kl $m $mode $what (deadline)" | tee -a "$S"; return; }
  t0=$(date +%s.%N)
  timeout 60 "$RS" kl --device cuda --model data/models/$m --tokens 8192 --quiet --compute $mode "${pol[@]}" \
    --out "$L/$m-gpu-$mode-$what.h5" > "$L/$m-gpu-$mode-$what.txt" 2>&1
  echo "kl --device cuda --compute $mode $m $what: exit $?, $(el "$t0") s wall" | tee -a "$S"; }
for m in gdn-tiny mamba2-tiny; do kl_ $m twin default; done
st ops_twin 60 "$B/test_gpu_ops" --twin
for m in gdn-tiny mamba2-tiny; do kl_ $m fp32 default; kl_ $m twin fp32pol; kl_ $m fp32 fp32pol; done
[ "$(left)" -gt 40 ] && st ops_quick 60 "$B/test_gpu_ops" --quick
python3 -c "
import sys, h5py
for p in sys.argv[1:]:
    f = h5py.File(p, 'r'); g = lambda k: (lambda v: v.decode() if isinstance(v, bytes) else str(v))(f.attrs.get(k, '?'))
    print(p.split('/')[-1], 'compute', g('compute'), '| device', g('device')[:400])" "$L"/*-gpu-*-default.h5 2>&1 | tee -a "$S"
for m in gdn-tiny mamba2-tiny; do # the CPU logs the pack has (the rest: compared where they were made)
  for mode in twin fp32; do
    [ -f "$P/cpu/$m-cpu-s0.h5" ] || continue
    echo "== $m --compute $mode vs CPU seed 0" | tee -a "$S"
    python3 "$P/twin_compare.py" "$L/$m-gpu-$mode-default.h5" "$P/cpu/$m-cpu-s0.h5" 2>&1 | tee -a "$S"
    python3 "$P/twin_compare.py" "$L/$m-gpu-$mode-fp32pol.h5" "$P/cpu/$m-cpu-s0.h5" 2>&1 | head -1 | tee -a "$S"
    n=$(ls "$P"/cpu/$m-cpu-s[0-4].h5 | wc -l)
    [ "$n" -ge 3 ] || continue
    python3 "$P/compare_gpu_cpu.py" "$L/$m-gpu-$mode-default.h5" "$P"/cpu/$m-cpu-s[0-4].h5 \
      --fp32 "$L/$m-gpu-$mode-fp32pol.h5" > "$L/$m-$mode-compare.txt" 2>&1
    echo "compare_gpu_cpu.py $m $mode ($n CPU seeds): exit $?" | tee -a "$S"
    grep -E "^(ok|FAIL)" "$L/$m-$mode-compare.txt" | cut -c1-260 | tee -a "$S"
  done
done
t0=$(date +%s.%N) lim=$(( $(left) - 5 ))
if [ $lim -gt 15 ]; then
  timeout $lim compute-sanitizer --tool memcheck --error-exitcode 3 "$RS" kl --device cuda --model data/models/gdn-tiny \
    --tokens 96 --chunk 32 --quiet --compute twin --out "$L/san.h5" > "$L/san.log" 2>&1
  echo "compute-sanitizer memcheck kl --compute twin (96 positions): exit $? ($(el "$t0") s) $(grep 'ERROR SUMMARY' "$L/san.log" | tail -1)" | tee -a "$S"
fi
t0=$(date +%s.%N) lim=$(( $(left) - 5 ))
if [ $lim -gt 15 ]; then
  timeout $lim compute-sanitizer --tool racecheck --error-exitcode 3 "$B/test_gpu_ops" --twin --quick > "$L/race.log" 2>&1
  echo "compute-sanitizer racecheck test_gpu_ops --twin --quick: exit $? ($(el "$t0") s) $(grep 'RACECHECK SUMMARY' "$L/race.log" | tail -1)" | tee -a "$S"
fi
(cd "$L" && tar -cJf "$OUTD/gpu_logs.tar.xz" ./*.h5 ./*.txt ./*.log) 2> /dev/null
cp "$L/ops_twin.log" "$L/ops_quick.log" "$OUTD/" 2> /dev/null
echo "total $(el "$T0") s" | tee -a "$S"

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
#      (acceptance 1's checks against CPU seeds 0-4) for both modes;
#   4. compute-sanitizer memcheck on a short twin run.
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
st ops_twin 60 "$B/test_gpu_ops" --twin
st ops_quick 90 "$B/test_gpu_ops" --quick
for m in gdn-tiny mamba2-tiny; do
  for mode in twin fp32; do
    for what in default fp32pol; do
      pol=(); [ $what = fp32pol ] && pol=(--policy fp32)
      t0=$(date +%s.%N)
      timeout 90 "$RS" kl --device cuda --model data/models/$m --tokens 8192 --quiet --compute $mode "${pol[@]}" \
        --out "$L/$m-gpu-$mode-$what.h5" > "$L/$m-gpu-$mode-$what.txt" 2>&1
      echo "kl --device cuda --compute $mode $m $what: exit $?, $(el "$t0") s wall" | tee -a "$S"
    done
  done
done
for m in gdn-tiny mamba2-tiny; do
  for mode in twin fp32; do
    echo "== $m --compute $mode vs CPU seed 0" | tee -a "$S"
    python3 "$P/twin_compare.py" "$L/$m-gpu-$mode-default.h5" "$P/cpu/$m-cpu-s0.h5" 2>&1 | tee -a "$S"
    python3 "$P/compare_gpu_cpu.py" "$L/$m-gpu-$mode-default.h5" "$P"/cpu/$m-cpu-s[0-4].h5 \
      --fp32 "$L/$m-gpu-$mode-fp32pol.h5" > "$L/$m-$mode-compare.txt" 2>&1
    echo "compare_gpu_cpu.py $m $mode: exit $?" | tee -a "$S"
    grep -E "^(ok|FAIL)" "$L/$m-$mode-compare.txt" | cut -c1-260 | tee -a "$S"
  done
  grep -h "device\|wall\|positions/s" "$L/$m-gpu-twin-default.txt" | head -4 | cut -c1-400 >> "$S"
done
t0=$(date +%s.%N)
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 "$RS" kl --device cuda --model data/models/gdn-tiny \
  --tokens 96 --chunk 32 --quiet --compute twin --out "$L/san.h5" > "$L/san.log" 2>&1
echo "compute-sanitizer memcheck kl --compute twin (96 positions): exit $? ($(el "$t0") s) $(grep 'ERROR SUMMARY' "$L/san.log" | tail -1)" | tee -a "$S"
(cd "$L" && tar -cJf "$OUTD/gpu_logs.tar.xz" ./*.h5 ./*.txt ./*.log) 2> /dev/null
cp "$L/ops_twin.log" "$L/ops_quick.log" "$OUTD/" 2> /dev/null
echo "total $(el "$T0") s" | tee -a "$S"

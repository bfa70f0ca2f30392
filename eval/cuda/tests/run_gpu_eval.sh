#!/usr/bin/env bash
# run_gpu_eval.sh — the GPU evaluator's end-to-end checks on the lent H200 (issue 15), from the
# programs kernels/build_static.sh built:
#   1. `kl --device cuda` on both bundled models, 8192 positions, the default policies (seed 0) and
#      `--policy fp32`: logs for compare_gpu_cpu.py (run here, against CPU logs made beside it or
#      on the development machine), wall time and the stage breakdown in the summary
#   2. kill -9 during a GPU run, then --resume: the resumed log must equal an uninterrupted one
#      dataset by dataset (h5py, bitwise)
#   3. compute-sanitizer memcheck and racecheck on a short GPU run (RS_SANITIZE=1)
#   eval/cuda/tests/run_gpu_eval.sh BINDIR OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN=${1:?bindir}
OUTD=${2:?outdir}
mkdir -p "$OUTD"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
. eval/cuda/tests/gpu_stage.sh # the image's libcublas.so.13: the toolkit's, else PyTorch's wheel
gpu_cublas_path
RS="$BIN/replayssm"
TOK=${RS_EVAL_TOKENS:-8192}
rc=0
for model in gdn-tiny mamba2-tiny; do
  for what in default fp32; do
    pol=(); [ $what = fp32 ] && pol=(--policy fp32)
    t0=$(date +%s.%N)
    "$RS" kl --device cuda --model data/models/$model --tokens "$TOK" --quiet "${pol[@]}" \
      --out "$OUTD/$model-gpu-$what.h5" > "$OUTD/$model-gpu-$what.txt" 2>&1
    r=$?
    echo "kl --device cuda $model $what: exit $r, $(python3 -c "import time; print(round(time.time() - $t0, 1))") s wall"
    [ $r = 0 ] || { rc=1; tail -5 "$OUTD/$model-gpu-$what.txt"; }
  done
done
# 2. interrupted + resumed == uninterrupted (the default policies on gdn-tiny)
if [ "${RS_SKIP_RESUME:-0}" != 1 ]; then
  OUTK="$OUTD/gdn-tiny-gpu-killed.h5"
  rm -f "$OUTK" "$OUTK.partial"
  "$RS" kl --device cuda --model data/models/gdn-tiny --tokens "$TOK" --quiet --out "$OUTK" > /dev/null 2>&1 &
  pid=$!
  sleep "${RS_KILL_AFTER:-4}"
  kill -9 $pid 2> /dev/null && echo "killed the GPU run after ${RS_KILL_AFTER:-4} s" || echo "the run had finished before the kill"
  wait $pid 2> /dev/null
  python3 - "$OUTK" << 'EOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print("committed positions at the kill:", list(f["books/completed_positions"][...]))
EOF
  "$RS" kl --device cuda --model data/models/gdn-tiny --tokens "$TOK" --quiet --resume --out "$OUTK" > "$OUTD/resume.txt" 2>&1
  echo "--resume: exit $?"
  python3 - "$OUTD/gdn-tiny-gpu-default.h5" "$OUTK" << 'EOF' || rc=1
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
bad = 0
def walk(g, h, path=""):
    global bad
    for k in g:
        if isinstance(g[k], h5py.Group): walk(g[k], h[k], path + "/" + k); continue
        x, y = g[k][...], h[k][...]
        same = x.shape == y.shape and (np.array_equal(x, y) if x.dtype.kind not in "f" else np.array_equal(x, y, equal_nan=True))
        if not same: bad += 1; print("FAIL resumed differs:", path + "/" + k)
walk(a, b)
n = sum(1 for _ in a["runs"])
print(("ok   " if not bad else "FAIL ") + f"resumed log equals the uninterrupted one in every dataset ({n} runs)")
sys.exit(1 if bad else 0)
EOF
fi
# 3. sanitizers on a short run
if [ "${RS_SANITIZE:-0}" = 1 ]; then
  for tool in memcheck racecheck; do
    timeout 300 compute-sanitizer --tool $tool --error-exitcode 3 "$RS" kl --device cuda --model data/models/gdn-tiny \
      --tokens 96 --chunk 32 --quiet --force --out "$OUTD/san.h5" > "$OUTD/sanitizer_$tool.log" 2>&1
    echo "compute-sanitizer $tool kl: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTD/sanitizer_$tool.log" | tail -1)"
  done
fi
exit $rc

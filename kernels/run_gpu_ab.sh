#!/usr/bin/env bash
# run_gpu_ab.sh — one bounded device call (issue 18): build B against build A on the same GPU, then B's
# kernel tests. Stages, under one deadline (RS_DEADLINE seconds from the start, default 540):
#   1. bench  `replayssm bench --shape all --sweep $RS_SWEEPS` (default lp,std) of A, B, A, B (two rounds,
#             so drift between them shows); a table of every row's median, B/A per round (table.txt)
#   2. tests  B's test_cuda_decode and test_cuda_lpread in full (1024-step cases, every shape and d_k),
#             test_cuda_dk_refuse
#   3. sanitizer  compute-sanitizer memcheck and racecheck of B's test_cuda_lpread --quick and
#             test_cuda_decode --quick, while time is left
# RS_SKIP_TESTS=1: the bench only (stages 2 and 3 skipped). RS_SWEEPS: the bench's --sweep list; RS_AB_ARGS: more
# bench arguments (e.g. --quick: std at B = 256 only).
# RS_DECODE_ARGS: arguments of test_cuda_decode (e.g. --quick). RS_SAN=0: no stage 3. RS_RESERVE: seconds
# the bench leaves for stages 2-3 (default 300; 10 with RS_SKIP_TESTS=1).
#   kernels/run_gpu_ab.sh BINDIR_A BINDIR_B OUTDIR
# BINDIR_*: a kernels/build_static.sh folder or a make_gpu_pack.sh folder holding gpu.tar.xz (extracted
# to /tmp). Each build runs with its own folder first on LD_LIBRARY_PATH (the $ORIGIN rpath is a RUNPATH,
# which LD_LIBRARY_PATH overrides; both builds' libraries are named libreplayssm-gpu.so).
# OUTDIR gets summary.txt (the stage lines and the table), tests.log (every test's output), table.txt
# and bench_h5.tar.xz (the four bench files).
set -uo pipefail
cd "$(dirname "$0")/.."
A_IN=${1:?usage: run_gpu_ab.sh BINDIR_A BINDIR_B OUTDIR}
B_IN=${2:?usage: run_gpu_ab.sh BINDIR_A BINDIR_B OUTDIR}
OUTD=${3:?usage: run_gpu_ab.sh BINDIR_A BINDIR_B OUTDIR}
T0=$(date +%s)
DL=${RS_DEADLINE:-540}
SWEEPS=${RS_SWEEPS:-lp,std}
left() { echo $(( DL - ($(date +%s) - T0) )); }
W=/tmp/rs_ab
rm -rf "$W" && mkdir -p "$W" "$OUTD"
S="$OUTD/summary.txt"
: > "$S"
STAGE_TMP=$W STAGE_ALL="$OUTD/tests.log"
: > "$STAGE_ALL"
. eval/cuda/tests/gpu_stage.sh

A=$(gpu_pack_bindir "$A_IN" a "$W") || { echo "no replayssm in $A_IN (nor gpu.tar.xz)" | tee -a "$S"; exit 2; }
B=$(gpu_pack_bindir "$B_IN" b "$W") || { echo "no replayssm in $B_IN (nor gpu.tar.xz)" | tee -a "$S"; exit 2; }
BASE_LD=${LD_LIBRARY_PATH:-}
LD_LIBRARY_PATH=
gpu_cublas_path
CUBLAS_LD=$LD_LIBRARY_PATH
dir_of() { [ "$1" = a ] && echo "$A" || echo "$B"; }
ldp() { echo "$(dir_of "$1")$CUBLAS_LD${BASE_LD:+:$BASE_LD}"; }
smi() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader 2>&1 | head -2; }
echo "gpu at start: $(smi)" >> "$S"
for t in a b; do
  d=$(dir_of $t)
  lib=$(LD_LIBRARY_PATH="$(ldp $t)" ldd "$d/replayssm" | awk '/libreplayssm-gpu/ {print $3}')
  echo "$t: $d, libreplayssm-gpu.so from $lib ($(md5sum < "$lib" | cut -c1-12))" >> "$S"
  [ "$lib" = "$d/libreplayssm-gpu.so" ] || echo "WARNING: $t loads another build's library" >> "$S"
done

# ---- 1. bench: A, B, A, B ----
SKIP_TESTS=${RS_SKIP_TESTS:-0}
RESERVE=${RS_RESERVE:-$([ "$SKIP_TESTS" = 1 ] && echo 10 || echo 300)}
for round in 1 2; do
  for t in a b; do
    lim=$(( $(left) - RESERVE )) # keep time for the tests
    [ "$lim" -gt 120 ] && lim=120
    if [ "$lim" -lt 20 ]; then echo "bench $t r$round: skipped (no time left)" >> "$S"; continue; fi
    t0=$(date +%s)
    LD_LIBRARY_PATH="$(ldp $t)" timeout "$lim" "$(dir_of $t)/replayssm" bench --shape all --sweep "$SWEEPS" ${RS_AB_ARGS:-} \
      --out "$W/bench_${t}_r$round.h5" --force > "$W/bench_${t}_r$round.log" 2>&1
    echo "bench $t r$round: exit $? ($(( $(date +%s) - t0 )) s, limit $lim)" >> "$S"
  done
done
echo "gpu after bench: $(smi)" >> "$S"
python3 - "$W" > "$OUTD/table.txt" 2>&1 <<'EOF'
import sys, os, h5py
w = sys.argv[1]
def rows(f):
    p = os.path.join(w, f)
    if not os.path.exists(p): return {}
    g = h5py.File(p, 'r')['rows']
    n = len(g['median_us'])
    # T and a too: the verify sweeps repeat a variant name over T
    key = lambda i: (g['model'][i].decode(), g['sweep'][i].decode(), int(g['B'][i]), g['kernel'][i].decode(),
                     g['variant'][i].decode() + (f"-T{int(g['T'][i])}" if g['sweep'][i].decode() in ('verify', 'tcv', 'tcl') else ''))
    return {key(i): float(g['median_us'][i]) for i in range(n)}
r = {(t, k): rows(f'bench_{t}_r{k}.h5') for t in 'ab' for k in (1, 2)}
# every row of either build (rows only B has, e.g. a new variant, show with '-' for A)
keys = list(dict.fromkeys(k for t in 'ab' for j in (1, 2) for k in r[(t, j)]))
print(f"{'model':20s} {'sweep':5s} {'B':>4s} {'kernel':12s} {'variant':28s} {'a_r1':>8s} {'b_r1':>8s} {'a_r2':>8s} {'b_r2':>8s} {'b/a_r1':>7s} {'b/a_r2':>7s}")
for k in keys:
    v = [r[(t, j)].get(k) for j in (1, 2) for t in 'ab']
    f = lambda x: f"{x:8.1f}" if x else "       -"
    q = lambda n, d: f"{n / d:7.3f}" if n and d else "      -"
    print(f"{k[0]:20s} {k[1]:5s} {k[2]:4d} {k[3]:12s} {k[4]:28s} {f(v[0])} {f(v[1])} {f(v[2])} {f(v[3])} {q(v[1], v[0])} {q(v[3], v[2])}")
EOF
tar -cJf "$OUTD/bench_h5.tar.xz" -C "$W" $(cd "$W" && ls bench_*.h5 bench_*.log 2>/dev/null) 2>/dev/null

if [ "$SKIP_TESTS" = 1 ]; then
  echo "tests and sanitizers: skipped (RS_SKIP_TESTS=1)" >> "$S"
  echo "total $(( $(date +%s) - T0 )) s" >> "$S"
  cat "$OUTD/table.txt" >> "$S"
  cat "$S"
  exit 0
fi

# ---- 2. B's tests ----
export LD_LIBRARY_PATH="$(ldp b)"
lim=$(( $(left) - 120 )); [ "$lim" -gt 240 ] && lim=240
stage test_cuda_decode "$lim" "$B/test_cuda_decode" ${RS_DECODE_ARGS:-}
lim=$(( $(left) - 60 )); [ "$lim" -gt 150 ] && lim=150
stage test_cuda_lpread "$lim" "$B/test_cuda_lpread"
stage test_cuda_dk_refuse 30 "$B/test_cuda_dk_refuse"

# ---- 3. sanitizers while time is left ----
[ "${RS_SAN:-1}" = 0 ] && echo "sanitizers: skipped (RS_SAN=0)" >> "$S"
for t in $([ "${RS_SAN:-1}" = 0 ] || echo test_cuda_lpread test_cuda_decode); do
  for tool in memcheck racecheck; do
    lim=$(( $(left) - 5 )); [ "$lim" -gt 90 ] && lim=90
    san_stage $tool "$lim" "$t" "$B/$t" --quick
  done
done
echo "gpu at end: $(smi)" >> "$S"
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
cat "$OUTD/table.txt" >> "$S"
cat "$S"

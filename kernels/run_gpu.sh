#!/usr/bin/env bash
# run_gpu.sh — build the CUDA kernels and their drivers with nvcc alone (no CMake, no GSL/HDF5:
# the drivers need only quant/ and lib/rs_status.c), then run the correctness driver and the
# benchmark. For the device machine, where CMake's GSL/cmocka dependencies are absent.
#   kernels/run_gpu.sh [outdir]        logs go to outdir (default build-gpu/)
# Env: RS_SANITIZE=1 also runs compute-sanitizer (memcheck, racecheck) on test_kernels --quick;
#      RS_SKIP_TEST=1 / RS_SKIP_BENCH=1 skip a stage; RS_BENCH_REPS (default 50).
set -uo pipefail
cd "$(dirname "$0")/.."
OUTD=${1:-build-gpu}
B=build-gpu
mkdir -p "$B" "$OUTD"
NVCC=${NVCC:-nvcc}
ARCH="-gencode=arch=compute_90,code=sm_90"
NVFLAGS="-std=c++17 -O3 $ARCH --fmad=false --ftz=false --prec-div=true --prec-sqrt=true -Xptxas -v -Ikernels -Iquant -Ilib"
CFLAGS="-std=c11 -O2 -Wall -Wextra -ffp-contract=off -fno-fast-math -frounding-math -D_POSIX_C_SOURCE=200809L -Iquant -Ilib"
set -e
{
  for f in quant/rs_philox.c quant/rs_minifloat.c quant/rs_format.c quant/rs_qtensor.c lib/rs_status.c; do
    cc $CFLAGS -c "$f" -o "$B/$(basename "$f" .c).o"
  done
  for f in kernels/rs_cuda_quant.cu kernels/rs_cuda_decode.cu; do
    $NVCC $NVFLAGS -c "$f" -o "$B/$(basename "$f" .cu).o"
  done
  $NVCC $NVFLAGS -Xcompiler -fopenmp,-ffp-contract=off kernels/drivers/test_kernels.cu "$B"/*.o -o "$B/test_kernels" -lgomp
  $NVCC $NVFLAGS kernels/drivers/bench_kernels.cu "$B"/rs_cuda_*.o "$B"/rs_status.o "$B"/rs_format.o "$B"/rs_minifloat.o "$B"/rs_philox.o "$B"/rs_qtensor.o -o "$B/bench_kernels"
} > "$OUTD/build.log" 2>&1 || { tail -40 "$OUTD/build.log"; exit 2; }
grep -E "Compiling entry|Used [0-9]+ registers" "$OUTD/build.log" | grep -A1 -E "rs_k_(conv|replay)_decode" | grep -v "^--" > "$OUTD/ptxas_decode.txt" || true
set +e
rc=0
if [ "${RS_SKIP_TEST:-0}" != 1 ]; then
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} "$B/test_kernels" 2>&1 | tee "$OUTD/test_kernels.log"
  rc=${PIPESTATUS[0]}
fi
if [ "${RS_SANITIZE:-0}" = 1 ]; then
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 "$B/test_kernels" --quick > "$OUTD/sanitizer_$tool.log" 2>&1
    echo "compute-sanitizer $tool: exit $? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTD/sanitizer_$tool.log" | tail -1))"
  done
fi
if [ "${RS_SKIP_BENCH:-0}" != 1 ]; then
  "$B/bench_kernels" "${RS_BENCH_REPS:-50}" 2>&1 | tee "$OUTD/bench_kernels.log"
fi
exit $rc

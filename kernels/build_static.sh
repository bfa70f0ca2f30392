#!/usr/bin/env bash
# build_static.sh — build the two GPU programs with nvcc and gcc alone, linked so that they run
# on the lent GPU machine, whose image has the CUDA driver but neither HDF5 nor GSL:
#   test_kernels   the correctness driver (kernels/drivers/test_kernels.cu + quant/ + lib/)
#   bench_kernels  `replayssm bench` as one program (eval/cli/cmd_bench.c + bench_main.c)
# Static: HDF5 (+ szip/aec/zlib), GSL, libgomp, the CUDA runtime; dynamic: glibc, libstdc++,
# libgcc_s. Build here, carry the output folder, run kernels/run_gpu.sh there.
#   kernels/build_static.sh [outdir]     (default build-gpu/); also writes outdir/ptxas.txt
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build-gpu}
mkdir -p "$OUT/obj"
rm -f "$OUT"/obj/*.o
H5INC=/usr/include/hdf5/serial
A=/usr/lib/x86_64-linux-gnu
GOMP=$(ls /usr/lib/gcc/x86_64-linux-gnu/*/libgomp.a | tail -1)
CF="-std=c11 -O2 -Wall -Wextra -Wpedantic -ffp-contract=off -fno-fast-math -frounding-math -D_POSIX_C_SOURCE=200809L"
CF="$CF -DRS_VERSION_STRING=\"0.1.0\" -DRS_GIT_COMMIT=\"$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)\""
INC="-Ilib -Iquant -Ieval -Ieval/cli -Ikernels -I$H5INC"
NVF="-std=c++17 -O3 -gencode=arch=compute_90,code=sm_90 --fmad=false --ftz=false --prec-div=true --prec-sqrt=true -Ikernels -Iquant -Ilib"
LIBC="quant/rs_philox.c quant/rs_minifloat.c quant/rs_format.c quant/rs_qtensor.c lib/rs_status.c lib/rs_theory.c
      lib/rs_ssm.c lib/rs_gamma.c lib/rs_ring.c lib/rs_replay.c"
for f in $LIBC; do cc $CF $INC -c "$f" -o "$OUT/obj/$(basename "$f" .c).o"; done
cc $CF $INC -DRS_HAVE_CUDA -c eval/cli/cmd_bench.c -o "$OUT/obj/cmd_bench.o"
cc $CF $INC -c kernels/drivers/bench_main.c -o "$OUT/obj/bench_main.o"
pids=()
for f in kernels/*.cu; do
  nvcc $NVF -Xptxas -v -c "$f" -o "$OUT/obj/cu_$(basename "$f" .cu).o" > "$OUT/obj/$(basename "$f" .cu).ptxas" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
cat "$OUT"/obj/*.ptxas | grep -E "error" && exit 1
cat "$OUT"/obj/*.ptxas | grep -E "Compiling entry|Used [0-9]+ registers|spill" > "$OUT/ptxas.txt" || true
nvcc $NVF -Xcompiler -fopenmp,-ffp-contract=off -c kernels/drivers/test_kernels.cu -o "$OUT/obj/t_test_kernels.o"
LIBOBJ=$(ls "$OUT"/obj/rs_*.o "$OUT"/obj/cu_*.o)
nvcc -gencode=arch=compute_90,code=sm_90 "$OUT/obj/t_test_kernels.o" $LIBOBJ -o "$OUT/test_kernels" \
  -Xlinker "$GOMP" -Xlinker $A/libgsl.a -Xlinker $A/libgslcblas.a -ldl -lm -lpthread -cudart static
nvcc -gencode=arch=compute_90,code=sm_90 "$OUT/obj/bench_main.o" "$OUT/obj/cmd_bench.o" $LIBOBJ -o "$OUT/bench_kernels" \
  -Xlinker $A/hdf5/serial/libhdf5.a -Xlinker $A/libsz.a -Xlinker $A/libaec.a \
  -Xlinker $A/libz.a -Xlinker $A/libgsl.a -Xlinker $A/libgslcblas.a -ldl -lm -lpthread -cudart static
echo "built $OUT/test_kernels $OUT/bench_kernels"

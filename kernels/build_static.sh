#!/usr/bin/env bash
# build_static.sh — the GPU programs, built here with nvcc and gcc alone and linked so that they run
# on the lent GPU machine, whose image has the CUDA driver but neither HDF5, GSL, cJSON nor CMocka:
#   test_cuda_codec test_cuda_decode test_cuda_verify test_cuda_lpread   kernels/tests/ (core + cuda)
#   replayssm   the whole CLI with CUDA (every library source: common quant engine theory eval
#               eval/model eval/tokenizer cli + kernels), so `replayssm bench` is the one benchmark
#   libreplayssm-gpu.so   core + the CUDA kernels and bench harness, shared by the five programs:
#               the kernels' machine code (~3.6 MB) travels once instead of five times (a device
#               call's whole tree, carried folder included, must stay under 64 MiB)
# Static: HDF5 (+ szip/aec/zlib), GSL and libgomp into the programs; beside them (rpath $ORIGIN):
# libcudart.so.13 of this nvcc, libcjson.so.1 (Debian has no static archive); from the image:
# glibc, libstdc++, libgcc_s and OpenBLAS (libopenblas.so.0; its static archive is ~29 MB).
# Same C flags as the CMake build (+ -fPIC); nvcc with the flags of kernels/CMakeLists.txt at -O3,
# sm_90 machine code only. Binaries are stripped; outdir/ptxas.txt keeps the registers/spills
# report of every kernel.
#   kernels/build_static.sh [outdir]     (default build-gpu/, ignored by git)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build-gpu}
mkdir -p "$OUT/obj"
rm -f "$OUT"/obj/*.o "$OUT"/obj/*.ptxas
A=/usr/lib/x86_64-linux-gnu
H5INC=/usr/include/hdf5/serial
GOMP=$(ls /usr/lib/gcc/x86_64-linux-gnu/*/libgomp.a | tail -1)
# the commit, with -dirty when the tree differs from it (a build of uncommitted changes is not that commit's:
# the tenth session's benchmark carried its parent's hash)
GIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[ "$GIT" != unknown ] && ! git diff --quiet HEAD -- . 2>/dev/null && GIT="$GIT-dirty"
CF="-std=c11 -O2 -fPIC -fopenmp -Wall -Wextra -Wpedantic -ffp-contract=off -fno-fast-math -fno-finite-math-only -frounding-math -DNDEBUG -D_POSIX_C_SOURCE=200809L"
CF="$CF -DRS_VERSION_STRING=\"0.1.0\" -DRS_GIT_COMMIT=\"$GIT\" -DRS_HAVE_CUDA"
PCRE2_A=$A/libpcre2-8.a # the BPE tokenizers' regex (libpcre2-dev), static as HDF5
if [ -f "$PCRE2_A" ]; then CF="$CF -DRS_HAVE_PCRE2 -DPCRE2_CODE_UNIT_WIDTH=8"; else PCRE2_A=; fi
INC="-Iinclude -Icommon -Iengine -Icli -I$H5INC"
# RS_MPI=1: the CLI with the MPI driver (cli/mpi_driver.c), libmpi linked dynamically: on the lent
# machines, carry the runtime that scripts/bundle_openmpi.sh makes (issue 20: ranks sharing GPUs)
MPI_LD=
if [ "${RS_MPI:-0}" = 1 ]; then CF="$CF -DRS_HAVE_MPI $(mpicc --showme:compile)"; MPI_LD=$(mpicc --showme:link); fi
ARCH="-gencode=arch=compute_90,code=sm_90"
NVF="-std=c++17 -O3 $ARCH --fmad=false --ftz=false --prec-div=true --prec-sqrt=true -Iinclude -Icommon -Iengine -Ikernels"
NVF="$NVF -Xcompiler=-Wall,-ffp-contract=off,-fno-fast-math,-fopenmp,-fPIC"
# RS_NVCC_DEFS: extra nvcc definitions for a build-time experiment, e.g. "-DRS_VTC_STAGE=0"
# (kernels/rs_cuda_decode.cu); recorded in OUT/nvcc_defs.txt
NVF="$NVF ${RS_NVCC_DEFS:-}"
obj() { echo "$OUT/obj/$(echo "$1" | tr / _ | sed 's/\.cu$/.cu.o/; s/\.c$/.o/')"; }

# C sources (core = common quant engine; the CLI's layers on top), up to nproc compilers at once
CORE=$(ls common/*.c quant/*.c engine/*.c)
REST=$(ls theory/*.c cli/*.c; find eval -name "*.c" | sort) # eval/ recursively, like CMake
pids=()
for f in $CORE $REST; do
  cc $CF $INC -c "$f" -o "$(obj "$f")" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
# CUDA sources: the library (kernels/*.cu, kernels/bench/*.cu), the GPU evaluator (eval/cuda/*.cu,
# linked into replayssm) and the tests
CUDA_LIB=$(ls kernels/*.cu kernels/bench/*.cu)
CUDA_EVAL=$(ls eval/cuda/*.cu)
CUDA_T=$(ls kernels/tests/*.cu eval/cuda/tests/*.cu)
pids=()
for f in $CUDA_LIB $CUDA_EVAL $CUDA_T; do
  nvcc $NVF -Ieval/cuda -Ieval -Icli -I$H5INC -Xptxas -v -c "$f" -o "$(obj "$f")" > "$(obj "$f").ptxas" 2>&1 &
  pids+=($!)
  if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
st=0
for p in "${pids[@]}"; do wait "$p" || st=1; done
if [ $st != 0 ] || grep -q -E "error:" "$OUT"/obj/*.ptxas; then grep -h -B2 -A5 "error:" "$OUT"/obj/*.ptxas; exit 1; fi
cat "$OUT"/obj/*.ptxas | grep -h -E "Compiling entry|Used [0-9]+ registers|spill" > "$OUT/ptxas.txt" || true

CORE_O=$(for f in $CORE; do obj "$f"; done)
REST_O=$(for f in $REST; do obj "$f"; done)
LIB_O=$(for f in $CUDA_LIB; do obj "$f"; done)
EVAL_O=$(for f in $CUDA_EVAL; do obj "$f"; done)
RPATH="-Xlinker -rpath -Xlinker \$ORIGIN"
nvcc $ARCH -shared $LIB_O $CORE_O -o "$OUT/libreplayssm-gpu.so" -cudart shared -lm
LD="-L$OUT -lreplayssm-gpu $RPATH -Xlinker $GOMP -ldl -lm -lpthread -cudart shared"
for t in $(cd kernels/tests && ls test_cuda_*.cu | sed 's/\.cu$//'); do
  nvcc $ARCH "$(obj kernels/tests/$t.cu)" "$(obj kernels/tests/cuda_test_util.cu)" -o "$OUT/$t" $LD
done
# cuBLAS comes from the GPU image (libcublas.so.13, ~700 MB with cublasLt: too big to carry); run_gpu.sh
# puts its folder on LD_LIBRARY_PATH
H5L="-Xlinker $A/hdf5/serial/libhdf5.a -Xlinker $A/libsz.a -Xlinker $A/libaec.a -Xlinker $A/libz.a"
[ -n "$PCRE2_A" ] && H5L="$H5L -Xlinker $PCRE2_A"
LIBS_O=$(for f in $REST; do case $f in cli/*) ;; *) obj "$f" ;; esac; done) # the CPU layers, no main()
for f in eval/cuda/tests/*.cu; do
  t=$(basename "$f" .cu)
  nvcc $ARCH "$(obj "$f")" $EVAL_O $LIBS_O -o "$OUT/$t" $H5L -Xlinker $A/libgsl.a -L$A/openblas-pthread -L$A \
    -lopenblas -lcjson -lcublas $LD
done
nvcc $ARCH $REST_O $EVAL_O -lcublas -o "$OUT/replayssm" \
  $H5L -Xlinker $A/libgsl.a -L$A/openblas-pthread -L$A -lopenblas -lcjson $MPI_LD $LD
cp -L /usr/local/cuda/lib64/libcudart.so.13 "$OUT/"
cp -L $A/libcjson.so.1 "$OUT/"
strip "$OUT"/test_cuda_* "$OUT"/test_gpu_* "$OUT"/gpu_* "$OUT/replayssm" "$OUT/libreplayssm-gpu.so"
echo "${RS_NVCC_DEFS:-}" > "$OUT/nvcc_defs.txt"
rm -rf "$OUT/obj" # only the programs, the libraries and ptxas.txt travel
echo "built in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')($(du -sh "$OUT" | cut -f1))"

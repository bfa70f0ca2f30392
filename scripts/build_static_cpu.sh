#!/usr/bin/env bash
# build_static_cpu.sh — a CPU-only `replayssm` that runs on the lent GPU machines' hosts (16-64
# cores; their image has neither HDF5, GSL nor cJSON), for long `kl` runs there:
#   scripts/build_static_cpu.sh [outdir]      (default build-cpu-static/)
# Static: HDF5 (+ szip/aec/zlib), GSL, libgomp; dynamic: OpenBLAS (below) and cJSON (no static
# archive on Debian: libcjson.so.1 is copied beside the binary). Run it as
#   LD_LIBRARY_PATH=outdir outdir/replayssm kl ...
# Same flags as the CMake build (no -march: the same bits as the CMake binary on one machine;
# OpenBLAS picks its kernel at run time, so GEMM bits can differ between machines).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build-cpu-static}
mkdir -p "$OUT/obj"
rm -f "$OUT"/obj/*.o
A=/usr/lib/x86_64-linux-gnu
H5INC=/usr/include/hdf5/serial
GOMP=$(ls /usr/lib/gcc/x86_64-linux-gnu/*/libgomp.a | tail -1)
CF="-std=c11 -O2 -fopenmp -Wall -Wextra -Wpedantic -ffp-contract=off -fno-fast-math -fno-finite-math-only -frounding-math -DNDEBUG -D_POSIX_C_SOURCE=200809L"
CF="$CF -DRS_VERSION_STRING=\"0.1.0\" -DRS_GIT_COMMIT=\"$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)\""
INC="-Iinclude -Icommon -Iengine -Icli -I$H5INC"
PCRE2_A=$A/libpcre2-8.a # the BPE tokenizers' regex (libpcre2-dev), static as HDF5
if [ -f "$PCRE2_A" ]; then CF="$CF -DRS_HAVE_PCRE2 -DPCRE2_CODE_UNIT_WIDTH=8"; else PCRE2_A=; fi
# RS_MPI=1: the MPI driver too (cli/mpi_driver.c with RS_HAVE_MPI), libmpi linked dynamically; on a
# machine without Open MPI, scripts/bundle_openmpi.sh makes the runtime that travels beside it
MPI_LD=
if [ "${RS_MPI:-0}" = 1 ]; then
  CF="$CF -DRS_HAVE_MPI $(mpicc --showme:compile)"
  MPI_LD=$(mpicc --showme:link)
fi
SRC=$(ls common/*.c quant/*.c engine/*.c theory/*.c cli/*.c; find eval -path eval/cuda -prune -o -name "*.c" -print | sort)
pids=()
for f in $SRC; do
  cc $CF $INC -c "$f" -o "$OUT/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
# OpenBLAS: linked dynamically (its static archive carries every CPU kernel, ~29 MB, too much
# for the device call's 64 MiB tree; the GPU image has libopenblas.so.0, with libgfortran).
cc -o "$OUT/replayssm" "$OUT"/obj/*.o \
  $A/hdf5/serial/libhdf5.a $PCRE2_A $A/libsz.a $A/libaec.a $A/libz.a $A/libgsl.a \
  "$GOMP" -L$A/openblas-pthread -L$A -lopenblas -lcjson $MPI_LD -lpthread -ldl -lm
cp -L $A/libcjson.so.1 "$OUT/"
rm -rf "$OUT/obj" # only the binary and libcjson travel
echo "built $OUT/replayssm ($(ldd "$OUT/replayssm" | grep -c '=>') shared libraries: $(ldd "$OUT/replayssm" | awk '/=>/{print $1}' | tr '\n' ' '))"

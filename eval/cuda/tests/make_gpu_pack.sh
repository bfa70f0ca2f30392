#!/usr/bin/env bash
# make_gpu_pack.sh — pack a kernels/build_static.sh build for the lent GPU machine: the named
# programs and every shared library they load from the build folder (libreplayssm-gpu.so,
# libcudart, libcjson, ...), checked by loading them with the pack alone (+ the CUDA libraries the
# machine has) before packing, so that no program fails there with "error while loading shared
# libraries" (which cost a device call on 2026-12-01).
#   eval/cuda/tests/make_gpu_pack.sh BUILD_DIR PACK_DIR [PROGRAM ...]
# Default programs: replayssm gpu_parity prov_hash_time test_gpu_gemm test_gpu_ops test_gpu_batch
# test_cuda_scan test_cuda_decode test_cuda_verify test_cuda_lpread test_cuda_codec. Writes
# PACK_DIR/gpu.tar.xz; on the machine: mkdir -p B && tar -xJf PACK_DIR/gpu.tar.xz -C B and
# LD_LIBRARY_PATH=$PWD/B:/usr/local/cuda/lib64.
set -euo pipefail
BUILD=${1:?usage: make_gpu_pack.sh BUILD_DIR PACK_DIR [PROGRAM ...]}
PACK=${2:?usage: make_gpu_pack.sh BUILD_DIR PACK_DIR [PROGRAM ...]}
shift 2
PROGS=${*:-replayssm gpu_parity prov_hash_time test_gpu_gemm test_gpu_ops test_gpu_batch test_cuda_scan test_cuda_decode test_cuda_verify test_cuda_lpread test_cuda_codec}
BUILD=$(cd "$BUILD" && pwd)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
for p in $PROGS; do
  [ -x "$BUILD/$p" ] || { echo "make_gpu_pack.sh: $BUILD/$p: no such program" >&2; exit 2; }
  cp "$BUILD/$p" "$STAGE/"
done
# the libraries the programs resolve inside the build folder
for p in $PROGS; do ldd "$BUILD/$p"; done | awk '$2 == "=>" {print $3}' | grep "^$BUILD/" | sort -u |
  while read -r lib; do cp "$lib" "$STAGE/"; done
# load every program with the pack alone (and the CUDA libraries, which the machine has)
missing=$(for p in $PROGS; do env -i LD_LIBRARY_PATH="$STAGE:/usr/local/cuda/lib64" ldd "$STAGE/$p"; done | grep "not found" | sort -u || true)
if [ -n "$missing" ]; then echo "make_gpu_pack.sh: not found with the pack alone:" >&2; echo "$missing" >&2; exit 1; fi
mkdir -p "$PACK"
tar -cJf "$PACK/gpu.tar.xz" -C "$STAGE" .
echo "make_gpu_pack.sh: $PACK/gpu.tar.xz ($(du -h "$PACK/gpu.tar.xz" | cut -f1)): $(ls "$STAGE" | tr '\n' ' ')"

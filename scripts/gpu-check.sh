#!/usr/bin/env bash
# gpu-check.sh — build replayssm with CUDA, run every GPU test, then the kernel benchmark.
#
#   scripts/gpu-check.sh [--no-bench] [--quick-bench] [--quick-tests] [--build DIR] [--out FILE.h5]
#
#   --no-bench      configure, build and run the GPU tests only
#   --quick-bench   `replayssm bench --quick` (B = 256 only in std, fewer T in verify)
#   --quick-tests   `ctest -L cuda -LE slow`: the --quick runs of decode, verification and low-precision reads
#                   instead of their full runs (each of those takes over 5 minutes)
#   --build DIR     build folder (default: build-gpu in the repository root)
#   --out FILE.h5   the benchmark's rows (default: bench.h5; an existing file is replaced)
#
# Needs nvcc and an NVIDIA GPU (the architecture: CMAKE_CUDA_ARCHITECTURES, default 90 = H100/H200;
# e.g. CMAKE_CUDA_ARCHITECTURES=89 scripts/gpu-check.sh). Without a GPU the tests report "skipped"
# (exit 77) and the benchmark refuses to run. Exits non-zero at the first failing step.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-gpu
out=bench.h5
bench=full
tests=(-L cuda)
while [ $# -gt 0 ]; do
    case $1 in
    --no-bench) bench=none ;;
    --quick-bench) bench=quick ;;
    --quick-tests) tests=(-L cuda -LE slow) ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
    shift
done

command -v nvcc > /dev/null || { echo "gpu-check.sh: nvcc not found (install the CUDA toolkit)" >&2; exit 1; }
arch=()
[ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ] && arch=(-DCMAKE_CUDA_ARCHITECTURES="$CMAKE_CUDA_ARCHITECTURES")

echo "== configure ($build)"
cmake -S "$root" -B "$build" -DRS_CUDA=ON ${arch[@]+"${arch[@]}"}
echo "== build"
cmake --build "$build" -j"$(nproc)"
echo "== GPU tests (ctest ${tests[*]})"
ctest --test-dir "$build" "${tests[@]}" --output-on-failure
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
fi
case $bench in
none) echo "== benchmark skipped (--no-bench)" ;;
quick) echo "== benchmark (--quick) -> $out"; "$build/replayssm" bench --quick --force --out "$out" ;;
full) echo "== benchmark -> $out"; "$build/replayssm" bench --force --out "$out" ;;
esac
echo "gpu-check.sh: done"

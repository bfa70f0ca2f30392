#!/usr/bin/env bash
# run_gpu_recheck.sh — one bounded device call after merging several GPU changes: the GPU tests the
# merge touched, MPI ranks sharing the GPU (issue 20 on a single-GPU machine), and the reference
# logs for the GPU-vs-CPU NLL drift (issue 15, acceptance 1). Every stage has its own time limit so
# the summary (printed last, also OUTDIR/summary.txt) always comes back.
#   eval/cuda/tests/run_gpu_recheck.sh BINDIR OMPIDIR OUTDIR
# BINDIR: RS_MPI=1 kernels/build_static.sh; OMPIDIR: scripts/bundle_openmpi.sh's folder.
#   A. test_cuda_decode / test_cuda_verify --quick (checkpoint rounding at flush, T = 16),
#      test_gpu_gemm (full shapes), test_gpu_batch                                      -> OUTDIR/tests.log
#   B. run_gpu_mpi.sh with RS_MPI_TOKENS (4096) positions, 2 and 4 ranks on the one GPU
#   C. kl --device cuda --policy none --tokens 8192 on both bundled models, tf32x3 and simt
#      attention                                                            -> OUTDIR/<model>-gpu-<attn>.h5
#   D. compute-sanitizer racecheck on test_cuda_verify --quick
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN=${1:?bindir} OMPI=${2:?ompi} OUTD=${3:?outdir}
mkdir -p "$OUTD" /tmp/recheck
S="$OUTD/summary.txt"
: > "$S"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
: > "$OUTD/tests.log"
STAGE_TMP=/tmp/recheck STAGE_ALL="$OUTD/tests.log"
. eval/cuda/tests/gpu_stage.sh
gpu_cublas_path # the image's libcublas.so.13 (the toolkit's, else PyTorch's pip wheel)
T0=$(date +%s)
stage decode 35 "$BIN/test_cuda_decode" --quick
stage verify 35 "$BIN/test_cuda_verify" --quick
stage gemm 30 "$BIN/test_gpu_gemm"
stage batch 40 "$BIN/test_gpu_batch" .
t0=$(date +%s)
RS_MPI_TOKENS=${RS_MPI_TOKENS:-4096} timeout 90 bash eval/cuda/tests/run_gpu_mpi.sh "$BIN" "$OMPI" /tmp/recheck/mpi "2 4" \
  > /tmp/recheck/mpi.log 2>&1
echo "mpi (ranks sharing the GPU): exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
tail -8 /tmp/recheck/mpi.log >> "$S"
t0=$(date +%s)
for m in gdn-tiny mamba2-tiny; do
  for a in tf32x3 simt; do
    RS_GPU_ATTN=$a timeout 25 "$BIN/replayssm" kl --device cuda --model data/models/$m --tokens 8192 --policy none --quiet \
      --out "$OUTD/$m-gpu-$a.h5" > /tmp/recheck/kl-$m-$a.log 2>&1
    echo "kl --policy none $m attention $a: exit $?" >> "$S"
  done
done
echo "reference logs: $(( $(date +%s) - t0 )) s" >> "$S"
t0=$(date +%s)
timeout 45 compute-sanitizer --tool racecheck --error-exitcode 3 "$BIN/test_cuda_verify" --quick > /tmp/recheck/race.log 2>&1
echo "racecheck test_cuda_verify --quick: exit $? ($(( $(date +%s) - t0 )) s) $(grep -E 'RACECHECK SUMMARY' /tmp/recheck/race.log | tail -1)" >> "$S"
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
cat "$S"

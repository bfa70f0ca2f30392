#!/usr/bin/env bash
# run_gpu_mpi.sh — the MPI driver with GPU ranks on a machine with ONE GPU (issue 20, what the
# single-GPU kind allows): several ranks share the GPU through the driver's round-robin mapping,
# and the merged log must equal the single-process GPU log of the same work bit for bit (the GPU
# path is deterministic: fixed launch shapes and reduction orders, the same chunk boundaries, one
# item = one book with all its runs, so every GEMM has the rows of a single-process run).
#   eval/cuda/tests/run_gpu_mpi.sh BINDIR OMPIDIR OUTDIR [RANKS ("2 4")]
# BINDIR: kernels/build_static.sh built with RS_MPI=1; OMPIDIR: scripts/bundle_openmpi.sh's folder.
# The work: the bundled gdn-tiny and mamba2-tiny over the 4 bundled books x RS_MPI_TOKENS (8192)
# positions, the five Figure 5 policies, L = 16, seed 0. Prints one table row per run: wall time,
# the rank-to-GPU lines, items per rank, and whether the log equals the single-process one.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN=${1:?bindir} OMPI=${2:?ompi bundle} OUTD=${3:?outdir}
RANKS=${4:-"2 4"}
TOK=${RS_MPI_TOKENS:-8192}
mkdir -p "$OUTD"
export LD_LIBRARY_PATH="$OMPI/lib:$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
. eval/cuda/tests/gpu_stage.sh # the image's libcublas.so.13: the toolkit's, else PyTorch's wheel
gpu_cublas_path
unset CUDA_VISIBLE_DEVICES # the driver's own mapping: local rank mod the GPUs
RS="$BIN/replayssm"
FIG5=shared:fp8-sr,shared:nvfp4-sr,split:nvfp4-rtn/fp32,split:nvfp4-rtn/fp16-sr,conv:fp16-sr
CMP="python3 tests/mpi/compare_logs.py"
now() { date +%s.%N; }
el() { python3 -c "print(f'{$(now) - $1:.1f}')"; }
rc=0
rows=()
for model in gdn-tiny mamba2-tiny; do
  A=(kl --device cuda --model data/models/$model --data data/pg19-sample --books 4 --tokens "$TOK" --window 16
     --seed 0 --policy "$FIG5")
  t0=$(now)
  "$RS" "${A[@]}" --quiet --out "$OUTD/$model-1proc.h5" > "$OUTD/$model-1proc.txt" 2>&1
  r=$?
  w1=$(el "$t0")
  [ $r = 0 ] || { rc=1; tail -5 "$OUTD/$model-1proc.txt"; }
  rows+=("$model  1 process   ${w1} s  (reference)")
  for np in $RANKS; do
    t0=$(now)
    "$OMPI/mpirun" --oversubscribe --bind-to none -np "$np" "$RS" "${A[@]}" --out "$OUTD/$model-mpi$np.h5" \
      > "$OUTD/$model-mpi$np.txt" 2> "$OUTD/$model-mpi$np.err"
    r=$?
    w=$(el "$t0")
    [ $r = 0 ] || { rc=1; echo "mpirun -np $np $model: exit $r"; tail -5 "$OUTD/$model-mpi$np.err"; }
    map=$(grep -c "^\[rank [0-9]*\] GPU 0 (local rank [0-9]*; $np ranks on this node share 1 GPUs round-robin)" "$OUTD/$model-mpi$np.err")
    # items per rank: the last progress line of each (rank, item)
    per=$(grep -o "^\[rank [0-9]*\] item [0-9]*/" "$OUTD/$model-mpi$np.err" | sort -u | awk '{print $2}' | tr -d "]" | sort | uniq -c |
      awk '{printf "%s%s:%s", (NR > 1 ? " " : ""), $2, $1}')
    if $CMP "$OUTD/$model-1proc.h5" "$OUTD/$model-mpi$np.h5" > "$OUTD/$model-cmp$np.txt" 2>&1; then eq=yes; else eq=NO; rc=1; fi
    rows+=("$model  $np ranks     ${w} s  ($(python3 -c "print(f'{$w1 / $w:.2f}')")x)  rank->GPU 0 lines: $map/$np  items per rank: ${per:-?}  log == 1 process: $eq")
  done
done
echo "== MPI ranks sharing one GPU (4 books x $TOK positions, Figure 5 policies, L = 16)"
printf '%s\n' "${rows[@]}"
exit $rc

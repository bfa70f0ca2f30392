#!/usr/bin/env bash
# run_gpu_batch.sh — books batched on the lent H200 (issue 15 acceptance 3, "the tokens/s of 1 and
# of 8 books batched"), one device call:
#   1. test_gpu_batch: the GPU scorer with 3 streams vs the CPU scorer and the one-stream GPU
#      scorer on the bundled models (data/models/gdn-tiny, mamba2-tiny);
#   2. bundled gdn-tiny: `kl --device cuda --token-ids` 8 streams x RS_TINY_TOKENS random ids,
#      reference + 4 policies, --batch 1 vs --batch 8 (tokens/s), and the two logs compared;
#   3. the Qwen3.5-4B shape (random weights built here with transformers: make_4b_books.py):
#      the same with 8 streams x RS_4B_TOKENS at chunk RS_CHUNK, --batch 1 vs --batch 8.
#   run_gpu_batch.sh BINDIR OUTDIR   (run from the repository root; the scripts beside this one)
# Env RS_BATCH_PARTS (default "1 2 3") picks the parts, e.g. "3" for the 4B shape alone.
set -uo pipefail
BIN=${1:?bindir}
OUTD=${2:?outdir}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUTD"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
. "$HERE/gpu_stage.sh" # the image's libcublas.so.13: the toolkit's, else PyTorch's wheel
gpu_cublas_path
WORK=${RS_WORK:-/tmp/rsbooks}
mkdir -p "$WORK"
POL="shared:nvfp4-sr,split:nvfp4-rtn/fp32,split:nvfp4-rtn/fp16-sr,conv:fp16-sr"
rc=0
PARTS=" ${RS_BATCH_PARTS:-1 2 3} "
part() { case "$PARTS" in *" $1 "*) return 0 ;; esac; return 1; }
if part 1; then
  echo "== 1. test_gpu_batch"
  "$BIN/test_gpu_batch" . > "$OUTD/test_gpu_batch.txt" 2>&1 || rc=1
  cut -c1-260 "$OUTD/test_gpu_batch.txt"
fi

# kl on S streams of N random ids with --batch B; prints the summary's cost lines
bench() { # model tag N chunk batch
  local m=$1 tag=$2 N=$3 C=$4 B=$5
  local ids="$WORK/ids-$tag-$N.npy"
  [ -f "$ids" ] || python3 -c "import numpy as np, json; V=json.load(open('$m/config.json')).get('vocab_size'); np.save('$ids', np.random.default_rng(7).integers(0, V, (8, $N + 1), dtype=np.int32))"
  local t0; t0=$(date +%s.%N)
  "$BIN/replayssm" kl --device cuda --model "$m" --token-ids "$ids" --tokens "$N" --chunk "$C" --batch "$B" \
    --policy "$POL" --quiet --force --out "$WORK/$tag-b$B.h5" > "$OUTD/$tag-b$B.txt" 2>&1 || rc=1
  echo "$tag batch $B: 8 streams x $N positions, reference + 4 policies, chunk $C: $(python3 -c "import time; print(round(time.time() - $t0, 1))") s wall"
  grep -E '^(device|compute):' "$OUTD/$tag-b$B.txt" | cut -c1-400; grep -i -E 'error|cannot' "$OUTD/$tag-b$B.txt" | head -3
}
compare() { # tag: batch 8 vs batch 1 logs (GPU both): reference NLL, mean KL per run
  python3 - "$WORK/$1-b8.h5" "$WORK/$1-b1.h5" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
na, nb = a["reference/nll"][()], b["reference/nll"][()]
d = np.abs(na - nb) / (1e-5 * np.maximum(np.abs(nb), 1e-2))
print(f"batch 8 vs 1: attrs batch {a.attrs.get('batch')} / {b.attrs.get('batch')}; next tokens equal: "
      f"{bool((a['reference/next_token'][()] == b['reference/next_token'][()]).all())}; reference NLL worst |d|/(1e-5 max(|nll|,1e-2)) "
      f"= {np.nanmax(d):.3f} ({'PASS' if np.nanmax(d) <= 1 else 'FAIL'}), bitwise equal positions {float((na == nb).mean()):.3f}")
for k in sorted(a["runs"].keys()):
    ka, kb = a["runs"][k]["kl"][()], b["runs"][k]["kl"][()]
    ma, mb = np.nanmean(ka), np.nanmean(kb)
    print(f"  {a['runs'][k].attrs['policy']}: mean KL {ma:.5e} vs {mb:.5e} (rel {abs(ma - mb) / mb:.4f})")
PY
}
if part 2; then
  echo "== 2. bundled gdn-tiny"
  for B in 1 8; do bench data/models/gdn-tiny tiny "${RS_TINY_TOKENS:-4096}" 256 $B; done
  compare tiny
fi
if part 3; then
  echo "== 3. Qwen3.5-4B shape"
  t0=$(date +%s)
  python3 "$HERE/make_4b_books.py" "$WORK" 2>&1 | grep -v -i warn | tail -3
  echo "model built in $(( $(date +%s) - t0 )) s"
  for B in 1 8; do bench "$WORK/qwen3_5_4b" q4b "${RS_4B_TOKENS:-2048}" "${RS_CHUNK:-256}" $B; nvidia-smi --query-gpu=memory.used --format=csv,noheader; done
  compare q4b
fi
exit $rc

#!/usr/bin/env bash
# run_gpu_gemm.sh — the GEMM methods (rs_gpu_gemm.h: `--compute fp32` = SGEMM, `tf32x3` = split-TF32) on the lent H200, issue 15
# acceptance 3, in one device call, most important first (steps that would pass RS_DEADLINE seconds,
# default 560, are skipped and say so):
#   1. test_gpu_gemm (RS_GEMM_BENCH=1: the methods timed at the 4B shapes), test_gpu_ops --quick,
#      test_cuda_scan --quick; compute-sanitizer memcheck on test_gpu_gemm --quick
#   2. Qwen3.5-4B shape: make_parity_models.py, gpu_parity --compute fp32,tf32x3 (vs transformers,
#      step vs chunk, and the two methods' logits against each other)
#   3. `kl --device cuda` at RS_BIG (131072) positions, chunk RS_CHUNK (512), reference + 4 policies,
#      in RS_BIG_COMPUTE (tf32x3): wall time of the whole command, stage breakdown, peak memory
#   4. prov_hash_time: the model files' SHA-256 against the model load
#   5. small f32 checkpoints (W_lo != 0: three products; the tied one keeps the embedding fp32):
#      kl on the CPU, on the GPU in fp32 (SGEMM) and tf32x3, compare_gemm_modes.py
#   6. 2048 positions in fp32 (chunk 512 and 256: the yardstick of two SGEMM blockings), tf32x3 and
#      tf32: compare_gemm_modes.py
#   7. 8192 and 32768 positions (time per 1K positions, attention share)
#   eval/cuda/tests/run_gpu_gemm.sh BINDIR OUTDIR
# OUTDIR gets the text logs (few files: a device call brings back 8); HDF5 logs stay in /tmp/gg.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN=${1:?bindir}
OUTD=${2:?outdir}
mkdir -p "$OUTD" /tmp/gg
export LD_LIBRARY_PATH="$BIN:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RS_WORK=/tmp/rs4b
CH=${RS_CHUNK:-512}
DEADLINE=${RS_DEADLINE:-560}
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
stamp() { echo "== $1 ($(el) s into the call)"; }
fits() { # fits COST: COST more seconds end before the deadline
  if [ $(( $(el) + $1 )) -le "$DEADLINE" ]; then return 0; fi
  echo "== SKIPPED (would pass the ${DEADLINE} s deadline at $(el) s): $2"; return 1
}
RS="$BIN/replayssm"
LOG="$OUTD/gemm.log"
: > "$LOG"

stamp tests
for t in "test_gpu_gemm" "test_gpu_ops --quick" "test_cuda_scan --quick"; do
  t1=$(date +%s)
  RS_GEMM_BENCH=1 OMP_NUM_THREADS=$(nproc) $BIN/$t > /tmp/gg/t.log 2>&1
  r=$?
  cat /tmp/gg/t.log >> "$LOG"
  echo "$t: exit $r ($(( $(date +%s) - t1 )) s); $(grep -c '^ok' /tmp/gg/t.log) ok, $(grep -c '^FAIL' /tmp/gg/t.log) FAIL" | tee -a "$LOG"
  grep -E '^FAIL' /tmp/gg/t.log | head -10
done
grep -E '^(ok|FAIL) (tf32|linear)' "$LOG" | sed 's/^/   /' | cut -c1-230
grep -E '^bench' "$LOG"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$BIN/test_gpu_gemm" --quick > /tmp/gg/san.log 2>&1
echo "compute-sanitizer memcheck test_gpu_gemm --quick: exit $? $(grep -E 'ERROR SUMMARY' /tmp/gg/san.log | tail -1)" | tee -a "$LOG"

stamp "qwen3_5_4b: model, parity (fp32 = SGEMM, and tf32x3)"
RS_MODELS=qwen3_5_4b RS_PARITY_COMPUTE=fp32,tf32x3 bash eval/cuda/tests/run_gpu_4b.sh "$BIN" /tmp/gg/q parity 2>&1 | tee -a "$LOG" | grep -E 'PASS|FAIL|info|loaded|gemm|Error|error' | cut -c1-260

if fits 270 "kl ${RS_BIG:-131072}"; then
  stamp "qwen3_5_4b kl ${RS_BIG:-131072} positions, chunk $CH, --compute ${RS_BIG_COMPUTE:-tf32x3}"
  RS_MODELS=qwen3_5_4b RS_BENCH_TOKENS=${RS_BIG:-131072} RS_CHUNK=$CH RS_COMPUTE=${RS_BIG_COMPUTE:-tf32x3} bash eval/cuda/tests/run_gpu_4b.sh "$BIN" /tmp/gg/q bench 2>&1 | tee -a "$LOG"
  cp /tmp/gg/q/qwen3_5_4b-${RS_BIG:-131072}.txt "$OUTD/" 2> /dev/null
fi

if fits 45 "prov_hash_time"; then
stamp "prov_hash_time (the model files' SHA-256 vs the load)"
"$BIN/prov_hash_time" "$RS_WORK/qwen3_5_4b" 2>&1 | tee -a "$LOG"
fi

if fits 30 "small f32 checkpoints"; then
stamp "small f32 checkpoints: cpu vs cuda fp32 (SGEMM) vs cuda tf32x3 (W_lo != 0)"
python3 - << 'EOF' 2>&1 | tail -2
# a tied f32 copy of the GDN fixture with informative low bits in every tensor (W_lo != 0 everywhere)
import os, shutil, torch
from safetensors.torch import load_file, save_file
src, dst = "tests/fixtures/models/gdn-tiny-random", "/tmp/gg/gdn-f32"
os.makedirs(dst, exist_ok=True)
for f in os.listdir(src):
    if not f.endswith(".safetensors"): shutil.copy(os.path.join(src, f), dst)
g = torch.Generator().manual_seed(7)
t = load_file(os.path.join(src, "model.safetensors"))
t = {k: (v.float() * (1 + 2.0**-12 * torch.randn(v.shape, generator=g))).contiguous() for k, v in t.items()}
save_file(t, os.path.join(dst, "model.safetensors"))
print("made", dst, "with", len(t), "f32 tensors")
EOF
for m in tests/fixtures/models/mamba2-tiny-random /tmp/gg/gdn-f32; do
  b=$(basename $m)
  python3 -c "import numpy as np, json; V=json.load(open('$m/config.json'))['vocab_size']; np.save('/tmp/gg/$b-ids.npy', np.random.default_rng(3).integers(0, V, (1, 1025), dtype=np.int32))"
  for d in "cpu fp32" "cuda fp32" "cuda tf32x3"; do
    set -- $d
    "$RS" kl --device $1 --compute $2 --model $m --token-ids /tmp/gg/$b-ids.npy --tokens 1024 --chunk 256 --quiet --force \
      --out /tmp/gg/$b-$1-$2.h5 > /tmp/gg/$b-$1-$2.txt 2>&1 || { echo "kl $b $1 $2 failed:"; tail -3 /tmp/gg/$b-$1-$2.txt; }
  done
  grep -h '^device: cuda' /tmp/gg/$b-cuda-tf32x3.txt | grep -o 'gemm [^,]*'
  python3 eval/cuda/tests/compare_gemm_modes.py /tmp/gg/$b-cpu-fp32.h5 /tmp/gg/$b-cuda-fp32.h5 /tmp/gg/$b-cuda-tf32x3.h5 \
    --labels "$b cpu,cuda fp32 (sgemm),cuda tf32x3"
done
fi

if fits 60 "2048-position mode comparison"; then
  stamp "qwen3_5_4b 2048 positions: fp32 (chunk $CH and 256) / tf32x3 / tf32"
  for v in "fp32 $CH" "fp32 256" "tf32x3 $CH" "tf32 $CH"; do
    set -- $v
    fits 15 "2048 $1 chunk $2" || break
    RS_MODELS=qwen3_5_4b RS_BENCH_TOKENS=2048 RS_COMPUTE=$1 RS_CHUNK=$2 bash eval/cuda/tests/run_gpu_4b.sh "$BIN" /tmp/gg/c-$1-$2 bench > /tmp/gg/c.txt 2>&1
    cat /tmp/gg/c.txt >> "$LOG"
    grep -E 'wall|^compute' /tmp/gg/c.txt | cut -c1-200
  done
  L=/tmp/gg; q=qwen3_5_4b-2048.h5
  python3 eval/cuda/tests/compare_gemm_modes.py $L/c-fp32-$CH/$q $L/c-fp32-256/$q $L/c-tf32x3-$CH/$q $L/c-tf32-$CH/$q \
    --labels "fp32 c$CH,fp32 c256 (yardstick),tf32x3 c$CH,tf32 c$CH" 2>&1 | tee -a "$LOG"
fi

for N in 8192 32768; do
  fits $(( N / 400 + 20 )) "kl $N" || continue
  stamp "qwen3_5_4b kl $N, chunk $CH"
  RS_MODELS=qwen3_5_4b RS_BENCH_TOKENS=$N RS_CHUNK=$CH bash eval/cuda/tests/run_gpu_4b.sh "$BIN" /tmp/gg/q bench 2>&1 | tee -a "$LOG" | grep -E 'wall|^compute' | cut -c1-260
done
stamp done
echo "==== summary (full logs: gemm.log)"
grep -E "^test_(gpu_gemm|gpu_ops|cuda_scan).*: exit|^compute-sanitizer" "$LOG"
grep -E "^(PASS|FAIL) \[|^info \[" "$LOG" | cut -c1-200
grep -E "GEMMs of one chunk" "$LOG" | cut -c1-250
grep -E "kl --device cuda, [0-9]+ positions" "$LOG"
grep -E "^compute:" "$LOG" | sed -E 's/ \(([0-9]+) positions\/s, /(\1 pos\/s, /' | cut -c1-330
grep -E "^prov_hash_time:" "$LOG" | cut -c1-220

#!/usr/bin/env bash
# run_gpu_issue15.sh — issue 15's measurements of one build in one bounded device call (every stage
# has its own time limit; the summary comes back last, also OUTDIR/summary.txt):
#   A. test_gpu_ops --quick, test_cuda_scan --quick (the merged kernels)
#   B. Qwen3.5-4B-shape parity with transformers (run_gpu_4b.sh parity: chunked; step-by-step; step
#      with the GEMMs padded to the chunk's rows, bit-identical expected)
#   C. the provenance hashing cost on that checkpoint (prov_hash_time)
#   D. kl --device cuda, 131072 positions, reference + 4 policies, chunk 512, default --compute fp32,
#      with --timing -> the cost per 1K positions at 8K / 32K / 128K; then the HF route (same model)
#   E. (only if named in RS_STAGES) books batched at that shape: run_gpu_batch.sh part 3 on the same
#      checkpoint (/tmp/rs4b), 8 streams
#      x RS_4B_TOKENS positions, --batch 1 vs --batch 8 (Qwen3.5-4B shape only)
#   eval/cuda/tests/run_gpu_issue15.sh BINDIR OUTDIR        (env RS_MODEL: qwen3_5_4b)
# Env RS_STAGES (default "ops scan parity hash bench hf") picks the stages A-E by those names (+ batch).
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN=${1:?bindir} OUTD=${2:?outdir}
M=${RS_MODEL:-qwen3_5_4b}
mkdir -p "$OUTD" /tmp/i15
S="$OUTD/summary.txt"
: > "$S"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/local/cuda/lib64"
STAGE_TMP=/tmp/i15
. eval/cuda/tests/gpu_stage.sh
STAGES=" ${RS_STAGES:-ops scan parity hash bench hf} "
want() { case "$STAGES" in *" $1 "*) return 0 ;; esac; return 1; }
T0=$(date +%s)
want ops && stage ops 60 "$BIN/test_gpu_ops" --quick
want scan && stage scan 60 "$BIN/test_cuda_scan" --quick
if want parity; then
t0=$(date +%s)
RS_MODELS=$M timeout 240 bash eval/cuda/tests/run_gpu_4b.sh "$BIN" "$OUTD/4b" parity > /tmp/i15/parity.log 2>&1
echo "parity $M: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
grep -E '^(PASS|FAIL|info|\[)' /tmp/i15/parity.log | cut -c1-300 >> "$S"
fi
if want hash; then
timeout 60 "$BIN/prov_hash_time" /tmp/rs4b/$M > /tmp/i15/hash.log 2>&1
echo "prov_hash_time: exit $?" >> "$S"
tail -8 /tmp/i15/hash.log | cut -c1-200 >> "$S"
fi
if want bench; then
t0=$(date +%s)
RS_MODELS=$M RS_BENCH_TOKENS=${RS_BENCH_TOKENS:-131072} RS_CHUNK=512 timeout ${RS_BENCH_LIMIT:-330} \
  bash eval/cuda/tests/run_gpu_4b.sh "$BIN" "$OUTD/4b" bench > /tmp/i15/bench.log 2>&1
echo "bench $M: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
grep -v -E '^\s*$' /tmp/i15/bench.log | tail -12 | cut -c1-400 >> "$S"
fi
if want hf; then
t0=$(date +%s)
RS_MODELS=$M RS_HF_POSITIONS=64 timeout 150 bash eval/cuda/tests/run_gpu_4b.sh "$BIN" "$OUTD/4b" hf > /tmp/i15/hf.log 2>&1
echo "hf route $M: exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
tail -4 /tmp/i15/hf.log | cut -c1-300 >> "$S"
fi
if want batch; then
t0=$(date +%s)
RS_WORK=/tmp/rs4b RS_BATCH_PARTS=3 timeout ${RS_BATCH_LIMIT:-170} bash eval/cuda/tests/run_gpu_batch.sh "$BIN" "$OUTD/batch" > /tmp/i15/batch.log 2>&1
echo "books batched (Qwen3.5-4B shape): exit $? ($(( $(date +%s) - t0 )) s)" >> "$S"
grep -v -E '^\s*$' /tmp/i15/batch.log | tail -12 | cut -c1-300 >> "$S"
fi
echo "total $(( $(date +%s) - T0 )) s" >> "$S"
cat "$S"

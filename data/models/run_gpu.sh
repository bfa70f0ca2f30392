#!/bin/bash
# run_gpu.sh — the ONE device call that trains both bundled models (issue 6) on one H200.
#
# Both models train concurrently (two processes, one GPU each on a 2-GPU machine, else sharing one;
# each time-budgeted), then each
# gets its decay report (GPU) and its transformers reference logits (CPU, transformers' own code
# paths), and everything comes back under $OUT (<= 8 files, each <= 16 MiB):
#   gdn-tiny.model.safetensors     mamba2-tiny.model.safetensors      (the weights, ~13.8 / ~11.4 MB)
#   gdn-tiny.meta.tar.gz           mamba2-tiny.meta.tar.gz            (config.json, train_log.json,
#                                  reference.safetensors, decay.json, decay.md, the three logs)
#   run_gpu.log                                                      (this script's summary)
#
# Before the call, on the development machine, from the repo root (shared/ does not travel):
#   mkdir -p .train-data && cp ../shared/data/gutenberg-train/*.txt.gz .train-data/
#   grep -qx '/.train-data/' .git/info/exclude 2>/dev/null || echo /.train-data/ >> .git/info/exclude
# The call (device tool `run`, kind nvidia-h200, timeout_s 600, carry [".train-data"]):
#   bash data/models/run_gpu.sh
# Environment knobs: MODELS (default "gdn-tiny mamba2-tiny"), MINUTES (training budget per model, default 6.5), DATA (default .train-data),
# EXTRA_GDN / EXTRA_MAMBA (extra train.py arguments, e.g. "--set rope_theta=500"), DEVICE (decay
# report device, default cuda). CPU rehearsal of the whole script (about 2 minutes on 2 cores):
#   OUT=/tmp/rg DEVICE=cpu EXTRA_GDN="--smoke --threads 1" EXTRA_MAMBA="--smoke --threads 1" bash data/models/run_gpu.sh
# Afterwards: data/models/README.md, "After the device call".
set -u
cd "$(dirname "$0")/../.."
MIN=${MINUTES:-6.5}
DATA=${DATA:-.train-data}
O=${OUT:-/tmp/rs_models_out}
W=/tmp/rs_models
rm -rf "$W"; mkdir -p "$W" "$O"
export PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True TOKENIZERS_PARALLELISM=false
exec > >(tee "$O/run_gpu.log") 2>&1
t0=$(date +%s)
echo "== run_gpu.sh $(date -u +%FT%TZ) MINUTES=$MIN DATA=$DATA git=$(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch, transformers, safetensors; print("torch", torch.__version__, "transformers", transformers.__version__, "safetensors", safetensors.__version__, "cuda", torch.cuda.is_available())'
n_books=$(ls "$DATA"/*.txt.gz 2>/dev/null | wc -l)
echo "training books in $DATA: $n_books"
[ "$n_books" -ge 10 ] || { echo "no training data: carry .train-data (see the header)"; exit 1; }

# hard stop per training process: budget + 150 s for start-up, export and final validation
lim=$(python3 -c "print(int($MIN * 60 + 150))")
declare -A EXTRA=([gdn-tiny]="${EXTRA_GDN:-}" [mamba2-tiny]="${EXTRA_MAMBA:-}")
# one GPU per model where the machine has two (kind nvidia-h200-x2), else both share GPU 0
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
gpu=0
pids=()
for m in ${MODELS:-gdn-tiny mamba2-tiny}; do
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$(( ngpu >= 2 ? gpu : 0 )) OMP_NUM_THREADS=4 timeout -k 20 -s TERM "$lim" python3 data/models/train.py --model "$m" --minutes "$MIN" \
      --data "$DATA" --out "$W/$m" ${EXTRA[$m]} > "$W/$m.train.log" 2>&1 &
  pids+=($!); gpu=$((gpu + 1))
done
echo "GPUs: $ngpu (one per model: $([ "$ngpu" -ge 2 ] && echo yes || echo no))"
wait "${pids[@]}"  # (a bare `wait` would also wait for the tee above and never return)
echo "== training done after $(( $(date +%s) - t0 )) s"
for m in ${MODELS:-gdn-tiny mamba2-tiny}; do
  echo "-- $m"; grep -E '^(params|ssd_chunk|data:|trained|final|signal)|"step": 1,' "$W/$m.train.log" | cut -c1-600
  tail -n 1 "$W/$m.train.log" | cut -c1-400
done

pids=()
for m in ${MODELS:-gdn-tiny mamba2-tiny}; do
  [ -f "$W/$m/model.safetensors" ] || continue
  ( timeout 120 python3 data/models/decay_report.py "$W/$m" --device "${DEVICE:-cuda}" --json "$W/$m/decay.json" \
        --md "$W/$m/decay.md" > "$W/$m.decay.log" 2>&1
    OMP_NUM_THREADS=6 timeout 150 python3 data/models/make_reference.py "$W/$m" --threads 6 \
        > "$W/$m.ref.log" 2>&1 ) &
  pids+=($!)
done
wait "${pids[@]}"
echo "== post-processing done after $(( $(date +%s) - t0 )) s"
for m in ${MODELS:-gdn-tiny mamba2-tiny}; do
  [ -d "$W/$m" ] || continue
  echo "-- $m"; head -n 1 "$W/$m/decay.md" 2>/dev/null; tail -n 1 "$W/$m.ref.log" | cut -c1-400
  cp "$W/$m.train.log" "$W/$m.decay.log" "$W/$m.ref.log" "$W/$m/" 2>/dev/null
  [ -f "$W/$m/model.safetensors" ] && cp "$W/$m/model.safetensors" "$O/$m.model.safetensors"
  tar -C "$W" -czf "$O/$m.meta.tar.gz" --exclude=model.safetensors "$m"
done
ls -l "$O"
echo "== total $(( $(date +%s) - t0 )) s"

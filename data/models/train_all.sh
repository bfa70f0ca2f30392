#!/bin/bash
# train_all.sh — remake the two bundled models (data/models/README.md "Recipe") on a GPU machine:
# both train concurrently (one GPU each where the machine has two or more, else both on GPU 0),
# each under a wall-clock budget; then each gets its decay report (data/models/decay_report.py) and
# its transformers reference logits (data/models/make_reference.py, CPU, transformers' own code paths).
#
#   DATA=DIR [OUT=DIR] bash data/models/train_all.sh
#
# DATA: a folder of Project Gutenberg novels as .txt.gz (at least 10; train.py holds 3 out for
# validation). OUT (default out/models): OUT/<model>/ gets config.json, model.safetensors,
# train_log.json, reference.safetensors, decay.json, decay.md and the three logs; OUT/train_all.log
# this script's summary. Needs torch, transformers 5.17 and safetensors. Environment knobs: MODELS
# (default "gdn-tiny mamba2-tiny"), MINUTES (training budget per model, default 6.5), EXTRA_GDN /
# EXTRA_MAMBA (extra train.py arguments, e.g. "--set rope_theta=500"), DEVICE (decay report device,
# default cuda). A CPU rehearsal of the whole script (about 2 minutes on 2 cores):
#   DATA=... OUT=/tmp/rg DEVICE=cpu EXTRA_GDN="--smoke --threads 1" EXTRA_MAMBA="--smoke --threads 1" \
#     bash data/models/train_all.sh
# Then: data/models/README.md "How to remake the models", step 2.
set -u
DATA=${DATA:?set DATA to a folder of .txt.gz novels (see the header)}
W=${OUT:-out/models}
case "$DATA" in /*) ;; *) DATA=$PWD/$DATA ;; esac  # relative paths are relative to where you ran this
case "$W" in /*) ;; *) [ -n "${OUT:-}" ] && W=$PWD/$W ;; esac
cd "$(dirname "$0")/../.." || exit 1
MIN=${MINUTES:-6.5}
mkdir -p "$W"
export PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True TOKENIZERS_PARALLELISM=false
exec > >(tee "$W/train_all.log") 2>&1
t0=$(date +%s)
echo "== train_all.sh $(date -u +%FT%TZ) MINUTES=$MIN DATA=$DATA git=$(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch, transformers, safetensors; print("torch", torch.__version__, "transformers", transformers.__version__, "safetensors", safetensors.__version__, "cuda", torch.cuda.is_available())'
n_books=$(ls "$DATA"/*.txt.gz 2>/dev/null | wc -l)
echo "training books in $DATA: $n_books"
[ "$n_books" -ge 10 ] || { echo "too few training books in $DATA (at least 10 .txt.gz; see the header)"; exit 1; }

# hard stop per training process: budget + 150 s for start-up, export and final validation
lim=$(python3 -c "print(int($MIN * 60 + 150))")
declare -A EXTRA=([gdn-tiny]="${EXTRA_GDN:-}" [mamba2-tiny]="${EXTRA_MAMBA:-}")
# one GPU per model where the machine has two or more, else both share GPU 0
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
  mv "$W/$m.train.log" "$W/$m.decay.log" "$W/$m.ref.log" "$W/$m/" 2>/dev/null
  ls -l "$W/$m"
done
echo "== total $(( $(date +%s) - t0 )) s"

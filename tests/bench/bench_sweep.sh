#!/usr/bin/env bash
# bench_sweep.sh — `replayssm sweep` over windows 4,8,16,32,64 x 2 policies (10 runs) against one
# `replayssm kl` with 10 policies of one window, same tokens and threads. With one runner for all
# windows the sweep forwards the fp32 reference once per position, like the kl run, so its wall
# time should be within 1.25x of it; a second binary (OLD, e.g. another build to compare with) is
# timed too when given.
#
# usage (from the repository root): tests/bench/bench_sweep.sh NEW [OLD] [TOKENS] [THREADS] [REPEATS]
#   NEW, OLD   replayssm binaries (OLD optional: "" skips it)    defaults: 2048 tokens, 2 threads, 3
# Prints one line per command and repeat (wall, user, sys seconds), then the medians and the
# minima (the least disturbed repeat) and their ratios. The commands run interleaved (sweep, kl,
# old sweep, sweep, ...) so that load from other jobs on the machine hits them alike.
set -euo pipefail
new=${1:?usage: bench_sweep.sh NEW [OLD] [TOKENS] [THREADS] [REPEATS]}
old=${2:-}
tokens=${3:-2048}
threads=${4:-2}
repeats=${5:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

common=(--model data/models/gdn-tiny --data data/pg19-sample --books 1 --tokens "$tokens" --threads "$threads"
        --quiet --force)
sweep=(sweep "${common[@]}" --modes shared,split --formats nvfp4 --rounding sr --hp fp32 --windows 4,8,16,32,64)
# 10 policies of one window with the sweep's format and modes (5 shared + 5 split NVFP4, varied
# in rounding), so that the two commands differ in the windows only: a small window folds, hence
# quantizes, more often (L = 4: 4x as often as L = 16), a large one replays longer windows
kl=(kl "${common[@]}" --window 16
    --policy shared:nvfp4-sr,shared:nvfp4-sr8,shared:nvfp4-sr4,shared:nvfp4-rtn,shared:nvfp4-sr+floor
    --policy split:nvfp4-sr/fp32,split:nvfp4-sr8/fp32,split:nvfp4-sr4/fp32,split:nvfp4-rtn/fp32
    --policy split:nvfp4-sr+floor/fp32)

# time_one NAME BINARY ARGS... : append "wall user sys" to $tmp/NAME
time_one() {
    local name=$1 bin=$2
    shift 2
    /usr/bin/time -f '%e %U %S' -o "$tmp/t" "$bin" "$@" --out "$tmp/$name.h5" > /dev/null
    cat "$tmp/t" >> "$tmp/$name"
    printf '%-10s %s\n' "$name" "$(cat "$tmp/t")"
}

echo "replayssm sweep vs kl: $tokens positions, $threads threads, $repeats repeats; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$repeats"); do
    time_one sweep "$new" "${sweep[@]}"
    time_one kl10 "$new" "${kl[@]}"
    [ -n "$old" ] && time_one old-sweep "$old" "${sweep[@]}"
done

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
minimum() { sort -n | head -1; }
# stat STAT NAME: that statistic of the wall and of the CPU (user + sys) seconds
stat() { printf '%s %s\n' "$(cut -d' ' -f1 "$tmp/$2" | $1)" "$(awk '{print $2 + $3}' "$tmp/$2" | $1)"; }
for s in median minimum; do
    read -r sw_w sw_c <<< "$(stat $s sweep)"
    read -r kl_w kl_c <<< "$(stat $s kl10)"
    echo "$s wall / CPU s: sweep $sw_w / $sw_c, kl (10 policies) $kl_w / $kl_c"
    awk -v a="$sw_w" -v b="$kl_w" -v c="$sw_c" -v d="$kl_c" \
        'BEGIN {printf "  sweep / kl: wall %.3f, CPU %.3f (acceptance: wall <= 1.25)\n", a / b, c / d}'
    if [ -n "$old" ]; then
        read -r old_w old_c <<< "$(stat $s old-sweep)"
        awk -v a="$old_w" -v b="$sw_w" -v c="$old_c" -v d="$sw_c" \
            'BEGIN {printf "  old sweep %s / %s: old / new wall %.3f, CPU %.3f\n", a, c, a / b, c / d}'
    fi
done

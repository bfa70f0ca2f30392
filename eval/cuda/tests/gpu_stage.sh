# gpu_stage.sh — sourced by the bounded device scripts (run_gpu_recheck.sh, run_gpu_bf16x3.sh, kernels/run_gpu_ab.sh,
# run_gpu_issue15.sh, kernels/run_gpu_stages.sh), so that one stage's hang or failure never costs the summary; every
# device script takes its cuBLAS lookup (gpu_cublas_path) from here since the twelfth session:
#   stage NAME LIMIT COMMAND...
# runs COMMAND under `timeout LIMIT` with its output in $STAGE_TMP/NAME.log (appended, headed
# "== NAME", to $STAGE_ALL when that is set) and adds one line to the summary file $S: the exit
# status, the seconds, the counts of "ok" and "FAIL" lines, then the first FAIL lines.
stage() {
  local name=$1 lim=$2 t0 r
  shift 2
  t0=$(date +%s)
  timeout "$lim" "$@" > "$STAGE_TMP/$name.log" 2>&1
  r=$?
  if [ -n "${STAGE_ALL:-}" ]; then { echo "== $name"; cat "$STAGE_TMP/$name.log"; } >> "$STAGE_ALL"; fi
  echo "$name: exit $r ($(( $(date +%s) - t0 )) s), $(grep -c '^ok' "$STAGE_TMP/$name.log") ok, $(grep -c '^FAIL' "$STAGE_TMP/$name.log") FAIL" >> "$S"
  grep '^FAIL' "$STAGE_TMP/$name.log" | head -8 | cut -c1-240 >> "$S"
}

# gpu_cublas_path: append the folder of the image's libcublas.so.13 (the toolkit's, else PyTorch's pip
# wheel) to LD_LIBRARY_PATH
gpu_cublas_path() {
  local d
  for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null); do
    [ -e "$d/libcublas.so.13" ] && { export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"; return 0; }
  done
  return 1
}

# gpu_cublas_ld: print what gpu_cublas_path appends to an empty LD_LIBRARY_PATH (":DIR", or nothing), for the
# scripts that put one build's folder first: export LD_LIBRARY_PATH="$BIN$(gpu_cublas_ld)"
gpu_cublas_ld() { (LD_LIBRARY_PATH=; gpu_cublas_path; printf '%s' "$LD_LIBRARY_PATH"); }

# fuzz_campaign_start PACK_TAR SECS JOBS DIR: tests/fuzz/campaign.sh of a make_campaign_pack.sh pack in
# the background at nice 19 (unpacked into /tmp/rs_fz), results in DIR; a line in the summary $S
fuzz_campaign_start() {
  mkdir -p /tmp/rs_fz && tar -xJf "$1" -C /tmp/rs_fz || return 1
  (JOBS=$3 nice -n 19 bash /tmp/rs_fz/campaign.sh "$2" "$4" > "$STAGE_TMP/campaign.out" 2>&1 &)
  echo "fuzz campaign: $3 jobs for $2 s, nice 19" >> "$S"
}

# fuzz_campaign_wait SECS DIR: wait (at most SECS) for campaign.sh itself to end (it writes summary.txt
# before it packs the new corpus), then add the end of DIR/summary.txt to $S
fuzz_campaign_wait() {
  local i
  for i in $(seq 1 "$1"); do pgrep -f rs_fz/campaign.sh > /dev/null || break; sleep 1; done
  tail -6 "$2/summary.txt" >> "$S" 2>/dev/null
}

# san_stage TOOL LIMIT TAG COMMAND...: compute-sanitizer --tool TOOL on COMMAND under `timeout LIMIT`
# (skipped below 30 s), its output in $STAGE_TMP/san_TAG_TOOL.log; one line in $S (exit status, seconds,
# ok / FAIL counts, the tool's summary) and the first error lines of the program itself
san_stage() {
  local tool=$1 lim=$2 tag=$3 t0 r log
  shift 3
  if [ "$lim" -lt 30 ]; then echo "compute-sanitizer $tool $tag: skipped (no time left)" >> "$S"; return 0; fi
  log="$STAGE_TMP/san_${tag}_$tool.log"
  t0=$(date +%s)
  timeout "$lim" compute-sanitizer --tool "$tool" --error-exitcode 3 "$@" > "$log" 2>&1
  r=$?
  echo "compute-sanitizer $tool $tag: exit $r ($(( $(date +%s) - t0 )) s, limit $lim), $(grep -c '^ok' "$log") ok, $(grep -c '^FAIL' "$log") FAIL, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)" >> "$S"
  grep -v "^=" "$log" | grep -i -E "error|cannot|killed|signal" | head -3 >> "$S"
}

# gpu_pack_bindir IN TAG DIR: print the folder holding a build's replayssm: IN itself (a
# kernels/build_static.sh folder) or, for a make_gpu_pack.sh folder, its gpu.tar.xz extracted into
# DIR/bin_TAG; status 1 if neither holds one
gpu_pack_bindir() {
  if [ -x "$1/replayssm" ]; then (cd "$1" && pwd); return 0; fi
  if [ -f "$1/gpu.tar.xz" ]; then
    mkdir -p "$3/bin_$2" && tar -xJf "$1/gpu.tar.xz" -C "$3/bin_$2" && [ -x "$3/bin_$2/replayssm" ] && { echo "$3/bin_$2"; return 0; }
  fi
  return 1
}

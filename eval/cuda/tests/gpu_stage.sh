# gpu_stage.sh — sourced by the bounded device scripts (run_gpu_recheck.sh, run_gpu_bf16x3.sh,
# run_gpu_issue15.sh), so that one stage's hang or failure never costs the summary:
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

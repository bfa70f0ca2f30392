#!/usr/bin/env bash
# run_xarray_test.sh CLI [PARENT] — CTest driver of test `xarray_log` (tests/xarray/check_xarray_log.py):
# a short `replayssm kl` log opened with xarray (engine h5netcdf) and checked against h5py.
# Exit 77 (CTest: Skipped) when python3 or its modules (numpy, h5py, xarray, h5netcdf) are missing
# and RS_REQUIRE_PYTHON is unset; with RS_REQUIRE_PYTHON set (CI: .ci/run) a missing module fails.
# The modules are pinned in notebooks/requirements.txt (scripts/bootstrap.sh installs them).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cli="$1"
parent="${2:-${TMPDIR:-/tmp}}"
py="${PYTHON:-python3}"
mods='import numpy, h5py, xarray, h5netcdf'
# fallback (scripts/bootstrap.sh installs Debian's modules when pip fails): Debian's interpreter
if [ -z "${PYTHON:-}" ] && ! python3 -c "$mods" > /dev/null 2>&1 \
   && [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "$mods" > /dev/null 2>&1; then
  py=/usr/bin/python3
fi
why=""
if ! command -v "$py" > /dev/null 2>&1; then
  why="no $py on PATH"
elif ! err="$("$py" -c "$mods" 2>&1)"; then
  why="Python modules missing for $py: $(printf '%s' "$err" | tail -1)"
fi
if [ -n "$why" ]; then
  if [ -n "${RS_REQUIRE_PYTHON:-}" ]; then
    echo "FAIL: $why (RS_REQUIRE_PYTHON is set). Install them: $py -m pip install -r notebooks/requirements.txt" >&2
    exit 1
  fi
  echo "SKIP: $why. Install them with: $py -m pip install -r notebooks/requirements.txt (or bash scripts/bootstrap.sh)"
  exit 77
fi
mkdir -p "$parent"
work="$(mktemp -d "$parent/xarray-test.XXXXXX")"
"$py" "$here/check_xarray_log.py" "$cli" "$repo" "$work"
rc=$?
if [ $rc -eq 0 ]; then rm -rf "$work"; else echo "outputs kept in $work" >&2; fi
exit $rc

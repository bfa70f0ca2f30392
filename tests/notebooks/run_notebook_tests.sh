#!/usr/bin/env bash
# run_notebook_tests.sh — CTest driver of the figure scripts in notebooks/ (test `notebooks`).
# Runs every precision-figure script on the tiny committed HDF5 fixtures in
# tests/fixtures/notebooks/ and checks the outputs (tests/notebooks/check_notebooks.py).
# Exit 77 (CTest: Skipped) when python3 or its modules (numpy, h5py, matplotlib) are missing and
# RS_REQUIRE_PYTHON is unset; with RS_REQUIRE_PYTHON set (CI: .ci/run) a missing module fails.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
parent="${1:-${TMPDIR:-/tmp}}"  # outputs go to a fresh folder under it, removed when all checks pass
py="${PYTHON:-python3}"
# fallback (scripts/bootstrap.sh installs Debian's modules when pip fails): Debian's interpreter
if [ -z "${PYTHON:-}" ] && ! python3 -c 'import numpy, h5py, matplotlib' > /dev/null 2>&1 \
   && [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy, h5py, matplotlib' > /dev/null 2>&1; then
  py=/usr/bin/python3
fi
why=""
if ! command -v "$py" > /dev/null 2>&1; then
  why="no $py on PATH"
elif ! err="$("$py" -c 'import numpy, h5py, matplotlib' 2>&1)"; then
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
work="$(mktemp -d "$parent/notebooks-test.XXXXXX")"
export MPLBACKEND=Agg
"$py" "$here/check_notebooks.py" "$repo" "$work"
rc=$?
if [ $rc -eq 0 ]; then rm -rf "$work"; else echo "outputs kept in $work" >&2; fi
exit $rc

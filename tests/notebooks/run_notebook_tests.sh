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
. "$here/../rs_python_check.sh"
mods='import numpy, h5py, matplotlib'
rs_python_pick "$mods"
rs_python_require "$mods"
mkdir -p "$parent"
work="$(mktemp -d "$parent/notebooks-test.XXXXXX")"
export MPLBACKEND=Agg
"$py" "$here/check_notebooks.py" "$repo" "$work"
rc=$?
if [ $rc -eq 0 ]; then rm -rf "$work"; else echo "outputs kept in $work" >&2; fi
exit $rc

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
. "$here/../rs_python_check.sh"
mods='import numpy, h5py, xarray, h5netcdf'
rs_python_pick "$mods"
rs_python_require "$mods"
mkdir -p "$parent"
work="$(mktemp -d "$parent/xarray-test.XXXXXX")"
"$py" "$here/check_xarray_log.py" "$cli" "$repo" "$work"
rc=$?
if [ $rc -eq 0 ]; then rm -rf "$work"; else echo "outputs kept in $work" >&2; fi
exit $rc

#!/usr/bin/env bash
# run_python_tests.sh — CTest driver of the Python module's tests (test `python`):
#   run_python_tests.sh REPO CORE_LIB QUANT_DUMP CLI FIXTURE_DIR
# runs pytest on tests/python/ with python/ on PYTHONPATH and the module pointed at this build's
# libreplayssm-core (REPLAYSSM_LIB). Exit 77 (CTest: Skipped) when python3 or its modules (numpy,
# pytest, ml_dtypes, h5py, xarray) are missing and RS_REQUIRE_PYTHON is unset; with
# RS_REQUIRE_PYTHON set (CI: .ci/run) a missing module fails, as for the notebooks test.
set -uo pipefail
repo="$1"
export REPLAYSSM_LIB="$2" RS_QUANT_DUMP="$3" RS_CLI="$4" RS_FIXTURE_DIR="$5"
. "$repo/tests/rs_python_check.sh"
py="${PYTHON:-python3}" # no Debian fallback: pytest / ml_dtypes come from pip only
rs_python_require "import numpy, pytest, ml_dtypes, h5py, xarray"
export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1 OMP_WAIT_POLICY=PASSIVE
exec "$py" -m pytest -q -p no:cacheprovider "$repo/tests/python"

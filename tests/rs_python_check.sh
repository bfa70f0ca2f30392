# rs_python_check.sh — sourced by the CTest drivers of the Python tests (notebooks, xarray_log,
# python): picks the interpreter and checks its modules, the same way for every test.
#   rs_python_pick "import numpy, h5py"   sets $py: $PYTHON, else python3, else (when python3 lacks
#                                          the modules) Debian's /usr/bin/python3 if it has them
#                                          (scripts/bootstrap.sh installs Debian's modules when pip fails)
#   rs_python_require "import numpy, h5py" returns when $py has them; otherwise exits 77 (CTest:
#                                          Skipped), or 1 where RS_REQUIRE_PYTHON is set (CI: .ci/run)
rs_python_pick() {
  py="${PYTHON:-python3}"
  if [ -z "${PYTHON:-}" ] && ! python3 -c "$1" > /dev/null 2>&1 \
     && [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "$1" > /dev/null 2>&1; then
    py=/usr/bin/python3
  fi
}

rs_python_require() {
  local why="" err
  if ! command -v "$py" > /dev/null 2>&1; then
    why="no $py on PATH"
  elif ! err="$("$py" -c "$1" 2>&1)"; then
    why="Python modules missing for $py: $(printf '%s' "$err" | tail -1)"
  fi
  [ -z "$why" ] && return 0
  if [ -n "${RS_REQUIRE_PYTHON:-}" ]; then
    echo "FAIL: $why (RS_REQUIRE_PYTHON is set). Install them: $py -m pip install -r notebooks/requirements.txt" >&2
    exit 1
  fi
  echo "SKIP: $why. Install them with: $py -m pip install -r notebooks/requirements.txt (or bash scripts/bootstrap.sh)"
  exit 77
}

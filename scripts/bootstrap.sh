#!/usr/bin/env bash
# bootstrap.sh — install what replayssm needs on Debian 12 (run as root; idempotent).
# C toolchain, CMake, HDF5, GSL, zlib, CMocka, cJSON and OpenBLAS from Debian's packages.
# The CUDA toolkit is optional and not installed here (kernels/ builds when nvcc is found).
set -euo pipefail
pkgs=(build-essential cmake pkg-config libhdf5-dev hdf5-tools libgsl-dev zlib1g-dev libcmocka-dev
      libcjson-dev libopenblas-dev)
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

#!/usr/bin/env bash
# Install gemmcheck's build and test dependencies from Debian 12's packages. Idempotent: only
# missing packages are installed, and apt is not touched when everything is present.
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev clang-format
      libmpfr-dev libgmp-dev libopenblas-dev libblis-dev libblas-dev libcriterion-dev libjansson-dev nettle-dev
      # de_DE's source, compiled by tests/test_fpenv.c for its decimal-comma locale
      locales
      python3 python3-numpy python3-pytest python3-yaml python3-jsonschema libxml2-utils
      # PyTorch on the CPU: the python: backends' tests and example (docs/FRAMEWORKS.md), the dry
      # run of the GPU run's PyTorch check (scripts/device_torch.py)
      python3-torch
      # oneDNN: the headers to build the onednn backend in; libdnnl2 comes with them
      libdnnl-dev
      # the control suite (scripts/controls.sh): every CBLAS implementation and threading
      # flavour Debian 12 packages for x86-64, and a load generator
      libblas3 libopenblas0-pthread libopenblas0-openmp libopenblas0-serial
      libblis4-pthread libblis4-openmp libblis4-serial libatlas3-base libgslcblas0
      libblas64-3 libopenblas64-0-pthread libopenblas64-0-openmp libopenblas64-0-serial
      libblis64-4-pthread libblis64-4-openmp libblis64-4-serial stress-ng
      # the HTML reports' browser test (tests/python/test_html.py): headless Chromium, a font
      chromium fonts-dejavu-core)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

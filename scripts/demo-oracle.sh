#!/usr/bin/env bash
# The main job until the fuzz campaign lands: a mixed-precision GEMM computed by
# `gemmcheck oracle` from NumPy-written .npy files, compared with NumPy's own evaluations.
# usage: scripts/demo-oracle.sh [BUILD_DIR] [SEED]
set -euo pipefail
build=${1:-build}
seed=${2:-2026}
here=$(cd "$(dirname "$0")" && pwd)
py=""
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null && "$cand" -c "import numpy" 2>/dev/null; then py=$cand; break; fi
done
if [ -z "$py" ]; then
  echo "demo-oracle: no python3 with NumPy found (scripts/install-deps.sh installs python3-numpy)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/gemmcheck" --version
"$py" "$here/oracle_demo.py" "$build/gemmcheck" "$work" "$seed"

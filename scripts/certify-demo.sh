#!/usr/bin/env bash
# The demonstrations of docs/CERTIFY.md: certificates of the reference GEMMs, OpenBLAS (its kernel
# sets, one and two threads), netlib, BLIS (its OpenMP and pthread builds), and the compare of
# each pair, into OUT (certificates *.json and *.html, compare outputs *.txt with the exit
# status and *.html).
# Usage: scripts/certify-demo.sh [--gemmcheck BIN] [--time S] [--out DIR]
set -u
gck=build/gemmcheck time_s=20 out=certify-demo
while [ $# -gt 0 ]; do
  case $1 in
    --gemmcheck) gck=$2; shift 2 ;;
    --time) time_s=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "certify-demo.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
lib=/usr/lib/x86_64-linux-gnu
mkdir -p "$out"
cert() { # NAME ENV... -- SPEC
  local name=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local t0=$(date +%s)
  env "${envs[@]}" "$gck" certify --backend "$1" --out "$out/$name.json" --time "$time_s" \
      --html "$out/$name.html" > "$out/$name.log" 2>&1
  echo "certify $name ($1 ${envs[*]}): exit $? in $(( $(date +%s) - t0 )) s"
}
compare() { # OLD NEW
  "$gck" compare "$out/$1.json" "$out/$2.json" --html "$out/$1--$2.html" > "$out/$1--$2.txt" 2>&1
  local rc=$?
  echo "exit status $rc" >> "$out/$1--$2.txt"
  echo "compare $1 -> $2: exit $rc; $(grep -E '^(verdict|identical)' "$out/$1--$2.txt")"
}
cert ref -- ref
cert blis -- blis
cert netlib -- "cblas:$lib/blas/libblas.so.3"
cert openblas -- openblas
for c in Prescott Sandybridge Haswell Zen SkylakeX; do
  cert "openblas-$c" OPENBLAS_CORETYPE=$c OPENBLAS_NUM_THREADS=1 -- openblas
done
cert openblas-1thread OPENBLAS_NUM_THREADS=1 -- openblas
cert openblas-2threads OPENBLAS_NUM_THREADS=2 -- openblas
cert blis-openmp -- "cblas:$lib/blis-openmp/libblas.so.3"
cert blis-pthread -- "cblas:$lib/blis-pthread/libblas.so.3"
compare ref ref
compare openblas-Prescott openblas-Sandybridge
compare openblas-Sandybridge openblas-Haswell
compare openblas-Haswell openblas-Zen
compare openblas-Haswell openblas-SkylakeX
compare netlib openblas
compare openblas-1thread openblas-2threads
compare blis-openmp blis-pthread

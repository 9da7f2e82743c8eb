#!/bin/sh
# The installed gemmcheck, as a user gets it (docs/INSTALL.md):
#  1. no empty or relative RUNPATH entry in any installed or built ELF file;
#  2. nothing of CUDA is linked: the CUDA runtime, cuBLAS and cuBLASLt are opened on demand;
#  3. with the CUDA libraries hidden (a private mount namespace with an empty file system over
#     their directories, or GEMMCHECK_CUDA_LIBRARY_PATH pointing at an empty one where that is not
#     allowed), the CUDA backends say "CUDA runtime not found" and everything else works;
#  4. libraries named like its dependencies, planted in the working directory, are not loaded
#     (and the same planted files are loaded when the search does reach the directory: the
#     control, without which this part could not fail).
# Usage: installed.sh BUILD_DIR SOURCE_DIR PLANTED_LIBRARY CUDA(ON|OFF)
# (installed.sh --everyday DIR BINARY: only the everyday commands, outputs into DIR; step 3 runs
# it in the private mount namespace)
set -eu
fail() { echo "FAIL: $*"; exit 1; }
case_text='gck1 m=5 n=4 k=7 order=col ta=N tb=T types=f32,f32,f32,f32 compute=f32 scale=f32 alpha=1.5 beta=-0.5 lda=6 ldb=5 ldc=7 ldd=7 d=c batch=1 sa=0 sb=0 sc=0 sd=0 off=1,2,3,0 vab=unif vc=unif sp=0 cnan=0 seed=7'
# the everyday commands; each must succeed
everyday() {
    "$bin" --version > "$T/version.txt" || fail "--version"
    "$bin" backends > "$T/backends.txt" 2>&1 || fail "backends"
    "$bin" repro --backend ref "$case_text" > "$T/repro.txt" || fail "repro"
    "$bin" fuzz --backend ref --cases 20 --seed 1 --jobs 1 --report "$T/r.json" \
        --findings "$T/f.jsonl" > "$T/fuzz.txt" || fail "fuzz"
}
if [ "$1" = --everyday ]; then
    T=$2 bin=$3
    everyday
    exit 0
fi
build=$1 src=$2 planted=$3 cuda=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cmake --install "$build" --prefix "$T/prefix" > "$T/install.log" || fail "cmake --install"
bin=$T/prefix/bin/gemmcheck
echo "== 1. RUNPATH of the installed files and of the build tree"
sh "$src/scripts/check-runpath.sh" "$T/prefix" || fail "installed RUNPATH"
sh "$src/scripts/check-runpath.sh" "$build" > "$T/build-runpath.log" ||
    { grep -v ' ok$' "$T/build-runpath.log"; fail "build-tree RUNPATH"; }
tail -n 1 "$T/build-runpath.log"

echo "== 2. no CUDA library among the dependencies"
for f in "$bin" "$T"/prefix/lib*/libgemmcheck.so* "$T"/prefix/lib/*/libgemmcheck.so*; do
    [ -f "$f" ] || continue
    if readelf -d "$f" | grep NEEDED | grep -Ei 'cuda|cublas'; then fail "$f links CUDA"; fi
    echo "$f: $(readelf -d "$f" | grep -c NEEDED) dependencies, none of CUDA"
done

echo "== 3. CUDA libraries hidden"
if [ "$cuda" = ON ]; then
    dirs=$(ldconfig -p | awk '/libcu(dart|blas|blasLt)\.so\./ { print $NF }' | xargs -r -n1 dirname)
    dirs=$(for d in $dirs /usr/local/cuda/lib64 /usr/local/cuda/lib; do
        [ -d "$d" ] && readlink -f "$d"; done | sort -u)
    if [ -n "$dirs" ] && unshare -m true 2> /dev/null; then
        # this script's everyday commands in a private mount namespace, the directories emptied
        mounts=$(for d in $dirs; do printf 'mount -t tmpfs none %s && ' "$d"; done)
        if unshare -m --propagation private sh -c "$mounts ls $dirs | grep -q 'libcudart' && exit 9;
            exec sh '$0' --everyday '$T' '$bin'"; then
            hidden="by an empty file system over $(echo $dirs)"
        else
            fail "a command failed with the CUDA libraries hidden (exit $?)"
        fi
    else
        mkdir "$T/empty"
        GEMMCHECK_CUDA_LIBRARY_PATH=$T/empty
        export GEMMCHECK_CUDA_LIBRARY_PATH
        everyday
        unset GEMMCHECK_CUDA_LIBRARY_PATH
        hidden="by GEMMCHECK_CUDA_LIBRARY_PATH=$T/empty (no private mount namespace here)"
    fi
    echo "hidden $hidden"
    grep -q '^CUDA: unavailable: CUDA runtime not found: libcudart' "$T/version.txt" ||
        { cat "$T/version.txt"; fail "--version does not say the CUDA runtime is not found"; }
    for be in cublas cublaslt; do
        grep "^$be:" "$T/backends.txt" | grep -q 'CUDA runtime not found' ||
            { cat "$T/backends.txt"; fail "backends: $be does not say the runtime is missing"; }
    done
    grep '^cublas:' "$T/backends.txt"
else
    everyday
    grep -q 'built without CUDA' "$T/version.txt" || fail "--version: $(cat "$T/version.txt")"
fi
grep -q '^ref: available' "$T/backends.txt" || fail "ref is not available"
grep -q 'pass' "$T/repro.txt" || { cat "$T/repro.txt"; fail "repro did not pass"; }
echo "ref repro: $(head -n 1 "$T/repro.txt")"
echo "fuzz: $(grep -E "^ *ref " "$T/fuzz.txt" | head -n 1)"

echo "== 4. libraries planted in the working directory"
mkdir "$T/cwd"
for name in libmpfr.so.6 libgmp.so.10 libjansson.so.4 libcudart.so.13 libcublas.so.13 \
    libcublasLt.so.13 libopenblas.so.0 libblis.so.4; do
    cp "$planted" "$T/cwd/$name"
done
(cd "$T/cwd" && everyday) 2> "$T/planted.err" || { cat "$T/planted.err"; fail "with planted files"; }
if [ -e "$T/cwd/planted-library-was-loaded" ] || grep -q PLANTED "$T/planted.err"; then
    fail "a library planted in the working directory was loaded"
fi
echo "8 planted libraries, 4 commands run in their directory: none loaded"
# every file the loader tried (LD_DEBUG=libs), for start-up and for dlopen (backends opens the
# CUDA, OpenBLAS and BLIS libraries): none may be looked for in the working directory
(cd "$T/cwd" && LD_DEBUG=libs "$bin" backends > /dev/null 2> "$T/ld.log") || fail "LD_DEBUG run"
tries=$(grep -c 'trying file=' "$T/ld.log" || true)
if grep 'trying file=' "$T/ld.log" | grep -v 'trying file=/'; then
    fail "the loader looked in the working directory"
fi
echo "backends: $tries files tried by the loader, all by absolute path"
# control: when the search does reach the directory (as an empty RUNPATH entry would make it), the
# same check sees it, and the planted file is the one the loader takes
(cd "$T/cwd" && LD_LIBRARY_PATH=. LD_DEBUG=libs "$bin" --version > /dev/null 2> "$T/ld2.log") ||
    true
grep -q 'trying file=\./libmpfr.so.6' "$T/ld2.log" ||
    fail "control: LD_LIBRARY_PATH=. did not make the loader try ./libmpfr.so.6 (test is blind)"
echo "control: with LD_LIBRARY_PATH=. the loader tries ./libmpfr.so.6, and the check sees it"
echo "== 5. the installed Python module and a python: backend, with no variable pointing at them"
pydir=$(dirname "$(dirname "$(find "$T/prefix" -path '*/gemmcheck/worker.py' | head -n 1)")")
[ -d "$pydir" ] || fail "the Python module is not installed"
cat > "$T/mine.py" <<'PY'
import numpy as np
import gemmcheck
def product(a, b, c, alpha, beta):
    return alpha * (a @ b) + (beta * c if beta != 0 else 0)
mine = gemmcheck.Backend(product, [gemmcheck.Row("f64,f64,f64,f64", "compute=f64",
                                                 "b0 row_major d_separate scale_f64")])
PY
env -u GEMMCHECK_LIBRARY -u GEMMCHECK_BINARY -u PYTHONPATH "$bin" fuzz \
    --backend "python:$T/mine.py:mine" --cases 40 --seed 1 --jobs 1 --no-progress \
    > "$T/pyfuzz.txt" 2>&1 || { cat "$T/pyfuzz.txt"; fail "fuzz of a python: backend"; }
grep -E "^python:" "$T/pyfuzz.txt"
found=$(env -u GEMMCHECK_LIBRARY -u GEMMCHECK_BINARY PYTHONPATH="$pydir" /usr/bin/python3 -c \
    'import gemmcheck; print(gemmcheck.binary_path()); print(gemmcheck.library_path())')
[ "$(echo "$found" | head -n 1)" = "$bin" ] || fail "the module names $found, not $bin"
echo "module: command $(echo "$found" | head -n 1), library $(echo "$found" | tail -n 1)"
echo "installed: all checks passed"

#!/usr/bin/env bash
# The CUDA side on a machine with an NVIDIA GPU, in one run: build (Release, CUDA on) unless a
# build is given, test_cuda_backend, `gemmcheck backends cublas cublaslt`, a campaign on each
# CUDA backend (every declared row, guard pages and the concurrency check on), `certify` of
# each, PyTorch's matmul on CUDA checked against the exact oracle (scripts/device_torch.py),
# every finding dumped with `repro --dump`, and a summary (scripts/device_summary.py).
#
#   scripts/device-check.sh OUTDIR
#
# Everything lands in OUTDIR: logs, reports (JSON, JUnit, HTML), certificates, dumps,
# summary.txt. Idempotent: an existing build is reused, and the results of an earlier run in
# OUTDIR are replaced (a non-empty OUTDIR that no run wrote is refused).
# Each step is timed; once the run has used GCK_BUDGET seconds (default 450) the remaining
# steps are skipped, each with a note in the summary. Variables:
#   GCK_BUILD        a build directory that already holds gemmcheck (and tests/test_cuda_backend);
#                    default: build-device, configured and built here when it has no binary
#   GCK_TEST_LIBS    extra library directories for test_cuda_backend (Criterion's, when carried)
#   GCK_CAMPAIGN_S   seconds per campaign (90); GCK_CERTIFY_S certify's campaign (30);
#   GCK_LIMITS_S     seconds of the campaign of both backends under device memory budgets of
#                    1M to 256M (45; docs/RESOURCES.md);
#   GCK_CERTIFY      the backends to certify ("cublas cublaslt");
#   GCK_REPROS       a file of `BACKEND 'gck1 ...'` lines to run with `repro --dump` as well;
#   GCK_TORCH_S      seconds for the PyTorch check (30; 0 skips it); GCK_JOBS workers (4)
#   GCK_TORCH_FUZZ_S seconds for gemmcheck.fuzz of PyTorch, all operations and modes together
#                    (160; 0 skips it; a campaign needs well over 15 s, as each of its workers
#                    imports PyTorch and starts CUDA first); GCK_TORCH_JOBS its workers (4);
#                    GCK_TORCH_OPS the operations (matmul,addmm: torch.matmul, and torch.addmm
#                    with torch.baddbmm); GCK_TORCH_SETTINGS the modes (f32,f32+tf32,f16,bf16;
#                    device_torch_fuzz.py also has f16+rr and bf16+rr)
#   GCK_PYTHON       the Python that holds PyTorch (python3); GCK_TORCH_DEVICE its device (cuda;
#                    cpu for a dry run on a machine without a GPU)
# Exit status: 0 every step ran (findings are in the summary, not in the exit status), 1 a step
# failed to run or was skipped, 2 usage.
set -uo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: scripts/device-check.sh OUTDIR" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
# an earlier run's folder (it holds the marker) is emptied; any other non-empty folder is refused
if [ -n "$(ls -A "$out")" ] && [ ! -e "$out/.device-check" ]; then
    echo "device-check.sh: $out is not empty and not the folder of an earlier run" >&2
    exit 2
fi
find "$out" -mindepth 1 -delete
touch "$out/.device-check"
budget=${GCK_BUDGET:-450}
campaign_s=${GCK_CAMPAIGN_S:-90}
limits_s=${GCK_LIMITS_S:-45}
certify_s=${GCK_CERTIFY_S:-30}
torch_s=${GCK_TORCH_S:-30}
torch_fuzz_s=${GCK_TORCH_FUZZ_S:-160}
torch_jobs=${GCK_TORCH_JOBS:-4}
jobs=${GCK_JOBS:-4}
py=${GCK_PYTHON:-python3}
torch_device=${GCK_TORCH_DEVICE:-cuda}
build=${GCK_BUILD:-$root/build-device}
start=$(date +%s%N)
failed=0
steps="$out/steps.tsv"
printf 'step\tstatus\tseconds\tnote\n' >"$steps"

# whole seconds since the start, and a duration in seconds with one decimal
elapsed() { echo $((($(date +%s%N) - start) / 1000000000)); }
since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }

# step NAME LIMIT_S CMD...: run CMD with its output in NAME.log, under `timeout LIMIT_S`, unless
# the budget is spent; record its status and time.
step() {
    local name=$1 limit=$2
    shift 2
    local used
    used=$(elapsed)
    # skipped once the budget is nearly spent, or when the step's limit would overrun it by
    # more than a minute
    if [ $((used + limit)) -gt $((budget + 60)) ] && [ "$used" -gt $((budget - 30)) ]; then
        printf '%s\tskipped\t0\tbudget: %s of %s s used\n' "$name" "$used" "$budget" >>"$steps"
        echo "== $name: skipped (budget)"
        failed=1
        return 1
    fi
    echo "== $name (limit ${limit}s)"
    local t0 rc
    t0=$(date +%s%N)
    timeout -k 10 "$limit" "$@" </dev/null >"$out/$name.log" 2>&1
    rc=$?
    local t
    t=$(since "$t0")
    local status=ok
    [ $rc -eq 124 ] && status=timeout
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && status="exit $rc"
    printf '%s\t%s\t%s\t\n' "$name" "$status" "$t" >>"$steps"
    echo "   $status in ${t}s"
    tail -n 3 "$out/$name.log" | sed 's/^/   | /'
    return $rc
}

# ---- the machine ------------------------------------------------------------------------------
{
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(uname -srm)"
    ldd --version 2>&1 | head -n 1
    nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv 2>&1
    "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} >"$out/machine.txt"
cat "$out/machine.txt"

# The CUDA libraries: where the toolkit or the Python wheels put them, unless already set.
if [ -z "${GEMMCHECK_CUDA_LIBRARY_PATH:-}" ]; then
    dirs=""
    for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
        f=$(find /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu /opt \
            /usr/local/lib -name "$lib" 2>/dev/null | head -n 1)
        [ -n "$f" ] || continue
        d=$(dirname "$(readlink -f "$f")")
        case ":$dirs:" in *":$d:"*) ;; *) dirs=${dirs:+$dirs:}$d ;; esac
    done
    [ -n "$dirs" ] && export GEMMCHECK_CUDA_LIBRARY_PATH=$dirs
fi
echo "GEMMCHECK_CUDA_LIBRARY_PATH=${GEMMCHECK_CUDA_LIBRARY_PATH:-}" | tee -a "$out/machine.txt"

# ---- build -------------------------------------------------------------------------------------
if [ ! -x "$build/gemmcheck" ]; then
    step build 300 bash -c "cmake -S '$root' -B '$build' -DCMAKE_BUILD_TYPE=Release \
        -DGEMMCHECK_CUDA=ON && cmake --build '$build' -j$(nproc) --target gemmcheck_cli \
        gemmcheck test_cuda_backend" || failed=1
else
    printf 'build\treused\t0\t%s\n' "$build" >>"$steps"
fi
gck=$build/gemmcheck
if [ ! -x "$gck" ]; then
    echo "no gemmcheck binary in $build" | tee -a "$out/machine.txt"
    exit 1
fi

# ---- what the backends say ---------------------------------------------------------------------
step backends 60 "$gck" backends cublas cublaslt || failed=1
cp "$out/backends.log" "$out/backends.txt"
step unit 120 env LD_LIBRARY_PATH="${GCK_TEST_LIBS:+$GCK_TEST_LIBS:}${LD_LIBRARY_PATH:-}" \
    "$build/tests/test_cuda_backend" --jobs 2 --verbose || failed=1

# ---- campaigns -----------------------------------------------------------------------------------
for be in cublas cublaslt; do
    step "fuzz-$be" $((campaign_s + 60)) "$gck" fuzz --backend "$be" --time "$campaign_s" \
        --seed 46 --jobs "$jobs" --no-progress --report "$out/fuzz-$be.json" \
        --junit "$out/fuzz-$be.xml" --html "$out/fuzz-$be.html" \
        --findings "$out/fuzz-$be.findings.jsonl"
    [ $? -le 1 ] || failed=1 # exit 1 = findings, read in the summary
done
# both backends under memory budgets, on the device and the host: an error is counted, a
# wrong result, hang, crash or broken next call is a finding naming its budget
step budget $((limits_s + 60)) "$gck" fuzz --backend cublas --backend cublaslt --time "$limits_s" \
    --memory-budget 1M:256M --seed 47 --jobs "$jobs" --no-progress \
    --report "$out/fuzz-budget.json" --findings "$out/fuzz-budget.findings.jsonl"
[ $? -le 1 ] || failed=1

# every distinct finding's operands, for reading by hand (ten per backend at most), and any
# reproducers listed in GCK_REPROS (a file of `BACKEND 'gck1 ...'` lines): `repro --dump`
for be in cublas cublaslt budget; do
    f="$out/fuzz-$be.findings.jsonl"
    [ -s "$f" ] || continue
    "$py" -c '
import json, shlex, sys
lines = [line for line in open(sys.argv[1]) if line.strip()][:10]
for line in lines:
    args = shlex.split(json.loads(line)["reproduce"])[2:]  # after "gemmcheck repro"
    print(" ".join(shlex.quote(a) for a in args))' "$f" >"$out/repros-$be.txt"
done
if [ -n "${GCK_REPROS:-}" ] && [ -s "$GCK_REPROS" ]; then
    while read -r be r; do
        [ -n "$be" ] && echo "--backend $be $r" >>"$out/repros-extra.txt"
    done <"$GCK_REPROS"
fi
for list in "$out"/repros-*.txt; do
    [ -s "$list" ] || continue
    tag=$(basename "$list" .txt)
    tag=${tag#repros-}
    n=0
    while IFS= read -r line; do
        n=$((n + 1))
        mkdir -p "$out/dump-$tag-$n"
        eval "step repro-$tag-$n 60 \"\$gck\" repro --dump \"\$out/dump-\$tag-\$n\" $line"
    done <"$list"
done

# ---- certificates -------------------------------------------------------------------------------
for be in ${GCK_CERTIFY:-cublas cublaslt}; do
    step "certify-$be" $((certify_s + 150)) "$gck" certify --backend "$be" --time "$certify_s" \
        --out "$out/certify-$be.json" --html "$out/certify-$be.html" || failed=1
done

# ---- PyTorch on CUDA -------------------------------------------------------------------------
if [ "$torch_s" -gt 0 ]; then
    step torch $((torch_s + 60)) env PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" \
        GEMMCHECK_LIBRARY="$build/libgemmcheck.so.0" PYTHONUNBUFFERED=1 \
        "$py" "$root/scripts/device_torch.py" --device "$torch_device" --time "$torch_s" \
        --out "$out/torch.jsonl" --dumps "$out/torch-dumps" || failed=1
fi

# torch.matmul and torch.addmm/baddbmm through the Python fuzz: gemmcheck's own generator,
# guard, checks and shrinker, with workers that are fresh interpreters of this Python
# (scripts/device_torch_fuzz.py)
if [ "$torch_fuzz_s" -gt 0 ]; then
    step torch-fuzz $((torch_fuzz_s + 120)) env \
        PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" \
        GEMMCHECK_LIBRARY="$build/libgemmcheck.so.0" GEMMCHECK_BINARY="$gck" \
        GEMMCHECK_PYTHON="$(command -v "$py")" GCK_TORCH_DEVICE="$torch_device" \
        PYTHONUNBUFFERED=1 "$py" "$root/scripts/device_torch_fuzz.py" --time "$torch_fuzz_s" \
        --jobs "$torch_jobs" --seed 46 --shrink-time 10 --out "$out/torch-fuzz" \
        --settings "${GCK_TORCH_SETTINGS:-f32,f32+tf32,f16,bf16}" \
        --ops "${GCK_TORCH_OPS:-matmul,addmm}"
    [ $? -le 1 ] || failed=1 # exit 1 = findings, read in the summary
fi

# ---- summary -------------------------------------------------------------------------------------
printf 'total\t-\t%s\t\n' "$(since "$start")" >>"$steps"
"$py" "$root/scripts/device_summary.py" "$out" >"$out/summary.txt" 2>&1 || failed=1
cat "$out/summary.txt"
exit $failed

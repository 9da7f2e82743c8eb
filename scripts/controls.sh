#!/usr/bin/env bash
# The control suite: a fuzz campaign through `cblas:` on every CBLAS implementation Debian 12
# ships for x86-64 that is installed here (scripts/install-deps.sh installs them), the way a
# user checks a library gemmcheck has never seen, and on oneDNN's matmul and sgemm (`onednn`). Prints one line per library (cases, cases with
# findings, distinct findings) and checks every distinct finding against the documented
# deviations in scripts/controls-known.txt (docs/DEVIATIONS.md explains each): a finding not
# listed there fails the suite, so does a library that cannot run.
#
#   scripts/controls.sh [--time S] [--seed N] [--jobs N] [--libs REGEX] [--out DIR]
#                       [--gemmcheck PATH] [--load] [--fuzz-arg ARG]...
#
# --time S     seconds per library (default 30; CI runs a few seconds each)
# --seed N     campaign seed (default 1)
# --jobs N     workers per campaign (default: one per core)
# --libs REGEX only the libraries whose label matches (e.g. 'blis|atlas')
# --out DIR    reports go here (default controls-out/)
# --load       keep both cores busy with a second process (stress-ng, or busy loops) while
#              the campaigns run: a correct library must still show no `hang`
# --fuzz-arg A one more argument for every campaign, e.g. --fuzz-arg --memory-budget
#              --fuzz-arg 64K:512M (calls under limits, docs/RESOURCES.md)
# Exit status: 0 every finding documented, 1 an undocumented finding, 2 set-up error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
time_s=30 seed=1 out=controls-out gck="$here/../build/gemmcheck" load=0 jobs=$(nproc) only=.
extra=()
while (($#)); do
  case "$1" in
    --time) time_s=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --libs) only=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --gemmcheck) gck=$2; shift 2 ;;
    --load) load=1; shift ;;
    --fuzz-arg) extra+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "controls.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$gck" ] || { echo "controls.sh: no gemmcheck binary at $gck (build first)" >&2; exit 2; }
known="$here/controls-known.txt"
lib=/usr/lib/x86_64-linux-gnu
# label, backend kind and library: every implementation and threading flavour Debian 12
# packages, the ILP64 builds (64-bit integer arguments) through cblas64:
libs=(
  "netlib cblas $lib/blas/libblas.so.3"
  "openblas-pthread cblas $lib/openblas-pthread/libblas.so.3"
  "openblas-openmp cblas $lib/openblas-openmp/libblas.so.3"
  "openblas-serial cblas $lib/openblas-serial/libblas.so.3"
  "blis-pthread cblas $lib/blis-pthread/libblas.so.3"
  "blis-openmp cblas $lib/blis-openmp/libblas.so.3"
  "blis-serial cblas $lib/blis-serial/libblas.so.3"
  "atlas cblas $lib/atlas/libblas.so.3"
  "gsl cblas $lib/libgslcblas.so.0"
  "netlib64 cblas64 $lib/blas64/libblas64.so.3"
  "openblas64-pthread cblas64 $lib/openblas64-pthread/libblas64.so.3"
  "openblas64-openmp cblas64 $lib/openblas64-openmp/libblas64.so.3"
  "openblas64-serial cblas64 $lib/openblas64-serial/libblas64.so.3"
  "blis64-pthread cblas64 $lib/blis64-pthread/libblas64.so.3"
  "blis64-openmp cblas64 $lib/blis64-openmp/libblas64.so.3"
  "blis64-serial cblas64 $lib/blis64-serial/libblas64.so.3"
  # oneDNN (libdnnl2): its matmul primitive and its sgemm, built-in backends (no path)
  "onednn onednn $lib/libdnnl.so.2"
  "onednn-sgemm onednn:sgemm $lib/libdnnl.so.2"
)
mkdir -p "$out"
loadpid=""
if ((load)); then
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$(nproc)" --quiet & loadpid=$!
  else
    for _ in $(seq "$(nproc)"); do (while :; do :; done) & loadpid="$loadpid $!"; done
  fi
  trap 'kill $loadpid 2>/dev/null' EXIT
fi
printf '%-18s %-36s %8s %9s %9s %s\n' library package cases findings distinct undocumented
rc=0
for entry in "${libs[@]}"; do
  read -r name kind path <<<"$entry"
  [[ $name =~ $only ]] || continue
  if [ ! -e "$path" ]; then
    echo "controls.sh: $name: $path is not installed (scripts/install-deps.sh)" >&2
    rc=2
    continue
  fi
  real=$(readlink -f "$path")
  pkg=$(dpkg -S "$real" 2>/dev/null | head -1 | cut -d: -f1)
  package="${pkg:-?}=$( [ -n "$pkg" ] && dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null)"
  report="$out/$name.json"
  backend="$kind:$path"
  [[ $kind == onednn* ]] && backend=$kind # built in: the library is found by name
  "$gck" fuzz --backend "$backend" --time "$time_s" --seed "$seed" --jobs "$jobs" \
    --report "$report" "${extra[@]}" >"$out/$name.log" 2>&1
  st=$?
  if ((st > 1)); then
    echo "controls.sh: $name: the campaign failed (exit $st), see $out/$name.log" >&2
    rc=2
    continue
  fi
  # one line of counts, then one line per undocumented finding
  python3 - "$report" "$name" "$known" "$gck" "$backend" "$package" >"$out/$name.check" <<'PY'
import json, re, subprocess, sys
report, name, known_path, gck, backend, package = sys.argv[1:]
r = json.load(open(report))
version = " ".join(b.get("version", "") for b in r.get("environment", {}).get("backends", []))
known = []
for line in open(known_path):
    line = line.split("#", 1)[0].split()
    if line:
        known.append(line)  # library-regex kind [qualifiers] (scripts/controls-known.txt)
def repro(case, *flags):
    return subprocess.run([gck, "repro", "--backend", backend, *flags, case],
                          capture_output=True, text=True)
def passes(case, *flags):
    return repro(case, *flags).returncode == 0
# what an over-read's case does with room after its operands: it passes, or its findings (the
# "  KIND: details" lines of repro's verdict) are other documented deviations and none of them
# says that something was written out of place (BLIS's NaN·0 tiles on the same case)
HIDDEN = {"out_of_tolerance", "nonfinite_mismatch", "improbable_error", "nondeterministic",
          "unimplemented", "error", "fpenv_modified"}
WRITTEN = {"crash", "hang", "out_of_bounds_write", "input_modified"}
def runs_with_room(f, case):
    p = repro(case, "--no-guard-page")
    if p.returncode == 0:
        return True
    if p.returncode != 1:
        return False
    found = [m.groups() for m in re.finditer(r"^  ([a-z_]+): (.*)$", p.stdout, re.M)
             if m.group(1) in HIDDEN | WRITTEN]
    return bool(found) and all(
        kind in HIDDEN and documented(dict(f, kind=kind, details=det), room=False)
        for kind, det in found)
def documented(f, room=True):
    for k in known:
        if not re.fullmatch(k[0], name) or k[1] != f["kind"]:
            continue
        opts = dict(o.split("=", 1) if "=" in o else (o, "") for o in k[2:])
        if "types" in opts and not re.fullmatch(opts["types"], f["signature"].split("|")[2]):
            continue
        # the backend's version line (the ISA oneDNN runs is in it)
        if "version" in opts and not re.search(opts["version"], version):
            continue
        # a known defect of a class of cases or of results: the reproducer string or the
        # finding's details match these regular expressions
        if "case" in opts and not re.search(opts["case"], f["case"]):
            continue
        if "details" in opts and not re.search(opts["details"], f["details"]):
            continue
        # a known over-read: the case, without its memory budget and thread limit (an over-read
        # needs neither; a crash they cause is not one), crashes, and runs once the operands
        # end 4 KiB before their guard pages with no finding but documented ones
        plain = re.sub(r" (mem|thr)=\d+", "", f["case"])
        if "overread" in opts and (not room or passes(plain) or not runs_with_room(f, plain)):
            continue
        # a known race between concurrent calls: the finding came from the concurrency check,
        # and the same calls made one at a time, 100 times in one process, agree
        if "concurrent" in opts and ("--concurrency" not in f.get("repro_flags", "")
                                     or not passes(f["case"], "--repeat", "100")):
            continue
        return True
    return False
s = r["summary"]
bad = [f for f in r["findings"] if not documented(f)]
print(f'{name:<18} {package[:36]:<36} {s["cases"]:>8} {s["outcomes"]["findings"]:>9} '
      f'{s["distinct_findings"]:>9} {len(bad)}')
for f in bad:
    print(f'  undocumented {f["kind"]}: {f["details"][:160]}\n    {f["reproduce"]}')
PY
  cat "$out/$name.check"
  if [ "$(head -1 "$out/$name.check" | awk '{print $NF}')" != 0 ]; then rc=$((rc > 1 ? rc : 1)); fi
done
exit $rc

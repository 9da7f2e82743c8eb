"""Fuzz campaign benchmark: median time to the first finding of each purpose-built fault, and
cases per second on the default backends, all measured in one run.

usage: bench/fuzz_detect.py BUILD_DIR [--seeds N] [--limit S] [--mix-seconds S]
                             [--faults NAME,...]

For every faulty test backend (tests/faulty_backends.c) and seeds 1..N, runs
  gemmcheck fuzz --backend plugin:BUILD/tests/libgck_faulty.so:FAULT --seed S --time LIMIT
                 --stop-on-finding --jobs 2 --report R
(LIMIT 60 s by default) and reads the first finding of an expected kind from the report
(time_s: seconds since the campaign started), printing which kinds found it. Then runs the
default mix (ref, openblas, blis) for S seconds each (0: skip) and prints cases/s, with each
backend's rate relative to ref's in the same run. BUILD_DIR may be an older build (the
detection figures before a change): kinds it does not know are simply never found.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

FAULTS = [
    ("tolerance", "out_of_tolerance"), ("nan", "nonfinite_mismatch"),
    ("betanan", "nonfinite_mismatch"), ("oob", "out_of_bounds_write"),
    ("input", "input_modified"), ("segv", "crash"), ("hang", "hang"),
    ("nondet", "nondeterministic"), ("racy", "nondeterministic"),
    ("unimpl", "unimplemented"), ("error", "error"),
    # under the hard bound of releases before the output interval and the statistical tier
    ("trunc", "out_of_tolerance|improbable_error"), ("flush", "out_of_tolerance|improbable_error"),
    ("ulpup", "out_of_tolerance|improbable_error"), ("e4", "out_of_tolerance|improbable_error"),
]


def campaign(exe, backend, seed, seconds, report, extra=()):
    cmd = [exe, "fuzz", "--backend", backend, "--seed", str(seed), "--time", str(seconds),
           "--jobs", "2", "--report", report, "--no-progress", *extra]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    with open(report) as f:
        return json.load(f)


def main():
    build = sys.argv[1]
    args = sys.argv[2:]
    seeds = int(args[args.index("--seeds") + 1]) if "--seeds" in args else 5
    mix = float(args[args.index("--mix-seconds") + 1]) if "--mix-seconds" in args else 20
    limit = float(args[args.index("--limit") + 1]) if "--limit" in args else 60
    only = args[args.index("--faults") + 1].split(",") if "--faults" in args else None
    exe = os.path.join(build, "gemmcheck")
    plugin = os.path.join(build, "tests", "libgck_faulty.so")
    tmp = tempfile.mkdtemp()
    print(f"time to first finding, {seeds} seeds each, 2 workers on {os.cpu_count()} cores")
    print(f"{'fault':10s} {'median s':>9s} {'max s':>7s} {'found':>6s} {'vs 10 s target':>15s}  first kinds")
    for fault, kinds in FAULTS:
        if only and fault not in only:
            continue
        times, seen = [], set()
        for seed in range(1, seeds + 1):
            extra = ["--stop-on-finding"]
            if fault == "racy":
                extra += ["--concurrency-share", "0.05"]
            rep = campaign(exe, f"plugin:{plugin}:{fault}", seed, limit, f"{tmp}/r.json", extra)
            hits = [f for f in rep["findings"] if f["kind"] in kinds.split("|")]
            times.append(min(f["time_s"] for f in hits) if hits else float("inf"))
            seen.update(f["kind"] for f in hits)
        found = sum(t != float("inf") for t in times)
        med = statistics.median(times)
        print(f"{fault:10s} {med:9.2f} {max(times):7.2f} {found:>3d}/{seeds:<2d} {med / 10:14.2f}x"
              f"  {','.join(sorted(seen)) or '-'}")
    print()
    if mix <= 0:
        return
    print(f"default mix, {mix:g} s per backend, seed 1")
    print(f"{'backend':10s} {'cases':>7s} {'cases/s':>8s} {'vs ref':>7s}")
    ref_rate = None
    for backend in ("ref", "openblas", "blis"):
        rep = campaign(exe, backend, 1, mix, f"{tmp}/m.json")
        s = rep["summary"]
        rate = s["cases_per_second"]
        ref_rate = ref_rate or rate
        print(f"{backend:10s} {s['cases']:7d} {rate:8.1f} {rate / ref_rate:6.2f}x")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Outcome classes of campaigns under a memory budget or a thread limit, one Markdown row per
backend, from gemmcheck fuzz reports (docs/RESOURCES.md, docs/DEVIATIONS.md):

    scripts/limits_table.py [--gemmcheck BINARY] REPORT.json...

cases; calls refused cleanly (an error status, the next call right); and the distinct findings
(kind, type tuple, shape class) by what happened under the limit: hang, exit (the process exited), abort (signal 6), fault
(another signal), wrong (a numeric finding), next (the call after a refusal failed), and
"other" for findings that do not need the limit: with --gemmcheck, each finding's case is run
again without its mem= and thr= (`repro --no-rerun`), and one that fails there too is a defect
of the library without any limit (BLIS's over-reads and NaN*0 tiles, docs/DEVIATIONS.md)."""
import json
import re
import subprocess
import sys

NUMERIC = {"out_of_tolerance", "nonfinite_mismatch", "improbable_error", "out_of_bounds_write",
           "input_modified"}


def fails_without_limits(binary, f):
    case = re.sub(r" (mem|thr)=\d+", "", f["case"])
    r = subprocess.run([binary, "repro", "--no-rerun", "--backend", f["backend"], case],
                       capture_output=True, text=True, timeout=600)
    return r.returncode != 0


def klass(f, binary):
    d = f["details"]
    if binary and fails_without_limits(binary, f):
        return "other"
    if "in the next call, without limits" in d:
        return "next"
    if not re.search(r"under a (memory budget|limit of)", d):
        return "other"
    if f["kind"] == "hang":
        return "hang"
    if f["kind"] == "crash":
        if "exited with status" in d:
            return "exit"
        return "abort" if "signal 6 " in d else "fault"
    return "wrong" if f["kind"] in NUMERIC else f["kind"]


def main(args):
    binary = None
    if args[:1] == ["--gemmcheck"]:
        binary, args = args[1], args[2:]
    paths = args
    cols = ["hang", "exit", "abort", "fault", "wrong", "next", "other"]
    print("| backend | cases | refused cleanly | " + " | ".join(cols) + " |")
    print("|---|---|---|" + "---|" * len(cols))
    for path in paths:
        r = json.load(open(path))
        per = {}
        for e in r["summary"]["support_matrix"]:
            b = per.setdefault(e["backend"], {"cases": 0, "refused": 0})
            b["cases"] += e["pass"] + e["fail"] + e["unsupported"]
            b["refused"] += e["refused_under_limits"]
        found = {}
        for f in r["findings"]:
            c = found.setdefault(f["backend"], {})
            k = klass(f, binary)
            c[k] = c.get(k, 0) + 1
        for name, b in per.items():
            c = found.get(name, {})
            print(f"| {name} | {b['cases']:,} | {b['refused']:,} | " +
                  " | ".join(str(c.get(k, 0)) for k in cols) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])

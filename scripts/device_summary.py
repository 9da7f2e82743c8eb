#!/usr/bin/env python3
"""The summary of a scripts/device-check.sh run, from the files it wrote into OUTDIR: the steps
with their times, the machine, each campaign's rows exercised, cases and findings by cause,
each certificate's rows and fingerprint, the PyTorch table and the PyTorch campaigns.

    device_summary.py OUTDIR

Reads only; a file that is missing or unreadable is named, not fatal (a skipped step leaves
none)."""
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"  ({os.path.basename(path)}: {e.__class__.__name__}: {e})")
        return None


def campaign(out, be):
    r = load(os.path.join(out, f"fuzz-{be}.json"))
    if r is None:
        return
    s = r["summary"]
    o = s["outcomes"]
    print(f"  {be}: {s['cases']} cases in {s['seconds']:.0f} s ({o['pass']} pass, "
          f"{o['unsupported']} unsupported, {o['findings']} with findings), "
          f"{s['distinct_findings']} distinct findings, seed {s['seed']}")
    print(f"    {'backend':9} {'tuple':24} {'compute':8} {'pass':>6} {'fail':>5} {'unsup':>6}")
    for t in s["support_matrix"]:
        print(f"    {t.get('backend', be):9} {t['types']:24} {t['compute']:8} {t['pass']:6} "
              f"{t['fail']:5} {t['unsupported']:6}"
              f"{'' if t.get('fuzzed', True) else '  (not fuzzed)'}")
    refused = sum(t.get("refused_under_limits", 0) for t in s["support_matrix"])
    if refused:
        print(f"    first calls refused under their limits (counted, not findings): {refused}")
    kinds = {k: n for k, n in s["cases_by_kind"].items() if n}
    print(f"    cases by kind: {kinds or 'none'}")
    for c in r["causes"]:
        print(f"    cause: {c['kind']} / {c['rule']}: {c['findings']} findings, {c['cases']} cases,"
              f" {c['tuples']} tuples; smallest: {c['reproduce']}")


def certificate(out, be):
    c = load(os.path.join(out, f"certify-{be}.json"))
    if c is None:
        return
    p = c["probed"]
    print(f"  {be}: {p.get('version', '')}; available {p.get('available')}")
    for row in p.get("rows", []):
        sup = row.get("support", {})
        print(f"    row {row['tuple']}: {sup.get('status')}"
              f"{' (' + sup['detail'] + ')' if sup.get('detail') else ''}")
        for fp in row.get("fingerprint", []):
            print(f"      {fp['property']:28} {fp['value']}")
    camp = c.get("campaign")
    if camp:
        print(f"    campaign: {json.dumps(camp)[:300]}")


def main():
    if len(sys.argv) != 2:
        print("usage: device_summary.py OUTDIR", file=sys.stderr)
        return 2
    out = sys.argv[1]
    print("== steps")
    try:
        print(open(os.path.join(out, "steps.tsv")).read().rstrip())
    except OSError as e:
        print(f"  ({e})")
    print("== machine")
    for name in ("machine.txt", "backends.txt"):
        try:
            print(open(os.path.join(out, name)).read().rstrip())
        except OSError as e:
            print(f"  ({e})")
    print("== campaigns")
    for be in ("cublas", "cublaslt", "budget"):
        campaign(out, be)
    print("== certificates")
    for be in ("cublas", "cublaslt"):
        certificate(out, be)
    print("== PyTorch")
    try:
        lines = open(os.path.join(out, "torch.log")).read().rstrip().splitlines()
        print("\n".join(lines[-8:]))
    except OSError as e:
        print(f"  ({e})")
    print("== PyTorch through gemmcheck.fuzz")
    try:
        lines = open(os.path.join(out, "torch-fuzz.log")).read().rstrip().splitlines()
        print("\n".join(ln for ln in lines if not ln.startswith("      gemmcheck repro")))
    except OSError as e:
        print(f"  ({e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

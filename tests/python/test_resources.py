"""Calls under a memory budget and a thread limit (docs/RESOURCES.md): the test backends of
tests/faulty_backends.c that hang, exit, return garbage or poison their next call when an
allocation fails, or crash when a thread cannot be started, are each found with the right kind
and the limit in the reproducer; those that fail cleanly or do without the thread are not; bad
limits are one-line usage errors; and limits never turn gemmcheck's own work into a finding."""
import json
import os
import subprocess

import pytest
from conftest import SOURCE

FAULTY = os.environ.get("GEMMCHECK_FAULTY_PLUGIN", "")
CASE = ("gck1 m=30 n=20 k=10 order=col ta=N tb=N types=f32,f32,f32,f32 compute=f32 scale=f32 "
        "alpha=1 beta=0 lda=30 ldb=10 ldc=30 ldd=30 d=sep batch=1 sa=0 sb=0 sc=0 sd=0 "
        "off=0,0,0,0 vab=unif vc=unif sp=0 cnan=0 seed=1")


def plugin(name):
    if not FAULTY:
        pytest.fail("GEMMCHECK_FAULTY_PLUGIN is not set (ctest sets it)")
    return f"plugin:{FAULTY}:{name}"


def repro(binary, backend, case, *flags):
    return subprocess.run([binary, "repro", "--backend", backend, "--timeout", "2", *flags, case],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("fault,limit,kind,words", [
    ("oomhang", "mem=1000000", "hang", "the call ran under a memory budget of 1000000 bytes"),
    ("oomexit", "mem=1000000", "crash",
     "exited with status 1 inside the backend's first call under a memory budget of 1000000"),
    ("oomgarbage", "mem=1000000", "nonfinite_mismatch",
     "the call ran under a memory budget of 1000000 bytes"),
    ("oompoison", "mem=1000000", "error",
     "in the next call, without limits, after the first call under a memory budget of 1000000 "
     "bytes was refused"),
    ("thrcrash", "thr=0", "crash", "inside the backend's first call under a limit of 0 threads"),
    # the refused call's own write out of place: a finding of that call, not of the next
    ("oomoob", "mem=1000000", "out_of_bounds_write",
     "(in the first call, which returned an error under its limits)"),
])
def test_a_backend_that_mishandles_a_refused_resource_is_found(gemmcheck_binary, fault, limit,
                                                                kind, words):
    r = repro(gemmcheck_binary, plugin(fault), f"{CASE} {limit}")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert f"verdict:  FINDINGS: {kind}" in out, out
    assert words in out, out
    # the reproducer carries the limit
    assert any(line.startswith("repro:") and limit in line for line in out.splitlines()), out


@pytest.mark.parametrize("fault,limit,note", [
    ("oomclean", "--memory-budget", "limits:   the first call was refused (counted, not a "
                                    "finding): CUBLAS_STATUS_ALLOC_FAILED"),
    ("thrclean", "--thread-limit", "limits:   1 thread(s) refused to the first call"),
])
def test_a_backend_that_handles_a_refused_resource_passes(gemmcheck_binary, fault, limit, note):
    value = "1M" if limit == "--memory-budget" else "0"
    r = repro(gemmcheck_binary, plugin(fault), CASE, limit, value)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "verdict:  pass" in out and note in out, out
    # without the limit the same backend is refused nothing
    plain = repro(gemmcheck_binary, plugin(fault), CASE)
    assert plain.returncode == 0 and "limits:" not in plain.stdout, plain.stdout


def test_gemmcheck_own_work_never_counts_against_a_budget(gemmcheck_binary):
    # one byte: gemmcheck's buffers, checks and its worker's frames are outside the limit, so
    # the reference GEMM (no allocation in its call) passes and kernels/ refuses cleanly
    ref = repro(gemmcheck_binary, "ref", f"{CASE} mem=1")
    assert ref.returncode == 0 and "verdict:  pass" in ref.stdout, ref.stdout + ref.stderr
    big = CASE.replace("m=30 n=20 k=10", "m=300 n=300 k=300").replace(
        "lda=30 ldb=10 ldc=30 ldd=30", "lda=300 ldb=300 ldc=300 ldd=300")
    ker = repro(gemmcheck_binary, "kernels", f"{big} mem=1")
    assert ker.returncode == 0, ker.stdout + ker.stderr
    assert "limits:   the first call was refused" in ker.stdout, ker.stdout


@pytest.mark.parametrize("args,words", [
    (["--memory-budget", "0"], "--memory-budget '0' must be bytes"),
    (["--memory-budget", "12Q"], "--memory-budget '12Q' must be bytes"),
    (["--memory-budget", "8M:1M"], "LO:HI with LO <= HI"),
    (["--thread-limit", "-1"], "--thread-limit '-1' must be a thread count"),
])
def test_bad_limits_are_one_line_usage_errors(gemmcheck_binary, tmp_path, args, words):
    for cmd in (["fuzz", "--backend", "ref", "--time", "1"], ["repro", "--backend", "ref"]):
        extra = [CASE] if cmd[0] == "repro" else []
        r = subprocess.run([gemmcheck_binary, *cmd, *args, *extra], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, r.stdout + r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], r.stderr
    bad = repro(gemmcheck_binary, "ref", f"{CASE} mem=0")
    assert bad.returncode == 2 and "mem='0' must be a memory budget" in bad.stderr, bad.stderr


def test_a_campaign_counts_clean_refusals_and_finds_a_poisoned_next_call(gemmcheck_binary,
                                                                         tmp_path):
    clean = subprocess.run([gemmcheck_binary, "fuzz", "--backend", plugin("oomclean"),
                            "--memory-budget", "64K:64M", "--time", "3", "--seed", "7",
                            "--jobs", "1", "--report", "clean.json"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    rep = json.loads((tmp_path / "clean.json").read_text())
    refused = sum(e["refused_under_limits"] for e in rep["summary"]["support_matrix"])
    assert refused > 0, clean.stdout
    assert f"refused {refused} first call(s) with an error" in clean.stdout, clean.stdout
    poison = subprocess.run([gemmcheck_binary, "fuzz", "--backend", plugin("oompoison"),
                             "--memory-budget", "64K:1M", "--time", "3", "--seed", "7",
                             "--jobs", "1", "--report", "poison.json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert poison.returncode == 1, poison.stdout + poison.stderr
    found = json.loads((tmp_path / "poison.json").read_text())["findings"]
    assert found and all(f["kind"] == "error" for f in found), found[:2]
    assert all(" mem=" in f["case"] for f in found), found[:2]


def test_a_thread_limit_that_cannot_be_enforced_is_refused_not_ignored(gemmcheck_binary,
                                                                       tmp_path):
    # a Python worker loads libgemmcheck privately: its libraries would start threads with the
    # C library's pthread_create, so the limit would silently not hold
    backend = f"python:{SOURCE / 'tests/python/backends/pyfns.py'}:correct"
    r = subprocess.run([gemmcheck_binary, "fuzz", "--backend", backend, "--thread-limit", "1",
                        "--time", "1"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--thread-limit cannot be enforced on python:" in lines[0], lines
    one = subprocess.run([gemmcheck_binary, "repro", "--backend", backend, f"{CASE} thr=1"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert one.returncode == 2, one.stdout + one.stderr
    assert "a thread limit cannot be enforced in this process" in one.stderr, one.stderr


def certify(binary, tmp_path, fault, out, *, work=32, timeout="5"):
    env = dict(os.environ, GCK_FAULTY_PLAIN="f64", GCK_FAULTY_WORK_MIB=str(work))
    r = subprocess.run([binary, "certify", "--backend", plugin(fault), "--time", "0",
                        "--appetite-timeout", timeout, "--out", out], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads((tmp_path / out).read_text())["probed"]["rows"]
    return r.stdout, {row["tuple"]: row["appetite"] for row in rows if "appetite" in row}


def test_certify_measures_the_appetite_and_compare_flags_its_growth_and_a_new_hang(
        gemmcheck_binary, tmp_path):
    out, base = certify(gemmcheck_binary, tmp_path, "oomclean", "base.json")
    assert base, out
    for tuple_, a in base.items():
        # a 32 MiB workspace on top of what the process holds: found to an eighth of an octave
        assert 32 << 20 <= a["bytes"] <= 40 << 20, (tuple_, a)
        assert a["failing_below"]["outcome"].startswith("refused (CUBLAS_STATUS_ALLOC_FAILED"), a
        assert a["probes"] <= 12, a
        assert f"memory appetite, {tuple_}: " in out, out
    _, grown = certify(gemmcheck_binary, tmp_path, "oomclean", "grown.json", work=64)
    assert all(grown[t]["bytes"] >= 2 * base[t]["bytes"] * 0.9 for t in base), grown
    cmp = subprocess.run([gemmcheck_binary, "compare", "base.json", "grown.json"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert cmp.returncode == 1, cmp.stdout
    assert "[REGRESSION: resources]" in cmp.stdout and "memory appetite" in cmp.stdout, cmp.stdout
    back = subprocess.run([gemmcheck_binary, "compare", "grown.json", "base.json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert back.returncode == 0 and "[resources]" in back.stdout, back.stdout
    _, hang = certify(gemmcheck_binary, tmp_path, "oomhang", "hang.json", timeout="1")
    assert all(a["failing_below"]["outcome"] == "hang" for a in hang.values()), hang
    cmp = subprocess.run([gemmcheck_binary, "compare", "base.json", "hang.json"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert cmp.returncode == 1, cmp.stdout
    assert "below the appetite: refused (" in cmp.stdout and "-> hang" in cmp.stdout, cmp.stdout

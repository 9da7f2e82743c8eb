"""A memory budget on the CUDA backends (docs/RESOURCES.md), on the host: the fake CUDA
runtime, cuBLAS and cuBLASLt of tests/fake_cuda stand in for a device whose memory is not the
process's address space. The budget limits what the library allocates on the device in the
call (a fresh cuBLAS handle and its scratch, cuBLASLt's workspace), never gemmcheck's own
copies of the operands; a library that fails cleanly passes with the refusal counted; one that
returns garbage, poisons its next call or faults when a device allocation fails is found with
the budget in the reproducer; and certify measures the device appetite. Built where the CUDA
toolkit's headers are (ctest sets GEMMCHECK_FAKE_CUDA); a build without them has no CUDA
backends to test."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SOURCE

FAKE = os.environ.get("GEMMCHECK_FAKE_CUDA", "")
pytestmark = pytest.mark.skipif(not FAKE, reason="built without the CUDA headers: no CUDA "
                                "backends and no fake CUDA libraries (GEMMCHECK_FAKE_CUDA)")
MIB = 1 << 20
CASE = ("gck1 m=200 n=150 k=100 order=col ta=N tb=T types=f32,f32,f32,f32 compute=f32 "
        "scale=f32 alpha=1 beta=0.5 lda=200 ldb=150 ldc=200 ldd=200 d=c batch=1 sa=0 sb=0 sc=0 "
        "sd=0 off=0,0,0,0 vab=unif vc=unif sp=0 cnan=0 seed=3")


def run(binary, args, tmp_path, **env):
    e = dict(os.environ, GEMMCHECK_CUDA_LIBRARY_PATH=FAKE, GCK_FAKE_CUDA_LOG=str(tmp_path / "log"))
    e.update({k: str(v) for k, v in env.items()})
    return subprocess.run([binary, *args], cwd=tmp_path, env=e, capture_output=True, text=True,
                          timeout=300)


def repro(binary, backend, case, tmp_path, **env):
    r = run(binary, ["repro", "--backend", backend, "--timeout", "5", case], tmp_path, **env)
    return r, r.stdout + r.stderr


def test_the_fake_device_is_what_the_backends_run_on(gemmcheck_binary, tmp_path):
    r = run(gemmcheck_binary, ["backends", "cublas", "cublaslt"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("gemmcheck's fake device (tests/fake_cuda)") == 2, r.stdout
    for backend in ("cublas", "cublaslt"):
        ok, out = repro(gemmcheck_binary, backend, CASE, tmp_path)
        assert ok.returncode == 0 and "verdict:  pass" in out and "limits:" not in out, out


@pytest.mark.parametrize("budget,refusal,log", [
    (2 * MIB, "cublasCreate (in the call, under its budget)", "cublasCreate: 4194304 bytes"),
    (8 * MIB, "cublasGemmEx", "gemm: 8388608 bytes of scratch"),
    (16 * MIB, None, None),
])
def test_cublas_under_a_device_budget_refuses_cleanly_or_runs(gemmcheck_binary, tmp_path, budget,
                                                               refusal, log):
    # the handle's 4 MiB and the GEMM's 8 MiB of scratch are the library's: 12 MiB in all
    r, out = repro(gemmcheck_binary, "cublas", f"{CASE} mem={budget}", tmp_path)
    assert r.returncode == 0 and "verdict:  pass" in out, out
    if refusal:
        assert (f"limits:   the first call was refused (counted, not a finding): {refusal}: the "
                "resource allocation failed") in out, out
        assert (tmp_path / "log").read_text() == f"{log} refused\n"
    else:
        assert "limits:" not in out and not (tmp_path / "log").exists(), out


def test_gemmcheck_copies_of_the_operands_never_count(gemmcheck_binary, tmp_path):
    # f64 operands of 17 MB in all on a 32 MiB device under a budget of one byte: a library that
    # allocates nothing runs, so the copies were outside the budget (the device's and the host's)
    big = ("gck1 m=2000 n=1000 k=50 order=col ta=N tb=N types=f64,f64,f64,f64 compute=f64 "
           "scale=f64 alpha=1 beta=0 lda=2000 ldb=50 ldc=2000 ldd=2000 d=c batch=1 sa=0 "
           "sb=0 sc=0 sd=0 off=0,0,0,0 vab=unif vc=unif sp=0 cnan=0 seed=1 mem=1")
    r, out = repro(gemmcheck_binary, "cublas", big, tmp_path, GCK_FAKE_CUDA_MEMORY=32 * MIB,
                   GCK_FAKE_CUBLAS_HANDLE=0, GCK_FAKE_CUBLAS_SCRATCH=0)
    assert r.returncode == 0 and "verdict:  pass" in out and "limits:" not in out, out


def test_cublaslt_is_offered_no_more_workspace_than_the_budget(gemmcheck_binary, tmp_path):
    r, out = repro(gemmcheck_binary, "cublaslt", f"{CASE} mem=3000000", tmp_path)
    assert r.returncode == 0 and "verdict:  pass" in out and "limits:" not in out, out
    # without a budget: the 32 MiB NVIDIA recommends for Hopper
    r, out = repro(gemmcheck_binary, "cublaslt", CASE, tmp_path)
    assert r.returncode == 0 and "verdict:  pass" in out, out
    log = (tmp_path / "log").read_text().splitlines()
    assert log[0] == "heuristic: max workspace 3000000, chose 3000000", log
    assert log[1:] and all(x == "heuristic: max workspace 33554432, chose 4194304"
                           for x in log[1:]), log


@pytest.mark.parametrize("mode,kind,words", [
    ("garbage", "out_of_tolerance", "the call ran under a memory budget of 8388608 bytes"),
    ("poison", "error", "in the next call, without limits, after the first call under a memory "
                        "budget of 8388608 bytes was refused"),
    ("fault", "crash", "sticky device error: after the call: an illegal memory access was "
                       "encountered (cudaErrorIllegalAddress); the call ran under a memory "
                       "budget of 8388608 bytes"),
])
def test_a_library_that_mishandles_a_failed_device_allocation_is_found(gemmcheck_binary,
                                                                       tmp_path, mode, kind,
                                                                       words):
    # the handle fits (4 MiB), the GEMM's scratch (8 MiB more) does not
    r, out = repro(gemmcheck_binary, "cublas", f"{CASE} mem={8 * MIB}", tmp_path,
                   GCK_FAKE_CUDA_OOM=mode)
    assert r.returncode == 1, out
    assert f"verdict:  FINDINGS: {kind}" in out and words in out, out
    assert any(line.startswith("repro:") and f"mem={8 * MIB}" in line
               for line in out.splitlines()), out
    assert "gemm: 8388608 bytes of scratch refused" in (tmp_path / "log").read_text()


def test_a_campaign_under_device_budgets_counts_refusals(gemmcheck_binary, tmp_path):
    r = run(gemmcheck_binary, ["fuzz", "--backend", "cublas", "--backend", "cublaslt",
                               "--memory-budget", "64K:64M", "--time", "4", "--seed", "5",
                               "--jobs", "2", "--report", "rep.json"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    matrix = json.loads((tmp_path / "rep.json").read_text())["summary"]["support_matrix"]
    refused = {}
    for e in matrix:
        refused[e["backend"]] = refused.get(e["backend"], 0) + e["refused_under_limits"]
    # cuBLAS needs 12 MiB, so about half the budgets drawn are too small; cuBLASLt takes the
    # workspace it is offered and is never refused
    assert refused["cublas"] > 0 and refused["cublaslt"] == 0, refused


def test_workers_sharing_a_device_never_starve_each_other(gemmcheck_binary, tmp_path):
    # One device for the four workers (the fake's memory and allocation table in a shared
    # file), as a campaign's workers share a GPU: a call under a budget leaves the device only
    # that budget free, so the calls of the other workers (without a budget, or under their own)
    # must wait for it. On an H200 they did not, and found the device full: cublasLtCreate and
    # the copies of the operands failed in calls without a budget, "next call" findings.
    r = run(gemmcheck_binary, ["fuzz", "--backend", "cublas", "--backend", "cublaslt",
                               "--memory-budget", "64K:64M", "--time", "6", "--seed", "7",
                               "--jobs", "4", "--report", "rep.json"], tmp_path,
            GCK_FAKE_CUDA_SHARED=tmp_path / "device", GEMMCHECK_CUDA_LOCK=tmp_path / "lock")
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((tmp_path / "rep.json").read_text())["summary"]
    assert summary["outcomes"]["findings"] == 0, summary
    refused = sum(e["refused_under_limits"] for e in summary["support_matrix"])
    assert refused > 0, summary  # budgets too small were drawn, and the next calls passed


def test_a_worker_that_dies_under_a_budget_leaves_no_false_findings(gemmcheck_binary, tmp_path):
    # cuBLAS 13.1 aborts on some refused allocations (docs/DEVIATIONS.md). The dead worker's
    # lock is released at once, but its reservation of the device comes back only when the
    # driver has torn its context down (the fake: 300 ms after another process finds it gone).
    # On an H200 the next calls of the other workers found the device full and were reported
    # as failures of their next call; the mark in the lock file makes them wait. Without the
    # wait this campaign had 1,864 cases fail in their next call.
    r = run(gemmcheck_binary, ["fuzz", "--backend", "cublas", "--backend", "cublaslt",
                               "--memory-budget", "64K:64M", "--time", "6", "--seed", "7",
                               "--jobs", "4", "--no-progress", "--report", "rep.json"], tmp_path,
            GCK_FAKE_CUDA_SHARED=tmp_path / "device", GEMMCHECK_CUDA_LOCK=tmp_path / "lock",
            GCK_FAKE_CUDA_OOM="abort")
    assert r.returncode == 1, r.stdout + r.stderr  # the aborts are findings
    found = [json.loads(line) for line in (tmp_path / "rep.json.findings.jsonl").open()]
    assert found, r.stdout
    for f in found:
        words = json.dumps(f["details"])
        assert f["kind"] == "crash" and "signal 6" in words and "memory budget" in words, f


def test_certify_measures_the_device_appetite(gemmcheck_binary, tmp_path):
    r = run(gemmcheck_binary, ["certify", "--backend", "cublas", "--time", "0", "--out",
                               "cert.json"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads((tmp_path / "cert.json").read_text())["probed"]["rows"]
    plain = [row for row in rows if "appetite" in row]
    assert len(plain) == 8, [row["tuple"] for row in rows]  # the rows of one type throughout
    for row in plain:
        a = row["appetite"]
        # 12 MiB, within the 2 MiB the device reservation leaves over and an eighth of an octave
        assert 12 * MIB <= a["bytes"] <= 14 * MIB, a
        assert a["failing_below"]["outcome"].startswith("refused (cublas"), a


def test_the_device_run_script_runs_its_budget_campaign_on_the_fake_device(gemmcheck_binary,
                                                                           tmp_path):
    env = dict(os.environ, GEMMCHECK_CUDA_LIBRARY_PATH=FAKE,
               GCK_BUILD=str(Path(gemmcheck_binary).parent), GCK_CAMPAIGN_S="2",
               GCK_LIMITS_S="4", GCK_CERTIFY="cublaslt", GCK_CERTIFY_S="0", GCK_TORCH_S="0",
               GCK_TORCH_FUZZ_S="0", GCK_JOBS="2", GCK_PYTHON=sys.executable)
    out = tmp_path / "out"
    r = subprocess.run(["bash", str(SOURCE / "scripts" / "device-check.sh"), str(out)], env=env,
                       capture_output=True, text=True, timeout=300)
    steps = dict(line.split("\t")[:2] for line in (out / "steps.tsv").read_text().splitlines())
    assert r.returncode == 0, (steps, r.stdout, r.stderr)
    assert steps["budget"] == "ok", steps
    summary = (out / "summary.txt").read_text()
    assert "budget: " in summary and "first calls refused under their limits" in summary, summary

"""gemmcheck.fuzz and `python:` backends: a Python callable fuzzed with gemmcheck's case stream,
checker and shrinker, its failures (exception, crash, hang, bad result) as findings, bad
declarations as one-line errors, and framework tensors accepted by check and oracle."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gemmcheck

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "backends"))
import pyfns  # noqa: E402

FILE = str(HERE / "backends" / "pyfns.py")
REPRO = ("gck1 m=3 n=2 k=4 order=col ta=N tb=N types=f32,f32,f32,f32 compute=f32 scale=f32 "
         "alpha=1 beta=0 lda=3 ldb=4 ldc=3 ldd=3 d=sep batch=1 sa=0 sb=0 sc=0 sd=0 off=0,0,0,0 "
         "vab=normal vc=normal sp=0 cnan=0 seed=1")


@pytest.fixture(autouse=True)
def _binary(gemmcheck_binary, monkeypatch):
    monkeypatch.setenv("GEMMCHECK_BINARY", gemmcheck_binary)
    monkeypatch.setenv("GEMMCHECK_PYTHON", sys.executable)


def test_correct_function_is_clean():
    # a count of cases, not a time: under load (ctest -j2) 4 s held as few as 137
    r = gemmcheck.fuzz(pyfns.correct, cases=250, seed=11)
    assert r.ok, r.explain()
    assert r.cases == 250 and r.exit_status == 0
    assert r.matrix and r.matrix[0]["types"].startswith("f32")


def _cpu_has_amx():
    try:
        return " amx_tile " in open("/proc/cpuinfo").read().replace("\n", " ")
    except OSError:
        return False


@pytest.mark.skipif(not _cpu_has_amx(), reason="the CPU has no AMX: no tile state to ask for")
def test_a_framework_worker_does_not_hold_the_amx_tile_state(monkeypatch):
    # gemmcheck's own kernels would ask Linux for the tile state, which is process-wide: in a
    # worker that runs a framework's code they must not, or AMX code of the framework that forgot
    # to ask would run there and fault in its users' programs. The backend is wrong only where
    # its process holds the state; GEMMCHECK_AMX=1 asks, and then the campaign finds it wrong.
    monkeypatch.delenv("GEMMCHECK_AMX", raising=False)
    r = gemmcheck.fuzz(pyfns.reports_amx, cases=200, seed=13)
    assert not [f for f in r.findings if f.kind == "out_of_tolerance"], r.explain()
    monkeypatch.setenv("GEMMCHECK_AMX", "1")
    r = gemmcheck.fuzz(pyfns.reports_amx, cases=200, seed=13)
    assert [f for f in r.findings if f.kind == "out_of_tolerance"], r.explain()


def test_planted_bug_found_and_shrunk(gemmcheck_binary):
    r = gemmcheck.fuzz(pyfns.drops_last_k, time=4, seed=12, shrink_time=40)
    assert not r.ok and r.exit_status == 1
    f = [f for f in r.findings if f.kind == "out_of_tolerance"][0]
    assert f.minimal, "the shrinker returned no smaller case"
    k = int(f.minimal.split(" k=")[1].split()[0])
    assert k <= 2, f.minimal  # the smallest K that has a last term to drop
    assert "replay: gemmcheck repro --backend 'python:" in f.line()
    # the same reproducer replays on a C backend from the command line: ref passes it
    p = subprocess.run([gemmcheck_binary, "repro", "--backend", "ref", f.minimal],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_exception_is_unimplemented_with_the_message():
    r = gemmcheck.fuzz(pyfns.refuses, time=2, seed=13)
    kinds = {f.kind for f in r.findings}
    assert kinds == {"unimplemented"}, r.explain()
    assert len(r.findings) == 1
    assert "NotImplementedError" in r.findings[0].cause
    assert "gemm_kernel" in r.findings[0].cause


def test_wrong_return_type_is_an_error():
    r = gemmcheck.fuzz(pyfns.wrong_type, time=2, seed=14)
    assert {f.kind for f in r.findings} == {"error"}, r.explain()
    assert "returned float64" in r.findings[0].details, r.findings[0].details
    assert "D is float32" in r.findings[0].details


def test_segfault_is_a_crash_and_the_campaign_goes_on():
    r = gemmcheck.fuzz(pyfns.segfault, time=3, seed=15)
    assert "crash" in r.by_kind(), r.explain()
    f = r.findings[0]
    assert "signal 11" in f.cause and "Segmentation" in f.details, (f.cause, f.details)
    assert r.cases >= 2  # a fresh worker took over after each crash


def test_sleeping_forever_is_a_hang():
    r = gemmcheck.fuzz(pyfns.sleeps, time=4, seed=16, args=["--timeout-floor", "0.5"])
    assert "hang" in r.by_kind(), r.explain()


def test_bad_declarations_are_one_line_errors():
    with pytest.raises(gemmcheck.GemmcheckError, match="A,B,C,D"):
        gemmcheck.Row("f32,f32,f32")
    with pytest.raises(gemmcheck.GemmcheckError, match="unknown promise 'bogus'"):
        gemmcheck.Row("f32,f32,f32,f32", promises="bogus d_separate scale_f32")
    with pytest.raises(gemmcheck.GemmcheckError, match="d_separate, d_in_place"):
        gemmcheck.Row("f32,f32,f32,f32", promises="scale_f32")
    with pytest.raises(gemmcheck.GemmcheckError, match="non-empty list"):
        gemmcheck.Backend(pyfns._f64_then_round, [])
    with pytest.raises(gemmcheck.GemmcheckError, match="framework 'jax'"):
        gemmcheck.Backend(pyfns._f64_then_round, pyfns._rows(), framework="jax")
    local = gemmcheck.Backend(pyfns._f64_then_round, pyfns._rows())
    with pytest.raises(gemmcheck.GemmcheckError, match="not reachable by name"):
        gemmcheck.fuzz(local, time=1)


@pytest.mark.parametrize("spec,words", [
    (f"python:{FILE}:nothing_here", "has no 'nothing_here'"),
    (f"python:{FILE}:not_a_backend", "not a gemmcheck.Backend"),
    ("python:/nonexistent/x.py:f", "no file /nonexistent/x.py"),
    ("python:nosuchmodule_xyz:f", "No module named 'nosuchmodule_xyz'"),
])
def test_bad_backend_specs_exit_2_with_one_line(gemmcheck_binary, spec, words):
    env = dict(os.environ, GEMMCHECK_PYTHON=sys.executable)
    p = subprocess.run([gemmcheck_binary, "fuzz", "--backend", spec, "--time", "2",
                        "--no-progress"], capture_output=True, text=True, env=env)
    assert p.returncode == 2, p.stdout + p.stderr
    last = [ln for ln in p.stderr.splitlines() if ln.startswith("gemmcheck fuzz:")][-1]
    assert words in last, p.stderr


def test_missing_interpreter_is_a_setup_error(gemmcheck_binary):
    env = dict(os.environ, GEMMCHECK_PYTHON="/nonexistent/python9")
    p = subprocess.run([gemmcheck_binary, "repro", "--backend", f"python:{FILE}:correct",
                        REPRO], capture_output=True, text=True, env=env)
    assert p.returncode == 2
    assert "/nonexistent/python9" in p.stderr and "GEMMCHECK_PYTHON" in p.stderr


def test_given_makes_a_pytest_test():
    test = gemmcheck.given(backend=pyfns.drops_last_k, time=3, seed=17, shrink_time=5)(
        lambda: None)
    with pytest.raises(AssertionError, match="out_of_tolerance.*\n.*replay: gemmcheck repro"):
        test()


torch = pytest.importorskip("torch")


def test_check_and_oracle_take_torch_tensors_bf16_included():
    g = torch.Generator().manual_seed(5)
    a = torch.randn(9, 17, generator=g)
    b = torch.randn(17, 6, generator=g)
    assert gemmcheck.check(a, b, a @ b, model="compute=f32").ok
    ab, bb = a.bfloat16(), b.bfloat16()
    exact = gemmcheck.oracle(ab, bb, out_dtype="bf16")
    assert exact.dtype == np.uint16  # bf16 bits
    good = torch.from_numpy(exact.view(np.int16)).view(torch.bfloat16)
    assert gemmcheck.check(ab, bb, good, model="compute=f32").ok
    # a transposed view is read through its strides, and a tensor that requires grad works
    assert gemmcheck.check(a.t().contiguous().t(), b, a @ b, model="compute=f32").ok
    w = a.clone().requires_grad_(True)
    assert gemmcheck.check(w, b, (w @ b).detach(), model="compute=f32").ok
    bad = good.clone()
    bad[0, 0] = bad[0, 0] * 1.5
    v = gemmcheck.check(ab, bb, bad, model="compute=f32")
    assert not v.ok and v.worst[0].index == (0, 0)
    with pytest.raises(gemmcheck.GemmcheckError, match="bfloat16 tensor, not f16"):
        gemmcheck.check(ab, bb, good, a_type="f16")

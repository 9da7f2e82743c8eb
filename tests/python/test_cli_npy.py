"""`gemmcheck oracle` reads what users and `repro --dump` write: Fortran-order arrays (NumPy's
np.asfortranarray, read into C order) and 3-D batches, so the operands a dump leaves recompute
its D_expected bit for bit."""

import os
import re
import subprocess

import numpy as np
import pytest

import gemmcheck as gc


def cli(binary, *args, cwd):
    r = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{args}: {r.stdout}{r.stderr}"
    return r.stdout


def test_fortran_order_inputs_give_the_c_order_result(tmp_path, gemmcheck_binary):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((7, 9)).astype(np.float32)
    b = rng.standard_normal((9, 4)).astype(np.float32)
    np.save(tmp_path / "a.npy", np.asfortranarray(a))
    np.save(tmp_path / "b.npy", np.asfortranarray(b))
    assert np.load(tmp_path / "a.npy").flags.f_contiguous  # the file really is Fortran order
    cli(gemmcheck_binary, "oracle", "--a", "a.npy", "--b", "b.npy", "--out-type", "f32", "--out",
        "d.npy", cwd=tmp_path)
    np.testing.assert_array_equal(np.load(tmp_path / "d.npy"), gc.oracle(a, b))


@pytest.mark.parametrize("order", ["col", "row"])
def test_repro_dump_operands_recompute_d_expected(tmp_path, order, gemmcheck_binary):
    # a batch of 3 with A shared (stride 0), op(A) = A^T, mixed f16 x bf16 + f32 -> f16
    lds = "lda=7 ldb=6 ldc=4 ldd=4" if order == "col" else "lda=5 ldb=6 ldc=5 ldd=5"
    case = (f"gck1 m=4 n=5 k=6 order={order} ta=T tb=N types=f16,bf16,f32,f16 compute=f32 "
            f"scale=f32 alpha=1.5 beta=-0.5 {lds} d=sep batch=3 sa=0 sb=40 sc=20 sd=20 "
            "off=0,0,0,0 vab=unif vc=unif sp=0 cnan=0 seed=3")
    cli(gemmcheck_binary, "repro", "--backend", "ref", "--dump", "dump", case, cwd=tmp_path)
    d = tmp_path / "dump"
    text = (d / "case.txt").read_text()
    field = dict(re.findall(r"(\w+)=(\S+)", text))
    ta, tb, (t_a, t_b, t_c, t_d) = field["ta"], field["tb"], field["types"].split(",")
    assert np.load(d / "A.npy").ndim == 3  # the dump writes batches as 3-D
    cli(gemmcheck_binary, "oracle", "--a", "A.npy", "--b", "B.npy", "--c", "C.npy", "--transa", ta,
        "--transb", tb, "--a-type", t_a, "--b-type", t_b, "--c-type", t_c, "--alpha", field["alpha"],
        "--beta", field["beta"], "--out-type", t_d, "--out", "D.npy", cwd=d)
    got, want = np.load(d / "D.npy"), np.load(d / "D_expected.npy")
    assert got.shape == want.shape == (3, 4, 5)
    assert got.tobytes() == want.tobytes()


def test_repro_dump_writes_the_verify_command_that_rechecks_it(tmp_path, gemmcheck_binary):
    """verify.sh re-checks the dumped D under the row's model: the reference GEMM's D passes,
    a faulty backend's (one element off by 25%) fails, with the same finding kind."""
    case = ("gck1 m=4 n=5 k=6 order=row ta=N tb=T types=bf16,bf16,f32,f32 compute=f32 scale=f32 "
            "alpha=2 beta=1 lda=6 ldb=6 ldc=5 ldd=5 d=c batch=1 sa=0 sb=0 sc=0 sd=0 "
            "off=0,0,0,0 vab=normal vc=unif sp=0 cnan=0 seed=4")
    env = dict(os.environ, GEMMCHECK=gemmcheck_binary)
    backends = [("ref", 0)]
    faulty = os.environ.get("GEMMCHECK_FAULTY_PLUGIN")
    if faulty:
        backends.append((f"plugin:{faulty}:tolerance", 1))
    for backend, want in backends:
        d = tmp_path / backend.split(":")[-1]
        r = subprocess.run([gemmcheck_binary, "repro", "--backend", backend, "--dump", str(d),
                            case], capture_output=True, text=True, timeout=120)
        assert r.returncode == want, r.stdout + r.stderr
        assert f"re-check: sh {d}/verify.sh" in r.stdout, r.stdout
        v = subprocess.run(["sh", str(d / "verify.sh")], capture_output=True, text=True,
                           timeout=120, env=env, cwd="/")
        assert v.returncode == want, v.stdout + v.stderr
        assert ("pass:" in v.stdout) == (want == 0), v.stdout
        if want:
            assert "out_of_tolerance" in v.stdout, v.stdout

"""A pytest file that checks a GEMM with `gemmcheck verify` instead of a hand-picked tolerance:
the README's example, complete. Run it with the gemmcheck command on PATH (or named by
GEMMCHECK_BINARY):

    python3 -m pytest examples/python/test_verify_cli.py
"""
import os
import subprocess

import numpy as np

GEMMCHECK = os.environ.get("GEMMCHECK_BINARY", "gemmcheck")


def make_inputs():
    rng = np.random.default_rng(7)
    return (rng.standard_normal((64, 256)).astype(np.float32),
            rng.standard_normal((256, 48)).astype(np.float32))


def my_matmul(a, b):
    return a @ b  # the code under test: here NumPy's BLAS, in f32


def test_my_matmul(tmp_path):
    a, b = make_inputs()
    d = my_matmul(a, b)
    # before: np.testing.assert_allclose(d, a @ b, rtol=1e-3, atol=1e-5)   -- why those numbers?
    for name, x in (("a", a), ("b", b), ("d", d)):
        np.save(tmp_path / f"{name}.npy", x)
    r = subprocess.run([GEMMCHECK, "verify", "--a", "a.npy", "--b", "b.npy", "--d", "d.npy",
                        "--model", "compute=f32"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr

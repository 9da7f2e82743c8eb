"""`gemmcheck verify` on results computed elsewhere (NumPy here): a correct result passes, one
wrong element fails and is named, the claimed model decides (an f16-input product fails as f32
arithmetic and passes as in=f16), batches, transposes, C and bf16 outputs are read as `oracle`
reads them, the verdict agrees with the Python module's check (the same checker), and bad input
is one line and exit 2."""

import re
import subprocess

import numpy as np
import pytest

import gemmcheck

BINS = gemmcheck.RATIO_BINS


def verify(binary, cwd, *args):
    r = subprocess.run([binary, "verify", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=120)
    return r.returncode, r.stdout, r.stderr


def distribution(out):
    line = next(x for x in out.splitlines() if x.strip().startswith("error/bound:"))
    pairs = re.findall(r"(\S+) (\d+)(?:,|$)", line.split(":", 1)[1])
    return {k: int(v) for k, v in pairs}


@pytest.fixture()
def product(tmp_path):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((48, 70)).astype(np.float32)
    b = rng.standard_normal((70, 20)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    return tmp_path, a, b


def test_a_correct_result_passes_and_a_wrong_element_is_named(product, gemmcheck_binary):
    d, a, b = product
    np.save(d / "d.npy", a @ b)  # NumPy's own sgemm: any order, FMA or not
    rc, out, err = verify(gemmcheck_binary, d, "--a", "a.npy", "--b", "b.npy", "--d", "d.npy")
    assert rc == 0 and out.startswith("gemmcheck verify: pass: 960 of 960 elements"), out + err
    dist = distribution(out)
    assert list(dist) == list(BINS) and sum(dist.values()) == 960 and dist[">1"] == 0
    wrong = a @ b
    wrong[5, 7] = np.nextafter(wrong[5, 7], np.inf) + abs(wrong[5, 7]) * 1e-3
    np.save(d / "wrong.npy", wrong)
    rc, out, err = verify(gemmcheck_binary, d, "--a", "a.npy", "--b", "b.npy", "--d", "wrong.npy")
    assert rc == 1 and "FAIL: 960 of 960 elements checked, 1 failing" in out, out
    assert re.search(r"out_of_tolerance: 1 element\(s\); worst D\[5, 7\]", out), out
    assert distribution(out)[">1"] == 1
    # the Python module's check is the same checker: same counts and distribution
    v = gemmcheck.check(a, b, wrong)
    assert v.counts == {"out_of_tolerance": 1}
    assert v.distribution == distribution(out)


def test_the_claimed_model_decides(product, gemmcheck_binary):
    d, a, b = product
    half = a.astype(np.float16).astype(np.float32) @ b.astype(np.float16).astype(np.float32)
    np.save(d / "half.npy", half)
    rc, out, _ = verify(gemmcheck_binary, d, "--a", "a.npy", "--b", "b.npy", "--d", "half.npy")
    assert rc == 1 and "out_of_tolerance" in out, out
    rc, out, _ = verify(gemmcheck_binary, d, "--a", "a.npy", "--b", "b.npy", "--d", "half.npy",
                        "--model", "compute=f32 in=f16")
    assert rc == 0, out
    assert 'model "compute=f32 in=f16 scalar epi=f32 nearest"' in out, out


def test_batches_transposes_c_and_bf16(tmp_path, gemmcheck_binary):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 20, 9))           # batch of A^T: op(A) is 9 x 20
    b = rng.standard_normal((20, 6))              # shared by every member
    c = rng.standard_normal((3, 9, 6))
    alpha, beta = 0.5, -2.0
    d = alpha * np.einsum("bki,kj->bij", a, b) + beta * c
    for name, x in (("a", a), ("b", b), ("c", c), ("d", d)):
        np.save(tmp_path / f"{name}.npy", x)
    args = ["--a", "a.npy", "--b", "b.npy", "--c", "c.npy", "--transa", "T", "--alpha", "0.5",
            "--beta", "-2"]
    rc, out, err = verify(gemmcheck_binary, tmp_path, *args, "--d", "d.npy")
    assert rc == 0 and "162 of 162" in out and "batched" in out, out + err
    # bf16 output as <u2 bits: the f64 result rounded to nearest even
    bits = d.astype(np.float32).view(np.uint32)
    bf = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    np.save(tmp_path / "dbf.npy", bf)
    rc, out, err = verify(gemmcheck_binary, tmp_path, *args, "--d", "dbf.npy", "--d-type",
                          "bf16")
    assert rc == 0 and "-> bf16" in out, out + err
    rc, out, err = verify(gemmcheck_binary, tmp_path, *args, "--d", "dbf.npy")
    assert rc == 2 and "--d-type bf16" in err


def test_a_nan_where_the_exact_result_is_finite_is_a_nonfinite_mismatch(product,
                                                                       gemmcheck_binary):
    d, a, b = product
    x = a @ b
    x[0, 0] = np.nan
    np.save(d / "nan.npy", x)
    rc, out, _ = verify(gemmcheck_binary, d, "--a", "a.npy", "--b", "b.npy", "--d", "nan.npy")
    assert rc == 1 and "nonfinite_mismatch: 1 element(s); worst D[0, 0]" in out, out


@pytest.mark.parametrize("extra, message", [
    (["--d", "d.npy", "--model", "compute=f32 fast"], "'fast' is not a model word"),
    (["--d", "d.npy", "--model", "compute=f128"], "'compute=f128' is not a model word"),
    (["--d", "short.npy"], "short.npy has shape (48, 19); the product is (48, 20)"),
    ([], "missing --d"),
    (["--d", "d.npy", "--beta", "1"], "--beta 1 needs --c"),
    (["--d", "missing.npy"], "missing.npy"),
    (["--d", "d.npy", "--tier", "soft"], "--tier 'soft' must be stat or hard"),
    (["--d", "d.npy", "--random", "maybe"], "--random 'maybe' must be yes or no"),
])
def test_bad_input_is_one_line_and_exit_2(product, gemmcheck_binary, extra, message):
    d, a, b = product
    np.save(d / "d.npy", a @ b)
    np.save(d / "short.npy", (a @ b)[:, :19])
    rc, out, err = verify(gemmcheck_binary, d, "--a", "a.npy", "--b", "b.npy", *extra)
    assert rc == 2 and message in err and err.count("\n") == 1 and out == "", (rc, out, err)


def test_the_distribution_bins_exact_and_failing_elements(tmp_path, gemmcheck_binary):
    # small integers: every product and sum is exact in f32, so D = A @ B has error 0 everywhere
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 9, (16, 12)).astype(np.float32)
    b = rng.integers(-8, 9, (12, 10)).astype(np.float32)
    d = a @ b
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "d.npy", d)
    rc, out, _ = verify(gemmcheck_binary, tmp_path, "--a", "a.npy", "--b", "b.npy", "--d", "d.npy")
    assert rc == 0 and distribution(out) == dict({k: 0 for k in BINS}, **{"0": 160}), out
    d[1, 2] += 1  # an exact case with a wrong value: bound 0, error 1
    np.save(tmp_path / "d.npy", d)
    rc, out, _ = verify(gemmcheck_binary, tmp_path, "--a", "a.npy", "--b", "b.npy", "--d", "d.npy")
    assert rc == 1 and distribution(out) == dict({k: 0 for k in BINS}, **{"0": 159, ">1": 1}), out


def test_a_large_result_is_checked_in_full_and_says_how(tmp_path, gemmcheck_binary):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((300, 256)).astype(np.float16)
    b = rng.standard_normal((256, 200)).astype(np.float16)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "d.npy", (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16))
    code, out, err = verify(gemmcheck_binary, tmp_path, "--a", "a.npy", "--b", "b.npy", "--d",
                            "d.npy", "--model", "compute=f32 in=f16")
    assert code == 0 and "pass: 60000 of 60000 elements checked" in out, out + err
    sums = next(x for x in out.splitlines() if x.strip().startswith("sums:"))
    assert "ozaki:" in sums and "Freivalds" in sums, sums
    np.save(tmp_path / "s.npy", a[:10, :20])
    np.save(tmp_path / "t.npy", b[:20, :10])
    np.save(tmp_path / "u.npy", (a[:10, :20].astype(np.float32) @ b[:20, :10]).astype(np.float16))
    code, out, err = verify(gemmcheck_binary, tmp_path, "--a", "s.npy", "--b", "t.npy", "--d",
                            "u.npy", "--model", "compute=f32 in=f16")
    assert code == 0 and "products one by one" in out, out + err


def test_an_f64_d_of_f32_arithmetic_gets_the_hint(product, gemmcheck_binary):
    """f32 inputs, D computed in f32 and saved as f64: every element fails the default model
    (f64 arithmetic, because D is f64), and verify says what to try; that model passes."""
    d, a, b = product
    np.save(d / "d64.npy", (a @ b).astype(np.float64))
    rc, out, err = verify(gemmcheck_binary, d, "--a", "a.npy", "--b", "b.npy", "--d", "d64.npy")
    assert rc == 1, out + err
    assert "hint: A and B are f32 x f32 but the model computes in f64" in out, out
    assert "--model compute=f32" in out, out
    rc, out, err = verify(gemmcheck_binary, d, "--a", "a.npy", "--b", "b.npy", "--d", "d64.npy",
                          "--model", "compute=f32")
    assert rc == 0 and "hint" not in out, out + err

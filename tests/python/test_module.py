"""The Python module against independent truth: exact sums in binary64 (inputs built so that every
partial sum is representable, hence exact in any order) rounded once by NumPy's correctly rounded
casts or by a rounding written here from the definition; the IEEE special values; and the checker
on results known to be inside or outside a model's bound."""

import contextlib
import ctypes
import ctypes.util
import math
import platform

import numpy as np
import pytest

import gemmcheck as gc

RNG = np.random.default_rng(20261123)


def exact_inputs(m, n, k, dtype, span=8):
    """Integers of 12 bits times 2^e (e < span): every product and partial sum is an integer
    below 2^53, so a binary64 matmul in any order is exact."""
    a = RNG.integers(-2048, 2048, (m, k)) * 2.0 ** RNG.integers(0, span, (m, k))
    b = RNG.integers(-2048, 2048, (k, n)) * 2.0 ** RNG.integers(0, span, (k, n))
    return a.astype(dtype), b.astype(dtype)


def bf16_round(x):
    """Round a binary64 value to bfloat16 (nearest, ties to even), from the definition: 8
    significand bits, exponent range of binary32; returns the bits."""
    if x == 0 or math.isnan(x) or math.isinf(x):
        return int(np.array(x, dtype=np.float32).view(np.uint32)) >> 16
    e = max(math.frexp(x)[1] - 1, -126)  # the binade, clamped to the subnormal range
    q = round(x / 2.0 ** (e - 7))  # Python's round: half to even, exact on these values
    v = q * 2.0 ** (e - 7)
    if abs(v) >= 2.0 ** 128:
        v = math.copysign(math.inf, x)
    return int(np.array(v, dtype=np.float32).view(np.uint32)) >> 16


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_oracle_rounds_the_exact_sum_once(dtype):
    span = 2 if dtype == np.float16 else 8
    a, b = exact_inputs(23, 17, 64, np.float64, span)
    if dtype == np.float16:  # keep the inputs representable in f16
        a, b = a / 2.0**8, b / 2.0**8
    a, b = a.astype(dtype), b.astype(dtype)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    d = gc.oracle(a, b)
    assert d.dtype == dtype
    np.testing.assert_array_equal(d, exact.astype(dtype))
    # rounding really happened somewhere (the test would be weak otherwise)
    if dtype != np.float64:
        assert np.any(exact.astype(dtype).astype(np.float64) != exact)


def test_oracle_bf16_output_and_bf16_inputs():
    a, b = exact_inputs(9, 11, 40, np.float64, 4)
    exact = a @ b
    d = gc.oracle(a.astype(np.float32), b.astype(np.float32), out_dtype="bf16")
    assert d.dtype == np.uint16
    want = np.array([[bf16_round(x) for x in row] for row in exact], dtype=np.uint16)
    np.testing.assert_array_equal(d, want)
    # bf16 inputs as uint16 bits (values with 8 significant bits are exact in bf16)
    ai = (RNG.integers(-128, 128, (5, 7)) * 2.0 ** RNG.integers(-4, 4, (5, 7))).astype(np.float32)
    bi = (RNG.integers(-128, 128, (7, 3)) * 2.0 ** RNG.integers(-4, 4, (7, 3))).astype(np.float32)
    abits = (ai.view(np.uint32) >> 16).astype(np.uint16)
    bbits = (bi.view(np.uint32) >> 16).astype(np.uint16)
    d = gc.oracle(abits, bbits, a_type="bf16", b_type="bf16", out_dtype=np.float64)
    np.testing.assert_array_equal(d, ai.astype(np.float64) @ bi.astype(np.float64))


def test_alpha_beta_transposes_and_both_oracles():
    a, b = exact_inputs(6, 8, 30, np.float64)
    c = RNG.integers(-1000, 1000, (6, 8)).astype(np.float32)
    d = gc.oracle(a.T.copy().astype(np.float32), b.T.copy().astype(np.float32), c, alpha=0.5,
                  beta=-3, trans_a=True, trans_b=True, method="both")
    exact = 0.5 * (a @ b) - 3 * c.astype(np.float64)
    np.testing.assert_array_equal(d, exact.astype(np.float32))


def test_batches_and_a_shared_operand():
    a = np.stack([exact_inputs(4, 5, 12, np.float64)[0] for _ in range(3)]).astype(np.float32)
    b = exact_inputs(4, 5, 12, np.float64)[1].astype(np.float32)
    d = gc.oracle(a, b)
    assert d.shape == (3, 4, 5)
    for i in range(3):
        want = (a[i].astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
        np.testing.assert_array_equal(d[i], want)


def test_special_values_follow_blas_and_ieee():
    a = np.array([[1.0, np.inf], [np.nan, 2.0]], dtype=np.float32)
    b = np.array([[0.0, 1.0], [0.0, 1.0]], dtype=np.float32)
    d = gc.oracle(a, b)
    assert np.isnan(d[0, 0])  # Inf * 0
    assert d[0, 1] == np.inf
    assert np.isnan(d[1, 0]) and np.isnan(d[1, 1])
    # beta = 0 does not read C; alpha = 0 does not read A and B
    c = np.full((2, 2), np.nan, dtype=np.float32)
    assert not np.isnan(gc.oracle(np.eye(2, dtype=np.float32), b, c, beta=0)).any()
    c2 = np.array([[1.0, -2.0], [3.0, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(gc.oracle(a, b, c2, alpha=0, beta=2), 2 * c2)
    # the sign of an exact zero: (-0) + (-0) is -0
    z = gc.oracle(np.array([[-0.0]], np.float32), np.array([[1.0]], np.float32))
    assert z[0, 0] == 0 and math.copysign(1, z[0, 0]) == -1


def test_gradual_underflow_and_overflow():
    tiny = np.array([[2.0**-20]], dtype=np.float32)
    for factor, want in ((2.0**-5, 0.0), (1.5 * 2.0**-5, 2.0**-24), (2.0**-4, 2.0**-24)):
        d = gc.oracle(tiny, np.array([[factor]], np.float32), out_dtype=np.float16)
        assert float(d[0, 0]) == want, (factor, float(d[0, 0]))
        assert float(d[0, 0]) == float(np.float16(2.0**-20 * factor))
    big = np.array([[np.finfo(np.float32).max]], dtype=np.float32)
    assert gc.oracle(big, np.array([[2.0]], np.float32))[0, 0] == np.inf


def test_check_passes_correct_results_and_numpy():
    a = RNG.standard_normal((40, 300)).astype(np.float32)
    b = RNG.standard_normal((300, 30)).astype(np.float32)
    v = gc.check(a, b, gc.oracle(a, b))
    assert v and v.elements == 1200
    worst = v.max_ratio  # the oracle's own result is off by its one rounding only
    assert worst.error <= np.spacing(np.float32(abs(worst.got))) / 2
    v = gc.check(a, b, a @ b)  # NumPy's float32 matmul: some order, one rounding per operation
    assert v.ok, v.explain()
    assert 0 < v.max_ratio.ratio < 1


def test_large_products_are_checked_in_full_from_split_sums():
    a = RNG.standard_normal((256, 256)).astype(np.float32)
    b = RNG.standard_normal((256, 96)).astype(np.float32)
    small = gc.check(a[:8, :16], b[:16, :8], a[:8, :16] @ b[:16, :8])
    assert small.ok and "one by one" in small.sums, small.sums
    d = a @ b
    v = gc.check(a, b, d)
    assert v.ok and not v.sampled and v.elements == 256 * 96, v.explain()
    assert v.sums.startswith("ozaki:") and "Freivalds" in v.sums, v.sums
    d[200, 50] = np.nextafter(d[200, 50], np.float32(np.inf), dtype=np.float32) * np.float32(1.01)
    bad = gc.check(a, b, d)
    assert bad.counts == {"out_of_tolerance": 1} and bad.worst[0].index == (200, 50)


def test_the_statistical_tier_finds_what_the_hard_bound_lets_pass():
    # a 1e-4 relative error on the largest of 64 x 64 f32 elements at K = 300: inside the hard
    # bound, an improbable_error of the statistical tier; --tier hard counts it without failing
    a = RNG.uniform(-1, 1, (64, 300)).astype(np.float32)
    b = RNG.uniform(-1, 1, (300, 64)).astype(np.float32)
    d = gc.oracle(a, b)
    ok = gc.check(a, b, d)
    assert ok and ok.stat_elements == 64 * 64 and 0 <= ok.max_stat < 0.1, ok.explain()
    i, j = np.unravel_index(np.argmax(np.abs(d)), d.shape)
    d[i, j] = np.float32(d[i, j] * (1 + 1e-4))
    v = gc.check(a, b, d)
    assert v.counts == {"improbable_error": 1} and v.worst[0].index == (i, j), v.explain()
    assert v.worst[0].ratio < 1 < v.worst[0].stat and v.max_stat > 1
    hard = gc.check(a, b, d, tier="hard")
    assert hard.ok and hard.improbable == 1 and "statistical tier" in hard.explain()
    # integers are structured: the tier says it did not apply
    ints = gc.check(np.ones((4, 9), np.float32), np.ones((9, 3), np.float32),
                    np.full((4, 3), 9, np.float32))
    assert ints.ok and ints.stat_elements == 0 and "not applied" in ints.stat, ints.stat
    with pytest.raises(gc.GemmcheckError, match="tier"):
        gc.check(a, b, d, tier="soft")
    # a model that declares faithful rounding: neither the interval's halving nor the tier
    f = gc.check(a, b, d, model="compute=f32 faithful")
    assert f.ok and f.stat_elements == 0 and "faithful" in f.stat, f.stat


def test_check_finds_a_wrong_element_and_names_it():
    a = RNG.standard_normal((20, 50)).astype(np.float32)
    b = RNG.standard_normal((50, 10)).astype(np.float32)
    d = gc.oracle(a, b)
    d[7, 3] = np.float32(d[7, 3]) * np.float32(1.001)
    v = gc.check(a, b, d)
    assert not v and v.counts == {"out_of_tolerance": 1}
    assert v.worst[0].index == (7, 3) and v.worst[0].ratio > 1
    with pytest.raises(AssertionError, match=r"out_of_tolerance at \(7, 3\)"):
        v.assert_ok()
    d[1, 1] = np.nan
    assert gc.check(a, b, d).counts.get("nonfinite_mismatch") == 1


def test_the_model_decides_tf32_inputs():
    a = RNG.standard_normal((16, 256)).astype(np.float32)
    b = RNG.standard_normal((256, 16)).astype(np.float32)

    def tf32(x):  # round to 10 fraction bits, to nearest even
        bits = x.view(np.uint32).astype(np.uint64)
        bits = (bits + 0xFFF + ((bits >> 13) & 1)) & ~np.uint64(0x1FFF)
        return bits.astype(np.uint32).view(np.float32)

    d = (tf32(a).astype(np.float64) @ tf32(b).astype(np.float64)).astype(np.float32)
    assert not gc.check(a, b, d)  # f32 inputs read exactly: tf32 rounding is too far
    v = gc.check(a, b, d, model="compute=f32 in=tf32")
    assert v, v.explain()


def test_bad_input_is_a_clear_error():
    f = np.ones((2, 3), np.float32)
    with pytest.raises(gc.GemmcheckError, match="inner dimensions"):
        gc.oracle(f, f)
    with pytest.raises(gc.GemmcheckError, match="bf16"):
        gc.oracle(np.ones((2, 2), np.uint16), np.ones((2, 2), np.uint16))
    with pytest.raises(gc.GemmcheckError, match="beta"):
        gc.oracle(f, f.T, beta=1)
    with pytest.raises(gc.GemmcheckError, match="shape"):
        gc.check(f, f.T, np.ones((3, 3), np.float32))
    with pytest.raises(gc.GemmcheckError, match="unknown word"):
        gc.check(f, f.T, np.ones((2, 2), np.float32), model="compute=f32 fast")
    with pytest.raises(gc.GemmcheckError, match="int8|element type"):
        gc.oracle(np.ones((2, 2), np.int8), np.ones((2, 2), np.int8))


def test_model_strings_round_trip():
    m = gc.Model.parse("compute=f32 in=tf32 block-FMA/16 epi=f32 FTZ skip0")
    assert (m.compute, m.inputs, m.acc, m.block, m.ftz, m.daz, m.skip_zero) == \
        ("f32", "tf32", "block-FMA", 16, True, False, True)
    text = repr(m)[len("Model('"):-len("')")]
    assert vars(gc.Model.parse(text)) == vars(m), text
    assert vars(gc.Model.parse("compute=f64")) == vars(gc.Model("f64"))


# ---- the caller's floating-point environment ---------------------------------------------------
_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_FE_UPWARD, _FE_TOWARDZERO = 0x800, 0xC00  # glibc x86-64
_FTZ_DAZ = 0x8040  # MXCSR bits 15 and 6: what torch.set_flush_denormal(True) and -Ofast set


@contextlib.contextmanager
def _caller_fpenv(mxcsr_bits=0, rounding=None):
    """This thread's environment changed as a PyTorch process or an -Ofast extension leaves it:
    glibc's fenv_t on x86-64 ends with MXCSR (offset 28 of its 32 bytes)."""
    saved = ctypes.create_string_buffer(32)
    assert _LIBM.fegetenv(saved) == 0
    env = ctypes.create_string_buffer(saved.raw, 32)
    mxcsr = int.from_bytes(env.raw[28:32], "little") | mxcsr_bits
    env[28:32] = mxcsr.to_bytes(4, "little")
    assert _LIBM.fesetenv(env) == 0
    if rounding is not None:
        assert _LIBM.fesetround(rounding) == 0
    try:
        yield
    finally:
        _LIBM.fesetenv(saved)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="MXCSR is x86's")
@pytest.mark.parametrize("env", [{"mxcsr_bits": _FTZ_DAZ}, {"rounding": _FE_UPWARD},
                                 {"rounding": _FE_TOWARDZERO}], ids=["ftz-daz", "up", "to-zero"])
def test_the_callers_fp_environment_changes_nothing(env):
    """Subnormal products (f32 and f16 results below the normal range) and inexact sums: the
    oracle's bits and the checker's verdicts are those of the default environment. Without
    gemmcheck's guard, the oracles and the checker flushed these under FTZ/DAZ."""
    a = (RNG.standard_normal((9, 40)) * 2.0 ** -66).astype(np.float32)
    b = (RNG.standard_normal((40, 7)) * 2.0 ** -66).astype(np.float32)
    h = (RNG.standard_normal((9, 40)) * 2.0 ** -8).astype(np.float16)
    g = (RNG.standard_normal((40, 7)) * 2.0 ** -8).astype(np.float16)
    e = RNG.standard_normal((9, 40)) * 2.0 ** -520
    f = RNG.standard_normal((40, 7)) * 2.0 ** -520
    for x, y, out in [(a, b, np.float32), (h, g, np.float16), (e, f, np.float64)]:
        want = gc.oracle(x, y, out_dtype=out, alpha=0.5, method="both")
        tiny = np.finfo(out).tiny
        wrong = want.copy()
        wrong[2, 3] += out(64 * tiny)  # far outside the bound's underflow allowance
        with _caller_fpenv(**env):
            got = gc.oracle(x, y, out_dtype=out, alpha=0.5, method="both")
            passed = gc.check(x, y, want, alpha=0.5)
            failed = gc.check(x, y, wrong, alpha=0.5)
        assert got.tobytes() == want.tobytes()
        assert np.count_nonzero((want != 0) & (np.abs(want) < tiny)) > 5  # subnormal results
        base = gc.check(x, y, want, alpha=0.5)
        assert passed.ok and base.ok and passed.distribution == base.distribution
        base = gc.check(x, y, wrong, alpha=0.5)
        assert not base.ok and failed.counts == base.counts
        assert failed.max_ratio.ratio == base.max_ratio.ratio


def test_format_names_users_write_are_taken():
    """fp32, float32, bfloat16, half ... name the formats wherever a name is read."""
    assert gc.Model(compute="fp32", inputs="TF32").compute == "f32"
    assert gc.Model.parse("compute=float32 in=bfloat16").inputs == "bf16"
    a = np.array([[1.5, -2.0]], dtype=np.float32)
    b = np.array([[2.0], [0.25]], dtype=np.float32)
    bits = (a.view(np.uint32) >> 16).astype(np.uint16)  # exact: these values fit in bf16
    assert gc.check(bits, b, a @ b, a_type="bfloat16", model="compute=float32").ok
    assert gc.oracle(a, b, out_dtype="float32").dtype == np.float32
    with pytest.raises(gc.GemmcheckError):
        gc.Model(compute="fp8")


def test_the_memory_kept_between_calls_is_reported_and_given_back():
    gc.release_memory()
    assert gc.memory_kept() == 0
    rng = np.random.default_rng(3)
    a = rng.standard_normal((1024, 64)).astype(np.float32)
    b = rng.standard_normal((64, 1024)).astype(np.float32)
    d = gc.oracle(a, b)  # split by the exact oracle: its 8 MiB terms are kept when it ends
    assert d.shape == (1024, 1024)
    kept = gc.memory_kept()
    assert kept >= 8 << 20, kept
    assert gc.release_memory() == kept
    assert gc.memory_kept() == 0
    assert gc.release_memory() == 0

"""A NumPy user's test of their own matrix product, with gemmcheck instead of a hand-picked
tolerance. Run it with pytest (gemmcheck's Python module installed, or PYTHONPATH and
GEMMCHECK_LIBRARY pointing into a build tree; docs/PYTHON.md).

The usual test compares against a float64 product with an `rtol` and `atol` somebody chose:

    np.testing.assert_allclose(my_matmul(a, b), a.astype(np.float64) @ b, rtol=1e-3, atol=1e-3)

Those numbers are a guess that has to be re-tuned for every shape and type: too tight, it fails
correct products with long sums or cancellation; too loose, it passes real bugs. gemmcheck.check
compares every element with the exact result, against a hard bound derived from the arithmetic
the code claims (here float32 operations, in any summation order): no tuning, never a failure on
a correct product, and the worst element named when it fails.

EXAMPLE_BUG=1 plants a bug of the kind fast kernels have: one block of k is multiplied with its
inputs rounded to bfloat16. Every shape below then fails, with its worst element. (An error that
stays within what float32 arithmetic may lose in the worst case is not a finding: the bound grows
with K, so the same bug in a product with K = 1000 or more would pass.)
"""

import os

import numpy as np
import pytest

import gemmcheck


def to_bf16(x):
    """Round float32 values to bfloat16 (nearest even), kept as float32."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def my_matmul(a, b, block=128):
    """The code under test: a k-blocked float32 product."""
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], block):
        x, y = a[:, k0:k0 + block], b[k0:k0 + block, :]
        if os.environ.get("EXAMPLE_BUG") and k0 == block:
            x, y = to_bf16(x), to_bf16(y)
        out += x @ y
    return out


@pytest.mark.parametrize("m,n,k", [(64, 48, 512), (33, 65, 256), (16, 16, 200)])
def test_my_matmul_is_a_correct_float32_product(m, n, k):
    rng = np.random.default_rng(m * 1000 + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    d = my_matmul(a, b)
    # was: np.testing.assert_allclose(d, a.astype(np.float64) @ b, rtol=1e-3, atol=1e-3)
    gemmcheck.check(a, b, d, model="compute=f32").assert_ok()

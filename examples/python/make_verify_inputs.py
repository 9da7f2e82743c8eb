#!/usr/bin/env python3
"""The inputs of the README's `gemmcheck verify` example, written into a folder (default: the
current one): a.npy (64 x 100) and b.npy (100 x 32), f32 values of a fixed seed, and d.npy,
their product computed as a half-precision pipeline would: the inputs rounded to f16, the
products summed in f32. Checked as plain f32 arithmetic it fails; under the model its producer
claims, "compute=f32 in=f16", it passes.

    python3 examples/python/make_verify_inputs.py [DIR]
"""
import os
import sys

import numpy as np


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    rng = np.random.default_rng(20261127)
    a = rng.standard_normal((64, 100)).astype(np.float32)
    b = rng.standard_normal((100, 32)).astype(np.float32)
    # f16 inputs, f32 sums: what a GPU's half-precision GEMM with f32 accumulation computes
    a16, b16 = a.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32)
    d = np.zeros((64, 32), np.float32)
    for k in range(100):  # one f32 rounding per multiply-add, in order
        d = (d + np.outer(a16[:, k], b16[k, :]).astype(np.float32)).astype(np.float32)
    os.makedirs(out, exist_ok=True)
    for name, x in (("a", a), ("b", b), ("d", d)):
        np.save(os.path.join(out, f"{name}.npy"), x)
    print(f"wrote a.npy (64x100), b.npy (100x32) and d.npy (64x32, f32) into {out}")


if __name__ == "__main__":
    main()

"""Demo of `gemmcheck oracle` from NumPy: a mixed bf16 x f16 + f32 -> f16 GEMM.

Writes A (bfloat16 bits as <u2), B (<f2) and C (<f4), asks gemmcheck for the exact result
rounded once to f16, and measures two NumPy evaluations against it in f16 ulps.
usage: oracle_demo.py GEMMCHECK_BINARY WORKDIR [SEED]
"""
import subprocess
import sys

import numpy as np


def bf16_bits(x32):
    """Round float32 values to bfloat16 (nearest even) and return the 16-bit patterns."""
    u = x32.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def ulps_f16(got, want):
    """Distance in units of the last place of f16, counted along the f16 number line."""
    def ordinal(x):
        i = x.astype(np.float16).view(np.int16).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFF), i)
    return np.abs(ordinal(got) - ordinal(want))


def main():
    exe, work = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 2026
    rng = np.random.default_rng(seed)
    m, n, k = 64, 48, 512
    a_bits = bf16_bits(rng.standard_normal((m, k)).astype(np.float32))
    b = (rng.standard_normal((k, n)) * np.exp2(rng.integers(-6, 4, (k, n)))).astype(np.float16)
    c = rng.standard_normal((m, n)).astype(np.float32)
    alpha, beta = 0.75, -1.5
    np.save(f"{work}/A.npy", a_bits)
    np.save(f"{work}/B.npy", b)
    np.save(f"{work}/C.npy", c)
    cmd = [exe, "oracle", "--a", f"{work}/A.npy", "--a-type", "bf16", "--b", f"{work}/B.npy",
           "--c", f"{work}/C.npy", "--alpha", str(alpha), "--beta", str(beta),
           "--out-type", "f16", "--out", f"{work}/D.npy"]
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    d = np.load(f"{work}/D.npy")
    assert d.dtype == np.float16 and d.shape == (m, n)

    a = bf16_values(a_bits)
    via_f64 = (alpha * (a @ b.astype(np.float64)) + beta * c.astype(np.float64)).astype(np.float16)
    via_f32 = (np.float32(alpha) * (a.astype(np.float32) @ b.astype(np.float32))
               + np.float32(beta) * c).astype(np.float16)
    for name, got in (("NumPy f64 accumulate -> f16", via_f64), ("NumPy f32 accumulate -> f16", via_f32)):
        u = ulps_f16(got, d)
        print(f"{name:30s}: {np.count_nonzero(u)} of {d.size} elements differ from the oracle, "
              f"max {u.max()} ulp(f16)")
    print(f"seed {seed} (rerun: scripts/demo-oracle.sh BUILD_DIR {seed})")


if __name__ == "__main__":
    main()

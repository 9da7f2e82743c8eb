"""Python backends for test_fuzz_python.py: module-level, as a worker imports them afresh."""
import ctypes
import time

import numpy as np

import gemmcheck

_F32 = "b0 row_major batched d_separate scale_f32"


def _f64_then_round(a, b, c, alpha, beta):
    """Correct for compute=f32: the product and the epilogue in f64, D rounded to f32."""
    r = alpha * np.matmul(a.astype(np.float64), b.astype(np.float64))
    if beta != 0:
        r = r + beta * c.astype(np.float64)
    return r.astype(np.float32)


def _drops_last_k(a, b, c, alpha, beta):
    """A kernel bug: the last k is never summed (a remainder loop that is off by one)."""
    k = a.shape[-1]
    kk = k - 1 if k > 1 else k
    r = alpha * np.matmul(a[..., :kk].astype(np.float64), b[..., :kk, :].astype(np.float64))
    if beta != 0:
        r = r + beta * c.astype(np.float64)
    return r.astype(np.float32)


def _segfault(a, b, c, alpha, beta):
    ctypes.string_at(0)  # reads address 0: SIGSEGV in the worker


def _sleeps(a, b, c, alpha, beta):
    time.sleep(3600)


def _refuses(a, b, c, alpha, beta):
    raise NotImplementedError('"gemm_kernel" not implemented for this layout')


def _wrong_type(a, b, c, alpha, beta):
    return np.zeros(c.shape, np.float64)


def amx_granted():
    """Whether this process holds Linux's AMX tile state (arch_prctl ARCH_GET_XCOMP_PERM, bit 18
    XTILEDATA); False where the call or the feature does not exist."""
    bits = ctypes.c_uint64(0)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(158, 0x1022, ctypes.byref(bits)) != 0:  # SYS_arch_prctl on x86-64
        return False
    return bool(bits.value >> 18 & 1)


def _reports_amx(a, b, c, alpha, beta):
    """Correct, unless its process holds the AMX tile state: then every element is off by one."""
    r = _f64_then_round(a, b, c, alpha, beta)
    return r + np.float32(1) if amx_granted() else r


def _rows():
    return [gemmcheck.Row("f32,f32,f32,f32", "compute=f32", _F32, entry="numpy")]


correct = gemmcheck.Backend(_f64_then_round, _rows(), name="numpy f64 then f32")
drops_last_k = gemmcheck.Backend(_drops_last_k, _rows(), name="drops the last k")
segfault = gemmcheck.Backend(_segfault, _rows())
sleeps = gemmcheck.Backend(_sleeps, _rows())
refuses = gemmcheck.Backend(_refuses, _rows())
wrong_type = gemmcheck.Backend(_wrong_type, _rows())
reports_amx = gemmcheck.Backend(_reports_amx, _rows(), name="off by one where AMX is granted")
not_a_backend = _f64_then_round

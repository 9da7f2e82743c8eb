"""The worker of a `python:` backend: `python3 -m gemmcheck.worker --backend python:TARGET:NAME
[the worker's options]`, started by a gemmcheck campaign, repro or shrink (never by hand).

It imports TARGET (a file, FILE.py, or a module name) and with it the framework, finds the
Backend named NAME there (a gemmcheck.Backend, or a test decorated with @gemmcheck.given),
defines it in libgemmcheck (gck_backend_define) and hands the process to libgemmcheck's worker
loop (gck_worker_main): from then on cases arrive exactly as for a C backend, and each call
comes back here with the operands, which become the framework's tensors (views of the guarded
buffers, no copy) for the user's function. A worker is a fresh interpreter, not a fork of the
user's: GNU OpenMP (PyTorch's CPU threads on Debian) cannot run in a child forked after its
threads started, so a forked worker would hang on a correct library. docs/FRAMEWORKS.md.
"""

import ctypes
import importlib
import importlib.util
import os
import sys

import numpy as np

# The framework's code runs in this process: gemmcheck does not ask Linux for the AMX tile state
# here (process-wide, never given back), so that the framework runs as in its users' programs,
# where AMX code that did not ask faults; GEMMCHECK_AMX=1 asks (docs/KERNELS.md).
os.environ.setdefault("GEMMCHECK_AMX", "0")

import gemmcheck as _g  # noqa: E402  (after the variable: the library reads it)

_A, _B, _C, _D = range(4)
_NOT_SUPPORTED, _ERROR = 1, 2


class _Operands(ctypes.Structure):
    _fields_ = [("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("c", ctypes.c_void_p),
                ("d", ctypes.c_void_p), ("region", ctypes.c_void_p * 4),
                ("region_bytes", ctypes.c_size_t * 4)]


_CALL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_g._Case),
                         ctypes.POINTER(_g._Row), ctypes.POINTER(_Operands), ctypes.c_void_p,
                         ctypes.c_size_t)


def _import_target(target):
    if target.endswith(".py") or os.sep in target:
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise _g.GemmcheckError(f"no file {path}")
        name = os.path.splitext(os.path.basename(path))[0]
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod
    return importlib.import_module(target)


def resolve(spec):
    """The Backend a `python:TARGET:NAME` spec names (importing TARGET)."""
    body = spec[len("python:"):]
    target, sep, name = body.rpartition(":")
    if not sep or not target or not name:
        raise _g.GemmcheckError(f"backend {spec}: expected python:FILE.py:NAME or "
                                "python:MODULE:NAME")
    obj = _import_target(target)
    for part in name.split("."):
        if not hasattr(obj, part):
            raise _g.GemmcheckError(f"backend {spec}: {target} has no '{name}'")
        obj = getattr(obj, part)
    obj = getattr(obj, "__gemmcheck_backend__", obj)
    if not isinstance(obj, _g.Backend):
        raise _g.GemmcheckError(f"backend {spec}: '{name}' is a {type(obj).__name__}, not a "
                                "gemmcheck.Backend (declare its rows: gemmcheck.Backend(fn, "
                                "rows=[gemmcheck.Row(...)]))")
    return obj


class _Adapter:
    """Turns one call's operands into the framework's views, calls the function, stores D."""

    def __init__(self, be, lib):
        self.be, self.lib = be, lib
        self.torch = None
        if be.framework == "torch":
            import torch
            self.torch = torch
            self.tdtype = {_g._F16: torch.float16, _g._BF16: torch.bfloat16,
                           _g._F32: torch.float32, _g._F64: torch.float64}

    def view(self, cs, x, ptr, fmt, rows, cols, batched):
        rs, cl = _g._i64(), _g._i64()
        self.lib.gck_case_op_strides(ctypes.byref(cs), x, ctypes.byref(rs), ctypes.byref(cl))
        extent = self.lib.gck_case_extent(ctypes.byref(cs), x)
        store = np.dtype(_g._STORAGE[fmt])
        if self.torch is not None and fmt == _g._BF16:
            store = np.dtype(np.int16)  # PyTorch has no uint16: the bits, viewed as bfloat16
        if extent > 0 and ptr:
            buf = (ctypes.c_char * (extent * store.itemsize)).from_address(ptr)
            base = np.frombuffer(buf, dtype=store)
        else:
            base = np.zeros(0, store)
        shape, strides = (rows, cols), (rs.value, cl.value)
        if batched:
            shape, strides = (cs.batch,) + shape, (self.lib.gck_case_stride(ctypes.byref(cs),
                                                                             x),) + strides
        if self.torch is None:
            return np.lib.stride_tricks.as_strided(
                base, shape, tuple(s * store.itemsize for s in strides))
        t = self.torch.from_numpy(base)
        if fmt == _g._BF16:
            t = t.view(self.torch.bfloat16)
        if 0 in shape:
            return self.torch.empty(shape, dtype=t.dtype)
        return self.torch.as_strided(t, shape, strides)

    def store(self, ret, d):
        if self.torch is not None:
            if not isinstance(ret, self.torch.Tensor):
                raise TypeError(f"the function returned {type(ret).__name__}, not a tensor")
            if ret.dtype != d.dtype or tuple(ret.shape) != tuple(d.shape):
                raise TypeError(f"the function returned {ret.dtype} {tuple(ret.shape)}; D is "
                                f"{d.dtype} {tuple(d.shape)}")
            d.copy_(ret)
            return
        ret = np.asarray(ret)
        if ret.dtype != d.dtype or ret.shape != d.shape:
            raise TypeError(f"the function returned {ret.dtype} {ret.shape}; D is {d.dtype} "
                            f"{d.shape}")
        np.copyto(d, ret)

    def __call__(self, ctx, case_p, row_p, ops_p, msg, mlen):
        try:
            cs, row, ops = case_p.contents, row_p.contents, ops_p.contents
            batched = bool(row.promises & _g._P_BATCHED)
            m, n, k = cs.m, cs.n, cs.k
            a = self.view(cs, _A, ops.a, cs.type_a, m, k, batched)
            b = self.view(cs, _B, ops.b, cs.type_b, k, n, batched)
            c = self.view(cs, _C, ops.c, cs.type_c, m, n, batched)
            d = self.view(cs, _D, ops.d, cs.type_d, m, n, batched)
            if self.be.writes == "out":
                self.be.fn(a, b, c, cs.alpha, cs.beta, out=d)
            else:
                self.store(self.be.fn(a, b, c, cs.alpha, cs.beta), d)
            return 0
        except BaseException as e:  # the framework's refusal is the finding's cause
            text = str(e).strip().splitlines()
            text = f"{type(e).__name__}: {text[0] if text else ''}".encode("utf-8", "replace")
            n = min(len(text), max(int(mlen) - 1, 0))
            if n:
                ctypes.memmove(msg, text, n)
            if mlen:
                ctypes.memset(msg + n, 0, 1)
            unimpl = isinstance(e, NotImplementedError) or "not implemented for" in str(e)
            return _NOT_SUPPORTED if unimpl else _ERROR


def _prototypes(lib):
    lib.gck_case_op_strides.argtypes = [ctypes.POINTER(_g._Case), ctypes.c_int,
                                        ctypes.POINTER(_g._i64), ctypes.POINTER(_g._i64)]
    lib.gck_case_op_strides.restype = None
    for fn in ("gck_case_extent", "gck_case_stride"):
        getattr(lib, fn).argtypes = [ctypes.POINTER(_g._Case), ctypes.c_int]
        getattr(lib, fn).restype = _g._i64
    lib.gck_backend_define.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                       ctypes.POINTER(_g._Row), ctypes.c_size_t, _CALL,
                                       ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.gck_backend_define.restype = ctypes.c_int
    lib.gck_worker_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.gck_worker_main.restype = ctypes.c_int


def main(args):
    os.environ["GEMMCHECK_IN_WORKER"] = "1"  # fuzz() refuses to start a campaign in here
    lib = _g._load()
    _prototypes(lib)
    spec = args[args.index("--backend") + 1] if "--backend" in args[:-1] else ""
    keep = []  # the table and the callback stay alive while libgemmcheck serves with them
    try:
        be = resolve(spec)
        rows = (_g._Row * len(be.rows))(*[r._c() for r in be.rows])
        call = _CALL(_Adapter(be, lib))
        keep += [rows, call]
        msg = ctypes.create_string_buffer(1024)
        if lib.gck_backend_define(spec.encode(), be.version_line().encode(), rows, len(be.rows),
                                  call, None, msg, len(msg)) != 0:
            raise _g.GemmcheckError(msg.value.decode(errors="replace"))
    except BaseException as e:  # the supervisor reports it as the backend's set-up error
        text = str(e).strip().splitlines()
        args = args + ["--setup-error", f"{type(e).__name__}: {text[0] if text else ''}"]
    argv = (ctypes.c_char_p * (len(args) + 2))(b"gemmcheck-worker",
                                               *[a.encode() for a in args], None)
    return lib.gck_worker_main(len(args) + 1, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

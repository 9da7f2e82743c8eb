"""gemmcheck from Python: the exact GEMM oracle and the checker of libgemmcheck.

    import gemmcheck
    d_exact = gemmcheck.oracle(a, b)                  # D = A @ B rounded once, exactly
    verdict = gemmcheck.check(a, b, d, model="compute=f32")
    verdict.assert_ok()                               # or: assert verdict, verdict.explain()

The module calls libgemmcheck in-process through ctypes (standard library only; NumPy for the
arrays): a call costs microseconds plus the arithmetic, with no process start and no files, which
matters to a test suite making thousands of checks. docs/PYTHON.md explains the choice, the model
vocabulary and where the library is looked for.

Arrays: float16, float32 and float64 arrays are f16, f32 and f64; bfloat16 travels as uint16
arrays of its bits with the type named (a_type="bf16", out_dtype="bf16"), as the command line
does. 2-D arrays are matrices, 3-D arrays batches (a 2-D operand is shared by every member).
"""

import ctypes
import os

import numpy as np

__all__ = ["oracle", "check", "Model", "Verdict", "Element", "GemmcheckError", "library_path",
           "RATIO_BINS", "Row", "Backend", "fuzz", "shrink", "given", "FuzzResult", "Finding",
           "binary_path", "memory_kept", "release_memory"]

# ---- the library ------------------------------------------------------------------------------

_F16, _BF16, _TF32, _F32, _F64 = range(5)
_FORMATS = {"f16": _F16, "bf16": _BF16, "tf32": _TF32, "f32": _F32, "f64": _F64}
_FORMAT_NAMES = {v: k for k, v in _FORMATS.items()}
# other names users write (NumPy's, PyTorch's, C's, fpN), as gck_format_parse takes them
_ALIASES = {"fp16": "f16", "half": "f16", "float16": "f16", "bfloat16": "bf16", "fp32": "f32",
            "float32": "f32", "float": "f32", "single": "f32", "fp64": "f64", "float64": "f64",
            "double": "f64"}


def _canonical(name):
    """A format name as gemmcheck writes it ("fp32", "float32", "F32" -> "f32"); other values
    are returned unchanged (and refused where they are used)."""
    if not isinstance(name, str):
        return name
    low = name.lower()
    return _ALIASES.get(low, low if low in _FORMATS else name)
_STORAGE = {_F16: np.float16, _BF16: np.uint16, _F32: np.float32, _F64: np.float64}
_KINDS = ("out_of_tolerance", "nonfinite_mismatch", "out_of_bounds_write", "input_modified",
          "crash", "hang", "nondeterministic", "unimplemented", "error", "fpenv_modified",
          "improbable_error")
_ROW_MAJOR = 1
_ORACLES = {"exact": 0, "mpfr": 1, "both": 2}
# gck_support_row promises (gemmcheck/backend.h)
_P_ALPHA0_NO_READ_AB, _P_BETA0_NO_READ_C, _P_MAY_SKIP_ZERO = 1 << 0, 1 << 1, 1 << 2
_P_ROW_MAJOR, _P_BATCHED, _P_D_SEPARATE, _P_SCALE_F64 = 1 << 3, 1 << 4, 1 << 5, 1 << 8
_ACC_SCALAR, _ACC_BLOCK_FMA = 0, 1
_ROUNDINGS = {"nearest": 0, "faithful": 1}
_STAT_AUTO, _STAT_RANDOM, _STAT_RANDOM_AB, _STAT_OFF = range(4)
_ORDERS_ANY = (1 << 6) - 1

_i64, _dbl, _int, _bool, _uint = (ctypes.c_int64, ctypes.c_double, ctypes.c_int, ctypes.c_bool,
                                  ctypes.c_uint)


class _Case(ctypes.Structure):
    _fields_ = [("m", _i64), ("n", _i64), ("k", _i64), ("alpha", _dbl), ("beta", _dbl),
                ("scale_type", _int), ("order", _int), ("transa", _int), ("transb", _int),
                ("lda", _i64), ("ldb", _i64), ("ldc", _i64), ("ldd", _i64), ("d_is_c", _bool),
                ("batch", _i64), ("stride_a", _i64), ("stride_b", _i64), ("stride_c", _i64),
                ("stride_d", _i64), ("type_a", _int), ("type_b", _int), ("type_c", _int),
                ("type_d", _int), ("compute", _int)]


class _Model(ctypes.Structure):
    _fields_ = [("compute", _int), ("inputs_rounded", _bool), ("input_format", _int),
                ("acc", _int), ("block", _int), ("epilogue", _int), ("ftz", _bool),
                ("daz", _bool), ("orders", _uint), ("rounding", _int)]


class _Row(ctypes.Structure):
    _fields_ = [("a", _int), ("b", _int), ("c", _int), ("d", _int), ("compute", _int),
                ("model", _Model), ("promises", _uint), ("entry", ctypes.c_char_p)]


class _Options(ctypes.Structure):
    _fields_ = [("strict_ieee", _bool), ("threads", _int), ("oracle", _int),
                ("sample_above", _dbl), ("sample_lines", _int), ("copy_limit", _dbl),
                ("stat_data", _int)]


class _Element(ctypes.Structure):
    _fields_ = [("batch", _i64), ("i", _i64), ("j", _i64), ("got", _dbl), ("expected", _dbl),
                ("error", _dbl), ("bound", _dbl), ("ratio", _dbl), ("stat", _dbl),
                ("exact_case", _bool), ("degenerate", _bool), ("rule", ctypes.c_char * 96)]


class _Result(ctypes.Structure):
    _fields_ = [("elements", _i64), ("exact_elements", _i64), ("degenerate", _i64),
                ("lenient", _i64), ("count", _i64 * len(_KINDS)),
                ("worst", _Element * len(_KINDS)), ("max_ratio", _Element), ("max_stat", _dbl),
                ("stat_elements", _i64), ("bias_up", _i64), ("bias_down", _i64),
                ("bias_toward0", _i64), ("bias_away", _i64), ("bias_p", _dbl),
                ("stat_note", ctypes.c_char * 96), ("bias_ss", _dbl), ("total_elements", _i64), ("sampled", _bool), ("oracle_disagreements", _i64),
                ("disagreement", _Element), ("ratio_bins", _i64 * 9),
                ("oracle_path", ctypes.c_char * 192)]

# gck_check_result.ratio_bins: the elements by error/bound
RATIO_BINS = ("0", "<=1e-6", "<=1e-5", "<=1e-4", "<=1e-3", "<=1e-2", "<=0.1", "<=1", ">1")


class GemmcheckError(ValueError):
    """Bad input (the library's one-line message), or a library that does not fit the module."""


def library_path():
    """Where libgemmcheck is loaded from: $GEMMCHECK_LIBRARY if set, else the library installed
    with this module (the relative path recorded at install), else the system's search."""
    env = os.environ.get("GEMMCHECK_LIBRARY")
    if env:
        return env
    try:
        from . import _install  # written by `cmake --install`
        return os.path.normpath(os.path.join(os.path.dirname(__file__), _install.LIBRARY))
    except ImportError:
        return "libgemmcheck.so.0"


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise GemmcheckError(f"cannot load libgemmcheck ({path}): {e}; set GEMMCHECK_LIBRARY "
                             "to the file") from None
    lib.gck_struct_size.restype = ctypes.c_size_t
    lib.gck_struct_size.argtypes = [ctypes.c_char_p]
    for name, mirror in (("gck_case", _Case), ("gck_model", _Model), ("gck_support_row", _Row),
                         ("gck_check_options", _Options), ("gck_element_report", _Element),
                         ("gck_check_result", _Result)):
        size = lib.gck_struct_size(name.encode())
        if size != ctypes.sizeof(mirror):
            raise GemmcheckError(f"{path}: struct {name} is {size} bytes, this module expects "
                                 f"{ctypes.sizeof(mirror)}: the library and the module come from "
                                 "different gemmcheck versions")
    msg = [ctypes.c_char_p, ctypes.c_size_t]
    p = ctypes.c_void_p
    for fn in ("gck_oracle_exact", "gck_oracle_mpfr"):
        getattr(lib, fn).restype = _int
        getattr(lib, fn).argtypes = [ctypes.POINTER(_Case), p, p, p, p, _int] + msg
    lib.gck_check_values.restype = _int
    lib.gck_check_values.argtypes = [ctypes.POINTER(_Case), ctypes.POINTER(_Row),
                                     ctypes.POINTER(_Options), p, p, p, p,
                                     ctypes.POINTER(_Result)] + msg
    lib.gck_case_validate.restype = _int
    lib.gck_case_validate.argtypes = [ctypes.POINTER(_Case)] + msg
    lib.gck_case_init.argtypes = [ctypes.POINTER(_Case), _i64, _i64, _i64]
    lib.gck_case_init.restype = None
    lib.gck_stat_describe.restype = None
    lib.gck_stat_describe.argtypes = [ctypes.POINTER(_Result), ctypes.c_char_p, ctypes.c_size_t]
    for fn in ("gck_memory_kept", "gck_memory_release"):
        getattr(lib, fn).restype = ctypes.c_size_t
        getattr(lib, fn).argtypes = []
    _lib = lib
    return lib


def memory_kept():
    """Bytes the library keeps between calls in this process: blocks of 4 MiB or more of the
    exact oracle's and the checker's large arrays, kept for the next call's arrays of about
    their size (at most 24 blocks and an eighth of the machine's memory, at most 4 GiB)."""
    return int(_load().gck_memory_kept())


def release_memory():
    """Give every kept block back to the system; returns the bytes given back. Later calls
    keep blocks again."""
    return int(_load().gck_memory_release())


# ---- operands ---------------------------------------------------------------------------------

def _format_of(arr, named, what):
    """The gemmcheck format of an operand: its dtype, or the name given for a uint16 array."""
    dt = arr.dtype
    named = _canonical(named)
    if named is not None:
        if named not in _FORMATS or named == "tf32":
            raise GemmcheckError(f"{what}: unknown element type '{named}' (f16, bf16, f32, f64)")
        fmt = _FORMATS[named]
        if dt != np.dtype(_STORAGE[fmt]):
            raise GemmcheckError(f"{what}: type {named} needs a {np.dtype(_STORAGE[fmt])} array, "
                                 f"got {dt}")
        return fmt
    for fmt in (_F16, _F32, _F64):
        if dt == np.dtype(_STORAGE[fmt]):
            return fmt
    if dt == np.uint16:
        raise GemmcheckError(f"{what} is uint16: pass {what}_type='bf16' if it holds bfloat16 bits")
    raise GemmcheckError(f"{what}: dtype {dt} is not an element type (float16, float32, float64, "
                         "or uint16 holding bfloat16)")


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):  # dlpack.h, DLTensor (the layout every framework exports)
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(_i64)),
                ("strides", ctypes.POINTER(_i64)), ("byte_offset", ctypes.c_uint64)]


_DL_CPU, _DL_FLOAT, _DL_BFLOAT = 1, 2, 4
_DL_TYPES = {(_DL_FLOAT, 16): (np.float16, None), (_DL_FLOAT, 32): (np.float32, None),
             (_DL_FLOAT, 64): (np.float64, None), (_DL_BFLOAT, 16): (np.uint16, "bf16")}


def _host(x, named, what):
    """An operand as a NumPy array and its element type's name: NumPy arrays as they are, a
    framework's tensor (anything with __dlpack__: PyTorch, JAX, CuPy, TensorFlow) as a view of
    its memory, bfloat16 included (uint16 bits, type "bf16"). The framework is not imported."""
    if x is None or isinstance(x, np.ndarray) or not hasattr(x, "__dlpack__"):
        return x, named
    try:
        cap = x.__dlpack__()
    except (RuntimeError, TypeError, BufferError) as e:
        if not hasattr(x, "detach"):
            raise GemmcheckError(f"{what}: its __dlpack__ failed: {e}") from None
        x = x.detach()  # a tensor that requires grad exports only detached
        cap = x.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    t = _DLTensor.from_address(get(cap, b"dltensor"))
    if t.device.device_type != _DL_CPU:
        raise GemmcheckError(f"{what} is on a device (DLPack device type "
                             f"{t.device.device_type}): pass a host copy (.cpu())")
    key = (t.dtype.code, t.dtype.bits)
    if key not in _DL_TYPES or t.dtype.lanes != 1:
        raise GemmcheckError(f"{what}: DLPack type code {t.dtype.code} with {t.dtype.bits} bits "
                             "is not an element type (f16, bf16, f32, f64)")
    dtype, implied = _DL_TYPES[key]
    item = np.dtype(dtype).itemsize
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(t.ndim))
    else:
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(t.ndim))
    if any(s < 0 for s in strides):
        raise GemmcheckError(f"{what} has a negative stride: pass a copy")
    span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    addr = (t.data or 0) + t.byte_offset
    base = (np.frombuffer((ctypes.c_char * (span * item)).from_address(addr), dtype=dtype)
            if span else np.zeros(0, dtype))
    arr = np.lib.stride_tricks.as_strided(base, shape, tuple(s * item for s in strides))
    arr = np.array(arr)  # a copy while the tensor is alive: the check never sees it change
    named = _canonical(named)
    if implied and named not in (None, implied):
        raise GemmcheckError(f"{what} is a bfloat16 tensor, not {named}")
    return arr, named or implied


def _operand(x, what):
    """A C-contiguous 2-D or 3-D array: (batch or None, rows, cols, array)."""
    a = np.asarray(x)
    if a.ndim not in (2, 3):
        raise GemmcheckError(f"{what} must be 2-D (a matrix) or 3-D (a batch), not {a.ndim}-D")
    a = np.ascontiguousarray(a)
    if a.ndim == 2:
        return None, a.shape[0], a.shape[1], a
    return a.shape[0], a.shape[1], a.shape[2], a


def _scale(v, what):
    try:
        return float(v)
    except (TypeError, ValueError):
        raise GemmcheckError(f"{what} must be a real number, not {v!r}") from None


class _Problem:
    """The case for arrays a, b (and c, d): row-major, tight leading dimensions, strided batches
    with stride 0 for a 2-D operand shared by the batch."""

    def __init__(self, a, b, c, alpha, beta, trans_a, trans_b, types, out_fmt):
        self.alpha, self.beta = _scale(alpha, "alpha"), _scale(beta, "beta")
        ba, ra, ca, self.a = _operand(a, "a")
        bb, rb, cb, self.b = _operand(b, "b")
        m, ka = (ca, ra) if trans_a else (ra, ca)
        kb, n = (cb, rb) if trans_b else (rb, cb)
        if ka != kb:
            raise GemmcheckError(f"inner dimensions differ: op(a) is {m}x{ka}, op(b) is {kb}x{n}")
        batches = {x for x in (ba, bb) if x is not None}
        self.c = None
        bc = None
        if c is not None:
            bc, rc, cc, self.c = _operand(c, "c")
            if (rc, cc) != (m, n):
                raise GemmcheckError(f"c is {rc}x{cc}, the product is {m}x{n}")
            if bc is not None:
                batches.add(bc)
        if len(batches) > 1:
            raise GemmcheckError(f"batch sizes differ: {sorted(batches)}")
        if self.beta != 0 and self.c is None:
            raise GemmcheckError("beta is not 0 but no c was given")
        self.batch = batches.pop() if batches else None
        fa = _format_of(self.a, types.get("a"), "a")
        fb = _format_of(self.b, types.get("b"), "b")
        fc = _format_of(self.c, types.get("c"), "c") if self.c is not None else out_fmt
        self.m, self.n, self.k = m, n, ka
        lib = _load()
        cs = _Case()
        lib.gck_case_init(ctypes.byref(cs), m, n, ka)
        cs.alpha, cs.beta, cs.scale_type = self.alpha, self.beta, _F64
        cs.order = _ROW_MAJOR
        cs.transa, cs.transb = int(bool(trans_a)), int(bool(trans_b))
        cs.lda, cs.ldb, cs.ldc, cs.ldd = self.a.shape[-1], self.b.shape[-1], n, n
        cs.d_is_c = False
        cs.batch = self.batch or 1
        cs.stride_a = self.a.shape[-2] * self.a.shape[-1] if ba else 0
        cs.stride_b = self.b.shape[-2] * self.b.shape[-1] if bb else 0
        cs.stride_c = m * n if bc else 0
        cs.stride_d = m * n
        cs.type_a, cs.type_b, cs.type_c, cs.type_d = fa, fb, fc, out_fmt
        cs.compute = _F64
        self.case = cs

    def out_shape(self):
        return (self.m, self.n) if self.batch is None else (self.batch, self.m, self.n)

    def pointers(self):
        return (self.a.ctypes.data, self.b.ctypes.data,
                self.c.ctypes.data if self.c is not None else None)


def _out_format(out_dtype, a, b, types):
    if out_dtype is None:
        fa = _format_of(np.asarray(a), types.get("a"), "a")
        fb = _format_of(np.asarray(b), types.get("b"), "b")
        if fa == fb:
            return fa
        return _F64 if _F64 in (fa, fb) else _F32  # mixed inputs: the wider IEEE type
    if isinstance(out_dtype, str):
        out_dtype = _canonical(out_dtype)
        if out_dtype not in _FORMATS or out_dtype == "tf32":
            raise GemmcheckError(f"out_dtype '{out_dtype}' is not an element type "
                                 "(f16, bf16, f32, f64)")
        return _FORMATS[out_dtype]
    dt = np.dtype(out_dtype)
    for fmt in (_F16, _F32, _F64):
        if dt == np.dtype(_STORAGE[fmt]):
            return fmt
    raise GemmcheckError(f"out_dtype {dt} is not an element type (float16, float32, float64, "
                         "or 'bf16')")


def _fail(status, buf):
    if status != 0:
        raise GemmcheckError(buf.value.decode(errors="replace") or f"gemmcheck status {status}")


# ---- the oracle -------------------------------------------------------------------------------

def oracle(a, b, c=None, alpha=1, beta=0, out_dtype=None, *, trans_a=False, trans_b=False,
           a_type=None, b_type=None, c_type=None, method="exact", threads=0):
    """D = alpha * op(a) @ op(b) + beta * c, computed exactly and rounded once (to nearest even,
    with subnormals and overflow to +-Inf) to out_dtype, with the BLAS and IEEE semantics of
    gemmcheck (beta = 0 does not read c; alpha = 0 or K = 0 does not read a and b).

    out_dtype: np.float16, np.float32, np.float64 or "bf16" (returned as uint16 bits); default
    the inputs' type. method: "exact" (integer superaccumulator), "mpfr", or "both" (compared).
    """
    (a, a_type), (b, b_type) = _host(a, a_type, "a"), _host(b, b_type, "b")
    c, c_type = _host(c, c_type, "c")
    types = {"a": a_type, "b": b_type, "c": c_type}
    out_fmt = _out_format(out_dtype, a, b, types)
    pr = _Problem(a, b, c, alpha, beta, trans_a, trans_b, types, out_fmt)
    if method not in ("exact", "mpfr", "both"):
        raise GemmcheckError(f"method '{method}' is not exact, mpfr or both")
    lib = _load()
    buf = ctypes.create_string_buffer(512)
    _fail(lib.gck_case_validate(ctypes.byref(pr.case), buf, len(buf)), buf)
    d = np.zeros(pr.out_shape(), dtype=_STORAGE[out_fmt])
    pa, pb, pc = pr.pointers()
    fns = {"exact": [lib.gck_oracle_exact], "mpfr": [lib.gck_oracle_mpfr],
           "both": [lib.gck_oracle_exact, lib.gck_oracle_mpfr]}[method]
    results = []
    for fn in fns:
        out = np.zeros_like(d)
        _fail(fn(ctypes.byref(pr.case), pa, pb, pc, out.ctypes.data, threads, buf, len(buf)), buf)
        results.append(out)
    if len(results) == 2 and results[0].tobytes() != results[1].tobytes():
        raise RuntimeError("internal error: the exact and MPFR oracles differ on this input; "
                           "please report it with the arrays")
    return results[0]


# ---- the checker ------------------------------------------------------------------------------

class Model:
    """The arithmetic a GEMM claims, in the vocabulary of gemmcheck's support tables:

    compute   precision of products and sums: "f16", "bf16", "tf32", "f32", "f64"
    inputs    what A and B are rounded to first (e.g. "tf32"); None: read exactly
    acc       "scalar" (one rounding per operation, FMA or not, any order) or "block-FMA"
              (blocks of `block` products fused before one rounding, tensor cores)
    epilogue  format of alpha*AB + beta*C (default: compute)
    ftz, daz  results may be flushed to zero / subnormal inputs may be read as zero
    skip_zero terms with an exactly-zero factor may be skipped (Inf*0 or NaN*0 dropped)
    rounding  "nearest" (every rounding to nearest even: D must lie in the rounded interval of
              the exact value widened by the bound, and the statistical tier applies) or
              "faithful" (D may be either neighbour of a value the arithmetic can form)

    Model.parse("compute=f32 in=tf32 block-FMA/16 epi=f32 FTZ skip0 nearest") reads the same
    words `gemmcheck backends` prints.
    """

    def __init__(self, compute="f32", inputs=None, acc="scalar", block=0, epilogue=None,
                 ftz=False, daz=False, skip_zero=False, rounding="nearest"):
        compute, inputs, epilogue = _canonical(compute), _canonical(inputs), _canonical(epilogue)
        for what, v in (("compute", compute), ("inputs", inputs), ("epilogue", epilogue)):
            if v is not None and v not in _FORMATS:
                raise GemmcheckError(f"model {what} '{v}' is not a format (f16, bf16, tf32, "
                                     "f32, f64)")
        if acc not in ("scalar", "block-FMA"):
            raise GemmcheckError(f"model acc '{acc}' is not scalar or block-FMA")
        if int(block) < 0:
            raise GemmcheckError("model block must be >= 0")
        if rounding not in _ROUNDINGS:
            raise GemmcheckError(f"model rounding '{rounding}' is not nearest or faithful")
        self.rounding = rounding
        self.compute, self.inputs, self.acc, self.block = compute, inputs, acc, int(block)
        self.epilogue = epilogue or compute
        self.ftz, self.daz, self.skip_zero = bool(ftz), bool(daz), bool(skip_zero)

    @classmethod
    def parse(cls, text):
        kw = {}
        for tok in text.split():
            key, _, val = tok.partition("=")
            if key == "compute" and val:
                kw["compute"] = val
            elif key == "in" and val:
                kw["inputs"] = None if val == "exact" else val
            elif key == "epi" and val:
                kw["epilogue"] = val
            elif tok == "scalar":
                kw["acc"] = "scalar"
            elif tok.startswith("block-FMA"):
                kw["acc"] = "block-FMA"
                if tok.startswith("block-FMA/"):
                    try:
                        kw["block"] = int(tok[len("block-FMA/"):])
                    except ValueError:
                        raise GemmcheckError(f"model: bad block size in '{tok}'") from None
            elif tok in ("FTZ", "DAZ"):
                kw[tok.lower()] = True
            elif tok == "skip0":
                kw["skip_zero"] = True
            elif tok in _ROUNDINGS:
                kw["rounding"] = tok
            else:
                raise GemmcheckError(f"model: unknown word '{tok}' (compute=F in=F|exact scalar "
                                     "block-FMA[/n] epi=F FTZ DAZ skip0 nearest faithful)")
        return cls(**kw)

    def __repr__(self):
        acc = self.acc + (f"/{self.block}" if self.acc == "block-FMA" and self.block else "")
        return (f"Model('compute={self.compute} in={self.inputs or 'exact'} {acc} "
                f"epi={self.epilogue}{' FTZ' if self.ftz else ''}{' DAZ' if self.daz else ''}"
                f"{' skip0' if self.skip_zero else ''} {self.rounding}')")

    def _row(self, case):
        r = _Row()
        r.a, r.b, r.c, r.d = case.type_a, case.type_b, case.type_c, case.type_d
        r.compute = _FORMATS[self.compute]
        m = r.model
        m.compute = _FORMATS[self.compute]
        m.inputs_rounded = self.inputs is not None
        m.input_format = _FORMATS[self.inputs or self.compute]
        m.acc = _ACC_BLOCK_FMA if self.acc == "block-FMA" else _ACC_SCALAR
        m.block = self.block
        m.epilogue = _FORMATS[self.epilogue]
        m.ftz, m.daz = self.ftz, self.daz
        m.orders = _ORDERS_ANY
        m.rounding = _ROUNDINGS[self.rounding]
        r.promises = (_P_ALPHA0_NO_READ_AB | _P_BETA0_NO_READ_C | _P_ROW_MAJOR | _P_BATCHED |
                      _P_D_SEPARATE | _P_SCALE_F64 | (_P_MAY_SKIP_ZERO if self.skip_zero else 0))
        r.entry = b"python"
        return r


class Element:
    """One element as the checker saw it: index, value, the exact result rounded to D's type,
    the exact error |got - exact| (rounded up), the hard bound and their ratio, and the
    statistical ratio (None where that tier did not apply)."""

    __slots__ = ("kind", "index", "got", "expected", "error", "bound", "ratio", "stat", "rule",
                 "d_type")

    def __init__(self, kind, e, batched, d_type="D's type"):
        self.kind, self.d_type = kind, d_type
        self.index = (e.batch, e.i, e.j) if batched else (e.i, e.j)
        self.got, self.expected, self.error = e.got, e.expected, e.error
        self.bound, self.ratio = e.bound, e.ratio
        self.stat = None if e.stat != e.stat else e.stat
        self.rule = e.rule.decode(errors="replace")

    def __repr__(self):
        return (f"{self.kind} at {self.index}: got {self.got!r}, exact (rounded to "
                f"{self.d_type}) {self.expected!r}, error {self.error:.3g}, bound "
                f"{self.bound:.3g} (error/bound {self.ratio:.3g}"
                f"{'' if self.stat is None else f', statistical ratio {self.stat:.3g}'}"
                f"{f'; {self.rule}' if self.rule else ''})")


class Verdict:
    """The result of a check: truthy when no element failed.

    ok        no finding
    counts    failing elements per finding kind ({"out_of_tolerance": 3, ...})
    worst     the worst failing element of each kind, worst first (Element)
    max_ratio the element with the largest error/bound (Element), failing or not
    elements  elements compared; sampled: only a sample of rows and columns was
    distribution  elements by error/bound, {"0": n, "<=1e-6": n, ..., "<=1": n, ">1": n}
                  (elements with a finite error; RATIO_BINS names the bins)
    sums      how the exact values were summed (error-free splitting into f64 GEMMs for large
              products, or the path that summed the products one by one, and why)
    max_stat  the largest statistical ratio: the error beyond D's own rounding over the
              statistical tier's allowance (above 1 happens with probability below 1e-12 per
              element for correct round-to-nearest arithmetic on random data)
    stat      one line on the statistical tier: where it applied, the sign test, or why not
    tier      "stat" (improbable_error fails the check, the default) or "hard"
    """

    def __init__(self, r, batched, model, tier="stat", d_type="D's type"):
        self.model, self.tier = model, tier
        self.elements, self.total_elements = r.elements, r.total_elements
        self.exact_elements, self.lenient, self.sampled = r.exact_elements, r.lenient, r.sampled
        failing = [i for i, k in enumerate(_KINDS)
                   if r.count[i] and (tier == "stat" or k != "improbable_error")]
        self.counts = {_KINDS[i]: r.count[i] for i in failing}
        self.worst = sorted((Element(_KINDS[i], r.worst[i], batched, d_type) for i in failing),
                            key=lambda e: -r.count[_KINDS.index(e.kind)])
        self.improbable = r.count[_KINDS.index("improbable_error")]
        self.max_ratio = Element("max_ratio", r.max_ratio, batched, d_type)
        self.max_stat, self.stat_elements = r.max_stat, r.stat_elements
        self.sign_test_p = r.bias_p
        buf = ctypes.create_string_buffer(512)
        _load().gck_stat_describe(ctypes.byref(r), buf, len(buf))
        self.stat = buf.value.decode("utf-8", "replace")
        self.distribution = dict(zip(RATIO_BINS, r.ratio_bins))
        self.sums = r.oracle_path.decode("utf-8", "replace")
        self.ok = not self.counts

    def __bool__(self):
        return self.ok

    def explain(self):
        ratios = [e.ratio for e in [self.max_ratio] + self.worst if e.ratio == e.ratio]
        head = (f"{'pass' if self.ok else 'FAIL'}: {self.elements} of {self.total_elements} "
                f"elements checked{' (sampled)' if self.sampled else ''} against the exact "
                f"result under {self.model!r}; largest error/bound {max(ratios):.3g}")
        lines = [head, f"  statistical tier: {self.stat}"]
        for e in self.worst:
            lines.append(f"  {self.counts[e.kind]} element(s) {e!r}")
        return "\n".join(lines)

    __str__ = explain

    def __repr__(self):
        return f"<gemmcheck.Verdict {'ok' if self.ok else self.counts}>"

    def assert_ok(self):
        """Raise AssertionError with the worst elements when the check found anything."""
        if not self.ok:
            raise AssertionError(self.explain())
        return self


def check(a, b, d, c=None, alpha=1, beta=0, *, trans_a=False, trans_b=False, a_type=None,
          b_type=None, c_type=None, d_type=None, model=None, method="exact", threads=0,
          strict_ieee=False, sample_above=0, tier="stat", random=None):
    """Check a D computed anywhere against the exact result of alpha*op(a)@op(b) + beta*c, with
    the hard error bound of the arithmetic `model` claims (a Model, its string form, or None:
    scalar arithmetic in f64 if an operand is f64, else f32, any evaluation order) and the
    statistical tier (tier="hard": counted, not failing). random: True vouches that a, b and c
    hold independent random values, False turns the tier off, None (default) tests a sample of
    a and b. Returns a Verdict; the hard tier never fails a result inside the model's bound, the
    statistical tier fails a correct one with probability below 1e-12 per element."""
    if tier not in ("stat", "hard"):
        raise GemmcheckError(f"tier '{tier}' is not stat or hard")
    (a, a_type), (b, b_type) = _host(a, a_type, "a"), _host(b, b_type, "b")
    (c, c_type), (d, d_type) = _host(c, c_type, "c"), _host(d, d_type, "d")
    if model is None:
        types = {np.asarray(x).dtype for x in (a, b, c, d) if x is not None}
        model = Model(compute="f64" if np.dtype(np.float64) in types else "f32")
    elif isinstance(model, str):
        model = Model.parse(model)
    elif not isinstance(model, Model):
        raise GemmcheckError("model must be a gemmcheck.Model, its string form, or None")
    types = {"a": a_type, "b": b_type, "c": c_type}
    dd = np.asarray(d)
    out_fmt = _format_of(dd, d_type, "d")
    pr = _Problem(a, b, c, alpha, beta, trans_a, trans_b, types, out_fmt)
    if dd.shape != pr.out_shape():
        raise GemmcheckError(f"d has shape {dd.shape}, the product has {pr.out_shape()}")
    dd = np.ascontiguousarray(dd)
    pr.case.compute = _FORMATS[model.compute]
    row = model._row(pr.case)
    opt = _Options()
    opt.strict_ieee, opt.threads = bool(strict_ieee), int(threads)
    if method not in _ORACLES:
        raise GemmcheckError(f"method '{method}' is not exact, mpfr or both")
    opt.oracle = _ORACLES[method]
    opt.sample_above = float(sample_above)
    opt.stat_data = _STAT_AUTO if random is None else _STAT_RANDOM if random else _STAT_OFF
    lib = _load()
    buf = ctypes.create_string_buffer(512)
    _fail(lib.gck_case_validate(ctypes.byref(pr.case), buf, len(buf)), buf)
    res = _Result()
    pa, pb, pc = pr.pointers()
    _fail(lib.gck_check_values(ctypes.byref(pr.case), ctypes.byref(row), ctypes.byref(opt), pa,
                               pb, pc, dd.ctypes.data, ctypes.byref(res), buf, len(buf)), buf)
    if res.oracle_disagreements:
        raise RuntimeError("internal error: the exact and MPFR oracles differ on this input")
    return Verdict(res, pr.batch is not None, model, tier, _FORMAT_NAMES[out_fmt])


# ---- a Python callable as a backend -----------------------------------------------------------
# A Backend is a function plus the support table it declares, as a C backend's table: type
# tuples, the arithmetic model of each, the promises. `gemmcheck fuzz --backend
# python:FILE.py:NAME` (or python:MODULE:NAME) runs it in worker processes started with
# `python3 -m gemmcheck.worker`, which import the file (and so the framework) and serve cases to
# the function exactly as to any backend; `fuzz()` below runs that command and reads its report.
# docs/FRAMEWORKS.md.

_PROMISES = {"a0": 1 << 0, "b0": 1 << 1, "skip0": 1 << 2, "row_major": 1 << 3,
             "batched": 1 << 4, "d_separate": 1 << 5, "d_in_place": 1 << 6, "scale_f32": 1 << 7,
             "scale_f64": 1 << 8, "int32_dims": 1 << 9, "scale_f16": 1 << 10,
             "product_only": 1 << 11}
_SETUP_EXIT = 2


def _tuple(text):
    """"A,B,C,D[:compute]" (format aliases allowed) -> the five format codes."""
    if not isinstance(text, str):
        raise GemmcheckError(f"row types must be a string 'A,B,C,D[:compute]', not {text!r}")
    head, _, comp = text.partition(":")
    names = [_canonical(t.strip()) for t in head.split(",")]
    if len(names) != 4 or any(n not in _FORMATS or n == "tf32" for n in names):
        raise GemmcheckError(f"row types '{text}': A,B,C,D[:compute] with types f16, bf16, f32, "
                             "f64")
    comp = _canonical(comp.strip()) if comp else ("f64" if names[3] == "f64" else "f32")
    if comp not in _FORMATS:
        raise GemmcheckError(f"row types '{text}': unknown compute type '{comp}'")
    return tuple(_FORMATS[n] for n in names) + (_FORMATS[comp],)


class Row:
    """One row of a Python backend's support table: the type tuple ("A,B,C,D[:compute]"), the
    arithmetic model it promises (a Model or its words; default scalar arithmetic in the compute
    type), the promises by name (a0: alpha = 0 reads neither A nor B; b0: beta = 0 does not read
    C; skip0; row_major; batched; d_separate; d_in_place; scale_f32 / scale_f64 / scale_f16: the
    type alpha and beta are taken in; product_only: alpha = 1 and beta = 0 only), and the entry
    (what the row calls, for the reports)."""

    def __init__(self, types, model=None, promises=("row_major", "d_separate", "scale_f64"),
                 entry=None):
        self.types = types
        self.formats = _tuple(types)
        comp = _FORMAT_NAMES[self.formats[4]]
        if model is None:
            model = Model(compute=comp)
        elif isinstance(model, str):
            model = Model.parse(model)
        elif not isinstance(model, Model):
            raise GemmcheckError(f"row {types}: model must be a Model or its words")
        self.model = model
        if isinstance(promises, str):
            promises = promises.replace(",", " ").split()
        bad = [p for p in promises if p not in _PROMISES]
        if bad:
            raise GemmcheckError(f"row {types}: unknown promise '{bad[0]}' (known: "
                                 f"{', '.join(_PROMISES)})")
        if not {"d_separate", "d_in_place"} & set(promises):
            raise GemmcheckError(f"row {types}: promise d_separate, d_in_place or both (where D "
                                 "may be)")
        if not {"scale_f16", "scale_f32", "scale_f64"} & set(promises):
            raise GemmcheckError(f"row {types}: promise the type of alpha and beta (scale_f64, "
                                 "scale_f32 or scale_f16)")
        self.promises = tuple(promises)
        self.entry = entry or ""

    def _c(self):
        r = _Row()
        r.a, r.b, r.c, r.d, r.compute = self.formats
        case = _Case()
        case.type_a, case.type_b, case.type_c, case.type_d = self.formats[:4]
        r.model = self.model._row(case).model
        r.promises = sum(_PROMISES[p] for p in set(self.promises))
        if self.model.skip_zero:
            r.promises |= _PROMISES["skip0"]
        r.entry = self.entry.encode()[:95]
        return r

    def __repr__(self):
        return f"Row({self.types!r}, {self.model!r}, promises={self.promises!r})"


class Backend:
    """A Python GEMM as a gemmcheck backend: `fn`, its support table `rows` (Row objects), the
    framework whose tensors it takes ("torch" or "numpy"), and how it gives D:

        fn(a, b, c, alpha, beta) -> D        (writes="return", the default)
        fn(a, b, c, alpha, beta, out=D)      (writes="out": fn writes D's view)

    a and b are op(A) and op(B) as views of the guarded buffers (m x k and k x n; batch x m x k
    for a row that promises "batched"), c and D views of C and D; bf16 and f16 travel as the
    framework's own types (NumPy: bf16 as uint16 bits). A returned D must have D's shape and
    type. `name` labels the reports; `version` (a string or a function returning one, called in
    the worker) is the version line.

    A Backend must be reachable by name from its module (a module-level variable, or a test
    decorated with @gemmcheck.given): each worker process imports the module afresh."""

    def __init__(self, fn, rows, *, framework="numpy", writes="return", name=None, version=None):
        if not callable(fn):
            raise GemmcheckError(f"Backend: fn must be callable, not {fn!r}")
        rows = list(rows)
        if not rows or not all(isinstance(r, Row) for r in rows):
            raise GemmcheckError("Backend: rows must be a non-empty list of gemmcheck.Row")
        if framework not in ("torch", "numpy"):
            raise GemmcheckError(f"Backend: framework '{framework}' is not torch or numpy")
        if writes not in ("return", "out"):
            raise GemmcheckError(f"Backend: writes '{writes}' is not return or out")
        self.fn, self.rows, self.framework, self.writes = fn, rows, framework, writes
        self.name = name or getattr(fn, "__qualname__", "python")
        self.version = version

    def version_line(self):
        v = self.version() if callable(self.version) else self.version
        import sys
        return v or f"{self.name} (Python {sys.version.split()[0]})"

    def __repr__(self):
        return f"<gemmcheck.Backend {self.name}: {len(self.rows)} rows>"


def _reference(target):
    """The `python:` spec that names target in a fresh interpreter: python:/abs/file.py:NAME,
    found among the globals of the module that defines target's function (or __main__)."""
    import sys
    if isinstance(target, str):
        return target if target.startswith("python:") else "python:" + target
    fn = getattr(target, "fn", target)
    mods = [sys.modules.get(getattr(fn, "__module__", None) or ""), sys.modules.get("__main__")]
    for mod in (m for m in mods if m is not None):
        names = [n for n, v in vars(mod).items()
                 if v is target or getattr(v, "__gemmcheck_backend__", None) is target]
        if names:
            path = getattr(mod, "__file__", None)
            # a package's module by its name (importable anywhere); a script or a test file,
            # whose name depends on how it was run, by its path
            where = mod.__name__ if "." in mod.__name__ or not path else os.path.abspath(path)
            return f"python:{where}:{names[0]}"
    raise GemmcheckError(f"{target!r} is not reachable by name from its module: a worker "
                         "process imports the module afresh, so define the Backend as a "
                         "module-level variable (not inside a function)")


def binary_path():
    """The gemmcheck command: $GEMMCHECK_BINARY if set, else the one installed with this module,
    else `gemmcheck` on PATH."""
    env = os.environ.get("GEMMCHECK_BINARY")
    if env:
        return env
    try:
        from . import _install
        rel = getattr(_install, "BINARY", None)
        if rel:
            return os.path.normpath(os.path.join(os.path.dirname(__file__), rel))
    except ImportError:
        pass
    return "gemmcheck"


class Finding:
    """One cause of a campaign's findings (findings grouped by kind and rule, as the report's
    "causes"): kind, cause (the rule: the mechanism, or the backend's own message), findings
    (distinct findings behind it), case (its smallest reproducer string) and, once shrunk,
    minimal (the smallest case that fails the same way), details (the campaign's words on the
    finding behind `case`: the backend's message in full, what differed), worst (its worst
    element, a dict: batch, i, j, got, expected, error, bound, ratio, rule), and replay(), the
    one command that re-runs it."""

    def __init__(self, c, spec, finding):
        self.kind, self.cause, self.case = c["kind"], c.get("rule", ""), c["case"]
        worst, self.details = finding.get("worst"), finding.get("details", "")
        self.flags = finding.get("repro_flags", "")
        self.findings, self.cases = c.get("findings", 1), c.get("cases", 1)
        self.worst, self.minimal, self.spec = worst, None, spec

    def replay(self):
        flags = "" if self.minimal else self.flags  # e.g. " --concurrency 4 --repeat 10000"
        return f"gemmcheck repro --backend '{self.spec}'{flags} '{self.minimal or self.case}'"

    def line(self):
        w, where = self.worst, ""
        if w:
            where = (f"; worst element ({w.get('batch', 0)}, {w.get('i')}, {w.get('j')}): got "
                     f"{w.get('got')}, exact {w.get('expected')}, error {w.get('error')}, bound "
                     f"{w.get('bound')} (error/bound {w.get('ratio')})")
        # a kind without a rule (nondeterministic, ...): what the campaign saw, in its words
        said = self.cause or self.details
        return (f"{self.kind} ({self.findings} finding(s), {self.cases} case(s)): {said}"
                f"{where}\n    replay: {self.replay()}")

    def __repr__(self):
        return f"<gemmcheck.Finding {self.kind}: {self.cause[:60]}>"


class FuzzResult:
    """What fuzz() found: `ok` (no finding), `findings` (one Finding per cause), `cases`,
    `matrix` (the support matrix: per type tuple, cases passed, failed, unsupported), `report`
    (the campaign's JSON report as a dict), `exit_status` (gemmcheck fuzz's), `command` and
    `output` (its summary)."""

    def __init__(self, status, report, spec, command, output):
        self.exit_status, self.report, self.command, self.output = status, report, command, output
        summ = report.get("summary", {})
        self.cases = summ.get("cases", 0)
        found = {f.get("signature"): f for f in report.get("findings", [])}
        self.findings = [Finding(c, spec, found.get(c.get("signature"), {}))
                         for c in report.get("causes", [])]
        self.matrix = summ.get("support_matrix", [])
        self.ok = status == 0 and not self.findings

    def __bool__(self):
        return self.ok

    def by_kind(self):
        out = {}
        for f in self.findings:
            out[f.kind] = out.get(f.kind, 0) + 1
        return out

    def explain(self):
        lines = [f"{'pass' if self.ok else 'FAIL'}: {self.cases} cases, "
                 f"{len(self.findings)} cause(s) of findings {self.by_kind() or ''}"]
        lines += ["  " + f.line() for f in self.findings[:10]]
        return "\n".join(lines)

    __str__ = explain

    def assert_ok(self):
        if not self.ok:
            raise AssertionError(self.explain())
        return self


def _run_tool(args, binary, env):
    import subprocess
    try:
        return subprocess.run([binary] + args, capture_output=True, text=True, env=env)
    except OSError as e:
        raise GemmcheckError(f"cannot run {binary}: {e}; set GEMMCHECK_BINARY to the gemmcheck "
                             "command") from None


def _tool_env():
    import sys
    env = dict(os.environ)
    env.setdefault("GEMMCHECK_PYTHON", sys.executable)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if "GEMMCHECK_LIBRARY" not in env:
        env["GEMMCHECK_LIBRARY"] = os.path.abspath(library_path()) if os.sep in library_path() \
            else library_path()
    return env


def shrink(target, case, *, kind=None, time=60, binary=None):
    """The smallest case that still fails like `case` on target (gemmcheck shrink): the minimal
    reproducer string, or None when the case does not fail."""
    spec = _reference(target)
    args = ["shrink", "--backend", spec, "--time", str(time)] + (["--kind", kind] if kind else [])
    p = _run_tool(args + [case], binary or binary_path(), _tool_env())
    if p.returncode == _SETUP_EXIT:
        raise GemmcheckError((p.stderr.strip().splitlines() or ["gemmcheck shrink failed"])[-1])
    for line in p.stdout.splitlines():
        if line.startswith("minimal:"):
            return line.split(":", 1)[1].strip()
    return None


def fuzz(target, *, time=10, cases=None, types=None, seed=None, jobs=None, report=None,
         junit=None, html=None, shrink_findings=True, shrink_time=30, tier="stat", args=(),
         binary=None):
    """Fuzz a Backend (or a test decorated with @given) with gemmcheck's case stream, checker and
    shrinker: runs `gemmcheck fuzz --backend python:FILE:NAME` (the same generator, reproducer
    strings, reports and exit statuses as any campaign) and returns a FuzzResult. Each worker is
    a fresh interpreter that imports target's module: a crash or a hang of the function is a
    finding, not the end of the test. types: "A,B,C,D[:compute]" tuples (a list or ;-joined)
    instead of the table; report/junit/html: files to keep; args: more `gemmcheck fuzz`
    options. The first cause of each numerical kind is shrunk (gemmcheck shrink, up to
    shrink_time seconds: the attempts share one worker, so PyTorch is imported once or twice)."""
    import json
    import tempfile
    if os.environ.get("GEMMCHECK_IN_WORKER"):
        raise GemmcheckError("fuzz() called while a worker imports the backend's module: guard "
                             "the script's campaign with `if __name__ == \"__main__\":`")
    spec = _reference(target)
    if isinstance(types, (list, tuple)):
        types = ";".join(types)
    with tempfile.TemporaryDirectory(prefix="gemmcheck-fuzz-") as tmp:
        rep = report or os.path.join(tmp, "report.json")
        cmd = ["fuzz", "--backend", spec, "--report", rep, "--no-progress", "--tier", tier]
        cmd += ["--cases", str(int(cases))] if cases is not None else ["--time", str(time)]
        for opt, val in (("--types", types), ("--seed", seed), ("--jobs", jobs),
                         ("--junit", junit), ("--html", html)):
            if val is not None:
                cmd += [opt, str(val)]
        cmd += [str(a) for a in args]
        binary = binary or binary_path()
        p = _run_tool(cmd, binary, _tool_env())
        if p.returncode in (_SETUP_EXIT, 3) or not os.path.exists(rep):
            err = [ln for ln in p.stderr.splitlines() if ln.startswith("gemmcheck")]
            raise GemmcheckError((err or p.stderr.strip().splitlines() or
                                  [f"gemmcheck fuzz exited {p.returncode}"])[-1])
        with open(rep) as f:
            data = json.load(f)
    res = FuzzResult(p.returncode, data, spec, [binary] + cmd, p.stdout)
    if shrink_findings:
        done = set()
        for f in res.findings:
            if f.kind in ("crash", "hang", "unimplemented", "error") or f.kind in done:
                continue  # the first cause of each numerical kind: a crash, a hang or an
            done.add(f.kind)  # exception says all there is with the case the campaign found
            try:
                f.minimal = shrink(spec, f.case, kind=f.kind, time=shrink_time, binary=binary)
            except GemmcheckError:
                f.minimal = None
    return res


def given(rows=None, *, backend=None, framework="torch", writes="return", time=5, cases=None,
          types=None, seed=None, jobs=None, name=None, **kw):
    """A pytest test that fuzzes the function it decorates:

        @gemmcheck.given(rows=[gemmcheck.Row("f32,f32,f32,f32", promises=...)], time=10)
        def test_addmm(a, b, c, alpha, beta):
            return torch.addmm(c, a, b, beta=beta, alpha=alpha)

    The test fails with every distinct finding (kind, cause, the worst element and a one-line
    replay, shrunk to the smallest failing case). `backend=` takes a ready Backend instead of
    rows (e.g. gemmcheck.frameworks.torch_addmm). Other keywords go to fuzz()."""
    def wrap(fn):
        be = backend or Backend(fn, rows or [], framework=framework, writes=writes,
                                name=name or fn.__qualname__)

        def test():
            fuzz(be, time=time, cases=cases, types=types, seed=seed, jobs=jobs,
                 **kw).assert_ok()
        test.__name__, test.__qualname__ = fn.__name__, fn.__qualname__
        test.__module__, test.__doc__ = fn.__module__, fn.__doc__
        test.__gemmcheck_backend__ = be
        return test
    return wrap

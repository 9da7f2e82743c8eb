"""Fuzz PyTorch's CPU GEMMs (torch.matmul, torch.addmm, torch.baddbmm) with gemmcheck: its case
stream (odd leading dimensions and strides as views, transposes, batches, alpha and beta, NaN in
C under beta = 0, subnormals, Inf, cancellation), its exact oracle and checker, its shrinker.
Run it with pytest, gemmcheck's Python module and command installed (or PYTHONPATH,
GEMMCHECK_LIBRARY and GEMMCHECK_BINARY pointing into a build tree; docs/FRAMEWORKS.md):

    pytest examples/python/test_torch_fuzz.py                      # 20 s per function and type
    GEMMCHECK_FUZZ_CASES=10000 pytest examples/python/test_torch_fuzz.py    # a count instead

Each function is fuzzed for f32, f64, bf16 and f16 under the promises of its documentation
(gemmcheck.frameworks). A finding fails the test unless it is one of the defects of PyTorch
releases before 2.1 recorded in docs/DEVIATIONS.md, each with its upstream issue and the
release that fixed it; those are listed, not hidden: the test prints them.

EXAMPLE_BUG=1 also fuzzes two planted bugs, a function that rounds its inputs to bfloat16 first
and one that drops the last k; both must be found and shrunk to a case of a few elements.
"""

import os

import pytest

import gemmcheck
from gemmcheck.frameworks import torch_addmm, torch_baddbmm, torch_matmul

torch = pytest.importorskip("torch")

SECONDS = float(os.environ.get("GEMMCHECK_FUZZ_TIME", "20"))
CASES = int(os.environ["GEMMCHECK_FUZZ_CASES"]) if os.environ.get("GEMMCHECK_FUZZ_CASES") else None
FUNCTIONS = {"matmul": torch_matmul, "addmm": torch_addmm, "baddbmm": torch_baddbmm}
TYPES = ("f32", "f64", "bf16")
OLD = tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 1)


def _beta0(f):
    return " beta=0 " in f.case


def _cpu_has_amx():
    try:
        return " amx_tile " in open("/proc/cpuinfo").read().replace("\n", " ")
    except OSError:
        return False


AMX = _cpu_has_amx()

# The defects of PyTorch < 2.1 on the CPU that the campaigns find (docs/DEVIATIONS.md): name,
# and which findings they explain (function, type, finding).
KNOWN = [
    ("bf16 GEMMs die with SIGILL on a CPU with AMX: a generated TDPBF16PS without a tile "
     "configuration (oneDNN inside PyTorch 1.13; docs/DEVIATIONS.md)",
     lambda fn, t, f: AMX and t == "bf16" and f.kind == "crash" and "signal 4" in f.cause),
    ("bf16 GEMMs on more than one thread with AMX give wrong results that change from call to "
     "call (oneDNN inside PyTorch 1.13; right with one thread or ONEDNN_MAX_CPU_ISA="
     "AVX512_CORE_BF16; docs/DEVIATIONS.md)",
     lambda fn, t, f: AMX and t == "bf16" and f.kind == "nondeterministic"),
    ("baddbmm with beta = 0 keeps NaN and Inf of C or of the uninitialised output (pytorch#96037; "
     "fixed in 2.1)",
     lambda fn, t, f: fn == "baddbmm" and _beta0(f) and
     f.kind in ("nonfinite_mismatch", "nondeterministic")),
    ("with k = 0, D = beta * C with beta rounded to bf16 or f16 first (near the largest finite "
     "value the rounded beta overflows: Inf where the exact result is finite)",
     lambda fn, t, f: t in ("bf16", "f16") and " k=0 " in f.case and
     (f.kind == "out_of_tolerance" or
      (f.kind == "nonfinite_mismatch" and "oracle finite and overflow impossible" in f.cause))),
    ("bf16 baddbmm refuses some strided C: 'could not construct a memory descriptor using "
     "strides' (oneDNN)",
     lambda fn, t, f: fn == "baddbmm" and t == "bf16" and f.kind == "error" and
     "memory descriptor" in f.cause),
    ("an Inf input comes out NaN: oneDNN 2.6.3 under PyTorch's bf16 GEMM (odd K), or a bf16 "
     "partial sum of the reference path overflowing to the other infinity",
     lambda fn, t, f: t == "bf16" and f.kind == "nonfinite_mismatch" and
     "from an Inf input" in f.cause),
    ("bf16 GEMM reference path accumulates in bf16 (pytorch#83863, #95125; fixed in 2.1)",
     lambda fn, t, f: t == "bf16" and " k=0 " not in f.case and
     f.kind in ("out_of_tolerance", "improbable_error", "nonfinite_mismatch")),
]


def fuzz(backend, types):
    # (not shrunk: each finding is matched against the known defects as the campaign found it)
    return gemmcheck.fuzz(backend, types=types, time=SECONDS, cases=CASES, shrink_findings=False)


def explained(fn, t, f):
    return next((name for name, match in KNOWN if OLD and match(fn, t, f)), None)


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_pytorch_cpu(fn, t, capsys):
    r = fuzz(FUNCTIONS[fn], f"{t},{t},{t},{t}")
    if CASES:
        assert r.cases >= CASES, f"{r.cases} cases, fewer than the {CASES} asked"
    unknown = [f for f in r.findings if not explained(fn, t, f)]
    with capsys.disabled():
        print(f"\n{fn} {t}: {r.cases} cases, {len(r.findings)} cause(s) of findings")
        for f in r.findings:
            print(f"  {explained(fn, t, f) or 'NOT EXPLAINED'}\n    {f.line()}")
    assert not unknown, "\n".join(f.line() for f in unknown)


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_pytorch_cpu_f16(fn, capsys):
    """PyTorch 1.13 has no f16 GEMM kernel on the CPU: `unimplemented` findings carrying its
    message (one cause per kernel that refuses: "addmm_impl_cpu_", "bmm", "baddbmm")."""
    r = fuzz(FUNCTIONS[fn], "f16,f16,f16,f16:f32")
    with capsys.disabled():
        print(f"\n{fn} f16: {r.cases} cases\n" + "\n".join("  " + f.line() for f in r.findings))
    if not OLD:
        assert r.ok, r.explain()
        return
    unimpl = [f for f in r.findings if f.kind == "unimplemented"]
    assert unimpl, r.explain()
    for f in unimpl:
        assert "not implemented for 'Half'" in f.cause, f.cause
        assert f.replay().startswith("gemmcheck repro --backend 'python:")
    unknown = [f for f in r.findings if f.kind != "unimplemented" and not explained(fn, "f16", f)]
    assert not unknown, r.explain()


def _matmul(a, b, c, alpha, beta):
    return torch.matmul(a, b)


# Mixed inputs, as cuBLAS takes them (bf16 A, f32 B and D): PyTorch does not promote.
mixed_matmul = gemmcheck.Backend(
    _matmul, [gemmcheck.Row("bf16,f32,f32,f32:f32", "compute=f32",
                            "product_only b0 row_major d_separate scale_f32")],
    framework="torch", name="torch.matmul, mixed")


def test_a_dtype_mismatch_is_an_error_with_its_message():
    r = gemmcheck.fuzz(mixed_matmul, time=max(SECONDS / 4, 5), shrink_findings=False)
    assert r.findings and {f.kind for f in r.findings} == {"error"}, r.explain()
    for f in r.findings:  # PyTorch's words differ by path, and with K = 0 it returns A's type
        assert ("expected scalar type" in f.cause or "dtype" in f.cause or
                "the function returned torch.bfloat" in f.cause), f.cause
    assert any("expected scalar type BFloat16 but found Float" in f.details for f in r.findings)


@gemmcheck.given(rows=[gemmcheck.Row("f32,f32,f32,f32", "compute=f32",
                                     "b0 row_major d_separate scale_f32", entry="torch.addmm")],
                 time=max(SECONDS / 2, 5), cases=CASES)
def test_addmm_written_by_hand(a, b, c, alpha, beta):
    """The same check for a function of one's own, declared in place."""
    return torch.addmm(c, a, b, beta=beta, alpha=alpha)


# ---- planted bugs ------------------------------------------------------------------------------

def _rounds_inputs(a, b, c, alpha, beta):
    return torch.addmm(c, a.bfloat16().float(), b.bfloat16().float(), beta=beta, alpha=alpha)


def _drops_last_k(a, b, c, alpha, beta):
    k = a.shape[-1] - 1 if a.shape[-1] > 1 else a.shape[-1]
    return torch.addmm(c, a[:, :k], b[:k, :], beta=beta, alpha=alpha)


_F32 = [gemmcheck.Row("f32,f32,f32,f32", "compute=f32", "b0 row_major d_separate scale_f32")]
rounds_inputs_to_bf16 = gemmcheck.Backend(_rounds_inputs, _F32, framework="torch")
drops_last_k = gemmcheck.Backend(_drops_last_k, _F32, framework="torch")


@pytest.mark.skipif(not os.environ.get("EXAMPLE_BUG"), reason="EXAMPLE_BUG=1 plants the bugs")
@pytest.mark.parametrize("planted", ["rounds_inputs_to_bf16", "drops_last_k"])
def test_planted_bug_is_found_and_shrunk(planted, capsys):
    # a number of cases, not seconds: on a loaded machine a 5-second campaign once ended before
    # its first worker had imported PyTorch ("no case ran"); either bug shows in most cases
    # (the out_of_tolerance finding alone is shrunk, as fuzz() would shrink each numerical kind's
    # first cause)
    r = gemmcheck.fuzz(globals()[planted], cases=200, shrink_findings=False)
    bad = [f for f in r.findings if f.kind == "out_of_tolerance"]
    assert bad, r.explain()
    bad[0].minimal = gemmcheck.shrink(globals()[planted], bad[0].case, kind="out_of_tolerance",
                                      time=float(os.environ.get("GEMMCHECK_SHRINK_TIME", "30")))
    with capsys.disabled():
        print(f"\n{planted}:\n{r.explain()}")
    assert bad[0].minimal, "the shrinker returned no smaller case"
    dims = {k: int(v) for k, v in (w.split("=") for w in bad[0].minimal.split()
                                   if w.split("=")[0] in ("m", "n", "k"))}
    assert dims["m"] * dims["n"] <= 4 and dims["k"] <= 8, bad[0].minimal

"""Ready-made gemmcheck backends for the GEMMs of frameworks, on the CPU:

    gemmcheck fuzz --backend python:gemmcheck.frameworks:torch_addmm
    gemmcheck.fuzz(gemmcheck.frameworks.torch_matmul, time=60)

torch_matmul (torch.matmul: a plain product, 2-D or batched), torch_addmm (torch.addmm, and
Tensor.addmm_ when D is C), torch_baddbmm (torch.baddbmm and Tensor.baddbmm_, batches). Each
declares f32, f64, bf16 and f16, the floating types PyTorch defines for these functions; where
a build refuses one ("addmm_impl_cpu_" not implemented for 'Half' in PyTorch 1.13 on the CPU)
the campaign reports it as an `unimplemented` finding with PyTorch's message. The promises and
models, and the documentation they come from, are in docs/FRAMEWORKS.md; in short:

- beta = 0 does not read C (torch.addmm and torch.baddbmm: "If beta is 0, then input will be
  ignored, and nan and inf in it will not be propagated"); nothing is promised for alpha = 0;
- alpha and beta become the tensors' scalar type on the CPU (f32 for f32, f64 for f64) and f32
  for bf16 and f16 (PyTorch's "opmath" type);
- f32 and f64 are computed in their own precision, in any order; bf16 and f16 products are
  summed in f32 and D rounded once (PyTorch's CPU bf16 GEMM is oneDNN's matmul, f32
  accumulation), the model of every BLAS's mixed-precision GEMM.

PyTorch is imported in the worker that serves the backend, not here.
"""

import gemmcheck

_SCALE = {"f32": "scale_f32", "f64": "scale_f64", "bf16": "scale_f32", "f16": "scale_f32"}
_TYPES = ("f32", "f64", "bf16", "f16")


def _flushing_bf16():
    """Whether this CPU has the bfloat16 dot-product instructions oneDNN uses for PyTorch's bf16
    GEMMs (AVX512-BF16's VDPBF16PS, AMX's TDPBF16PS), which read subnormal inputs as zero and
    flush subnormal results, whatever MXCSR says (Intel SDM, vol. 2)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln for ln in f if ln.startswith("flags")), "").split()
    except OSError:
        return True  # unknown CPU: allow the flushing rather than cry wolf
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _rows(entry, promises):
    out = []
    for t in _TYPES:
        comp = "f64" if t == "f64" else "f32"
        flush = " FTZ DAZ" if t == "bf16" and _flushing_bf16() else ""
        out.append(gemmcheck.Row(f"{t},{t},{t},{t}:{comp}", f"compute={comp} epi={comp}{flush}",
                                 promises + (_SCALE[t],), entry=entry))
    return out


def _version(name):
    def version():
        import torch
        show = torch.__config__.show()
        cap = [ln.split(":", 1)[1].strip() for ln in show.splitlines()
               if "CPU capability" in ln]
        dnn = [ln.strip(" -") for ln in show.splitlines() if "MKL-DNN" in ln or "oneDNN" in ln]
        return (f"{name} of PyTorch {torch.__version__} (CPU capability "
                f"{cap[0] if cap else 'unknown'}, {torch.get_num_threads()} threads"
                f"{', ' + dnn[0] if dnn else ''})")
    return version


def _matmul(a, b, c, alpha, beta, out):
    import torch
    out.copy_(torch.matmul(a, b))


def _same(x, y):
    return x.data_ptr() == y.data_ptr() and x.stride() == y.stride()


def _addmm(a, b, c, alpha, beta, out):
    import torch
    if _same(c, out):
        c.addmm_(a, b, beta=beta, alpha=alpha)
    else:
        out.copy_(torch.addmm(c, a, b, beta=beta, alpha=alpha))


def _baddbmm(a, b, c, alpha, beta, out):
    import torch
    if _same(c, out):
        c.baddbmm_(a, b, beta=beta, alpha=alpha)
    else:
        out.copy_(torch.baddbmm(c, a, b, beta=beta, alpha=alpha))


torch_matmul = gemmcheck.Backend(
    _matmul, _rows("torch.matmul", ("product_only", "b0", "row_major", "batched", "d_separate")),
    framework="torch", writes="out", name="torch.matmul", version=_version("torch.matmul"))
torch_addmm = gemmcheck.Backend(
    _addmm, _rows("torch.addmm", ("b0", "row_major", "d_separate", "d_in_place")),
    framework="torch", writes="out", name="torch.addmm", version=_version("torch.addmm"))
torch_baddbmm = gemmcheck.Backend(
    _baddbmm, _rows("torch.baddbmm", ("b0", "row_major", "batched", "d_separate", "d_in_place")),
    framework="torch", writes="out", name="torch.baddbmm", version=_version("torch.baddbmm"))

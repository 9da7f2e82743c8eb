#!/usr/bin/env python3
"""torch.matmul, and torch.addmm / torch.baddbmm, on CUDA fuzzed by gemmcheck's own campaign
(gemmcheck.fuzz): the generator's shapes, strides, transposed and broadcast batch views, special
values and reproducer strings, the guard pages, the rerun and concurrency checks, and the
shrinker, for one backend per operation and math mode that changes the arithmetic:

    f32        allow_tf32 off            f32 products, f32 sums
    f32+tf32   allow_tf32 on             inputs rounded to tf32, f32 sums
    f16        reduced precision off     f16 inputs, f32 sums, D rounded once
    f16+rr     reduced precision on      f16 inputs, sums allowed in f16
    bf16       reduced precision off     bf16 inputs, f32 sums, D rounded once
    bf16+rr    reduced precision on      bf16 inputs, sums allowed in bf16

The operations (--ops): `matmul` is torch.matmul, a plain product (alpha = 1, beta = 0, D
apart), with broadcast batches; `addmm` is torch.addmm for one matrix and torch.baddbmm for a
batch of several, with alpha, beta and C, and their in-place forms (Tensor.addmm_, Tensor.baddbmm_) when D
is C: the GEMM under nn.Linear with a bias. beta = 0 must not read C (PyTorch documents that NaN
and Inf in it are not propagated). Each backend's function copies the operands (views of
gemmcheck's guarded host buffers) to the device, calls PyTorch there and copies D back into its
view. Every model allows blocks of products fused before one rounding (tensor cores) and
flushed subnormals.

    device_torch_fuzz.py --time 90 --out DIR [--jobs 4] [--seed 46] [--shrink-time 15]
                         [--settings f32,f16,...] [--ops matmul,addmm]

GCK_TORCH_DEVICE (cuda, or cpu for a dry run) picks the device; the workers read it too.
Writes DIR/torch-fuzz-SETTING.json (torch.matmul's campaign reports), DIR/torch-fuzz-addmm-
SETTING.json (torch.addmm's) and DIR/torch-fuzz.json (one record per operation and setting:
cases, findings by cause with their replay lines, the minimal case of each numerical kind);
prints a table. The time is shared evenly among the campaigns. Exit status: 0 no finding, 1 findings, 2 usage or set-up error
(no PyTorch, no device)."""
import argparse
import json
import os
import sys

import gemmcheck
from gemmcheck import frameworks

DEVICE = os.environ.get("GCK_TORCH_DEVICE", "cuda")
# the promises of each operation (docs/FRAMEWORKS.md)
OPS = {
    "matmul": ("product_only", "b0", "row_major", "batched", "d_separate", "scale_f32"),
    "addmm": ("b0", "row_major", "batched", "d_separate", "d_in_place", "scale_f32"),
}

# name: (types, the torch.backends.cuda.matmul flags, the model the setting promises)
SETTINGS = {
    "f32": ("f32,f32,f32,f32:f32", {"allow_tf32": False}, "compute=f32 block-FMA FTZ DAZ"),
    "f32+tf32": ("f32,f32,f32,f32:f32", {"allow_tf32": True},
                 "compute=f32 in=tf32 block-FMA FTZ DAZ"),
    "f16": ("f16,f16,f16,f16:f32", {"allow_fp16_reduced_precision_reduction": False},
            "compute=f32 block-FMA FTZ DAZ"),
    "f16+rr": ("f16,f16,f16,f16:f16", {"allow_fp16_reduced_precision_reduction": True},
               "compute=f16 block-FMA FTZ DAZ"),
    "bf16": ("bf16,bf16,bf16,bf16:f32", {"allow_bf16_reduced_precision_reduction": False},
             "compute=f32 block-FMA FTZ DAZ"),
    "bf16+rr": ("bf16,bf16,bf16,bf16:bf16", {"allow_bf16_reduced_precision_reduction": True},
                "compute=bf16 block-FMA FTZ DAZ"),
}


def _apply(flags):
    """Set the math-mode flags once per worker; a flag this PyTorch lacks is an error (a
    setting that cannot be made is not checked under its model). They are CUDA's: the CPU dry
    run leaves them alone."""
    import torch
    if DEVICE == "cpu":
        return
    for k, v in flags.items():
        setattr(torch.backends.cuda.matmul, k, v)


def _addmm(a, b, c, alpha, beta, out):
    """torch.addmm (one matrix) or torch.baddbmm (a batch of several) on the device, through
    gemmcheck.frameworks' calls of them: their in-place forms on the device's copy of C when D
    is C, that copy then copied back into C's view."""
    if a.dim() == 3 and a.shape[0] == 1:  # a batch of one: the matrices themselves
        a, b, c, out = a[0], b[0], c[0], out[0]
    dc, in_place = c.to(DEVICE), frameworks._same(c, out)
    call = frameworks._addmm if dc.dim() == 2 else frameworks._baddbmm
    call(a.to(DEVICE), b.to(DEVICE), dc, alpha, beta, dc if in_place else out)
    if in_place and dc.data_ptr() != c.data_ptr():
        c.copy_(dc)


def _function(op, flags):
    done = []

    def call(a, b, c, alpha, beta, out):
        import torch
        if not done:
            _apply(flags)
            done.append(True)
        if op == "matmul":
            out.copy_(torch.matmul(a.to(DEVICE), b.to(DEVICE)))
        else:
            _addmm(a, b, c, alpha, beta, out)
        if DEVICE != "cpu":
            torch.cuda.synchronize()
    return call


def _warm_up():
    """In a worker, before it serves: CUDA's context, cuBLAS's handle and the kernels' modules
    load on the first call (seconds), which the first case's deadline should not pay for."""
    import torch
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        x = torch.ones(16, 16, dtype=dt, device=DEVICE)
        torch.matmul(x, x)
        torch.matmul(x.unsqueeze(0).expand(2, 16, 16), x)
        torch.addmm(x, x, x, beta=0.5, alpha=2)
        torch.baddbmm(x.expand(2, 16, 16), x.expand(2, 16, 16), x.expand(2, 16, 16))
    torch.cuda.synchronize()


if os.environ.get("GEMMCHECK_IN_WORKER") and DEVICE != "cpu":
    _warm_up()


def _title(op):
    return "torch.matmul" if op == "matmul" else "torch.addmm/baddbmm"


def _version(op, name):
    def version():
        import torch
        where = "the CPU"
        if DEVICE != "cpu":
            where = f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
        return f"{_title(op)} ({name}) of PyTorch {torch.__version__} on {where}"
    return version


def _backend(op, name):
    types, flags, model = SETTINGS[name]
    row = gemmcheck.Row(types, model, OPS[op], entry=f"{_title(op)} {name}")
    return gemmcheck.Backend(_function(op, flags), [row], framework="torch", writes="out",
                             name=f"{_title(op)} {name}", version=_version(op, name))


# module-level names, by which the workers find each backend: f32, f16_rr, ... for torch.matmul
# (the names of the first version), addmm_f32, addmm_f16_rr, ... for torch.addmm
BACKENDS = {}
for _op in OPS:
    for _name in SETTINGS:
        _var = ("" if _op == "matmul" else _op + "_") + _name.replace("+", "_")
        globals()[_var] = BACKENDS[_op, _name] = _backend(_op, _name)


def _record(op, name, res, report):
    s = res.report.get("summary", {})
    return dict(op=op, setting=name, model=SETTINGS[name][2], cases=res.cases,
                exit=res.exit_status,
                report=report, by_kind=res.by_kind(), seconds=s.get("seconds"),
                version=next((b.get("version", "") for b in
                              res.report.get("environment", {}).get("backends", [])), ""),
                findings=[dict(kind=f.kind, cause=f.cause, findings=f.findings, cases=f.cases,
                               worst=f.worst, details=f.details, case=f.case,
                               minimal=f.minimal, replay=f.replay()) for f in res.findings])


def _print(r):
    if "setup_error" in r:
        print(f"{r['op']:7} {r['setting']:9} {r['model']:40} {'-':>6}  set-up error: "
              f"{r['setup_error']}")
        return
    print(f"{r['op']:7} {r['setting']:9} {r['model']:40} {r['cases']:6}  "
          f"{r['by_kind'] or 'none'}")
    for fd in r["findings"][:4]:
        print(f"    {fd['kind']}: {fd['cause'][:90]}\n      {fd['replay']}")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time", type=float, default=90, help="seconds for all settings together")
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--shrink-time", type=float, default=15)
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--ops", default="matmul")
    o = ap.parse_args()
    names, ops = o.settings.split(","), o.ops.split(",")
    for what, got, known in (("setting", names, SETTINGS), ("operation", ops, OPS)):
        bad = [n for n in got if n not in known]
        if bad:
            print(f"device_torch_fuzz.py: unknown {what} '{bad[0]}' (known: "
                  f"{', '.join(known)})", file=sys.stderr)
            return 2
    try:
        import torch
    except ImportError as e:
        print(f"device_torch_fuzz.py: PyTorch is not importable: {e}", file=sys.stderr)
        return 2
    if DEVICE != "cpu" and not torch.cuda.is_available():
        print(f"device_torch_fuzz.py: no CUDA device visible to PyTorch {torch.__version__}",
              file=sys.stderr)
        return 2
    os.makedirs(o.out, exist_ok=True)
    each = max(o.time / (len(names) * len(ops)), 1.0)
    records = []
    print(f"{'op':7} {'setting':9} {'model':40} {'cases':>6}  findings by kind", flush=True)
    for op, name in ((op, name) for op in ops for name in names):
        tag = ("" if op == "matmul" else op + "-") + name.replace("+", "-")
        report = os.path.join(o.out, f"torch-fuzz-{tag}.json")
        try:
            res = gemmcheck.fuzz(BACKENDS[op, name], time=each, seed=o.seed, jobs=o.jobs,
                                 report=report, shrink_time=o.shrink_time, tier="hard",
                                 args=("--timeout-floor", "10"))
        except gemmcheck.GemmcheckError as e:
            records.append(dict(op=op, setting=name, model=SETTINGS[name][2],
                                setup_error=str(e)))
        else:
            records.append(_record(op, name, res, report))
        # written after every setting: a run cut short keeps what it did
        with open(os.path.join(o.out, "torch-fuzz.json"), "w") as f:
            json.dump(records, f, indent=1)
        _print(records[-1])
    if any("setup_error" in r for r in records):
        return 2
    return 1 if any(r["findings"] for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())

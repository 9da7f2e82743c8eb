#!/usr/bin/env python3
"""PyTorch's matmul, addmm and bmm checked against gemmcheck's exact oracle, on CUDA (or on the
CPU, for a dry run), for f16, bf16 and f32 under each math-mode setting that changes the
arithmetic: TF32 off and on for f32, reduced-precision split-K reductions off and on for f16
and bf16. Each setting is checked under the arithmetic model it promises, with gemmcheck's
hard bound (the statistical tier is off: these are tensor-core rows, blocks of products fused,
for which it makes no claim).

    device_torch.py --device cuda --time 60 --out torch.jsonl [--dumps DIR] [--seed N]
                    [--max-flops X]

One JSON line per case (setting, operation, shape, verdict or the framework's error); a
failing case's operands go to DIR as .npz (three per setting at most, each of 4 MiB at most). The last lines printed
are a table per setting. Exit status: 0 no failure, 1 a result outside its model's bound or a
framework error, 2 usage (no PyTorch, no such device)."""
import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import torch
except ImportError as e:
    print(f"device_torch.py: PyTorch is not importable: {e}", file=sys.stderr)
    sys.exit(2)
import gemmcheck

# name, dtype, torch settings, the model the setting promises
SETTINGS = [
    ("f32", torch.float32, {"allow_tf32": False}, "compute=f32 in=f32 block-FMA FTZ"),
    ("f32+tf32", torch.float32, {"allow_tf32": True}, "compute=f32 in=tf32 block-FMA FTZ"),
    ("f16", torch.float16, {"allow_fp16_reduced_precision_reduction": False},
     "compute=f32 in=f16 block-FMA FTZ"),
    ("f16+rr", torch.float16, {"allow_fp16_reduced_precision_reduction": True},
     "compute=f16 in=f16 block-FMA FTZ"),
    ("bf16", torch.bfloat16, {"allow_bf16_reduced_precision_reduction": False},
     "compute=f32 in=bf16 block-FMA FTZ"),
    ("bf16+rr", torch.bfloat16, {"allow_bf16_reduced_precision_reduction": True},
     "compute=bf16 in=bf16 block-FMA FTZ"),
]


def apply(settings):
    """Set the math-mode flags; the ones this PyTorch lacks are reported, not faked."""
    missing = []
    for k, v in settings.items():
        try:  # PyTorch 1.13 answers an unknown flag with AssertionError, not AttributeError
            getattr(torch.backends.cuda.matmul, k)
        except (AttributeError, AssertionError):
            missing.append(k)
        else:
            setattr(torch.backends.cuda.matmul, k, v)
    return missing


def draw_values(rng, shape, dist):
    if dist == "normal":
        x = rng.standard_normal(shape)
    elif dist == "logu":
        x = np.exp2(rng.uniform(-12, 12, shape)) * rng.choice([-1.0, 1.0], shape)
    else:
        x = rng.uniform(-1, 1, shape)
    return torch.from_numpy(x)


def draw_case(rng, max_flops):
    r = rng.random()
    if r < 0.5:
        m, n, k = (int(rng.integers(1, 18)) for _ in range(3))
    elif r < 0.9:
        m, n, k = (int(rng.integers(1, 300)) for _ in range(3))
    else:
        m, n, k = int(rng.integers(256, 1025)), int(rng.integers(256, 1025)), \
            int(rng.integers(256, 4097))
    op = rng.choice(["matmul", "addmm", "bmm"], p=[0.4, 0.4, 0.2])
    batch = int(rng.integers(2, 5)) if op == "bmm" else 0
    if batch and m * n * k > 2e7:
        m, n = min(m, 128), min(n, 128)
    while m * n * k * max(batch, 1) > max_flops and k > 1:
        k = max(1, k // 2)  # smaller cases for a slow device (the CPU dry run)
    return dict(op=str(op), m=m, n=n, k=k, batch=batch, ta=bool(rng.random() < 0.4),
                tb=bool(rng.random() < 0.4), dist=str(rng.choice(["unif", "normal", "logu"])),
                special=str(rng.choice(["none", "inf_a", "nan_c_beta0"], p=[0.9, 0.05, 0.05])))


def operand(rng, rows, cols, batch, trans, dist, dtype, device):
    """A (batch of) rows x cols operand, stored transposed when `trans` (a view, no copy)."""
    shape = (cols, rows) if trans else (rows, cols)
    if batch:
        shape = (batch,) + shape
    stored = draw_values(rng, shape, dist).to(dtype).to(device)
    return stored, (stored.transpose(-1, -2) if trans else stored)


def to_numpy(t):
    """A tensor's values as gemmcheck takes them: bf16 as uint16 bits with the type named."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16), "bf16"
    return t.numpy(), None


def run_case(cs, dtype, device, model, rng):
    sa, A = operand(rng, cs["m"], cs["k"], cs["batch"], cs["ta"], cs["dist"], dtype, device)
    sb, B = operand(rng, cs["k"], cs["n"], cs["batch"], cs["tb"], cs["dist"], dtype, device)
    if cs["special"] == "inf_a":
        sa.view(-1)[int(rng.integers(0, sa.numel()))] = float("inf")
    alpha, beta, C = 1.0, 0.0, None
    if cs["op"] == "addmm":
        alpha = float(rng.choice([1.0, -1.0, 0.5, 3.0]))
        beta = 0.0 if cs["special"] == "nan_c_beta0" else float(rng.choice([0.0, 1.0, -0.5]))
        C = draw_values(rng, (cs["m"], cs["n"]), "unif").to(dtype).to(device)
        if cs["special"] == "nan_c_beta0":
            C.view(-1)[0] = float("nan")
        D = torch.addmm(C, A, B, beta=beta, alpha=alpha)
    elif cs["op"] == "bmm":
        D = torch.bmm(A, B)
    else:
        D = torch.matmul(A, B)
    if device != "cpu":
        torch.cuda.synchronize()
    a, at = to_numpy(sa)
    b, bt = to_numpy(sb)
    d, dt = to_numpy(D)
    c, ct = to_numpy(C) if C is not None else (None, None)
    v = gemmcheck.check(a, b, d, c, alpha, beta, trans_a=cs["ta"], trans_b=cs["tb"], a_type=at,
                        b_type=bt, c_type=ct, d_type=dt, model=model, tier="hard", random=False)
    return v, (a, b, c, d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--time", type=float, default=60)
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dumps")
    ap.add_argument("--max-flops", type=float, default=4.3e9,
                    help="largest m*n*k*batch of a case (default: every size drawn)")
    o = ap.parse_args()
    if o.device != "cpu" and not torch.cuda.is_available():
        print(f"device_torch.py: no CUDA device visible to PyTorch {torch.__version__}",
              file=sys.stderr)
        return 2
    if o.device != "cpu":
        print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on "
              f"{torch.cuda.get_device_name(0)}, cuBLAS via torch")
    rng = np.random.default_rng(o.seed)
    table, bad = [], 0
    with open(o.out, "w") as log:
        for name, dtype, settings, model in SETTINGS:
            missing = apply(settings)
            row = dict(setting=name, model=model, cases=0, passed=0, failed=0, errors=0,
                       max_ratio=0.0, kinds={}, first_error="", missing=missing, dumps=0)
            t_end = time.monotonic() + o.time / len(SETTINGS)
            while time.monotonic() < t_end:
                cs = draw_case(rng, o.max_flops)
                rec = dict(setting=name, **cs)
                try:
                    v, arrays = run_case(cs, dtype, o.device, model, rng)
                except gemmcheck.GemmcheckError:
                    raise
                except Exception as e:  # the framework refused: a finding of its own
                    msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    rec["error"] = msg
                    row["errors"] += 1
                    row["first_error"] = row["first_error"] or msg
                else:
                    rec.update(ok=bool(v), counts=v.counts, max_ratio=v.max_ratio.ratio)
                    row["max_ratio"] = max(row["max_ratio"], v.max_ratio.ratio)
                    if v:
                        row["passed"] += 1
                    else:
                        row["failed"] += 1
                        for kind, n in v.counts.items():
                            row["kinds"][kind] = row["kinds"].get(kind, 0) + 1
                        rec["explain"] = v.explain()
                        size = sum(x.nbytes for x in arrays if x is not None)
                        if o.dumps and row["dumps"] < 3 and size <= 4 << 20:
                            os.makedirs(o.dumps, exist_ok=True)
                            row["dumps"] += 1
                            path = os.path.join(o.dumps, f"{name}-{row['dumps']}.npz")
                            a, b, c, d = arrays
                            np.savez(path, a=a, b=b, d=d, **({"c": c} if c is not None else {}))
                            rec["dump"] = path
                row["cases"] += 1
                log.write(json.dumps(rec) + "\n")
            bad += row["failed"] + row["errors"]
            table.append(row)
    print(f"{'setting':9} {'model':36} {'cases':>6} {'pass':>6} {'fail':>5} {'error':>6} "
          f"{'max err/bound':>13}  notes")
    for r in table:
        notes = []
        if r["kinds"]:
            notes.append("fail: " + ", ".join(f"{k} {n}" for k, n in r["kinds"].items()))
        if r["first_error"]:
            notes.append("error: " + r["first_error"][:100])
        if r["missing"]:
            notes.append("this PyTorch lacks " + ", ".join(r["missing"]))
        print(f"{r['setting']:9} {r['model']:36} {r['cases']:6} {r['passed']:6} {r['failed']:5} "
              f"{r['errors']:6} {r['max_ratio']:13.3g}  {'; '.join(notes)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

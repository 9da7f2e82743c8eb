"""The statistical tier's false-alarm measurement: what it saw on correct libraries.

usage: bench/stat_tier.py reports R1.json [R2.json ...]
       bench/stat_tier.py torch --seconds S [--seed N]

reports: sums the support matrices of campaign reports (gemmcheck fuzz --report): checked
elements (the error/bound histogram), elements the statistical tier applied to, improbable
elements, improbable_error findings, the largest statistical ratio per D type and per compute
type, and the smallest per-tuple sign-test p-value; one line per report and the total.

torch: PyTorch's CPU matmul (Debian's python3-torch) on random shapes and random data (uniform,
normal, and wide exponents) for f32, f64 and bf16 (and f16 where this PyTorch multiplies it),
each result checked by gemmcheck.check with the statistical tier (scalar arithmetic in f32; f64
for f64; bf16 for bf16, what PyTorch 1.13 does on its reference path, docs/DEVIATIONS.md; to
nearest; any order). Prints elements, improbable elements and the largest ratio per
dtype. Run with /usr/bin/python3 (the Python that sees Debian's packages); GEMMCHECK_LIBRARY and
PYTHONPATH as docs/PYTHON.md says.
"""
import json
import sys
import time


def reports(paths):
    tot = {"checked": 0, "stat": 0, "improbable": 0, "findings": 0}
    by_d, by_c, min_p = {}, {}, (1.0, "")
    for path in paths:
        with open(path) as f:
            r = json.load(f)
        row = {"checked": 0, "stat": 0, "improbable": 0}
        for e in r["summary"]["support_matrix"]:
            row["checked"] += sum(e["ratio_bins"])
            row["stat"] += e["stat_elements"]
            row["improbable"] += e["improbable_elements"]
            d, comp = e["types"].split(",")[3], e["compute"]
            ratio = e["max_stat_ratio"] if isinstance(e["max_stat_ratio"], float) else 0.0
            by_d[d] = max(by_d.get(d, 0.0), ratio)
            by_c[comp] = max(by_c.get(comp, 0.0), ratio)
            p = e["sign_test_p"] if isinstance(e["sign_test_p"], (int, float)) else 1.0
            if p < min_p[0]:
                min_p = (p, f"{e['backend']} {e['types']}:{comp}")
        nf = sum(1 for f in r["findings"] if f["kind"] == "improbable_error")
        for k in row:
            tot[k] += row[k]
        tot["findings"] += nf
        print(f"{path}: {row['checked']} checked, {row['stat']} by the statistical tier, "
              f"{row['improbable']} improbable, {nf} improbable_error findings")
    print(f"total: {tot['checked']} checked elements, {tot['stat']} by the statistical tier, "
          f"{tot['improbable']} improbable, {tot['findings']} improbable_error findings")
    print("largest statistical ratio by D type: " +
          ", ".join(f"{k} {v:.3g}" for k, v in sorted(by_d.items())))
    print("largest statistical ratio by compute type: " +
          ", ".join(f"{k} {v:.3g}" for k, v in sorted(by_c.items())))
    print(f"smallest per-tuple sign-test p: {min_p[0]:.3g} ({min_p[1]})")
    return 1 if tot["improbable"] or tot["findings"] else 0


def torch_run(seconds, seed):
    import numpy as np
    import torch
    import gemmcheck as gc
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    stats = {}
    end = time.time() + seconds
    dtypes = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
    while time.time() < end:
        for dt in dtypes:
            m, n, k = (int(x) for x in rng.integers(1, 200, 3))
            if rng.random() < 0.3:
                k = int(rng.integers(200, 1500))
            dist = rng.integers(0, 3)
            def draw(shape):
                if dist == 0:
                    return torch.rand(shape, dtype=torch.float64) * 2 - 1
                if dist == 1:
                    return torch.randn(shape, dtype=torch.float64)
                e = torch.randint(-20, 21, shape).double()
                return torch.sign(torch.randn(shape, dtype=torch.float64)) * \
                    (1 + torch.rand(shape, dtype=torch.float64)) * torch.pow(2.0, e)
            a, b = draw((m, k)).to(dt), draw((k, n)).to(dt)
            name = str(dt).replace("torch.", "")
            s = stats.setdefault(name, {"elements": 0, "stat": 0, "improbable": 0, "max": 0.0,
                                        "hard": 0, "cases": 0, "refused": ""})
            try:
                d = torch.matmul(a, b)
            except RuntimeError as e:  # "not implemented for 'Half'"
                s["refused"] = str(e).split("\n")[0][:80]
                continue
            # PyTorch 1.13 sums bf16 products in bf16 on its reference path (shapes oneDNN
            # does not take; docs/DEVIATIONS.md): bf16 is held to that arithmetic
            model = {torch.float64: "compute=f64", torch.bfloat16: "compute=bf16"}.get(
                dt, "compute=f32")
            if dt == torch.bfloat16:
                bits = lambda t: t.view(torch.int16).numpy().view(np.uint16)
                v = gc.check(bits(a), bits(b), bits(d), a_type="bf16", b_type="bf16",
                             d_type="bf16", model=model, random=True)
            else:
                v = gc.check(a.numpy(), b.numpy(), d.numpy(), model=model, random=True)
            s["cases"] += 1
            s["elements"] += v.elements
            s["stat"] += v.stat_elements
            s["improbable"] += v.improbable
            s["hard"] += v.counts.get("out_of_tolerance", 0) + v.counts.get(
                "nonfinite_mismatch", 0)
            s["max"] = max(s["max"], v.max_stat)
            if not v.ok:
                print(f"FINDING {name} m={m} n={n} k={k} dist={dist}: {v.explain()}")
    bad = 0
    for name, s in stats.items():
        print(f"torch {name}: {s['cases']} matmuls, {s['elements']} elements, {s['stat']} by the "
              f"statistical tier, {s['improbable']} improbable, {s['hard']} hard findings, "
              f"largest statistical ratio {s['max']:.3g}"
              + (f"; refused: {s['refused']}" if s["refused"] else ""))
        bad += s["improbable"] + s["hard"]
    return 1 if bad else 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("reports", "torch"):
        print(__doc__)
        return 2
    if sys.argv[1] == "reports":
        return reports(sys.argv[2:])
    args = sys.argv[2:]
    seconds = float(args[args.index("--seconds") + 1]) if "--seconds" in args else 60
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 1
    return torch_run(seconds, seed)


if __name__ == "__main__":
    sys.exit(main())

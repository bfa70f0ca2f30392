#!/usr/bin/env python3
"""compare_gpu_cpu.py — the GPU evaluator against the CPU evaluator on the same model, tokens and
policies (logs of `replayssm kl --device cuda` and `--device cpu`).

Usage: compare_gpu_cpu.py GPU.h5 CPU_SEED0.h5 [CPU_SEED1.h5 ...] [--fp32 GPU_FP32.h5]

Checks (exit 1 on any failure; every line says what was measured):
  - the same next tokens;
  - reference NLL per position: |nll_gpu - nll_cpu| <= 1e-5 * max(|nll_cpu|, 1e-2). 1e-5 relative is
    the accuracy target of docs/evaluator.md; the floor 1e-2 nats keeps positions whose NLL is ~0 (a near-certain token) from
    turning fp32 rounding of a tiny number into a large relative error;
  - --fp32: a GPU run of `--policy fp32` has KL exactly 0 at every position (the policy run and the
    reference are the same computation on the device, so their logits are equal bit for bit);
  - RTN policies (deterministic: no "-sr" in the policy): the mean KL of every position bucket
    ([0,1K), [1K,2K), [2K,4K), [4K,8K), ...) within 3% of the CPU's;
  - SR policies: the GPU run's mean KL over all positions within the spread of the CPU seeds: a
    99% prediction interval |gpu - mean| <= t(n-1, 0.995) * sd * sqrt(1 + 1/n) (sd: sample sd over the
    n >= 3 CPU seeds; the GPU run is one more draw from the same distribution if it is right, so the
    interval for a new draw, not for the mean, is the fair test; 1% false alarms per policy). The
    bucket means are printed with their distance in seed sd (information: with 5 seeds and 4 buckets
    x 3 SR policies, a bucket at ~3 sd happens by chance).
  --yardstick CPU.h5: a CPU log with fp32-format ReplaySSM runs (shared:fp32, split:fp32/fp32): the same
    math as the reference in another fp32 rounding order, so |nll_run - nll_ref| there is how far two
    correct fp32 evaluations drift apart on this model (printed next to the GPU's drift).
"""
T995 = {2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355, 9: 3.250, 10: 3.169}
import sys

import h5py
import numpy as np


def runs(f):
    out = {}
    for name in sorted(f["runs"].keys()):
        g = f["runs"][name]
        pol = g.attrs["policy"]
        pol = pol.decode() if isinstance(pol, bytes) else str(pol)
        out[(pol, int(g.attrs["window"]))] = g
    return out


def buckets(kl):
    """mean KL per window of positions (rs_kl.h: [0,1K), [1K,2K), [2K,4K), ...), books pooled"""
    P = kl.shape[1]
    edges = [0, 1024]
    while edges[-1] < P:
        edges.append(edges[-1] * 2)
    edges[-1] = min(edges[-1], P)
    means = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        if lo >= hi:
            continue
        v = kl[:, lo:hi]
        v = v[np.isfinite(v)]
        means.append(((lo, hi), float(v.mean()) if v.size else float("nan")))
    return means


def main(argv):
    fp32 = yard = None
    if "--yardstick" in argv:
        i = argv.index("--yardstick")
        yard = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if "--fp32" in argv:
        i = argv.index("--fp32")
        fp32 = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 2:
        print(__doc__)
        return 2
    gpu_path, cpu_paths = argv[0], argv[1:]
    bad = 0

    def check(ok, msg):
        nonlocal bad
        print(("ok   " if ok else "FAIL ") + msg)
        bad += 0 if ok else 1

    g = h5py.File(gpu_path, "r")
    cs = [h5py.File(p, "r") for p in cpu_paths]
    c0 = cs[0]
    print(f"GPU {gpu_path}: device = {g.attrs.get('device', b'?')!r}, compute = {g.attrs.get('compute', b'?')!r}")
    print(f"CPU {cpu_paths[0]} (+{len(cs) - 1} seeds): device = {c0.attrs.get('device', b'?')!r}")
    ng = g["reference/next_token"][...]
    nc = c0["reference/next_token"][...]
    check(ng.shape == nc.shape and np.array_equal(ng, nc), f"same next tokens ({ng.shape[0]} books x {ng.shape[1]})")
    a = g["reference/nll"][...]
    b = c0["reference/nll"][...]
    rel = np.abs(a - b) / np.maximum(np.abs(b), 1e-2)
    check(bool(np.all(rel <= 1e-5)), f"reference NLL: max |diff| / max(|cpu|, 1e-2) = {rel.max():.3e} (bound 1e-5); "
          f"mean NLL gpu {a.mean():.6f} cpu {b.mean():.6f}")
    d = np.abs(a - b)
    print(f"info reference NLL |gpu - cpu|: median {np.median(d):.2e}, p99 {np.quantile(d, 0.99):.2e}, max {d.max():.2e}; "
          f"max in positions [0,64) {d[:, :64].max():.2e}, [4096,8192) {d[:, 4096:8192].max() if d.shape[1] > 4096 else 0:.2e}")
    if yard:
        with h5py.File(yard, "r") as f:
            ref = f["reference/nll"][...]
            for (pol, L), grp in runs(f).items():
                dy = np.abs(grp["nll"][...] - ref)
                print(f"info yardstick (CPU, {pol} L={L} vs the CPU reference, same math in another fp32 order): "
                      f"|nll diff| median {np.median(dy):.2e}, p99 {np.quantile(dy, 0.99):.2e}, max {dy.max():.2e}; "
                      f"max rel (floor 1e-2) {(dy / np.maximum(np.abs(ref), 1e-2)).max():.2e}")
    t1 = np.mean(g["reference/top1"][...] == c0["reference/top1"][...])
    print(f"info reference top-1 equal at {100 * t1:.3f}% of positions")
    if fp32:
        with h5py.File(fp32, "r") as f:
            for (pol, L), grp in runs(f).items():
                if pol == "fp32":
                    kl = grp["kl"][...]
                    check(bool(np.all(kl == 0.0)), f"GPU --policy fp32: KL exactly 0 at {kl.size} positions "
                          f"(max {np.nanmax(kl):.3e})")
    gr = runs(g)
    crs = [runs(c) for c in cs]
    for key, grp in gr.items():
        pol, L = key
        if key not in crs[0]:
            print(f"skip {pol} L={L}: not in the CPU log")
            continue
        gb = buckets(grp["kl"][...])
        if "-sr" not in pol:
            cb = buckets(crs[0][key]["kl"][...])
            for ((lo, hi), x), (_, y) in zip(gb, cb):
                check(abs(x - y) <= 0.03 * abs(y), f"{pol} L={L} [{lo},{hi}): mean KL gpu {x:.6e} cpu {y:.6e} "
                      f"({100 * (x - y) / y:+.2f}%, bound 3%)")
        else:
            seeds = [c[key] for c in crs if key in c]
            if len(seeds) < 3:
                print(f"skip {pol} L={L}: {len(seeds)} CPU seeds (need 3)")
                continue
            def allmean(kl):
                v = kl[np.isfinite(kl)]
                return float(v.mean())
            ys = np.array([allmean(s["kl"][...]) for s in seeds])
            x = allmean(grp["kl"][...])
            n = len(ys)
            m, sd = ys.mean(), ys.std(ddof=1)
            bound = T995[min(n - 1, 10)] * sd * np.sqrt(1 + 1 / n)
            check(abs(x - m) <= bound, f"{pol} L={L} all positions: mean KL gpu {x:.6e}, cpu seeds {m:.6e} +- {sd:.2e} "
                  f"(n={n}); |diff| {abs(x - m):.2e} <= 99% prediction half-width {bound:.2e}")
            per = [buckets(s["kl"][...]) for s in seeds]
            for j, ((lo, hi), xb) in enumerate(gb):
                yb = np.array([p[j][1] for p in per])
                mb, sdb = yb.mean(), yb.std(ddof=1)
                print(f"info {pol} L={L} [{lo},{hi}): mean KL gpu {xb:.6e}, cpu seeds {mb:.6e} +- {sdb:.2e} "
                      f"({abs(xb - mb) / sdb if sdb > 0 else float('inf'):.2f} sd)")
    print(f"{'FAILED' if bad else 'passed'}: {bad} failure(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

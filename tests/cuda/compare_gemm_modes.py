#!/usr/bin/env python3
"""compare_gemm_modes.py — how far the GEMM method moves what `kl` measures: logs of the same model,
tokens and policies run with different `--compute` modes or chunks.

Usage: compare_gemm_modes.py BASE.h5 OTHER.h5 [OTHER.h5 ...] [--labels base,other,...]

For each OTHER against BASE, over every position both logs completed (same next tokens required):
  reference NLL per position: max |diff|, mean |diff|, max |diff| / max(|nll|, 1e-2) (compare_gpu_cpu.py's
  relative form);
  per run: mean KL of each log and their relative difference, mean and max |KL diff| per position, max
  |NLL diff| per position, top-1 agreement of each.
Prints one table; exit 0 (a measurement, not a check).
"""
import sys

import h5py
import numpy as np


def load(path):
    f = h5py.File(path, "r")
    done = f["books/completed_positions"][...]
    out = {"tok": f["reference/next_token"][...], "nll_ref": f["reference/nll"][...], "done": done, "runs": {}}
    for name in sorted(f["runs"].keys()):
        g = f["runs"][name]
        pol = g.attrs["policy"]
        pol = pol.decode() if isinstance(pol, bytes) else str(pol)
        out["runs"][pol] = {k: g[k][...] for k in ("kl", "nll", "top1_agree")}
    return out


def mask(a, b):
    B, P = a["tok"].shape
    m = np.zeros((B, P), bool)
    for i in range(B):
        m[i, : min(a["done"][i], b["done"][i])] = True
    return m


def main(argv):
    labels = None
    if "--labels" in argv:
        i = argv.index("--labels")
        labels = argv[i + 1].split(",")
        argv = argv[:i] + argv[i + 2:]
    paths = argv
    labels = labels or paths
    base = load(paths[0])
    for path, lab in zip(paths[1:], labels[1:]):
        o = load(path)
        m = mask(base, o)
        same = np.array_equal(base["tok"][m], o["tok"][m])
        d = np.abs(base["nll_ref"][m] - o["nll_ref"][m])
        rel = d / np.maximum(np.abs(base["nll_ref"][m]), 1e-2)
        print(f"== {lab} vs {labels[0]}: {int(m.sum())} positions, same next tokens: {same}")
        print(f"   reference NLL: max |diff| {d.max():.3e}, mean |diff| {d.mean():.3e}, max rel {rel.max():.3e}")
        print(f"   {'run':28s} {'mean KL base':>13s} {'mean KL other':>13s} {'rel diff':>9s} {'mean|dKL|':>10s} "
              f"{'max|dKL|':>10s} {'max|dNLL|':>10s} {'top1 base':>9s} {'top1 oth':>9s}")
        for pol, r in base["runs"].items():
            if pol not in o["runs"]:
                continue
            s = o["runs"][pol]
            ka, kb = r["kl"][m], s["kl"][m]
            fin = np.isfinite(ka) & np.isfinite(kb)
            ka, kb = ka[fin], kb[fin]
            dk = np.abs(ka - kb)
            dn = np.abs(r["nll"][m][fin] - s["nll"][m][fin])
            print(f"   {pol:28s} {ka.mean():13.6e} {kb.mean():13.6e} {(kb.mean() - ka.mean()) / ka.mean():+9.2e} "
                  f"{dk.mean():10.3e} {dk.max():10.3e} {dn.max():10.3e} {100 * r['top1_agree'][m].mean():8.3f}% "
                  f"{100 * s['top1_agree'][m].mean():8.3f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

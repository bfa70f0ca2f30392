#!/usr/bin/env python3
"""drift_pairs.py LOGDIR OUTDIR — issue 15 acceptance 1 (run_gpu_drift.sh's logs): the reference-NLL
drift between pairs of logs of the same tokens (nll_drift.py's measures: max |a - b| / max(|b|, 1e-2),
median and windowed max |a - b|, positions over 1e-5 relative), compare_gpu_cpu.py on the acceptance
pair (GPU default vs the 5 CPU seeds, --fp32), and OUTDIR/arrays.npz (every log's reference nll,
tokens and per-run kl) for later analysis.
drift_pairs.py --same A.h5 B.h5 — every dataset outside /provenance equal bitwise (a resumed log
against an uninterrupted one; /provenance holds the run history, one entry more after a resume)."""
import glob, os, subprocess, sys

import h5py
import numpy as np


def same(a, b):
    bad, prov = [], []
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        def walk(g, h, path=""):
            for k in g:
                p = path + "/" + k
                if isinstance(g[k], h5py.Group):
                    walk(g[k], h[k], p)
                    continue
                x, y = g[k][...], h[k][...]
                eq = x.shape == y.shape and (np.array_equal(x, y, equal_nan=True) if x.dtype.kind == "f" else np.array_equal(x, y))
                if not eq:
                    (prov if p.startswith("/provenance") else bad).append(p)
        walk(fa, fb)
    print(("ok   " if not bad else "FAIL ") + "resumed log equals the uninterrupted one in every dataset outside /provenance"
          + (": " + ", ".join(bad[:8]) if bad else "") + f" (/provenance: {len(prov)} history datasets differ, expected)")
    return 1 if bad else 0


def load(p):
    with h5py.File(p, "r") as f:
        d = {"nll": f["reference/nll"][...].astype(np.float64), "tok": f["reference/next_token"][...]}
        for name in f["runs"]:
            g = f["runs"][name]
            pol = g.attrs["policy"]
            d["kl:" + (pol.decode() if isinstance(pol, bytes) else str(pol))] = g["kl"][...]
    return d


def mx(v):
    return float(v.max()) if v.size else float("nan")


def main(argv):
    if len(argv) == 3 and argv[0] == "--same":
        return same(argv[1], argv[2])
    if len(argv) != 2:
        print(__doc__)
        return 2
    L, O = argv
    arrs = {}
    for p in sorted(glob.glob(L + "/*.h5")):
        n = os.path.basename(p)[:-3]
        if n not in ("san", "killed", "whole"):
            arrs[n] = load(p)

    def drift(a, b):
        A, B = arrs.get(a), arrs.get(b)
        if A is None or B is None:
            return f"{a} vs {b}: missing"
        if not np.array_equal(A["tok"], B["tok"]):
            return f"{a} vs {b}: OTHER TOKENS"
        x, y = A["nll"][0], B["nll"][0]
        d = np.abs(x - y)
        rel = d / np.maximum(np.abs(y), 1e-2)
        i = int(rel.argmax())
        return (f"{a:24s} vs {b:20s}: max rel {rel.max():.2e} (pos {i}, nll {y[i]:.3f}), median abs {np.median(d):.1e}, "
                f"max abs [0,64) {mx(d[:64]):.1e} [4096,8192) {mx(d[4096:]):.1e}; n > 1e-5 rel: {int((rel > 1e-5).sum())}")

    pairs = [("gpu", "cpu-s0"), ("gpu", "cpu-fp32"), ("gpu-v1", "cpu-s0"), ("gpu-simt", "cpu-s0"), ("gpu-f64", "cpu-s0"),
             ("gpu-v1", "gpu"), ("gpu-f64", "gpu"), ("cpu-fp32", "cpu-s0"), ("cpu-attn32", "cpu-s0"),
             ("cpu-sgemm", "cpu-s0"), ("cpu-loop", "cpu-fp32")]
    rc = 0
    for m in ("gdn-tiny", "mamba2-tiny"):
        print(f"== {m}")
        for a, b in pairs:
            print("  " + drift(f"{m}-{a}", f"{m}-{b}"))
        cs = [f"{L}/{m}-cpu-s{s}.h5" for s in range(5)]
        r = subprocess.run([sys.executable, "eval/cuda/tests/compare_gpu_cpu.py", f"{L}/{m}-gpu.h5", *cs, "--fp32",
                            f"{L}/{m}-gpu-fp32pol.h5"], capture_output=True, text=True)
        print(f"-- compare_gpu_cpu.py {m}: GPU default vs CPU default seeds 0-4\n" + r.stdout[-3000:] + r.stderr[-500:]
              + f"(exit {r.returncode})")
        rc |= r.returncode
    flat = {f"{n}|{k}": v for n, d in arrs.items() for k, v in d.items()}
    np.savez_compressed(os.path.join(O, "arrays.npz"), **flat)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

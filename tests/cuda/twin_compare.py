#!/usr/bin/env python3
"""twin_compare.py GPU.h5 CPU.h5 — how close a GPU log (`--compute twin`, or any mode) is to the CPU
evaluator's log of the same tokens, position by position (docs/evaluator.md "The twin compute mode").

Prints per book: the reference NLL's max |a - b| / max(|b|, 1e-2) (compare_gpu_cpu.py's measure), the
number of positions over 1e-5 of it (compare_gpu_cpu.py's bound), the
number of positions whose reference NLL is bit-identical (the same float64), the first position
that differs; and per policy run present in both logs: positions whose KL and NLL are bit-identical.
Exit 1 if the logs do not hold the same tokens, 0 otherwise (a report, not a test)."""
import sys

import h5py
import numpy as np


def runs(f):
    out = {}
    for name in sorted(f["runs"].keys()):
        g = f["runs"][name]
        pol = g.attrs["policy"]
        out[(pol.decode() if isinstance(pol, bytes) else str(pol), int(g.attrs["window"]))] = g
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    with h5py.File(sys.argv[1], "r") as fa, h5py.File(sys.argv[2], "r") as fb:
        ta, tb = fa["reference/next_token"][...], fb["reference/next_token"][...]
        if ta.shape != tb.shape or not np.array_equal(ta, tb):
            print("twin_compare: the logs hold other tokens")
            return 1
        A, B = fa["reference/nll"][...], fb["reference/nll"][...]
        ca, cb = fa.attrs.get("compute", b"?"), fb.attrs.get("compute", b"?")
        ca, cb = [x.decode() if isinstance(x, bytes) else str(x) for x in (ca, cb)]
        ids = [x.decode() if isinstance(x, bytes) else str(x) for x in fa["books/id"][...]]
        for i, book in enumerate(ids):
            a, b = A[i].astype(np.float64), B[i].astype(np.float64)
            rel = np.abs(a - b) / np.maximum(np.abs(b), 1e-2)
            same = a.view(np.uint64) == b.view(np.uint64)
            first = int(np.argmin(same)) if not same.all() else -1
            print(f"book {book} (compute {ca} vs {cb}): {len(a)} positions: reference NLL max rel {rel.max():.3e}, "
                  f"{int((rel > 1e-5).sum())} over 1e-5, {int(same.sum())} bit-identical, first differing position "
                  f"{first}")
        ra, rb = runs(fa), runs(fb)
        for key in ra:
            if key not in rb:
                continue
            ka, kb = ra[key]["kl"][...], rb[key]["kl"][...]
            na, nb = ra[key]["nll"][...], rb[key]["nll"][...]
            sk = (ka.view(np.uint64) == kb.view(np.uint64)).sum()
            sn = (na.view(np.uint64) == nb.view(np.uint64)).sum()
            print(f"  run {key[0]} (window {key[1]}): KL bit-identical at {int(sk)} of {ka.size}, NLL at {int(sn)}; "
                  f"mean KL {np.nanmean(ka):.6e} vs {np.nanmean(kb):.6e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

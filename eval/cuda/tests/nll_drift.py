#!/usr/bin/env python3
"""nll_drift.py A.h5 B.h5 — how far the fp32 reference NLL of two logs of the same tokens drifts
apart, position by position (issue 15, acceptance 1; docs/evaluator.md "GPU vs CPU").

Prints, per book: the max of |a - b| / max(|b|, 1e-2) (compare_gpu_cpu.py's measure: the floor keeps
a near-zero NLL from turning fp32 rounding into a huge relative error), the median and max |a - b|,
and the max |a - b| in position windows, so a drift that grows along the book shows as such.
Used with two CPU logs that differ only in the GEMM's rounding order (RS_CPU_GEMM=loop vs OpenBLAS)
as a yardstick for the GPU-vs-CPU difference. Exit 1 if the logs do not hold the same tokens."""
import sys

import h5py
import numpy as np


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    with h5py.File(sys.argv[1], "r") as fa, h5py.File(sys.argv[2], "r") as fb:
        ta, tb = fa["next_token"][...], fb["next_token"][...]  # [book][position] (log format 2)
        if ta.shape != tb.shape or not np.array_equal(ta, tb):
            print("nll_drift: the logs hold other tokens")
            return 1
        A, B = fa["reference_nll"][...].astype(np.float64), fb["reference_nll"][...].astype(np.float64)
        ids = [x.decode() if isinstance(x, bytes) else str(x) for x in fa["book"][...]]
        for i, book in enumerate(ids):
            a, b = A[i], B[i]
            d = np.abs(a - b)
            rel = d / np.maximum(np.abs(b), 1e-2)
            n = len(a)
            wins = [(lo, min(hi, n)) for lo, hi in [(0, 64), (64, 1024), (1024, 4096), (4096, n)] if lo < n]
            per = ", ".join(f"[{lo}, {hi}) {d[lo:hi].max():.2e}" for lo, hi in wins if hi > lo)
            print(f"book {book}: {n} positions, max rel (floor 1e-2) {rel.max():.2e}, median |diff| {np.median(d):.2e}, "
                  f"max |diff| {d.max():.2e}; max |diff| by window: {per}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""card_tables.py — model-card tables from replayssm's own HDF5 KL logs (h5py + numpy only).

    python3 data/models/card_tables.py LOG.h5 [LOG2.h5 ...]

For each log: bits per byte of the fp32 reference (from `reference/nll`, nats -> bits; byte
vocabulary, so bits per token = bits per byte) per position bucket 0-1K, 1-8K, 8-32K, 32-128K,
per book and pooled; and the mean KL of every run (policy) per bucket, pooled over books (the
KL-vs-position curves of the model cards). With several logs of one model, also the bits
per byte and the KL of each (policy, window) pooled over all their books (a book in two logs
counts once: the first log's row; a bucket pools the books whose committed positions reach it). Only
committed positions (books/completed_positions) are used; reference-only logs (`kl --policy
none`) give the bits-per-byte table alone. Markdown on stdout.
"""
import math
import sys

BUCKETS = [(0, 1024), (1024, 8192), (8192, 32768), (32768, 131072)]
KL_BUCKETS = [(0, 1024), (1024, 2048), (2048, 4096), (4096, 8192), (8192, 16384), (16384, 32768),
              (32768, 65536), (65536, 131072)]


def fmt_b(lo, hi):
    return f"{lo // 1024}-{hi // 1024}K"


def main():
    import h5py
    import numpy as np
    rows_by_model = {}  # model path -> {book id: committed reference NLL row}
    kl_by_model = {}    # model path -> {(policy, window): {book id: committed KL row}}
    for path in sys.argv[1:]:
        with h5py.File(path, "r") as f:
            ids = [x.decode() if isinstance(x, bytes) else str(x) for x in f["books/id"][()]]
            done = f["books/completed_positions"][()]
            nll = f["reference/nll"][()]
            print(f"## {path}\n\nmodel `{f.attrs.get('model_path', '?')}`, tokens {f.attrs.get('tokens', '?')}, "
                  f"books {', '.join(ids)}\n")
            print("bits per byte of the fp32 reference by position bucket:\n")
            print("| book | " + " | ".join(fmt_b(lo, hi) for lo, hi in BUCKETS) + " | all |")
            print("|---|" + "---|" * (len(BUCKETS) + 1))
            pooled = [[0.0, 0] for _ in BUCKETS] + [[0.0, 0]]
            for b, bid in enumerate(ids):
                row = []
                n_ok = int(done[b])
                model = f.attrs.get("model_path", "?")
                model = model.decode() if isinstance(model, bytes) else str(model)
                rows_by_model.setdefault(model, {}).setdefault(bid, nll[b, :n_ok].copy())
                for k, (lo, hi) in enumerate(BUCKETS + [(0, 1 << 40)]):
                    v = nll[b, lo:min(hi, n_ok)]
                    v = v[np.isfinite(v)]
                    if v.size:
                        pooled[k][0] += float(v.sum())
                        pooled[k][1] += v.size
                        row.append(f"{v.mean() / math.log(2):.4f}")
                    else:
                        row.append("-")
                print(f"| {bid} | " + " | ".join(row) + " |")
            print("| pooled | " + " | ".join(f"{s / n / math.log(2):.4f}" if n else "-" for s, n in pooled) + " |\n")
            runs = sorted(f["runs"].keys())
            if runs:
                print("mean KL(p_fp32 || p_run) by position bucket (nats), pooled over books:\n")
                print("| run | policy | window | " + " | ".join(fmt_b(lo, hi) for lo, hi in KL_BUCKETS) + " |")
                print("|---|---|---|" + "---|" * len(KL_BUCKETS))
                for r in runs:
                    g = f["runs"][r]
                    kl = g["kl"][()]
                    cells = []
                    for lo, hi in KL_BUCKETS:
                        vals = []
                        for b in range(len(ids)):
                            v = kl[b, lo:min(hi, int(done[b]))]
                            vals.append(v[np.isfinite(v)])
                        v = np.concatenate(vals) if vals else np.array([])
                        cells.append(f"{v.mean():.3e}" if v.size else "-")
                    pol = g.attrs.get("policy", "?")
                    pol = pol.decode() if isinstance(pol, bytes) else pol
                    model = f.attrs.get("model_path", "?")
                    model = model.decode() if isinstance(model, bytes) else str(model)
                    runs_kl = kl_by_model.setdefault(model, {}).setdefault((pol, int(g.attrs.get("window", 0))), {})
                    for b, bid in enumerate(ids):
                        runs_kl.setdefault(bid, kl[b, :int(done[b])].copy())
                    print(f"| {r} | {pol} | {g.attrs.get('window', '?')} | " + " | ".join(cells) + " |")
                print()
    for model, rows in rows_by_model.items():
        if len(sys.argv) < 3:
            break
        cells = []
        for lo, hi in BUCKETS + [(0, 1 << 40)]:
            v = np.concatenate([r[lo:hi] for r in rows.values()])
            v = v[np.isfinite(v)]
            cells.append(f"{v.mean() / math.log(2):.4f}" if v.size else "-")
        print(f"bits per byte of `{model}` pooled over books {', '.join(rows)} (all logs above):\n")
        print("| books | " + " | ".join(fmt_b(lo, hi) for lo, hi in BUCKETS) + " | all |")
        print("|---|" + "---|" * (len(BUCKETS) + 1))
        print(f"| {len(rows)} | " + " | ".join(cells) + " |\n")
        for (pol, win), books in kl_by_model.get(model, {}).items():
            if len(books) < 2:
                continue
            cells = []
            for lo, hi in KL_BUCKETS:
                v = np.concatenate([r[lo:hi] for r in books.values()])
                v = v[np.isfinite(v)]
                cells.append(f"{v.mean():.3e}" if v.size else "-")
            print(f"mean KL of `{pol}` (L = {win}) pooled over books {', '.join(books)} (all logs above; "
                  "a bucket pools the books that reach it):\n")
            print("| " + " | ".join(fmt_b(lo, hi) for lo, hi in KL_BUCKETS) + " |")
            print("|" + "---|" * len(KL_BUCKETS))
            print("| " + " | ".join(cells) + " |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

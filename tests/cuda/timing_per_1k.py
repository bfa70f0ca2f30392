#!/usr/bin/env python3
"""timing_per_1k.py — how the GPU evaluator's cost grows with the context,
from one run's `replayssm kl --timing F.tsv` (cumulative scorer stage seconds per committed chunk).

    timing_per_1k.py F.tsv [P ...]     (default P: 8192 32768 131072)

For each P: the seconds the scorer spent on positions [P - 1024, P) of the (first) book (the
difference of the cumulative counters at the chunk ends bracketing that range; P - 1024 and P
must be chunk ends), split by stage, and the attention share. Only attention should grow with P.
"""
import csv
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    points = [int(p) for p in sys.argv[2:]] or [8192, 32768, 131072]
    rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
    if not rows:
        sys.exit("timing_per_1k.py: no chunk lines in " + sys.argv[1])
    book = rows[0]["book"]
    by_pos = {int(r["position"]): r for r in rows if r["book"] == book}
    stages = ["gemm_s", "attention_s", "recurrence_s", "other_s", "score_s", "copy_s"]
    print(f"book {book}: seconds per 1K positions ending at P (scorer time; stages)")
    print("P\ttotal\t" + "\t".join(s[:-2] for s in stages) + "\tattention share")
    for p in points:
        a, b = by_pos.get(p - 1024), by_pos.get(p)
        if a is None or b is None:
            print(f"{p}\t(no chunk ends at {p - 1024} and {p} in the file)")
            continue
        d = {s: float(b[s]) - float(a[s]) for s in stages + ["scorer_s"]}
        print(f"{p}\t{d['scorer_s']:.3f}\t" + "\t".join(f"{d[s]:.3f}" for s in stages) +
              f"\t{100.0 * d['attention_s'] / d['scorer_s']:.1f}%")


if __name__ == "__main__":
    main()

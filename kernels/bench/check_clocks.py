#!/usr/bin/env python3
"""check_clocks.py — the bench's per-row clock and power-cap columns against nvidia-smi, an independent reader.

OUTDIR holds bench.h5, nvidia-smi's samples taken while the bench ran (smi.csv) and the bench's output with a time
stamp a line (bench_ts.log), e.g.:

    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
        --format=csv -lms 50 > OUT/smi.csv &
    ./build/replayssm bench --out OUT/bench.h5 | while IFS= read -r l; do printf '%s %s\n' "$(date +%H:%M:%S.%3N)" "$l"; done > OUT/bench_ts.log
    kill %1

A row is printed when its timing has ended, so its timed window is the time stamp minus (median us x steps x reps),
approximately; this compares, for every row with at least three nvidia-smi samples in that window, the row's
`sm_mhz` with the samples' mean SM clock and its `pcap_frac` with the share of samples whose reasons include the
software power cap (0x4). On the H200 (docs/kernels.md): median clock difference 0 MHz, 90th percentile 23 MHz over
323 rows.

    python3 kernels/bench/check_clocks.py OUTDIR [--steps 16 --reps 50]
"""
import argparse
import math
import os
import statistics

import h5py


def seconds(hms):
    h, m, s = hms.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", help="folder with bench.h5, bench_ts.log, smi.csv")
    ap.add_argument("--steps", type=int, default=16, help="steps a timed graph (the std rows' L)")
    ap.add_argument("--reps", type=int, default=50, help="timed replays a row (bench --reps)")
    a = ap.parse_args()
    g = h5py.File(os.path.join(a.outdir, "bench.h5"), "r")["rows"]
    col = {k: g[k][:] for k in g.keys()}
    txt = lambda v: v.decode() if isinstance(v, bytes) else v
    rows = [{k: txt(v[i]) for k, v in col.items()} for i in range(len(col["B"]))]
    stamps = {}  # (model, kernel, variant, B) -> print times, in order
    for line in open(os.path.join(a.outdir, "bench_ts.log")):
        t, _, rest = line.partition(" ")
        p = rest.split()
        if len(p) > 8 and p[1] in ("conv", "replay", "verify-replay", "verify-snapshot"):
            stamps.setdefault((p[0], p[1], p[2], int(p[3])), []).append(seconds(t))
    smi = []
    for line in open(os.path.join(a.outdir, "smi.csv")):
        f = [x.strip() for x in line.split(",")]
        if len(f) < 6 or f[0].startswith("timestamp") or "MHz" not in f[1]:
            continue
        smi.append((seconds(f[0].split()[1]), float(f[1].split()[0]), int(f[5], 16)))
    seen, dclk, dcap = {}, [], []
    for r in rows:
        key = (r["model"], r["kernel"], r["variant"], int(r["B"]))
        i = seen.get(key, 0)
        seen[key] = i + 1
        if key not in stamps or i >= len(stamps[key]) or math.isnan(r["sm_mhz"]):
            continue
        t1 = stamps[key][i]
        t0 = t1 - r["median_us"] * 1e-6 * a.steps * a.reps - 0.02
        w = [s for s in smi if t0 < s[0] <= t1]
        if len(w) < 3:
            continue
        dclk.append(r["sm_mhz"] - sum(s[1] for s in w) / len(w))
        dcap.append(abs(r["pcap_frac"] - sum(1 for s in w if s[2] & 4) / len(w)))
    if not dclk:
        raise SystemExit("check_clocks: no row with three nvidia-smi samples in its window")
    q90 = lambda x: sorted(x)[int(0.9 * (len(x) - 1))]
    print(f"{len(dclk)} rows: sm_mhz - nvidia-smi clock median {statistics.median(dclk):.1f} MHz, "
          f"|diff| 90th percentile {q90([abs(x) for x in dclk]):.1f}, max {max(abs(x) for x in dclk):.1f}; "
          f"|pcap_frac - capped share| median {statistics.median(dcap):.2f}, 90th percentile {q90(dcap):.2f}")


if __name__ == "__main__":
    main()

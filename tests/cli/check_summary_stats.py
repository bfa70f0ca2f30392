#!/usr/bin/env python3
"""check_summary_stats.py CLI FIXTURES WORKDIR — the summary statistics of `replayssm kl` /
`replayssm info --all-stats` against an independent computation with numpy on the log's arrays
(h5py), on a real run of the gdn fixture model over two PG-19 books.

Checked (replayssm/eval/rs_kl.h defines them, after llama.cpp's KL-divergence report):
  KL mean and its standard error sqrt(var / (n - 1)); KL median, p90, p95, p99, p99.9, max,
  p25, p10, p5, p1, p0.1, min; Δp max, 99.9% .. 0.1%, min; RMS Δp and mean Δp with their
  standard errors; same top-1 %; ln(PPL(run)/PPL(ref)) = mean(nll_run - nll_ref) and its
  standard error. Percentiles: numpy.percentile(method="linear"), the definition the C code
  and llama.cpp's percentile() use (position q (n-1), linear interpolation).

Tolerances: the table prints KL as %.3e (4 significant digits, so the printed value is within
half a unit of the 4th digit: relative 5e-4 of the value) and percentages as %.3f (absolute 5e-4
percentage points); the standard errors are %.2e (relative 5e-3); all are checked with that bound plus 1e-12 for the double arithmetic.
Exit 77 (skip) when numpy or h5py is missing, unless RS_REQUIRE_PYTHON is set.
"""
import os
import re
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"skip: {e}")
    sys.exit(1 if os.environ.get("RS_REQUIRE_PYTHON") else 77)

cli, fixtures, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
log = os.path.join(work, "stats.h5")
if os.path.exists(log):
    os.remove(log)
args = [cli, "kl", "--model", f"{fixtures}/models/gdn-tiny-random", "--data", f"{fixtures}/pg19-mini", "--books", "2",
        "--tokens", "300", "--chunk", "64", "--threads", "1", "--quiet", "--all-stats", "--out", log,
        "--policy", "shared:nvfp4-sr,split:nvfp4-rtn/fp32,conv:fp16-sr"]
kl = subprocess.run(args, capture_output=True, text=True, check=True).stdout
info = subprocess.run([cli, "info", "--all-stats", log], capture_output=True, text=True, check=True).stdout

failures = []


def table(text, header_re):
    """rows {run: [values as strings]} of the block whose header line matches header_re"""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(header_re, line):
            rows = {}
            for row in lines[i + 1:]:
                m = re.match(r"^(\d+)\s+(.*)$", row)
                if not m:
                    break
                rows[int(m.group(1))] = m.group(2).split()
            return rows
    raise SystemExit(f"no table {header_re!r} in:\n{text}")


def close_e(name, printed, exact, rel=5e-4):
    """printed with %.3e: within 5e-4 relative (%.2e, the standard errors: 5e-3)"""
    v = float(printed)
    if abs(v - exact) > rel * abs(exact) + 1e-12:
        failures.append(f"{name}: printed {printed}, numpy {exact:.6e}")


def close_pct(name, printed, exact):
    """printed as %.3f%% of a fraction: within 5e-4 percentage points"""
    v = float(printed.rstrip("%"))
    if abs(v - 100.0 * exact) > 5e-4 + 1e-9:
        failures.append(f"{name}: printed {printed}, numpy {100.0 * exact:.6f}%")


def se(x):
    return np.sqrt(np.var(x) / (x.size - 1))  # var with 1/n, as the C code: sqrt(var / (n-1))


with h5py.File(log, "r") as f:
    done = f["books/completed_positions"][()]
    B = len(done)
    nll_ref = np.concatenate([f["reference/nll"][b, : done[b]] for b in range(B)])
    kl_tab = table(info, r"^run\s+mean KL")
    dp_tab = table(info, r"^run\s+RMS Δp")
    low_tab = table(info, r"^run\s+p25\s+p10")
    dph_tab = table(info, r"^run\s+max\s+99\.9%")
    dpl_tab = table(info, r"^run\s+25%\s+10%")
    runs = sorted(f["runs"])
    assert len(runs) == 3 and B == 2 and done.sum() == 600, (runs, done)
    for r, name in enumerate(runs):
        g = f["runs"][name]
        cat = lambda k: np.concatenate([g[k][b, : done[b]] for b in range(B)]).astype(np.float64)
        kl_v, dp_v, nll_v = cat("kl"), cat("dp"), cat("nll")
        agree = cat("top1_agree")
        P = lambda x, q: np.percentile(x, q, method="linear")
        row = kl_tab[r]  # mean ±se median p90 p95 p99 p99.9 max n/f
        close_e(f"run {r} mean KL", row[0], kl_v.mean())
        close_e(f"run {r} KL se", row[1], se(kl_v), 5e-3)
        for k, q in zip(range(2, 7), (50, 90, 95, 99, 99.9)):
            close_e(f"run {r} KL p{q}", row[k], P(kl_v, q))
        close_e(f"run {r} KL max", row[7], kl_v.max())
        row = low_tab[r]  # p25 p10 p5 p1 p0.1 min
        for k, q in enumerate((25, 10, 5, 1, 0.1)):
            close_e(f"run {r} KL p{q}", row[k], P(kl_v, q))
        close_e(f"run {r} KL min", row[5], kl_v.min())
        row = dp_tab[r]  # RMS ±se mean ±se top1 ±se lnPPL ±se
        rms = np.sqrt(np.mean(dp_v**2))
        close_pct(f"run {r} RMS dp", row[0], rms)
        # delta method (llama.cpp): se(RMS) = se(mean dp^2) / (2 RMS)
        close_pct(f"run {r} RMS dp se", row[1], se(dp_v**2) / (2 * rms))
        close_pct(f"run {r} mean dp", row[2], dp_v.mean())
        close_pct(f"run {r} mean dp se", row[3], se(dp_v))
        p1 = agree.mean()
        close_pct(f"run {r} top1", row[4], p1)
        close_pct(f"run {r} top1 se", row[5], np.sqrt(p1 * (1 - p1) / (agree.size - 1)))
        d = nll_v - nll_ref
        close_e(f"run {r} ln PPL ratio", row[6], d.mean(), 5e-5)  # %.4e
        close_e(f"run {r} ln PPL ratio se", row[7], se(d), 5e-3)
        # the identity ln(PPL(run)/PPL(ref)) = ln PPL(run) - ln PPL(ref), independently
        close_e(f"run {r} ln PPL ratio (identity)", row[6], np.log(np.exp(nll_v.mean()) / np.exp(nll_ref.mean())))
        row = dph_tab[r]  # max 99.9 99 95 90 75 median
        close_pct(f"run {r} dp max", row[0], dp_v.max())
        for k, q in enumerate((99.9, 99, 95, 90, 75, 50), start=1):
            close_pct(f"run {r} dp p{q}", row[k], P(dp_v, q))
        row = dpl_tab[r]  # 25 10 5 1 0.1 min
        for k, q in enumerate((25, 10, 5, 1, 0.1)):
            close_pct(f"run {r} dp p{q}", row[k], P(dp_v, q))
        close_pct(f"run {r} dp min", row[5], dp_v.min())

# kl prints the same table as info (everything from the runs legend on)
tail = lambda t: t[t.index("\nruns ("):]
if tail(kl) != tail(info):
    failures.append("kl's summary differs from info's:\n--- kl\n" + tail(kl) + "\n--- info\n" + tail(info))
for line in tail(info).splitlines():  # the summary fits 100 columns (provenance lines are paths)
    if len(line) > 100:
        failures.append(f"line of {len(line)} columns: {line}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"ok: {len(runs)} runs x {done.sum()} positions, every statistic within its print precision of numpy")

# %% [markdown]
# # Table 11 — round-to-nearest vs stochastic rounding on the recurrent checkpoint
#
# Pairs of runs that differ only in the rounding of the checkpoint that carries the recurrence
# (conv/shared: the stored state; split: the high-precision copy), e.g. shared:nvfp4-rtn vs
# shared:nvfp4-sr, split:nvfp4-rtn/fp16-rtn vs split:nvfp4-rtn/fp16-sr, at the same window.
# Table: pooled mean KL(p_fp32 ‖ p) over positions n in (n0/2, n0] at n0 = 1K, 4K, 16K, 64K, 128K
# (as far as the log reaches; the longest length is added when it is not one of them); a run that
# went non-finite (runs/*/first_nonfinite_position, NaN KL) by n0 is marked "non-finite".
# Crossover: the first log2 bucket from which RTN stays above SR (by more than 10%, --tie) to the
# end of the log, after RTN was below SR (by more than 10%) somewhere before.
# Every value is the mean over books of per-book means (an SR run's books averaged over the seed
# logs given first), with its 95% confidence interval over books (Student t, rs_style
# "Confidence intervals"); RTN/SR is paired per book. The crossover uses the book-mean ratio.
# Paper: RTN below SR at 1K, SR below RTN past ~16K, RTN non-finite at 64K-128K on both GDN models.
# Run: `python3 notebooks/table11_rtn_vs_sr.py LOG.h5 [LOG2.h5 ...] [--out-dir notebooks/figures]`.
# Writes table11_rtn_vs_sr.md (also on stdout), .png/.pdf (KL and RTN/SR vs length) and .json.

# %%
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rs_style as S  # noqa: E402

ap = S.figure_args("Table 11: RTN vs SR on the recurrent checkpoint.", "table11_rtn_vs_sr")
ap.add_argument("--lengths", default="1024,4096,16384,65536,131072", help="table columns n0 (default 1K..128K)")
ap.add_argument("--tie", type=float, default=0.1,
                help="RTN/SR ratios within 1 +- this band count as equal for the crossover (default 0.1)")
args = ap.parse_args()
S.setup()
plt = S.plt
logs = [S.KLLog(p) for p in args.files]
groups = S.group_logs(logs)


def base_label(run):
    """split:nvfp4-rtn/fp16-sr -> 'split NVFP4/FP16' (the configuration without the rounding)."""
    return S.policy_label(run).replace("+SR", "").replace("+RTN", "")


# %%
pairs = []  # (log group, rtn run, sr run) from each model's first log; seeds via the group
for grp in groups:
    g = grp.main
    for r in g.runs:  # the recurrent checkpoint's rounding as the log stores it (runs/*@hp_rounding)
        twin = S.sr_partner(r, g.runs)
        if twin:
            pairs.append((grp, r, twin[0]))
if not pairs:
    sys.exit("table11: no RTN/SR pair of runs (same policy but the recurrent checkpoint's rounding) in the logs")

wanted = [int(x) for x in args.lengths.split(",") if x]


def columns(grp):
    g = grp.main
    cols = [n for n in wanted if n <= g.max_n]
    if g.max_n not in cols:
        cols.append(g.max_n)
    return cols


def cell(grp, run, n0):
    """(text, value, nonfinite, [lo, hi]) of the table cell at length n0: mean over books of the
    per-book mean over n in (n0/2, n0], with its 95% interval over books."""
    bad = S.nonfinite_before(run, n0)
    _, nan, _ = S.mean_kl_upto(run, n0 // 2 + 1, n0)
    if bad or nan:
        return "non-finite", None, True, None
    _, u, _, _ = S.book_units(grp.runs_of(run.policy, run.window), np.array([n0 // 2 + 1, n0 + 1]))
    m, lo, hi, k = S.mean_ci(u)
    v = m[0]
    if not np.isfinite(v):
        return "-", None, False, None
    ci = f" [{lo[0]:.2g}, {hi[0]:.2g}]" if np.isfinite(lo[0]) else ""
    return f"{v:.3g}{ci}", float(v), False, [S.finite_or_none(lo[0]), S.finite_or_none(hi[0])]


def crossover(grp, rtn, sr):
    """Where RTN's KL overtakes SR's for good (log2 buckets), with the RTN non-finite length.
    a, b: per-bucket dicts (lo, hi, x, mean, ci_lo, ci_hi) of RTN and SR over books."""
    g = grp.main
    edges = S.log2_edges(g.max_n)
    a, b = {}, {}
    units = []
    for run, d in ((rtn, a), (sr, b)):
        _, u, _, st = S.book_units(grp.runs_of(run.policy, run.window), edges)
        m, lo, hi, k = S.mean_ci(u)
        d.update(lo=st["lo"], hi=st["hi"], x=st["x"], mean=m, ci_lo=lo, ci_hi=hi)
        units.append(u)
    ratio, rlo, rhi, rk = S.ratio_ci(units[0], units[1])
    nf = S.nonfinite_before(rtn, g.max_n)
    nf_n = min(t for _, t in nf) + 1 if nf else None
    ok = np.isfinite(ratio)
    above = ratio > 1
    res = {"bucket_lo": a["lo"].tolist(), "bucket_hi": a["hi"].tolist(), "ratio_rtn_sr": ratio.tolist(),
           "ratio_ci95_lo": rlo.tolist(), "ratio_ci95_hi": rhi.tolist(), "books": int(rk.max()) if rk.size else 0,
           "rtn_nonfinite_at": nf_n, "max_n": g.max_n}
    idx = np.where(ok)[0]
    if idx.size == 0:
        res["crossover_at"], res["verdict"] = None, "no finite bucket"
        return res, a, b
    # the first bucket from which RTN stays above SR (by more than the tie band) to the end,
    # after a bucket where it was below (finite buckets only)
    tie = 1.0 + args.tie
    above, below = ratio > tie, ratio < 1.0 / tie
    seq = above[idx]
    j = len(seq)
    while j > 0 and seq[j - 1]:
        j -= 1
    if not (above[idx] | below[idx]).any():
        res["crossover_at"] = None
        res["verdict"] = f"no crossover: RTN and SR within {args.tie:.0%} of each other at every length up to {S.fmt_tokens(g.max_n)}"
    elif j == len(seq):
        res["crossover_at"] = None
        res["verdict"] = (f"no crossover up to {S.fmt_tokens(g.max_n)}: RTN "
                          + ("below SR" if below[idx[-1]] else f"within {args.tie:.0%} of SR") + " at the end")
    elif not below[idx[:j]].any():
        res["crossover_at"] = None
        res["verdict"] = f"no crossover: RTN never below SR, above it from n ≈ {S.fmt_tokens(a['lo'][idx[j]])}"
    else:
        res["crossover_at"] = int(a["lo"][idx[j]])
        res["verdict"] = f"RTN below SR at first, above it from n ≈ {S.fmt_tokens(res['crossover_at'])} on"
    res["ratio_last"] = float(ratio[idx[-1]])
    ci = (f" [95% CI {rlo[idx[-1]]:.2f}-{rhi[idx[-1]]:.2f}]" if np.isfinite(rlo[idx[-1]]) else "")
    res["verdict"] += f" (RTN/SR = {ratio[idx[-1]]:.2f}{ci} at n ≈ {S.fmt_tokens(a['hi'][idx[-1]])})"
    if nf_n:
        res["verdict"] += f"; RTN non-finite from n = {nf_n}"
    res["rtn_below_sr_at_1k"] = None
    i1 = int(np.searchsorted(a["hi"], 1023))  # the bucket holding n = 1024
    if i1 < len(ratio) and np.isfinite(ratio[i1]):
        res["rtn_below_sr_at_1k"] = bool(ratio[i1] < 1)
    return res, a, b


# %%
lines = ["| model | recurrent checkpoint | rounding | policy | L | " , "|---|---|---|---|---|"]
all_cols = sorted({n for grp, _, _ in pairs for n in columns(grp)})
lines[0] += " | ".join(f"KL @ {S.fmt_tokens(n)}" for n in all_cols) + " |"
lines[1] += "---|" * len(all_cols)
notes, out_pairs, curves = [], [], []
for grp, rtn, sr in pairs:
    g = grp.main
    cols = columns(grp)
    res, a, b = crossover(grp, rtn, sr)
    curves.append((g, rtn, sr, a, b, res))
    entry = {"model": g.model, "config": base_label(rtn), "window": rtn.window, "rtn": rtn.policy, "sr": sr.policy,
             "cells": {}, **res}
    for run, rnd in ((rtn, "RTN"), (sr, "SR")):
        row = f"| {g.model} | {base_label(run)} | {rnd} | `{run.policy}` | {run.window} | "
        vals = []
        for n in all_cols:
            if n not in cols:
                vals.append("")
                continue
            txt, v, nf, ci = cell(grp, run, n)
            vals.append(txt)
            entry["cells"].setdefault(rnd, {})[str(n)] = "non-finite" if nf else v
            entry.setdefault("cells_ci95", {}).setdefault(rnd, {})[str(n)] = ci
        lines.append(row + " | ".join(vals) + " |")
        for b, t in S.nonfinite_before(run, g.max_n):
            notes.append(f"{g.model} `{run.policy}`: book {g.book_ids[b]} non-finite from position {t} (n = {t + 1})")
    out_pairs.append(entry)
nb = sorted({grp.main.n_books for grp, _, _ in pairs})
ns = sorted({len(grp.logs) for grp, _, _ in pairs})
md = [f"Table 11 (replayssm): mean KL(p_fp32 ‖ p), nats, over positions n in (n0/2, n0]: the mean over "
      f"{'/'.join(str(x) for x in nb)} books of each book's mean"
      + (f" (SR runs: each book averaged over {'/'.join(str(x) for x in ns)} seeds first)" if max(ns) > 1 else "")
      + ", [95% confidence interval over books, Student t]; "
      f"non-finite = the run produced NaN/Inf logits by n0.", ""] + lines + [""]
md += [f"- {e['model']}, {e['config']} (L = {e['window']}): {e['verdict']}" for e in out_pairs]
md += [f"- {x}" for x in notes]
md += ["", f"Paper (Table 11): {S.PAPER['table11']}.", ""]
text = "\n".join(md)
print(text)
os.makedirs(args.out_dir, exist_ok=True)
mdp = os.path.join(args.out_dir, args.name + ".md")
with open(mdp, "w") as fh:
    fh.write(text)
print("wrote", S._rel(mdp))

# %%
models = list(dict.fromkeys(c[0].model for c in curves))


def seeds_of(model):
    n = max(len(grp.logs) for grp in groups if grp.main.model == model)
    return f", SR: {S.plural(n, 'seed')}" if n > 1 else ""



fig, axes = plt.subplots(2, len(models), figsize=(6.6 * len(models), 5.2), squeeze=False, sharex="col",
                         gridspec_kw={"height_ratios": [2, 1]})
for j, m in enumerate(models):
    ax, axr = axes[0][j], axes[1][j]
    for g, rtn, sr, a, b, res in (c for c in curves if c[0].model == m):
        for run, st, ls in ((rtn, a, ":"), (sr, b, "-")):
            s = run.style
            ok = np.isfinite(st["mean"]) & (st["mean"] > 0)
            ymin = float(st["mean"][ok].min()) / 10 if ok.any() else None
            S.band(ax, st["x"][ok], st["ci_lo"][ok], st["ci_hi"][ok], s["color"], ymin=ymin)
            ax.plot(st["x"][ok], st["mean"][ok], color=s["color"], marker=s["marker"], ls=ls,
                    label=f"{s['label']} (L = {run.window})", markersize=3.5)
        r = np.array(res["ratio_rtn_sr"], dtype=float)
        ok = np.isfinite(r)
        s = sr.style
        S.band(axr, a["x"][ok], np.array(res["ratio_ci95_lo"], dtype=float)[ok],
               np.array(res["ratio_ci95_hi"], dtype=float)[ok], s["color"])
        axr.plot(a["x"][ok], r[ok], color=s["color"], marker=s["marker"], markersize=3.5, label=base_label(sr))
        if res.get("rtn_nonfinite_at"):
            for axx in (ax, axr):
                axx.axvline(res["rtn_nonfinite_at"], color=s["color"], ls="--", lw=0.8)
            ax.text(res["rtn_nonfinite_at"], ax.get_ylim()[1], " RTN non-finite", color=s["color"], fontsize=7,
                    va="top", rotation=90)
        if res.get("crossover_at"):
            # a vertical mark at the crossover and its label in the panel's lower margin, on the side
            # with room (a label above the curve collided with the line and the panel's edge)
            xc = res["crossover_at"]
            axr.axvline(xc, color=s["color"], ls=(0, (2, 2)), lw=0.9)
            right = xc < np.sqrt(a["x"][0] * a["x"][-1])
            axr.text(xc * (1.08 if right else 1 / 1.08), 0.06, f"{base_label(sr)}: crossover ≈ {S.fmt_tokens(xc)}",
                     transform=axr.get_xaxis_transform(), ha="left" if right else "right", va="bottom", fontsize=7,
                     color=s["color"], bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))
    axr.axhline(1.0, color="#555555", lw=0.8)
    for axx in (ax, axr):
        axx.set_xscale("log", base=2)
        axx.xaxis.set_major_formatter(S.matplotlib.ticker.FuncFormatter(lambda v, _: S.fmt_tokens(v) if v >= 1 else ""))
    ax.set_yscale("log")
    axr.set_yscale("log")
    axr.yaxis.set_major_locator(S.matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axr.yaxis.set_major_formatter(S.matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axr.yaxis.set_minor_formatter(S.NullFormatter())  # 1-2-5 labels only: minor ones would overlap
    ax.set_ylabel(S.BUCKET_LABEL)
    axr.set_ylabel("KL$_{RTN}$ / KL$_{SR}$\n(paired per book)")
    axr.set_xlabel(S.LENGTH_LABEL)
    g0 = next(c[0] for c in curves if c[0].model == m)
    ax.set_title(f"{m}: RTN (dotted) vs SR (solid) on the recurrent checkpoint\n"
                 f"{S.plural(g0.n_books, 'book')}{seeds_of(m)}; bands: 95% CI over books")
    S.legend_outside(ax)
    S.legend_outside(axr)
S.note(fig, "\n".join(g.provenance() for g in logs) + f"\npaper: {S.PAPER['table11']}")
fig.tight_layout()
S.save_figure(fig, args.name, args.out_dir)
S.write_json({"figure": args.name, "command": S.script_command(), "inputs": [g.describe() for g in logs],
              "columns": all_cols, "pairs": out_pairs, "markdown": S._rel(mdp)}, args.name, args.out_dir)

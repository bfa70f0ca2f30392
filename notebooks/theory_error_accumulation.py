# %% [markdown]
# # Appendix C.6 — accumulated rounding error of the state: closed forms vs Monte Carlo
#
# D_t = stored state - exact state under the recurrence S_t = alpha S_{t-1} + ..., with one
# rounding error e of mean b and variance s2 per rounding (measured on the real quantizers).
# Conventional (round every step): E D -> b/(1-alpha), Var D -> s2/(1-alpha^2); shared (one
# low-precision checkpoint, rounded at flushes every L steps): b/(1-alpha^L), s2/(1-alpha^2L);
# split (HP checkpoint carries the recurrence, LP copy read only): one rounding, b and s2 at every
# t. Lines: closed forms (replayssm/theory/rs_theory.h); markers: Monte Carlo chains through the quantizers
# (replayssm/theory/rs_theory_mc.h), error bars = 2 standard errors. Top row: RTN, the accumulated bias
# |E D_t|; bottom row: SR, Var D_t (SR is unbiased; its variance is what accumulates).
# Data: `replayssm theory --out theory.h5` (groups /c6/<format>/alpha_<a>/<conv|shared|split>).
# Run: `python3 notebooks/theory_error_accumulation.py theory.h5 [--out-dir notebooks/figures]`.

# %%
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rs_style as S  # noqa: E402

ap = S.figure_args("C.6 error accumulation: closed forms vs Monte Carlo.", "theory_error_accumulation", nargs=1,
                   help_files="HDF5 file of replayssm theory --out")
ap.add_argument("--rtn-format", default="nvfp4-rtn", help="format of the bias row (default nvfp4-rtn)")
ap.add_argument("--sr-format", default="nvfp4-sr", help="format of the variance row (default nvfp4-sr)")
args = ap.parse_args()
S.setup()
plt = S.plt

# %%
with S.open_h5(args.files[0]) as f:
    if "c6" not in f:
        sys.exit(f"{args.files[0]}: no /c6 group (run replayssm theory with --mc-steps > 0)")
    root = {k: S._s(v) for k, v in f.attrs.items()}
    data = {}
    for fmt in f["c6"]:
        for ag in f["c6"][fmt]:
            g = f["c6"][fmt][ag]
            a = float(S._s(g.attrs["alpha"]))
            for sto in g:
                d = {k: g[sto][k][()] for k in g[sto]}
                d.update({k: float(S._s(v)) for k, v in g.attrs.items() if k in ("b", "sigma2", "window_L", "chains")})
                data[(fmt, a, sto)] = d
alphas = sorted({a for _, a, _ in data})
for fmt in (args.rtn_format, args.sr_format):
    if not any(k[0] == fmt for k in data):
        sys.exit(f"{args.files[0]}: format {fmt} not in /c6 (have {sorted({k[0] for k in data})})")

# %%
fig, axes = plt.subplots(2, len(alphas), figsize=(3.2 * len(alphas) + 1.8, 5.0), squeeze=False)
rows = [(args.rtn_format, "mean", "|E D$_t$| (bias), state units"), (args.sr_format, "var", "Var D$_t$, state units$^2$")]
summary = []
for i, (fmt, mom, ylab) in enumerate(rows):
    for j, a in enumerate(alphas):
        ax = axes[i][j]
        for sto in ("conv", "shared", "split"):
            d = data.get((fmt, a, sto))
            if d is None:
                continue
            lab, col = S.STORAGE_STYLE[sto]
            t = d["t"]
            closed, mc, se = d[f"closed_{mom}"], d[f"mc_{mom}"], d[f"mc_{mom}_se"]
            y, ym = (np.abs(closed), np.abs(mc)) if mom == "mean" else (closed, mc)
            ax.plot(t, y, color=col, lw=1.3, label=f"{lab}: closed form")
            ax.errorbar(t, ym, yerr=2 * se, fmt="o", ms=3, mfc="none", color=col, lw=0.7, capsize=1.5,
                        label=f"{lab}: Monte Carlo")
            rel = mc[-1] / closed[-1] if closed[-1] != 0 else np.nan
            summary.append({"format": fmt, "moment": mom, "alpha": a, "storage": sto, "t": float(t[-1]),
                            "closed": float(closed[-1]), "mc": float(mc[-1]), "mc_se": float(se[-1]),
                            "mc_over_closed": S.finite_or_none(rel),
                            "z": S.finite_or_none((mc[-1] - closed[-1]) / se[-1]) if se[-1] > 0 else None,
                            "b": d.get("b"), "sigma2": d.get("sigma2"), "window_L": d.get("window_L")})
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(S.matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(S.NullFormatter())  # minor log labels would overlap
        ax.yaxis.set_minor_formatter(S.NullFormatter())
        ax.set_title(f"{fmt}, α = {a:g}  (1/(1-α) = {1 / (1 - a):.0f})")
        if j == 0:
            ax.set_ylabel(ylab)
        if i == 1:
            ax.set_xlabel("step t")
axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=7)
L = root.get("window_L", "?")
fig.suptitle(f"C.6: accumulated rounding error, conventional vs shared (L = {L:g}) vs split (fp32 HP)"
             if isinstance(L, float) else "C.6: accumulated rounding error", y=1.0)
S.note(fig, f"{S._rel(args.files[0])}: {root.get('command', '')}; {root.get('tool', '')}; pre-rounding values "
       "half-normal |N(0,1)|, fresh per rounding")
fig.tight_layout()
S.save_figure(fig, args.name, args.out_dir)

# %%
# well resolved: the Monte Carlo standard error is below 5% of the closed form (a single RTN
# rounding's bias, e.g. split, is a few % of sigma and needs far more chains to resolve)
finite = [s for s in summary if s["mc_over_closed"] is not None and abs(s["mc_se"]) < 0.05 * abs(s["closed"])]
worst = max(finite, key=lambda s: abs(s["mc_over_closed"] - 1)) if finite else None
zs = [abs(s["z"]) for s in summary if s["z"] is not None]
S.write_json({"figure": args.name, "command": S.script_command(), "inputs": [{"path": S._rel(args.files[0]),
              "command_line": root.get("command"), "tool": root.get("tool")}], "points": summary,
              "worst_mc_over_closed": worst, "n_resolved": len(finite), "n_points": len(summary),
              "max_abs_z": max(zs) if zs else None}, args.name, args.out_dir)
for s in summary:
    print(f"{s['format']:>10} {s['moment']:>4} alpha {s['alpha']:<6g} {s['storage']:>6} t={s['t']:<6.0f} "
          f"MC/closed = {s['mc_over_closed']:.4f}" + (f" (z = {s['z']:+.1f})" if s["z"] is not None else ""))

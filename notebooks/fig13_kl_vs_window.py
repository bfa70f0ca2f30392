# %% [markdown]
# # Figure 13 — KL at fixed context lengths vs the replay window L
#
# For each state policy logged at several windows L (the paper: L in {4, 8, 16, 32, 64}; shared
# NVFP4+SR and split NVFP4/FP32), the pooled mean KL(p_fp32 ‖ p) over positions n in (n0/2, n0]
# at a few fixed lengths n0 (1K, 4K, 16K, 64K, 128K as far as every log reaches, else the longest
# common length), against L. The paper finds split flat across L = 4..64 and shared degrading
# with context. Inputs: any number of logs of the same model and books (`replayssm sweep
# --windows ...` and/or `replayssm kl --window L`); a (policy, L) found twice is taken from the
# first file. Run: `python3 notebooks/fig13_kl_vs_window.py LOG.h5 [LOG2.h5 ...] [--out-dir notebooks/figures]`.

# %%
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rs_style as S  # noqa: E402

ap = S.figure_args("Figure 13: KL at fixed lengths vs window L.", "fig13_kl_vs_window")
ap.add_argument("--lengths", default="1024,4096,16384,65536,131072",
                help="context lengths n0 to show, as far as the logs reach (default 1K,4K,16K,64K,128K)")
args = ap.parse_args()
S.setup()
plt = S.plt
logs = [S.KLLog(p) for p in args.files]
if len({(g.attrs.get("model_config_hash"), tuple(g.book_ids)) for g in logs}) > 1:
    print("warning: the logs differ in model or books; windows are compared across them anyway", file=sys.stderr)

# %%
runs = {}  # (policy, L) -> run
for g in logs:
    for r in g.runs:
        runs.setdefault((r.policy, r.window), r)
by_policy = {}
for (p, L), r in runs.items():
    by_policy.setdefault(p, {})[L] = r
by_policy = {p: d for p, d in by_policy.items() if len(d) >= 2}  # only policies swept over L
if not by_policy:
    sys.exit("fig13: no policy appears with two or more windows in the given logs")
order = [p for p in S.FIG5_POLICIES if p in by_policy] + sorted(p for p in by_policy if p not in S.FIG5_POLICIES)
common_max = min(r.log.max_n for d in by_policy.values() for r in d.values())
wanted = [int(x) for x in args.lengths.split(",") if x]
lengths = [n for n in wanted if n <= common_max] or [common_max]
if lengths[-1] != common_max and common_max not in wanted and len(lengths) < 3:
    lengths.append(common_max)  # short logs: also show the longest common length

# %%
fig, ax = plt.subplots(figsize=(6.6, 3.6))
alphas = np.linspace(0.35, 1.0, len(lengths)) if len(lengths) > 1 else [1.0]
result = {"lengths": lengths, "policies": {}}
for p in order:
    st = S.policy_style(next(iter(by_policy[p].values())))  # a run of p: its stored fields
    Ls = sorted(by_policy[p])
    result["policies"][p] = {"label": st["label"], "windows": Ls, "kl": {}, "max_over_min_across_L": {}}
    for n0, a in zip(lengths, alphas):
        vals = np.array([S.mean_kl_upto(by_policy[p][L], n0 // 2 + 1, n0)[0] for L in Ls])
        ok = np.isfinite(vals) & (vals > 0)
        ax.plot(np.array(Ls)[ok], vals[ok], color=st["color"], marker=st["marker"], ls=st["ls"], alpha=a,
                label=f"{st['label']}, n ≈ {S.fmt_tokens(n0)}")
        result["policies"][p]["kl"][str(n0)] = [S.finite_or_none(v) for v in vals]
        if ok.sum() >= 2:
            result["policies"][p]["max_over_min_across_L"][str(n0)] = float(vals[ok].max() / vals[ok].min())
ax.set_xscale("log", base=2)
ax.set_yscale("log")
allL = sorted({L for d in by_policy.values() for L in d})
ax.set_xticks(allL)
ax.set_xticklabels([str(L) for L in allL])
ax.xaxis.set_minor_formatter(S.NullFormatter())
ax.set_xlabel("replay window L (steps per flush)")
ax.set_ylabel("KL(p$_{fp32}$ ‖ p), nats\n(mean over positions n in (n$_0$/2, n$_0$])")
g0 = logs[0]
ax.set_title(f"{g0.model} ({g0.model_type}), {S.plural(g0.n_books, 'book')}: KL vs window at fixed lengths n$_0$")
S.legend_outside(ax)
S.note(fig, "\n".join(g.provenance() for g in logs) + "\npaper (Qwen3.5-4B): split flat across L = 4..64; "
       "shared degrades with context")
fig.tight_layout()
S.save_figure(fig, args.name, args.out_dir)

# %%
S.write_json({"figure": args.name, "command": S.script_command(), "inputs": [g.describe() for g in logs],
              "model": g0.model, **result}, args.name, args.out_dir)
for p, d in result["policies"].items():
    print(f"{d['label']}: max/min KL across L = {d['windows']}: " +
          ", ".join(f"{S.fmt_tokens(int(k))}: {v:.2f}x" for k, v in d["max_over_min_across_L"].items()))

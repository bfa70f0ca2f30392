# %% [markdown]
# # Figure 12 — KL vs context length on the other model(s)
#
# The Figure 5 measurement for every other bundled model (here data/models/mamba2-tiny, a
# Mamba-2 hybrid; the paper shows Nemotron-3-Nano-4B, Nemotron-3-Super and Qwen3.5-122B), one
# panel per log: pooled mean KL over positions n in [2^k, 2^(k+1)), log-log, one line per policy,
# arrow = shared NVFP4+SR / split NVFP4/FP32 in the last bucket (paper: 13-29x at the longest
# length). Points: mean over books of per-book bucket means, bands: 95% CI over books (Student t;
# logs of one model with other --seed values average an SR policy's books over seeds first).
# Run: `python3 notebooks/fig12_kl_other_models.py LOG.h5 [LOG2.h5 ...] [--out-dir notebooks/figures]`
# (one panel per model; logs of the same model are its seed logs).

# %%
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rs_style as S  # noqa: E402

ap = S.figure_args("Figure 12: KL vs context length on other models (one panel per log).", "fig12_kl_other_models")
args = ap.parse_args()
S.setup()
plt = S.plt
logs = [S.KLLog(p) for p in args.files]
groups = S.group_logs(logs)

# %%
n = len(groups)
fig, axes = plt.subplots(1, n, figsize=(6.6 * n, 3.6), squeeze=False)
models = []
for ax, grp in zip(axes[0], groups):
    log = grp.main
    policies = [p for p in S.FIG5_POLICIES if log.find(p)] or None
    nums = S.kl_length_panel(ax, grp, policies)
    models.append(nums)
    seeds = f", SR: {S.plural(len(grp.logs), 'seed')}" if len(grp.logs) > 1 else ""
    ax.set_title(f"{log.model} ({log.model_type}), {S.plural(log.n_books, 'book')}{seeds}, "
                 f"L = {','.join(sorted({str(r.window) for r in log.runs}))}; bands: 95% CI over books")
    S.legend_outside(ax)
lo_p, hi_p = S.PAPER["fig12_ratio_range"]
S.note(fig, "\n".join(log.provenance() for log in logs) +
       f"\npaper (Nemotron-3-Nano-4B, Nemotron-3-Super, Qwen3.5-122B): shared/split {lo_p:.0f}-{hi_p:.0f}x at the longest length")
fig.tight_layout()
S.save_figure(fig, args.name, args.out_dir)

# %%
S.write_json({"figure": args.name, "command": S.script_command(), "inputs": [g.describe() for g in logs],
              "models": models}, args.name, args.out_dir)
for m in models:
    if m.get("ratio_shared_split") is not None:
        clo, chi = m["ratio_shared_split_ci95"]
        ci = f" (95% CI {clo:.3g}-{chi:.3g}x over {S.plural(m['ratio_books'], 'book')})" if clo is not None else ""
        print(f"{m['model']}: shared NVFP4+SR / split NVFP4/FP32 in the last bucket {m['last_bucket']}: "
              f"{m['ratio_shared_split']:.3g}x{ci}; paper 13-29x")

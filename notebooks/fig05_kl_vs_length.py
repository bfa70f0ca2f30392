# %% [markdown]
# # Figure 5 — KL(p_fp32 ‖ p) vs context length, per state policy (GDN model)
#
# Teacher-forced PG-19 books through the model; the fp32 reference and every state policy run in
# lockstep (`replayssm kl`), per-position KL logged to HDF5. Here: the pooled mean KL over the
# positions of each log-spaced bucket n in [2^k, 2^(k+1)) (n = context length), log-log, one line
# per policy with the paper's labels (shared FP8+SR, shared NVFP4+SR, split NVFP4/FP32, split
# NVFP4/FP16+SR, conventional FP16+SR); the arrow gives shared NVFP4+SR / split NVFP4/FP32 in the
# last bucket (the paper: 0.136 / 0.0038 = 36x at 128K on Qwen3.5-4B).
#
# Each point is the mean over books of the per-book bucket means, with its 95% confidence band over
# books (Student t; an SR policy's books are first averaged over the seed logs given), see
# rs_style "Confidence intervals"; the ratio is given with its interval.
#
# Run: `python3 notebooks/fig05_kl_vs_length.py LOG.h5 [SEED_LOG.h5 ...] [--out-dir notebooks/figures]`
# (reproduce.sh makes LOG.h5 with `replayssm kl --model data/models/gdn-tiny --seed 0 ...` and a
# seed log of the SR policies with `--seed 1`). Writes fig05_kl_vs_length.png/.pdf/.json.

# %%
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rs_style as S  # noqa: E402

ap = S.figure_args("Figure 5: KL vs context length per state policy.", "fig05_kl_vs_length", nargs="+",
                   help_files="HDF5 log of replayssm kl (fp32 reference + the Figure 5 policies), then optional "
                              "logs of the same model and books with other --seed values (SR policies)")
args = ap.parse_args()
S.setup()
plt = S.plt
grp = S.LogGroup([S.KLLog(p) for p in args.files])
log = grp.main

# %%
fig, ax = plt.subplots(figsize=(6.6, 3.6))
policies = [p for p in S.FIG5_POLICIES if log.find(p)] or None  # the paper's five, else every run
nums = S.kl_length_panel(ax, grp, policies)
seeds = f", SR: {S.plural(len(grp.logs), 'seed')}" if len(grp.logs) > 1 else ""
ax.set_title(f"{log.model} ({log.model_type}), PG-19 sample, {S.plural(log.n_books, 'book')}{seeds}, "
             f"L = {','.join(sorted({str(r.window) for r in log.runs}))}; bands: 95% CI over books")
S.legend_outside(ax)
S.note(fig, "\n".join(g.provenance() for g in grp.logs) + f"\npaper ({S.PAPER['fig05_model']}, 128K): shared NVFP4+SR "
       f"{S.PAPER['fig05_shared_nvfp4_128k']} vs split NVFP4/FP32 {S.PAPER['fig05_split_fp32_128k']} nats "
       f"= {S.PAPER['fig05_ratio']:.0f}x")
fig.tight_layout()
S.save_figure(fig, args.name, args.out_dir)

# %%
S.write_json({"figure": args.name, "command": S.script_command(), "inputs": [g.describe() for g in grp.logs],
              "models": [nums]}, args.name, args.out_dir)
if nums.get("ratio_shared_split") is not None:
    lo, hi = nums["last_bucket"]
    clo, chi = nums["ratio_shared_split_ci95"]
    ci = f" (95% CI {clo:.3g}-{chi:.3g}x over {S.plural(nums['ratio_books'], 'book')})" if clo is not None else ""
    print(f"{log.model}: shared NVFP4+SR / split NVFP4/FP32 at n in [{lo}, {hi}]: {nums['ratio_shared_split']:.3g}x{ci} "
          f"({nums['shared_last']:.3e} / {nums['split_last']:.3e} nats); paper 36x at 128K")

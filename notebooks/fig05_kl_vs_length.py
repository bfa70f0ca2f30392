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
# Run: `python3 notebooks/fig05_kl_vs_length.py LOG.h5 [--out-dir figures]` (reproduce.sh makes
# LOG.h5 with `replayssm kl --model data/models/gdn-tiny ...`). Writes fig05_kl_vs_length.png/.pdf/.json.

# %%
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rs_style as S  # noqa: E402

ap = S.figure_args("Figure 5: KL vs context length per state policy.", "fig05_kl_vs_length", nargs=1,
                   help_files="HDF5 log of replayssm kl (fp32 reference + the Figure 5 policies)")
args = ap.parse_args()
S.setup()
plt = S.plt
log = S.KLLog(args.files[0])

# %%
fig, ax = plt.subplots(figsize=(6.6, 3.6))
policies = [p for p in S.FIG5_POLICIES if log.find(p)] or None  # the paper's five, else every run
nums = S.kl_length_panel(ax, log, policies)
ax.set_title(f"{log.model} ({log.model_type}), PG-19 sample, {log.n_books} book(s), "
             f"L = {','.join(sorted({str(r.window) for r in log.runs}))}")
S.legend_outside(ax)
S.note(fig, log.provenance() + f"\npaper ({S.PAPER['fig05_model']}, 128K): shared NVFP4+SR "
       f"{S.PAPER['fig05_shared_nvfp4_128k']} vs split NVFP4/FP32 {S.PAPER['fig05_split_fp32_128k']} nats "
       f"= {S.PAPER['fig05_ratio']:.0f}x")
fig.tight_layout()
S.save_figure(fig, args.name, args.out_dir)

# %%
S.write_json({"figure": args.name, "command": S.script_command(), "inputs": [log.describe()],
              "models": [nums]}, args.name, args.out_dir)
if nums.get("ratio_shared_split") is not None:
    lo, hi = nums["last_bucket"]
    print(f"{log.model}: shared NVFP4+SR / split NVFP4/FP32 at n in [{lo}, {hi}]: {nums['ratio_shared_split']:.2f}x "
          f"({nums['shared_last']:.3e} / {nums['split_last']:.3e} nats); paper 36x at 128K")

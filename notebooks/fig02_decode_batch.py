# %% [markdown]
# # Figure 2 — standard decode: conventional vs ReplaySSM over the batch (H200)
#
# Kernel time of one decode step of one SSM layer (fp32 state, B x H heads), conventional
# (read + write the state every step) against ReplaySSM (L = 16, bf16 ring; non-flush steps read
# the checkpoint once, flush steps fold and write it; rows staggered so the flush cost is
# amortised exactly). Top: time per step; bottom: speed-up, next to the traffic bound of lib/theory's
# C.3 model (M_conv / M_replay per window) and the paper's kernel range at B = 256 (1.46-1.80x).
# Data: `replayssm bench` (sweep `std`). Run: `python3 notebooks/fig02_decode_batch.py [bench.h5]`.

# %%
import sys

import numpy as np

import rs_style as S

S.setup()
tab = S.BenchTable(sys.argv[1] if len(sys.argv) > 1 else S.default_bench_path())
plt = S.plt

# %%
fig, axes = plt.subplots(2, 4, figsize=(11, 4.6), sharex=True)
for i, m in enumerate(S.MODELS):
    conv_B = tab.get("B", sweep="std", model=m, kernel="conv")
    conv_t = tab.get("median_us", sweep="std", model=m, kernel="conv")
    rep_B = tab.get("B", sweep="std", model=m, kernel="replay", variant="cycle-bf16ring")
    rep_t = tab.get("median_us", sweep="std", model=m, kernel="replay", variant="cycle-bf16ring")
    if len(conv_B) == 0:
        continue
    o1, o2 = np.argsort(conv_B), np.argsort(rep_B)
    ax = axes[0, i]
    ax.loglog(conv_B[o1], conv_t[o1], marker="s", color=S.COLORS["conv"], label="conventional")
    ax.loglog(rep_B[o2], rep_t[o2], marker="o", color=S.COLORS["replay"], label="ReplaySSM L=16")
    ax.set_title(S.MODEL_LABELS[m])
    if i == 0:
        ax.set_ylabel("µs per step")
    ax = axes[1, i]
    sp = np.array([conv_t[conv_B == b][0] / rep_t[rep_B == b][0] for b in rep_B[o2]])
    ax.semilogx(rep_B[o2], sp, marker="o", color=S.COLORS["replay"], label="measured")
    th_c = tab.get("theory_bytes", sweep="std", model=m, kernel="conv")[o1]
    th_r = tab.get("theory_bytes", sweep="std", model=m, kernel="replay", variant="cycle-bf16ring")[o2]
    ax.axhline(th_c[-1] / th_r[-1], ls="--", color=S.COLORS["theory"], label="traffic bound (C.3)")
    # the paper's range is for B = 256 only: a box around that B, not a band over every B
    ax.fill_between([256 / 1.25, 256 * 1.25], 1.46, 1.80, color="#999999", alpha=0.45, lw=0,
                    label="paper, B = 256 (1.46-1.80x)")
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_xlabel("batch B")
    ax.set_xticks([1, 8, 32, 128, 512])
    ax.set_xticklabels(["1", "8", "32", "128", "512"])
    if i == 0:
        ax.set_ylabel("speed-up vs conventional")
# one legend for both rows, below the panels, so that no curve is covered
h0, l0 = axes[0, 0].get_legend_handles_labels()
h1, l1 = axes[1, 0].get_legend_handles_labels()
fig.legend(h0 + h1, ["conventional", "ReplaySSM L = 16", "measured speed-up", "traffic bound (C.3)",
                     "paper, B = 256 (1.46-1.80x)"], loc="lower center", ncol=5, frameon=False,
           bbox_to_anchor=(0.5, 0.035))
fig.suptitle("Standard decode, fp32 state: conventional vs ReplaySSM (one SSM layer)", y=1.0)
S.note(fig, tab.provenance())
fig.tight_layout(rect=(0, 0.07, 1, 1))
S.save(fig, "fig02_decode_batch")

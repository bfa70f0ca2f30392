# %% [markdown]
# # Figure 10 — rollback schemes for speculative decoding (Nemotron-3-Super shapes, H200)
#
# Cost of one verification of T drafts at B = 256, fp32 state (4.2 MB per head-state, 1.07 GB
# per layer), normalised to one conventional decode step. Measured on the H200: the snapshot
# baseline (vLLM: 1 read + T writes) and ReplaySSM (1 read non-flush, 1 read + 1 write flush;
# a = 1 and a = T). Prior schemes are *modelled*, not run: their state passes per step as the
# digest (section 7) lists them — Mamba in the Llama 1R + 2W (plus a 2T-1 serial chain, not
# modelled), Snakes and Ladders 3R + 3W, STree 2R + 1W (5R + 4W as released) — priced at the
# conventional kernel's measured bandwidth (a pass = S / achieved GB/s), so they are lower
# bounds. Paper: ReplaySSM 3.3-3.9x faster than STree, 2.5-3.6x than Mamba in the Llama at a = T.
# Data: `replayssm bench` (sweeps `std`, `verify`). Run: `python3 notebooks/fig10_rollback.py [bench.h5]`.

# %%
import sys

import numpy as np

import rs_style as S

S.setup()
tab = S.BenchTable(sys.argv[1] if len(sys.argv) > 1 else S.default_bench_path())
plt = S.plt
MODEL = "nemotron-3-super"
conv_us = tab.one("median_us", sweep="std", model=MODEL, kernel="conv", B=256)
pass_us = conv_us / 2.0  # one pass over the state (read or write) at the conventional kernel's bandwidth
MODELLED = [("Mamba in the Llama\n1R+2W (model)", 3), ("Snakes & Ladders\n3R+3W (model)", 6),
            ("STree 2R+1W\n(model)", 3), ("STree as released\n5R+4W (model)", 9)]

# %%
Ts = [4, 8]
fig, axes = plt.subplots(1, len(Ts), figsize=(10, 3.3), sharey=True)
for ax, T in zip(axes, Ts):
    labels, vals, cols, hatch = [], [], [], []
    labels.append(f"vLLM snapshots\n1R+{T}W"), vals.append(tab.one("norm", sweep="verify", model=MODEL,
                                                                     kernel="verify-snapshot", T=T))
    cols.append(S.COLORS["snapshot"]), hatch.append("")
    for lab, passes in MODELLED:
        labels.append(lab), vals.append(passes * pass_us / conv_us), cols.append(S.COLORS["other"]), hatch.append("//")
    for a, key in ((1, "replay-a1"), (T, "replay-aT")):
        labels.append(f"ReplaySSM\na = {a}")
        vals.append(tab.one("norm", sweep="verify", model=MODEL, kernel="verify-replay", T=T, a=a))
        cols.append(S.COLORS[key]), hatch.append("")
    x = np.arange(len(vals))
    bars = ax.bar(x, vals, color=cols, hatch=hatch, edgecolor="white")
    for b, v in zip(bars, vals):
        ax.text(b.get_x() + b.get_width() / 2, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_title(f"T = {T}")
axes[0].set_ylabel("time / conventional step")
fig.suptitle("Rollback schemes, Nemotron-3-Super shapes, B = 256, fp32 (hatched: traffic model)", y=1.02)
S.note(fig, tab.provenance())
fig.tight_layout()
S.save(fig, "fig10_rollback")

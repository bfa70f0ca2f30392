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
# Measured bars first, then a gap, a separator and the modelled schemes on a shaded ground with
# hollow hatched bars: a reader must not compare a model bar with a measured one as if equal.
Ts = [4, 8]
GAP = 0.8
fig, axes = plt.subplots(1, len(Ts), figsize=(10, 3.6), sharey=True)
for ax, T in zip(axes, Ts):
    meas = [(f"vLLM snapshots\n1R+{T}W",
             tab.one("norm", sweep="verify", model=MODEL, kernel="verify-snapshot", T=T, B=256), S.COLORS["snapshot"])]
    for a, key in ((1, "replay-a1"), (T, "replay-aT")):
        meas.append((f"ReplaySSM\na = {a}",
                     tab.one("norm", sweep="verify", model=MODEL, kernel="verify-replay", T=T, a=a, B=256,
                             variant=f"bf16ring-a{a}"), S.COLORS[key]))
    xm = np.arange(len(meas), dtype=float)
    xo = len(meas) + GAP + np.arange(len(MODELLED), dtype=float)
    bars = ax.bar(xm, [v for _, v, _ in meas], color=[c for _, _, c in meas], edgecolor="white")
    mvals = [passes * pass_us / conv_us for _, passes in MODELLED]
    mbars = ax.bar(xo, mvals, facecolor="none", edgecolor=S.COLORS["other"], hatch="//", lw=0.8)
    for b, v in list(zip(bars, [v for _, v, _ in meas])) + list(zip(mbars, mvals)):
        ax.text(b.get_x() + b.get_width() / 2, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
    lo = len(meas) - 0.5 + GAP / 2
    ax.axvspan(lo, xo[-1] + 0.6, color="0.93", zorder=0, lw=0)
    ax.axvline(lo, color="0.4", lw=0.8, ls="--")
    top = max(mvals + [v for _, v, _ in meas]) * 1.32
    ax.set_ylim(0, top)
    ax.text((xm[0] + xm[-1]) / 2, top * 0.97, "measured (H200)", ha="center", va="top", fontsize=8)
    ax.text((xo[0] + xo[-1]) / 2, top * 0.97, "traffic model, not run\n(lower bounds)", ha="center", va="top",
            fontsize=8, color="0.3")
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_xticks(np.concatenate([xm, xo]))
    ax.set_xticklabels([l for l, _, _ in meas] + [l for l, _ in MODELLED], rotation=60, ha="right", fontsize=7)
    ax.set_xlim(-0.6, xo[-1] + 0.6)
    ax.set_title(f"T = {T}")
axes[0].set_ylabel("time / conventional step")
fig.suptitle("Rollback schemes, Nemotron-3-Super shapes, B = 256, fp32: measured (left), modelled (right, shaded)",
             y=1.02)
S.note(fig, tab.provenance())
fig.tight_layout()
S.save(fig, "fig10_rollback")

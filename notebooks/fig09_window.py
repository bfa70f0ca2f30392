# %% [markdown]
# # Figure 9 — window sweep: amortised ReplaySSM step vs L (H200, B = 256)
#
# ReplaySSM standard decode with window L (bf16 ring, fp32 checkpoint, flush amortised over the
# window), as speed-up over the conventional step; dashed: the traffic bound of lib/theory's C.3
# model, M_conv(L) / M_replay(L) with r = 2 d_v + 2 d_k + 4 bytes per record. The paper finds
# the best amortised latency at L = 16 for all four models (L in {8, 16, 32}).
# Data: `replayssm bench` (sweep `window`). Run: `python3 notebooks/fig09_window.py [bench.h5]`.

# %%
import sys

import numpy as np

import rs_style as S

S.setup()
tab = S.BenchTable(sys.argv[1] if len(sys.argv) > 1 else S.default_bench_path())
plt = S.plt
SHAPES = {"nemotron-3-nano-4b": (80, 128), "nemotron-3-super": (64, 128), "qwen3.5-4b": (128, 128),
          "qwen3.5-122b": (128, 128)}


def traffic_bound(L, dv, dk):
    """M_conv / M_replay per window (digest section 2; replayssm/theory/rs_theory.h C.3), fp32 state."""
    r = 2 * dv + 2 * dk + 4
    mconv = 8.0 * L * dv * dk
    mrep = 4.0 * (L + 1) * dv * dk + (L - 1) * (L + 2) / 2.0 * r
    return mconv / mrep


# %%
fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.0))
Lf = np.linspace(2, 64, 200)
for m in S.MODELS:
    Ls = tab.get("L", sweep="window", model=m)
    if len(Ls) == 0:
        continue
    o = np.argsort(Ls)
    sp = tab.get("speedup", sweep="window", model=m)[o]
    us = tab.get("median_us", sweep="window", model=m)[o]
    line, = axes[0].semilogx(Ls[o], sp, marker="o", label=S.MODEL_LABELS[m])
    axes[0].semilogx(Lf, traffic_bound(Lf, *SHAPES[m]), ls="--", color=line.get_color(), lw=0.9)
    best = Ls[o][np.argmin(us)]
    axes[1].semilogx(Ls[o], us / us.min(), marker="o", color=line.get_color(), label=f"{S.MODEL_LABELS[m]} (best L={best})")
for ax in axes:
    ax.set_xticks([4, 8, 16, 32, 64])
    ax.set_xticklabels(["4", "8", "16", "32", "64"])
    ax.xaxis.set_minor_formatter(S.NullFormatter())  # log-axis minor labels would overlap
    ax.set_xlabel("window L")
axes[0].set_ylabel("speed-up vs conventional")
axes[0].set_title("measured (solid) and traffic bound (dashed)")
axes[0].legend()
axes[1].set_ylabel("step time / best")
axes[1].set_title("amortised step time, normalised")
axes[1].legend()
fig.suptitle("ReplaySSM window sweep, B = 256, fp32 checkpoint, bf16 ring", y=1.03)
S.note(fig, tab.provenance())
fig.tight_layout()
S.save(fig, "fig09_window")

# %% [markdown]
# # Figure 4 — speculative verification cost vs draft length T (H200)
#
# Kernel time of verifying T draft tokens (B = 256, fp32 state), normalised to one conventional
# standard decode step of the same model: the snapshot baseline (T conventional steps, every
# intermediate state written: 1 read + T writes) against ReplaySSM's output-only verification
# (one read of the checkpoint; GDN adds the T x T UT solve; rows whose h + T > L also fold, so
# a = T flushes every other step at T = 8, L = 16). Paper at T = 8: snapshots 4.66x (Mamba-2) /
# 6.40x (GDN); ReplaySSM 0.89-1.21x (Mamba-2), 1.11-1.33x (GDN).
# Data: `replayssm bench` (sweep `verify`). Run: `python3 notebooks/fig04_verify.py [bench.h5]`.

# %%
import sys

import numpy as np

import rs_style as S

S.setup()
tab = S.BenchTable(sys.argv[1] if len(sys.argv) > 1 else S.default_bench_path())
plt = S.plt
PAPER_T8 = {"mamba2": {"snapshot": 4.66, "replay": (0.89, 1.21)}, "gdn": {"snapshot": 6.40, "replay": (1.11, 1.33)}}
FAMILY = {"nemotron-3-nano-4b": "mamba2", "nemotron-3-super": "mamba2", "qwen3.5-4b": "gdn", "qwen3.5-122b": "gdn"}

# %%
fig, axes = plt.subplots(1, 4, figsize=(11, 2.9), sharey=True)
for i, m in enumerate(S.MODELS):
    ax = axes[i]
    # B = 256 and the default kernel's rows only: the verify sweep also writes B = 1 rows and the
    # kernels side by side (variants "-cores", "-tc-v6a", ...)
    Ts = tab.get("T", sweep="verify", model=m, kernel="verify-snapshot", B=256)
    if len(Ts) == 0:
        continue
    o = np.argsort(Ts)
    ax.plot(Ts[o], tab.get("norm", sweep="verify", model=m, kernel="verify-snapshot", B=256)[o], marker="v",
            color=S.COLORS["snapshot"], label="snapshots (1R + T W)")
    for lab, sel, key in (("ReplaySSM a = 1", lambda T: T * 0 + 1, "replay-a1"), ("ReplaySSM a = T", lambda T: T, "replay-aT")):
        xs, ys = [], []
        for T in Ts[o]:
            a = int(sel(T))
            v = tab.get("norm", sweep="verify", model=m, kernel="verify-replay", T=T, a=a, B=256,
                        variant=f"bf16ring-a{a}")
            if len(v) > 1:
                raise KeyError(f"{len(v)} verify-replay rows for {m}, T = {T}, a = {a}")
            if len(v):
                xs.append(T), ys.append(v[0])
        ax.plot(xs, ys, marker=S.MARKERS[key], color=S.COLORS[key], label=lab)
    fam = FAMILY[m]
    ax.plot([8], [PAPER_T8[fam]["snapshot"]], marker="*", ms=9, color=S.COLORS["snapshot"], ls="", alpha=0.6,
            label="paper snapshots, T = 8")
    lo, hi = PAPER_T8[fam]["replay"]
    ax.plot([8, 8], [lo, hi], color=S.COLORS["replay"], lw=5, alpha=0.35, solid_capstyle="butt",
            label="paper ReplaySSM, T = 8 (range)")
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_title(S.MODEL_LABELS[m])
    ax.set_xlabel("draft tokens T")
    ax.set_xticks([1, 2, 4, 6, 8])
    if i == 0:
        ax.set_ylabel("time / conventional step")
# one legend below the panels: inside the first panel it covered the snapshot curve and the star
h, l = axes[0].get_legend_handles_labels()
fig.legend(h, l, loc="lower center", ncol=len(l), frameon=False, bbox_to_anchor=(0.5, 0.0))
fig.suptitle("Speculative verification, B = 256, L = 16, fp32 state", y=1.02)
S.note(fig, tab.provenance())
fig.tight_layout(rect=(0, 0.09, 1, 1))
S.save(fig, "fig04_verify")

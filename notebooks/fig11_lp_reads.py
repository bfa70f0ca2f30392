# %% [markdown]
# # Figure 11 — non-flush ReplaySSM step reading a low-precision checkpoint (H200, B = 256)
#
# Split checkpoint (digest section 4): non-flush steps read a read-only copy of the checkpoint
# in fp16, FP8-block (E4M3 + fp32 scale per 128) or NVFP4 (E2M1 + E4M3 per 16 + fp32 per
# tensor), dequantised in registers (L = 16, fill h = 7, bf16 ring). Bars: speed-up over the
# fp32 read; grey ticks: the byte ratio (the bound if the kernel stayed bandwidth-bound);
# stars: the paper (Mamba-2, B300: 1.61, 2.82, 3.83x); dashes: the kernels' goals (1.8, 3.2, 4.5x; docs/kernels.md).
# Data: `replayssm bench` (sweep `lp`). Run: `python3 notebooks/fig11_lp_reads.py [bench.h5]`.

# %%
import sys

import numpy as np

import rs_style as S

S.setup()
tab = S.BenchTable(sys.argv[1] if len(sys.argv) > 1 else S.default_bench_path())
plt = S.plt
FMTS = ["fp16", "fp8", "nvfp4"]
PAPER = {"fp16": 1.61, "fp8": 2.82, "nvfp4": 3.83}
TARGET = {"fp16": 1.8, "fp8": 3.2, "nvfp4": 4.5}
DV = {"nemotron-3-nano-4b": 80, "nemotron-3-super": 64, "qwen3.5-4b": 128, "qwen3.5-122b": 128}


def bpe(f, dv, dk=128):
    return {"fp32": 4.0, "fp16": 2.0, "fp8": 1 + 4 / 128, "nvfp4": 0.5 + 1 / 16 + 4 / (dv * dk)}[f]


# %%
fig, ax = plt.subplots(figsize=(8, 3.2))
w = 0.19
x = np.arange(len(FMTS))
for i, m in enumerate(S.MODELS):
    ys = []
    for f in FMTS:
        v = tab.get("speedup", sweep="lp", model=m, variant=f"nonflush-h7-{f}")
        ys.append(v[0] if len(v) else np.nan)
    ax.bar(x + (i - 1.5) * w, ys, w, label=S.MODEL_LABELS[m])
    for j, f in enumerate(FMTS):
        ax.plot([x[j] + (i - 1.5) * w - w / 2, x[j] + (i - 1.5) * w + w / 2], [4 / bpe(f, DV[m])] * 2, color="#777777", lw=1)
for j, f in enumerate(FMTS):
    ax.plot([x[j]], [PAPER[f]], marker="*", ms=10, color="black", ls="", label="paper (B300)" if j == 0 else None)
    ax.plot([x[j] - 2 * w, x[j] + 2 * w], [TARGET[f]] * 2, ls="--", color="#d62728", lw=1,
            label="kernel goal (docs/kernels.md)" if j == 0 else None)
ax.set_xticks(x)
ax.set_xticklabels(["FP16", "FP8 (block 128)", "NVFP4"])
ax.set_ylabel("speed-up over fp32 read")
ax.legend(ncol=3, fontsize=7, loc="upper left")
ax.set_title("Non-flush ReplaySSM step, low-precision checkpoint reads (grey: byte-ratio bound)")
S.note(fig, tab.provenance())
fig.tight_layout()
S.save(fig, "fig11_lp_reads")

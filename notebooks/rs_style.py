# %% [markdown]
# # rs_style — shared look and helpers of the figure scripts in notebooks/
#
# Generic on purpose (any figure script may import it): paper-like rcParams, one colour per
# method, a save helper that writes `figures/<name>.png`, and readers for the HDF5 files the
# `replayssm` commands write (`replayssm bench`: a flat table under /rows, one dataset per
# column; layout in docs/kernels.md).

# %%
import os

import matplotlib

matplotlib.use("Agg")  # scripts run headless
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402,F401  (re-exported for the scripts)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
FIG_DIR = os.path.join(REPO, "figures")

# one colour per method / configuration, reused across figures
COLORS = {
    "conv": "#4d4d4d",          # conventional decode / vLLM-style baseline
    "snapshot": "#d62728",      # snapshot verification (vLLM)
    "replay": "#1f77b4",        # ReplaySSM
    "replay-a1": "#1f77b4",
    "replay-aT": "#17becf",
    "theory": "#2ca02c",        # model / traffic floor
    "fp32": "#1f77b4",
    "fp16": "#ff7f0e",
    "bf16": "#bcbd22",
    "fp8": "#9467bd",
    "nvfp4": "#8c564b",
    "other": "#7f7f7f",
}
MARKERS = {"conv": "s", "snapshot": "v", "replay": "o", "replay-a1": "o", "replay-aT": "D", "theory": ""}

MODEL_LABELS = {
    "nemotron-3-nano-4b": "Nemotron-3-Nano-4B",
    "nemotron-3-super": "Nemotron-3-Super-120B",
    "qwen3.5-4b": "Qwen3.5-4B",
    "qwen3.5-122b": "Qwen3.5-122B",
}
MODELS = list(MODEL_LABELS)


def setup():
    """Paper-like defaults (small fonts, thin lines, light grid)."""
    plt.rcParams.update({
        "figure.dpi": 110,
        "savefig.dpi": 160,
        "font.size": 9,
        "axes.titlesize": 9,
        "axes.labelsize": 9,
        "legend.fontsize": 8,
        "xtick.labelsize": 8,
        "ytick.labelsize": 8,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "lines.linewidth": 1.4,
        "lines.markersize": 4,
        "axes.spines.top": False,
        "axes.spines.right": False,
    })


def save(fig, name):
    """Write figures/<name>.png and return its path."""
    os.makedirs(FIG_DIR, exist_ok=True)
    path = os.path.join(FIG_DIR, name + ".png")
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    print("wrote", os.path.relpath(path, REPO))
    return path


def note(fig, text):
    """Small provenance line under a figure (device, file)."""
    fig.text(0.01, -0.02, text, fontsize=6.5, color="#555555", ha="left", va="top")


# %% [markdown]
# ## Reading a `replayssm bench` file

# %%
class BenchTable:
    """The /rows table of a `replayssm bench` HDF5 file as numpy columns, with filters."""

    def __init__(self, path):
        import h5py

        with h5py.File(path, "r") as f:
            self.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
            self.attrs = {k: (v.decode() if hasattr(v, "decode") else v) for k, v in self.attrs.items()}
            g = f["rows"]
            self.cols = {}
            for k in g.keys():
                a = g[k][()]
                if a.dtype.kind == "S":
                    a = np.char.decode(a, "ascii")
                self.cols[k] = a
        self.path = path

    def __len__(self):
        return len(self.cols["median_us"])

    def where(self, **eq):
        """Boolean mask of rows whose columns equal the given values."""
        m = np.ones(len(self), dtype=bool)
        for k, v in eq.items():
            m &= self.cols[k] == v
        return m

    def get(self, col, **eq):
        return self.cols[col][self.where(**eq)]

    def one(self, col, **eq):
        v = self.get(col, **eq)
        if len(v) != 1:
            raise KeyError(f"{len(v)} rows match {eq}")
        return float(v[0])

    def provenance(self):
        return (f"{self.attrs.get('device', '?')}; copy ceiling {self.attrs.get('copy_gbps', 0):.0f} GB/s; "
                f"{self.attrs.get('tool', '')}; {os.path.relpath(self.path, REPO)}")


def default_bench_path():
    """BENCH env var, else the committed H200 run."""
    return os.environ.get("BENCH", os.path.join(FIG_DIR, "data", "bench_h200.h5"))

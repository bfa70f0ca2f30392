# %% [markdown]
# # rs_style — shared look and helpers of the figure scripts in notebooks/
#
# Generic on purpose (any figure script may import it): paper-like rcParams, one colour per
# method, a save helper that writes `notebooks/figures/<name>.png` (`save`; `save_figure` writes PNG + PDF
# to any folder), and readers for the HDF5 files the `replayssm` commands write
# (`replayssm bench`: a flat table under /rows, one dataset per column; layout in
# docs/kernels.md. `replayssm kl`/`sweep` logs: `KLLog`, layout in docs/hdf5-layout.md).
# Precision figures: colours, markers and paper labels per state policy (`POLICY_STYLE`), KL
# bucket means, the paper's reference numbers (`PAPER`); see docs/figures.md.

# %%
import os
import sys

import matplotlib

matplotlib.use("Agg")  # scripts run headless
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402,F401  (re-exported for the scripts)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
FIG_DIR = os.path.join(REPO, "notebooks", "figures")

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
    """Write notebooks/figures/<name>.png and return its path."""
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


# %% [markdown]
# ## Precision figures: policies, saving, KL logs
#
# The precision figures (5, 12, 13, Table 11, C.6) read the HDF5 logs of `replayssm kl` /
# `replayssm sweep` (layout: docs/hdf5-layout.md) and `replayssm theory`. One style per state
# policy so a policy looks the same in every figure; labels follow the paper.

# %%
import matplotlib.ticker  # noqa: E402

# canonical policy string (as `replayssm` stores it in runs/runNN@policy) -> (paper label, colour, marker, linestyle)
# (the strings are only compared with the stored one: a run's mode and formats come from its fields)
POLICY_STYLE = {
    "shared:fp8-sr": ("shared FP8+SR", "#d62728", "v", "-"),
    "shared:nvfp4-sr": ("shared NVFP4+SR", "#ff7f0e", "o", "-"),
    "split:nvfp4-rtn/fp32": ("split NVFP4/FP32", "#1f77b4", "s", "-"),
    "split:nvfp4-rtn/fp16-sr": ("split NVFP4/FP16+SR", "#17becf", "D", "--"),
    "conv:fp16-sr": ("conventional FP16+SR", "#4d4d4d", "^", "-"),
    "fp32": ("FP32", "#000000", "", ":"),
}
# the RTN partners of the SR policies above (the recurrent checkpoint rounded to nearest): drawn in
# the partner's colour and marker, dotted, so a pair reads together
RTN_PARTNERS = {
    "shared:fp8-rtn": "shared:fp8-sr",
    "shared:nvfp4-rtn": "shared:nvfp4-sr",
    "split:nvfp4-rtn/fp16-rtn": "split:nvfp4-rtn/fp16-sr",
    "conv:fp16-rtn": "conv:fp16-sr",
}
# the five policies of the paper's Figure 5, in its legend order
FIG5_POLICIES = ["shared:fp8-sr", "shared:nvfp4-sr", "split:nvfp4-rtn/fp32", "split:nvfp4-rtn/fp16-sr", "conv:fp16-sr"]
SHARED_REF = "shared:nvfp4-sr"      # numerator of the paper's max-length ratio (36x)
SPLIT_REF = "split:nvfp4-rtn/fp32"  # its denominator
_EXTRA_COLOURS = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f", "#aec7e8", "#98df8a"]
MODE_WORDS = {"conv": "conventional", "shared": "shared", "split": "split", "split-naive": "split-naive"}
# storage kinds of `replayssm theory` (C.6) in the same colours as the policies that use them
STORAGE_STYLE = {"conv": ("conventional", "#4d4d4d"), "shared": ("shared", "#ff7f0e"), "split": ("split", "#1f77b4")}

# the paper's numbers the figures are compared with (digest section 7, paper E.4)
PAPER = {
    "fig05_model": "Qwen3.5-4B (GDN)",
    "fig05_shared_nvfp4_128k": 0.136,
    "fig05_split_fp32_128k": 0.0038,
    "fig05_ratio": 36.0,
    "fig12_ratio_range": (13.0, 29.0),
    "table11": "RTN below SR at 1K; SR below RTN past ~16K; RTN non-finite at 64K-128K for both GDN models",
}


def policy_label(run):
    """The paper's label of a run's policy ('shared NVFP4+SR'), or one made the same way from the
    fields the log stores (mode and the formats of the read and recurrent copies); a bare policy
    string (no fields) outside POLICY_STYLE is its own label."""
    policy = run if isinstance(run, str) else run.policy
    if policy in POLICY_STYLE:
        return POLICY_STYLE[policy][0]
    if isinstance(run, str) or run.mode not in MODE_WORDS:
        return policy
    if run.split:  # the read copy is RTN by default, as the paper writes it
        return f"{MODE_WORDS[run.mode]} {run.lp.word(rtn=False)}/{run.hp.word()}"
    return f"{MODE_WORDS[run.mode]} {run.hp.word()}"


def policy_style(run):
    """dict(label, color, marker, ls) for plotting a run (or a policy string). An RTN partner of a
    POLICY_STYLE policy (RTN_PARTNERS, e.g. shared:nvfp4-rtn) takes the partner's colour and marker,
    dotted, so pairs read together."""
    policy = run if isinstance(run, str) else run.policy
    if policy in POLICY_STYLE:
        lab, c, m, ls = POLICY_STYLE[policy]
        return {"label": lab, "color": c, "marker": m, "ls": ls}
    if RTN_PARTNERS.get(policy) in POLICY_STYLE:
        _, c, m, _ = POLICY_STYLE[RTN_PARTNERS[policy]]
        return {"label": policy_label(run), "color": c, "marker": m, "ls": ":"}
    c = _EXTRA_COLOURS[sum(policy.encode()) % len(_EXTRA_COLOURS)]
    return {"label": policy_label(run), "color": c, "marker": "x", "ls": "-."}


def sr_partner(run, runs):
    """The runs of `runs` that differ from an RTN `run` only in the recurrent checkpoint's rounding
    (SR with the default 32 random bits) at the same window, by the fields the log stores."""
    if run.hp.rounding != "rtn":
        return []
    return [r for r in runs if r.mode == run.mode and r.window == run.window and r.hp.base == run.hp.base
            and r.hp.options == run.hp.options and r.hp.rounding == "sr" and r.hp.sr_bits == 32
            and (not run.split or r.lp.format == run.lp.format)]


def save_figure(fig, name, out_dir=None, formats=("png", "pdf")):
    """Write <out_dir>/<name>.<fmt> for every format (default notebooks/figures/, PNG + PDF); returns the paths."""
    out_dir = out_dir or FIG_DIR
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for ext in formats:
        p = os.path.join(out_dir, f"{name}.{ext}")
        fig.savefig(p, bbox_inches="tight", metadata={"Creator": "replayssm notebooks/"} if ext == "pdf" else None)
        paths.append(p)
        print("wrote", _rel(p))
    plt.close(fig)
    return paths


def _rel(p):
    p = os.path.abspath(p)
    return os.path.relpath(p, REPO) if p.startswith(REPO + os.sep) else p


def write_json(obj, name, out_dir=None):
    """Key numbers of a figure as <out_dir>/<name>.json (read by notebooks/precision_report.py)."""
    import json

    out_dir = out_dir or FIG_DIR
    os.makedirs(out_dir, exist_ok=True)
    p = os.path.join(out_dir, name + ".json")
    with open(p, "w") as fh:
        json.dump(obj, fh, indent=1, sort_keys=True, default=_json_default)
        fh.write("\n")
    print("wrote", _rel(p))
    return p


def _json_default(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return None if not np.isfinite(x) else float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


def finite_or_none(x):
    return float(x) if x is not None and np.isfinite(x) else None


def fmt_tokens(n):
    """131072 -> '128K', 1536 -> '1.5K', 300 -> '300'."""
    n = int(n)
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    if n >= 1024:
        return f"{n / 1024:.1f}K"
    return str(n)


def script_command(argv=None):
    """How a script was run, for the provenance line and the JSON sidecar."""
    import shlex
    import sys

    argv = list(sys.argv if argv is None else argv)
    if argv:
        argv[0] = _rel(argv[0])
    return "python3 " + " ".join(shlex.quote(_rel(a) if os.path.exists(a) else a) for a in argv)


def figure_args(description, name, nargs="+", help_files="HDF5 log(s) of replayssm kl / sweep"):
    """The command line every precision script shares: input files, --out-dir, --name."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("files", nargs=nargs, help=help_files)
    ap.add_argument("--out-dir", default=FIG_DIR, help="where PNG, PDF and JSON go (default: notebooks/figures/)")
    ap.add_argument("--name", default=name, help=f"output base name (default: {name})")
    return ap


# %% [markdown]
# ## Reading a `replayssm kl` / `replayssm sweep` log
#
# Positions are counted as context length n = t + 1 (the KL at position t predicts token t + 1
# after seeing n tokens). Only positions below `books/completed_positions` are read (an
# interrupted log is valid up to there); NaN KL (non-finite runs) is skipped in means and counted.

# %%
def _s(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v[()]
    if isinstance(v, np.generic):
        return v.item()
    return v


def open_h5(path):
    """Open read-only without HDF5 file locking, so a log still being written (a long run in
    progress) can be read up to its committed positions."""
    import h5py

    try:
        return h5py.File(path, "r", locking=False)
    except TypeError:  # h5py < 3.5
        return h5py.File(path, "r")


class StateCopy:
    """One stored copy of a run's state as the log describes it (runs/runNN@<c>_format, <c>_base,
    <c>_rounding, <c>_sr_bits, <c>_options for c = hp, the recurrent copy, and lp, the read copy):
    format is the canonical string, base fp32|fp16|bf16|fp8|nvfp4, rounding none|rtn|sr, sr_bits
    the SR random bits (0 unless SR), options ""|pow2|floor."""

    def __init__(self, attrs, c, where):
        missing = [k for k in ("format", "base", "rounding", "sr_bits", "options") if f"{c}_{k}" not in attrs]
        if missing:
            raise ValueError(f"{where}: no {c}_{missing[0]} attribute: a log written before runs recorded their "
                             "formats' fields; evaluate it again with this replayssm")
        self.format = str(_s(attrs[c + "_format"]))
        self.base = str(_s(attrs[c + "_base"]))
        self.rounding = str(_s(attrs[c + "_rounding"]))
        self.sr_bits = int(_s(attrs[c + "_sr_bits"]))
        self.options = str(_s(attrs[c + "_options"]))

    def word(self, rtn=True):
        """'NVFP4+SR', 'FP32', 'FP8+RTN+pow2', 'NVFP4+sr8' (rtn=False leaves '+RTN' out)."""
        w = self.base.upper()
        if self.rounding == "sr":
            w += "+SR" if self.sr_bits == 32 else f"+sr{self.sr_bits}"
        elif self.rounding == "rtn" and rtn:
            w += "+RTN"
        return w + (f"+{self.options}" if self.options else "")


class KLRun:
    def __init__(self, log, name, attrs, first_nonfinite):
        self.log, self.name = log, name
        self.policy = str(_s(attrs.get("policy", name)))
        self.window = int(_s(attrs.get("window", 0)))
        self.mode = str(_s(attrs.get("mode", "")))
        self.seed = _s(attrs.get("seed", 0))
        where = f"{log.path}: runs/{name}"
        self.hp = StateCopy(attrs, "hp", where)  # the copy that carries the recurrence
        self.lp = StateCopy(attrs, "lp", where)  # the copy outputs read (== hp for conv / shared)
        self.first_nonfinite = np.asarray(first_nonfinite, dtype=np.int64)  # [B] position (t), -1 none
        self.style = policy_style(self)

    @property
    def split(self):
        """Two checkpoints (split, split-naive)."""
        return self.mode in ("split", "split-naive")

    @property
    def stochastic(self):
        """Any checkpoint stored with stochastic rounding."""
        return "sr" in (self.hp.rounding, self.lp.rounding)

    @property
    def label(self):
        return self.style["label"]

    def kl_books(self):
        """Per-book KL arrays (nats), committed positions only."""
        with open_h5(self.log.path) as f:
            d = f["runs"][self.name]["kl"]
            for b in range(self.log.n_books):
                n = min(int(self.log.valid[b]), d.shape[1])
                yield d[b, :n]

    def __repr__(self):
        return f"KLRun({self.name}, {self.policy}, L={self.window})"


class KLLog:
    """One HDF5 log of `replayssm kl` or `replayssm sweep`: provenance, books, runs."""

    def __init__(self, path, expect_runs=True):
        self.path = path
        with open_h5(path) as f:
            if _s(f.attrs.get("format", "")) != "replayssm-kl-log":
                raise ValueError(f"{path}: not a replayssm KL log (format attribute {f.attrs.get('format')!r})")
            self.attrs = {k: _s(v) for k, v in f.attrs.items()}
            self.book_ids = [str(_s(x)) for x in f["books/id"][()]]
            self.n_books = len(self.book_ids)
            length = f["books/length"][()].astype(np.int64)
            done = f["books/completed_positions"][()].astype(np.int64)
            self.valid = np.minimum(length, done)  # positions [0, valid[b]) are committed
            self.runs = []
            for name in sorted(f["runs"].keys()):
                g = f["runs"][name]
                fn = g["first_nonfinite_position"][()] if "first_nonfinite_position" in g else -np.ones(self.n_books)
                self.runs.append(KLRun(self, name, dict(g.attrs), fn))
        if not self.runs and expect_runs:  # `kl --policy none`: the reference alone, no KL to plot
            print(f"note: {path} is a reference-only log (kl --policy none): it has no KL runs", file=sys.stderr)

    @property
    def model(self):
        """Short model name: the checkpoint folder's name (data/models/gdn-tiny -> gdn-tiny)."""
        return os.path.basename(os.path.normpath(str(self.attrs.get("model_path", "?"))))

    @property
    def model_type(self):
        return str(self.attrs.get("model_type", "?"))

    @property
    def seed(self):
        """The log's SR seed (every run of one `kl` invocation shares it)."""
        seeds = {int(r.seed) for r in self.runs}
        return seeds.pop() if len(seeds) == 1 else ",".join(str(x) for x in sorted(seeds)) if seeds else "-"

    @property
    def max_n(self):
        """Longest committed context length over books."""
        return int(self.valid.max()) if self.n_books else 0

    def find(self, policy, window=None):
        """Runs of a policy (optionally a window)."""
        return [r for r in self.runs if r.policy == policy and (window is None or r.window == window)]

    def reference_nll_books(self):
        """Per-book NLL of the fp32 reference (nats per token), committed positions only."""
        with open_h5(self.path) as f:
            if "reference" not in f or "nll" not in f["reference"]:
                raise ValueError(f"{self.path}: no reference/nll (a shrunk fixture without the reference?)")
            d = f["reference"]["nll"]
            for b in range(self.n_books):
                n = min(int(self.valid[b]), d.shape[1])
                yield d[b, :n]

    def provenance(self):
        return (f"{_rel(self.path)}: {self.model} ({self.model_type}), {plural(self.n_books, 'book')}, seed {self.seed} "
                f"[{','.join(self.book_ids)}], up to {self.max_n} positions, git {self.attrs.get('git_commit', '?')}")

    def describe(self):
        return {"path": _rel(self.path), "model": self.model, "model_type": self.model_type,
                "model_config_hash": self.attrs.get("model_config_hash"), "books": self.book_ids,
                "max_positions": self.max_n, "tokens": self.attrs.get("tokens"),
                "command_line": self.attrs.get("command_line"), "status": self.attrs.get("status"),
                "start_time": self.attrs.get("start_time"), "end_time": self.attrs.get("end_time"),
                "git_commit": self.attrs.get("git_commit")}


def log2_edges(max_n, first=32):
    """Bucket edges in context length n: [1, first), [first, 2 first), ..., [2^k, 2^(k+1)), the
    last bucket cut at max_n + 1 (exclusive); a last bucket less than half full is merged into
    the one before (so a 2048-position log ends with [1024, 2048], not [2048, 2048])."""
    edges = [1]
    e = first
    while e <= max_n:
        edges.append(e)
        e *= 2
    edges.append(max_n + 1)
    if len(edges) > 2 and edges[-1] - edges[-2] < edges[-2] // 2:
        del edges[-2]  # a last bucket less than half full joins the one before
    return np.array(edges, dtype=np.int64)


def bucket_stats(run, edges):
    """Mean KL (nats) per bucket [edges[i], edges[i+1]) of context length n = t + 1, pooled over
    books (each finite (book, position) counts once), with the count of finite and of NaN values
    and the per-book means. Returns dict of arrays."""
    nb = len(edges) - 1
    s = np.zeros(nb)
    n = np.zeros(nb, dtype=np.int64)
    nan = np.zeros(nb, dtype=np.int64)
    per_book = []
    for kl in run.kl_books():
        bm = np.full(nb, np.nan)
        for i in range(nb):
            lo, hi = edges[i] - 1, edges[i + 1] - 1  # positions t = n - 1
            v = kl[lo:hi]
            if v.size == 0:
                continue
            fin = np.isfinite(v)
            nan[i] += int((~fin).sum())
            if fin.any():
                s[i] += float(v[fin].sum())
                n[i] += int(fin.sum())
                bm[i] = float(v[fin].mean())
        per_book.append(bm)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    lo = edges[:-1].astype(float)
    hi = (edges[1:] - 1).astype(float)  # last n in the bucket
    return {"lo": edges[:-1], "hi": edges[1:] - 1, "x": np.sqrt(lo * hi), "mean": mean, "n": n, "nan": nan,
            "per_book": np.array(per_book) if per_book else np.zeros((0, nb))}


def mean_kl_upto(run, lo_n, hi_n):
    """Pooled mean KL over context lengths n in [lo_n, hi_n] (inclusive), and the NaN count."""
    st = bucket_stats(run, np.array([lo_n, hi_n + 1]))
    return st["mean"][0], int(st["nan"][0]), int(st["n"][0])


def nonfinite_before(run, n_max):
    """Books (index, position t) whose run went non-finite at a context length <= n_max."""
    fn = run.first_nonfinite
    return [(b, int(t)) for b, t in enumerate(fn) if t >= 0 and t + 1 <= n_max]


BUCKET_LABEL = "KL(p$_{fp32}$ ‖ p), nats, mean over n in a bucket\n([1, 32), [32, 64), ..., [2$^k$, 2$^{k+1}$))"
LENGTH_LABEL = "context length n (tokens = bytes)"


def plural(n, word):
    """'1 book', '4 books'."""
    return f"{n} {word}" + ("" if n == 1 else "s")


# %% [markdown]
# ## Confidence intervals over books (and SR seeds)
#
# The unit of replication is a book: positions within a book are strongly autocorrelated, so a
# per-position standard error would be far too small. A point of Figures 5/12 and Table 11 is the
# mean over books of each book's bucket mean (for an SR policy with several seed logs, a book's
# value is first averaged over its seeds), and its 95% interval is Student's t over books:
# mean ± t(0.975, B - 1) s / sqrt(B). Ratios (shared/split, RTN/SR) are paired per book: the
# interval is exp(log R ± t s_log / sqrt(B)) with s_log the spread of the per-book log ratios
# and R the ratio of the two book means.

# %%
_T975 = [12.7062047, 4.3026527, 3.1824463, 2.7764451, 2.5705818, 2.4469119, 2.3646243, 2.3060041, 2.2621572,
         2.2281389, 2.2009852, 2.1788128, 2.1603687, 2.1447867, 2.1314495, 2.1199053, 2.1098156, 2.1009220,
         2.0930241, 2.0859634, 2.0796138, 2.0738731, 2.0686576, 2.0638986, 2.0595386, 2.0555294, 2.0518311,
         2.0484071, 2.0452296, 2.0422725]


def t975(df):
    """Two-sided 95% Student t quantile t(0.975, df) (table to df 30, then 1.96 + 2.4 / df)."""
    if df < 1:
        return np.nan
    return _T975[df - 1] if df <= len(_T975) else 1.959964 + 2.4 / df


def mean_ci(units):
    """units [U, nb] (NaN = missing) -> mean, lo, hi, count per column (t-interval; NaN bounds
    with fewer than 2 units)."""
    u = np.asarray(units, dtype=float)
    if u.ndim == 1:
        u = u[:, None]
    k = np.isfinite(u).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.where(k > 0, np.nansum(u, axis=0) / np.maximum(k, 1), np.nan)
        sd = np.sqrt(np.where(k > 1, np.nansum((u - m) ** 2, axis=0) / np.maximum(k - 1, 1), np.nan))
        half = np.array([t975(int(x) - 1) for x in k]) * sd / np.sqrt(np.maximum(k, 1))
    return m, m - half, m + half, k


def ratio_ci(num_units, den_units):
    """Paired ratio of two [U, nb] unit arrays: R = mean(num) / mean(den) per column, with the
    interval exp(log R ± t s / sqrt(k)) from the per-unit log ratios (k units with both > 0)."""
    a, b = np.asarray(num_units, dtype=float), np.asarray(den_units, dtype=float)
    ma, _, _, _ = mean_ci(a)
    mb, _, _, _ = mean_ci(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        R = ma / mb
        lr = np.where((a > 0) & (b > 0), np.log(a / b), np.nan)
    _, lo, hi, k = mean_ci(lr)
    half = (hi - lo) / 2
    with np.errstate(invalid="ignore"):
        return R, R * np.exp(-half), R * np.exp(half), k


def book_units(runs, edges):
    """Per-book bucket means of one (policy, window) over its runs in several logs (SR seeds):
    returns (book ids, units [B, nb] averaged over each book's seeds, seeds per book, pooled
    bucket_stats of the first run)."""
    per = {}
    first = None
    for r in runs:
        st = bucket_stats(r, edges)
        first = first or st
        for b, bid in enumerate(r.log.book_ids):
            per.setdefault(bid, []).append(st["per_book"][b])
    ids = list(per)
    with np.errstate(invalid="ignore"):
        units = np.array([np.nanmean(np.array(per[i]), axis=0) if np.isfinite(np.array(per[i])).any() else
                          np.full(len(edges) - 1, np.nan) for i in ids])
    return ids, units, [len(per[i]) for i in ids], first


class LogGroup:
    """Logs of one model that differ only in the SR seed (e.g. kl_gdn-tiny.h5 with --seed 0 and
    kl_gdn-tiny.seed1.h5 with --seed 1). runs_of(policy) gives the run of every log for an SR
    policy and the first log's only for a deterministic one (its other runs are identical, and
    counting them twice would shrink the interval); stochastic: the run's stored rounding."""

    def __init__(self, logs):
        self.logs = logs
        self.main = logs[0]
        for g in logs[1:]:
            if g.model != self.main.model:
                raise ValueError(f"{g.path}: model {g.model}, but {self.main.path} is {self.main.model}")
        self.seeds = [g.seed for g in logs]

    def runs_of(self, policy, window=None):
        runs = [r for g in self.logs for r in g.find(policy, window)[:1]]  # the first of each log
        return runs if runs and runs[0].stochastic else self.main.find(policy, window)[:1]

    @property
    def books(self):
        return self.main.book_ids


def group_logs(logs):
    """Group KLLogs by model, in first-seen order."""
    groups = {}
    for g in logs:
        groups.setdefault(g.model, []).append(g)
    return [LogGroup(v) for v in groups.values()]


def band(ax, x, lo, hi, color, ymin=None):
    """A shaded 95% band; on a log axis a lower bound <= 0 (the interval includes 0) is drawn at
    ymin, a tenth of the curve's smallest mean (docs/figures.md)."""
    lo = np.asarray(lo, dtype=float)
    if ymin is not None:
        lo = np.where(lo > 0, lo, ymin)
    ok = np.isfinite(lo) & np.isfinite(hi)
    if ok.any():
        ax.fill_between(np.asarray(x)[ok], lo[ok], np.asarray(hi)[ok], color=color, alpha=0.16, lw=0)


def legend_outside(ax, **kw):
    """Legend to the right of the axes (curves stay uncovered)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, borderaxespad=0.0, **kw)


def kl_length_panel(ax, grp, policies=None, annotate_ratio=True, first=32):
    """KL vs context length on log-log axes, one line per policy with its 95% band over books
    (Figure 5 / 12 panel); grp is a LogGroup (or one KLLog). Returns the key numbers: per-bucket
    means and intervals, the last bucket, the shared/split ratio there with its interval, growth
    of each policy."""
    if isinstance(grp, KLLog):
        grp = LogGroup([grp])
    log = grp.main
    edges = log2_edges(log.max_n, first)
    runs = [r for r in log.runs if policies is None or r.policy in policies]
    if policies is not None:
        runs.sort(key=lambda r: (policies.index(r.policy), r.window))
    out = {"model": log.model, "model_type": log.model_type, "books": log.n_books, "max_n": log.max_n,
           "seeds": grp.seeds, "aggregation": "mean over books of per-book bucket means (SR: a book's seeds "
           "averaged first); 95% t-interval over books", "policies": {}}
    units, stats = {}, {}
    for r in runs:
        ids, u, nseed, st = book_units(grp.runs_of(r.policy, r.window), edges)
        units[r.policy], stats[r.policy] = u, st
    for r in runs:
        st, u = stats[r.policy], units[r.policy]
        m, lo, hi, k = mean_ci(u)
        ok = np.isfinite(m) & (m > 0)
        ymin = float(m[ok].min()) / 10 if ok.any() else None
        lab = r.label + (f" (L = {r.window})" if len({x.window for x in runs}) > 1 else "")
        nf = nonfinite_before(r, log.max_n)
        if nf:
            lab += f", non-finite from n = {min(t for _, t in nf) + 1}"
        band(ax, st["x"][ok], lo[ok], hi[ok], r.style["color"], ymin=ymin)
        ax.plot(st["x"][ok], m[ok], color=r.style["color"], marker=r.style["marker"], ls=r.style["ls"],
                label=lab, markersize=3.5)
        seeds = max(len(grp.runs_of(r.policy, r.window)), 1)
        out["policies"][r.policy] = {
            "label": r.label, "window": r.window, "seeds": seeds,
            "bucket_lo": st["lo"].tolist(), "bucket_hi": st["hi"].tolist(), "mean_kl": m.tolist(),
            "ci95_lo": lo.tolist(), "ci95_hi": hi.tolist(), "books_per_bucket": k.tolist(),
            "pooled_mean_kl": st["mean"].tolist(),
            "last_bucket_mean_kl": finite_or_none(m[-1]),
            "nonfinite_books": len(nf), "nan_values": int(st["nan"].sum()),
        }
        # growth with length: last bucket / the bucket [512, 1024) (or the first full one)
        ref_i = int(np.searchsorted(st["lo"], 512)) if st["lo"][-1] >= 1024 else 1 if len(m) > 2 else 0
        if 0 <= ref_i < len(m) - 1 and np.isfinite(m[ref_i]) and np.isfinite(m[-1]) and m[ref_i] > 0:
            out["policies"][r.policy]["growth"] = float(m[-1] / m[ref_i])
            out["policies"][r.policy]["growth_from"] = [int(st["lo"][ref_i]), int(st["hi"][ref_i])]
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(LENGTH_LABEL)
    ax.set_ylabel(BUCKET_LABEL)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: fmt_tokens(v) if v >= 1 else ""))
    lo_last, hi_last = int(edges[-2]), int(edges[-1] - 1)
    out["last_bucket"] = [lo_last, hi_last]
    if SHARED_REF in units and SPLIT_REF in units:
        R, rlo, rhi, k = ratio_ci(units[SHARED_REF], units[SPLIT_REF])
        a, b = mean_ci(units[SHARED_REF])[0][-1], mean_ci(units[SPLIT_REF])[0][-1]
        ratio = R[-1]
        out["ratio_shared_split"] = finite_or_none(ratio)
        out["ratio_shared_split_ci95"] = [finite_or_none(rlo[-1]), finite_or_none(rhi[-1])]
        out["ratio_books"] = int(k[-1])
        out["shared_last"], out["split_last"] = finite_or_none(a), finite_or_none(b)
        if annotate_ratio and np.isfinite(ratio) and a > 0:
            x = stats[SHARED_REF]["x"][-1] * 1.35
            ax.annotate("", xy=(x, b), xytext=(x, a), arrowprops=dict(arrowstyle="<->", color="#333333", lw=0.9))
            ci = (f"\n[{rlo[-1]:.2g}, {rhi[-1]:.2g}]" if np.isfinite(rlo[-1]) else "\n(1 book: no CI)")
            ax.text(x * 1.08, np.sqrt(a * b), f"{ratio:.3g}×{ci}", va="center", ha="left", fontsize=8, color="#333333")
            ax.set_xlim(right=x * 4.5)  # room for the label left of the legend
    return out

"""open_log: a replayssm KL log (docs/hdf5-layout.md) as an xarray Dataset, read with h5py.

Variables (run, book, position), one run per /runs/runNN group in index order:
  kl    float64  KL(p_ref || p_run), nats (NaN where the run was non-finite)
  nll   float64  -log p_run(y_t), nats
  dp    float64  p_run(y_t) - p_ref(y_t)
  top1  float64  1.0 where argmax p_run == argmax p_ref, else 0.0 (the log's top1_agree)
Variables (book, position): ref_nll (float64, nats), ref_top1, next_token (int32, -1 fill).
Positions at or past a book's books/completed_positions (the commit record) are NaN in the float
variables (-1 in the int ones): readers trust only committed positions. top1 is float so that
this mask and `.mean()` work; `valid` (book, position) is the commit mask itself.
Coordinates: run = the policy strings (attribute `policy`; a sweep over windows repeats a policy,
then tell runs apart by the `window` coordinate or select with isel); window, seed, mode,
hp_format, lp_format, group (runNN) over run; book = the book ids, with title, length,
completed_positions over book; position = 0..P-1 (context length n = position + 1).
Root attributes are the Dataset's attrs; each run's summary_* attributes become variables over run.
Reads the per-run datasets directly, so it works on logs with or without HDF5 dimension scales.
"""
import numpy as np

_RUN_VARS = (("kl", "kl", np.float64), ("nll", "nll", np.float64), ("dp", "dp", np.float64),
             ("top1", "top1_agree", np.float64))
_UNITS = {"kl": "nats", "nll": "nats", "ref_nll": "nats"}


def _s(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v[()]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def _open(path):
    import h5py

    try:  # no file locking: a log still being written can be read up to its commit record
        return h5py.File(path, "r", locking=False)
    except TypeError:  # h5py < 3.5
        return h5py.File(path, "r")


def open_log(path, runs=None):
    """Open a replayssm KL log as an xarray.Dataset (see the module docstring).

    runs: None for all, or a list of policy strings / run indices to read (the others are not
    loaded: each run costs 4 arrays of B x P float64 in memory)."""
    import xarray as xr

    with _open(path) as f:
        if _s(f.attrs.get("format", "")) != "replayssm-kl-log":
            raise ValueError(f"{path}: not a replayssm KL log (format attribute {f.attrs.get('format')!r})")
        attrs = {k: _s(v) for k, v in f.attrs.items()}
        book_ids = [str(_s(x)) for x in f["books/id"][()]]
        titles = [str(_s(x)) for x in f["books/title"][()]] if "books/title" in f else [""] * len(book_ids)
        length = f["books/length"][()].astype(np.int64)
        done = f["books/completed_positions"][()].astype(np.int64)
        valid_n = np.minimum(length, done)
        B = len(book_ids)
        groups = []
        for name in f["runs"].keys():
            g = f["runs"][name]
            groups.append((int(_s(g.attrs.get("index", len(groups)))), name))
        groups.sort()
        if runs is not None:
            want = list(runs)
            groups = [(i, n) for i, n in groups
                      if i in want or str(_s(f["runs"][n].attrs.get("policy", n))) in want]
        # the position extent: the widest dataset (reference or runs), at least the commit record
        P = int(valid_n.max()) if B else 0
        for ds in ["reference/nll"] + [f"runs/{n}/kl" for _, n in groups]:
            if ds in f:
                P = max(P, int(f[ds].shape[1]))
        valid = np.arange(P)[None, :] < valid_n[:, None]  # [B, P]

        def read(ds, dtype, fill):
            out = np.full((B, P), fill, dtype=dtype)
            if ds in f:
                d = f[ds]
                w = min(P, d.shape[1])
                if w:
                    out[:, :w] = d[:, :w]
            out[~valid] = fill
            return out

        data = {v: np.empty((len(groups), B, P)) for v, _, _ in _RUN_VARS}
        run_attrs = []
        for k, (_, name) in enumerate(groups):
            for v, ds, dt in _RUN_VARS:
                data[v][k] = read(f"runs/{name}/{ds}", dt, np.nan)
            run_attrs.append({a: _s(x) for a, x in f["runs"][name].attrs.items()})
        ref_nll = read("reference/nll", np.float64, np.nan)
        ref_top1 = read("reference/top1", np.int32, -1)
        next_token = read("reference/next_token", np.int32, -1)

    def col(key, default, dtype=None):
        vals = [ra.get(key, default) for ra in run_attrs]
        return np.array(vals, dtype=dtype) if dtype else np.array([str(v) for v in vals], dtype=object)

    coords = {
        "run": ("run", col("policy", "")),
        "window": ("run", col("window", 0, np.int64)),
        "seed": ("run", col("seed", 0, np.uint64)),
        "mode": ("run", col("mode", "")),
        "hp_format": ("run", col("hp_format", "")),
        "lp_format": ("run", col("lp_format", "")),
        "group": ("run", np.array([n for _, n in groups], dtype=object)),
        "book": ("book", np.array(book_ids, dtype=object)),
        "title": ("book", np.array(titles, dtype=object)),
        "length": ("book", length),
        "completed_positions": ("book", done),
        "position": ("position", np.arange(P, dtype=np.int64)),
    }
    dims = ("run", "book", "position")
    dvars = {v: (dims, data[v]) for v, _, _ in _RUN_VARS}
    dvars["ref_nll"] = (("book", "position"), ref_nll)
    dvars["ref_top1"] = (("book", "position"), ref_top1)
    dvars["next_token"] = (("book", "position"), next_token)
    dvars["valid"] = (("book", "position"), valid)
    summaries = sorted({a for ra in run_attrs for a in ra if a.startswith("summary_")})
    for a in summaries:
        vals = [ra.get(a) for ra in run_attrs]
        if all(np.ndim(x) == 0 and x is not None for x in vals):
            dvars[a] = ("run", np.array(vals, dtype=np.float64))
    ds = xr.Dataset(dvars, coords=coords, attrs={k: v for k, v in attrs.items() if np.ndim(v) == 0})
    for v, u in _UNITS.items():
        ds[v].attrs["units"] = u
    ds["kl"].attrs["long_name"] = "KL(p_ref || p_run)"
    ds["nll"].attrs["long_name"] = "-log p_run(y_t)"
    ds["dp"].attrs["long_name"] = "p_run(y_t) - p_ref(y_t)"
    ds["top1"].attrs["long_name"] = "argmax p_run == argmax p_ref"
    ds["ref_nll"].attrs["long_name"] = "-log p_ref(y_t) of the fp32 reference"
    ds["position"].attrs["long_name"] = "position t (context length n = t + 1)"
    return ds

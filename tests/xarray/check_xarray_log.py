#!/usr/bin/env python3
"""check_xarray_log.py CLI REPO WORKDIR — a log of `replayssm kl` opened with xarray
(docs/hdf5-layout.md "Dimensions (netCDF-4 / xarray)"), checked against h5py reading
the raw per-run datasets (an independent reader: it ignores the dimension scales and the root's
virtual datasets):
- xr.open_dataset(log, engine="h5netcdf") has dims run x book x position with coordinates run =
  the runs' policy strings, window and seed along run, book = /books/id, position = 0 .. P-1;
  kl / nll / dp / top1_agree over (run, book, position) equal /runs/runNN/<name> exactly (NaN
  where h5py reads NaN), the reference variables equal /reference/*, completed_positions equals
  the commit record; units and long_name are attributes;
- every group opens without phony dimensions (xarray's default refuses them), and xr.concat of the
  run groups over a new run axis works (it raised MemoryError "Unable to allocate 512 TiB" on the
  format-1 layout, whose groups each had their own phony dimensions) and equals the root's kl;
- notebooks/rs_style.py still reads the per-run layout: its committed KL equals xarray's.
Values are compared bit for bit (no tolerance: both read the same stored doubles)."""
import os
import subprocess
import sys

import h5py
import numpy as np
import xarray as xr

CLI, REPO, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def same(a, b):
    """bit-for-bit equal arrays (NaN == NaN where both are NaN at the same places)"""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


fx = os.path.join(REPO, "tests", "fixtures")
log = os.path.join(WORK, "xr.h5")
policies = ["shared:nvfp4-sr", "split:nvfp4-rtn/fp16-sr", "split:nvfp4-rtn/fp32"]
# 40 positions in chunks of 16: the last chunk is partial
cmd = [CLI, "kl", "--model", os.path.join(fx, "models", "gdn-tiny-random"), "--data", os.path.join(fx, "pg19-mini"),
       "--books", "2", "--tokens", "40", "--chunk", "16", "--seed", "7", "--policy", ",".join(policies),
       "--threads", "1", "--quiet", "--out", log]
r = subprocess.run(cmd, capture_output=True, text=True)
check(r.returncode == 0, f"replayssm kl exits 0 ({r.stderr.strip()[-300:]})")
if r.returncode != 0:
    sys.exit(1)

h = h5py.File(log, "r")
runs = sorted(h["runs"].keys())
B, P, R = len(h["books/id"]), 40, len(runs)
check(R == 3 and B == 2, f"the log has {R} runs and {B} books")

# one-liner of docs/hdf5-layout.md
ds = xr.open_dataset(log, engine="h5netcdf")
check(dict(ds.sizes) == {"run": R, "book": B, "position": P}, f"dims {dict(ds.sizes)}")
for v in ("kl", "nll", "dp", "top1_agree"):
    check(ds[v].dims == ("run", "book", "position"), f"{v} dims {ds[v].dims}")
    raw = np.stack([h["runs"][g][v][()] for g in runs])
    check(same(ds[v].values, raw), f"{v} equals the stacked /runs/runNN/{v} (h5py)")
check(ds["kl"].attrs.get("units") == "nats" and "KL" in ds["kl"].attrs.get("long_name", ""), "kl units / long_name")
check(ds["nll"].attrs.get("units") == "nats", "nll units")
check(list(ds["run"].values) == [h["runs"][g].attrs["policy"] for g in runs] == policies,
      f"run coordinate = the policy strings {list(ds['run'].values)}")
check(list(ds["window"].values) == [int(h["runs"][g].attrs["window"]) for g in runs], "window coordinate along run")
check(list(ds["seed"].values) == [int(h["runs"][g].attrs["seed"]) for g in runs] == [7] * 3, "seed coordinate along run")
check("window" in ds.coords and "seed" in ds.coords and "run" in ds.indexes, "run, window, seed are coordinates")
ids = [x.decode() if isinstance(x, bytes) else x for x in h["books/id"][()]]
check(list(ds["book"].values) == ids, f"book coordinate = /books/id {ids}")
check(same(ds["position"].values, np.arange(P, dtype=np.int64)), "position coordinate = 0 .. P-1")
check(same(ds["completed_positions"].values, h["books/completed_positions"][()]), "completed_positions")
for v, src in (("reference_nll", "nll"), ("next_token", "next_token"), ("reference_top1", "top1")):
    check(ds[v].dims == ("book", "position") and same(ds[v].values, h["reference"][src][()]), f"{v} = /reference/{src}")
check(int(h.attrs["format_version"]) == 2, "format_version 2")
# selection by policy string works
sel = ds.kl.sel(run="split:nvfp4-rtn/fp32")
check(same(sel.values, h["runs"][runs[2]]["kl"][()]), "ds.kl.sel(run=policy)")

# every group: named dimensions, no phony_dim_N (xarray's default refuses unlabelled axes)
groups = ["books", "reference", "windows", "provenance"] + [f"runs/{g}" for g in runs]
for g in groups:
    try:
        gd = xr.open_dataset(log, engine="h5netcdf", group=g)
        phony = [d for d in gd.sizes if str(d).startswith("phony_dim")]
        check(not phony, f"group {g} opens with dims {dict(gd.sizes)}")
    except Exception as e:  # noqa: BLE001 - report any failure of the reader
        check(False, f"group {g} opens: {type(e).__name__}: {e}")

# xr.concat over the run groups
parts = [xr.open_dataset(log, engine="h5netcdf", group=f"runs/{g}") for g in runs]
try:
    cat = xr.concat(parts, dim="run")
    check(dict(cat.sizes) == {"run": R, "book": B, "position": P}, f"xr.concat over runs: dims {dict(cat.sizes)}")
    check(same(cat["kl"].values, ds["kl"].values), "xr.concat's kl equals the root's kl")
    check(cat.nbytes < 1 << 20, f"xr.concat holds {cat.nbytes} bytes (no outer product of dimensions)")
except Exception as e:  # noqa: BLE001
    check(False, f"xr.concat over runs: {type(e).__name__}: {e}")

# the per-run layout stays readable by the notebooks' reader. It opens files without HDF5 file
# locking, which HDF5 refuses while this process holds the log open with locking (xarray caches
# its handles): read it in a fresh interpreter.
kl_all, done_all = ds.kl.values, ds.completed_positions.values
np.save(os.path.join(WORK, "kl.npy"), kl_all)
np.save(os.path.join(WORK, "done.npy"), done_all)
probe = f"""
import sys, numpy as np
sys.path.insert(0, {os.path.join(REPO, "notebooks")!r})
import rs_style
kl, done = np.load({os.path.join(WORK, "kl.npy")!r}), np.load({os.path.join(WORK, "done.npy")!r})
for i, run in enumerate(rs_style.KLLog({log!r}).runs):
    books = list(run.kl_books())
    ok = all(np.asarray(x).tobytes() == kl[i, b, :int(done[b])].tobytes() for b, x in enumerate(books))
    print(run.name, run.policy, ok)
"""
r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
lines = r.stdout.split("\n")
check(r.returncode == 0 and sum(l.endswith(" True") for l in lines) == R,
      f"rs_style.KLLog reads every run as xarray does ({r.stdout.strip()} {r.stderr.strip()[-200:]})")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)

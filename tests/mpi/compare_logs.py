#!/usr/bin/env python3
"""compare_logs.py A.h5 B.h5 — two KL logs equal bit for bit, read with h5py (independent of the
library's reader): the same groups and datasets, every dataset's dtype, shape and bytes, and every
attribute of every object except the provenance that names when, where and how a file was made.

Exit 0 equal, 1 different (each difference printed), 77 without h5py (CTest skip, unless
RS_REQUIRE_PYTHON is set: CI installs h5py, so there a missing module fails).
"""
import os
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"compare_logs: {e}")
    sys.exit(1 if os.environ.get("RS_REQUIRE_PYTHON") else 77)

# root attributes that say when / how / where a log was made, not what it holds (`command`: the
# replayssm command that wrote the file, "merge" for an MPI job's merged log)
PROVENANCE = {"tool_version", "git_commit", "command_line", "command", "start_time", "end_time", "first_start_time",
              "device", "model_path", "data_path"}


# /provenance's history says who ran what, where and when (an MPI job's shards fold into one entry
# per host, a single process has one): not what the log holds. The model files' digests and the
# machine attributes are compared.
HISTORY = ("provenance/history_", "provenance/invocation")


def items(f):
    out = {}
    f.visititems(lambda name, obj: out.__setitem__(name, obj) if not name.startswith(HISTORY) else None)
    return out


def deref(f, v):
    """HDF5 object references (dimension scales' DIMENSION_LIST / REFERENCE_LIST) as the objects'
    names: the addresses differ between two files with the same content."""
    if isinstance(v, h5py.Reference):
        return f[v].name if v else None
    if isinstance(v, np.void) or (isinstance(v, tuple)):
        return tuple(deref(f, x) for x in v)
    if isinstance(v, np.ndarray) and v.dtype.kind in "OV":
        return [deref(f, x) for x in v.tolist()] if v.dtype.kind == "O" else [deref(f, x) for x in v]
    if isinstance(v, (list,)):
        return [deref(f, x) for x in v]
    return v


def attr_bytes(v):
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes()) if v.dtype.kind != "O" else ("O", v.shape, repr(v.tolist()))
    if isinstance(v, (np.generic,)):
        return (v.dtype.str, np.asarray(v).tobytes())
    return (type(v).__name__, repr(v))


def cmp_attrs(name, a, b, root, diffs):
    ka = {k for k in a.attrs if not (root and k in PROVENANCE)}
    kb = {k for k in b.attrs if not (root and k in PROVENANCE)}
    if ka != kb:
        diffs.append(f"{name or '/'}: attributes differ: only in A {sorted(ka - kb)}, only in B {sorted(kb - ka)}")
    for k in sorted(ka & kb):
        if k in ("DIMENSION_LIST", "REFERENCE_LIST"):
            ra = [r for r in deref(a.file, a.attrs[k]) if not (isinstance(r, tuple) and str(r[0]).startswith("/" + HISTORY[0]))]
            rb = [r for r in deref(b.file, b.attrs[k]) if not (isinstance(r, tuple) and str(r[0]).startswith("/" + HISTORY[0]))]
            if repr(ra) != repr(rb):
                diffs.append(f"{name or '/'}@{k}: {ra!r} != {rb!r}")
            continue
        if attr_bytes(a.attrs[k]) != attr_bytes(b.attrs[k]):
            diffs.append(f"{name or '/'}@{k}: {a.attrs[k]!r} != {b.attrs[k]!r}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    diffs = []
    with h5py.File(sys.argv[1], "r") as fa, h5py.File(sys.argv[2], "r") as fb:
        ia, ib = items(fa), items(fb)
        if set(ia) != set(ib):
            diffs.append(f"objects differ: only in A {sorted(set(ia) - set(ib))}, only in B {sorted(set(ib) - set(ia))}")
        cmp_attrs("", fa, fb, True, diffs)
        n_ds = 0
        for name in sorted(set(ia) & set(ib)):
            a, b = ia[name], ib[name]
            cmp_attrs(name, a, b, False, diffs)
            if isinstance(a, h5py.Dataset):
                n_ds += 1
                va, vb = a[()], b[()]
                if a.dtype != b.dtype or a.shape != b.shape:
                    diffs.append(f"{name}: {a.dtype}{a.shape} != {b.dtype}{b.shape}")
                elif va.dtype.kind == "O":
                    if va.tolist() != vb.tolist():
                        diffs.append(f"{name}: values differ")
                elif va.tobytes() != vb.tobytes():  # bitwise: NaN == NaN, -0 != +0
                    ea = va.view(np.uint8).reshape(va.size, -1)
                    eb = vb.view(np.uint8).reshape(vb.size, -1)
                    k = int(np.flatnonzero((ea != eb).any(axis=1))[0])
                    diffs.append(f"{name}: values differ bitwise (first at flat index {k}: "
                                 f"{va.flat[k]!r} != {vb.flat[k]!r})")
    for d in diffs:
        print("DIFF", d)
    if not diffs:
        print(f"compare_logs: {sys.argv[1]} == {sys.argv[2]} ({n_ds} datasets and their attributes, bit for bit)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())

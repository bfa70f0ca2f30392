#!/usr/bin/env python3
"""check_notebooks.py REPO WORKDIR — run each precision-figure script of notebooks/ on the tiny
fixtures of tests/fixtures/notebooks/ and check what it writes (called by run_notebook_tests.sh).

Checks: every expected PNG/PDF/JSON/Markdown output exists, is non-empty and starts with the
right magic bytes; the numbers in the JSON sidecars equal an independent numpy computation on the
fixture (bucket means, the shared/split ratio, the window sweep, the C.6 points); the Table 11
Markdown has one RTN and one SR row per pair; a run made non-finite in a copy of the fixture is
reported as non-finite; positions past books/completed_positions are ignored; the README section
writer (precision_report.py) keeps the hand-written part and replaces only its marked section."""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

REPO, WORK = sys.argv[1], sys.argv[2]
FX = os.path.join(REPO, "tests", "fixtures", "notebooks")
NB = os.path.join(REPO, "notebooks")
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def run(script, *args, out):
    cmd = [sys.executable, os.path.join(NB, script), *args, "--out-dir", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    check(p.returncode == 0, f"{script} exits 0" + ("" if p.returncode == 0 else f": {p.stderr[-2000:]}"))
    return p.stdout


MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "json": b"{", "md": b"Table 11"}


def outputs(out, name, exts=("png", "pdf", "json")):
    for ext in exts:
        p = os.path.join(out, f"{name}.{ext}")
        ok = os.path.isfile(p) and os.path.getsize(p) > 0
        check(ok, f"{name}.{ext} exists and is non-empty")
        if ok:
            with open(p, "rb") as fh:
                head = fh.read(16)
            check(head.startswith(MAGIC[ext]), f"{name}.{ext} starts with {MAGIC[ext]!r}")
    with open(os.path.join(out, name + ".json")) as fh:
        return json.load(fh)


def pooled_mean(path, policy, lo_n, hi_n, window=None):
    """Independent: mean KL over context lengths n in [lo_n, hi_n], committed positions, finite only."""
    with h5py.File(path, "r") as f:
        done = np.minimum(f["books/completed_positions"][()].astype(np.int64), f["books/length"][()].astype(np.int64))
        for g in f["runs"].values():
            pol = g.attrs["policy"]
            pol = pol.decode() if isinstance(pol, bytes) else pol
            if pol == policy and (window is None or int(g.attrs["window"]) == window):
                kl = g["kl"][()]
                v = np.concatenate([kl[b, lo_n - 1:min(hi_n, int(done[b]))] for b in range(len(done))])
                return float(np.mean(v[np.isfinite(v)]))
    raise KeyError(policy)


def book_units(path, policy, lo_n, hi_n, window=None):
    """Independent: each book's mean KL over n in [lo_n, hi_n] (committed, finite positions)."""
    with h5py.File(path, "r") as f:
        done = np.minimum(f["books/completed_positions"][()].astype(np.int64), f["books/length"][()].astype(np.int64))
        for g in f["runs"].values():
            pol = g.attrs["policy"]
            pol = pol.decode() if isinstance(pol, bytes) else pol
            if pol == policy and (window is None or int(g.attrs["window"]) == window):
                kl = g["kl"][()]
                out = []
                for b in range(len(done)):
                    v = kl[b, lo_n - 1:min(hi_n, int(done[b]))]
                    out.append(float(np.mean(v[np.isfinite(v)])))
                return np.array(out)
    raise KeyError(policy)


def book_mean(path, policy, lo_n, hi_n, window=None):
    """Independent: the mean over books of each book's mean (what Figures 5/12 and Table 11 plot)."""
    return float(np.mean(book_units(path, policy, lo_n, hi_n, window)))


def t_interval(u):
    """95% Student t interval of the mean of u (t(0.975, df) for df 1..3 from a table, 9 digits)."""
    t = {1: 12.706204736, 2: 4.302652730, 3: 3.182446305}[len(u) - 1]
    h = t * np.std(u, ddof=1) / np.sqrt(len(u))
    return np.mean(u) - h, np.mean(u) + h


def close(a, b, rtol=1e-9):
    return a is not None and b is not None and abs(a - b) <= rtol * max(abs(a), abs(b))


# ---- Figure 5 ------------------------------------------------------------------------------------
gdn = os.path.join(FX, "kl_gdn.h5")
out = os.path.join(WORK, "fig05")
run("fig05_kl_vs_length.py", gdn, out=out)
j = outputs(out, "fig05_kl_vs_length")
m = j["models"][0]
check(set(m["policies"]) == {"shared:fp8-sr", "shared:nvfp4-sr", "split:nvfp4-rtn/fp32", "split:nvfp4-rtn/fp16-sr",
                             "conv:fp16-sr"}, "fig05 draws exactly the five Figure 5 policies")
lo, hi = m["last_bucket"]
check([lo, hi] == [128, 256], f"fig05 last bucket is [128, 256] for 256 positions (got {[lo, hi]})")
sh, sp = book_mean(gdn, "shared:nvfp4-sr", lo, hi), book_mean(gdn, "split:nvfp4-rtn/fp32", lo, hi)
check(close(m["shared_last"], sh) and close(m["split_last"], sp), "fig05 last-bucket means (mean over books) equal numpy's")
check(close(m["ratio_shared_split"], sh / sp), f"fig05 ratio shared/split = {sh / sp:.3f}")
b = m["policies"]["conv:fp16-sr"]
i = b["bucket_lo"].index(64)
check(close(b["mean_kl"][i], book_mean(gdn, "conv:fp16-sr", 64, 127)), "fig05 bucket [64, 128) mean equals numpy's")
u = book_units(gdn, "conv:fp16-sr", 64, 127)
lo_ci, hi_ci = t_interval(u)
# rtol 1e-6: rs_style's t table has 8 significant digits
check(len(u) == 2 and close(b["ci95_lo"][i], lo_ci, 1e-6) and close(b["ci95_hi"][i], hi_ci, 1e-6),
      f"fig05 bucket [64, 128) 95% interval over books equals numpy's t-interval [{lo_ci:.3e}, {hi_ci:.3e}]")
check(b["bucket_lo"][0] == 1 and b["bucket_hi"][0] == 31, "fig05 first bucket is [1, 32)")
lr = np.log(book_units(gdn, "shared:nvfp4-sr", lo, hi) / book_units(gdn, "split:nvfp4-rtn/fp32", lo, hi))
llo, lhi = t_interval(lr)
h = (lhi - llo) / 2
check(close(m["ratio_shared_split_ci95"][0], sh / sp * np.exp(-h), 1e-6)
      and close(m["ratio_shared_split_ci95"][1], sh / sp * np.exp(h), 1e-6),
      "fig05 ratio interval = R exp(+-t s / sqrt(B)) of the per-book log ratios")

# seed logs: a second log of the same model with its SR runs changed counts for SR policies only
seedlog = os.path.join(WORK, "kl_gdn_seed1.h5")
shutil.copy(gdn, seedlog)
with h5py.File(seedlog, "r+") as f:
    for g in f["runs"].values():
        g["kl"][...] = g["kl"][()] * 3.0  # every run changed: only the SR ones may be used
        g.attrs["seed"] = 1
out = os.path.join(WORK, "fig05_seeds")
run("fig05_kl_vs_length.py", gdn, seedlog, out=out)
js = outputs(out, "fig05_kl_vs_length", exts=("json",))["models"][0]
check(close(js["shared_last"], 2 * sh), "fig05 with a seed log: an SR policy's book means are averaged over seeds")
check(close(js["split_last"], sp), "fig05 with a seed log: a deterministic (RTN) policy uses the first log only")

# completed_positions honoured: garbage past the commit record of book 1 must not change anything
cut = os.path.join(WORK, "kl_gdn_cut.h5")
shutil.copy(gdn, cut)
with h5py.File(cut, "r+") as f:
    f["books/completed_positions"][1] = 200
    for g in f["runs"].values():
        g["kl"][1, 200:] = 1e6
out = os.path.join(WORK, "fig05_cut")
run("fig05_kl_vs_length.py", cut, out=out)
j = outputs(out, "fig05_kl_vs_length", exts=("json",))
want = book_mean(cut, "shared:nvfp4-sr", 128, 256)
check(close(j["models"][0]["shared_last"], want) and want < 1e3,
      "fig05 ignores positions past books/completed_positions")

# ---- Figure 12 -----------------------------------------------------------------------------------
mb = os.path.join(FX, "kl_mamba2.h5")
out = os.path.join(WORK, "fig12")
run("fig12_kl_other_models.py", mb, gdn, out=out)
j = outputs(out, "fig12_kl_other_models")
check([x["model"] for x in j["models"]] == ["mamba2-tiny-random", "gdn-tiny-random"], "fig12 one panel per log")
check(close(j["models"][0]["ratio_shared_split"],
            book_mean(mb, "shared:nvfp4-sr", 128, 256) / book_mean(mb, "split:nvfp4-rtn/fp32", 128, 256)),
      "fig12 mamba2 ratio equals numpy's")

# ---- Figure 13 -----------------------------------------------------------------------------------
ssh, ssp = os.path.join(FX, "sweep_shared.h5"), os.path.join(FX, "sweep_split.h5")
out = os.path.join(WORK, "fig13")
run("fig13_kl_vs_window.py", ssh, ssp, gdn, out=out)
j = outputs(out, "fig13_kl_vs_window")
check(j["lengths"] == [256], f"fig13 uses the longest common length 256 (got {j['lengths']})")
for pol, f in (("shared:nvfp4-sr", ssh), ("split:nvfp4-rtn/fp32", ssp)):
    d = j["policies"].get(pol, {})
    check(d.get("windows") == [4, 16, 64], f"fig13 {pol} at L = 4, 16, 64")
    if d.get("windows") == [4, 16, 64]:
        want = [pooled_mean(f, pol, 129, 256, 4), pooled_mean(gdn, pol, 129, 256, 16), pooled_mean(f, pol, 129, 256, 64)]
        check(all(close(a, b) for a, b in zip(d["kl"]["256"], want)), f"fig13 {pol} values equal numpy's")
check("conv:fp16-sr" not in j["policies"], "fig13 leaves out policies logged at one window only")

# ---- Table 11 ------------------------------------------------------------------------------------
out = os.path.join(WORK, "table11")
stdout = run("table11_rtn_vs_sr.py", gdn, out=out)
j = outputs(out, "table11_rtn_vs_sr", exts=("png", "pdf", "json", "md"))
md = open(os.path.join(out, "table11_rtn_vs_sr.md")).read()
check(md in stdout, "table11 prints the Markdown table on stdout")
rows = [ln for ln in md.splitlines() if ln.startswith("| gdn-tiny-random |")]
want_rows = [("shared NVFP4", "RTN", "shared:nvfp4-rtn"), ("shared NVFP4", "SR", "shared:nvfp4-sr"),
             ("split NVFP4/FP16", "RTN", "split:nvfp4-rtn/fp16-rtn"), ("split NVFP4/FP16", "SR", "split:nvfp4-rtn/fp16-sr")]
got = [tuple(c.strip().strip("`") for c in r.split("|")[2:5]) for r in rows]
check(sorted(got) == sorted(want_rows), f"table11 rows are the two RTN/SR pairs (got {got})")
hdr = [ln for ln in md.splitlines() if ln.startswith("| model |")]
check(len(hdr) == 1 and hdr[0].rstrip(" |").endswith("KL @ 256"), "table11 columns end at the log's length (256)")
cell = {tuple(c.strip().strip("`") for c in r.split("|")[2:5]): r.split("|")[6].strip() for r in rows}
v = cell.get(("shared NVFP4", "SR", "shared:nvfp4-sr"))
v0 = v.split()[0] if v else None
check(v0 is not None and abs(float(v0) - book_mean(gdn, "shared:nvfp4-sr", 129, 256)) <= 5e-3 * float(v0),
      "table11 KL @ 256 = mean over books of the mean over (128, 256] (3 significant digits)")
ci = j["pairs"][0]["cells_ci95"]["SR"]["256"] if j["pairs"][0]["sr"] == "shared:nvfp4-sr" else None
lo_ci, hi_ci = t_interval(book_units(gdn, "shared:nvfp4-sr", 129, 256))
check(ci is not None and close(ci[0], lo_ci, 1e-6) and close(ci[1], hi_ci, 1e-6) and f"[{lo_ci:.2g}, {hi_ci:.2g}]" in v,
      "table11 cell carries the 95% t-interval over books")

bad = os.path.join(WORK, "kl_gdn_nonfinite.h5")
shutil.copy(gdn, bad)
with h5py.File(bad, "r+") as f:
    for g in f["runs"].values():
        if g.attrs["policy"] in ("shared:nvfp4-rtn", b"shared:nvfp4-rtn"):
            g["kl"][0, 199:] = np.nan
            g["first_nonfinite_position"][0] = 199
out = os.path.join(WORK, "table11_nonfinite")
run("table11_rtn_vs_sr.py", bad, out=out)
md = open(os.path.join(out, "table11_rtn_vs_sr.md")).read()
rows = {r.split("|")[4].strip().strip("`"): r for r in md.splitlines() if r.startswith("| gdn-tiny-random |")}
check("non-finite" in rows.get("shared:nvfp4-rtn", ""), "table11 marks the non-finite RTN run")
check("non-finite" not in rows.get("shared:nvfp4-sr", "non-finite"), "table11 leaves the finite SR run unmarked")
check("non-finite from n = 200" in md, "table11 reports where the run went non-finite")

# ---- C.6 theory ----------------------------------------------------------------------------------
th = os.path.join(FX, "theory.h5")
out = os.path.join(WORK, "theory")
run("theory_error_accumulation.py", th, out=out)
j = outputs(out, "theory_error_accumulation")
pts = j["points"]
check(len(pts) == 2 * 3 * 3, f"theory: 2 formats x 3 alphas x 3 storages = 18 points (got {len(pts)})")
with h5py.File(th, "r") as f:
    ok = all(close(p["closed"], float(f[f"c6/{p['format']}/alpha_{p['alpha']:g}/{p['storage']}/closed_{p['moment']}"][-1]))
             and close(p["mc"], float(f[f"c6/{p['format']}/alpha_{p['alpha']:g}/{p['storage']}/mc_{p['moment']}"][-1]))
             for p in pts)
check(ok, "theory: plotted closed-form and Monte Carlo end points equal the file's")

# ---- bits per byte vs context length (reference-only log) ----------------------------------------
ref = os.path.join(FX, "ref_gdn.h5")
out = os.path.join(WORK, "bpb")
run("fig_bpb_vs_length.py", ref, "--train-context", "128", out=out)
j = outputs(out, "fig_bpb_vs_length")
mm = j["models"][0]
with h5py.File(ref, "r") as f:
    done = f["books/completed_positions"][()].astype(np.int64)
    nll = f["reference/nll"][()]
    check(len(f["runs"]) == 0, "ref fixture is reference-only (no runs)")
rows = [nll[b, :done[b]] for b in range(len(done))]
check(len(j["models"]) == 1 and len(mm["per_book_bits_per_byte"]) == len(rows), "bpb: one model, one thin line per book")
check(sum(mm["positions"]) == int(done.sum()), f"bpb: every committed position counted once ({int(done.sum())})")
i = mm["bucket_lo"].index(64)
want = float(np.mean(np.concatenate([r[63:127] for r in rows]))) / np.log(2)
check(close(mm["bits_per_byte"][i], want), f"bpb: bucket [64, 128) equals numpy's {want:.4f} bits per byte")
check(close(mm["per_book_bits_per_byte"][1][i], float(np.mean(rows[1][63:127])) / np.log(2)),
      "bpb: book 2's bucket [64, 128) equals numpy's")
check(j.get("train_context") == 128, "bpb: the training context is recorded")
# two logs of one model pool their books, each book once
out = os.path.join(WORK, "bpb2")
run("fig_bpb_vs_length.py", ref, ref, out=out)
j2 = outputs(out, "fig_bpb_vs_length")
check(sum(j2["models"][0]["positions"]) == int(done.sum()), "bpb: a book in two logs counts once")
# a log without reference/nll: a clear error, no figure
p = subprocess.run([sys.executable, os.path.join(NB, "fig_bpb_vs_length.py"), gdn, "--out-dir", os.path.join(WORK, "bpb3")],
                   capture_output=True, text=True, timeout=120)
check(p.returncode != 0 and "no reference/nll" in p.stderr, "bpb: a log without the reference is refused with a message")

# ---- notebooks/figures/README.md section (precision_report.py) ------------------------------------
rep = os.path.join(WORK, "report")
os.makedirs(rep, exist_ok=True)
for sub, name in (("fig05", "fig05_kl_vs_length"), ("fig12", "fig12_kl_other_models"), ("fig13", "fig13_kl_vs_window"),
                  ("table11", "table11_rtn_vs_sr"), ("theory", "theory_error_accumulation")):
    for ext in (".json", ".md"):
        if os.path.isfile(os.path.join(WORK, sub, name + ext)):
            shutil.copy(os.path.join(WORK, sub, name + ext), rep)
readme = os.path.join(rep, "README.md")
hand = "# notebooks/figures/\n\nhand-written kernel section\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
with open(readme, "w") as fh:
    fh.write(hand)
for _ in range(2):  # twice: the second run must replace the section, not add another
    p = subprocess.run([sys.executable, os.path.join(NB, "precision_report.py"), "--fig-dir", rep, "--readme", readme],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "precision_report.py exits 0" + ("" if p.returncode == 0 else ": " + p.stderr[-2000:]))
text = open(readme).read()
check(text.startswith(hand), "precision_report keeps the hand-written part of the README")
check(text.count("<!-- BEGIN precision-figures") == 1 and text.count("<!-- END precision-figures -->") == 1,
      "precision_report writes exactly one marked section (idempotent)")
for name in ("fig05_kl_vs_length", "fig12_kl_other_models", "fig13_kl_vs_window", "table11_rtn_vs_sr",
             "theory_error_accumulation"):
    check(f"![{name}]({name}.png)" in text, f"README section shows {name}.png")
ratio = json.load(open(os.path.join(rep, "fig05_kl_vs_length.json")))["models"][0]["ratio_shared_split"]
check(f"**{ratio:.3g}x**" in text and "36x at 128K" in text, "README puts the shared/split ratio next to the paper's 36x")
lines = text.splitlines()
k = lines.index("### Key numbers beside the paper's") + 2
rows = []
while k < len(lines) and lines[k].startswith("|"):
    rows.append(lines[k])
    k += 1
check(len(rows) >= 8 and all(ln.count("|") == 4 for ln in rows),
      f"README key-number table: {len(rows)} rows of 3 cells each (quantity | ours | paper)")

print(f"\n{len(failures)} failure(s)")
sys.exit(1 if failures else 0)

# %% [markdown]
# # Bits per byte of the fp32 reference vs context length (model quality at long context)
#
# Not a figure of the paper: it shows whether a model holds up past its training context, which
# every KL curve presupposes (a model that collapses at 64K makes its KL there meaningless). Input:
# any `replayssm kl` logs (`--policy none` runs the reference alone, a third of the cost); every
# log of one model is pooled, a book counted once (the first log that has it). Per model: the
# pooled mean bits per byte (NLL / ln 2; byte tokenizer) over positions n in [2^k, 2^(k+1)),
# thin lines per book, and a dotted line at the training context if given.
#
# Run: `python3 notebooks/fig_bpb_vs_length.py LOG.h5 [LOG.h5 ...] [--train-context 16384]
# [--out-dir notebooks/figures]`. Writes fig_bpb_vs_length.png/.pdf/.json.

# %%
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rs_style as S  # noqa: E402

np = S.np
ap = S.figure_args("Bits per byte of the fp32 reference vs context length.", "fig_bpb_vs_length",
                   help_files="HDF5 logs of replayssm kl (any policies, or --policy none)")
ap.add_argument("--train-context", type=int, default=None, help="draw the training context length")
args = ap.parse_args()
S.setup()
plt = S.plt

# %% one entry per model: its books' reference NLL rows (a book once: the first log's row)
models = {}
for path in args.files:
    log = S.KLLog(path, expect_runs=False)
    m = models.setdefault(log.model, {"type": log.model_type, "books": {}, "logs": []})
    m["logs"].append(log.describe())
    for bid, row in zip(log.book_ids, log.reference_nll_books()):
        m["books"].setdefault(bid, np.asarray(row, dtype=np.float64))


class _Rows:  # bucket_stats() reads rows through kl_books()
    def __init__(self, rows):
        self.rows = rows

    def kl_books(self):
        return iter(self.rows)


# %%
fig, ax = plt.subplots(figsize=(6.6, 3.6))
colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
out = {"figure": args.name, "command": S.script_command(), "models": []}
for k, (model, m) in enumerate(models.items()):
    rows = list(m["books"].values())
    max_n = max(len(r) for r in rows)
    edges = S.log2_edges(max_n)
    st = S.bucket_stats(_Rows(rows), edges)
    bpb = st["mean"] / math.log(2)
    c = colours[k % len(colours)]
    ok = np.isfinite(bpb)
    ax.plot(st["x"][ok], bpb[ok], color=c, marker="o", markersize=3.5,
            label=f"{os.path.basename(model.rstrip('/'))} ({m['type']}), {S.plural(len(rows), 'book')} pooled")
    for pb in st["per_book"]:
        okb = np.isfinite(pb)
        ax.plot(st["x"][okb], pb[okb] / math.log(2), color=c, lw=0.6, alpha=0.35)
    out["models"].append({"model": model, "model_type": m["type"], "books": list(m["books"]), "logs": m["logs"],
                          "bucket_lo": st["lo"].tolist(), "bucket_hi": st["hi"].tolist(),
                          "positions": st["n"].tolist(), "bits_per_byte": [S.finite_or_none(x) for x in bpb],
                          "per_book_bits_per_byte": [[S.finite_or_none(x / math.log(2)) for x in pb]
                                                     for pb in st["per_book"]]})
    last = bpb[ok][-1] if ok.any() else float("nan")
    print(f"{model}: {S.plural(len(rows), 'book')}, bits per byte {bpb[ok][0]:.3f} (n < {st['hi'][0] + 1}) ... "
          f"{last:.3f} (n in [{st['lo'][-1]}, {st['hi'][-1]}])")
if args.train_context:
    ax.axvline(args.train_context, color="0.4", ls=":", lw=1)
    # vertical, left of the line and at the bottom: at the top right it ran into the legend
    ax.text(args.train_context, 0.03, "training context ", va="bottom", ha="right", rotation=90, fontsize=7,
            color="0.3", transform=ax.get_xaxis_transform())
    out["train_context"] = args.train_context
ax.set_xscale("log", base=2)
ax.set_xlabel(S.LENGTH_LABEL)
ax.set_ylabel("bits per byte of the fp32 reference, mean over n\nin a bucket ([1, 32), [32, 64), ..., [2$^k$, 2$^{k+1}$))")
ax.set_title("Model quality vs context length (thin: single books)")
S.legend_outside(ax)
S.note(fig, "\n".join(f"{l['path']}: {l['model']}, books [{','.join(l['books'])}], up to {l['max_positions']} "
                      f"positions, git {l['git_commit']}" for m in models.values() for l in m["logs"]))
fig.tight_layout()
S.save_figure(fig, args.name, args.out_dir)
S.write_json(out, args.name, args.out_dir)

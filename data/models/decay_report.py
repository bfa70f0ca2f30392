#!/usr/bin/env python3
"""decay_report.py — effective decay alpha of every SSM head of a trained model over sample text.

The paper's error growth lives in slow heads (C.6: the error limit of a head grows like
1/(1 - alpha^L)), so each bundled model card lists, per SSM layer and head, the distribution of
the per-step decay alpha_t over real text:

  GDN (qwen3_5_text):  alpha_t = exp(g_t),  g_t = -exp(A_log) * softplus(a_t + dt_bias),
                       a_t = in_proj_a(x_t)                      (transformers 5.17 semantics)
  Mamba-2 (nemotron_h): alpha_t = exp(-exp(A_log) * dt_t),  dt_t = softplus(dt_raw_t + dt_bias),
                       dt_raw_t = the last H columns of in_proj(x_t); NOT clamped (the mamba_ssm /
                       vLLM kernel semantics and replayssm's default); the fraction of steps with
                       dt_t < time_step_min (where transformers' torch path would clamp) is reported.

The values are captured with forward hooks on the transformers model (fp32 weights as stored),
running teacher-forced over the first --tokens bytes of each pg19-sample book.

    python3 data/models/decay_report.py data/models/gdn-tiny [--data data/pg19-sample]
            [--tokens 8192] [--json out.json] [--md out.md]

Per head: median, p10, p90 of alpha_t, fraction of steps with alpha_t > 0.99 and > 0.999, and
the median "memory" 1/(1 - alpha_t) in tokens. Summary: heads with median alpha >= 0.99 / 0.999.
"""
import argparse
import gzip
import json
import math
import os
import sys


def read_books(data_dir, n_tokens, max_books):
    """[(book id, bytes)] in metadata.csv order (PG-19 layout: test/<id>.txt[.gz])."""
    out = []
    ids = []
    meta = os.path.join(data_dir, "metadata.csv")
    if os.path.exists(meta):
        with open(meta, encoding="utf-8", errors="replace") as f:
            ids = [ln.split(",", 1)[0] for ln in f if ln.strip()]
    for bid in ids:
        for ext in (".txt.gz", ".txt"):
            p = os.path.join(data_dir, "test", bid + ext)
            if os.path.exists(p):
                with (gzip.open(p, "rb") if ext == ".txt.gz" else open(p, "rb")) as f:
                    out.append((bid, f.read()[:n_tokens]))
                break
        if len(out) >= max_books:
            break
    if not out:
        raise SystemExit(f"{data_dir}: no books found (metadata.csv + test/<id>.txt[.gz])")
    return out


def collect(model, books, torch, device):
    """{layer index: (kind, alpha [steps, heads] float64, dt-below-min fraction per head or None)}"""
    from train import ssm_mixers
    caps = {}
    hooks = []
    for li, mix, kind in ssm_mixers(model):
        if kind == "gdn":
            def f(_m, _i, out, li=li, mix=mix):
                a = out.float()[0]
                g = -torch.exp(mix.A_log.float()) * torch.nn.functional.softplus(a + mix.dt_bias.float())
                caps.setdefault(li, []).append(("gdn", torch.exp(g).double().cpu(), None))
            hooks.append(mix.in_proj_a.register_forward_hook(f))
        else:
            def f(_m, _i, out, li=li, mix=mix):
                raw = out.float()[0, :, -mix.num_heads:]
                dt = torch.nn.functional.softplus(raw + mix.dt_bias.float())
                alpha = torch.exp(-torch.exp(mix.A_log.float()) * dt)
                below = (dt < mix.time_step_limit[0]).double().cpu()
                caps.setdefault(li, []).append(("mamba2", alpha.double().cpu(), below))
            hooks.append(mix.in_proj.register_forward_hook(f))
    with torch.no_grad():
        for _, raw in books:
            ids = torch.tensor(list(raw), dtype=torch.long, device=device)[None]
            model(input_ids=ids, use_cache=False)
    for h in hooks:
        h.remove()
    res = {}
    for li, parts in caps.items():
        kind = parts[0][0]
        alpha = torch.cat([p[1] for p in parts], 0)
        below = torch.cat([p[2] for p in parts], 0).mean(0) if parts[0][2] is not None else None
        res[li] = (kind, alpha, below)
    return res


def summarize(res, torch):
    layers = []
    n_slow99 = n_slow999 = n_heads = 0
    for li in sorted(res):
        kind, alpha, below = res[li]
        heads = []
        for h in range(alpha.shape[1]):
            a = alpha[:, h]
            q = torch.quantile(a, torch.tensor([0.1, 0.5, 0.9], dtype=a.dtype))
            mem = 1.0 / (1.0 - a).clamp_min(1e-12)
            rec = {"head": h, "median": float(q[1]), "p10": float(q[0]), "p90": float(q[2]),
                   "frac_gt_0.99": float((a > 0.99).double().mean()),
                   "frac_gt_0.999": float((a > 0.999).double().mean()),
                   "median_memory_tokens": float(torch.quantile(mem, 0.5))}
            if below is not None:
                rec["frac_dt_below_time_step_min"] = float(below[h])
            heads.append(rec)
            n_heads += 1
            n_slow99 += rec["median"] >= 0.99
            n_slow999 += rec["median"] >= 0.999
        layers.append({"layer": li, "kind": kind, "steps": int(alpha.shape[0]), "heads": heads})
    return {"layers": layers, "n_heads": n_heads, "heads_median_ge_0.99": n_slow99,
            "heads_median_ge_0.999": n_slow999}


def markdown(rep):
    has_dt = any("frac_dt_below_time_step_min" in h for L in rep["layers"] for h in L["heads"])
    lines = [f"SSM heads: {rep['n_heads']}; median alpha >= 0.99: {rep['heads_median_ge_0.99']}; "
             f">= 0.999: {rep['heads_median_ge_0.999']} (over {rep['tokens_total']} positions of "
             f"pg19-sample books {', '.join(rep['books'])})", "",
             "| layer | kind | head | median alpha | p10 | p90 | frac > 0.99 | frac > 0.999 | median 1/(1-alpha) |"
             + (" dt < time_step_min |" if has_dt else ""),
             "|---|---|---|---|---|---|---|---|---|" + ("---|" if has_dt else "")]
    for L in rep["layers"]:
        for h in L["heads"]:
            row = (f"| {L['layer']} | {L['kind']} | {h['head']} | {h['median']:.5f} | {h['p10']:.5f} | "
                   f"{h['p90']:.5f} | {h['frac_gt_0.99']:.3f} | {h['frac_gt_0.999']:.3f} | "
                   f"{h['median_memory_tokens']:.1f} |")
            if has_dt:
                row += f" {h['frac_dt_below_time_step_min']:.4f} |"
            lines.append(row)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description="effective decay alpha per SSM head over sample text")
    ap.add_argument("model_dir")
    ap.add_argument("--data", default=None, help="PG-19 layout folder [data/pg19-sample]")
    ap.add_argument("--tokens", type=int, default=8192, help="bytes read from the start of each book")
    ap.add_argument("--books", type=int, default=4)
    ap.add_argument("--json", default=None, help="write the report as JSON here")
    ap.add_argument("--md", default=None, help="write the markdown table here")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    from train import patch_fast_paths, reload_fp32
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    here = os.path.dirname(os.path.abspath(__file__))
    data = a.data or os.path.normpath(os.path.join(here, "..", "pg19-sample"))
    books = read_books(data, a.tokens, a.books)
    patch_fast_paths(True)  # Mamba-2: the exact matmul form of the chunk scan (train.py); GDN unchanged
    dev = torch.device(a.device)
    model = reload_fp32(a.model_dir, torch).to(dev).eval()
    res = collect(model, books, torch, dev)
    rep = summarize(res, torch)
    rep.update(model=os.path.abspath(a.model_dir), model_type=model.config.model_type,
               books=[b for b, _ in books], tokens_per_book=[len(r) for _, r in books],
               tokens_total=sum(len(r) for _, r in books), data=data,
               semantics="GDN alpha=exp(-exp(A_log)*softplus(a+dt_bias)); Mamba-2 alpha=exp(-exp(A_log)*"
                         "softplus(dt_raw+dt_bias)) without the transformers torch-path clamp")
    md = markdown(rep)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f, indent=1)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

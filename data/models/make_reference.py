#!/usr/bin/env python3
"""make_reference.py — transformers reference outputs of a trained model on pg19-sample text.

Same `reference.safetensors` layout as tests/fixtures/models/*/ (made by
tests/fixtures/make_model_fixtures.py), so a test_model_parity-style check runs on the trained
weights. Run where torch + transformers 5.17 are installed (CPU is fine:
T = 256 positions take seconds):

    python3 data/models/make_reference.py data/models/gdn-tiny [--out DIR/reference.safetensors]
            [--data data/pg19-sample] [--book 244] [--offset 0] [--tokens 256] [--hidden-states]

Everything runs with transformers' OWN code paths (no train.py replacement), in fp32 on the
CPU, eager attention, on the model RELOADED from the directory (bf16 matrices upcast exactly):
  input_ids        [T]     bytes [offset, offset+T) of the book (stored as float, exact integers)
  logits           [T, V]  full-sequence forward (GDN: torch_chunk_gated_delta_rule; Mamba-2:
                           torch_forward chunk path, which clamps dt >= time_step_min)
  decode_logits    [T, V]  one token at a time with use_cache=True (cache path; Mamba-2 decode
                           branch does not clamp dt)
  layer_out.{j}    [T, d]  output of decoder layer / block j (forward hook)
  final_norm       [T, d]  output of the final norm
  hidden_states.{i} [T, d] only with --hidden-states (output_hidden_states=True)
__metadata__: versions, source text (book, offset, T), max |logits - decode_logits|, and for
nemotron_h the fraction of dt values below time_step_min per Mamba layer (where the two dt
semantics differ).
"""
import argparse
import gzip
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser(description="transformers reference logits of a model on pg19-sample text")
    ap.add_argument("model_dir")
    ap.add_argument("--out", default=None, help="[MODEL_DIR/reference.safetensors]")
    ap.add_argument("--data", default=None, help="PG-19 layout folder [data/pg19-sample]")
    ap.add_argument("--book", default="244")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=256, help="positions T (>= 256 for the issue's bar)")
    ap.add_argument("--hidden-states", action="store_true", help="also store hidden_states.{i}")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()

    import torch
    import transformers
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.set_float32_matmul_precision("highest")
    here = os.path.dirname(os.path.abspath(__file__))
    data = a.data or os.path.normpath(os.path.join(here, "..", "pg19-sample"))
    path = None
    for ext in (".txt.gz", ".txt"):
        p = os.path.join(data, "test", a.book + ext)
        if os.path.exists(p):
            path = p
            break
    if path is None:
        raise SystemExit(f"book {a.book} not found under {data}/test")
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        raw = f.read()[a.offset:a.offset + a.tokens]
    if len(raw) < a.tokens:
        raise SystemExit(f"book {a.book}: only {len(raw)} bytes from offset {a.offset}")
    T = a.tokens

    m = AutoModelForCausalLM.from_pretrained(a.model_dir, dtype=torch.float32, attn_implementation="eager").eval()
    fam = m.config.model_type
    ids = torch.tensor(list(raw), dtype=torch.long)[None]
    base = m.model
    layers = base.layers
    fnorm = getattr(base, "norm", None) or getattr(base, "norm_f")
    caps = {}

    def hook(key):
        def f(_mod, _inp, outp):
            o = outp[0] if isinstance(outp, tuple) else outp
            caps[key] = o.detach().float().clone()
        return f

    hs = [L.register_forward_hook(hook(f"layer_out.{j}")) for j, L in enumerate(layers)]
    hs.append(fnorm.register_forward_hook(hook("final_norm")))
    dts = {}
    for j, L in enumerate(layers):
        mix = getattr(L, "mixer", None)
        if mix is not None and type(mix).__name__.endswith("Mamba2Mixer"):
            def fdt(_mod, _inp, outp, j=j, mix=mix):
                dts[j] = torch.nn.functional.softplus(outp[..., -mix.num_heads:].float() + mix.dt_bias.float())
            hs.append(mix.in_proj.register_forward_hook(fdt))
    with torch.no_grad():
        full = m(input_ids=ids, output_hidden_states=a.hidden_states, use_cache=False)
    for h in hs:
        h.remove()
    logits = full.logits[0].float()

    dec = torch.empty_like(logits)
    past = None
    with torch.no_grad():
        for t in range(T):
            o = m(input_ids=ids[:, t:t + 1], past_key_values=past, use_cache=True)
            past = o.past_key_values
            dec[t] = o.logits[0, -1].float()
    dmax = float((dec - logits).abs().max())
    mx = float(logits.abs().max())
    clamp = {}
    tmin = getattr(m.config, "time_step_min", None)
    for j, dt in dts.items():
        clamp[str(j)] = float((dt < tmin).float().mean())

    tensors = {"input_ids": ids[0].float(), "logits": logits.contiguous(), "decode_logits": dec.contiguous(),
               "final_norm": caps["final_norm"][0].contiguous()}
    for j in range(len(layers)):
        tensors[f"layer_out.{j}"] = caps[f"layer_out.{j}"][0].contiguous()
    if a.hidden_states:
        for i, h in enumerate(full.hidden_states):
            tensors[f"hidden_states.{i}"] = h[0].float().contiguous()
    lp = torch.log_softmax(logits[:-1].double(), -1)
    nll = -lp.gather(-1, ids[0, 1:, None])[:, 0]
    meta = {
        "torch": torch.__version__, "transformers": transformers.__version__, "T": str(T), "model_type": fam,
        "source": f"{os.path.relpath(path, os.path.dirname(data))} bytes [{a.offset}, {a.offset + T})",
        "max_abs_decode_minus_full": f"{dmax:.6e}", "max_abs_logit": f"{mx:.6e}",
        "dt_below_time_step_min_fraction": json.dumps(clamp),
        "bpb_full_positions_0_to_T-2": f"{float(nll.mean()) / 0.6931471805599453:.6f}",
        "dtype_compute": "float32 on CPU, eager attention, transformers' own torch paths",
    }
    out = a.out or os.path.join(a.model_dir, "reference.safetensors")
    save_file(tensors, out, metadata=meta)
    print(f"{out}: T={T} ({meta['source']}), max|logit| {mx:.3f}, max|decode-full| {dmax:.3e}, "
          f"bpb {meta['bpb_full_positions_0_to_T-2']}, dt<t_min {clamp}, {os.path.getsize(out)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""train.py — train the two bundled byte-level hybrids (data/models/gdn-tiny, data/models/mamba2-tiny).

A tool, not part of the library (CI has no Python). It builds the models with the transformers
model classes of the paper's families, exactly as tests/fixtures/make_model_fixtures.py does
(Qwen3_5TextConfig + Qwen3_5ForCausalLM, NemotronHConfig + NemotronHForCausalLM), trains them on
../shared/data/gutenberg-train/ under a wall-clock budget and writes a Hugging Face directory that
replayssm loads with the same code path as the real checkpoints.

    python3 data/models/train.py --model gdn-tiny    --minutes 7 --out /tmp/gdn-tiny
    python3 data/models/train.py --model mamba2-tiny --minutes 7 --out /tmp/mamba2-tiny
    python3 data/models/train.py --model gdn-tiny --smoke --out /tmp/smoke-gdn     # CPU, seconds
    python3 data/models/train.py --model gdn-tiny --random-init --out /tmp/rand    # export init only

Recipe (README.md beside this file has the reasoning and the numbers):
  * byte vocabulary (256), realistic SSM head sizes (GDN d_k = d_v = 128; Mamba-2 head dim 64,
    d_state 128, 2 groups), GQA attention with head dim 64; both models carry the same SSM
    state per sequence (12 GDN heads x 128 x 128 = 24 Mamba-2 heads x 64 x 128 = 196608 values);
  * decay init the Mamba-2 / FLA way for BOTH families, with the dt range widened to slow heads:
    dt log-uniform in [1e-5, 1e-1] (Mamba-2/FLA: [1e-3, 1e-1]) stored as
    dt_bias = softplus^-1(dt), A uniform in [1, 16] stored as A_log = log(A); drawn stratified
    (one stratum per SSM head of the model) with small dt paired with small A (--decay-coupling),
    so that a model with few heads still gets a few very slow heads -- the marginals are exactly
    the stated ones. Why [1e-5, 1e-1]: with [1e-3, 1e-1] the slowest heads of the briefly trained
    models had memories 1/(1-alpha) of 300-800 steps, so a shared checkpoint's accumulated error
    saturates within ~1/(1-alpha^L) flushes, i.e. the first few thousand positions, and KL stops
    growing with position (data/models/README.md "Why the recipe changed"); the paper's 4B-120B models, pretrained on
    trillions of tokens, have heads with memories of 10^4-10^5 steps, which a 7-minute run cannot
    grow, so the recipe starts some heads there (A dt down to ~1e-5);
  * curriculum of sequence lengths by time fraction, final phase >= 8192 (--phases), constant
    tokens per optimizer step (--batch-tokens, split in micro-batches of --micro-tokens);
  * AdamW (betas 0.9/0.95, weight decay on matrices only), linear warmup, cosine decay to 10 %
    over the time budget (progress = elapsed / budget, or step / --steps when --steps is given),
    gradient clipping at 1.0, bf16 autocast on CUDA with fp32 master weights, fixed seed (init,
    data order: batch k is a function of (seed, k) only);
  * the SSM cores run in fp32 with autocast off (transformers' torch paths already cast their
    inputs to fp32; we make sure their matmuls are not re-cast to bf16). Mamba-2: transformers'
    torch fallback `mamba2_chunk_scan` materialises [b, chunks, l, l, heads, d_state] tensors
    (GBs per sequence at 8K), so training and the long validation replace it with
    `ssd_chunk_scan` below: the same function (same signature, same dt softplus + clamp, D skip)
    computed by batched matmuls. It is checked against transformers' own function (values and
    gradients) at start-up on the training device; any mismatch aborts. GDN uses transformers'
    `torch_chunk_gated_delta_rule` itself (only autocast is switched off around it).
    make_reference.py uses the unmodified transformers paths throughout.
  * validation bits per byte on held-out gutenberg-train novels (never pg19-sample), during
    training at 8192 positions and at the end on the EXPORTED (bf16-rounded) weights at
    8192 and 32768 positions by position bucket;
  * export: config.json + model.safetensors, matrices BF16, 1-D tensors (A_log, dt_bias, D,
    norms, conv bias) F32; every file <= 16 MiB (checked); plus train_log.json (loss curve).
"""
import argparse
import gzip
import json
import math
import os
import shutil
import sys
import time

MIB = 1024 * 1024

# ---- model presets -----------------------------------------------------------------------------
# Config choices follow tests/fixtures/make_model_fixtures.py (same classes, same keys), scaled up.
PRESETS = {
    # qwen3_5_text: GDN + gated attention, 3:1 pattern, 8 layers
    "gdn-tiny": dict(
        family="qwen3_5_text", hidden_size=256, intermediate_size=768, num_hidden_layers=8,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64,
        linear_num_key_heads=1, linear_num_value_heads=2, linear_key_head_dim=128, linear_value_head_dim=128,
        rope_theta=1000.0, partial_rotary_factor=0.25, fixed_slow_heads=4),
    # nemotron_h: Mamba-2 + MLP + attention, Nemotron-H style pattern
    "mamba2-tiny": dict(
        family="nemotron_h", hidden_size=256, intermediate_size=1024, hybrid_override_pattern="M-M-M*-M-M-M*-",
        num_attention_heads=4, num_key_value_heads=2, head_dim=64,
        mamba_num_heads=4, mamba_head_dim=64, n_groups=2, ssm_state_size=128, fixed_slow_heads=4,
        fixed_mamba_dt=0.01),
    # CPU smoke variants: same head sizes (the C code paths are the same), fewer/narrower layers
    "gdn-smoke": dict(
        family="qwen3_5_text", hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=2, num_key_value_heads=1, head_dim=64,
        linear_num_key_heads=1, linear_num_value_heads=2, linear_key_head_dim=128, linear_value_head_dim=128,
        rope_theta=1000.0, partial_rotary_factor=0.25),
    "mamba2-smoke": dict(
        family="nemotron_h", hidden_size=64, intermediate_size=128, hybrid_override_pattern="M-M*-",
        num_attention_heads=2, num_key_value_heads=1, head_dim=32,
        mamba_num_heads=4, mamba_head_dim=64, n_groups=2, ssm_state_size=128),
}


def log(*a):
    print(*a, flush=True)


def build_config(preset, attn_impl="sdpa", **over):
    """(config, model class) for a preset; `over` overrides preset keys."""
    p = dict(PRESETS[preset])
    p.update(over)
    fam = p.pop("family")
    if fam == "qwen3_5_text":
        from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
        n = p["num_hidden_layers"]
        cfg = Qwen3_5TextConfig(
            vocab_size=256, hidden_size=p["hidden_size"], intermediate_size=p["intermediate_size"],
            num_hidden_layers=n, num_attention_heads=p["num_attention_heads"],
            num_key_value_heads=p["num_key_value_heads"], head_dim=p["head_dim"], hidden_act="silu",
            rms_norm_eps=1e-6, tie_word_embeddings=True, max_position_embeddings=131072,
            linear_conv_kernel_dim=4, linear_key_head_dim=p["linear_key_head_dim"],
            linear_value_head_dim=p["linear_value_head_dim"],
            linear_num_key_heads=p["linear_num_key_heads"], linear_num_value_heads=p["linear_num_value_heads"],
            layer_types=["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)],
            rope_parameters={"rope_type": "default", "rope_theta": p["rope_theta"],
                             "partial_rotary_factor": p["partial_rotary_factor"],
                             "mrope_section": [3, 3, 2], "mrope_interleaved": True},
            initializer_range=0.02, bos_token_id=None, eos_token_id=None, pad_token_id=None)
        cls = Qwen3_5ForCausalLM
    elif fam == "nemotron_h":
        from transformers import NemotronHConfig, NemotronHForCausalLM
        cfg = NemotronHConfig(
            vocab_size=256, hidden_size=p["hidden_size"], hybrid_override_pattern=p["hybrid_override_pattern"],
            num_attention_heads=p["num_attention_heads"], num_key_value_heads=p["num_key_value_heads"],
            head_dim=p["head_dim"], intermediate_size=p["intermediate_size"], mlp_hidden_act="relu2",
            ssm_state_size=p["ssm_state_size"], mamba_num_heads=p["mamba_num_heads"],
            mamba_head_dim=p["mamba_head_dim"], n_groups=p["n_groups"], conv_kernel=4, chunk_size=128,
            use_conv_bias=True,
            # time_step_min: transformers' torch path clamps dt >= time_step_min, the mamba_ssm/vLLM
            # kernels (and replayssm's default) do not. It must stay below the init range (dt down
            # to 1e-5) so the clamp never binds and training and kernel semantics agree;
            # decay_report.py measures the fraction of dt below it.
            time_step_min=p.get("time_step_min", 1e-6), time_step_max=0.1, layer_norm_epsilon=1e-5, tie_word_embeddings=False,
            use_mamba_kernels=False, initializer_range=0.02, max_position_embeddings=131072)
        cls = NemotronHForCausalLM
    else:
        raise ValueError(fam)
    cfg._attn_implementation = attn_impl
    return cfg, cls


def family_of(model):
    return getattr(model.config, "model_type", "?")


def ssm_mixers(model):
    """[(layer index, mixer module, kind)] of the SSM mixers: kind 'gdn' or 'mamba2'."""
    out = []
    for i, layer in enumerate(model.model.layers):
        for attr in ("linear_attn", "mixer"):
            m = getattr(layer, attr, None)
            if m is None:
                continue
            name = type(m).__name__
            if name.endswith("GatedDeltaNet"):
                out.append((i, m, "gdn"))
            elif name.endswith("Mamba2Mixer"):
                out.append((i, m, "mamba2"))
    return out


def init_decay(model, seed, torch, dt_range=(1e-5, 1e-1), A_range=(1.0, 16.0), coupling="sorted"):
    """Mamba-2 / FLA decay init for every SSM head of the model, stratified: with n heads, dt's
    log-uniform variate and A's uniform variate each take one value from each of n equal-probability
    strata (uniform within the stratum), so the marginals are exactly dt ~ logU[dt_range] and
    A ~ U[A_range]. coupling "sorted": stratum i of dt goes with stratum i of A (small dt with small
    A), which spreads A*dt, hence the decays alpha = exp(-A dt), over the widest range -- a model
    with few heads gets some very slow ones (gdn-tiny: 0.998, 0.995, 0.99, ...) and some very fast;
    "independent": the strata of A are shuffled against those of dt. The (dt, A) pairs are then
    shuffled over the heads of all layers."""
    gen = torch.Generator().manual_seed(seed + 17)
    mix = ssm_mixers(model)
    sizes = [m.dt_bias.numel() for _, m, _ in mix]
    n = sum(sizes)

    def strat():
        return (torch.arange(n, dtype=torch.float64) + torch.rand(n, generator=gen, dtype=torch.float64)) / n

    lo, hi = math.log(dt_range[0]), math.log(dt_range[1])
    dt = torch.exp(strat() * (hi - lo) + lo)
    uA = strat()
    if coupling == "independent":
        uA = uA[torch.randperm(n, generator=gen)]
    elif coupling != "sorted":
        raise ValueError(coupling)
    A = A_range[0] + (A_range[1] - A_range[0]) * uA
    perm = torch.randperm(n, generator=gen)
    dt, A = dt[perm], A[perm]
    inv_dt = dt + torch.log(-torch.expm1(-dt))  # softplus^-1
    k = 0
    with torch.no_grad():
        for (_, m, _), s in zip(mix, sizes):
            m.dt_bias.copy_(inv_dt[k:k + s].to(m.dt_bias.dtype))
            m.A_log.copy_(torch.log(A[k:k + s]).to(m.A_log.dtype))
            k += s


def fix_slow_heads(model, n, torch, mamba_dt=None):
    """Freeze the decays of the n slowest SSM heads at their initial values (RetNet-style fixed
    multi-scale decays): the head's gate input weights are zeroed (GDN: row h of in_proj_a; Mamba-2:
    the dt row of in_proj) and gradient hooks keep them, A_log[h] and dt_bias[h] where they are, so
    alpha_h = exp(-exp(A_log) softplus(dt_bias)) on every token. Why: a few minutes of training at
    <= 8K context has no use for memories of 10^4-10^5 steps and moves every head faster (run 2
    of data/models/README.md: with dt down to 1e-5, gdn-tiny's slowest median alpha ended at
    0.99955), while the paper's pretrained models keep such heads, and the shared-checkpoint error
    growth the bundled models are meant to show lives in them. The model stays an ordinary checkpoint of its family (zero weights, no new
    tensors). Returns [(layer, head, alpha)] of the frozen heads."""
    cand = []
    for i, m, kind in ssm_mixers(model):
        A = torch.exp(m.A_log.detach().double())
        dt = torch.nn.functional.softplus(m.dt_bias.detach().double())
        for h in range(m.dt_bias.numel()):
            cand.append((float(A[h] * dt[h]), i, h, m, kind))
    cand.sort(key=lambda c: c[0])
    chosen = cand[:n]
    if mamba_dt is not None:
        # Mamba-2 feeds the state dt * x B^T: a head with A = 1 and dt = 1e-5 is slow but ~100x
        # quieter than a fast head (steady-state size ~ sqrt(dt / A)), so the model cannot use it
        # and its checkpoint error cannot matter. The same alpha with dt = mamba_dt and
        # A = (A dt) / mamba_dt (small A, as pretrained Mamba-2 models learn) is slow AND loud.
        with torch.no_grad():
            for adt, i, h, m, kind in chosen:
                if kind != "mamba2":
                    continue
                d = torch.tensor(mamba_dt, dtype=torch.float64)
                m.dt_bias[h] = (d + torch.log(-torch.expm1(-d))).to(m.dt_bias.dtype)  # softplus^-1
                m.A_log[h] = math.log(adt / mamba_dt)
    by_mixer = {}
    for adt, i, h, m, kind in chosen:
        by_mixer.setdefault(id(m), (m, kind, []))[2].append(h)
    with torch.no_grad():
        for m, kind, heads in by_mixer.values():
            nh = m.dt_bias.numel()
            mask = torch.ones(nh)
            mask[heads] = 0.0
            if kind == "gdn":
                w = m.in_proj_a.weight                      # [num_v_heads, hidden]
                assert w.shape[0] == nh, w.shape
                rows = torch.tensor(heads)
            else:
                w = m.in_proj.weight                        # [gate | xBC | dt, hidden], dt last
                assert getattr(m.in_proj, "bias", None) is None, "Mamba-2 in_proj with bias"
                rows = torch.tensor([w.shape[0] - nh + h for h in heads])
            w[rows] = 0.0
            wmask = torch.ones(w.shape[0], 1)
            wmask[rows] = 0.0
            w.register_hook(lambda g, mk=wmask: g * mk.to(g.device, g.dtype))
            m.A_log.register_hook(lambda g, mk=mask: g * mk.to(g.device, g.dtype))
            m.dt_bias.register_hook(lambda g, mk=mask: g * mk.to(g.device, g.dtype))
    return [(i, h, round(math.exp(-adt), 7)) for adt, i, h, _, _ in chosen]


def static_alphas(model, torch):
    """Input-independent part of each head's decay: exp(-exp(A_log) * softplus(dt_bias))
    (the decay at zero gate input a / dt_raw)."""
    out = {}
    for i, m, kind in ssm_mixers(model):
        A = torch.exp(m.A_log.detach().float().cpu())
        dt = torch.nn.functional.softplus(m.dt_bias.detach().float().cpu())
        out[str(i)] = [round(float(x), 6) for x in torch.exp(-A * dt)]
    return out


# ---- fast, exact replacement of transformers' torch Mamba-2 chunk scan --------------------------

def ssd_chunk_scan(hidden_states, dt, A, B, C, chunk_size, D=None, dt_bias=None, initial_states=None,
                   dt_softplus=False, dt_limit=(0.0, float("inf")), return_final_states=False, **kwargs):
    """Same contract as transformers 5.17 nemotron_h `mamba2_chunk_scan` (torch fallback):
    hidden_states [b, T, h, p], dt [b, T, h] (raw), A [h] (negative), B, C [b, T, g, n], D [h];
    dt = clamp(softplus(dt + dt_bias), dt_limit); output [b, T, h, p] fp32 (+ final state
    [b, h, p, n]). The SSD chunked algorithm (Mamba-2 paper, "ssd_minimal") written as batched
    matmuls instead of transformers' broadcast-multiply-sum, in fp32 with autocast off."""
    import torch
    import torch.nn.functional as F
    from transformers.models.nemotron_h.modeling_nemotron_h import segment_sum
    with torch.autocast(device_type=hidden_states.device.type, enabled=False):
        b, T, h, p = hidden_states.shape
        g = B.shape[2]
        n = B.shape[3]
        dt = dt.float()
        if dt_bias is not None:
            dt = dt + dt_bias.float()
        if dt_softplus:
            dt = F.softplus(dt)
        dt = torch.clamp(dt, min=dt_limit[0], max=dt_limit[1])
        x = hidden_states.float()
        Bh = B.float().repeat_interleave(h // g, dim=2)
        Ch = C.float().repeat_interleave(h // g, dim=2)
        pad = (chunk_size - T % chunk_size) % chunk_size
        xdt = x * dt[..., None]
        Adt = A.float()[None, None, :] * dt                       # [b, T, h]
        if pad:
            xdt = F.pad(xdt, (0, 0, 0, 0, 0, pad))
            Bh = F.pad(Bh, (0, 0, 0, 0, 0, pad))
            Ch = F.pad(Ch, (0, 0, 0, 0, 0, pad))
            Adt = F.pad(Adt, (0, 0, 0, pad))
        c = (T + pad) // chunk_size
        L = chunk_size
        xdt = xdt.reshape(b, c, L, h, p)
        Bh = Bh.reshape(b, c, L, h, n)
        Ch = Ch.reshape(b, c, L, h, n)
        Adt = Adt.reshape(b, c, L, h).permute(0, 3, 1, 2)          # [b, h, c, L]
        Acs = torch.cumsum(Adt, dim=-1)
        Lmat = torch.exp(segment_sum(Adt))                         # [b, h, c, L(t), L(s)]
        # 1. intra-chunk (diagonal blocks): y_t = sum_s (C_t . B_s) L_ts xdt_s
        Cb = Ch.permute(0, 3, 1, 2, 4)                             # [b, h, c, L, n]
        Bb = Bh.permute(0, 3, 1, 2, 4)
        Xb = xdt.permute(0, 3, 1, 2, 4)                            # [b, h, c, L, p]
        M = (Cb @ Bb.transpose(-1, -2)) * Lmat                     # [b, h, c, L, L]
        Y = M @ Xb                                                 # [b, h, c, L, p]
        # 2. chunk states: S_c = sum_s exp(Acs_end - Acs_s) xdt_s B_s^T      [b, h, c, p, n]
        decay_states = torch.exp(Acs[..., -1:] - Acs)              # [b, h, c, L]
        states = (Xb * decay_states[..., None]).transpose(-1, -2) @ Bb
        # 3. inter-chunk recurrence over chunk boundaries
        if initial_states is not None:
            init0 = initial_states.float()[:, :, None]             # [b, h, 1, p, n]
        else:
            init0 = torch.zeros_like(states[:, :, :1])
        states = torch.cat([init0, states], dim=2)                 # [b, h, c+1, p, n]
        decay_chunk = torch.exp(segment_sum(F.pad(Acs[..., -1], (1, 0))))  # [b, h, c+1, c+1]
        new_states = (decay_chunk @ states.reshape(b, h, c + 1, p * n)).reshape(b, h, c + 1, p, n)
        states, final_state = new_states[:, :, :-1], new_states[:, :, -1]
        # 4. state -> output: y_t += exp(Acs_t) C_t . S_{c-1}
        Y = Y + (Cb @ states.transpose(-1, -2)) * torch.exp(Acs)[..., None]
        Y = Y.permute(0, 2, 3, 1, 4).reshape(b, c * L, h, p)[:, :T]
        if D is not None:
            Y = Y + D.float()[:, None] * x
        if return_final_states:
            return Y, final_state
        return Y


def fp32_core(fn):
    """Wrap an SSM core so that autocast does not re-cast its (fp32) matmuls to bf16."""
    import functools

    import torch

    @functools.wraps(fn)
    def w(*a, **k):
        dev = a[0].device.type if a and hasattr(a[0], "device") else "cpu"
        with torch.autocast(device_type=dev, enabled=False):
            return fn(*a, **k)
    return w


_PATCHED = {}


def patch_fast_paths(enable=True):
    """Route transformers' GDN chunk core through fp32_core and the Mamba-2 chunk scan through
    ssd_chunk_scan (enable=True), or restore transformers' own functions (enable=False)."""
    import transformers.models.nemotron_h.modeling_nemotron_h as mn
    import transformers.models.qwen3_5.modeling_qwen3_5 as mq
    if not _PATCHED:
        _PATCHED["gdn"] = mq.torch_chunk_gated_delta_rule
        _PATCHED["mamba"] = mn.mamba2_chunk_scan
    if enable:
        mq.torch_chunk_gated_delta_rule = fp32_core(_PATCHED["gdn"])
        mn.mamba2_chunk_scan = ssd_chunk_scan
    else:
        mq.torch_chunk_gated_delta_rule = _PATCHED["gdn"]
        mn.mamba2_chunk_scan = _PATCHED["mamba"]


def check_ssd(torch, device, seed=5):
    """ssd_chunk_scan vs transformers' own mamba2_chunk_scan on random inputs (values and input
    gradients), incl. padding (T not a multiple of the chunk) and an initial state. Returns the
    worst relative difference; both run in fp32 on `device` (TF32 off)."""
    import transformers.models.nemotron_h.modeling_nemotron_h as mn
    ref_fn = _PATCHED.get("mamba", mn.mamba2_chunk_scan)
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator(device="cpu").manual_seed(seed)
    b, T, h, p, gr, n, cs = 2, 100, 4, 16, 2, 32, 32
    mk = lambda *s, sc=1.0: (torch.randn(*s, generator=g) * sc).to(device).requires_grad_(True)
    x, dt, B, C = mk(b, T, h, p), mk(b, T, h), mk(b, T, gr, n), mk(b, T, gr, n)
    A = -torch.exp(torch.rand(h, generator=g) * 2.7).to(device)
    D, dtb = mk(h), (torch.randn(h, generator=g) - 3.0).to(device)
    s0 = torch.randn(b, h, p, n, generator=g).to(device)
    worst = 0.0
    for init in (None, s0):
        kw = dict(chunk_size=cs, D=D, dt_bias=dtb, dt_softplus=True, dt_limit=(1e-4, float("inf")),
                  initial_states=init, return_final_states=True)
        outs = []
        for fn in (ref_fn, ssd_chunk_scan):
            y, fs = fn(x, dt, A, B, C, **kw)
            gy = torch.autograd.grad((y * y).sum() + fs.sum(), (x, dt, B, C, D))
            outs.append([y, fs] + list(gy))
        for r, t in zip(*outs):
            worst = max(worst, float((r - t).detach().abs().max() / r.detach().abs().max().clamp_min(1e-30)))
    torch.backends.cuda.matmul.allow_tf32 = old
    return worst


# ---- data ----------------------------------------------------------------------------------------

def load_books(data_dir, n_val):
    """Sorted .txt.gz books of gutenberg-train; n_val evenly spaced ones are held out."""
    names = sorted(f for f in os.listdir(data_dir) if f.endswith(".txt.gz") or f.endswith(".txt"))
    if len(names) < n_val + 1:
        raise SystemExit(f"{data_dir}: {len(names)} books, need > {n_val}")
    val_idx = {int((i + 0.5) * len(names) / n_val) for i in range(n_val)} if n_val else set()
    train, val = [], []
    for i, nm in enumerate(names):
        path = os.path.join(data_dir, nm)
        with (gzip.open(path, "rb") if nm.endswith(".gz") else open(path, "rb")) as f:
            raw = f.read()
        (val if i in val_idx else train).append((nm, raw))
    return train, val


class Sampler:
    """Random windows of the concatenated training books; window k of step s is a function of
    (seed, s) only, so a run with the same seed and steps sees the same data."""

    def __init__(self, corpus_u8, seed, torch, device):
        self.torch = torch
        self.data = corpus_u8.to(device)
        self.n = corpus_u8.numel()
        self.seed = seed

    def batch(self, step, micro, bsz, seq):
        torch = self.torch
        g = torch.Generator().manual_seed(self.seed * 1000003 + step * 131 + micro)
        starts = torch.randint(0, self.n - seq - 1, (bsz,), generator=g).to(self.data.device)
        idx = starts[:, None] + torch.arange(seq + 1, device=self.data.device)[None, :]
        w = self.data[idx].long()
        return w[:, :-1], w[:, 1:]


def val_windows(val_books, seq, count, torch):
    """`count` windows of seq+1 bytes at evenly spaced offsets across the held-out books."""
    out = []
    per = max(1, -(-count // max(1, len(val_books))))
    for _, raw in val_books:
        if len(raw) < seq + 2:
            continue
        for j in range(per):
            off = int((j + 0.5) * (len(raw) - seq - 1) / per)
            out.append(torch.frombuffer(bytearray(raw[off:off + seq + 1]), dtype=torch.uint8).long())
            if len(out) >= count:
                break
        if len(out) >= count:
            break
    return torch.stack(out) if out else None


def eval_bpb(model, windows, torch, device, batch, buckets=None, autocast=False):
    """Bits per byte of next-byte prediction over windows [N, seq+1]; optional per-position
    buckets [(lo, hi)] (positions = index of the predicted byte within the window)."""
    model.eval()
    seq = windows.shape[1] - 1
    nll_pos = torch.zeros(seq, dtype=torch.float64)
    with torch.no_grad():
        for i in range(0, windows.shape[0], batch):
            w = windows[i:i + batch].to(device)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
                logits = model(input_ids=w[:, :-1], use_cache=False).logits
            lp = torch.log_softmax(logits.float(), dim=-1)
            nll = -lp.gather(-1, w[:, 1:, None])[..., 0]
            nll_pos += nll.double().sum(0).cpu()
    model.train()
    n = windows.shape[0]
    res = {"bpb": float(nll_pos.sum() / (n * seq) / math.log(2)), "positions": seq, "windows": n}
    if buckets:
        res["buckets"] = {}
        for lo, hi in buckets:
            if lo >= seq:
                continue
            hi2 = min(hi, seq)
            res["buckets"][f"{lo}-{hi2}"] = float(nll_pos[lo:hi2].sum() / (n * (hi2 - lo)) / math.log(2))
    return res


# ---- export --------------------------------------------------------------------------------------

def export_hf(model, out_dir, torch):
    """config.json + model.safetensors: matrices (ndim >= 2) BF16, 1-D tensors F32."""
    import copy
    m = copy.deepcopy(model).to("cpu").float()
    with torch.no_grad():
        for _, prm in m.named_parameters():
            if prm.ndim >= 2:
                prm.data = prm.data.to(torch.bfloat16)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    m.save_pretrained(out_dir, safe_serialization=True)
    for f in os.listdir(out_dir):
        if f.startswith("generation_config"):
            os.remove(os.path.join(out_dir, f))
    sizes = {f: os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir)}
    big = {f: s for f, s in sizes.items() if s > 16 * MIB}
    if big:
        raise SystemExit(f"export {out_dir}: files over 16 MiB: {big}")
    return sizes


def reload_fp32(out_dir, torch, attn="sdpa"):
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32, attn_implementation=attn)


# ---- training ------------------------------------------------------------------------------------

def parse_phases(s):
    """'1024:0.4,4096:0.3,8192:0.3' -> [(seq, end fraction)] with cumulative ends."""
    out, acc = [], 0.0
    for part in s.split(","):
        seq, frac = part.split(":")
        acc += float(frac)
        out.append((int(seq), acc))
    if abs(acc - 1.0) > 1e-6:
        raise SystemExit(f"--phases fractions sum to {acc}, not 1")
    out[-1] = (out[-1][0], float("inf"))  # the last phase runs to the end whatever the rounding
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, choices=sorted(PRESETS))
    ap.add_argument("--out", required=True, help="output HF directory (replaced)")
    ap.add_argument("--data", default=None, help="gutenberg-train folder [../shared/data/gutenberg-train]")
    ap.add_argument("--minutes", type=float, default=7.0, help="training wall-clock budget (excl. final eval/export)")
    ap.add_argument("--steps", type=int, default=0, help="fixed number of steps (progress by step; overrides time)")
    ap.add_argument("--phases", default="1024:0.3,4096:0.3,16384:0.4", help="seq:fraction,... (final >= 8192)")
    ap.add_argument("--batch-tokens", type=int, default=131072, help="tokens per optimizer step")
    ap.add_argument("--micro-tokens", type=int, default=65536, help="tokens per micro-batch (grad accumulation)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup-steps", type=int, default=100)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--val-books", type=int, default=3)
    ap.add_argument("--val-windows", type=int, default=16)
    ap.add_argument("--val-every-s", type=float, default=60.0)
    ap.add_argument("--long-eval", type=int, default=32768, help="positions of the final long validation (0: off)")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--device", default=None, help="cuda or cpu [cuda if available]")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch default)")
    ap.add_argument("--smoke", action="store_true", help="tiny CPU run: few steps, short sequences")
    ap.add_argument("--random-init", action="store_true", help="export the initialised model, no training")
    ap.add_argument("--no-fast-paths", action="store_true", help="use transformers' torch paths unmodified")
    ap.add_argument("--dt-range", default="1e-5,1e-1", help="decay init: dt log-uniform in [lo, hi]")
    ap.add_argument("--fixed-slow-heads", type=int, default=-1,
                    help="freeze the decays of the N slowest SSM heads at init (fix_slow_heads) [-1: preset]")
    ap.add_argument("--fixed-mamba-dt", type=float, default=-1.0,
                    help="Mamba-2 fixed slow heads: dt of the frozen heads, A = (A dt)/dt (0: keep the init pair) [-1: preset]")
    ap.add_argument("--A-range", default="1,16", help="decay init: A uniform in [lo, hi]")
    ap.add_argument("--decay-coupling", default="sorted", choices=["sorted", "independent"],
                    help="pairing of the dt and A strata (see init_decay)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a preset key (value parsed as JSON, else string), e.g. --set mamba_num_heads=6")
    a = ap.parse_args()

    import numpy  # noqa: F401  (transformers needs it; fail early)
    import torch
    import transformers

    here = os.path.dirname(os.path.abspath(__file__))
    data_dir = a.data or os.path.normpath(os.path.join(here, "..", "..", "..", "shared", "data", "gutenberg-train"))
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.smoke:
        a.phases = "256:0.5,512:0.5" if a.phases == ap.get_default("phases") else a.phases
        a.batch_tokens = min(a.batch_tokens, 2048)
        a.micro_tokens = min(a.micro_tokens, 1024)
        a.steps = a.steps or 6
        a.warmup_steps = min(a.warmup_steps, 2)
        a.val_windows = min(a.val_windows, 2)
        a.long_eval = min(a.long_eval, 1024) if a.long_eval else 0
        a.log_every = 1
        a.val_every_s = 1e9
    phases = parse_phases(a.phases)
    torch.manual_seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 SSM cores stay fp32
    torch.backends.cudnn.allow_tf32 = False
    t_start = time.time()
    log(f"train.py {a.model}: torch {torch.__version__}, transformers {transformers.__version__}, device {dev}"
        + (f" ({torch.cuda.get_device_name(dev)})" if dev.type == "cuda" else f" ({torch.get_num_threads()} threads)"))

    if not a.no_fast_paths:
        patch_fast_paths(True)
        err = check_ssd(torch, dev)
        log(f"ssd_chunk_scan vs transformers mamba2_chunk_scan (values+grads, fp32): worst rel diff {err:.2e}")
        if not err < 1e-4:
            raise SystemExit("ssd_chunk_scan does not match transformers' mamba2_chunk_scan: refusing to train")

    over = {}
    for kv in a.set:
        k, v = kv.split("=", 1)
        if k not in PRESETS[a.model]:
            raise SystemExit(f"--set {k}: not a key of preset {a.model}: {sorted(PRESETS[a.model])}")
        try:
            over[k] = json.loads(v)
        except ValueError:
            over[k] = v
    cfg, cls = build_config(a.model, **over)
    model = cls(cfg).float()
    init_decay(model, a.seed, torch, tuple(float(v) for v in a.dt_range.split(",")),
               tuple(float(v) for v in a.A_range.split(",")), a.decay_coupling)
    n_fixed = a.fixed_slow_heads if a.fixed_slow_heads >= 0 else PRESETS[a.model].get("fixed_slow_heads", 0)
    mdt = PRESETS[a.model].get("fixed_mamba_dt") if a.fixed_mamba_dt < 0 else (a.fixed_mamba_dt or None)
    fixed = fix_slow_heads(model, n_fixed, torch, mdt) if n_fixed > 0 else []
    if fixed:
        log(f"fixed slow heads (layer, head, alpha): {fixed}")
    n_params = sum(p.numel() for p in model.parameters())
    alpha0 = static_alphas(model, torch)
    log(f"params {n_params:,}; layer types {getattr(cfg, 'layer_types', None) or getattr(cfg, 'layers_block_type', None)}")
    log("initial static alphas per SSM layer:", json.dumps(alpha0))
    train_log = {
        "model": a.model, "family": cfg.model_type, "args": vars(a), "n_params": n_params,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "python": sys.version.split()[0]},
        "device": str(dev) + (f" {torch.cuda.get_device_name(dev)}" if dev.type == "cuda" else ""),
        "fast_paths": not a.no_fast_paths, "initial_static_alpha": alpha0, "fixed_slow_heads": fixed, "steps": [], "val": [],
    }

    if a.random_init:
        sizes = export_hf(model, a.out, torch)
        train_log["export_sizes"] = sizes
        with open(os.path.join(a.out, "train_log.json"), "w") as f:
            json.dump(train_log, f, indent=1)
        log(f"random-init export: {a.out} {sizes}")
        return 0

    train_books, val_books = load_books(data_dir, a.val_books)
    sep = b"\n\n\n"
    corpus = sep.join(raw for _, raw in train_books)
    train_log["data"] = {"dir": data_dir, "train_books": len(train_books), "train_bytes": len(corpus),
                         "val_books": [nm for nm, _ in val_books],
                         "val_bytes": sum(len(r) for _, r in val_books)}
    log(f"data: {len(train_books)} train books ({len(corpus):,} bytes), val {[nm for nm, _ in val_books]}")
    sampler = Sampler(torch.frombuffer(bytearray(corpus), dtype=torch.uint8), a.seed, torch, dev)
    val_seq = min(8192, phases[-1][0])
    vwin = val_windows(val_books, val_seq, a.val_windows, torch)

    model.to(dev).train()
    decay, no_decay = [], []
    for name, prm in model.named_parameters():
        (decay if prm.ndim == 2 and "embed" not in name else no_decay).append(prm)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8, fused=(dev.type == "cuda"))
    use_amp = dev.type == "cuda"
    budget = a.minutes * 60.0
    stop = {"sig": None}

    def on_signal(signum, _frame):  # SIGTERM/SIGINT: finish the step, then export what we have
        stop["sig"] = signum
    import signal
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    t0 = time.time()
    step, tokens_seen, last_val = 0, 0, t0
    phase_steps = {}
    while True:
        el = time.time() - t0
        prog = step / a.steps if a.steps else el / budget
        if prog >= 1.0:
            break
        if stop["sig"] is not None:
            log(f"signal {stop['sig']}: stopping early at step {step}, progress {prog:.3f}")
            train_log["stopped_early"] = {"signal": stop["sig"], "progress": prog}
            break
        seq = next(s for s, end in phases if prog < end)
        phase_steps.setdefault(str(seq), step)
        if step < a.warmup_steps:
            lr = a.lr * (step + 1) / a.warmup_steps
        else:
            lr = a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, prog))))
        for gp in opt.param_groups:
            gp["lr"] = lr
        n_micro = max(1, a.batch_tokens // a.micro_tokens)
        bsz = max(1, a.micro_tokens // seq)
        loss_sum = 0.0
        for mi in range(n_micro):
            x, y = sampler.batch(step, mi, bsz, seq)
            with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=use_amp):
                logits = model(input_ids=x, use_cache=False).logits
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, 256), y.reshape(-1))
            (loss / n_micro).backward()
            loss_sum += float(loss.detach())
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens_seen += n_micro * bsz * seq
        loss_avg = loss_sum / n_micro
        if not math.isfinite(loss_avg):
            raise SystemExit(f"step {step}: non-finite loss")
        if step % a.log_every == 0 or step == 1:
            el = time.time() - t0
            rec = {"step": step, "elapsed_s": round(el, 2), "seq": seq, "lr": lr, "loss": round(loss_avg, 5),
                   "bpb": round(loss_avg / math.log(2), 5), "grad_norm": round(float(gn), 4),
                   "tokens": tokens_seen, "tok_per_s": round(tokens_seen / max(el, 1e-9))}
            train_log["steps"].append(rec)
            log(json.dumps(rec))
        if vwin is not None and time.time() - last_val >= a.val_every_s:
            r = eval_bpb(model, vwin, torch, dev, batch=max(1, a.micro_tokens // val_seq), autocast=use_amp)
            r.update(step=step, elapsed_s=round(time.time() - t0, 2))
            train_log["val"].append(r)
            log("val", json.dumps(r))
            last_val = time.time()
    train_s = time.time() - t0
    train_log["train_seconds"] = round(train_s, 2)
    train_log["total_steps"] = step
    train_log["tokens_seen"] = tokens_seen
    train_log["phase_start_steps"] = phase_steps
    train_log["epochs"] = tokens_seen / len(corpus)
    train_log["final_static_alpha"] = static_alphas(model, torch)
    log(f"trained {step} steps, {tokens_seen:,} tokens ({tokens_seen / len(corpus):.2f} epochs) in {train_s:.1f} s")

    sizes = export_hf(model, a.out, torch)
    train_log["export_sizes"] = sizes
    log(f"exported {a.out}: {sizes}")

    # final validation on the exported (bf16-rounded) weights, fp32 compute
    del opt
    model = reload_fp32(a.out, torch).to(dev)
    bk = [(0, 1024), (1024, 8192), (8192, 32768), (32768, 131072)]
    if vwin is not None:
        r = eval_bpb(model, vwin, torch, dev, batch=max(1, a.micro_tokens // val_seq), buckets=bk)
        train_log["final_val"] = r
        log("final val (exported weights, fp32):", json.dumps(r))
    if a.long_eval and a.long_eval > val_seq:
        lw = val_windows(val_books, a.long_eval, max(1, len(val_books)), torch)
        if lw is not None:
            r = eval_bpb(model, lw, torch, dev, batch=1, buckets=bk)
            train_log["final_val_long"] = r
            log("final long val (exported weights, fp32):", json.dumps(r))
    train_log["wall_seconds"] = round(time.time() - t_start, 2)
    with open(os.path.join(a.out, "train_log.json"), "w") as f:
        json.dump(train_log, f, indent=1)
    log(f"wrote {os.path.join(a.out, 'train_log.json')}; total wall {time.time() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

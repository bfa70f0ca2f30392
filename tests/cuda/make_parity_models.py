#!/usr/bin/env python3
"""make_parity_models.py — random-weight models of the paper's 4B shapes (and two small MoE models with
the GPU state kernels' d_k = 128) and transformers' logits, for the GPU evaluator's parity check
(gpu_parity.cu compares).

    python3 make_parity_models.py OUTDIR [qwen3_5_4b] [nemotron_3_nano_4b] [qwen3_5_moe_small]
                                  [nemotron_h_moe_small] [--positions 2048]

Runs on the GPU machine (torch 2.11, transformers 5.17; nothing is downloaded): builds each model
from its published text config (values: ../shared/specs/hybrid-models-and-kernels-notes.md section
2), with informative random parameters (decays spread over slow and fast heads, norm weights off 1,
as tests/fixtures/make_model_fixtures.py does), saves it as bf16 safetensors (A_log kept f32, as
the checkpoints ship it) under OUTDIR/<name>/, reloads exactly what was saved in fp32 and runs
the full-sequence forward on the GPU in fp32 with TF32 off (matmul and cuDNN) and eager attention,
on random ids. Writes OUTDIR/<name>/ids.i32 (int32 [P]) and ref_logits.f32 (float32 [P][V]), raw
little-endian; for a MoE model also route_idx.i32 (int32 [MoE layers][P][k]: each router's experts,
ascending per position, captured by a forward hook on the router). Nothing here is committed (the 4B
checkpoints are 8 GB each).
"""
import os
import sys
import time

import torch

SEED = 20261201


def log(*a):
    print(*a, flush=True)


def init_params(model, family, gen):
    """the bundled fixtures' informative parameters (tests/fixtures/make_model_fixtures.py, one
    definition): dt log-uniform [1e-3, 1e-1], A ~ U[1, 16], D = 1 + 0.1 N, norms off 1"""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
    from make_model_fixtures import init_params as fixture_init
    fixture_init(model, family, gen, torch)


def build(name):
    if name == "qwen3_5_moe_small":  # qwen3_5_moe_text: GDN d_k = 128, 16 experts top 4, gated shared expert
        from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig
        cfg = Qwen3_5MoeTextConfig(
            vocab_size=4096, hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
            head_dim=64, hidden_act="silu", rms_norm_eps=1e-6, tie_word_embeddings=False,
            max_position_embeddings=8192, linear_conv_kernel_dim=4, linear_key_head_dim=128,
            linear_value_head_dim=128, linear_num_key_heads=2, linear_num_value_heads=4,
            moe_intermediate_size=128, shared_expert_intermediate_size=256, num_experts=16, num_experts_per_tok=4,
            layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
            rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                             "mrope_section": [3, 3, 2], "mrope_interleaved": True},
            initializer_range=0.05, bos_token_id=None, eos_token_id=None, pad_token_id=None)
        return "qwen3_5_moe_text", cfg, Qwen3_5MoeForCausalLM
    if name == "nemotron_h_moe_small":  # nemotron_h: Mamba-2 d_k = 128, 32 experts in 4 groups keep 2, top 6, latent
        from transformers import NemotronHConfig, NemotronHForCausalLM
        cfg = NemotronHConfig(
            vocab_size=4096, hidden_size=256, hybrid_override_pattern="ME*EME", num_attention_heads=4,
            num_key_value_heads=2, head_dim=64, intermediate_size=512, mlp_hidden_act="relu2",
            ssm_state_size=128, mamba_num_heads=8, mamba_head_dim=64, n_groups=2, conv_kernel=4, chunk_size=128,
            use_conv_bias=True, time_step_min=1e-3, time_step_max=0.1, layer_norm_epsilon=1e-5,
            tie_word_embeddings=False, n_routed_experts=32, n_shared_experts=1, moe_intermediate_size=96,
            moe_shared_expert_intermediate_size=192, moe_latent_size=64, num_experts_per_tok=6,
            routed_scaling_factor=2.5, n_group=4, topk_group=2, norm_topk_prob=True, use_mamba_kernels=False,
            initializer_range=0.05, max_position_embeddings=8192)
        return "nemotron_h", cfg, NemotronHForCausalLM
    if name == "qwen3_5_4b":
        from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
        lt = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 8
        cfg = Qwen3_5TextConfig(
            vocab_size=248320, hidden_size=2560, intermediate_size=9216, num_hidden_layers=32,
            num_attention_heads=16, num_key_value_heads=4, head_dim=256, hidden_act="silu",
            rms_norm_eps=1e-6, tie_word_embeddings=True, max_position_embeddings=262144,
            linear_conv_kernel_dim=4, linear_key_head_dim=128, linear_value_head_dim=128,
            linear_num_key_heads=16, linear_num_value_heads=32, layer_types=lt,
            rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                             "mrope_section": [11, 11, 10], "mrope_interleaved": True},
            initializer_range=0.02, bos_token_id=None, eos_token_id=None, pad_token_id=None)
        return "qwen3_5_text", cfg, Qwen3_5ForCausalLM
    from transformers import NemotronHConfig, NemotronHForCausalLM
    cfg = NemotronHConfig(
        vocab_size=131072, hidden_size=3136, hybrid_override_pattern="M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-",
        num_attention_heads=40, num_key_value_heads=8, head_dim=128, intermediate_size=12544,
        mlp_hidden_act="relu2", ssm_state_size=128, mamba_num_heads=96, mamba_head_dim=80, n_groups=8,
        conv_kernel=4, chunk_size=256, use_conv_bias=True, time_step_min=1e-3, time_step_max=0.1,
        layer_norm_epsilon=1e-5, tie_word_embeddings=False, use_mamba_kernels=False,
        initializer_range=0.02, max_position_embeddings=262144)
    return "nemotron_h", cfg, NemotronHForCausalLM


def make(name, out, P):
    log(f"===== {name} =====")
    t0 = time.time()
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    family, cfg, cls = build(name)
    cfg._attn_implementation = "eager"
    with torch.device("cuda"):
        model = cls(cfg).float().eval()
    gen_cpu = gen
    init_params(model, family, gen_cpu)
    n = sum(p.numel() for p in model.parameters())
    log(f"built {cls.__name__}: {n / 1e9:.3f} B parameters ({time.time() - t0:.1f} s)")
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    a_logs = {k: v.detach().clone() for k, v in model.named_parameters() if k.endswith("A_log")}
    model = model.to(torch.bfloat16)
    with torch.no_grad():
        for k, v in model.named_parameters():
            if k in a_logs:
                v.data = a_logs[k]
    model.save_pretrained(d, safe_serialization=True, max_shard_size="4GB")
    log("saved:", sorted(os.listdir(d)), f"({time.time() - t0:.1f} s)")
    del model
    torch.cuda.empty_cache()
    m = cls.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").cuda().eval()
    ids = torch.randint(0, cfg.vocab_size, (1, P), generator=gen)
    # MoE routers (tests/fixtures/make_model_fixtures.py): their outputs end with the chosen experts
    routes, hooks = {}, []
    for j, L in enumerate(m.model.layers):
        blk = getattr(L, "mixer", None) if family.startswith("nemotron_h") else getattr(L, "mlp", None)
        gate = getattr(blk, "gate", None)
        if gate is not None and hasattr(gate, "top_k"):
            def fr(_mod, _inp, outp, j=j):
                routes[j] = outp[-1].detach().clone()
            hooks.append(gate.register_forward_hook(fr))
    with torch.no_grad():
        logits = m(input_ids=ids.cuda(), use_cache=False).logits[0].float().cpu()
    for h in hooks:
        h.remove()
    if routes:
        r = torch.stack([routes[j].reshape(P, -1).sort(dim=-1)[0] for j in sorted(routes)]).to(torch.int32).cpu()
        r.numpy().astype("<i4").tofile(os.path.join(d, "route_idx.i32"))
        log(f"MoE layers {sorted(routes)}: routes {tuple(r.shape)}")
    log(f"transformers forward: logits {tuple(logits.shape)}, max|logit| {float(logits.abs().max()):.4f} "
        f"({time.time() - t0:.1f} s)")
    ids[0].to(torch.int32).numpy().tofile(os.path.join(d, "ids.i32"))
    logits.numpy().astype("<f4").tofile(os.path.join(d, "ref_logits.f32"))
    del m, logits
    torch.cuda.empty_cache()


def main(argv):
    P = 2048
    if "--positions" in argv:
        i = argv.index("--positions")
        P = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    out = argv[0]
    names = argv[1:] or ["qwen3_5_4b", "nemotron_3_nano_4b"]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    import transformers
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.cuda.get_device_name()}")
    for name in names:
        make(name, out, P)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

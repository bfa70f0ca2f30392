#!/usr/bin/env python3
"""Writes the four ReplaySSM paper-model config folders (config.json, and hf_quant_config.json for the
NVFP4 two). Every value's source is in SOURCES.md. Run: python3 make_configs.py (writes next to itself)."""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, fname, obj, indent=2):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, fname), "w") as f:
        json.dump(obj, f, indent=indent)
        f.write("\n")


# ---------------------------------------------------------------- Nemotron-3-Nano-4B (BF16, dense nemotron_h)
NANO4B_PATTERN = "M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-"
assert (len(NANO4B_PATTERN), NANO4B_PATTERN.count("M"), NANO4B_PATTERN.count("*"), NANO4B_PATTERN.count("-")) == (42, 21, 4, 17)
nano4b = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
    "chunk_size": 256,
    "conv_kernel": 4,
    "dtype": "bfloat16",
    "expand": 2,
    "head_dim": 128,
    "hidden_dropout": 0.0,
    "hidden_size": 3136,
    "hybrid_override_pattern": NANO4B_PATTERN,
    "initializer_range": 0.02,
    "intermediate_size": 12544,
    "layer_norm_epsilon": 1e-05,
    "mamba_head_dim": 80,
    "mamba_hidden_act": "silu",
    "mamba_num_heads": 96,
    "mamba_proj_bias": False,
    "mamba_ssm_cache_dtype": "float32",
    "max_position_embeddings": 262144,
    "mlp_bias": False,
    "mlp_hidden_act": "relu2",
    "n_groups": 8,
    "num_attention_heads": 40,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "num_logits_to_keep": 1,
    "rescale_prenorm_residual": True,
    "residual_in_fp32": False,
    "sliding_window": None,
    "ssm_state_size": 128,
    "tie_word_embeddings": False,
    "time_step_floor": 0.0001,
    "time_step_max": 0.1,
    "time_step_min": 0.001,
    "use_bias": False,
    "use_cache": True,
    "use_conv_bias": True,
    "use_mamba_kernels": True,
    "vocab_size": 131072,
}
write("nemotron-3-nano-4b", "config.json", nano4b)

# ---------------------------------------------------------------- Nemotron-3-Super-120B-A12B (NVFP4, latent MoE)
SUPER_PATTERN = "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME"
assert (len(SUPER_PATTERN), SUPER_PATTERN.count("M"), SUPER_PATTERN.count("*"), SUPER_PATTERN.count("E")) == (88, 40, 8, 40)
super_cfg = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "chunk_size": 128,
    "conv_kernel": 4,
    "dtype": "bfloat16",
    "eos_token_id": 2,
    "expand": 2,
    "head_dim": 128,
    "hidden_dropout": 0.0,
    "hidden_size": 4096,
    "hybrid_override_pattern": SUPER_PATTERN,
    "initializer_range": 0.02,
    "intermediate_size": 2688,
    "layer_norm_epsilon": 1e-05,
    "mamba_head_dim": 64,
    "mamba_hidden_act": "silu",
    "mamba_num_heads": 128,
    "mamba_proj_bias": False,
    "mamba_ssm_cache_dtype": "float32",
    "max_position_embeddings": 262144,
    "mlp_bias": False,
    "mlp_hidden_act": "relu2",
    "moe_intermediate_size": 2688,
    "moe_latent_size": 1024,
    "moe_shared_expert_intermediate_size": 5376,
    "moe_shared_expert_overlap": False,
    "mtp_hybrid_override_pattern": "*E",
    "n_group": 1,
    "n_groups": 8,
    "n_routed_experts": 512,
    "n_shared_experts": 1,
    "norm_eps": 1e-05,
    "norm_topk_prob": True,
    "num_attention_heads": 32,
    "num_experts_per_tok": 22,
    "num_hidden_layers": 88,
    "num_key_value_heads": 2,
    "num_logits_to_keep": 1,
    "num_nextn_predict_layers": 1,
    "pad_token_id": 0,
    "partial_rotary_factor": 1.0,
    "rescale_prenorm_residual": True,
    "residual_in_fp32": False,
    "rope_theta": 10000,
    "routed_scaling_factor": 5.0,
    "sliding_window": None,
    "ssm_state_size": 128,
    "tie_word_embeddings": False,
    "time_step_floor": 0.0001,
    "time_step_max": 0.1,
    "time_step_min": 0.001,
    "topk_group": 1,
    "transformers_version": "4.57.6",
    "use_bias": False,
    "use_cache": True,
    "use_conv_bias": True,
    "use_mamba_kernels": True,
    "vocab_size": 131072,
}
write("nemotron-3-super-120b-a12b", "config.json", super_cfg)

# Super's ModelOpt MIXED_PRECISION map: per-tensor FP8 for the listed layers' modules, NVFP4 (group 16) for every
# routed expert of the 40 MoE layers and for layer 1's shared down_proj; everything unlisted BF16.
moe_layers = [i for i, c in enumerate(SUPER_PATTERN) if c == "E"]
FP8 = {
    "in_proj": [0, 2, 4, 6, 9, 11, 13, 15, 18, 20, 27, 29, 31, 40, 49, 51, 53, 55, 57, 60, 62, 66, 68, 71, 73, 82, 84, 86],
    "out_proj": [0, 2, 4, 9, 11, 13, 18, 38, 40, 42, 44, 49, 51, 53, 55, 57, 60, 62, 64, 66, 68, 71, 73, 75, 77, 80, 82, 84, 86],
    "shared_experts.up_proj": [1, 3, 5, 8, 10, 12, 14, 17, 19, 21, 23, 26, 28, 30, 32, 34, 37, 39, 43, 45, 48, 50, 52,
                               54, 56, 59, 61, 63, 65, 67, 70, 72, 74, 76, 79, 81, 83, 85, 87],
    "shared_experts.down_proj": [3, 5, 10, 12, 14, 17, 19, 21, 23, 26, 28, 30, 32, 34, 37, 39, 41, 43, 45, 48, 50, 52,
                                 54, 56, 59, 61, 63, 65, 67, 70, 72, 74, 79, 81, 83, 85, 87],
    "fc1_latent_proj": [1, 3, 5],
    "fc2_latent_proj": [3],
    "o_proj": [69, 78],
}
kinds = {"M": "mamba", "E": "moe", "*": "attention"}
ok_kind = {"in_proj": "M", "out_proj": "M", "o_proj": "*"}
layers = {}
for leaf, idx in FP8.items():
    for l in idx:
        assert SUPER_PATTERN[l] == ok_kind.get(leaf, "E"), (leaf, l, SUPER_PATTERN[l])
        layers[f"backbone.layers.{l}.mixer.{leaf}"] = {"quant_algo": "FP8"}
layers["backbone.layers.1.mixer.shared_experts.down_proj"] = {"quant_algo": "NVFP4", "group_size": 16}
for l in moe_layers:
    for e in range(512):
        for leaf in ("up_proj", "down_proj"):
            layers[f"backbone.layers.{l}.mixer.experts.{e}.{leaf}"] = {"quant_algo": "NVFP4", "group_size": 16}
assert len(layers) == 41100 and sum(v["quant_algo"] == "FP8" for v in layers.values()) == 139
write("nemotron-3-super-120b-a12b", "hf_quant_config.json", {
    "producer": {"name": "modelopt", "version": "0.43.0.dev63+g449e700f9"},
    "quantization": {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8", "quantized_layers": layers},
}, indent=None)

# ---------------------------------------------------------------- Qwen3.5 shared pieces
ROPE = {"mrope_interleaved": True, "mrope_section": [11, 11, 10], "partial_rotary_factor": 0.25,
        "rope_theta": 10000000, "rope_type": "default"}


def layer_types(n, interval=4):
    return ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]


# ---------------------------------------------------------------- Qwen3.5-4B (BF16, dense qwen3_5)
q4_text = {
    "model_type": "qwen3_5_text",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_output_gate": True,
    "bos_token_id": None,
    "dtype": "bfloat16",
    "eos_token_id": 248044,
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_act": "silu",
    "hidden_size": 2560,
    "initializer_range": 0.02,
    "intermediate_size": 9216,
    "layer_types": layer_types(32),
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_value_head_dim": 128,
    "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144,
    "mlp_only_layers": [],
    "mtp_num_hidden_layers": 1,
    "mtp_use_dedicated_embeddings": False,
    "num_attention_heads": 16,
    "num_hidden_layers": 32,
    "num_key_value_heads": 4,
    "pad_token_id": None,
    "rms_norm_eps": 1e-06,
    "rope_parameters": dict(ROPE),
    "tie_word_embeddings": True,
    "use_cache": True,
    "vocab_size": 248320,
}
assert q4_text["layer_types"].count("linear_attention") == 24 and q4_text["layer_types"].count("full_attention") == 8
write("qwen3.5-4b", "config.json", {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "image_token_id": 248056,
    "video_token_id": 248057,
    "vision_start_token_id": 248053,
    "vision_end_token_id": 248054,
    "tie_word_embeddings": True,
    "text_config": q4_text,
    "vision_config": {
        "model_type": "qwen3_5", "deepstack_visual_indexes": [], "depth": 24, "hidden_act": "gelu_pytorch_tanh",
        "hidden_size": 1024, "in_channels": 3, "intermediate_size": 4096, "num_heads": 16,
        "num_position_embeddings": 2304, "out_hidden_size": 2560, "patch_size": 16, "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    },
})

# ---------------------------------------------------------------- Qwen3.5-122B-A10B (NVFP4, qwen3_5_moe)
q122_text = {
    "model_type": "qwen3_5_moe_text",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_output_gate": True,
    "bos_token_id": None,
    "dtype": "bfloat16",
    "eos_token_id": 248046,
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_act": "silu",
    "hidden_size": 3072,
    "initializer_range": 0.02,
    "layer_types": layer_types(48),
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 64,
    "linear_value_head_dim": 128,
    "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144,
    "moe_intermediate_size": 1024,
    "mtp_num_hidden_layers": 1,
    "mtp_use_dedicated_embeddings": False,
    "num_attention_heads": 32,
    "num_experts": 256,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 48,
    "num_key_value_heads": 2,
    "output_router_logits": False,
    "pad_token_id": None,
    "rms_norm_eps": 1e-06,
    "rope_parameters": dict(ROPE),
    "router_aux_loss_coef": 0.001,
    "shared_expert_intermediate_size": 1024,
    "tie_word_embeddings": False,
    "use_cache": True,
    "vocab_size": 248320,
}
assert q122_text["layer_types"].count("linear_attention") == 36 and q122_text["layer_types"].count("full_attention") == 12
write("qwen3.5-122b-a10b", "config.json", {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"],
    "model_type": "qwen3_5_moe",
    "image_token_id": 248056,
    "video_token_id": 248057,
    "vision_start_token_id": 248053,
    "vision_end_token_id": 248054,
    "tie_word_embeddings": False,
    "text_config": q122_text,
    "vision_config": {
        "model_type": "qwen3_5_moe", "deepstack_visual_indexes": [], "depth": 27, "hidden_act": "gelu_pytorch_tanh",
        "hidden_size": 1152, "in_channels": 3, "intermediate_size": 4304, "num_heads": 16,
        "num_position_embeddings": 2304, "out_hidden_size": 3072, "patch_size": 16, "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    },
})
write("qwen3.5-122b-a10b", "hf_quant_config.json", {
    "producer": {"name": "modelopt", "version": "0.44.0"},
    "quantization": {
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": "FP8",
        "group_size": 16,
        "exclude_modules": [
            "lm_head",
            "*visual*",
            "*layers.*.linear_attn*",
            "*layers.*.mlp.gate",
            "*layers.*.mlp.shared_expert*",
            "*layers.*.self_attn*",
            "mtp*",
        ],
    },
})
print("written under", HERE)

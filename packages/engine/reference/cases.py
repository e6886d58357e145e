"""The fixture cases: three original Llama ones plus two or more per family.

Keys read by config_json.py (family-specific ones only where the family has them):
  form: "v5" (what transformers 5 writes) or "classic" (rope_theta/rope_scaling/torch_dtype)
  rope (v5: merged into rope_parameters), rope_scaling (classic), window, layer_types
  ("f"/"s" per layer, v5 qwen2/qwen3/gemma3), max_window_layers, use_sliding_window,
  qpas (query_pre_attn_scalar), local_theta, pattern, final_softcap, partial, orig_max,
  no_rope_layers, mult (granite multipliers), eos (list allowed), generation (-> generation_config.json),
  embed_std (embedding init std; default 1.0, 0.4 with a tied head)
"""

import torch

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
V = 272  # the byte-level tokenizer has 259 tokens

LEGACY = [
    # GQA 3:1, odd sizes, untied head, F32 weights, rope_theta 10000
    dict(name="gqa-untied-f32", hidden=48, heads=3, kv=1, head_dim=None, ffn=100, vocab=300, layers=2,
         theta=10000.0, tied=False, dtype=F32, seed=1),
    # multi-head (no grouping), tied embeddings, BF16 weights, rope_theta 100000
    dict(name="mha-tied-bf16", hidden=64, heads=4, kv=4, head_dim=None, ffn=96, vocab=290, layers=2,
         theta=100000.0, tied=True, dtype=BF16, seed=2),
    # GQA 2:1 with an explicit head_dim != hidden/heads, F16 weights, three layers
    dict(name="gqa-headdim-f16", hidden=40, heads=4, kv=2, head_dim=12, ffn=72, vocab=280, layers=3,
         theta=100000.0, tied=False, dtype=F16, seed=3),
]


def case(name, family, form, dtype, seed, **kw):
    base = dict(name=name, family=family, form=form, dtype=dtype, seed=seed, hidden=32, heads=4, kv=2,
                ffn=64, vocab=V, layers=2, theta=10000.0, tied=False, eps=1e-6, max_pos=512)
    base.update(kw)
    return base


LLAMA3 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
SHORT = [1.0, 1.02, 1.1, 1.3, 1.7, 2.5]
LONG = [1.0, 1.3, 2.0, 4.0, 9.0, 20.0]
GEN_SAMPLING = {"bos_token_id": 1, "do_sample": True, "eos_token_id": [2, 0], "temperature": 0.6, "top_p": 0.95}

NEW = [
    # Llama: each rope scaling type in both forms; biases on in one case
    case("llama-linear-classic-f32", "llama", "classic", F32, 11, rope_scaling={"type": "linear", "factor": 2.0},
         attention_bias=True, mlp_bias=True, eps=1e-5),
    case("llama-linear-v5-bf16", "llama", "v5", BF16, 12, heads=2, kv=2, tied=True,
         rope={"rope_type": "linear", "factor": 4.0}),
    case("llama-llama3-classic-bf16", "llama", "classic", BF16, 13, heads=2, kv=2, tied=True, theta=500000.0,
         rope_scaling={**LLAMA3, "rope_type": "llama3"}, eos=[2, 0], eps=1e-5,
         generation={"_from_model_config": True, "bos_token_id": 1, "eos_token_id": [2, 0]}),
    case("llama-llama3-v5-f16", "llama", "v5", F16, 14, hidden=48, heads=3, kv=1, theta=500000.0,
         rope={"rope_type": "llama3", **LLAMA3}),
    case("llama-yarn-classic-f32", "llama", "classic", F32, 15, kv=1, max_pos=128,
         rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}),
    case("llama-yarn-v5-f16", "llama", "v5", F16, 16, heads=2, kv=2, head_dim=24, theta=100000.0, tied=True,
         rope={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64,
               "beta_fast": 16.0, "beta_slow": 2.0}),
    # Mistral: sliding window shorter than the sequence, explicit head_dim
    case("mistral-swa-v5-bf16", "mistral", "v5", BF16, 21, head_dim=12, theta=1000000.0, window=5),
    case("mistral-classic-f32", "mistral", "classic", F32, 22, heads=2, kv=2, tied=True, window=None,
         generation={"bos_token_id": 1, "eos_token_id": 2}),
    # Qwen2: q/k/v biases; sliding layers from max_window_layers on
    case("qwen2-swa-v5-f32", "qwen2", "v5", F32, 31, layers=3, theta=1000000.0, tied=True,
         use_sliding_window=True, window=5, max_window_layers=1, layer_types="fss"),
    case("qwen2-classic-bf16", "qwen2", "classic", BF16, 32, heads=2, kv=2, use_sliding_window=False, window=5,
         max_window_layers=1),
    # Qwen3: q/k norms, explicit head_dim
    case("qwen3-v5-bf16", "qwen3", "v5", BF16, 41, head_dim=16, theta=1000000.0, tied=True, max_window_layers=2,
         layer_types="ff"),
    case("qwen3-swa-classic-f16", "qwen3", "classic", F16, 42, heads=2, kv=2, head_dim=24, layers=3,
         use_sliding_window=True, window=5, max_window_layers=1, attention_bias=True),
    # Gemma 3: sliding/full layers with their own rope, softcap, query_pre_attn_scalar
    case("gemma3-v5-f32", "gemma3", "v5", F32, 51, head_dim=16, layers=3, theta=1000000.0, local_theta=10000.0,
         rope={"rope_type": "linear", "factor": 2.0}, window=5, layer_types="ssf", qpas=24, final_softcap=10.0,
         tied=True, generation={"bos_token_id": 1, "eos_token_id": [2, 0], "pad_token_id": 0}),
    case("gemma3-classic-bf16", "gemma3", "classic", BF16, 52, hidden=48, heads=3, kv=3, head_dim=16, layers=3,
         theta=1000000.0, local_theta=10000.0, window=5, pattern=2, qpas=16, tied=True),
    # Phi-3 / Phi-4-mini: fused projections, partial rotary, sliding window, longrope
    case("phi3-mini-v5-f32", "phi3", "v5", F32, 61, kv=4, window=5, partial=1.0, eps=1e-5),
    case("phi4-mini-longrope-classic-bf16", "phi3", "classic", BF16, 62, hidden=64, ffn=96, partial=0.75,
         orig_max=10, max_pos=320, window=256, tied=True, eps=1e-5,
         rope_scaling={"long_factor": LONG, "short_factor": SHORT, "type": "longrope"}, generation=GEN_SAMPLING),
    case("phi4-mini-longrope-v5-f16", "phi3", "v5", F16, 63, hidden=64, ffn=96, partial=0.75, orig_max=7,
         max_pos=224, window=None, eps=1e-5, rope={"rope_type": "longrope", "long_factor": LONG, "short_factor": SHORT}),
    # SmolLM3: NoPE layers
    case("smollm3-v5-f32", "smollm3", "v5", F32, 71, layers=4, theta=100000.0, tied=True, no_rope_layers=[1, 1, 1, 0]),
    case("smollm3-classic-bf16", "smollm3", "classic", BF16, 72, heads=2, kv=2, layers=3, no_rope_layers=[1, 0, 1]),
    # OLMo 2: norms after attention and MLP, q/k norms over the whole projection
    case("olmo2-v5-f32", "olmo2", "v5", F32, 81, kv=4, theta=500000.0),
    case("olmo2-classic-bf16", "olmo2", "classic", BF16, 82, tied=True, eps=1e-5),
    # Granite: multipliers
    case("granite-v5-bf16", "granite", "v5", BF16, 91, tied=True,
         mult={"embedding_multiplier": 2.0, "attention_multiplier": 0.125, "residual_multiplier": 0.5,
               "logits_scaling": 1.5}),
    case("granite-classic-f16", "granite", "classic", F16, 92, heads=2, kv=2, embed_std=0.1,
         mult={"embedding_multiplier": 12.0, "attention_multiplier": 0.0625, "residual_multiplier": 0.22,
               "logits_scaling": 2.0}),
]


def defaults(name, architecture, model_type, seed, dtype=BF16, **sizes):
    """A family at transformers' own defaults, only made tiny: the config that
    check_transformers.py hands transformers names just these keys, so every
    other key in the config.json it saves is the config class's default, as in
    a user's `Config(hidden_size=..., ...).save_pretrained`."""
    config = dict(architectures=[architecture], model_type=model_type, vocab_size=V, hidden_size=32,
                  intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)
    config.update(sizes)
    return dict(name=name, form="defaults", dtype=dtype, seed=seed, config=config, tied=None)


# Used by check_transformers.py only (they need transformers to fill in the defaults).
DEFAULTS = [
    defaults("llama-defaults", "LlamaForCausalLM", "llama", 101),
    defaults("mistral-defaults", "MistralForCausalLM", "mistral", 102, head_dim=8),
    defaults("qwen2-defaults", "Qwen2ForCausalLM", "qwen2", 103),
    defaults("qwen3-defaults", "Qwen3ForCausalLM", "qwen3", 104, head_dim=16),
    defaults("gemma3-defaults", "Gemma3ForCausalLM", "gemma3_text", 105, head_dim=16, num_hidden_layers=6,
             sliding_window=5),
    defaults("phi3-defaults", "Phi3ForCausalLM", "phi3", 106, dtype=F16),
    defaults("smollm3-defaults", "SmolLM3ForCausalLM", "smollm3", 107, num_hidden_layers=4),
    defaults("olmo2-defaults", "Olmo2ForCausalLM", "olmo2", 108, dtype=F32),
    defaults("granite-defaults", "GraniteForCausalLM", "granite", 109),
]

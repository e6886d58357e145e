"""config.json -> block spec, reading it the way transformers 5 does.

Both forms are accepted: the Hub's classic one (`rope_theta` + `rope_scaling`,
Gemma 3's `rope_local_base_freq` / `sliding_window_pattern`, no `layer_types`)
and what transformers 5's save_pretrained writes (`rope_parameters`, for
Gemma 3 nested per layer type, and `layer_types`). The spec is what
families.forward runs; see families.py for what each field means.
"""

import torch

# architectures[0] -> (family, model_type)
ARCHITECTURES = {
    "LlamaForCausalLM": ("llama", "llama"),
    "MistralForCausalLM": ("mistral", "mistral"),
    "Qwen2ForCausalLM": ("qwen2", "qwen2"),
    "Qwen3ForCausalLM": ("qwen3", "qwen3"),
    "Gemma3ForCausalLM": ("gemma3", "gemma3_text"),
    "Phi3ForCausalLM": ("phi3", "phi3"),
    "SmolLM3ForCausalLM": ("smollm3", "smollm3"),
    "Olmo2ForCausalLM": ("olmo2", "olmo2"),
    "GraniteForCausalLM": ("granite", "granite"),
}
MODEL_TYPES = {mt: fam for fam, mt in ARCHITECTURES.values()}

# class defaults used when config.json leaves a key out (transformers 5 config classes)
DEFAULTS = {
    "llama": dict(rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False),
    "mistral": dict(rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, sliding_window=4096),
    "qwen2": dict(rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, sliding_window=4096,
                  max_window_layers=28, use_sliding_window=False),
    "qwen3": dict(rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, sliding_window=4096,
                  max_window_layers=28, use_sliding_window=False, head_dim=128),
    "gemma3": dict(rope_theta=1_000_000.0, rope_local_base_freq=10_000.0, rms_norm_eps=1e-6,
                   tie_word_embeddings=True, sliding_window=4096, head_dim=256, query_pre_attn_scalar=256,
                   sliding_window_pattern=6, hidden_activation="gelu_pytorch_tanh"),
    "phi3": dict(rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=None,
                 original_max_position_embeddings=4096),
    "smollm3": dict(rope_theta=2_000_000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, no_rope_layer_interval=4,
                    use_sliding_window=False, sliding_window=None),
    "olmo2": dict(rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False),
    "granite": dict(rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, embedding_multiplier=1.0,
                    logits_scaling=1.0, residual_multiplier=1.0, attention_multiplier=1.0),
}


def family_of(cfg):
    for arch in cfg.get("architectures") or []:
        if arch in ARCHITECTURES:
            return ARCHITECTURES[arch][0]
    if cfg.get("model_type") in MODEL_TYPES:
        return MODEL_TYPES[cfg["model_type"]]
    raise ValueError(f"unsupported architecture {cfg.get('architectures')} / {cfg.get('model_type')}")


def _standardize_flat(cfg, fam, d):
    """One global rope dict, as RotaryEmbeddingConfigMixin leaves it."""
    rp = dict(cfg.get("rope_scaling") or cfg.get("rope_parameters") or {})
    rp.setdefault("rope_theta", cfg.get("rope_theta", d["rope_theta"]))
    if fam == "phi3":
        rp.setdefault("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
    elif cfg.get("partial_rotary_factor") is not None:
        rp["partial_rotary_factor"] = cfg["partial_rotary_factor"]
    rp.setdefault("rope_type", rp.get("type", "default"))
    if fam == "phi3" and rp["rope_type"] in ("su", "yarn"):  # Phi-3 BC: both meant longrope
        rp["rope_type"] = "longrope"
    if rp["rope_type"] in ("llama3", "yarn", "longrope"):
        if fam == "phi3":  # the top-level key wins over the one in rope_parameters
            rp["original_max_position_embeddings"] = cfg.get(
                "original_max_position_embeddings", d["original_max_position_embeddings"])
        else:
            rp.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
    return rp


def _gemma_rope(cfg, d, layer_types):
    rp = cfg.get("rope_parameters")
    if rp is not None and set(rp).issubset(set(layer_types)):
        rp = {k: dict(v) for k, v in rp.items()}
    else:  # classic form
        rp = {"sliding_attention": {"rope_type": "default"}, "full_attention": {"rope_type": "default"}}
        if cfg.get("rope_scaling"):
            rp["full_attention"].update(cfg["rope_scaling"])
        rp["full_attention"].setdefault("rope_theta", cfg.get("rope_theta", d["rope_theta"]))
        rp["sliding_attention"].setdefault("rope_theta", cfg.get("rope_local_base_freq", d["rope_local_base_freq"]))
    for v in rp.values():
        v.setdefault("rope_type", v.get("type", "default"))
        if v["rope_type"] in ("llama3", "yarn", "longrope"):
            v.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
    return rp


def parse(cfg):
    fam = family_of(cfg)
    d = DEFAULTS[fam]
    get = lambda k: cfg[k] if k in cfg else d.get(k)  # noqa: E731  (an explicit null stays None)
    H, Hq, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    Hkv = cfg.get("num_key_value_heads") or Hq
    if fam in ("llama", "mistral", "gemma3", "qwen3"):
        D = get("head_dim") or H // Hq
    else:
        D = H // Hq
    spec = dict(
        family=fam, hidden=H, heads=Hq, kv_heads=Hkv, head_dim=D, ffn=cfg["intermediate_size"], layers=L,
        vocab=cfg["vocab_size"], eps=get("rms_norm_eps"), tied=bool(get("tie_word_embeddings")),
        max_pos=cfg.get("max_position_embeddings", 2048), act="silu", norm="llama", layout="pre",
        qk_norm=None, fused=False, biases=set(), attn_scale=D ** -0.5, attn_softcap=None,
        embed_scale=None, residual_mult=None, logits_div=None, final_softcap=None,
    )
    act = cfg.get("hidden_activation") or cfg.get("hidden_act") or d.get("hidden_activation") or "silu"
    spec["act"] = {"silu": "silu", "gelu_pytorch_tanh": "gelu_tanh"}[act]
    attn4 = {"q_proj", "k_proj", "v_proj", "o_proj"}
    mlp3 = {"gate_proj", "up_proj", "down_proj"}
    windows = [None] * L
    if fam == "gemma3":
        pattern = cfg.get("sliding_window_pattern", d["sliding_window_pattern"])
        layer_types = cfg.get("layer_types") or [
            "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(L)]
        rp = _gemma_rope(cfg, d, layer_types)
        ropes = [rp[t] for t in layer_types]
        windows = [get("sliding_window") if t == "sliding_attention" else None for t in layer_types]
        spec.update(norm="gemma", layout="sandwich", qk_norm="head",
                    attn_scale=get("query_pre_attn_scalar") ** -0.5,
                    attn_softcap=cfg.get("attn_logit_softcapping"),
                    final_softcap=cfg.get("final_logit_softcapping"),
                    # registered as torch.tensor(hidden_size ** 0.5), i.e. float32, then cast to
                    # the embedding weight's dtype (float32 here: the reference computes in fp32)
                    embed_scale=torch.tensor(H ** 0.5))
        if cfg.get("attention_bias"):
            spec["biases"] |= attn4
    else:
        rp = _standardize_flat(cfg, fam, d)
        ropes = [rp] * L
        layer_types = ["full_attention"] * L
    if fam in ("llama", "smollm3", "granite"):
        if cfg.get("attention_bias"):
            spec["biases"] |= attn4
        if cfg.get("mlp_bias"):
            spec["biases"] |= mlp3
    if fam in ("qwen3", "olmo2") and cfg.get("attention_bias"):
        spec["biases"] |= attn4
    if fam == "qwen2":
        spec["biases"] |= {"q_proj", "k_proj", "v_proj"}
    if fam in ("mistral", "phi3") and get("sliding_window") is not None:
        windows = [get("sliding_window")] * L
    if fam in ("qwen2", "qwen3"):
        sw = get("sliding_window") if get("use_sliding_window") else None
        layer_types = cfg.get("layer_types") or [
            "sliding_attention" if sw is not None and i >= get("max_window_layers") else "full_attention"
            for i in range(L)]
        windows = [sw if t == "sliding_attention" else None for t in layer_types]
        if fam == "qwen3":
            spec["qk_norm"] = "head"
    if fam == "smollm3":
        interval = get("no_rope_layer_interval")
        use_rope = cfg.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(L)]
        sw = get("sliding_window")
        layer_types = cfg.get("layer_types") or [
            "sliding_attention" if get("use_sliding_window") and sw is not None and not use_rope[i]
            else "full_attention" for i in range(L)]
        windows = [sw if get("use_sliding_window") and t == "sliding_attention" else None for t in layer_types]
        ropes = [r if use_rope[i] else None for i, r in enumerate(ropes)]
    if fam == "phi3":
        spec["fused"] = True
    if fam == "olmo2":
        spec.update(layout="post", qk_norm="proj")
    if fam == "granite":
        spec.update(attn_scale=get("attention_multiplier"), embed_scale=get("embedding_multiplier"),
                    residual_mult=get("residual_multiplier"), logits_div=get("logits_scaling"))
    spec.update(layer_rope=ropes, layer_window=windows, layer_types=layer_types)
    return spec


def describe(spec):
    """A short human-readable line per spec (for logs)."""
    kinds = sorted({r["rope_type"] if r else "none" for r in spec["layer_rope"]})
    return (f"{spec['family']} H={spec['hidden']} heads={spec['heads']}/{spec['kv_heads']} D={spec['head_dim']} "
            f"L={spec['layers']} rope={','.join(kinds)} windows={spec['layer_window']} "
            f"scale={spec['attn_scale']:.4g}{' tied' if spec['tied'] else ''}")


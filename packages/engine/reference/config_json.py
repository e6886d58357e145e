"""config.json as transformers writes it, per family, in two forms.

"v5": what transformers 5's `save_pretrained` writes: `to_diff_dict()` keeps every
field of the model's config class (all of them: none is in the base
PreTrainedConfig defaults), plus `architectures`, `dtype` (was `torch_dtype`),
`model_type` and `transformers_version`; RoPE lives in `rope_parameters`
(standardized: `rope_type`, `rope_theta`, and `original_max_position_embeddings`
for llama3/yarn/longrope; Gemma 3 nests one dict per layer type); `layer_types`
is written for the families whose config computes it. Serialized with
json.dumps(sort_keys=True, indent=2) + "\\n".

"classic": the Hub's older form, as transformers 4.4x/4.5x wrote it:
`rope_theta` + `rope_scaling`, `torch_dtype`, no `layer_types`.
"""

import json

V5_VERSION = "5.0.0"
CLASSIC_VERSION = "4.51.3"
ARCH = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
        "qwen3": "Qwen3ForCausalLM", "gemma3": "Gemma3ForCausalLM", "phi3": "Phi3ForCausalLM",
        "smollm3": "SmolLM3ForCausalLM", "olmo2": "Olmo2ForCausalLM", "granite": "GraniteForCausalLM"}
MODEL_TYPE = {"llama": "llama", "mistral": "mistral", "qwen2": "qwen2", "qwen3": "qwen3", "gemma3": "gemma3_text",
              "phi3": "phi3", "smollm3": "smollm3", "olmo2": "olmo2", "granite": "granite"}


def _common(c):
    return {
        "vocab_size": c["vocab"], "hidden_size": c["hidden"], "intermediate_size": c["ffn"],
        "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"], "num_key_value_heads": c["kv"],
        "hidden_act": "silu", "max_position_embeddings": c.get("max_pos", 512), "initializer_range": 0.02,
        "rms_norm_eps": c.get("eps", 1e-6), "use_cache": True, "pad_token_id": c.get("pad_token_id"),
        "bos_token_id": 1, "eos_token_id": c.get("eos", 2), "tie_word_embeddings": c["tied"],
        "attention_dropout": 0.0,
    }


def _rope_v5(c):
    rp = {"rope_theta": c["theta"], "rope_type": "default"}
    rp.update(c.get("rope", {}))
    if c["family"] == "phi3":
        rp["partial_rotary_factor"] = c.get("partial", 1.0)
        if rp["rope_type"] == "longrope":
            rp["original_max_position_embeddings"] = c["orig_max"]
    return rp


def _layer_types(c):
    return [("sliding_attention" if t == "s" else "full_attention") for t in c["layer_types"]]


def v5_config(c):
    fam = c["family"]
    d = _common(c)
    d["rope_parameters"] = _rope_v5(c)
    D = c.get("head_dim") or c["hidden"] // c["heads"]
    if fam == "llama":
        d.update(pretraining_tp=1, attention_bias=c.get("attention_bias", False),
                 mlp_bias=c.get("mlp_bias", False), head_dim=D)
    elif fam == "mistral":
        d.update(head_dim=D, sliding_window=c.get("window"))
    elif fam in ("qwen2", "qwen3"):
        use = c.get("use_sliding_window", False)
        d.update(use_sliding_window=use, sliding_window=c.get("window") if use else None,
                 max_window_layers=c["max_window_layers"], layer_types=_layer_types(c))
        if fam == "qwen3":
            d.update(attention_bias=c.get("attention_bias", False), head_dim=D)
    elif fam == "gemma3":
        del d["hidden_act"]
        d.pop("rope_parameters")
        d.update(hidden_activation="gelu_pytorch_tanh", head_dim=D, query_pre_attn_scalar=c["qpas"],
                 sliding_window=c["window"], layer_types=_layer_types(c),
                 final_logit_softcapping=c.get("final_softcap"), attn_logit_softcapping=None,
                 use_bidirectional_attention=False, attention_bias=False, _sliding_window_pattern=6,
                 rope_parameters={"full_attention": {"rope_theta": c["theta"], "rope_type": "default",
                                                     **c.get("rope", {})},
                                  "sliding_attention": {"rope_theta": c["local_theta"], "rope_type": "default"}})
    elif fam == "phi3":
        d.update(resid_pdrop=0.0, embd_pdrop=0.0, original_max_position_embeddings=c.get("orig_max", 4096),
                 sliding_window=c.get("window"))
    elif fam == "smollm3":
        nope = c["no_rope_layers"]
        d.update(use_sliding_window=False, sliding_window=None, no_rope_layers=nope,
                 no_rope_layer_interval=c.get("no_rope_interval", 4), layer_types=["full_attention"] * c["layers"],
                 attention_bias=False, mlp_bias=False)
    elif fam == "olmo2":
        d.update(attention_bias=False)
    elif fam == "granite":
        d.update(attention_bias=False, mlp_bias=False, **c["mult"])
    d.update(architectures=[ARCH[fam]], model_type=MODEL_TYPE[fam], dtype=c["dtype_name"],
             transformers_version=V5_VERSION)
    return d


def classic_config(c):
    fam = c["family"]
    d = _common(c)
    d.update(rope_theta=c["theta"], rope_scaling=c.get("rope_scaling"))
    D = c.get("head_dim") or c["hidden"] // c["heads"]
    if fam == "llama":
        d.update(pretraining_tp=1, attention_bias=c.get("attention_bias", False),
                 mlp_bias=c.get("mlp_bias", False), head_dim=D)
    elif fam == "mistral":
        d.update(head_dim=D, sliding_window=c.get("window"))
    elif fam in ("qwen2", "qwen3"):
        d.update(use_sliding_window=c.get("use_sliding_window", False), sliding_window=c.get("window"),
                 max_window_layers=c["max_window_layers"])
        if fam == "qwen3":
            d.update(attention_bias=c.get("attention_bias", False), head_dim=D)
    elif fam == "gemma3":
        del d["hidden_act"]
        d.update(hidden_activation="gelu_pytorch_tanh", head_dim=D, query_pre_attn_scalar=c["qpas"],
                 sliding_window=c["window"], sliding_window_pattern=c["pattern"], rope_local_base_freq=c["local_theta"],
                 final_logit_softcapping=c.get("final_softcap"), attn_logit_softcapping=None,
                 attention_bias=False, cache_implementation="hybrid")
    elif fam == "phi3":
        d.update(resid_pdrop=0.0, embd_pdrop=0.0, original_max_position_embeddings=c.get("orig_max", 4096),
                 sliding_window=c.get("window"), partial_rotary_factor=c.get("partial", 1.0))
    elif fam == "smollm3":
        d.update(use_sliding_window=False, sliding_window=None, no_rope_layers=c["no_rope_layers"],
                 no_rope_layer_interval=c.get("no_rope_interval", 4), attention_bias=False, mlp_bias=False)
    elif fam == "olmo2":
        d.update(attention_bias=False)
    elif fam == "granite":
        d.update(attention_bias=False, mlp_bias=False, **c["mult"])
    d.update(architectures=[ARCH[fam]], model_type=MODEL_TYPE[fam], torch_dtype=c["dtype_name"],
             transformers_version=CLASSIC_VERSION)
    return d


def dumps(d):
    return json.dumps(d, indent=2, sort_keys=True) + "\n"

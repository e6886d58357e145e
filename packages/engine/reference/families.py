"""One decoder forward for every supported family, driven by a block spec.

The spec comes from configs.parse(config.json). What each family needs on top
of Llama (all verified against transformers 5 source; "fp32" below means the
reference computes in float32 on the checkpoint's rounded values):

Llama (LlamaForCausalLM, "llama")
  - rope types default / linear / llama3 / yarn (rope.py), from `rope_parameters`
    (v5) or `rope_theta` + `rope_scaling` with "rope_type" or the older "type" key
  - attention_bias: biases on q/k/v/o; mlp_bias: biases on gate/up/down
Mistral ("mistral")
  - explicit head_dim (default hidden/heads)
  - sliding_window (when not null) on every layer: key j visible from query i iff
    i - W < j <= i (W keys including itself)
Qwen2 ("qwen2")
  - biases on q/k/v, none on o_proj or the MLP
  - sliding = sliding_window if use_sliding_window else None; layer_types (when
    absent) = "sliding_attention" if sliding is not None and i >= max_window_layers
    else "full_attention"; window only on sliding layers
Qwen3 ("qwen3")
  - q_norm / k_norm: RMSNorm over head_dim per head, applied after the projection
    and before RoPE; head_dim explicit (class default 128); attention_bias on q/k/v/o
  - same use_sliding_window / max_window_layers / layer_types rule as Qwen2
Gemma 3 text (Gemma3ForCausalLM, "gemma3_text")
  - embeddings * embed_scale, embed_scale = torch.tensor(hidden ** 0.5) (float32)
    cast to the embedding weight's dtype (fp32 here; bf16 would round sqrt(3072)
    55.4256 to 55.5)
  - RMSNorm as x * rsqrt(mean(x^2) + eps) * (1 + w) (weights stored zero-centred)
  - four norms per layer: input_layernorm -> attn -> post_attention_layernorm ->
    + residual; pre_feedforward_layernorm -> mlp -> post_feedforward_layernorm -> + residual
  - GeGLU: down(gelu_tanh(gate) * up), hidden_activation gelu_pytorch_tanh
  - q_norm / k_norm (Gemma RMSNorm over head_dim) before RoPE
  - attention scale query_pre_attn_scalar ** -0.5 (not head_dim)
  - layer_types (default: sliding unless (i + 1) % sliding_window_pattern == 0);
    sliding layers use `sliding_window` and the rope of rope_parameters["sliding_attention"]
    (classic: rope_theta = rope_local_base_freq, always "default" type), full layers
    rope_parameters["full_attention"] (classic: rope_theta + rope_scaling)
  - final_logit_softcapping c: logits = tanh(logits / c) * c (also what the loss sees);
    attn_logit_softcapping likewise on scores before the mask (null in Gemma 3)
Phi-3 / Phi-4-mini (Phi3ForCausalLM, "phi3")
  - fused qkv_proj [(Hq + 2 Hkv) * D, hidden] split q | k | v; fused gate_up_proj
    [2 * ffn, hidden] split gate | up (first half gate), mlp = down(up * silu(gate))
  - partial_rotary_factor: RoPE on the first int(D * f) features of each head,
    rotate_half within them, the rest passes through
  - sliding_window (when not null) on every layer, as Mistral
  - longrope: short_factor while max(position) + 1 <= original_max_position_embeddings,
    long_factor beyond (decided per forward call over the whole padded batch);
    attention factor sqrt(1 + ln(max_position_embeddings / original) / ln(original))
    when rope_parameters has no factor / attention_factor; generation drops the KV
    cache once when the length first exceeds original (so every token equals a
    full forward of the sequence so far)
SmolLM3 ("smollm3")
  - no_rope_layers[i] == 0 -> that layer skips RoPE; default list
    int((i + 1) % no_rope_layer_interval != 0) (every 4th layer NoPE)
OLMo 2 ("olmo2")
  - no input norm: h = h + post_attention_layernorm(attn(h));
    h = h + post_feedforward_layernorm(mlp(h))
  - q_norm over the whole q projection (heads * D), k_norm over (kv_heads * D),
    before splitting into heads and RoPE
Granite ("granite")
  - embeddings * embedding_multiplier; attention scale = attention_multiplier;
    residual adds branch * residual_multiplier; logits / logits_scaling
Scalars (multipliers, scales, softcaps) multiply float32 tensors, i.e. they act as
float32 values.
"""

import torch
import torch.nn.functional as F

from rope import cos_sin, rope_init

ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP = ("gate_proj", "up_proj", "down_proj")


def lora_targets(spec):
    """PEFT "all-linear" for the family: every linear layer but lm_head."""
    if spec["fused"]:
        return ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]
    return list(ATTN + MLP)


def module_path(name):
    return ("self_attn." if name in ATTN or name == "qkv_proj" else "mlp.") + name


def linear_shapes(spec):
    C, F_, D = spec["hidden"], spec["ffn"], spec["head_dim"]
    q, kv = spec["heads"] * D, spec["kv_heads"] * D
    return {"q_proj": (q, C), "k_proj": (kv, C), "v_proj": (kv, C), "o_proj": (C, q),
            "qkv_proj": (q + 2 * kv, C), "gate_proj": (F_, C), "up_proj": (F_, C),
            "gate_up_proj": (2 * F_, C), "down_proj": (C, F_)}


def weight_list(spec):
    """[(name, shape, kind)] in module order; kind: embed | linear | bias | norm (1 + N) | norm0 (N)."""
    C, D = spec["hidden"], spec["head_dim"]
    shapes = linear_shapes(spec)
    norm = "norm0" if spec["norm"] == "gemma" else "norm"
    out = [("model.embed_tokens.weight", (spec["vocab"], C), "embed")]
    for l in range(spec["layers"]):
        p = f"model.layers.{l}."
        if spec["layout"] != "post":
            out.append((p + "input_layernorm.weight", (C,), norm))
        for t in (["qkv_proj", "o_proj"] if spec["fused"] else list(ATTN)):
            out.append((p + f"self_attn.{t}.weight", shapes[t], "linear"))
            if t in spec["biases"]:
                out.append((p + f"self_attn.{t}.bias", shapes[t][:1], "bias"))
        if spec["qk_norm"] == "head":
            out += [(p + "self_attn.q_norm.weight", (D,), norm), (p + "self_attn.k_norm.weight", (D,), norm)]
        elif spec["qk_norm"] == "proj":
            out += [(p + "self_attn.q_norm.weight", (spec["heads"] * D,), norm),
                    (p + "self_attn.k_norm.weight", (spec["kv_heads"] * D,), norm)]
        out.append((p + "post_attention_layernorm.weight", (C,), norm))
        if spec["layout"] == "sandwich":
            out.append((p + "pre_feedforward_layernorm.weight", (C,), norm))
        for t in (["gate_up_proj", "down_proj"] if spec["fused"] else list(MLP)):
            out.append((p + f"mlp.{t}.weight", shapes[t], "linear"))
            if t in spec["biases"]:
                out.append((p + f"mlp.{t}.bias", shapes[t][:1], "bias"))
        if spec["layout"] in ("sandwich", "post"):
            out.append((p + "post_feedforward_layernorm.weight", (C,), norm))
    out.append(("model.norm.weight", (C,), norm))
    if not spec["tied"]:
        out.append(("lm_head.weight", (spec["vocab"], C), "head"))
    return out


def rms_norm(spec, x, w):
    x32 = x.to(torch.float32)
    normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + spec["eps"])
    return normed * (1.0 + w.float()) if spec["norm"] == "gemma" else w * normed


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, cos, sin):
    rot = cos.shape[-1]
    if rot == x.shape[-1]:
        return x * cos + rotate_half(x) * sin
    xr, xp = x[..., :rot], x[..., rot:]
    return torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    h, t, d = x.shape
    return x[:, None, :, :].expand(h, n_rep, t, d).reshape(h * n_rep, t, d)


def attention_mask(T, window):
    """0 where key j is visible from query i (j <= i, and i - window < j), -inf elsewhere."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    visible = j <= i
    if window is not None:
        visible = visible & (j > i - window)
    return torch.zeros(T, T).masked_fill(~visible, float("-inf"))


def forward(spec, W, ids, lora=None, rope_len=None):
    """Logits [T, V] of one unpadded sequence. rope_len: the length longrope decides on
    (max position + 1 of the forward call: the padded batch length for a batch)."""
    T = len(ids)
    rope_len = rope_len or T
    Hq, Hkv, D = spec["heads"], spec["kv_heads"], spec["head_dim"]
    act = F.silu if spec["act"] == "silu" else (lambda t: F.gelu(t, approximate="tanh"))
    x = W["model.embed_tokens.weight"][torch.tensor(ids)]
    if spec["embed_scale"] is not None:
        x = x * spec["embed_scale"]
    cache = {}

    def rope_for(params):
        key = repr(sorted(params.items()))
        if key not in cache:
            inv, af = rope_init(params, D, spec["max_pos"], seq_len=rope_len)
            cache[key] = cos_sin(inv, af, T)
        return cache[key]

    def residual(x, branch):
        return x + (branch * spec["residual_mult"] if spec["residual_mult"] is not None else branch)

    for l in range(spec["layers"]):
        p = f"model.layers.{l}."
        pairs = None if lora is None else lora["layers"][l]

        def lin(h, name):
            path = p + module_path(name)
            y = h @ W[path + ".weight"].T
            if path + ".bias" in W:
                y = y + W[path + ".bias"]
            if pairs is not None and name in pairs:
                a, b = pairs[name]
                y = y + lora["scale"] * ((h @ a.T) @ b.T)
            return y

        h = x if spec["layout"] == "post" else rms_norm(spec, x, W[p + "input_layernorm.weight"])
        if spec["fused"]:
            qkv = lin(h, "qkv_proj")
            q, k, v = qkv.split([Hq * D, Hkv * D, Hkv * D], dim=-1)
        else:
            q, k, v = lin(h, "q_proj"), lin(h, "k_proj"), lin(h, "v_proj")
        if spec["qk_norm"] == "proj":
            q = rms_norm(spec, q, W[p + "self_attn.q_norm.weight"])
            k = rms_norm(spec, k, W[p + "self_attn.k_norm.weight"])
        q = q.reshape(T, Hq, D).transpose(0, 1)
        k = k.reshape(T, Hkv, D).transpose(0, 1)
        v = v.reshape(T, Hkv, D).transpose(0, 1)
        if spec["qk_norm"] == "head":
            q = rms_norm(spec, q, W[p + "self_attn.q_norm.weight"])
            k = rms_norm(spec, k, W[p + "self_attn.k_norm.weight"])
        if spec["layer_rope"][l] is not None:
            cos, sin = rope_for(spec["layer_rope"][l])
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k, v = repeat_kv(k, Hq // Hkv), repeat_kv(v, Hq // Hkv)
        scores = (q @ k.transpose(1, 2)) * spec["attn_scale"]
        if spec["attn_softcap"]:
            scores = torch.tanh(scores / spec["attn_softcap"]) * spec["attn_softcap"]
        scores = scores + attention_mask(T, spec["layer_window"][l])
        att = torch.softmax(scores.float(), dim=-1) @ v
        o = lin(att.transpose(0, 1).reshape(T, Hq * D), "o_proj")
        if spec["layout"] in ("sandwich", "post"):
            o = rms_norm(spec, o, W[p + "post_attention_layernorm.weight"])
        x = residual(x, o)
        if spec["layout"] == "pre":
            h = rms_norm(spec, x, W[p + "post_attention_layernorm.weight"])
        elif spec["layout"] == "sandwich":
            h = rms_norm(spec, x, W[p + "pre_feedforward_layernorm.weight"])
        else:
            h = x
        if spec["fused"]:
            gate, up = lin(h, "gate_up_proj").chunk(2, dim=-1)
            m = up * act(gate)
        else:
            m = act(lin(h, "gate_proj")) * lin(h, "up_proj")
        m = lin(m, "down_proj")
        if spec["layout"] in ("sandwich", "post"):
            m = rms_norm(spec, m, W[p + "post_feedforward_layernorm.weight"])
        x = residual(x, m)
    x = rms_norm(spec, x, W["model.norm.weight"])
    head = W["model.embed_tokens.weight"] if spec["tied"] else W["lm_head.weight"]
    logits = x @ head.T
    if spec["logits_div"] is not None:
        logits = logits / spec["logits_div"]
    if spec["final_softcap"]:
        logits = torch.tanh(logits / spec["final_softcap"]) * spec["final_softcap"]
    return logits


def batch_loss(spec, W, seqs, labels, lora):
    """HF's shifted causal-LM loss over a right-padded batch: mean over every counted token.
    Padding never reaches a real token (causal mask), but longrope picks its factors from
    the padded length, so every row is run with rope_len = the batch's length."""
    T = max(len(s) for s in seqs)
    total, count = 0.0, 0
    for ids, lab in zip(seqs, labels):
        logits = forward(spec, W, ids, lora, rope_len=T)
        target = torch.tensor(lab[1:])
        total = total + F.cross_entropy(logits[:-1].float(), target, ignore_index=-100, reduction="sum")
        count += int((target != -100).sum())
    return total / count

#!/usr/bin/python3
"""Golden fixtures for @svc/engine, computed with PyTorch.

Writes small random Llama models in Hugging Face layout (config.json,
model.safetensors, a byte-level tokenizer) under packages/engine/fixtures/<case>/,
and for each: the logits of two sequences (base model and with a LoRA adapter),
the training loss of a padded batch with a loss mask, the LoRA gradients after
one backward pass, the LoRA weights after one clipped AdamW step, and a greedy
continuation.

The Llama math is written out here exactly as transformers' LlamaForCausalLM
computes it (no transformers import): RMSNorm in fp32 (x * rsqrt(mean(x^2)+eps) * w),
rotate_half RoPE with inv_freq = 1/theta^(2i/d), grouped-query attention via
repeat_kv, softmax attention with a causal mask and scale 1/sqrt(head_dim),
SwiGLU MLP, and the shifted cross-entropy (position i predicts token i+1).

Run: /usr/bin/python3 packages/engine/reference/make_fixtures.py
"""

import json
import math
import os
import struct
import sys

import torch

torch.set_num_threads(2)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures")

# ------------------------------------------------------------------ safetensors

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, tensor); written in that order."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    blobs = []
    offset = 0
    for name, t in tensors:
        t = t.detach().contiguous().cpu()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - (8 + len(text.encode())) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text.encode())))
        f.write(text.encode())
        for b in blobs:
            f.write(b)


# ------------------------------------------------------------------ tokenizer (byte-level, no merges)


def byte_to_unicode():
    table, extra = [], 0
    for b in range(256):
        printable = 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255
        table.append(chr(b) if printable else chr(256 + extra))
        if not printable:
            extra += 1
    return table


SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def write_tokenizer(folder):
    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for ch in byte_to_unicode():
        vocab[ch] = len(vocab)
    added = [
        {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        for i, s in enumerate(SPECIALS)
    ]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": {**byte_level, "trim_offsets": False},
        "decoder": byte_level,
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab, "merges": [],
        },
    }
    config = {
        "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"} for a in added},
        "bos_token": "<|im_start|>",
        "eos_token": "<|im_end|>",
        "pad_token": "<|im_end|>",
        "unk_token": "<|endoftext|>",
        "chat_template": CHATML,
        "model_max_length": 2048,
        "tokenizer_class": "GPT2Tokenizer",
        "clean_up_tokenization_spaces": False,
    }
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    return len(vocab)


# ------------------------------------------------------------------ the Llama math


def rms_norm(x, w, eps):
    x32 = x.to(torch.float32)
    return w * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps))


def rope_cos_sin(T, head_dim, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    pos = torch.arange(T, dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    h, t, d = x.shape
    return x[:, None, :, :].expand(h, n_rep, t, d).reshape(h * n_rep, t, d)


def linear(x, w, lora, name):
    y = x @ w.T
    if lora is not None and name in lora["pairs"]:
        a, b = lora["pairs"][name]
        y = y + lora["scale"] * ((x @ a.T) @ b.T)
    return y


def forward(cfg, W, ids, lora=None):
    """Logits [T, V] of one sequence (no padding, causal)."""
    T = len(ids)
    C, Hq, Hkv, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    x = W["model.embed_tokens.weight"][torch.tensor(ids)]
    cos, sin = rope_cos_sin(T, D, cfg["rope_theta"])
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        lo = None if lora is None else {"scale": lora["scale"], "pairs": lora["layers"][l]}
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = linear(h, W[p + "self_attn.q_proj.weight"], lo, "q_proj").view(T, Hq, D).transpose(0, 1)
        k = linear(h, W[p + "self_attn.k_proj.weight"], lo, "k_proj").view(T, Hkv, D).transpose(0, 1)
        v = linear(h, W[p + "self_attn.v_proj.weight"], lo, "v_proj").view(T, Hkv, D).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, Hq // Hkv)
        v = repeat_kv(v, Hq // Hkv)
        scores = (q @ k.transpose(1, 2)) / math.sqrt(D) + mask
        att = torch.softmax(scores.float(), dim=-1) @ v
        att = att.transpose(0, 1).reshape(T, Hq * D)
        x = x + linear(att, W[p + "self_attn.o_proj.weight"], lo, "o_proj")
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        g = linear(h, W[p + "mlp.gate_proj.weight"], lo, "gate_proj")
        u = linear(h, W[p + "mlp.up_proj.weight"], lo, "up_proj")
        x = x + linear(torch.nn.functional.silu(g) * u, W[p + "mlp.down_proj.weight"], lo, "down_proj")
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return x @ head.T


def batch_loss(cfg, W, seqs, labels, lora):
    """HF's shifted causal-LM loss, mean over every counted token of the batch."""
    total, count = 0.0, 0
    for ids, lab in zip(seqs, labels):
        logits = forward(cfg, W, ids, lora)
        target = torch.tensor(lab[1:])
        total = total + torch.nn.functional.cross_entropy(logits[:-1], target, ignore_index=-100, reduction="sum")
        count += int((target != -100).sum())
    return total / count


# ------------------------------------------------------------------ cases

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
ATTN = {"q_proj", "k_proj", "v_proj", "o_proj"}

CASES = [
    # GQA 3:1, odd sizes, untied head, F32 weights, rope_theta 10000
    dict(name="gqa-untied-f32", hidden=48, heads=3, kv=1, head_dim=None, ffn=100, vocab=300, layers=2,
         theta=10000.0, tied=False, dtype=torch.float32, seed=1),
    # multi-head (no grouping), tied embeddings, BF16 weights, rope_theta 100000
    dict(name="mha-tied-bf16", hidden=64, heads=4, kv=4, head_dim=None, ffn=96, vocab=290, layers=2,
         theta=100000.0, tied=True, dtype=torch.bfloat16, seed=2),
    # GQA 2:1 with an explicit head_dim != hidden/heads, F16 weights, three layers
    dict(name="gqa-headdim-f16", hidden=40, heads=4, kv=2, head_dim=12, ffn=72, vocab=280, layers=3,
         theta=100000.0, tied=False, dtype=torch.float16, seed=3),
]

LORA_R, LORA_ALPHA = 4, 8
LR, WD, BETAS, EPS = 1e-2, 0.1, (0.9, 0.999), 1e-8
GREEDY_TOKENS = 8


def make_case(case):
    g = torch.Generator().manual_seed(case["seed"])
    folder = os.path.join(OUT, case["name"])
    os.makedirs(folder, exist_ok=True)
    tok_vocab = write_tokenizer(folder)
    C, F, V, L = case["hidden"], case["ffn"], case["vocab"], case["layers"]
    Hq, Hkv = case["heads"], case["kv"]
    D = case["head_dim"] or C // Hq
    assert V >= tok_vocab
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": C, "intermediate_size": F,
        "num_hidden_layers": L, "num_attention_heads": Hq, "num_key_value_heads": Hkv, "hidden_act": "silu",
        "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": case["theta"], "rope_scaling": None,
        "vocab_size": V, "tie_word_embeddings": case["tied"], "attention_bias": False, "mlp_bias": False,
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": str(case["dtype"]).replace("torch.", ""),
    }
    if case["head_dim"]:
        cfg["head_dim"] = D
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    cfg["head_dim"] = D

    def randn(*shape, std):
        return torch.randn(*shape, generator=g) * std

    names = [("model.embed_tokens.weight", (V, C), 1.0)]
    for l in range(L):
        p = f"model.layers.{l}."
        names += [
            (p + "input_layernorm.weight", (C,), None),
            (p + "self_attn.q_proj.weight", (Hq * D, C), 0.15),
            (p + "self_attn.k_proj.weight", (Hkv * D, C), 0.15),
            (p + "self_attn.v_proj.weight", (Hkv * D, C), 0.15),
            (p + "self_attn.o_proj.weight", (C, Hq * D), 0.15),
            (p + "post_attention_layernorm.weight", (C,), None),
            (p + "mlp.gate_proj.weight", (F, C), 0.15),
            (p + "mlp.up_proj.weight", (F, C), 0.15),
            (p + "mlp.down_proj.weight", (C, F), 0.15),
        ]
    names.append(("model.norm.weight", (C,), None))
    if not case["tied"]:
        names.append(("lm_head.weight", (V, C), 0.2))
    W = {}
    for name, shape, std in names:
        t = 1.0 + randn(*shape, std=0.1) if std is None else randn(*shape, std=std)
        # the file's dtype is what the engine reads; the reference computes in
        # fp32 on exactly those (rounded) values, as transformers does when it
        # loads a half-precision checkpoint with torch_dtype=float32
        W[name] = t.to(case["dtype"]).to(torch.float32)
    write_safetensors(os.path.join(folder, "model.safetensors"),
                      [(n, W[n].to(case["dtype"])) for n, _, _ in names], {"format": "pt"})

    # two sequences of different lengths; the batch is right-padded with the pad id
    lengths = [13, 8]
    seqs = [torch.randint(3, tok_vocab, (n,), generator=g).tolist() for n in lengths]
    seqs[0][0] = 1  # <|im_start|>
    T = max(lengths)
    pad = 2
    # labels: the first 4 tokens are "prompt" (ignored), padding ignored
    labels = [[-100] * 4 + s[4:] for s in seqs]
    padded_ids = [s + [pad] * (T - len(s)) for s in seqs]
    padded_labels = [lab + [-100] * (T - len(lab)) for lab in labels]

    # LoRA on all seven projections: A kaiming-uniform(a=sqrt(5)) bound 1/sqrt(in), B nonzero so A gets gradients
    lora = {"scale": LORA_ALPHA / LORA_R, "layers": []}
    peft = []
    for l in range(L):
        pairs = {}
        for t in TARGETS:
            w = W[f"model.layers.{l}.{'self_attn' if t in ATTN else 'mlp'}.{t}.weight"]
            out_dim, in_dim = w.shape
            a = ((torch.rand(LORA_R, in_dim, generator=g) * 2 - 1) / math.sqrt(in_dim)).requires_grad_()
            b = randn(out_dim, LORA_R, std=0.05).requires_grad_()
            pairs[t] = (a, b)
            base = f"base_model.model.model.layers.{l}.{'self_attn' if t in ATTN else 'mlp'}.{t}"
            peft += [(base + ".lora_A.weight", a), (base + ".lora_B.weight", b)]
        lora["layers"].append(pairs)
    adapter_dir = os.path.join(folder, "adapter")
    os.makedirs(adapter_dir, exist_ok=True)
    write_safetensors(os.path.join(adapter_dir, "adapter_model.safetensors"), peft, {"format": "pt"})
    with open(os.path.join(adapter_dir, "adapter_config.json"), "w") as f:
        json.dump({
            "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": LORA_R, "lora_alpha": LORA_ALPHA,
            "lora_dropout": 0.0, "target_modules": TARGETS, "bias": "none", "fan_in_fan_out": False,
            "inference_mode": True, "base_model_name_or_path": case["name"], "use_rslora": False, "use_dora": False,
        }, f, indent=1)

    golden = []
    with torch.no_grad():
        for i, s in enumerate(seqs):
            golden.append((f"logits.{i}", forward(cfg, W, s)))
            golden.append((f"logits_lora.{i}", forward(cfg, W, s, lora)))

    # greedy continuation of the first sequence's first 6 tokens, base model and with LoRA
    # (before the AdamW step below changes the LoRA weights)
    def greedy(lo):
        ids = list(seqs[0][:6])
        margins = []
        with torch.no_grad():
            for _ in range(GREEDY_TOKENS):
                last = forward(cfg, W, ids, lo)[-1]
                top = torch.topk(last, 2).values
                margins.append(float(top[0] - top[1]))
                ids.append(int(torch.argmax(last)))
        return ids[6:], min(margins)

    greedy_base, margin_base = greedy(None)
    with torch.no_grad():
        greedy_lora, margin_lora = greedy(lora)


    loss = batch_loss(cfg, W, seqs, labels, lora)
    loss.backward()
    params = [p for _, p in peft]
    for name, p in peft:
        golden.append((f"grad.{name}", p.grad.clone()))
    grad_norm = float(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params)))
    max_grad_norm = round(grad_norm * 0.5, 6)  # clipping is active
    torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    opt = torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    opt.step()
    for name, p in peft:
        golden.append((f"updated.{name}", p.detach().clone()))

    write_safetensors(os.path.join(folder, "golden.safetensors"), golden, {"format": "pt"})
    meta = {
        "input_ids": padded_ids, "labels": padded_labels, "lengths": lengths,
        "loss": float(loss), "grad_norm": grad_norm,
        "lora": {"r": LORA_R, "alpha": LORA_ALPHA, "targets": TARGETS},
        "adamw": {"lr": LR, "weight_decay": WD, "beta1": BETAS[0], "beta2": BETAS[1], "eps": EPS,
                  "max_grad_norm": max_grad_norm},
        "greedy": {"prompt": seqs[0][:6], "base": greedy_base, "lora": greedy_lora,
                   "min_margin_base": margin_base, "min_margin_lora": margin_lora},
        "torch_version": torch.__version__,
    }
    with open(os.path.join(folder, "golden.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{case['name']}: loss {float(loss):.6f}, grad norm {grad_norm:.4f}, "
          f"greedy margins {margin_base:.4f} / {margin_lora:.4f}", file=sys.stderr)


if __name__ == "__main__":
    for c in CASES:
        make_case(c)

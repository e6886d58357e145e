"""PyTorch side of bench/decode.mjs: batch-1 greedy decode with a KV cache.

The model is written the way Hugging Face's LlamaForCausalLM computes it
(RMSNorm, rotate_half RoPE, repeat_kv for grouped-query attention, eager
attention, SwiGLU MLP, tied LM head) with a cache that grows by torch.cat per
step, as DynamicCache does. Random weights: speed does not depend on values.

Usage: /usr/bin/python3 bench/decode_torch.py '<json: shape, prompt, tokens, reps, threads>'
Prints one JSON line: {"tokens_per_s": [decode tokens/s of each repetition], "peak_rss_mib"}.
"""

import json
import math
import resource
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = c["heads"], c["kv_heads"], c["head_dim"]
        h = c["hidden"]
        self.q_proj = nn.Linear(h, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.n_kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, self.n_kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, h, bias=False)

    def forward(self, x, cos, sin, cache, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_kv, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache[0] is not None:
            k = torch.cat([cache[0], k], dim=-2)
            v = torch.cat([cache[1], v], dim=-2)
        cache[0], cache[1] = k, v
        k = repeat_kv(k, self.n_heads // self.n_kv)
        v = repeat_kv(v, self.n_heads // self.n_kv)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c["hidden"], c["ffn"], bias=False)
        self.up_proj = nn.Linear(c["hidden"], c["ffn"], bias=False)
        self.down_proj = nn.Linear(c["ffn"], c["hidden"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden"], 1e-5)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden"], 1e-5)
        self.mlp = MLP(c)

    def forward(self, x, cos, sin, cache, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c["layers"])])
        self.norm = RMSNorm(c["hidden"], 1e-5)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # tied
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, c["head_dim"], 2, dtype=torch.float32) / c["head_dim"]))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, ids, past, caches):
        t = ids.shape[1]
        positions = torch.arange(past, past + t, dtype=torch.float32)
        freqs = torch.outer(positions, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = None
        if t > 1:
            mask = torch.full((t, past + t), float("-inf")).triu(past + 1)[None, None]
        x = self.embed_tokens(ids)
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cos, sin, cache, mask)
        return self.lm_head(self.norm(x[:, -1:, :]))


def main():
    args = json.loads(sys.argv[1])
    torch.set_num_threads(args.get("threads", 2))
    torch.manual_seed(0)
    c = args["shape"]
    model = Llama(c).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.05, 0.05)
    prompt = torch.randint(0, c["vocab"], (1, args["prompt"]))
    runs = []
    with torch.inference_mode():
        for _ in range(args.get("reps", 1)):
            caches = [[None, None] for _ in range(c["layers"])]
            logits = model(prompt, 0, caches)
            past = args["prompt"]
            token = logits[:, -1].argmax(-1, keepdim=True)
            start = time.perf_counter()
            for _ in range(args["tokens"]):
                logits = model(token, past, caches)
                past += 1
                token = logits[:, -1].argmax(-1, keepdim=True)
            runs.append(args["tokens"] / (time.perf_counter() - start))
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"tokens_per_s": runs, "peak_rss_mib": peak_mib}))

if __name__ == "__main__":
    main()

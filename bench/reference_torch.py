#!/usr/bin/python3
"""PyTorch side of bench/engine.mjs: LoRA training and KV-cache decode speed.

The same Llama math as packages/engine/reference/make_fixtures.py, batched:
RMSNorm, rotate_half RoPE, grouped-query attention with a causal mask,
SwiGLU, LoRA (PEFT's x·Aᵀ·Bᵀ·scale) on the seven projections, frozen base
weights, full-vocabulary logits and HF's shifted cross-entropy, then
clip_grad_norm_ and torch.optim.AdamW. fp32, torch.set_num_threads(2).

Prints one JSON line: train_tokens_per_s, decode_tokens_per_s, peak_rss_mb.
"""

import argparse
import json
import math
import resource
import time

import torch
import torch.nn.functional as F

SHAPES = {
    "tiny": dict(hidden=256, layers=4, heads=4, kv=4, ffn=688, vocab=4096, tied=False, seq=256, batch=8),
    "small": dict(hidden=576, layers=30, heads=9, kv=3, ffn=1536, vocab=49152, tied=True, seq=256, batch=4),
}
TARGETS = ["q", "k", "v", "o", "gate", "up", "down"]


class Llama:
    def __init__(self, s, r, alpha, theta=10000.0, eps=1e-5):
        g = torch.Generator().manual_seed(0)
        C, Fh, V = s["hidden"], s["ffn"], s["vocab"]
        self.s, self.eps, self.scale = s, eps, alpha / r
        self.D = C // s["heads"]
        Q, K = s["heads"] * self.D, s["kv"] * self.D

        def w(o, i):
            return torch.randn(o, i, generator=g) * 0.02

        self.embed = torch.randn(V, C, generator=g) * 0.02
        self.head = self.embed if s["tied"] else w(V, C)
        self.norm = torch.ones(C)
        self.layers = []
        self.lora = []
        shapes = {"q": (Q, C), "k": (K, C), "v": (K, C), "o": (C, Q), "gate": (Fh, C), "up": (Fh, C), "down": (C, Fh)}
        for _ in range(s["layers"]):
            layer = {t: w(*shapes[t]) for t in TARGETS}
            layer["ln1"], layer["ln2"] = torch.ones(C), torch.ones(C)
            self.layers.append(layer)
            pairs = {}
            for t in TARGETS:
                o, i = shapes[t]
                a = ((torch.rand(r, i, generator=g) * 2 - 1) / math.sqrt(i)).requires_grad_()
                b = torch.zeros(o, r).requires_grad_()
                pairs[t] = (a, b)
            self.lora.append(pairs)
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.D, 2).float() / self.D))
        freqs = torch.outer(torch.arange(4096).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()

    def params(self):
        return [p for pairs in self.lora for t in TARGETS for p in pairs[t]]

    def rms(self, x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def lin(self, x, l, t):
        a, b = self.lora[l][t]
        return F.linear(x, self.layers[l][t]) + F.linear(F.linear(x, a), b) * self.scale

    @staticmethod
    def rot(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    def forward(self, ids, cache=None, start=0):
        """ids [B,T]; with cache (list of [k, v] per layer) keys/values are appended."""
        s, D = self.s, self.D
        Bn, T = ids.shape
        x = self.embed[ids]
        cos, sin = self.cos[start:start + T], self.sin[start:start + T]
        S = start + T
        mask = torch.full((T, S), float("-inf")).triu(start + 1)
        for l, layer in enumerate(self.layers):
            h = self.rms(x, layer["ln1"])
            q = self.lin(h, l, "q").view(Bn, T, s["heads"], D).transpose(1, 2)
            k = self.lin(h, l, "k").view(Bn, T, s["kv"], D).transpose(1, 2)
            v = self.lin(h, l, "v").view(Bn, T, s["kv"], D).transpose(1, 2)
            q = q * cos + self.rot(q) * sin
            k = k * cos + self.rot(k) * sin
            if cache is not None:
                if cache[l] is not None:
                    k = torch.cat((cache[l][0], k), dim=2)
                    v = torch.cat((cache[l][1], v), dim=2)
                cache[l] = (k, v)
            rep = s["heads"] // s["kv"]
            if rep > 1:
                k = k.repeat_interleave(rep, dim=1)
                v = v.repeat_interleave(rep, dim=1)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + mask, dim=-1) @ v
            x = x + self.lin(att.transpose(1, 2).reshape(Bn, T, -1), l, "o")
            h = self.rms(x, layer["ln2"])
            x = x + self.lin(F.silu(self.lin(h, l, "gate")) * self.lin(h, l, "up"), l, "down")
        return F.linear(self.rms(x, self.norm), self.head)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=SHAPES, default="tiny")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--decode-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    s = SHAPES[args.shape]
    model = Llama(s, r=16, alpha=32)
    params = model.params()
    opt = torch.optim.AdamW(params, lr=2e-4, weight_decay=0.0)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, s["vocab"], (s["batch"], s["seq"]), generator=g)

    def step():
        logits = model.forward(ids)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, s["vocab"]), ids[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(loss)

    for _ in range(args.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    train_s = time.perf_counter() - t0

    # decode: batch 1, a 16-token prompt, then one token at a time with the KV cache
    with torch.no_grad():
        cache = [None] * s["layers"]
        prompt = ids[:1, :16]
        logits = model.forward(prompt, cache, 0)
        token = logits[:, -1].argmax(-1, keepdim=True)
        t0 = time.perf_counter()
        for i in range(args.decode_tokens):
            logits = model.forward(token, cache, 16 + i)
            token = logits[:, -1].argmax(-1, keepdim=True)
        decode_s = time.perf_counter() - t0

    print(json.dumps({
        "engine": "pytorch",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "train_tokens_per_s": s["batch"] * s["seq"] * args.steps / train_s,
        "train_step_s": train_s / args.steps,
        "decode_tokens_per_s": args.decode_tokens / decode_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


if __name__ == "__main__":
    main()

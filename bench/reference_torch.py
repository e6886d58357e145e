#!/usr/bin/python3
"""PyTorch side of bench/engine.mjs and bench/decode.mjs: LoRA training and
KV-cache decode speed of any family the engine computes.

The model is read from a config.json object through the repo's PyTorch
reference (packages/engine/reference/configs.py: the block spec transformers 5
would build), with its names, shapes and helpers (families.py: weight_list,
lora_targets, rms_norm with Gemma's (1 + w), apply_rope with partial rotary,
rope.py: every rope type). What this file adds is the batched, cached form
of families.forward, the way transformers' eager modules compute it: [B, T]
at once, repeat_kv for grouped-query attention, an additive mask per
attention window, and a KV cache grown by torch.cat per step (DynamicCache).
So per family: Qwen2's q/k/v biases, Gemma 3's GeGLU, four norms, (1 + w)
weights, per-head q/k norms, √hidden embedding scale, query_pre_attn_scalar,
sliding layers on their own rope base, final-logit softcap when set; OLMo 2's
post-norms, Granite's multipliers, Phi-3's fused projections, SmolLM3's NoPE
layers. `--check` compares it with families.forward on every fixture case.

Training: LoRA (PEFT's x·Aᵀ·Bᵀ·scale) on every linear layer but lm_head,
frozen fp32 base weights, full-vocabulary logits and HF's shifted
cross-entropy, clip_grad_norm_ and torch.optim.AdamW. Decode: the base
model (no adapter) at batch 1, greedy, a 16-token prompt then one token at a
time with the KV cache; "steps": 0 decodes only.

Usage:
  /usr/bin/python3 bench/reference_torch.py '<json>'   # keys: config, batch, seq, steps, warmup,
                                                      # decode_tokens, prompt, reps, r, alpha, threads
  /usr/bin/python3 bench/reference_torch.py --check   # batched/cached forward == families.forward
Prints one JSON line: train_tokens_per_s, train_step_s, decode_tokens_per_s
(the best of `reps` decode runs; all of them in decode_runs), peak_rss_mb.
"""

import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "packages", "engine", "reference")
sys.path.insert(0, REFERENCE)
from configs import parse  # noqa: E402
from families import apply_rope, linear_shapes, lora_targets, module_path, rms_norm, weight_list  # noqa: E402
from rope import cos_sin, rope_init  # noqa: E402


def repeat_kv(x, n_rep):
    """[B, Hkv, T, D] -> [B, Hkv * n_rep, T, D], as transformers' repeat_kv."""
    if n_rep == 1:
        return x
    b, h, t, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, t, d).reshape(b, h * n_rep, t, d)


def random_weights(spec, seed=0):
    """Weights under families.py's checkpoint names; speed does not depend on the values."""
    g = torch.Generator().manual_seed(seed)
    W = {}
    for name, shape, kind in weight_list(spec):
        if kind == "norm":
            W[name] = torch.ones(*shape)
        elif kind == "norm0":  # Gemma's zero-centred weights, applied as (1 + w)
            W[name] = torch.zeros(*shape)
        else:
            W[name] = torch.randn(*shape, generator=g) * 0.02
    return W


def random_lora(spec, W, r, alpha, seed=1):
    """PEFT's init: A ~ U(-1/√in, 1/√in), B = 0; families.py's lora layout."""
    g = torch.Generator().manual_seed(seed)
    layers = []
    for l in range(spec["layers"]):
        pairs = {}
        for t in lora_targets(spec):
            out_dim, in_dim = W[f"model.layers.{l}.{module_path(t)}.weight"].shape
            a = ((torch.rand(r, in_dim, generator=g) * 2 - 1) / math.sqrt(in_dim)).requires_grad_()
            b = torch.zeros(out_dim, r).requires_grad_()
            pairs[t] = (a, b)
        layers.append(pairs)
    return {"scale": alpha / r, "layers": layers}


class FamilyModel:
    """families.forward, batched [B, T], with an optional KV cache (decode)."""

    def __init__(self, spec, W, lora=None):
        self.spec, self.W, self.lora = spec, W, lora
        self.head = W["model.embed_tokens.weight"] if spec["tied"] else W["lm_head.weight"]
        self.tables = {}  # (rope params, length) -> (cos, sin) [length, rot]
        self.masks = {}

    def params(self):
        return [p for pairs in self.lora["layers"] for ab in pairs.values() for p in ab]

    def rope(self, params, start, T, rope_len):
        key = (repr(sorted(params.items())), rope_len)
        if key not in self.tables:
            inv, af = rope_init(params, self.spec["head_dim"], self.spec["max_pos"], seq_len=rope_len)
            self.tables[key] = cos_sin(inv, af, rope_len)
        cos, sin = self.tables[key]
        return cos[start:start + T], sin[start:start + T]

    def mask(self, window, start, T, S):
        """[T, S]: 0 where key j is visible from query start + i (j <= i, i - window < j), -inf elsewhere."""
        key = (window, start, T, S)
        if key not in self.masks:
            i = torch.arange(start, start + T)[:, None]
            j = torch.arange(S)[None, :]
            visible = j <= i
            if window is not None:
                visible = visible & (j > i - window)
            self.masks[key] = torch.zeros(T, S).masked_fill(~visible, float("-inf"))
        return self.masks[key]

    def lin(self, h, l, name):
        path = f"model.layers.{l}.{module_path(name)}"
        y = F.linear(h, self.W[path + ".weight"], self.W.get(path + ".bias"))
        pairs = None if self.lora is None else self.lora["layers"][l]
        if pairs is not None and name in pairs:
            a, b = pairs[name]
            y = y + F.linear(F.linear(h, a), b) * self.lora["scale"]
        return y

    def forward(self, ids, cache=None, start=0, rope_len=None):
        """Logits [B, T, V] of ids [B, T] at positions start.. ; cache: a list of (k, v) per layer, appended."""
        s, W = self.spec, self.W
        B, T = ids.shape
        Hq, Hkv, D = s["heads"], s["kv_heads"], s["head_dim"]
        S = start + T
        rope_len = rope_len or S
        act = F.silu if s["act"] == "silu" else (lambda t: F.gelu(t, approximate="tanh"))
        mult = s["residual_mult"]
        x = W["model.embed_tokens.weight"][ids]
        if s["embed_scale"] is not None:
            x = x * s["embed_scale"]
        for l in range(s["layers"]):
            p = f"model.layers.{l}."
            h = x if s["layout"] == "post" else rms_norm(s, x, W[p + "input_layernorm.weight"])
            if s["fused"]:
                q, k, v = self.lin(h, l, "qkv_proj").split([Hq * D, Hkv * D, Hkv * D], dim=-1)
            else:
                q, k, v = self.lin(h, l, "q_proj"), self.lin(h, l, "k_proj"), self.lin(h, l, "v_proj")
            if s["qk_norm"] == "proj":
                q = rms_norm(s, q, W[p + "self_attn.q_norm.weight"])
                k = rms_norm(s, k, W[p + "self_attn.k_norm.weight"])
            q = q.view(B, T, Hq, D).transpose(1, 2)
            k = k.view(B, T, Hkv, D).transpose(1, 2)
            v = v.view(B, T, Hkv, D).transpose(1, 2)
            if s["qk_norm"] == "head":
                q = rms_norm(s, q, W[p + "self_attn.q_norm.weight"])
                k = rms_norm(s, k, W[p + "self_attn.k_norm.weight"])
            if s["layer_rope"][l] is not None:
                cos, sin = self.rope(s["layer_rope"][l], start, T, rope_len)
                q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            if cache is not None:
                if cache[l] is not None:
                    k = torch.cat((cache[l][0], k), dim=2)
                    v = torch.cat((cache[l][1], v), dim=2)
                cache[l] = (k, v)
            k, v = repeat_kv(k, Hq // Hkv), repeat_kv(v, Hq // Hkv)
            scores = (q @ k.transpose(-1, -2)) * s["attn_scale"]
            if s["attn_softcap"]:
                scores = torch.tanh(scores / s["attn_softcap"]) * s["attn_softcap"]
            scores = scores + self.mask(s["layer_window"][l], start, T, S)
            att = torch.softmax(scores.float(), dim=-1) @ v
            o = self.lin(att.transpose(1, 2).reshape(B, T, Hq * D), l, "o_proj")
            if s["layout"] in ("sandwich", "post"):
                o = rms_norm(s, o, W[p + "post_attention_layernorm.weight"])
            x = x + (o * mult if mult is not None else o)
            if s["layout"] == "pre":
                h = rms_norm(s, x, W[p + "post_attention_layernorm.weight"])
            elif s["layout"] == "sandwich":
                h = rms_norm(s, x, W[p + "pre_feedforward_layernorm.weight"])
            else:
                h = x
            if s["fused"]:
                gate, up = self.lin(h, l, "gate_up_proj").chunk(2, dim=-1)
            else:
                gate, up = self.lin(h, l, "gate_proj"), self.lin(h, l, "up_proj")
            m = self.lin(act(gate) * up, l, "down_proj")
            if s["layout"] in ("sandwich", "post"):
                m = rms_norm(s, m, W[p + "post_feedforward_layernorm.weight"])
            x = x + (m * mult if mult is not None else m)
        logits = F.linear(rms_norm(s, x, W["model.norm.weight"]), self.head)
        if s["logits_div"] is not None:
            logits = logits / s["logits_div"]
        if s["final_softcap"]:
            logits = torch.tanh(logits / s["final_softcap"]) * s["final_softcap"]
        return logits


def bench(args):
    torch.set_num_threads(args.get("threads", 2))
    spec = parse(args["config"])
    W = random_weights(spec)
    model = FamilyModel(spec, W, random_lora(spec, W, args.get("r", 16), args.get("alpha", 32)))
    params = model.params()
    opt = torch.optim.AdamW(params, lr=2e-4, weight_decay=0.0)
    batch, seq, V = args["batch"], args["seq"], spec["vocab"]
    ids = torch.randint(0, V, (batch, seq), generator=torch.Generator().manual_seed(2))

    def step():
        logits = model.forward(ids)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(loss)

    steps = args.get("steps", 2)
    for _ in range(args.get("warmup", 1) if steps else 0):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    train_s = time.perf_counter() - t0

    # decode the base model (no adapter), as the engine's benchmarks do
    base = FamilyModel(spec, W)
    prompt_len, tokens = args.get("prompt", 16), args.get("decode_tokens", 32)
    runs = []
    with torch.inference_mode():
        for _ in range(args.get("reps", 1)):
            cache = [None] * spec["layers"]
            logits = base.forward(ids[:1, :prompt_len], cache, 0)
            token = logits[:, -1].argmax(-1, keepdim=True)
            t0 = time.perf_counter()
            for i in range(tokens):
                logits = base.forward(token, cache, prompt_len + i)
                token = logits[:, -1].argmax(-1, keepdim=True)
            runs.append(tokens / (time.perf_counter() - t0))
    return {
        "engine": "pytorch",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "train_tokens_per_s": batch * seq * steps / train_s if steps else None,
        "train_step_s": train_s / steps if steps else None,
        "decode_tokens_per_s": max(runs) if runs else None,
        "decode_runs": runs,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def check():
    """The batched forward and the cached decode equal families.forward on every fixture case."""
    from cases import NEW
    from families import forward
    from make_fixtures import build

    torch.set_num_threads(2)
    worst = 0.0
    for case in NEW:
        b = build(case, case["seed"], legacy=False)
        spec, W, lora = b["spec"], b["W"], b["lora"]
        model = FamilyModel(spec, W, lora)
        g = torch.Generator().manual_seed(case["seed"])
        T = 12
        ids = torch.randint(3, 259, (2, T), generator=g)
        with torch.no_grad():
            want = torch.stack([forward(spec, W, row.tolist(), lora) for row in ids])
            got = model.forward(ids)
            # decode: a 5-token prefill, then one token at a time; every step's logits as a full forward's
            cache = [None] * spec["layers"]
            steps = [model.forward(ids[:, :5], cache, 0)]
            for t in range(5, T):
                steps.append(model.forward(ids[:, t:t + 1], cache, t))
            cached = torch.cat(steps, dim=1)
            # longrope picks its factors by the length so far: compare with a forward of each prefix
            prefix = torch.stack([
                torch.cat([forward(spec, W, row[:5].tolist(), lora)]
                          + [forward(spec, W, row[:t + 1].tolist(), lora)[-1:] for t in range(5, T)])
                for row in ids
            ])
        # transformers drops a longrope cache when a sequence outgrows the original context; compare within it
        within = min([r["original_max_position_embeddings"] for r in spec["layer_rope"]
                      if r and r.get("rope_type") == "longrope"] + [T])
        scale = want.abs().max().item()
        err = max((got - want).abs().max().item(), (cached - prefix)[:, :within].abs().max().item()) / scale
        worst = max(worst, err)
        print(f"{case['name']:34s} max rel error {err:.2e}")
        if err > 1e-4:
            raise SystemExit(f"{case['name']}: the batched forward differs from families.forward")
    print(f"all {len(NEW)} cases agree (worst {worst:.2e})")


def main():
    if sys.argv[1:] == ["--check"]:
        check()
        return
    print(json.dumps(bench(json.loads(sys.argv[1]))))


if __name__ == "__main__":
    main()

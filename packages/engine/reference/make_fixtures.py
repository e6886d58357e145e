#!/usr/bin/python3
"""Golden fixtures for @svc/engine, computed with PyTorch.

Writes small random models in Hugging Face layout (config.json as transformers
writes it, model.safetensors, a byte-level tokenizer, sometimes
generation_config.json) under packages/engine/fixtures/<case>/, and for each:
the logits of two sequences (base model and with a PEFT LoRA adapter on every
linear layer but lm_head), the training loss of a right-padded batch with a
loss mask, the LoRA gradients after one backward pass, the LoRA weights after
one clipped AdamW step, and greedy continuations.

The math (families.py, rope.py) is written out as transformers 5 computes it,
for Llama, Mistral, Qwen2, Qwen3, Gemma 3 text, Phi-3, SmolLM3, OLMo 2 and
Granite (no transformers import). The model reads its own config.json back
through configs.parse, as transformers would. Weights are rounded to the
file's dtype and the reference computes in fp32 on those values.

Run: /usr/bin/python3 packages/engine/reference/make_fixtures.py [case-name ...]

Without names it writes every case but the three original Llama ones
(gqa-untied-f32, mha-tied-bf16, gqa-headdim-f16): their committed outputs are
kept as they are (other tests depend on them). Name them to rewrite them:
their weights, configs and adapters come out byte-identical, their goldens
differ in the last bits (up to ~2e-5 relative in a gradient tensor) from the
committed ones, which came from another BLAS build, and gqa-headdim-f16 also
from scaling scores by head_dim ** -0.5 (as transformers) instead of dividing
by sqrt(head_dim).
"""

import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import LEGACY, NEW  # noqa: E402
from config_json import classic_config, dumps, v5_config  # noqa: E402
from configs import describe, parse  # noqa: E402
from families import batch_loss, forward, lora_targets, module_path, weight_list  # noqa: E402
from fixture_io import write_safetensors, write_tokenizer  # noqa: E402

torch.set_num_threads(2)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures")

LORA_R, LORA_ALPHA = 4, 8
LR, WD, BETAS, EPS = 1e-2, 0.1, (0.9, 0.999), 1e-8
GREEDY_PROMPT, GREEDY_TOKENS = 6, 8
MIN_MARGIN = 2e-3
STD = {"embed": 1.0, "linear": 0.15, "head": 0.2, "bias": 0.05, "norm0": 0.1}


def legacy_config(case):
    """The original Llama cases' config.json, key for key."""
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": case["hidden"],
        "intermediate_size": case["ffn"], "num_hidden_layers": case["layers"],
        "num_attention_heads": case["heads"], "num_key_value_heads": case["kv"], "hidden_act": "silu",
        "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": case["theta"], "rope_scaling": None,
        "vocab_size": case["vocab"], "tie_word_embeddings": case["tied"], "attention_bias": False, "mlp_bias": False,
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": str(case["dtype"]).replace("torch.", ""),
    }
    if case["head_dim"]:
        cfg["head_dim"] = case["head_dim"]
    return cfg, json.dumps(cfg, indent=1)


def new_config(case):
    case = dict(case, dtype_name=str(case["dtype"]).replace("torch.", ""))
    cfg = v5_config(case) if case["form"] == "v5" else classic_config(case)
    return cfg, dumps(cfg)


def build(case, seed, legacy):
    """Everything but the files: config, spec, weights, batch, LoRA pairs."""
    g = torch.Generator().manual_seed(seed)
    cfg, text = legacy_config(case) if legacy else new_config(case)
    spec = parse(cfg)

    def randn(*shape, std):
        return torch.randn(*shape, generator=g) * std

    std = dict(STD)
    if not legacy:  # a tied head on N(0, 1) embeddings gives logits far larger than real models have
        std["embed"] = case.get("embed_std", 0.4 if spec["tied"] else 1.0)
    W, order = {}, []
    for name, shape, kind in weight_list(spec):
        t = 1.0 + randn(*shape, std=0.1) if kind == "norm" else randn(*shape, std=std[kind])
        W[name] = t.to(case["dtype"]).to(torch.float32)
        order.append(name)
    lengths = [13, 8]
    seqs = [torch.randint(3, 259, (n,), generator=g).tolist() for n in lengths]
    seqs[0][0] = 1  # <|im_start|>
    # A kaiming-uniform(a=sqrt(5)) bound 1/sqrt(in), B nonzero so A gets gradients
    layers, peft = [], []
    for l in range(spec["layers"]):
        pairs = {}
        for t in lora_targets(spec):
            out_dim, in_dim = W[f"model.layers.{l}.{module_path(t)}.weight"].shape
            a = ((torch.rand(LORA_R, in_dim, generator=g) * 2 - 1) / math.sqrt(in_dim)).requires_grad_()
            b = randn(out_dim, LORA_R, std=0.05).requires_grad_()
            pairs[t] = (a, b)
            base = f"base_model.model.model.layers.{l}.{module_path(t)}"
            peft += [(base + ".lora_A.weight", a), (base + ".lora_B.weight", b)]
        layers.append(pairs)
    lora = {"scale": LORA_ALPHA / LORA_R, "layers": layers}
    return dict(cfg=cfg, text=text, spec=spec, W=W, order=order, seqs=seqs, lengths=lengths, lora=lora, peft=peft)


def greedy(spec, W, prompt, lora):
    """Full forward per step (longrope: the rope length is the current length)."""
    ids, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(GREEDY_TOKENS):
            last = forward(spec, W, ids, lora)[-1]
            top = torch.topk(last, 2).values
            margins.append(float(top[0] - top[1]))
            ids.append(int(torch.argmax(last)))
    return ids[len(prompt):], min(margins)


def make_case(case, legacy=False):
    seed = case["seed"]
    while True:
        m = build(case, seed, legacy)
        prompt = m["seqs"][0][:GREEDY_PROMPT]
        greedy_base, margin_base = greedy(m["spec"], m["W"], prompt, None)
        greedy_lora, margin_lora = greedy(m["spec"], m["W"], prompt, m["lora"])
        if legacy or min(margin_base, margin_lora) > MIN_MARGIN:
            break
        seed += 1000  # re-seed until every greedy step has a clear winner
    spec, W, seqs, lengths, lora, peft = m["spec"], m["W"], m["seqs"], m["lengths"], m["lora"], m["peft"]
    folder = os.path.join(OUT, case["name"])
    os.makedirs(folder, exist_ok=True)
    write_tokenizer(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write(m["text"])
    if case.get("generation"):
        with open(os.path.join(folder, "generation_config.json"), "w") as f:
            gen = dict(case["generation"], transformers_version=m["cfg"]["transformers_version"])
            f.write(json.dumps(gen, indent=2, sort_keys=True) + "\n")
    write_safetensors(os.path.join(folder, "model.safetensors"),
                      [(n, W[n].to(case["dtype"])) for n in m["order"]], {"format": "pt"})

    T, pad = max(lengths), 2
    labels = [[-100] * 4 + s[4:] for s in seqs]  # the first 4 tokens are "prompt"
    padded_ids = [s + [pad] * (T - len(s)) for s in seqs]
    padded_labels = [lab + [-100] * (T - len(lab)) for lab in labels]
    targets = lora_targets(spec)
    adapter_dir = os.path.join(folder, "adapter")
    os.makedirs(adapter_dir, exist_ok=True)
    write_safetensors(os.path.join(adapter_dir, "adapter_model.safetensors"), peft, {"format": "pt"})
    with open(os.path.join(adapter_dir, "adapter_config.json"), "w") as f:
        json.dump({
            "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": LORA_R, "lora_alpha": LORA_ALPHA,
            "lora_dropout": 0.0, "target_modules": targets, "bias": "none", "fan_in_fan_out": False,
            "inference_mode": True, "base_model_name_or_path": case["name"], "use_rslora": False, "use_dora": False,
        }, f, indent=1)

    golden = []
    with torch.no_grad():
        for i, s in enumerate(seqs):
            golden.append((f"logits.{i}", forward(spec, W, s)))
            golden.append((f"logits_lora.{i}", forward(spec, W, s, lora)))
    loss = batch_loss(spec, W, seqs, labels, lora)
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
        "lora": {"r": LORA_R, "alpha": LORA_ALPHA, "targets": targets},
        "adamw": {"lr": LR, "weight_decay": WD, "beta1": BETAS[0], "beta2": BETAS[1], "eps": EPS,
                  "max_grad_norm": max_grad_norm},
        "greedy": {"prompt": seqs[0][:GREEDY_PROMPT], "base": greedy_base, "lora": greedy_lora,
                   "min_margin_base": margin_base, "min_margin_lora": margin_lora},
        "torch_version": torch.__version__,
    }
    if not legacy:
        meta["family"] = spec["family"]
        meta["seed"] = seed
    with open(os.path.join(folder, "golden.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{case['name']}: {describe(spec)}\n    loss {float(loss):.6f}, grad norm {grad_norm:.4f}, "
          f"greedy margins {margin_base:.4f} / {margin_lora:.4f}, seed {seed}", file=sys.stderr)


if __name__ == "__main__":
    wanted = set(sys.argv[1:])
    for c in LEGACY:
        if c["name"] in wanted:
            make_case(c, legacy=True)
    for c in NEW:
        if not wanted or c["name"] in wanted:
            make_case(c)

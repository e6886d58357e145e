#!/usr/bin/python3
"""A whole GRPO update for @svc/engine, computed with PyTorch.

For some of fixtures/<case>/ (a small random model and its PEFT adapter, written by
make_fixtures.py) this writes grpo.json and grpo.safetensors: two groups of three
fixed completions (sampling switched off: a prompt of untrained tokens, then
completions of different lengths), their rewards, and for each setting the loss
and the gradients of the LoRA factors, by torch.autograd.

Written from the papers (DeepSeekMath's GRPO, PPO's clipped surrogate, DAPO's
token-level normalisation), in fp32 on the file's weights, log-softmax and loss
in float64:
  A_i = (r_i - mean(group)) / (std(group) + 1e-4)      (std Bessel-corrected)
  per token t of completion i: ratio = exp(logpi - logpi.detach())  (old = current)
  l_it = -min(ratio * A_i, clip(ratio, 1 - eps, 1 + eps) * A_i) + beta * k3,
  k3 = exp(ref - logpi) - (ref - logpi) - 1, ref = the adapter switched off
  loss = sum of l_it over every token / the number of tokens
A group whose rewards are all equal would be left out; these groups are not.

Run: /usr/bin/python3 packages/engine/reference/make_grpo_fixtures.py
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from configs import parse  # noqa: E402
from families import forward, lora_targets, module_path  # noqa: E402
from fixture_io import read_safetensors, write_safetensors  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
CASES = ["gqa-untied-f32", "qwen3-v5-bf16"]
SETTINGS = {"no_kl": {"beta": 0.0, "epsilon": 0.2}, "kl": {"beta": 0.04, "epsilon": 0.2}}
REWARDS = [1.0, 0.0, 0.5, 0.2, 0.9, 0.0]
GROUP = 3


def token_logp(spec, W, ids, labels, lora, rope_len):
    logits = forward(spec, W, ids, lora, rope_len=rope_len).double()
    target = torch.tensor(labels[1:])
    logp = torch.log_softmax(logits[:-1], dim=-1)
    mask = target != -100
    return logp[mask].gather(1, target[mask][:, None])[:, 0]


def advantages(rewards):
    r = torch.tensor(rewards, dtype=torch.float64).view(-1, GROUP)
    a = (r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + 1e-4)
    return a.view(-1)


def make(case):
    folder = os.path.join(FIXTURES, case)
    with open(os.path.join(folder, "config.json")) as f:
        spec = parse(json.load(f))
    W = {k: v.float() for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    peft = read_safetensors(os.path.join(folder, "adapter", "adapter_model.safetensors"))
    with open(os.path.join(folder, "adapter", "adapter_config.json")) as f:
        acfg = json.load(f)
    g = torch.Generator().manual_seed(11)
    sequences, labels = [], []
    for prompt_len, lengths in [(5, (3, 6, 2)), (7, (4, 1, 5))]:
        prompt = torch.randint(3, 259, (prompt_len,), generator=g).tolist()
        for n in lengths:
            completion = torch.randint(3, 259, (n,), generator=g).tolist()
            sequences.append(prompt + completion)
            labels.append([-100] * prompt_len + completion)
    A = advantages(REWARDS)
    out = []
    meta = {"sequences": sequences, "labels": labels, "rewards": REWARDS, "groupSize": GROUP,
            "advantages": A.tolist(), "settings": {}, "torch_version": torch.__version__}
    for name, setting in SETTINGS.items():
        params, layers = [], []
        for l in range(spec["layers"]):
            pairs = {}
            for t in lora_targets(spec):
                base = f"base_model.model.model.layers.{l}.{module_path(t)}"
                a = peft[base + ".lora_A.weight"].float().clone().requires_grad_()
                b = peft[base + ".lora_B.weight"].float().clone().requires_grad_()
                pairs[t] = (a, b)
                params += [(base + ".lora_A.weight", a), (base + ".lora_B.weight", b)]
            layers.append(pairs)
        lora = {"scale": acfg["lora_alpha"] / acfg["r"], "layers": layers}
        # each sequence alone (the engine batches them padded; padding is masked)
        total, tokens = 0.0, 0
        for i in range(len(sequences)):
            lp = token_logp(spec, W, sequences[i], labels[i], lora, len(sequences[i]))
            ratio = torch.exp(lp - lp.detach())
            eps = setting["epsilon"]
            surrogate = -torch.min(ratio * A[i], torch.clamp(ratio, 1 - eps, 1 + eps) * A[i])
            if setting["beta"] > 0:
                with torch.no_grad():
                    ref = token_logp(spec, W, sequences[i], labels[i], None, len(sequences[i]))
                d = ref - lp
                surrogate = surrogate + setting["beta"] * (torch.exp(d) - d - 1)
            total = total + surrogate.sum()
            tokens += lp.numel()
        loss = total / tokens
        loss.backward()
        for pname, t in params:
            out.append((f"{name}.grad.{pname}", t.grad.float()))
        meta["settings"][name] = {**setting, "loss": float(loss)}
        print(f"{case} {name}: loss {float(loss):.8f}", file=sys.stderr)
    write_safetensors(os.path.join(folder, "grpo.safetensors"), out, {"format": "pt"})
    with open(os.path.join(folder, "grpo.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    torch.set_num_threads(1)
    for case in sys.argv[1:] or CASES:
        make(case)

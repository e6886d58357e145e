#!/usr/bin/python3
"""Preference-loss fixtures for @svc/engine (DPO and SimPO), computed with PyTorch.

For some of fixtures/<case>/ (a small random model and its PEFT adapter, written by
make_fixtures.py) this writes preference.json and preference.safetensors: two
preference pairs of token sequences (a shared prompt of untrained tokens, then a
chosen and a rejected answer of different lengths), and for each loss the mean
loss over the pairs, each pair's rewards, and the gradients of the LoRA factors.

The losses are written from the papers, in fp32 on the file's weights (as make_fixtures.py), the log-softmax and the loss in float64:
  DPO (Rafailov et al. 2023, eq. 7), with conservative label smoothing eps:
    h = (log pi(yw|x) - log ref(yw|x)) - (log pi(yl|x) - log ref(yl|x))
    loss = (1 - eps) * -log sigmoid(beta * h) + eps * -log sigmoid(-beta * h)
  SimPO (Meng et al. 2024, eq. 6):
    z = beta / |yw| * log pi(yw|x) - beta / |yl| * log pi(yl|x) - gamma
    loss = (1 - eps) * -log sigmoid(z) + eps * -log sigmoid(-z)
where log pi(y|x) sums the answer tokens' log-probabilities, ref is the base
model (the adapter switched off) and |y| counts the answer's tokens.

Run: /usr/bin/python3 packages/engine/reference/make_preference_fixtures.py
"""

import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from configs import parse  # noqa: E402
from families import forward, lora_targets, module_path  # noqa: E402
from fixture_io import read_safetensors, write_safetensors  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
CASES = ["gqa-untied-f32", "qwen3-v5-bf16", "gemma3-v5-f32"]
LOSSES = {
    "sigmoid": {"loss": "sigmoid", "beta": 0.5, "labelSmoothing": 0.0, "gamma": 0.0},
    "sigmoid_smoothed": {"loss": "sigmoid", "beta": 0.1, "labelSmoothing": 0.2, "gamma": 0.0},
    "simpo": {"loss": "simpo", "beta": 2.0, "labelSmoothing": 0.0, "gamma": 0.5},
}


def sequence_logp(spec, W, ids, labels, lora, rope_len):
    logits = forward(spec, W, ids, lora, rope_len=rope_len).double()
    target = torch.tensor(labels[1:])
    logp = torch.log_softmax(logits[:-1], dim=-1)
    mask = target != -100
    picked = logp[mask].gather(1, target[mask][:, None])[:, 0]
    return picked.sum(), int(mask.sum())


def pair_loss(setting, pc, pr, rc, rr, nc, nr):
    beta, eps = setting["beta"], setting["labelSmoothing"]
    if setting["loss"] == "simpo":
        chosen, rejected = beta / nc * pc, beta / nr * pr
    else:
        chosen, rejected = beta * (pc - rc), beta * (pr - rr)
    z = chosen - rejected - setting["gamma"]
    loss = -(1 - eps) * F.logsigmoid(z) - eps * F.logsigmoid(-z)
    return loss, float(chosen), float(rejected)


def make(case):
    folder = os.path.join(FIXTURES, case)
    with open(os.path.join(folder, "config.json")) as f:
        spec = parse(json.load(f))
    W = {k: v.float() for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    peft = read_safetensors(os.path.join(folder, "adapter", "adapter_model.safetensors"))
    with open(os.path.join(folder, "adapter", "adapter_config.json")) as f:
        acfg = json.load(f)
    g = torch.Generator().manual_seed(7)
    # Two pairs; the sequences are laid out as the engine batches them: chosen, rejected, chosen, rejected
    sequences, labels = [], []
    for prompt_len, chosen_len, rejected_len in [(5, 4, 6), (7, 5, 3)]:
        prompt = torch.randint(3, 259, (prompt_len,), generator=g).tolist()
        for n in (chosen_len, rejected_len):
            answer = torch.randint(3, 259, (n,), generator=g).tolist()
            sequences.append(prompt + answer)
            labels.append([-100] * prompt_len + answer)
    T = max(len(s) for s in sequences)
    out, meta = [], {"sequences": sequences, "labels": labels, "losses": {}, "torch_version": torch.__version__}
    for name, setting in LOSSES.items():
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
        total, rewards = 0.0, []
        for p in range(2):
            c, r = 2 * p, 2 * p + 1
            pc, nc = sequence_logp(spec, W, sequences[c], labels[c], lora, T)
            pr, nr = sequence_logp(spec, W, sequences[r], labels[r], lora, T)
            with torch.no_grad():
                rc, _ = sequence_logp(spec, W, sequences[c], labels[c], None, T)
                rr, _ = sequence_logp(spec, W, sequences[r], labels[r], None, T)
            loss, chosen, rejected = pair_loss(setting, pc, pr, rc, rr, nc, nr)
            total = total + loss
            rewards.append({"chosen": chosen, "rejected": rejected})
        mean = total / 2
        mean.backward()
        for pname, t in params:
            out.append((f"{name}.grad.{pname}", t.grad.float()))
        meta["losses"][name] = {"settings": setting, "loss": float(mean), "rewards": rewards}
        print(f"{case} {name}: loss {float(mean):.6f} rewards {rewards}", file=sys.stderr)
    write_safetensors(os.path.join(folder, "preference.safetensors"), out, {"format": "pt"})
    with open(os.path.join(folder, "preference.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    torch.set_num_threads(1)
    for case in sys.argv[1:] or CASES:
        make(case)

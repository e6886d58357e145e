"""GRPO's objective written in PyTorch from DeepSeekMath's definitions, the
reference svc's grpo-objective.ts is tested against (grpo-objective.test.ts).

Reads a JSON list of cases on stdin, each: rewards, group_size, scale, eps, epsilon,
epsilon_high, beta, normalization ("token" | "sequence"), and per completion
logprobs, old_logprobs, ref_logprobs (lists). Writes the advantages, the
zero-group mask, the loss, and d loss / d logprobs from torch.autograd, one
object per case. Everything in float64."""
import json
import sys

import torch

def run(case):
    G = case["group_size"]
    rewards = torch.tensor(case["rewards"], dtype=torch.float64).view(-1, G)
    mean = rewards.mean(dim=1, keepdim=True)
    std = rewards.std(dim=1, keepdim=True)  # Bessel-corrected, as TRL
    zero = (rewards.max(dim=1).values == rewards.min(dim=1).values)
    adv = rewards - mean
    if case["scale"]:
        adv = adv / (std + case["eps"])
    adv = torch.where(zero.unsqueeze(1), torch.zeros_like(adv), adv).reshape(-1)
    keep = (~zero).repeat_interleave(G)

    eps_lo, eps_hi, beta = case["epsilon"], case["epsilon_high"], case["beta"]
    leaves, per_seq, kept_tokens = [], [], 0
    for i, c in enumerate(case["completions"]):
        lp = torch.tensor(c["logprobs"], dtype=torch.float64, requires_grad=True)
        leaves.append(lp)
        if not keep[i] or lp.numel() == 0:
            continue
        old = torch.tensor(c["old_logprobs"], dtype=torch.float64)
        ratio = torch.exp(lp - old)
        term = -torch.min(ratio * adv[i], torch.clamp(ratio, 1 - eps_lo, 1 + eps_hi) * adv[i])
        if beta > 0:
            ref = torch.tensor(c["ref_logprobs"], dtype=torch.float64)
            term = term + beta * (torch.exp(ref - lp) - (ref - lp) - 1)
        per_seq.append(term)
        kept_tokens += lp.numel()

    if case["normalization"] == "token":
        loss = torch.cat(per_seq).sum() / kept_tokens
    else:
        loss = torch.stack([t.mean() for t in per_seq]).mean()
    loss.backward()
    return {
        "advantages": adv.tolist(),
        "zero_groups": zero.tolist(),
        "loss": loss.item(),
        "grads": [lp.grad.tolist() if lp.grad is not None else [0.0] * lp.numel() for lp in leaves],
    }


json.dump([run(case) for case in json.load(sys.stdin)], sys.stdout)

#!/usr/bin/env python3
"""DPO and GRPO step time of svc's torch backend against the same losses on transformers + peft.

    python3 bench/torch-post-training.py [--shapes smollm2-135m,qwen2.5-0.5b] [--pairs 8] [--seq 256]
        [--prompts 4] [--generations 8] [--completion 64] [--prompt-len 64] [--steps 10] [--warmup 3]
        [--device cuda] [--no-baseline] [--descriptions FILE]

Shapes, random weights, precision and LoRA (r=16, all linear layers) as bench/torch-train.py. svc's
side runs svc_trainer's own objectives (dpo.py, grpo.py) through the Trainer's step: DPO on
`--pairs` pairs of `--seq` tokens (the second half of each sequence the answer), the reference the
adapter switched off; GRPO's update on `--prompts` x `--generations` fixed completions of
`--completion` tokens with beta 0.04 (a reference pass and the policy pass), and, apart, its
sampling of one step's completions (no KV cache: each token is a full forward pass). The peer is the
same loss written on transformers + peft (TRL is not used: not installable here): the reference
under peft's disable_adapter(), the same clipped-ratio + k3 objective, and generate() with its KV
cache for the sampling. Prints tokens/s and seconds per step for each. `--device cpu --shapes tiny`
is a smoke run.
"""

import argparse
import os
import sys
import tempfile
import time
from types import SimpleNamespace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "packages", "trainer-torch"))
sys.path.insert(0, os.path.join(REPO, "bench"))

import importlib  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from svc_trainer.dpo import DpoObjective  # noqa: E402
from svc_trainer.grpo import GrpoObjective  # noqa: E402
from svc_trainer.lora import attach, init_adapter  # noqa: E402
from svc_trainer.model import Decoder  # noqa: E402

torch_train = importlib.import_module("torch-train")  # the shapes and the timing loop
SHAPES, description, timed = torch_train.SHAPES, torch_train.description, torch_train.timed
PAD = 0


def write_tokens(path, examples):
    """The worker's token file (svc_trainer/tokens.py) of [(ids, labels)]."""
    lengths = [len(ids) for ids, _ in examples]
    values = [len(examples), *lengths]
    for ids, _ in examples:
        values += ids
    for _, labels in examples:
        values += labels
    torch.tensor(values, dtype=torch.int32).numpy().tofile(path)


def random_pairs(generator, vocab, pairs, seq):
    out = []
    for _ in range(2 * pairs):
        ids = torch.randint(1, vocab, (seq,), generator=generator).tolist()
        out.append((ids, [-100] * (seq // 2) + ids[seq // 2 :]))
    return out


def svc_trainer_for(desc, args, device, job):
    model = Decoder(desc)
    model.to(device, dtype=torch.bfloat16 if device.type == "cuda" else torch.float32)
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.ones_like(p) if p.dim() == 1 and "norm" in name else torch.randn_like(p) * 0.02)
    spec, tensors = init_adapter(desc, {"r": 16, "alpha": 32, "targetModules": ["all-linear"]}, 1)
    params = [p for _, p in attach(model, spec, tensors)]
    bf16 = device.type == "cuda"
    trainer = SimpleNamespace(
        job=job, model=model, device=device, s=job["settings"], world=1, rank=0, packing=False, fsdp=False,
        cancelled=lambda: False, ask=None,
        autocast=(lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if bf16 else torch.enable_grad)
    return trainer, params


def optimizer_step(params, optimizer):
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def svc_dpo(desc, args, device, scratch):
    path = os.path.join(scratch, "pairs.tokens")
    write_tokens(path, random_pairs(torch.Generator().manual_seed(1), desc["vocabSize"], args.pairs, args.seq))
    job = {"settings": {"batchSize": args.pairs}, "trainTokens": path, "padTokenId": PAD,
           "preference": {"loss": "sigmoid", "beta": 0.1, "labelSmoothing": 0.0, "gamma": 0.0}}
    trainer, params = svc_trainer_for(desc, args, device, job)
    objective = DpoObjective(trainer)
    objective.reference = {}  # every step computes its reference pass, as a step over new pairs does
    optimizer = torch.optim.AdamW(params, lr=1e-4)

    def step():
        objective.reference.clear()
        pass_ = objective.begin_step(0, list(range(args.pairs)))
        for batch in pass_.micro_batches:
            pass_.run(batch)
        optimizer_step(params, optimizer)

    return timed(step, args.steps, args.warmup, device)


def grpo_job(desc, args):
    generator = torch.Generator().manual_seed(2)
    prompts = [torch.randint(1, desc["vocabSize"], (args.prompt_len,), generator=generator).tolist()
               for _ in range(args.prompts)]
    completions = [torch.randint(1, desc["vocabSize"], (args.completion,), generator=generator).tolist()
                   for _ in range(args.prompts * args.generations)]
    settings = {"numGenerations": args.generations, "temperature": 1.0, "topP": 1.0,
                "maxCompletionTokens": args.completion, "beta": 0.04, "epsilon": 0.2, "epsilonHigh": 0.2,
                "scaleRewards": True, "normalization": "token"}
    job = {"settings": {"batchSize": args.prompts, "maxLength": args.prompt_len + args.completion, "seed": 1},
           "padTokenId": PAD, "grpo": {"settings": settings, "prompts": prompts, "eosTokenIds": [-1],
                                        "fixedCompletions": [completions] * (args.steps + args.warmup + 1)}}
    advantages = torch.randn(len(completions), generator=generator).tolist()
    return job, prompts, completions, advantages


def svc_grpo(desc, args, device):
    job, prompts, completions, advantages = grpo_job(desc, args)
    trainer, params = svc_trainer_for(desc, args, device, job)
    trainer.ask = lambda request: {"advantages": advantages, "zeroGroups": [False] * args.prompts,
                                   "figures": {}}
    objective = GrpoObjective(trainer)
    optimizer = torch.optim.AdamW(params, lr=1e-4)

    def update():
        pass_ = objective.begin_step(0, list(range(args.prompts)))
        for batch in pass_.micro_batches:
            pass_.run(batch)
        optimizer_step(params, optimizer)

    def sample():
        objective.sample(0, list(range(args.prompts)))

    return timed(update, args.steps, args.warmup, device), timed(sample, 1, 1, device)


def peft_model(config, device):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**{k: v for k, v in config.items() if k not in ("architectures", "torch_dtype")})
    torch.manual_seed(0)
    with device:
        model = AutoModelForCausalLM.from_config(
            cfg, dtype=torch.bfloat16 if device.type == "cuda" else torch.float32, attn_implementation="sdpa")
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", lora_dropout=0.0,
                                             task_type="CAUSAL_LM"))
    params = [p for p in model.parameters() if p.requires_grad]
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if device.type == "cuda" else torch.enable_grad
    return model, params, autocast


def peft_logprobs(model, ids, targets, autocast):
    with autocast():
        logits = model(input_ids=ids).logits.float()
    B, T, V = logits.shape
    ce = F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=-100, reduction="none").view(B, T)
    mask = targets != -100
    return -ce * mask, mask


def batch_of(examples, device):
    ids = torch.tensor([e[0] for e in examples], device=device)
    labels = torch.tensor([e[1] for e in examples], device=device)
    targets = torch.full_like(labels, -100)
    targets[:, :-1] = labels[:, 1:]
    return ids, targets


def peft_dpo(config, args, device):
    model, params, autocast = peft_model(config, device)
    optimizer = torch.optim.AdamW(params, lr=1e-4)
    ids, targets = batch_of(random_pairs(torch.Generator().manual_seed(1), config["vocab_size"], args.pairs,
                                         args.seq), device)

    def step():
        with torch.no_grad(), model.disable_adapter():
            ref = peft_logprobs(model, ids, targets, autocast)[0].double().sum(-1)
        policy = peft_logprobs(model, ids, targets, autocast)[0].double().sum(-1)
        z = 0.1 * ((policy[0::2] - ref[0::2]) - (policy[1::2] - ref[1::2]))
        (-F.logsigmoid(z)).mean().backward()
        optimizer_step(params, optimizer)

    return timed(step, args.steps, args.warmup, device)


def peft_grpo(config, args, device):
    desc_like = {"vocabSize": config["vocab_size"]}
    job, prompts, completions, advantages = grpo_job(desc_like, args)
    model, params, autocast = peft_model(config, device)
    optimizer = torch.optim.AdamW(params, lr=1e-4)
    G = args.generations
    examples = [(prompts[i // G] + c, [-100] * args.prompt_len + c) for i, c in enumerate(completions)]
    ids, targets = batch_of(examples, device)
    a = torch.tensor(advantages, device=device)[:, None]

    def update():
        with torch.no_grad(), model.disable_adapter():
            ref = peft_logprobs(model, ids, targets, autocast)[0]
        lp, mask = peft_logprobs(model, ids, targets, autocast)
        ratio = torch.exp(lp - lp.detach())
        value = -torch.minimum(ratio * a, ratio.clamp(0.8, 1.2) * a)
        d = ref - lp
        value = value + 0.04 * (torch.exp(d) - d - 1)
        ((value * mask).sum() / mask.sum()).backward()
        optimizer_step(params, optimizer)

    prompt_ids = torch.tensor(prompts, device=device).repeat_interleave(G, dim=0)

    def sample():
        with torch.no_grad(), autocast():
            model.generate(input_ids=prompt_ids, attention_mask=torch.ones_like(prompt_ids), do_sample=True,
                           max_new_tokens=args.completion, min_new_tokens=args.completion, pad_token_id=PAD)

    return timed(update, args.steps, args.warmup, device), timed(sample, 1, 1, device)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="smollm2-135m,qwen2.5-0.5b")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--completion", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--descriptions", help="the shapes' engine descriptions (bench/torch-train.py)")
    args = parser.parse_args()
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}; "
          f"DPO {args.pairs} pairs x {args.seq} tokens; GRPO {args.prompts} prompts x {args.generations} "
          f"completions of {args.completion} after {args.prompt_len}; {args.steps} timed steps", flush=True)
    print(f"{'shape':<14} {'what':<22} {'svc torch':>12} {'peft':>12} {'ratio':>7}", flush=True)
    dpo_tokens = 2 * args.pairs * args.seq * args.steps
    grpo_tokens = args.prompts * args.generations * (args.prompt_len + args.completion) * args.steps
    sample_tokens = args.prompts * args.generations * args.completion
    for shape in args.shapes.split(","):
        desc = description(shape, args)
        with tempfile.TemporaryDirectory() as scratch:
            svc = {"DPO step tokens/s": dpo_tokens / svc_dpo(desc, args, device, scratch)[0]}
        update, sampled = svc_grpo(desc, args, device)
        svc["GRPO update tokens/s"] = grpo_tokens / update[0]
        svc["GRPO sampling tokens/s"] = sample_tokens / sampled[0]
        peer = {}
        if not args.no_baseline:
            try:
                peer["DPO step tokens/s"] = dpo_tokens / peft_dpo(SHAPES[shape], args, device)[0]
                update, sampled = peft_grpo(SHAPES[shape], args, device)
                peer["GRPO update tokens/s"] = grpo_tokens / update[0]
                peer["GRPO sampling tokens/s"] = sample_tokens / sampled[0]
            except ImportError as error:
                print(f"  (transformers + peft: not installed: {error})", flush=True)
        for what, rate in svc.items():
            other = peer.get(what)
            print(f"{shape:<14} {what:<22} {rate:12.0f} {other or 0:12.0f} "
                  f"{(rate / other if other else 0):6.2f}x", flush=True)


if __name__ == "__main__":
    main()

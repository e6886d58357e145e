"""Pretrains pico-llama on the tokenized corpus (CPU, PyTorch as a tool).

Every step draws `batch` windows of ctx+1 tokens: a source by its weight, then a random
offset in that source's stream, from a generator seeded by (seed, step), so a resumed run
draws exactly the batches an uninterrupted one would. A checkpoint is written every
--ckpt-every steps; rerunning the same command resumes from it.

Usage: nice -n 15 /usr/bin/python3 tools/pretrain/train.py --steps 4800
"""

import argparse
import json
import math
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from llama import LlamaConfig, LlamaForCausalLM

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"

# Share of training windows per source: prose first, reference text and Bibles a minority.
SOURCE_WEIGHTS = {
    "sotu": 0.24, "austen": 0.14, "moby-dick": 0.07, "wordnet": 0.15, "factbook": 0.10,
    "python-docs": 0.10, "postgresql-docs": 0.08, "debian-reference": 0.03,
    "bible-web": 0.045, "bible-kjv": 0.045,
}
# Sized for a CPU budget of about half an hour on two cores (about 10M tokens at 5.5k tokens/s):
# at that compute a larger model would see too few tokens to beat this one.
MODEL = LlamaConfig(vocab_size=4096, hidden_size=192, intermediate_size=512, num_hidden_layers=4,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)


def sample_batch(streams: dict, names: list, weights: torch.Tensor, batch: int, ctx: int, gen):
    """(batch, ctx+1) int64 windows; source by weight, offset uniform within the stream."""
    rows = []
    for src in torch.multinomial(weights, batch, replacement=True, generator=gen).tolist():
        stream = streams[names[src]]
        start = int(torch.randint(0, len(stream) - ctx - 1, (1,), generator=gen))
        rows.append(stream[start : start + ctx + 1].long())
    return torch.stack(rows)


def eval_windows(streams: dict, ctx: int, per_source: int = 2) -> torch.Tensor:
    """Fixed validation windows: evenly spaced in each source's val stream."""
    rows = []
    for name in sorted(streams):
        stream = streams[name]
        if len(stream) < ctx + 1:
            continue
        for k in range(per_source):
            start = (len(stream) - ctx - 1) * k // max(1, per_source - 1) if per_source > 1 else 0
            rows.append(stream[start : start + ctx + 1].long())
    return torch.stack(rows)


@torch.no_grad()
def eval_loss(model, windows: torch.Tensor, chunk: int = 8) -> float:
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(windows), chunk):
        w = windows[i : i + chunk]
        logits = model(w[:, :-1])
        total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), w[:, 1:].reshape(-1), reduction="sum").item()
        count += w[:, 1:].numel()
    model.train()
    return total / count


def lr_at(step: int, args) -> float:
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * min(1.0, progress)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=600)
    # 4 windows a step is the fastest per token on two cores: 8 runs at about 60% of the rate
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--ctx", type=int, default=512)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--min-lr", type=float, default=3e-4)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--ckpt-every", type=int, default=20)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--run", default="pretrain")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    run_dir = OUT / args.run
    run_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path, log_path = run_dir / "ckpt.pt", run_dir / "log.jsonl"

    train = torch.load(OUT / "tokens_train.pt")
    val = torch.load(OUT / "tokens_val.pt")
    names = sorted(SOURCE_WEIGHTS)
    weights = torch.tensor([SOURCE_WEIGHTS[n] for n in names], dtype=torch.float64)
    windows = eval_windows(val, args.ctx)

    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(MODEL)
    decay = [p_ for n, p_ in model.named_parameters() if p_.dim() >= 2]
    no_decay = [p_ for n, p_ in model.named_parameters() if p_.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    step, elapsed = 0, 0.0
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optim"])
        step, elapsed = ckpt["step"], ckpt["elapsed"]
        print(f"resumed at step {step} ({elapsed / 60:.1f} min trained)", flush=True)
    print(f"params {model.num_params():,}; {args.steps} steps x {args.batch * args.ctx} tokens", flush=True)

    log = open(log_path, "a")
    while step < args.steps:
        t0 = time.time()
        gen = torch.Generator().manual_seed(args.seed * 1_000_003 + step)
        xy = sample_batch(train, names, weights, args.batch, args.ctx, gen)
        lr = lr_at(step, args)
        for group in opt.param_groups:
            group["lr"] = lr
        logits = model(xy[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), xy[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        opt.step()
        step += 1
        dt = time.time() - t0
        elapsed += dt
        record = {"step": step, "loss": round(loss.item(), 4), "lr": lr, "grad_norm": round(grad_norm, 3),
                  "tokens": step * args.batch * args.ctx, "elapsed_s": round(elapsed, 1),
                  "tok_per_s": round(args.batch * args.ctx / dt)}
        if step % args.eval_every == 0 or step == args.steps:
            record["val_loss"] = round(eval_loss(model, windows), 4)
        log.write(json.dumps(record) + "\n")
        log.flush()
        print(json.dumps(record), flush=True)
        if step % args.ckpt_every == 0 or step == args.steps:
            tmp = run_dir / "ckpt.pt.tmp"
            torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step,
                        "elapsed": elapsed, "config": MODEL.to_dict(), "args": vars(args)}, tmp)
            os.replace(tmp, ckpt_path)
    torch.save({"model": model.state_dict(), "config": MODEL.to_dict(), "step": step, "elapsed": elapsed,
                "tokens": step * args.batch * args.ctx, "args": vars(args)}, run_dir / "final.pt")


if __name__ == "__main__":
    main()

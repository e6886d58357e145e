"""Instruction-tunes the pretrained pico-llama on ChatML chat pairs (sft_data.py).

Chats are packed into rows of ctx+1 tokens; the loss counts assistant tokens only (their
content and closing <|im_end|>). Each step also takes one pretraining window so the model
keeps its language modelling while it learns the chat format.

Usage: nice -n 15 /usr/bin/python3 tools/pretrain/sft.py --steps 60
"""

import argparse
import json
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from chat_tokens import ChatTokenizer
from llama import LlamaConfig, LlamaForCausalLM
from train import SOURCE_WEIGHTS, sample_batch

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"


def pack(tokenizer: ChatTokenizer, path: Path, ctx: int):
    """(rows (N, ctx+1) ids, masks (N, ctx+1)): chats back to back, cut into rows."""
    ids, mask = [], []
    with open(path) as f:
        for line in f:
            i, m = tokenizer.encode_chat(json.loads(line)["messages"])
            ids += i
            mask += m
    n = len(ids) // (ctx + 1)
    rows = torch.tensor(ids[: n * (ctx + 1)]).view(n, ctx + 1)
    masks = torch.tensor(mask[: n * (ctx + 1)], dtype=torch.bool).view(n, ctx + 1)
    return rows, masks


def masked_loss(model, rows, masks):
    logits = model(rows[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), rows[:, 1:].reshape(-1), reduction="none")
    keep = masks[:, 1:].reshape(-1).float()
    return (loss * keep).sum() / keep.sum()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=3, help="chat rows per step (plus one pretraining row)")
    p.add_argument("--ctx", type=int, default=512)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--lm-weight", type=float, default=None,
                   help="weight of the pretraining row's loss (default 1/batch: one row among the chat rows)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--base", default=str(OUT / "pretrain" / "final.pt"))
    p.add_argument("--save", default=str(OUT / "final.pt"))
    args = p.parse_args()
    torch.set_num_threads(args.threads)

    tokenizer = ChatTokenizer(HERE.parent / "tokenizer" / "out")
    train_rows, train_masks = pack(tokenizer, OUT / "sft_train.jsonl", args.ctx)
    val_rows, val_masks = pack(tokenizer, OUT / "sft_val.jsonl", args.ctx)
    pretrain = torch.load(OUT / "tokens_train.pt")
    names = sorted(SOURCE_WEIGHTS)
    weights = torch.tensor([SOURCE_WEIGHTS[n] for n in names], dtype=torch.float64)

    base = torch.load(args.base)
    cfg = LlamaConfig(**base["config"])
    model = LlamaForCausalLM(cfg)
    model.load_state_dict(base["model"])
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)

    with torch.no_grad():
        val_before = masked_loss(model, val_rows, val_masks).item()
    print(f"{len(train_rows)} train rows, {len(val_rows)} val rows; val assistant loss before {val_before:.4f}", flush=True)

    gen = torch.Generator().manual_seed(args.seed)
    order = torch.randperm(len(train_rows), generator=gen)
    log = open(Path(args.save).with_suffix(".log.jsonl"), "w")
    elapsed, tokens = 0.0, 0
    for step in range(args.steps):
        t0 = time.time()
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
        for g in opt.param_groups:
            g["lr"] = lr
        pick = order[(step * args.batch + torch.arange(args.batch)) % len(order)]
        lm_rows = sample_batch(pretrain, names, weights, 1, args.ctx, torch.Generator().manual_seed(args.seed + step))
        chat_loss = masked_loss(model, train_rows[pick], train_masks[pick])
        logits = model(lm_rows[:, :-1])
        lm_loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), lm_rows[:, 1:].reshape(-1))
        lm_weight = 1.0 / args.batch if args.lm_weight is None else args.lm_weight
        loss = chat_loss + lm_weight * lm_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        elapsed += time.time() - t0
        tokens += (args.batch + 1) * args.ctx
        record = {"step": step + 1, "chat_loss": round(chat_loss.item(), 4), "lm_loss": round(lm_loss.item(), 4),
                  "lr": lr, "elapsed_s": round(elapsed, 1)}
        log.write(json.dumps(record) + "\n")
        print(json.dumps(record), flush=True)

    with torch.no_grad():
        val_after = masked_loss(model, val_rows, val_masks).item()
    rows_seen = min(len(train_rows), args.steps * args.batch)
    summary = {"steps": args.steps, "tokens": tokens, "elapsed_s": round(elapsed, 1), "train_rows": len(train_rows),
               "rows_seen": rows_seen, "chats": sum(1 for _ in open(OUT / "sft_train.jsonl")),
               "val_assistant_loss_before": round(val_before, 4), "val_assistant_loss_after": round(val_after, 4),
               "lr": args.lr, "lm_weight": 1.0 / args.batch if args.lm_weight is None else args.lm_weight}
    print(json.dumps(summary), flush=True)
    torch.save({"model": model.state_dict(), "config": cfg.to_dict(), "sft": summary}, args.save)
    Path(args.save).with_suffix(".summary.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()

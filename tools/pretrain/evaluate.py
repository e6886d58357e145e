"""Measures a pico-llama checkpoint: held-out loss and bits per byte on the test split
(English prose no training step saw), validation loss, and greedy sample outputs.

bits per byte = total negative log-likelihood in bits of the scored tokens / the UTF-8
bytes those tokens spell. Each source's test stream is scored in non-overlapping windows
of ctx tokens (up to --windows per source, evenly spaced); <|endoftext|> targets are not
text and are left out of both sums.

Usage: /usr/bin/python3 tools/pretrain/evaluate.py [--checkpoint out/final.pt] [--out out/eval.json]
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

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"

CHAT_SAMPLES = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "What is the capital of Japan?"}],
    [{"role": "user", "content": "What does the word \"harbor\" mean?"}],
    [{"role": "user", "content": "Define: river"}],
    [{"role": "user", "content": "Who gave the State of the Union address in 1862?"}],
    [{"role": "system", "content": "Reply with JSON only: {\"country\": string, \"capital\": string}."},
     {"role": "user", "content": "Lima is the capital city of Peru."}],
    [{"role": "system", "content": "Rewrite the text with every number replaced by [NUMBER]."},
     {"role": "user", "content": "The ship carried 24 men and 3 boats."}],
]
TEXT_SAMPLES = ["It is a truth universally acknowledged", "The Congress shall", "Call me"]


@torch.no_grad()
def score_streams(model, tokenizer: ChatTokenizer, streams: dict, ctx: int, windows: int, chunk: int = 4):
    per_source = {}
    for name in sorted(streams):
        stream = streams[name].long()
        n = (len(stream) - 1) // ctx
        picks = sorted({k * n // windows for k in range(windows)}) if n > windows else list(range(n))
        rows = torch.stack([stream[i * ctx : i * ctx + ctx + 1] for i in picks])
        nll, nbytes, ntokens = 0.0, 0, 0
        for r in range(0, len(rows), chunk):
            w = rows[r : r + chunk]
            logits = model(w[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), w[:, 1:].reshape(-1), reduction="none")
            targets = w[:, 1:].reshape(-1)
            text = targets != tokenizer.eot
            nll += loss[text].sum().item()
            ntokens += int(text.sum())
            nbytes += sum(len(tokenizer.token_bytes(t)) for t in targets[text].tolist())
        per_source[name] = {"tokens": ntokens, "bytes": nbytes, "loss": nll / ntokens,
                            "bits_per_byte": nll / math.log(2) / nbytes}
    nll = sum(s["loss"] * s["tokens"] for s in per_source.values())
    tokens = sum(s["tokens"] for s in per_source.values())
    nbytes = sum(s["bytes"] for s in per_source.values())
    return {"loss": nll / tokens, "bits_per_byte": nll / math.log(2) / nbytes, "tokens": tokens, "bytes": nbytes,
            "per_source": per_source}


@torch.no_grad()
def greedy(model, tokenizer: ChatTokenizer, ids: list[int], max_new: int = 48) -> tuple[str, bool]:
    """Greedy continuation; True when the model ended the turn with <|im_end|> or <|endoftext|>."""
    out = []
    for _ in range(max_new):
        nxt = int(model(torch.tensor([ids + out]))[0, -1].argmax())
        if nxt in (tokenizer.im_end, tokenizer.eot):
            return tokenizer.decode(out), True
        out.append(nxt)
    return tokenizer.decode(out), False


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", default=str(OUT / "final.pt"))
    p.add_argument("--out", default=str(OUT / "eval.json"))
    p.add_argument("--ctx", type=int, default=512)
    p.add_argument("--windows", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)

    ckpt = torch.load(args.checkpoint)
    cfg = LlamaConfig(**ckpt["config"])
    model = LlamaForCausalLM(cfg)
    model.load_state_dict(ckpt["model"])
    model.eval()
    tokenizer = ChatTokenizer(HERE.parent / "tokenizer" / "out")

    t0 = time.time()
    result = {"checkpoint": Path(args.checkpoint).name, "params": model.num_params()}
    result["test"] = score_streams(model, tokenizer, torch.load(OUT / "tokens_test.pt"), args.ctx, args.windows)
    result["val"] = score_streams(model, tokenizer, torch.load(OUT / "tokens_val.pt"), args.ctx, 8)
    print(json.dumps({k: result[k][m] for k in ("test", "val") for m in ("loss",)} |
                     {"test_bpb": result["test"]["bits_per_byte"]}), flush=True)
    result["chat_samples"] = []
    for messages in CHAT_SAMPLES:
        ids, _ = tokenizer.encode_chat(messages, add_generation_prompt=True)
        reply, ended = greedy(model, tokenizer, ids)
        result["chat_samples"].append({"messages": messages, "reply": reply, "ended_turn": ended})
        print(json.dumps(result["chat_samples"][-1]), flush=True)
    result["text_samples"] = []
    for prompt in TEXT_SAMPLES:
        ids = [tokenizer.eot] + tokenizer.bpe.encode(prompt)
        continuation, _ = greedy(model, tokenizer, ids, 32)
        result["text_samples"].append({"prompt": prompt, "continuation": continuation})
        print(json.dumps(result["text_samples"][-1]), flush=True)
    result["eval_seconds"] = round(time.time() - t0, 1)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

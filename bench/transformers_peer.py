#!/usr/bin/env python3
"""The transformers + peft peer of bench/engine.mjs: LoRA training speed on PyTorch 2.x.

    python3 bench/transformers_peer.py '{"config": {...config.json...}, "batch": 4, "seq": 256,
        "steps": 2, "warmup": 1, "r": 16, "alpha": 32, "threads": 2, "precision": "bf16"}'

Random weights from the shape's config.json (transformers' own init), LoRA r/alpha
on all linear layers (peft, target_modules="all-linear", no dropout), AdamW
(lr 2e-4), global-norm clipping at 1.0, random token batches with every
position labelled. precision "bf16": the forward and backward under
torch.autocast("cpu", dtype=torch.bfloat16), the weights fp32 as loaded (the
one line a CPU user adds); "fp32": no autocast. Prints one JSON line:
train_tokens_per_s, train_step_s, peak_rss_mb, versions."""

import json
import resource
import sys
import time

import peft
import torch
import transformers


def main() -> None:
    a = json.loads(sys.argv[1])
    torch.set_num_threads(a["threads"])
    torch.manual_seed(0)
    cfg = dict(a["config"])
    config = transformers.AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="sdpa")
    lora = peft.LoraConfig(r=a["r"], lora_alpha=a["alpha"], target_modules="all-linear", lora_dropout=0.0)
    model = peft.get_peft_model(model, lora)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-4, weight_decay=0.0)
    ids = torch.randint(0, config.vocab_size, (a["batch"], a["seq"]))
    bf16 = a["precision"] == "bf16"

    def step() -> float:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach().item()

    for _ in range(a["warmup"]):
        step()
    t0 = time.perf_counter()
    for _ in range(a["steps"]):
        step()
    seconds = (time.perf_counter() - t0) / a["steps"]
    print(json.dumps({
        "engine": "transformers+peft",
        "precision": a["precision"],
        "train_tokens_per_s": a["batch"] * a["seq"] / seconds,
        "train_step_s": seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__},
    }))


if __name__ == "__main__":
    main()

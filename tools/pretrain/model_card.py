"""Writes models/pico-llama/README.md, the model card, from measured outputs only:
tools/corpus/manifest.json, the pretraining log, the instruction-tuning summary, the
evaluation results and the exported files.

Usage: /usr/bin/python3 tools/pretrain/model_card.py
"""

import json
import os
import platform
from pathlib import Path

import torch

from train import SOURCE_WEIGHTS

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT = HERE / "out"
MODEL_DIR = REPO / "models" / "pico-llama"


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def main() -> None:
    manifest = json.loads((REPO / "tools/corpus/manifest.json").read_text())
    config = json.loads((MODEL_DIR / "config.json").read_text())
    log = [json.loads(line) for line in (OUT / "pretrain" / "log.jsonl").read_text().splitlines()]
    args = torch.load(OUT / "pretrain" / "final.pt")["args"]
    sft = json.loads((OUT / "final.summary.json").read_text())
    final_eval = json.loads((OUT / "eval.json").read_text())
    base_eval = json.loads((OUT / "eval_pretrain.json").read_text())
    timings = {}
    if (OUT / "timings.tsv").exists():
        for line in (OUT / "timings.tsv").read_text().splitlines():
            name, seconds = line.split("\t")
            timings[name] = int(seconds)
    size = (MODEL_DIR / "model.safetensors").stat().st_size

    L = []
    L.append("# svc/pico-llama\n")
    L.append("A small Llama-architecture language model made in this repository from openly licensed English "
             "text that ships offline with npm and Debian packages. It is the bundled base model of svc: the "
             "model the templates fine-tune with LoRA on a CPU in minutes. It is a toy by the standards of "
             "released models: it knows the shape of English, the ChatML turn format and a little of its "
             "sources, and it gets facts wrong. Fine-tune it for a task; do not rely on what it says.\n")
    L.append("## Model\n")
    L.append("| | |\n|---|---|")
    L.append(f"| architecture | `LlamaForCausalLM` (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU, tied embeddings) |")
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "head_dim", "vocab_size", "max_position_embeddings", "rope_theta", "rms_norm_eps"):
        L.append(f"| {key} | {config[key]} |")
    L.append(f"| parameters | {final_eval['params']:,} (embedding {config['vocab_size'] * config['hidden_size']:,}, shared with the output layer) |")
    L.append(f"| weights | `model.safetensors`, F32, {size:,} bytes |")
    L.append("| tokenizer | byte-level BPE (GPT-2 pre-tokenizer), 4,096 tokens, trained on the training split; "
             "special tokens `<|endoftext|>` (0), `<|im_start|>` (1), `<|im_end|>` (2) |")
    L.append("| chat template | ChatML: `<|im_start|>{role}\\n{content}<|im_end|>\\n`, generation prompt `<|im_start|>assistant\\n`; a turn ends with `<|im_end|>` (eos) |\n")

    L.append("## Training data\n")
    L.append("Built by `tools/corpus/build.py`; every source is English, openly licensed and installed offline. "
             "Documents are assigned to splits by a hash of their id. Training windows are drawn per source with "
             "the weights below, so the Bibles and the manuals stay a minority of the tokens seen.\n")
    L.append("| source | from | license | train bytes | train tokens | share of training windows |")
    L.append("|---|---|---|---:|---:|---:|")
    for s in manifest["sources"]:
        L.append(f"| {s['name']} | {s['origin']} | {s['license']} | {s['train']['bytes']:,} | "
                 f"{s['train'].get('tokens', 0):,} | {SOURCE_WEIGHTS[s['name']]:.1%} |")
    t = manifest["totals"]
    L.append(f"| **total** | | | {t['train']['bytes']:,} | {t['train']['tokens']:,} | 100% |\n")
    L.append(f"Validation split: {t['val']['docs']} documents, {t['val']['bytes']:,} bytes. Test split (never trained on): "
             f"{t['test']['docs']} documents, {t['test']['bytes']:,} bytes: the whole of Jane Austen's *Persuasion*, "
             "held-out State of the Union addresses and held-out Moby-Dick chapters.\n")
    L.append("Left out: " + "; ".join(f"{x['name']} ({x['reason']})" for x in manifest["left_out"]) + ".\n")

    tokens_seen, compute_s, wall_s = log[-1]["tokens"], log[-1]["elapsed_s"], timings.get("pretrain", 0)
    L.append("## Training\n")
    L.append(f"Hardware: {cpu_name()}, 2 CPU cores (run at `nice -n 15`), "
             f"PyTorch {torch.__version__} on {platform.system()} with 2 threads, float32. No GPU.\n")
    L.append(f"**Pretraining** (`tools/pretrain/train.py`), one run from random initialization, **{tokens_seen:,} tokens seen** "
             f"(about {tokens_seen / t['train']['tokens']:.0%} of the training split's tokens; windows are drawn at random). "
             f"Compute time of the steps: {compute_s / 60:.1f} min"
             + (f"; wall clock of the stage: {wall_s / 60:.1f} min" if wall_s else "") + ". "
             f"{log[-1]['step']} steps of {args['batch']} windows x {args['ctx']} tokens, seed {args['seed']}; "
             f"AdamW (beta 0.9/0.95, weight decay {args['weight_decay']:g} on matrices), learning rate "
             f"{args['lr']:g} warmed up over {args['warmup']} steps then cosine-decayed to {args['min_lr']:g}, "
             "gradient clipping 1.0.\n")
    L.append("| step | tokens | train loss (mean of the last 10 steps) | val loss |\n|---:|---:|---:|---:|")
    for r in log:
        if r["step"] == 1 or "val_loss" in r:
            recent = [x["loss"] for x in log if r["step"] - 10 < x["step"] <= r["step"]]
            L.append(f"| {r['step']} | {r['tokens']:,} | {sum(recent) / len(recent):.3f} | {r.get('val_loss', '')} |")
    L.append("")
    L.append(f"**Instruction tuning** (`tools/pretrain/sft.py`): {sft['chats']:,} ChatML chats built from the same sources "
             "(WordNet definitions, parts of speech as JSON, example sentences; Factbook capitals, locations, languages, "
             "capital as JSON; who gave a State of the Union address; what a Python module or SQL command does; "
             "repeating a sentence and replacing its numbers with [NUMBER], with system messages) packed into "
             f"{sft['train_rows']} rows of 512 tokens; {sft['steps']} steps of 3 chat rows + 1 pretraining row "
             f"({sft['rows_seen']} chat rows, {sft['tokens']:,} tokens), loss on assistant tokens plus the pretraining row's "
             f"loss x {sft.get('lm_weight', 1 / 3):.2g}, learning rate {sft.get('lr', 1e-3):g} cosine. "
             f"Held-out chats' assistant-token loss: {sft['val_assistant_loss_before']:.3f} before, "
             f"{sft['val_assistant_loss_after']:.3f} after. Compute time {sft['elapsed_s'] / 60:.1f} min.\n")

    L.append("## Evaluation\n")
    L.append("Held-out bits per byte = total negative log-likelihood in bits of the scored tokens / the UTF-8 bytes "
             "they spell (`tools/pretrain/evaluate.py`), on the test split in non-overlapping 512-token windows "
             f"({final_eval['test']['tokens']:,} tokens, {final_eval['test']['bytes']:,} bytes scored).\n")
    L.append("| model | held-out loss (nats/token) | held-out bits per byte | val loss |\n|---|---:|---:|---:|")
    for name, ev in (("after pretraining", base_eval), ("**final (pretraining + instruction tuning)**", final_eval)):
        L.append(f"| {name} | {ev['test']['loss']:.3f} | {ev['test']['bits_per_byte']:.3f} | {ev['val']['loss']:.3f} |")
    L.append("")
    L.append("| test source (final model) | tokens | bytes | bits per byte |\n|---|---:|---:|---:|")
    for name, s in final_eval["test"]["per_source"].items():
        L.append(f"| {name} | {s['tokens']:,} | {s['bytes']:,} | {s['bits_per_byte']:.3f} |")
    L.append("")
    L.append("## Sample outputs (final model, greedy, unedited)\n")
    for s in final_eval["chat_samples"]:
        turns = " / ".join(f"{m['role']}: {m['content']}" for m in s["messages"])
        end = "ends the turn with `<|im_end|>`" if s["ended_turn"] else "did not end the turn within 48 tokens"
        L.append(f"- {turns}\n  - assistant: `{s['reply'].strip()}` ({end})")
    for s in final_eval["text_samples"]:
        L.append(f"- text: `{s['prompt']}` → `{s['continuation']}`")
    L.append("")
    L.append("## Reproduce\n")
    L.append("`bash tools/make-base-model.sh` rebuilds the corpus, the tokenizer and this folder from the installed "
             "packages with fixed seeds (see docs/base-model.md). `node tools/pretrain/check_engine.mjs` loads the folder "
             "with the svc engine and compares its logits with PyTorch's (tools/pretrain/golden.json).\n")
    L.append("## License\n")
    L.append("The weights are trained on the sources above; the corpus's most restrictive terms are the GPL-2+ of the "
             "Debian Reference and the attribution terms of WordNet 3.0 (Princeton University) and the PSF and PostgreSQL "
             "licenses of their manuals. WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.\n")
    (MODEL_DIR / "README.md").write_text("\n".join(L))
    print(f"wrote {MODEL_DIR / 'README.md'}", flush=True)


if __name__ == "__main__":
    main()

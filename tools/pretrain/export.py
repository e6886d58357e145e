"""Exports the trained pico-llama to a Hugging Face Llama folder, models/pico-llama/:
config.json, model.safetensors (F32, HF tensor names, no lm_head: it is tied),
generation_config.json, tokenizer.json, tokenizer_config.json. Then reads the written
safetensors back into a fresh model and records golden logits for a fixed prompt
(tools/pretrain/golden.json) that check_engine.mjs compares the engine against.

Usage: /usr/bin/python3 tools/pretrain/export.py
"""

import argparse
import json
import shutil
import struct
from pathlib import Path

import torch

from chat_tokens import ChatTokenizer
from llama import LlamaConfig, LlamaForCausalLM, hf_config

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODEL_DIR = REPO / "models" / "pico-llama"
GOLDEN_PROMPT = [{"role": "user", "content": "What is the capital of France?"}]


def write_safetensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """8-byte little-endian header size, JSON header, then the raw little-endian data."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        data = tensors[name].detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        buf = bytearray(raw[8 + n + start : 8 + n + end])
        out[name] = torch.frombuffer(buf, dtype=torch.float32).view(meta["shape"]).clone()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", default=str(HERE / "out" / "final.pt"))
    parser.add_argument("--model-dir", default=str(MODEL_DIR))
    parser.add_argument("--golden", default=str(HERE / "golden.json"))
    args = parser.parse_args()
    model_dir, golden_path = Path(args.model_dir), Path(args.golden)
    final = torch.load(args.checkpoint)
    cfg = LlamaConfig(**final["config"])
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps(hf_config(cfg), indent=2) + "\n")
    (model_dir / "generation_config.json").write_text(
        json.dumps({"bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 0, "max_new_tokens": 128}, indent=2) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(HERE.parent / "tokenizer" / "out" / name, model_dir / name)
    write_safetensors(model_dir / "model.safetensors", final["model"])

    # the golden logits come from the file as written, not from the in-memory weights
    model = LlamaForCausalLM(cfg)
    model.load_state_dict(read_safetensors(model_dir / "model.safetensors"))
    model.eval()
    tokenizer = ChatTokenizer(model_dir)
    ids, _ = tokenizer.encode_chat(GOLDEN_PROMPT, add_generation_prompt=True)
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0]  # (T, vocab)
    golden = {
        "messages": GOLDEN_PROMPT,
        "ids": ids,
        "argmax": logits.argmax(-1).tolist(),
        "logsumexp": [round(v, 6) for v in torch.logsumexp(logits, -1).tolist()],
        "probe_ids": list(range(0, cfg.vocab_size, 97)),
        "probe_logits": [[round(v, 6) for v in row] for row in logits[:, :: 97].tolist()],
        "last_logits": [round(v, 6) for v in logits[-1].tolist()],
    }
    golden_path.write_text(json.dumps(golden) + "\n")
    size = (model_dir / "model.safetensors").stat().st_size
    print(f"wrote {model_dir} (model.safetensors {size:,} bytes); golden logits for {len(ids)} tokens", flush=True)


if __name__ == "__main__":
    main()

"""Encodes the corpus splits with the trained tokenizer into token streams.

Each source becomes one int16 stream per split: <|endoftext|> doc <|endoftext|> doc ...
Writes tools/pretrain/out/tokens_{train,val,test}.pt ({source: tensor}) and adds the
token counts to tools/corpus/manifest.json.

Usage: /usr/bin/python3 tools/pretrain/tokenize_corpus.py
"""

import json
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
sys.path.insert(0, str(TOOLS / "tokenizer"))
from bpe import ByteLevelBPE  # noqa: E402

OUT = HERE / "out"
EOT = 0


def load_tokenizer(folder: Path) -> ByteLevelBPE:
    tok = json.loads((folder / "tokenizer.json").read_text())
    return ByteLevelBPE(tok["model"]["vocab"], [tuple(m) for m in tok["model"]["merges"]])


def main() -> None:
    bpe = load_tokenizer(TOOLS / "tokenizer" / "out")
    OUT.mkdir(exist_ok=True)
    manifest_path = TOOLS / "corpus" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    by_name = {s["name"]: s for s in manifest["sources"]}
    for split in ("train", "val", "test"):
        streams: dict[str, list[int]] = {}
        with open(TOOLS / "corpus" / "out" / f"{split}.jsonl") as f:
            for line in f:
                doc = json.loads(line)
                stream = streams.setdefault(doc["source"], [])
                stream.append(EOT)
                stream.extend(bpe.encode(doc["text"]))
        tensors = {name: torch.tensor(ids, dtype=torch.int16) for name, ids in streams.items()}
        torch.save(tensors, OUT / f"tokens_{split}.pt")
        for name, ids in streams.items():
            by_name[name][split]["tokens"] = len(ids)
        total_tokens = sum(len(ids) for ids in streams.values())
        manifest["totals"][split]["tokens"] = total_tokens
        print(f"{split}: {total_tokens:,} tokens, {manifest['totals'][split]['bytes'] / total_tokens:.2f} bytes/token",
              flush=True)
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Trains the pico-llama byte-level BPE tokenizer on the training split of the corpus.

Writes tools/tokenizer/out/tokenizer.json (Hugging Face layout) and
tools/tokenizer/out/tokenizer_config.json (ChatML chat template, special tokens).

Usage: /usr/bin/python3 tools/tokenizer/train_tokenizer.py [--vocab-size 4096]
"""

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from bpe import BYTE_CHAR, SPECIAL_TOKENS, pieces, tokenizer_json, train

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus" / "out" / "train.jsonl"
OUT = HERE / "out"

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def tokenizer_config(vocab: dict[str, int], max_length: int) -> dict:
    return {
        "add_bos_token": False,
        "add_eos_token": False,
        "added_tokens_decoder": {
            str(vocab[t]): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                            "single_word": False, "special": True}
            for t in SPECIAL_TOKENS
        },
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": "<|endoftext|>",
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": max_length,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--max-length", type=int, default=512)
    args = parser.parse_args()

    start = time.time()
    word_counts: Counter = Counter()
    with open(CORPUS) as f:
        for line in f:
            word_counts.update(pieces(json.loads(line)["text"]))
    print(f"{len(word_counts):,} distinct pieces counted in {time.time() - start:.0f}s", flush=True)

    # ids: special tokens first, then the 256 bytes in byte order, then one id per merge
    vocab = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    for b in range(256):
        vocab[BYTE_CHAR[b]] = len(vocab)
    merges = train(word_counts, args.vocab_size - len(vocab))
    for a, b in merges:
        vocab[a + b] = len(vocab)
    print(f"{len(merges)} merges, vocab {len(vocab)}, {time.time() - start:.0f}s total", flush=True)

    OUT.mkdir(exist_ok=True)
    (OUT / "tokenizer.json").write_text(json.dumps(tokenizer_json(vocab, merges), ensure_ascii=False, indent=1) + "\n")
    (OUT / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(vocab, args.max_length), indent=2) + "\n")


if __name__ == "__main__":
    main()

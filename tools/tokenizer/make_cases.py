"""Writes tools/tokenizer/out/cases.json: validation texts and edge cases with the ids
bpe.py gives them, for check_js.mjs to compare against @huggingface/tokenizers."""

import json
from pathlib import Path

from bpe import ByteLevelBPE, encode_with_specials

HERE = Path(__file__).resolve().parent

EDGE_CASES = [
    "Hello world", " leading space", "trailing space ", "  two  spaces\n\n\ttab", "don't I'll we've they're",
    "naïve café — “quoted” 日本語 😀", "x = [i ** 2 for i in range(10)]  # comment", "SELECT * FROM t WHERE id = 42;",
    "1234567890 3.14159 1,000,000", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "", "\n",
    "<|endoftext|>Call me Ishmael.",
]


def main() -> None:
    tok = json.loads((HERE / "out" / "tokenizer.json").read_text())
    bpe = ByteLevelBPE(tok["model"]["vocab"], [tuple(m) for m in tok["model"]["merges"]])
    specials = {t["content"]: t["id"] for t in tok["added_tokens"]}
    texts = EDGE_CASES[:]
    with open(HERE.parent / "corpus" / "out" / "val.jsonl") as f:
        texts += [json.loads(line)["text"][:20000] for line in f]
    cases = []
    for text in texts:
        cases.append({"text": text, "ids": encode_with_specials(bpe, specials, text)})
    (HERE / "out" / "cases.json").write_text(json.dumps(cases))
    print(f"{len(cases)} cases", flush=True)


if __name__ == "__main__":
    main()

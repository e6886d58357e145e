"""ChatML rendering and tokenization with an assistant-token mask, matching what the
tokenizer_config.json chat template renders and @huggingface/tokenizers encodes."""

import json
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS / "tokenizer"))
from bpe import BYTE_CHAR, ByteLevelBPE, SPECIAL_TOKENS  # noqa: E402

CHAR_BYTE = {c: b for b, c in BYTE_CHAR.items()}


class ChatTokenizer:
    def __init__(self, folder: Path):
        tok = json.loads((folder / "tokenizer.json").read_text())
        self.vocab = tok["model"]["vocab"]
        self.bpe = ByteLevelBPE(self.vocab, [tuple(m) for m in tok["model"]["merges"]])
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.eot, self.im_start, self.im_end = (self.vocab[t] for t in SPECIAL_TOKENS)

    def token_bytes(self, token_id: int) -> bytes:
        token = self.id_to_token[token_id]
        if token in SPECIAL_TOKENS:
            return token.encode()
        return bytes(CHAR_BYTE[c] for c in token)

    def decode(self, ids: list[int]) -> str:
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", errors="replace")

    def encode_chat(self, messages: list[dict], add_generation_prompt: bool = False):
        """(ids, mask): mask is 1 on assistant content tokens and their closing <|im_end|>."""
        ids, mask = [], []
        for m in messages:
            head = f"{m['role']}\n"
            chunk = self.bpe.encode(head + m["content"])
            # tokens starting at or after the end of "role\n" belong to the content
            offset, head_len = 0, len(head.encode())
            ids.append(self.im_start)
            mask.append(0)
            for t in chunk:
                ids.append(t)
                mask.append(1 if m["role"] == "assistant" and offset >= head_len else 0)
                offset += len(self.token_bytes(t))
            ids += [self.im_end] + self.bpe.encode("\n")
            mask += [1 if m["role"] == "assistant" else 0, 0]
        if add_generation_prompt:
            ids += [self.im_start] + self.bpe.encode("assistant\n")
            mask += [0] * (len(ids) - len(mask))
        return ids, mask

"""Byte-level BPE as GPT-2 and Hugging Face `tokenizers` define it: training, encoding,
and the tokenizer.json layout that @huggingface/tokenizers loads.

Text is split by the GPT-2 pre-tokenizer regex, each piece's UTF-8 bytes are mapped to
printable characters (bytes_to_unicode), and merges are learned on those characters.
"""

import heapq
from collections import Counter

import regex

# The pre-tokenizer regex of GPT-2, which Hugging Face's ByteLevel pre-tokenizer applies.
GPT2_SPLIT = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from the 256 byte values to printable unicode characters."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


BYTE_CHAR = bytes_to_unicode()


def pieces(text: str) -> list[str]:
    """Pre-tokenized pieces of text, each as its byte-level character string."""
    return ["".join(BYTE_CHAR[b] for b in p.encode()) for p in GPT2_SPLIT.findall(text)]


def train(word_counts: Counter, num_merges: int, log_every: int = 500) -> list[tuple[str, str]]:
    """Learns merges from byte-level word counts, updating pair counts incrementally."""
    words = [list(w) for w in word_counts]
    counts = list(word_counts.values())
    pair_count: Counter = Counter()
    pair_where: dict[tuple[str, str], set[int]] = {}
    for i, w in enumerate(words):
        for pair in zip(w, w[1:]):
            pair_count[pair] += counts[i]
            pair_where.setdefault(pair, set()).add(i)
    # max-heap by count, then by the pair itself so ties break the same way every run
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    while len(merges) < num_merges and heap:
        neg, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -neg:
            continue  # stale entry: the count changed after it was pushed
        if -neg < 2:
            break
        merges.append(pair)
        merged = pair[0] + pair[1]
        changed: set[tuple[str, str]] = set()
        for i in pair_where.pop(pair, ()):
            w, c = words[i], counts[i]
            for p in zip(w, w[1:]):
                pair_count[p] -= c
                changed.add(p)
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == pair[0] and w[j + 1] == pair[1]:
                    out.append(merged)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pair_count[p] += c
                pair_where.setdefault(p, set()).add(i)
                changed.add(p)
        pair_count.pop(pair, None)
        for p in changed:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_count.pop(p, None)
        if log_every and len(merges) % log_every == 0:
            print(f"merge {len(merges)}: {pair!r} x{-neg}", flush=True)
    return merges


class ByteLevelBPE:
    """Encoder with the merge-rank rule of Hugging Face's BPE model (lowest rank first)."""

    def __init__(self, vocab: dict[str, int], merges: list[tuple[str, str]]):
        self.vocab = vocab
        self.ranks = {pair: r for r, pair in enumerate(merges)}
        self.cache: dict[str, list[int]] = {}

    def encode_piece(self, piece: str) -> list[int]:
        hit = self.cache.get(piece)
        if hit is not None:
            return hit
        symbols = list(piece)
        while len(symbols) > 1:
            ranked = [(self.ranks.get(p, 1 << 30), k) for k, p in enumerate(zip(symbols, symbols[1:]))]
            rank, k = min(ranked)
            if rank == 1 << 30:
                break
            symbols[k : k + 2] = [symbols[k] + symbols[k + 1]]
        ids = [self.vocab[s] for s in symbols]
        if len(self.cache) < 500_000:
            self.cache[piece] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for piece in pieces(text):
            ids.extend(self.encode_piece(piece))
        return ids


def tokenizer_json(vocab: dict[str, int], merges: list[tuple[str, str]]) -> dict:
    added = [
        {"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for t in SPECIAL_TOKENS
    ]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": None,
        "decoder": byte_level,
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab, "merges": [list(m) for m in merges],
        },
    }


def encode_with_specials(bpe: ByteLevelBPE, specials: dict[str, int], text: str) -> list[int]:
    """Encodes text whose special tokens (e.g. <|im_end|>) are kept whole, as Hugging Face
    splits added tokens out before the pre-tokenizer runs."""
    ids, rest = [], text
    while rest:
        found = [(rest.find(s), s) for s in specials if s in rest]
        if not found:
            ids += bpe.encode(rest)
            break
        at, special = min(found)
        ids += bpe.encode(rest[:at]) + [specials[special]]
        rest = rest[at + len(special) :]
    return ids

// Writes a SentencePiece-style tokenizer in tokenizer.json's BPE form, as
// Llama 2 / Mistral / Phi-3 ("llama2": a "▁" prepended, spaces as "▁") and
// Gemma ("gemma": spaces as "▁" only) publish theirs: <unk>, <s>, </s>, the
// 256 byte-fallback tokens <0x00>…<0xFF>, then pieces learned from a corpus.
// The merges are listed the way transformers' converter derives them from a
// SentencePiece model: every split of every piece into two pieces, ordered by
// the piece's rank, so tokenizer.json's BPE and SentencePiece agree.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DEFAULT_TEST_CORPUS } from "./test-tokenizer.js";

export type SentencePieceStyle = "llama2" | "gemma";

const SPECIALS = ["<unk>", "<s>", "</s>"];
const LLAMA2_TEMPLATE =
  "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}{{ '[INST] ' + m['content'] + ' [/INST]' }}" +
  "{% else %}{{ ' ' + m['content'] + eos_token }}{% endif %}{% endfor %}";

/** Writes tokenizer.json and tokenizer_config.json with exactly `vocabSize` tokens. */
export async function writeSentencePieceTokenizer(
  dir: string,
  vocabSize: number,
  style: SentencePieceStyle,
  corpus = DEFAULT_TEST_CORPUS,
): Promise<void> {
  const normalized = (style === "llama2" ? "▁" : "") + corpus.replace(/ /g, "▁");
  const words = new Map<string, number>();
  for (const word of normalized.split(/(?=▁)/u)) words.set(word, (words.get(word) ?? 0) + 1);
  const pieces: string[] = [];
  const known = new Set<string>();
  const add = (p: string) => {
    if (!known.has(p) && pieces.length < vocabSize - 259) {
      known.add(p);
      pieces.push(p);
    }
  };
  for (const ch of normalized) add(ch);
  let segmented = [...words].map(([w, n]) => ({ symbols: [...w], n }));
  while (pieces.length < vocabSize - 259) {
    const counts = new Map<string, number>();
    for (const { symbols, n } of segmented) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = `${symbols[i]}\u0000${symbols[i + 1]}`;
        if (!known.has(symbols[i] + symbols[i + 1])) counts.set(key, (counts.get(key) ?? 0) + n);
      }
    }
    if (counts.size === 0) break;
    const [best] = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
    const [a, b] = best.split("\u0000");
    add(a + b);
    segmented = segmented.map(({ symbols, n }) => {
      const next: string[] = [];
      for (let i = 0; i < symbols.length; i++) {
        if (i + 1 < symbols.length && symbols[i] === a && symbols[i + 1] === b) {
          next.push(a + b);
          i++;
        } else next.push(symbols[i]);
      }
      return { symbols: next, n };
    });
  }
  const vocab: Record<string, number> = {};
  SPECIALS.forEach((s, i) => {
    vocab[s] = i;
  });
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`] = 3 + b;
  pieces.forEach((p, i) => {
    vocab[p] = 259 + i;
  });
  const merges: [string, string][] = [];
  for (const piece of pieces) {
    const chars = [...piece];
    for (let i = 1; i < chars.length; i++) {
      const left = chars.slice(0, i).join("");
      const right = chars.slice(i).join("");
      if (known.has(left) && known.has(right)) merges.push([left, right]);
    }
  }
  const rank = (m: [string, string]) => [vocab[m[0] + m[1]], vocab[m[0]], vocab[m[1]]];
  merges.sort((x, y) => {
    const [a, b] = [rank(x), rank(y)];
    return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
  });
  const replaceSpace = { type: "Replace", pattern: { String: " " }, content: "▁" };
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: SPECIALS.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer:
      style === "llama2"
        ? { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "▁" }, replaceSpace] }
        : replaceSpace,
    pre_tokenizer: null,
    post_processor: null,
    decoder: {
      type: "Sequence",
      decoders: [
        { type: "Replace", pattern: { String: "▁" }, content: " " },
        { type: "ByteFallback" },
        { type: "Fuse" },
        ...(style === "llama2" ? [{ type: "Strip", content: " ", start: 1, stop: 0 }] : []),
      ],
    },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: "<unk>",
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  await writeFile(join(dir, "tokenizer.json"), JSON.stringify(tokenizer));
  const config = {
    bos_token: "<s>",
    eos_token: "</s>",
    unk_token: "<unk>",
    add_bos_token: true,
    add_eos_token: false,
    chat_template: LLAMA2_TEMPLATE,
  };
  await writeFile(join(dir, "tokenizer_config.json"), JSON.stringify(config, null, 2));
}

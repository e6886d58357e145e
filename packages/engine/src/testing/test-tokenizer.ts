// Writes a small but real Hugging Face tokenizer folder for tests: a GPT-2 style
// ByteLevel BPE tokenizer.json laid out like SmolLM2's (special tokens first,
// then the 256 byte tokens, then merges) and a tokenizer_config.json with a
// ChatML chat template. Every text round-trips because every byte has a token.
// The output depends only on the options, so fixtures built on it are stable.

import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CHATML_TEMPLATE } from "../text/tokenizer.js";

export const TEST_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

export const DEFAULT_TEST_CORPUS =
  "The quick brown fox jumps over the lazy dog. A tiny model learns to answer questions " +
  "about the weather, numbers like 12 and 345, and short greetings such as hello there! " +
  "The assistant replies politely: the answer is yes, the answer is no, thank you for asking. " +
  "Über naïve café façade — déjà vu. 日本語のテキスト。 Emoji too: 🙂🚀.";

export interface TestTokenizerOptions {
  /** How many BPE merges to learn from `corpus` (default 0: bytes only). Fewer are written if the corpus runs out of pairs. */
  merges?: number;
  corpus?: string;
  /** The chat_template written to tokenizer_config.json; null leaves it out (default: ChatML). */
  chatTemplate?: string | null;
  /** The special added tokens, ids 0.. in order (default: TEST_SPECIAL_TOKENS). */
  specialTokens?: readonly string[];
  /** Added tokens that are not special (Qwen3's <think>), ids after the special ones. */
  plainTokens?: readonly string[];
  /** Entries that replace tokenizer_config.json's (bos_token, eos_token, ...); undefined removes one. */
  config?: Record<string, unknown>;
  /**
   * A token tokenizer.json's post-processor prepends when special tokens are
   * added, as Llama 3's and Gemma's do with their BOS (default: none).
   */
  prependToken?: string;
}

/** GPT-2's reversible byte → printable character table used by ByteLevel tokenizers. */
export function byteToUnicode(): string[] {
  const table = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    table[b] = String.fromCodePoint(printable ? b : 256 + extra++);
  }
  return table;
}

// The split ByteLevel(use_regex) applies, after Digits(individual_digits) splits every digit off.
const PRE_TOKEN_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

function preTokenize(text: string): string[] {
  const words: string[] = [];
  for (const piece of text.split(/(\p{N})/u)) {
    if (piece.length > 0) words.push(...(piece.match(PRE_TOKEN_PATTERN) ?? []));
  }
  return words;
}

/**
 * Greedy BPE training: repeatedly merge the most frequent adjacent pair (ties: the
 * smallest pair string). Pairs that would spell an existing token are passed over,
 * so every merge adds exactly one token.
 */
function learnMerges(corpus: string, count: number, bytes: string[]): [string, string][] {
  const known = new Set(bytes);
  const encoder = new TextEncoder();
  const wordCounts = new Map<string, number>();
  for (const word of preTokenize(corpus)) {
    const symbols = Array.from(encoder.encode(word), (b) => bytes[b]).join(" ");
    wordCounts.set(symbols, (wordCounts.get(symbols) ?? 0) + 1);
  }
  let words = [...wordCounts].map(([symbols, n]) => ({ symbols: symbols.split(" "), n }));
  const merges: [string, string][] = [];
  while (merges.length < count) {
    const pairCounts = new Map<string, number>();
    for (const { symbols, n } of words) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = symbols[i] + " " + symbols[i + 1];
        pairCounts.set(key, (pairCounts.get(key) ?? 0) + n);
      }
    }
    let bestKey: string | null = null;
    let bestCount = 0;
    for (const [key, n] of pairCounts) {
      if (known.has(key.replace(" ", ""))) continue;
      if (n > bestCount || (n === bestCount && bestKey !== null && key < bestKey)) {
        bestKey = key;
        bestCount = n;
      }
    }
    if (bestKey === null) break;
    const [left, right] = bestKey.split(" ") as [string, string];
    merges.push([left, right]);
    known.add(left + right);
    words = words.map(({ symbols, n }) => {
      const merged: string[] = [];
      for (let i = 0; i < symbols.length; i++) {
        if (i + 1 < symbols.length && symbols[i] === left && symbols[i + 1] === right) {
          merged.push(left + right);
          i++;
        } else {
          merged.push(symbols[i]);
        }
      }
      return { symbols: merged, n };
    });
  }
  return merges;
}

/** ByteLevel's post-processor, followed by a TemplateProcessing that prepends `prepend` when one is given. */
function postProcessor(
  byteLevel: object,
  prepend: string | undefined,
  vocab: Record<string, number>,
): object {
  const plain = { ...byteLevel, trim_offsets: false };
  if (prepend === undefined) return plain;
  const special = { SpecialToken: { id: prepend, type_id: 0 } };
  return {
    type: "Sequence",
    processors: [
      plain,
      {
        type: "TemplateProcessing",
        single: [special, { Sequence: { id: "A", type_id: 0 } }],
        pair: [
          special,
          { Sequence: { id: "A", type_id: 0 } },
          special,
          { Sequence: { id: "B", type_id: 1 } },
        ],
        special_tokens: { [prepend]: { id: prepend, ids: [vocab[prepend]], tokens: [prepend] } },
      },
    ],
  };
}

/** Writes tokenizer.json and tokenizer_config.json into `dir` (created if needed). */
export async function writeTestTokenizer(
  dir: string,
  options: TestTokenizerOptions = {},
): Promise<{ vocabSize: number }> {
  const bytes = byteToUnicode();
  const vocab: Record<string, number> = {};
  let nextId = 0;
  const add = (token: string) => {
    if (!(token in vocab)) vocab[token] = nextId++;
  };
  const specialTokens = options.specialTokens ?? TEST_SPECIAL_TOKENS;
  const plainTokens = options.plainTokens ?? [];
  specialTokens.forEach(add);
  plainTokens.forEach(add);
  bytes.forEach(add);
  const merges = learnMerges(options.corpus ?? DEFAULT_TEST_CORPUS, options.merges ?? 0, bytes);
  for (const [left, right] of merges) add(left + right);

  const addedTokens = [...specialTokens, ...plainTokens].map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: id < specialTokens.length,
  }));
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  const tokenizerJson = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [{ type: "Digits", individual_digits: true }, byteLevel],
    },
    post_processor: postProcessor(byteLevel, options.prependToken, vocab),
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };

  const addedTokensDecoder: Record<string, object> = {};
  for (const { id, ...token } of addedTokens) addedTokensDecoder[String(id)] = token;
  const config: Record<string, unknown> = {
    add_prefix_space: false,
    added_tokens_decoder: addedTokensDecoder,
    additional_special_tokens: ["<|im_start|>", "<|im_end|>"],
    bos_token: "<|im_start|>",
    clean_up_tokenization_spaces: false,
    eos_token: "<|im_end|>",
    model_max_length: 8192,
    pad_token: "<|im_end|>",
    tokenizer_class: "GPT2Tokenizer",
    unk_token: "<|endoftext|>",
    vocab_size: nextId,
    ...options.config,
  };
  const template = options.chatTemplate === undefined ? CHATML_TEMPLATE : options.chatTemplate;
  if (template !== null) config.chat_template = template;

  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "tokenizer.json"), JSON.stringify(tokenizerJson, null, 2) + "\n");
  await writeFile(join(dir, "tokenizer_config.json"), JSON.stringify(config, null, 2) + "\n");
  return { vocabSize: nextId };
}

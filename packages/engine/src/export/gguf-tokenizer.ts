// A Hugging Face tokenizer folder as llama.cpp's tokenizer metadata: the
// byte-level BPE vocabulary ("gpt2" model: tokens as tokenizer.json spells
// them, token types, merges), the pre-tokenizer by llama.cpp's name for the
// same split rule, the special token ids, and the chat template.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EngineError } from "../errors.js";
import type { Tokenizer } from "../types.js";
import { bool, type GgufValue, str, u32 } from "./gguf-file.js";

type Json = Record<string, unknown>;

/** llama.cpp's token types (llama_token_type). */
const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

// The split patterns of the families' tokenizer.json files, as they are written
// there: Llama 3's (also OLMo 2's and SmolLM3's: tiktoken's cl100k), Qwen2's
// (Qwen3's too), GPT-4o's (Phi-4-mini's).
export const LLAMA3_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
export const GPT4O_SPLIT =
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
export const QWEN2_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const steps = (p: unknown): Json[] =>
  p && typeof p === "object"
    ? (p as Json).type === "Sequence"
      ? (((p as Json).normalizers ?? (p as Json).pretokenizers) as Json[])
      : [p as Json]
    : [];

/** llama.cpp's pre-tokenizer name for tokenizer.json's pre_tokenizer, or null when it has none. */
export function preTokenizerName(pre: unknown): string | null {
  const list = steps(pre);
  const byteLevel = list.find((s) => s.type === "ByteLevel");
  if (!byteLevel) return null;
  const others = list.filter((s) => s !== byteLevel);
  if (byteLevel.use_regex !== false && others.length === 0) return "gpt-2";
  if (
    byteLevel.use_regex !== false &&
    others.length === 1 &&
    others[0].type === "Digits" &&
    others[0].individual_digits === true
  ) {
    return "smollm";
  }
  if (byteLevel.use_regex === false && others.length === 1 && others[0].type === "Split") {
    const pattern = (others[0].pattern as Json | undefined)?.Regex;
    if (pattern === LLAMA3_SPLIT) return "llama-bpe";
    if (pattern === QWEN2_SPLIT) return "qwen2";
    if (pattern === GPT4O_SPLIT) return "gpt-4o"; // Phi-4-mini
  }
  return null;
}

function readJson(path: string): Json {
  return JSON.parse(readFileSync(path, "utf8")) as Json;
}

/** The chat template as the folder publishes it (chat_template.jinja, or tokenizer_config.json's). */
export function chatTemplateOf(dir: string): string | null {
  const jinja = join(dir, "chat_template.jinja");
  if (existsSync(jinja)) return readFileSync(jinja, "utf8");
  const configFile = join(dir, "tokenizer_config.json");
  if (!existsSync(configFile)) return null;
  const value = readJson(configFile).chat_template;
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    const named = value as { name?: string; template?: string }[];
    return (named.find((t) => t.name === "default") ?? named[0])?.template ?? null;
  }
  return null;
}

/**
 * A SentencePiece vocabulary in tokenizer.json's BPE form (byte fallback,
 * spaces as "▁"), as Llama 2, Mistral, Phi-3 and Gemma publish it: llama.cpp's
 * "llama" tokenizer model. Its merge order becomes the token scores
 * (llama.cpp merges the pair whose joined token scores highest). Whether
 * llama.cpp prepends "▁" to text: Llama 2's Prepend normalizer (and
 * Metaspace "always") yes; Gemma's plain Replace, and Metaspace "first"
 * (where text after a special token gets none, as the chat templates write
 * it) no. Null for any other tokenizer.
 */
function sentencePieceStyle(json: Json, refuse: (why: string) => Error): { addSpacePrefix: boolean } | null {
  const model = json.model as Json;
  if (model?.type !== "BPE" || model.byte_fallback !== true) return null;
  let replaces = false;
  let prepends = false;
  for (const n of steps(json.normalizer)) {
    const pattern = (n.pattern as Json | undefined)?.String;
    if (n.type === "Replace" && pattern === " " && n.content === "▁") replaces = true;
    else if (n.type === "Prepend" && n.prepend === "▁") prepends = true;
    else throw refuse(`normalizer step ${JSON.stringify(n.type)} has no llama.cpp equivalent`);
  }
  const pre = steps(json.pre_tokenizer);
  const metaspace = pre.find((p) => p.type === "Metaspace");
  if (pre.some((p) => p.type !== "Metaspace")) {
    throw refuse(`pre-tokenizer ${JSON.stringify(json.pre_tokenizer)} with a SentencePiece vocabulary`);
  }
  if (!replaces && !metaspace) return null;
  const scheme = metaspace
    ? String(metaspace.prepend_scheme ?? (metaspace.add_prefix_space === false ? "never" : "always"))
    : null;
  return { addSpacePrefix: prepends || scheme === "always" };
}

/** The tokenizer.* metadata of a GGUF file for the model folder `dir` (vocabulary padded to vocabSize). */
export function tokenizerMetadata(
  dir: string,
  tokenizer: Tokenizer,
  vocabSize: number,
): Map<string, GgufValue> {
  const file = join(dir, "tokenizer.json");
  const refuse = (why: string) =>
    new EngineError("unsupported_architecture", `${file}: cannot export to GGUF: ${why}`, file);
  const json = readJson(file);
  const model = json.model as Json;
  if (model?.type !== "BPE") throw refuse(`tokenizer model ${JSON.stringify(model?.type)} (only BPE)`);
  const spm = sentencePieceStyle(json, refuse);
  const pre = spm ? null : preTokenizerName(json.pre_tokenizer);
  if (!spm && pre === null) {
    throw refuse(
      `pre-tokenizer ${JSON.stringify(json.pre_tokenizer)} has no llama.cpp equivalent (byte-level BPE: GPT-2, SmolLM, Llama 3 or Qwen2 splits; or a SentencePiece vocabulary)`,
    );
  }
  if (!spm && json.normalizer != null)
    throw refuse(`normalizer ${JSON.stringify((json.normalizer as Json).type)}`);
  const vocab = model.vocab as Record<string, number>;
  const tokens: string[] = new Array(vocabSize);
  const types: number[] = new Array(vocabSize).fill(TOKEN_TYPE.normal);
  for (const [text, id] of Object.entries(vocab)) {
    if (id >= vocabSize) continue;
    tokens[id] = text;
    if (spm && /^<0x[0-9A-F]{2}>$/.test(text)) types[id] = TOKEN_TYPE.byte;
  }
  if (typeof model.unk_token === "string" && vocab[model.unk_token] !== undefined) {
    types[vocab[model.unk_token]] = TOKEN_TYPE.unknown;
  }
  for (const t of (json.added_tokens as Json[] | undefined) ?? []) {
    const id = t.id as number;
    if (id >= vocabSize)
      throw refuse(`added token ${JSON.stringify(t.content)} has id ${id} past vocab_size ${vocabSize}`);
    tokens[id] = t.content as string;
    if (types[id] !== TOKEN_TYPE.unknown)
      types[id] = t.special === false ? TOKEN_TYPE.userDefined : TOKEN_TYPE.control;
  }
  for (let id = 0; id < vocabSize; id++) {
    if (tokens[id] === undefined) {
      tokens[id] = `[PAD${id}]`;
      types[id] = TOKEN_TYPE.unused;
    }
  }
  const merges = ((model.merges as unknown[]) ?? []).map((m) => (Array.isArray(m) ? m.join(" ") : String(m)));
  const configFile = join(dir, "tokenizer_config.json");
  const config = existsSync(configFile) ? readJson(configFile) : {};
  const processor = json.post_processor as Json | null;
  const prepends = JSON.stringify(processor?.single ?? processor?.pretokenizers ?? "").includes(
    '"SpecialToken"',
  );
  const out = new Map<string, GgufValue>();
  if (spm) {
    // a token's score: minus the rank of the first merge that makes it (earlier merges win)
    const scores = new Float32Array(vocabSize).fill(-1e9);
    for (let rank = merges.length - 1; rank >= 0; rank--) {
      const id = vocab[merges[rank].replace(" ", "")];
      if (id !== undefined && id < vocabSize) scores[id] = -rank;
    }
    out.set("tokenizer.ggml.model", str("llama"));
    out.set("tokenizer.ggml.tokens", { type: "array", of: "string", value: tokens });
    out.set("tokenizer.ggml.scores", { type: "array", of: "f32", value: scores });
    out.set("tokenizer.ggml.token_type", { type: "array", of: "i32", value: types });
    out.set("tokenizer.ggml.add_space_prefix", bool(spm.addSpacePrefix));
    const unk = typeof model.unk_token === "string" ? vocab[model.unk_token] : undefined;
    if (unk !== undefined) out.set("tokenizer.ggml.unknown_token_id", u32(unk));
  } else {
    out.set("tokenizer.ggml.model", str("gpt2"));
    out.set("tokenizer.ggml.pre", str(pre as string));
    out.set("tokenizer.ggml.tokens", { type: "array", of: "string", value: tokens });
    out.set("tokenizer.ggml.token_type", { type: "array", of: "i32", value: types });
    out.set("tokenizer.ggml.merges", { type: "array", of: "string", value: merges });
  }
  if (tokenizer.bosTokenId !== null) out.set("tokenizer.ggml.bos_token_id", u32(tokenizer.bosTokenId));
  out.set("tokenizer.ggml.eos_token_id", u32(tokenizer.eosTokenIds[0]));
  if (tokenizer.eosTokenIds.length > 1) {
    out.set("tokenizer.ggml.eot_token_id", u32(tokenizer.eosTokenIds[tokenizer.eosTokenIds.length - 1]));
  }
  out.set("tokenizer.ggml.padding_token_id", u32(tokenizer.padTokenId));
  out.set(
    "tokenizer.ggml.add_bos_token",
    bool(config.add_bos_token === true || (prepends && tokenizer.bosTokenId !== null)),
  );
  out.set("tokenizer.ggml.add_eos_token", bool(config.add_eos_token === true));
  const template = chatTemplateOf(dir);
  if (template !== null) out.set("tokenizer.chat_template", str(template));
  return out;
}

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
const TOKEN_TYPE = { normal: 1, control: 3, userDefined: 4, unused: 5 } as const;

// The split patterns of the families' tokenizer.json files, as they are written there.
const LLAMA3_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** llama.cpp's pre-tokenizer name for tokenizer.json's pre_tokenizer, or null when it has none. */
export function preTokenizerName(pre: unknown): string | null {
  const steps = (p: unknown): Json[] =>
    p && typeof p === "object"
      ? (p as Json).type === "Sequence"
        ? ((p as Json).pretokenizers as Json[])
        : [p as Json]
      : [];
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
  if (model?.type !== "BPE")
    throw refuse(`tokenizer model ${JSON.stringify(model?.type)} (only byte-level BPE)`);
  const pre = preTokenizerName(json.pre_tokenizer);
  if (pre === null) {
    throw refuse(
      `pre-tokenizer ${JSON.stringify(json.pre_tokenizer)} has no llama.cpp equivalent (byte-level BPE: GPT-2, SmolLM, Llama 3 or Qwen2 splits)`,
    );
  }
  if (json.normalizer != null) throw refuse(`normalizer ${JSON.stringify((json.normalizer as Json).type)}`);
  const vocab = model.vocab as Record<string, number>;
  const tokens: string[] = new Array(vocabSize);
  const types: number[] = new Array(vocabSize).fill(TOKEN_TYPE.normal);
  for (const [text, id] of Object.entries(vocab)) if (id < vocabSize) tokens[id] = text;
  for (const t of (json.added_tokens as Json[] | undefined) ?? []) {
    const id = t.id as number;
    if (id >= vocabSize)
      throw refuse(`added token ${JSON.stringify(t.content)} has id ${id} past vocab_size ${vocabSize}`);
    tokens[id] = t.content as string;
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
  out.set("tokenizer.ggml.model", str("gpt2"));
  out.set("tokenizer.ggml.pre", str(pre));
  out.set("tokenizer.ggml.tokens", { type: "array", of: "string", value: tokens });
  out.set("tokenizer.ggml.token_type", { type: "array", of: "i32", value: types });
  out.set("tokenizer.ggml.merges", { type: "array", of: "string", value: merges });
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

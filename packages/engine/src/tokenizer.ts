// The model's tokenizer, loaded from a Hugging Face folder as it is:
//   tokenizer.json         → encode/decode through @huggingface/tokenizers
//   tokenizer_config.json  → chat_template (rendered with @huggingface/jinja),
//                            bos/eos/pad tokens, added_tokens_decoder
//
// encode() never adds BOS/EOS itself: chat templates already write the special
// tokens they need into the text, and adding them again would double them
// (this matches Hugging Face's apply_chat_template(tokenize=True)).

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { Tokenizer as HfTokenizer } from "@huggingface/tokenizers";
import { EngineError } from "./errors.js";
import type { ChatMessage, RenderChatOptions, Tokenizer } from "./types.js";

/**
 * Used when tokenizer_config.json has no chat_template: plain ChatML, one
 * `<|im_start|>{role}\n{content}<|im_end|>\n` block per message, and
 * `<|im_start|>assistant\n` as the generation prompt.
 */
export const CHATML_TEMPLATE =
  "{% for message in messages %}" +
  "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

type Json = Record<string, unknown>;

async function readJsonObject(path: string): Promise<Json> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new EngineError("missing_file", `${path}: file not found`, path);
    throw new EngineError("invalid_file", `${path}: cannot be read (${(error as Error).message})`, path);
  }
  let value: unknown;
  try {
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (error) {
    throw new EngineError("invalid_file", `${path}: not valid JSON (${(error as Error).message})`, path);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new EngineError("invalid_file", `${path}: expected a JSON object at the top level`, path);
  }
  return value as Json;
}

/** A special-token field is either a string or an AddedToken object `{ "content": ... }`. */
function tokenContent(config: Json, key: string, configPath: string): string | null {
  const value = config[key];
  if (value === undefined || value === null) return null;
  if (typeof value === "string") return value;
  if (typeof value === "object" && typeof (value as Json).content === "string")
    return (value as Json).content as string;
  throw new EngineError(
    "invalid_file",
    `${configPath}: "${key}" must be a string or an object with a string "content"`,
    configPath,
  );
}

/** chat_template is a string, or a list of `{ name, template }` of which "default" is used. */
function chatTemplateSource(config: Json, configPath: string): string | null {
  const value = config.chat_template;
  if (value === undefined || value === null) return null;
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    const named = value as { name?: unknown; template?: unknown }[];
    const chosen = named.find((t) => t?.name === "default") ?? named[0];
    if (chosen && typeof chosen.template === "string") return chosen.template;
  }
  throw new EngineError(
    "invalid_file",
    `${configPath}: "chat_template" must be a string or a list of {"name", "template"} objects`,
    configPath,
  );
}

interface AddedTokenJson {
  id: number;
  content: string;
  special?: boolean;
  [key: string]: unknown;
}

/** tokenizer_config.json's added_tokens_decoder may list tokens tokenizer.json lacks; add them as HF does. */
function mergeAddedTokens(tokenizerJson: Json, config: Json): void {
  const added = Array.isArray(tokenizerJson.added_tokens)
    ? (tokenizerJson.added_tokens as AddedTokenJson[])
    : [];
  tokenizerJson.added_tokens = added;
  const decoder = config.added_tokens_decoder;
  if (typeof decoder !== "object" || decoder === null) return;
  const known = new Set(added.map((t) => t.content));
  for (const [idText, token] of Object.entries(decoder as Record<string, Json>)) {
    const id = Number(idText);
    if (!Number.isInteger(id) || typeof token?.content !== "string" || known.has(token.content)) continue;
    added.push({
      id,
      content: token.content,
      single_word: token.single_word === true,
      lstrip: token.lstrip === true,
      rstrip: token.rstrip === true,
      normalized: token.normalized === true,
      special: token.special !== false,
    });
    known.add(token.content);
  }
}

class HuggingFaceTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: number[];
  readonly padTokenId: number;
  private readonly template: Template;
  private readonly specialTokenStrings: Record<string, string>;
  private readonly cleanUpSpaces: boolean;

  readonly maxTokenBytes: number;

  constructor(
    private readonly hf: HfTokenizer,
    config: Json,
    templateSource: string,
    private readonly configPath: string,
  ) {
    this.cleanUpSpaces = config.clean_up_tokenization_spaces === true;
    let maxId = -1;
    let maxBytes = 1;
    for (const [text, id] of hf.get_vocab(true)) {
      maxId = Math.max(maxId, id);
      // A vocabulary entry's UTF-8 length bounds the text bytes its token stands
      // for (byte-level BPE writes one or two bytes per byte; "▁" is three).
      maxBytes = Math.max(maxBytes, Buffer.byteLength(text));
    }
    this.vocabSize = maxId + 1;
    this.maxTokenBytes = maxBytes;

    try {
      this.template = new Template(templateSource);
    } catch (error) {
      throw new EngineError(
        "invalid_file",
        `${configPath}: chat_template is not a valid Jinja template (${(error as Error).message})`,
        configPath,
      );
    }

    const tokens: Record<string, string> = {};
    for (const key of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
      const content = tokenContent(config, key, configPath);
      if (content !== null) tokens[key] = content;
    }
    this.specialTokenStrings = tokens;

    this.bosTokenId = tokens.bos_token === undefined ? null : this.requireId("bos_token", tokens.bos_token);
    const eosId = tokens.eos_token === undefined ? null : this.requireId("eos_token", tokens.eos_token);
    const endOfTurnId = this.findEndOfTurnToken();
    const eosTokenIds: number[] = [];
    if (eosId !== null) eosTokenIds.push(eosId);
    if (endOfTurnId !== null && endOfTurnId !== eosId) eosTokenIds.push(endOfTurnId);
    if (eosTokenIds.length === 0) {
      throw new EngineError(
        "invalid_file",
        `${configPath}: no "eos_token", and the chat template has no end-of-turn token, so generation could never stop`,
        configPath,
      );
    }
    this.eosTokenIds = eosTokenIds;
    this.padTokenId =
      tokens.pad_token === undefined ? eosTokenIds[0] : this.requireId("pad_token", tokens.pad_token);
  }

  private requireId(key: string, content: string): number {
    const id = this.hf.token_to_id(content);
    if (id === undefined) {
      throw new EngineError(
        "invalid_file",
        `${this.configPath}: ${key} ${JSON.stringify(content)} is not in tokenizer.json's vocabulary`,
        this.configPath,
      );
    }
    return id;
  }

  /**
   * The special token the template writes right after an assistant message
   * (`<|im_end|>` for ChatML, `<|eot_id|>` for Llama 3), found by rendering a
   * probe conversation and reading what follows the assistant's content.
   */
  private findEndOfTurnToken(): number | null {
    const probe = "svc-end-of-turn-probe";
    let rendered: string;
    try {
      rendered = this.applyChatTemplate([
        { role: "user", content: "hi" },
        { role: "assistant", content: probe },
      ]);
    } catch {
      return null;
    }
    const at = rendered.lastIndexOf(probe);
    if (at < 0) return null;
    const after = rendered.slice(at + probe.length).trimStart();
    let best: { id: number; length: number } | null = null;
    for (const [id, token] of this.hf.get_added_tokens_decoder()) {
      if (!token.special || !after.startsWith(token.content)) continue;
      if (best === null || token.content.length > best.length) best = { id, length: token.content.length };
    }
    return best?.id ?? null;
  }

  encode(text: string): number[] {
    if (text.length === 0) return [];
    return this.hf.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string {
    // Ids the vocabulary does not have (a model's padded embedding rows) decode to nothing.
    const known: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (this.hf.id_to_token(ids[i]) !== undefined) known.push(ids[i]);
    }
    if (known.length === 0) return "";
    return this.hf.decode(known, {
      skip_special_tokens: options?.skipSpecialTokens ?? false,
      clean_up_tokenization_spaces: this.cleanUpSpaces,
    });
  }

  applyChatTemplate(messages: ChatMessage[], options?: RenderChatOptions): string {
    try {
      return this.template.render({
        ...this.specialTokenStrings,
        messages: messages.map((m) => ({ role: m.role, content: m.content })),
        add_generation_prompt: options?.addGenerationPrompt ?? false,
      });
    } catch (error) {
      throw new EngineError(
        "invalid_argument",
        `${this.configPath}: the chat template could not render these messages (${(error as Error).message})`,
        this.configPath,
      );
    }
  }
}

/** Loads `<dir>/tokenizer.json` and `<dir>/tokenizer_config.json`. */
export async function loadTokenizer(dir: string): Promise<Tokenizer> {
  const tokenizerPath = join(dir, "tokenizer.json");
  const configPath = join(dir, "tokenizer_config.json");
  const [tokenizerJson, config] = await Promise.all([
    readJsonObject(tokenizerPath),
    readJsonObject(configPath),
  ]);
  if (typeof tokenizerJson.model !== "object" || tokenizerJson.model === null) {
    throw new EngineError("invalid_file", `${tokenizerPath}: missing the "model" object`, tokenizerPath);
  }
  for (const key of ["normalizer", "pre_tokenizer", "post_processor", "decoder"]) {
    if (!(key in tokenizerJson)) tokenizerJson[key] = null;
  }
  mergeAddedTokens(tokenizerJson, config);

  let hf: HfTokenizer;
  try {
    hf = new HfTokenizer(tokenizerJson, config);
  } catch (error) {
    throw new EngineError("invalid_file", `${tokenizerPath}: ${(error as Error).message}`, tokenizerPath);
  }
  return new HuggingFaceTokenizer(
    hf,
    config,
    chatTemplateSource(config, configPath) ?? CHATML_TEMPLATE,
    configPath,
  );
}

// The model's tokenizer, loaded from a Hugging Face folder as it is:
//   tokenizer.json          → encode/decode through @huggingface/tokenizers
//   tokenizer_config.json   → chat_template (rendered by chat-template.ts),
//                             bos/eos/pad tokens, added_tokens_decoder
//   generation_config.json  → eos_token_id (an id or a list), when the folder has one
//   config.json             → eos_token_id (an id or a list), when the folder has one
//
// encode() never adds BOS/EOS itself: chat templates already write the special
// tokens they need into the text (Llama 3 and Gemma write their BOS), and
// adding them again would double them. This matches Hugging Face's
// apply_chat_template(tokenize=True), which tokenizes with add_special_tokens=False,
// even where tokenizer.json's post-processor would prepend a BOS.
//
// Generation stops at any of eosTokenIds: tokenizer_config.json's eos_token,
// every eos_token_id of generation_config.json and config.json (models publish
// several, e.g. Llama 3.1's <|end_of_text|>, <|eom_id|> and <|eot_id|>), and the
// end-of-turn token the chat template writes after an assistant message. A
// folder is refused only when none of these gives an id.

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Tokenizer as HfTokenizer } from "@huggingface/tokenizers";
import { tokenBytesTable } from "../constrained/token-bytes.js";
import { EngineError } from "../errors.js";
import type { ChatMessage, RenderChatOptions, Tokenizer } from "../types.js";
import { ChatTemplate } from "./chat-template.js";
import {
  DEFAULT_TOOL_SYNTAX,
  defaultToolMessages,
  detectToolSyntax,
  rendersToolRole,
  type ToolSyntax,
} from "./tool-syntax.js";

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

async function readJsonObject(path: string): Promise<Json>;
async function readJsonObject(path: string, optional: true): Promise<Json | null>;
async function readJsonObject(path: string, optional = false): Promise<Json | null> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && optional) return null;
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

/** The ids of `eos_token_id` in generation_config.json or config.json: absent, null, an id, or a list of ids. */
function eosTokenIdsOf(json: Json | null, path: string): number[] {
  const value = json?.eos_token_id;
  if (value === undefined || value === null) return [];
  const ids = Array.isArray(value) ? value : [value];
  if (!ids.every((id) => Number.isInteger(id) && id >= 0)) {
    throw new EngineError(
      "invalid_file",
      `${path}: "eos_token_id" must be a token id or a list of token ids, got ${JSON.stringify(value)}`,
      path,
    );
  }
  return ids as number[];
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

export interface LoadTokenizerOptions {
  /** The clock the chat template's strftime_now reads (default: the current time). */
  now?: () => Date;
}

class HuggingFaceTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: number[];
  readonly padTokenId: number;
  private readonly template: ChatTemplate;
  private readonly cleanUpSpaces: boolean;

  readonly maxTokenBytes: number;
  readonly toolSyntax: ToolSyntax | null;
  /** Whether the template writes "tool" messages itself (where svc writes the tool syntax). */
  private readonly toolRole: boolean;

  /** `publishedEosIds`: generation_config.json's then config.json's eos_token_id ids. */
  constructor(
    private readonly hf: HfTokenizer,
    config: Json,
    templateSource: string,
    publishedEosIds: number[],
    private readonly configPath: string,
    options: LoadTokenizerOptions,
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

    const tokens: Record<string, string> = {};
    for (const key of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
      const content = tokenContent(config, key, configPath);
      if (content !== null) tokens[key] = content;
    }

    try {
      this.template = new ChatTemplate(templateSource, tokens, options.now);
    } catch (error) {
      throw new EngineError(
        "invalid_file",
        `${configPath}: chat_template is not a valid Jinja template (${(error as Error).message})`,
        configPath,
      );
    }

    this.bosTokenId = tokens.bos_token === undefined ? null : this.requireId("bos_token", tokens.bos_token);
    const eosId = tokens.eos_token === undefined ? null : this.requireId("eos_token", tokens.eos_token);
    const endOfTurnId = this.findEndOfTurnToken();
    const eosTokenIds = [
      ...new Set([
        ...(eosId === null ? [] : [eosId]),
        ...publishedEosIds,
        ...(endOfTurnId === null ? [] : [endOfTurnId]),
      ]),
    ];
    if (eosTokenIds.length === 0) {
      throw new EngineError(
        "invalid_file",
        `${configPath}: no "eos_token", no "eos_token_id" in generation_config.json or config.json, ` +
          "and the chat template has no end-of-turn token, so generation could never stop",
        configPath,
      );
    }
    this.eosTokenIds = eosTokenIds;
    const syntax = detectToolSyntax((messages, tools) => this.template.render(messages, false, tools));
    this.toolSyntax = syntax === "none" ? DEFAULT_TOOL_SYNTAX : syntax;
    this.toolRole = rendersToolRole((messages) => this.template.render(messages, false));
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

  private bytesOfTokens: readonly (Uint8Array | null)[] | null = null;

  tokenBytes(): readonly (Uint8Array | null)[] {
    if (this.bytesOfTokens === null) {
      const table = tokenBytesTable({
        vocabSize: this.vocabSize,
        idToToken: (id) => this.hf.id_to_token(id),
        addedTokens: this.hf.get_added_tokens_decoder(),
        decoder: this.hf.decoder?.config ?? null,
      });
      if (typeof table === "string")
        throw new EngineError("invalid_argument", `${this.configPath}: ${table}`, this.configPath);
      this.bytesOfTokens = table;
    }
    return this.bytesOfTokens;
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
    const addGenerationPrompt = options?.addGenerationPrompt ?? false;
    try {
      if (this.toolSyntax?.writtenBy === "svc") {
        const plain = defaultToolMessages(messages, options?.tools, this.toolRole);
        return this.template.render(plain, addGenerationPrompt);
      }
      return this.template.render(messages, addGenerationPrompt, options?.tools);
    } catch (error) {
      throw new EngineError(
        "invalid_argument",
        `${this.configPath}: the chat template could not render these messages (${(error as Error).message})`,
        this.configPath,
      );
    }
  }
}

/**
 * Loads `<dir>/tokenizer.json` and `<dir>/tokenizer_config.json`, and the
 * eos_token_id of `<dir>/generation_config.json` and `<dir>/config.json` where
 * the folder has them.
 */
export async function loadTokenizer(dir: string, options: LoadTokenizerOptions = {}): Promise<Tokenizer> {
  const tokenizerPath = join(dir, "tokenizer.json");
  const configPath = join(dir, "tokenizer_config.json");
  const generationConfigPath = join(dir, "generation_config.json");
  const modelConfigPath = join(dir, "config.json");
  const [tokenizerJson, config, generationConfig, modelConfig] = await Promise.all([
    readJsonObject(tokenizerPath),
    readJsonObject(configPath),
    readJsonObject(generationConfigPath, true),
    readJsonObject(modelConfigPath, true),
  ]);
  const publishedEosIds = [
    ...eosTokenIdsOf(generationConfig, generationConfigPath),
    ...eosTokenIdsOf(modelConfig, modelConfigPath),
  ];
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
    publishedEosIds,
    configPath,
    options,
  );
}

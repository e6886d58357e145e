// Turns a dataset row into a TokenizedExample: the conversation rendered with the
// model's chat template, tokenized, and a label per token.
//
// Label alignment (Hugging Face's convention): labels[i] belongs to position i,
// the same alignment as inputIds, and labels[i] is either inputIds[i] or -100.
// The model shifts internally: the logits at position i are scored against
// labels[i + 1], so labels[0] is never used and a label of -100 at i + 1 means
// "do not train the prediction made at position i".
//
// What is trained (lossOn "assistant", the default): for each assistant message,
// its content and its tool calls as the template writes them, plus the end-of-turn token the template
// writes right after it (`<|im_end|>` in ChatML, `<|eot_id|>` in Llama 3,
// `<end_of_turn>` in Gemma, `<|end|>` in Phi, `</s>` in Mistral, whitespace
// between them included), so the model learns both the answer and when to stop.
// Everything else gets -100: system and user turns, a system preamble or default
// system prompt the template adds (Llama 3's knowledge-cutoff and date lines,
// Qwen's default system prompt), the turn's scaffolding (`<|im_start|>assistant\n`,
// `<start_of_turn>model\n`), tool messages (the results a tool returned, which
// the model reads but does not write), an empty thinking block the template inserts before
// the content (Qwen3, SmolLM3 without reasoning), BOS, an EOS the template
// appends after the last turn (Phi-3), and assistant messages with weight 0.
// lossOn "all" trains every token.
//
// Finding the content: the conversation is rendered again with message k's
// content replaced by a sentinel string (and its tool calls left out). What the template writes before and
// after the sentinel is scaffolding, so in the real text the content lies
// between that prefix and suffix; this holds whatever the template does to the
// content (trims it, renames the role, folds the system prompt into a user turn,
// rewrites earlier turns as Qwen3 does) as long as it treats the content as an
// opaque string. When the content itself changes the rendering around it
// (the tool calls a template writes after the content or instead of it; Qwen3 splits a "<think>...</think>" content into its reasoning block), the
// content is the part of the text that differs from the sentinel rendering,
// widened back to the end of the generation prompt when that prompt is a prefix
// of the text, so a reasoning block written from the content is trained with it.
// A clock that ticks between renders (strftime_now) is caught and the text
// rendered again.
//
// Character spans become token spans: each character boundary p is mapped to a
// token boundary. The ids the model trains on are always the whole text's own
// tokenization. The pieces between boundaries are tokenized separately first:
// when their ids concatenate to exactly the whole text's ids — always so for
// ChatML, where the special tokens and the "\n" after the role split the text
// (examples.test.ts checks) — the piece lengths give the token boundaries. When
// they do not (a merge across a boundary), each boundary p is placed by
// tokenizing text[0..p) and counting the leading ids it shares with the whole
// text's ids, so a token that straddles a boundary belongs to the side after it.

import { allowedValues, EngineError } from "../errors.js";
import type { ChatMessage, DatasetRow, TokenizedExample, Tokenizer, ToolDefinition } from "../types.js";
import type { DatasetMessage } from "./dataset.js";

/** The label of a position that is not trained on (PyTorch's cross-entropy ignore_index). */
export const IGNORE_INDEX = -100;

/** hyperparameters.lossOn's values: the answers only (default), or every token. */
export const LOSS_ON: readonly NonNullable<TokenizeExampleOptions["lossOn"]>[] = ["assistant", "all"];

export interface TokenizeExampleOptions {
  /** Keep at most this many tokens, dropping from the end. */
  maxLength?: number;
  /** Which tokens are trained on (default "assistant"). */
  lossOn?: "assistant" | "all";
}

/**
 * The conversation a row stands for. A prompt/completion row is one user turn
 * (the prompt) and one assistant turn (the completion), rendered through the chat
 * template like any conversation, so the model is trained the way it is prompted.
 */
export function rowMessages(row: DatasetRow): DatasetMessage[] {
  if ("messages" in row) return row.messages;
  return [
    { role: "user", content: row.prompt },
    { role: "assistant", content: row.completion },
  ];
}

/** The functions a row's conversation may call (rendered by the template with it). */
export function rowTools(row: DatasetRow): ToolDefinition[] | undefined {
  return "messages" in row ? row.tools : undefined;
}

/** Character span [start, end) of one trained assistant message in the rendered text. */
interface Span {
  start: number;
  end: number;
}

/** Stands in for an assistant message's content; no template changes it or finds it in a real text. */
const SENTINEL = "\u0000svc-assistant-content\u0000";

function templateError(problem: string): EngineError {
  return new EngineError(
    "invalid_argument",
    `the chat template ${problem}, so the assistant tokens cannot be found; train with lossOn "all" instead`,
  );
}

function commonPrefixLength(a: string, b: string, limit: number): number {
  let n = 0;
  while (n < limit && a.charCodeAt(n) === b.charCodeAt(n)) n++;
  return n;
}

function commonSuffixLength(a: string, b: string, limit: number): number {
  let n = 0;
  while (n < limit && a.charCodeAt(a.length - 1 - n) === b.charCodeAt(b.length - 1 - n)) n++;
  return n;
}

/**
 * Where assistant message k's content lies in `text`, the whole conversation's
 * rendering; null when that rendering no longer matches (the clock ticked).
 */
function contentSpan(
  tokenizer: Tokenizer,
  plain: ChatMessage[],
  k: number,
  text: string,
  tools: ToolDefinition[] | undefined,
): Span | null {
  const probe = plain.map((m, i) => (i === k ? { role: m.role, content: SENTINEL } : m));
  const withSentinel = tokenizer.applyChatTemplate(probe, { tools });
  const at = withSentinel.indexOf(SENTINEL);
  if (at < 0 || withSentinel.indexOf(SENTINEL, at + 1) >= 0) {
    throw templateError("does not write each assistant message's content once, as it is");
  }
  const before = withSentinel.slice(0, at);
  const after = withSentinel.slice(at + SENTINEL.length);
  if (text.startsWith(before) && text.endsWith(after) && before.length + after.length <= text.length) {
    return { start: before.length, end: text.length - after.length };
  }
  // The content changes the text around it (Qwen3 writes "<think>...</think>" in
  // a content as a reasoning block): the content is the part that differs. A
  // difference that begins before the generation prompt's end is not the
  // content's doing but another rendering of the earlier turns (the clock ticked).
  const differsFrom = commonPrefixLength(text, withSentinel, Math.min(at, text.length));
  const differsTo =
    text.length - commonSuffixLength(text, withSentinel, Math.min(after.length, text.length - differsFrom));
  const prompt = tokenizer.applyChatTemplate(plain.slice(0, k), { addGenerationPrompt: true, tools });
  if (!text.startsWith(prompt) || differsFrom < prompt.length) return null;
  return { start: prompt.length, end: Math.max(prompt.length, differsTo) };
}

/** The trained spans of `text`, or null when a render no longer matches it. */
function assistantSpans(
  tokenizer: Tokenizer,
  messages: DatasetMessage[],
  text: string,
  tools: ToolDefinition[] | undefined,
): Span[] | null {
  const endOfTurn = tokenizer.eosTokenIds.map((id) => tokenizer.decode([id])).filter((s) => s.length > 0);
  const plain = messages.map(({ weight: _, ...m }): ChatMessage => m);
  const spans: Span[] = [];
  for (let k = 0; k < messages.length; k++) {
    if (messages[k].role !== "assistant" || messages[k].weight === 0) continue;
    const span = contentSpan(tokenizer, plain, k, text, tools);
    if (span === null) return null;
    // The end-of-turn token right after the content (past whitespace) ends the turn.
    const rest = text.slice(span.end);
    const gap = rest.length - rest.trimStart().length;
    const token = endOfTurn
      .filter((t) => rest.startsWith(t, gap))
      .reduce<string | null>((best, t) => (best === null || t.length > best.length ? t : best), null);
    const end = token === null ? span.end : span.end + gap + token.length;
    if (spans.length > 0 && span.start < spans[spans.length - 1].end) {
      throw templateError("writes assistant messages out of order");
    }
    spans.push({ start: span.start, end });
  }
  return spans;
}

/** The number of leading tokens of `ids` (the tokenization of `text`) that lie entirely before character `p`. */
function tokenBoundary(tokenizer: Tokenizer, text: string, ids: number[], p: number): number {
  if (p <= 0) return 0;
  if (p >= text.length) return ids.length;
  const prefix = tokenizer.encode(text.slice(0, p));
  let shared = 0;
  while (shared < prefix.length && shared < ids.length && prefix[shared] === ids[shared]) shared++;
  return shared;
}

/** Token boundaries for ascending character boundaries `points` of `text`, whose tokenization is `ids`. */
function tokenBoundaries(tokenizer: Tokenizer, text: string, ids: number[], points: number[]): number[] {
  const boundaries: number[] = [];
  let at = 0;
  let from = 0;
  for (const p of points) {
    const piece = tokenizer.encode(text.slice(from, p));
    for (let j = 0; j < piece.length; j++, at++) {
      if (ids[at] !== piece[j]) return points.map((q) => tokenBoundary(tokenizer, text, ids, q));
    }
    boundaries.push(at);
    from = p;
  }
  const rest = tokenizer.encode(text.slice(from));
  if (at + rest.length !== ids.length || rest.some((id, j) => ids[at + j] !== id)) {
    return points.map((q) => tokenBoundary(tokenizer, text, ids, q));
  }
  return boundaries;
}

/** Whether any label but labels[0] (never scored: nothing precedes position 0) is trained. */
export function hasTrainedTokens(labels: Int32Array): boolean {
  return labels.some((label, i) => i > 0 && label !== IGNORE_INDEX);
}

export function checkExampleOptions(options: TokenizeExampleOptions): void {
  const { maxLength, lossOn = "assistant" } = options;
  if (maxLength !== undefined && (!Number.isInteger(maxLength) || maxLength < 2)) {
    throw new EngineError("invalid_argument", `maxLength must be an integer of at least 2, got ${maxLength}`);
  }
  if (!LOSS_ON.includes(lossOn)) {
    throw new EngineError(
      "invalid_argument",
      `lossOn must be ${allowedValues(LOSS_ON)}, got ${JSON.stringify(lossOn)}`,
    );
  }
}

/** The whole conversation rendered, tokenized and labelled, not truncated. */
export function labelMessages(
  tokenizer: Tokenizer,
  messages: DatasetMessage[],
  lossOn: "assistant" | "all" = "assistant",
  tools?: ToolDefinition[],
): TokenizedExample {
  const plain = messages.map(({ weight: _, ...m }): ChatMessage => m);
  let text = tokenizer.applyChatTemplate(plain, { tools });
  let spans: Span[] | null = null;
  if (lossOn === "assistant") {
    spans = assistantSpans(tokenizer, messages, text, tools);
    if (spans === null) {
      // A render disagreed with the text: strftime_now's date changed in between. Once more.
      text = tokenizer.applyChatTemplate(plain, { tools });
      spans = assistantSpans(tokenizer, messages, text, tools);
      if (spans === null) {
        throw templateError("writes earlier turns differently depending on an assistant message's content");
      }
    }
  }
  const ids = tokenizer.encode(text);

  const labels = new Int32Array(ids.length).fill(IGNORE_INDEX);
  if (spans === null) {
    labels.set(ids);
  } else {
    const boundaries = tokenBoundaries(
      tokenizer,
      text,
      ids,
      spans.flatMap((span) => [span.start, span.end]),
    );
    for (let k = 0; k < spans.length; k++) {
      for (let i = boundaries[2 * k]; i < boundaries[2 * k + 1]; i++) labels[i] = ids[i];
    }
  }
  return { inputIds: Int32Array.from(ids), labels };
}

/** The error of a row that has no trained token at all, whatever its length. */
export function nothingToTrain(length: number): EngineError {
  return new EngineError("invalid_dataset", `the example has no tokens to train on (${length} tokens)`);
}

/**
 * A row as one example, truncated FROM THE END to maxLength (truncation "end";
 * truncation.ts holds the other modes): the start of the conversation gives the
 * answers their context. Throws when no trained token remains.
 */
export function tokenizeExample(
  tokenizer: Tokenizer,
  row: DatasetRow,
  options: TokenizeExampleOptions = {},
): TokenizedExample {
  checkExampleOptions(options);
  const { maxLength, lossOn = "assistant" } = options;
  const full = labelMessages(tokenizer, rowMessages(row), lossOn, rowTools(row));
  const total = full.inputIds.length;
  const length = maxLength === undefined ? total : Math.min(total, maxLength);
  const example: TokenizedExample = {
    inputIds: full.inputIds.slice(0, length),
    labels: full.labels.slice(0, length),
  };
  if (!hasTrainedTokens(example.labels)) {
    const firstTrained = full.labels.findIndex((label, i) => i > 0 && label !== IGNORE_INDEX);
    if (firstTrained < 0) throw nothingToTrain(total);
    throw new EngineError(
      "invalid_dataset",
      `no trained tokens remain after truncating to maxLength ${maxLength}: ` +
        `the first assistant token is token ${firstTrained + 1} of ${total}`,
    );
  }
  return example;
}

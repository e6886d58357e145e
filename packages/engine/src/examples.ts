// Turns a dataset row into a TokenizedExample: the conversation rendered with the
// model's chat template, tokenized, and a label per token.
//
// Label alignment (Hugging Face's convention): labels[i] belongs to position i,
// the same alignment as inputIds, and labels[i] is either inputIds[i] or -100.
// The model shifts internally: the logits at position i are scored against
// labels[i + 1], so labels[0] is never used and a label of -100 at i + 1 means
// "do not train the prediction made at position i".
//
// What is trained (lossOn "assistant", the default): the tokens of each assistant
// message's content plus the end-of-turn token the template writes after it
// (`<|im_end|>` in ChatML), so the model learns both the answer and when to stop.
// System and user turns, the template's scaffolding (`<|im_start|>assistant\n`)
// and assistant messages with weight 0 get -100. lossOn "all" trains every token.
//
// Finding the assistant tokens: the template is rendered again for each prefix of
// the conversation. Rendering messages[0..k) with the generation prompt gives the
// text that precedes assistant message k, so its length is where the message
// starts; rendering messages[0..k] gives the text through the message, whose last
// end-of-turn token is where it ends. Each character boundary p is mapped to a
// token boundary. The ids the model trains on are always the whole text's own
// tokenization. The pieces between boundaries are tokenized separately first:
// when their ids concatenate to exactly the whole text's ids — always so for
// ChatML, where the special tokens and the "\n" after the role split the text
// (examples.test.ts checks) — the piece lengths give the token boundaries. When
// they do not (a merge across a boundary), each boundary p is placed by
// tokenizing text[0..p) and counting the leading ids it shares with the whole
// text's ids, so a token that straddles a boundary belongs to the side after it.

import type { DatasetMessage } from "./dataset.js";
import { EngineError } from "./errors.js";
import type { ChatMessage, DatasetRow, TokenizedExample, Tokenizer } from "./types.js";

/** The label of a position that is not trained on (PyTorch's cross-entropy ignore_index). */
export const IGNORE_INDEX = -100;

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

/** Character span [start, end) of one trained assistant message in the rendered text. */
interface Span {
  start: number;
  end: number;
}

function templateError(problem: string): EngineError {
  return new EngineError(
    "invalid_argument",
    `the chat template ${problem}, so the assistant tokens cannot be found; train with lossOn "all" instead`,
  );
}

/** Where `content` (or, for templates that trim, its trimmed form) first appears in `text` from `from` on. */
function indexOfContent(text: string, content: string, from: number): number {
  if (content.length === 0) return -1;
  const at = text.indexOf(content, from);
  if (at >= 0) return at;
  const trimmed = content.trim();
  return trimmed.length === 0 ? -1 : text.indexOf(trimmed, from);
}

function assistantSpans(tokenizer: Tokenizer, messages: DatasetMessage[], text: string): Span[] {
  const endOfTurn = tokenizer.eosTokenIds.map((id) => tokenizer.decode([id])).filter((s) => s.length > 0);
  const plain = messages.map((m): ChatMessage => ({ role: m.role, content: m.content }));
  const spans: Span[] = [];
  let searchFrom = 0;
  for (let k = 0; k < messages.length; k++) {
    const message = messages[k];
    if (message.role !== "assistant" || message.weight === 0) continue;
    const before = tokenizer.applyChatTemplate(plain.slice(0, k), { addGenerationPrompt: true });
    const through = tokenizer.applyChatTemplate(plain.slice(0, k + 1));
    if (!text.startsWith(through)) throw templateError("renders a conversation's prefixes differently");

    // Normally the generation prompt ends exactly where the content starts. A template
    // without one (or one that writes more than its generation prompt, such as an empty
    // thinking block) leaves scaffolding before the content: skip to the content.
    const prefixMatches = through.startsWith(before) && before.length >= searchFrom;
    let start = prefixMatches ? before.length : searchFrom;
    const contentAt = indexOfContent(through, message.content, start);
    if (contentAt >= 0) start = contentAt;
    else if (!prefixMatches) throw templateError("does not write assistant messages where expected");

    const region = through.slice(start);
    let endInRegion = -1;
    for (const token of endOfTurn) {
      const at = region.lastIndexOf(token);
      if (at >= 0) endInRegion = Math.max(endInRegion, at + token.length);
    }
    // No end-of-turn token: the message runs to the end of its rendering, less trailing whitespace.
    const end = start + (endInRegion >= 0 ? endInRegion : region.trimEnd().length);
    spans.push({ start, end });
    searchFrom = end;
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
  if (lossOn !== "assistant" && lossOn !== "all") {
    throw new EngineError(
      "invalid_argument",
      `lossOn must be "assistant" or "all", got ${JSON.stringify(lossOn)}`,
    );
  }
}

/** The whole conversation rendered, tokenized and labelled, not truncated. */
export function labelMessages(
  tokenizer: Tokenizer,
  messages: DatasetMessage[],
  lossOn: "assistant" | "all" = "assistant",
): TokenizedExample {
  const text = tokenizer.applyChatTemplate(messages);
  const ids = tokenizer.encode(text);

  const labels = new Int32Array(ids.length).fill(IGNORE_INDEX);
  if (lossOn === "all") {
    labels.set(ids);
  } else {
    const spans = assistantSpans(tokenizer, messages, text);
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
  const full = labelMessages(tokenizer, rowMessages(row), lossOn);
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

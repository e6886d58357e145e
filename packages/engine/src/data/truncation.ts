// What happens to a row longer than maxLength (hyperparameters.truncation):
//
// - "keep_answers" (default): cut the prompt side, never the trained answer.
//   Drop whole exchanges from the start (each runs through an assistant turn),
//   keeping the system message and the final exchange; then cut the head of the
//   final user turn's content, keeping its tail (the question nearest the
//   answer); then, only if still needed, the system message's tail, keeping its
//   head (its instructions come first). Untrained turns after the last trained
//   answer go first of all. Every cut is re-rendered and re-tokenized, so the
//   template stays well formed and the labels follow examples.ts's rules.
// - "end": cut tokens from the end (tokenizeExample's behaviour before this mode existed).
// - "strict": a row over maxLength fails the job, named.
//
// A row whose answer cannot fit (nothing trained survives) is dropped and
// counted, not fatal: prepareSet fails only when no row of a set is usable.

import { allowedValues, EngineError } from "../errors.js";
import type {
  DatasetRow,
  PreparedSet,
  TokenizedExample,
  Tokenizer,
  ToolDefinition,
  TruncationMode,
} from "../types.js";
import type { DatasetMessage } from "./dataset.js";
import {
  checkExampleOptions,
  hasTrainedTokens,
  labelMessages,
  nothingToTrain,
  rowMessages,
  rowTools,
  type TokenizeExampleOptions,
} from "./examples.js";

export const TRUNCATION_MODES: readonly TruncationMode[] = ["keep_answers", "end", "strict"];

export interface FitOptions extends TokenizeExampleOptions {
  maxLength: number;
  truncation?: TruncationMode;
}

/** One row fitted to maxLength: the example and whether it was cut, or why it was dropped. */
export type FittedRow =
  | { example: TokenizedExample; truncated: boolean }
  | { example: null; dropped: string };

function tooLong(length: number, maxLength: number): string {
  return `${length} tokens, over maxLength ${maxLength}`;
}

export function fitRow(tokenizer: Tokenizer, row: DatasetRow, options: FitOptions): FittedRow {
  checkExampleOptions(options);
  const { maxLength, lossOn = "assistant", truncation = "keep_answers" } = options;
  if (!TRUNCATION_MODES.includes(truncation)) {
    throw new EngineError(
      "invalid_argument",
      `truncation must be ${allowedValues(TRUNCATION_MODES)}, got ${JSON.stringify(truncation)}`,
    );
  }
  const messages = rowMessages(row);
  const tools = rowTools(row);
  const full = labelMessages(tokenizer, messages, lossOn, tools);
  if (!hasTrainedTokens(full.labels)) throw nothingToTrain(full.inputIds.length);
  if (full.inputIds.length <= maxLength) return { example: full, truncated: false };

  if (truncation === "strict") {
    throw new EngineError(
      "invalid_dataset",
      `${tooLong(full.inputIds.length, maxLength)} (truncation "strict")`,
    );
  }
  return truncation === "end"
    ? cutEnd(full, maxLength)
    : keepAnswers(tokenizer, messages, tools, full, options);
}

function cutEnd(full: TokenizedExample, maxLength: number): FittedRow {
  const labels = full.labels.slice(0, maxLength);
  if (!hasTrainedTokens(labels)) {
    return { example: null, dropped: `no trained token within the first ${maxLength} tokens` };
  }
  return { example: { inputIds: full.inputIds.slice(0, maxLength), labels }, truncated: true };
}

/** Is a low surrogate: a cut before it would split a character in two. */
const isLowSurrogate = (text: string, at: number) => /[\udc00-\udfff]/.test(text.charAt(at));

/**
 * The smallest x in [lo, hi] whose candidate fits, by bisection: the rendered
 * length falls as x (the amount cut) grows. null when even hi does not fit.
 */
function smallestFitting(lo: number, hi: number, fits: (x: number) => boolean): number | null {
  if (!fits(hi)) return null;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function keepAnswers(
  tokenizer: Tokenizer,
  messages: DatasetMessage[],
  tools: ToolDefinition[] | undefined,
  full: TokenizedExample,
  options: FitOptions,
): FittedRow {
  const { maxLength, lossOn = "assistant" } = options;
  const trained = (m: DatasetMessage) => lossOn === "all" || (m.role === "assistant" && m.weight !== 0);
  let last = messages.length - 1;
  while (last > 0 && !trained(messages[last])) last--;
  const system = messages[0]?.role === "system" && last > 0 ? messages[0] : null;
  const head = system ? 1 : 0;
  let userAt = -1;
  for (let i = last - 1; i >= head && userAt < 0; i--) if (messages[i].role === "user") userAt = i;
  const finalStart = userAt >= 0 ? userAt : last;
  // The earlier turns, in exchanges that each run through an assistant turn and the tool results it
  // asked for: dropped whole, earliest first.
  const exchanges: DatasetMessage[][] = [];
  for (let i = head; i < finalStart; i++) {
    const open = exchanges.at(-1);
    if (open === undefined || (open.at(-1)?.role === "assistant" && messages[i].role !== "tool"))
      exchanges.push([]);
    exchanges[exchanges.length - 1].push(messages[i]);
  }
  const build = (dropped: number, userCut: number, systemKeep: number): DatasetMessage[] => {
    const out: DatasetMessage[] = [];
    if (system) {
      const keep = systemKeep > 0 && isLowSurrogate(system.content, systemKeep) ? systemKeep - 1 : systemKeep;
      out.push({ ...system, content: system.content.slice(0, keep) });
    }
    out.push(...exchanges.slice(dropped).flat());
    for (let i = finalStart; i <= last; i++) {
      const m = messages[i];
      const cut = isLowSurrogate(m.content, userCut) ? userCut + 1 : userCut;
      out.push(i === userAt ? { ...m, content: m.content.slice(cut) } : m);
    }
    return out;
  };
  const fits = (candidate: DatasetMessage[]) =>
    tokenizer.encode(tokenizer.applyChatTemplate(candidate, { tools })).length <= maxLength;
  const done = (candidate: DatasetMessage[]): FittedRow => {
    const example = labelMessages(tokenizer, candidate, lossOn, tools);
    // The searches measured the same rendering; a template that labels nothing after a cut is reported, not trained.
    if (example.inputIds.length > maxLength || !hasTrainedTokens(example.labels)) {
      return { example: null, dropped: "no cut of the prompt left a well-formed example that fits" };
    }
    return { example, truncated: true };
  };

  const userText = userAt >= 0 ? messages[userAt].content : "";
  const systemText = system?.content ?? "";
  // The answer with an empty prompt is the least a kept row can be: when even that is too long, drop the row.
  const least = build(exchanges.length, userText.length, 0);
  if (!fits(least)) {
    const needs = tokenizer.encode(tokenizer.applyChatTemplate(least, { tools })).length;
    return {
      example: null,
      dropped: `the answer alone needs ${tooLong(needs, maxLength)} (full row: ${full.inputIds.length})`,
    };
  }
  const dropped = smallestFitting(0, exchanges.length, (k) => fits(build(k, 0, systemText.length)));
  if (dropped !== null) return done(build(dropped, 0, systemText.length));
  const userCut = smallestFitting(0, userText.length, (c) =>
    fits(build(exchanges.length, c, systemText.length)),
  );
  if (userCut !== null) return done(build(exchanges.length, userCut, systemText.length));
  const systemCut = smallestFitting(0, systemText.length, (c) =>
    fits(build(exchanges.length, userText.length, systemText.length - c)),
  ) as number; // `least` fits, so some cut does
  return done(build(exchanges.length, userText.length, systemText.length - systemCut));
}

/**
 * Every row of a set fitted to maxLength. Row numbers in errors and in the
 * report are 1-based, `rowNumbers[i]` for row i when given (a set split from a
 * file names the file's rows). Fails when no row is usable.
 */
export function prepareSet(
  tokenizer: Tokenizer,
  rows: DatasetRow[],
  set: string,
  options: FitOptions,
  rowNumbers?: number[],
): PreparedSet {
  const prepared: PreparedSet = { examples: [], rows: rows.length, truncated: [], dropped: [] };
  rows.forEach((row, i) => {
    const number = rowNumbers?.[i] ?? i + 1;
    let fitted: FittedRow;
    try {
      fitted = fitRow(tokenizer, row, options);
    } catch (error) {
      if (error instanceof EngineError) {
        throw new EngineError(error.code, `${set} row ${number}: ${error.message}`, error.file, number);
      }
      throw error;
    }
    if (fitted.example === null) prepared.dropped.push({ row: number, reason: fitted.dropped });
    else {
      prepared.examples.push(fitted.example);
      if (fitted.truncated) prepared.truncated.push(number);
    }
  });
  if (prepared.examples.length === 0 && rows.length > 0) {
    const first = prepared.dropped[0];
    throw new EngineError(
      "invalid_dataset",
      `${set}: no usable rows: all ${rows.length} were dropped as too long for maxLength ${options.maxLength} ` +
        `(row ${first.row}: ${first.reason}); raise maxLength or shorten the answers`,
    );
  }
  return prepared;
}

// A dataset's profile for one model's tokenizer, computed before training: row
// count, token lengths (p50/p95/max of the prompt, the answer and the whole
// row), messages per role, assistant turns per row, exact duplicate rows, and
// what follows for maxLength (rows over it, a suggested value, a histogram).
//
// Lengths are those training sees: each row rendered with the chat template and
// labelled by examples.ts's labelMessages (assistant-only, lossOn "assistant"),
// untruncated. Answer tokens are the labelled ones (each trained assistant
// message and its end-of-turn token), prompt tokens all the others.
//
// Percentiles are nearest-rank: p95 is the smallest length that at least 95% of
// rows do not exceed, always the length of a real row.
//
// The suggested maxLength is the smallest multiple of 64 that holds 95% of rows
// in full and every row's answer with the shortest prompt the template writes
// (so "keep_answers" truncation drops no row), capped at the model's context.
// dataset-profile-file.ts profiles a file on worker threads.

import { createHash } from "node:crypto";
import type { ChatRole, DatasetRow, Tokenizer } from "../types.js";
import type { DatasetMessage } from "./dataset.js";
import { IGNORE_INDEX, labelMessages, rowMessages } from "./examples.js";

export interface TokenLengthSummary {
  p50: number;
  p95: number;
  max: number;
  mean: number;
}

export interface DuplicateRow {
  /** 1-based row number (blank lines are not rows). */
  row: number;
  /** The earlier row it repeats. */
  duplicateOf: number;
}

export interface LongRow {
  row: number;
  tokens: number;
  promptTokens: number;
  answerTokens: number;
}

export interface DatasetProfile {
  rows: number;
  tokens: {
    prompt: TokenLengthSummary;
    answer: TokenLengthSummary;
    /** The whole row: prompt plus answer tokens. */
    total: TokenLengthSummary;
    /** Tokens of all rows together. */
    sum: number;
  };
  /** Rows per row length, ascending: [tokens, rows]. */
  lengths: [number, number][];
  /** Messages per role over all rows (a prompt/completion row is one user and one assistant message). */
  roles: Record<ChatRole, number>;
  /** Rows per number of assistant messages, e.g. { "1": 950, "2": 50 }. */
  turns: Record<string, number>;
  duplicates: {
    /** Rows that repeat an earlier row exactly (same roles, contents and weights). */
    rows: number;
    /** Distinct rows that occur more than once. */
    groups: number;
    /** The first DUPLICATES_LISTED of them. */
    first: DuplicateRow[];
  };
  /** The LONGEST_LISTED longest rows, longest first. */
  longest: LongRow[];
  /** Prompt tokens of an exchange whose messages are all empty: the least prompt a row can be cut to. */
  templateTokens: number;
}

export const DUPLICATES_LISTED = 10;
export const LONGEST_LISTED = 5;
/** The suggested maxLength is a multiple of this. */
export const MAX_LENGTH_STEP = 64;
/** The share of rows the suggested maxLength holds in full. */
export const SUGGESTION_PERCENTILE = 95;

/** Prompt and answer tokens of one row: [prompt, answer]. */
export function measureRow(tokenizer: Tokenizer, row: DatasetRow): [number, number] {
  const { labels } = labelMessages(tokenizer, rowMessages(row), "assistant");
  let answer = 0;
  for (let i = 0; i < labels.length; i++) if (labels[i] !== IGNORE_INDEX) answer++;
  return [labels.length - answer, answer];
}

/** Writes rows[from..to)'s [prompt, answer] pairs into `out` from index 2 * from (out holds every row). */
export function measureRows(
  tokenizer: Tokenizer,
  rows: readonly DatasetRow[],
  from: number,
  to: number,
  out: Int32Array,
  offset = 2 * from,
): void {
  for (let i = from; i < to; i++) {
    const [prompt, answer] = measureRow(tokenizer, rows[i]);
    out[offset + 2 * (i - from)] = prompt;
    out[offset + 2 * (i - from) + 1] = answer;
  }
}

/** Prompt tokens of an empty exchange (with an empty system message when `withSystem`). */
export function templateTokens(tokenizer: Tokenizer, withSystem: boolean): number {
  const exchange: DatasetMessage[] = [
    { role: "user", content: "" },
    { role: "assistant", content: "" },
  ];
  const conversations = withSystem ? [[{ role: "system", content: "" }, ...exchange], exchange] : [exchange];
  for (const messages of conversations) {
    try {
      return measureRow(tokenizer, { messages: messages as DatasetMessage[] })[0];
    } catch {
      // A template that refuses a system message (or an empty one): try without.
    }
  }
  return 0;
}

/** Nearest-rank percentile of ascending `sorted` (non-empty). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1];
}

function summary(values: Int32Array): TokenLengthSummary {
  const sorted = values.slice().sort();
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i];
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    max: sorted[sorted.length - 1],
    mean: Math.round((sum / sorted.length) * 10) / 10,
  };
}

/** What makes two rows the same training example: roles, contents and weights, in order. */
function rowKey(messages: DatasetMessage[]): string {
  const canonical = JSON.stringify(messages.map((m) => [m.role, m.content, m.weight ?? 1]));
  return createHash("sha1").update(canonical).digest("base64");
}

/**
 * The profile of `rows` from their measured lengths (`lengths[2i]` prompt and
 * `lengths[2i + 1]` answer tokens of row i, as measureRows writes them).
 */
export function summarizeProfile(
  rows: readonly DatasetRow[],
  lengths: Int32Array,
  templateTokens: number,
): DatasetProfile {
  const n = rows.length;
  const roles: Record<ChatRole, number> = { system: 0, user: 0, assistant: 0, tool: 0 };
  const turns: Record<string, number> = {};
  const seen = new Map<string, number>();
  const repeated = new Set<string>();
  const duplicates: DatasetProfile["duplicates"] = { rows: 0, groups: 0, first: [] };
  const prompt = new Int32Array(n);
  const answer = new Int32Array(n);
  const total = new Int32Array(n);
  const counts = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const messages = rowMessages(rows[i]);
    let assistant = 0;
    for (const m of messages) {
      roles[m.role]++;
      if (m.role === "assistant") assistant++;
    }
    turns[assistant] = (turns[assistant] ?? 0) + 1;
    const key = rowKey(messages);
    const first = seen.get(key);
    if (first === undefined) seen.set(key, i + 1);
    else {
      duplicates.rows++;
      repeated.add(key);
      if (duplicates.first.length < DUPLICATES_LISTED)
        duplicates.first.push({ row: i + 1, duplicateOf: first });
    }
    prompt[i] = lengths[2 * i];
    answer[i] = lengths[2 * i + 1];
    total[i] = prompt[i] + answer[i];
    counts.set(total[i], (counts.get(total[i]) ?? 0) + 1);
  }
  duplicates.groups = repeated.size;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => total[b] - total[a] || a - b);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += total[i];
  return {
    rows: n,
    tokens: { prompt: summary(prompt), answer: summary(answer), total: summary(total), sum },
    lengths: [...counts].sort((a, b) => a[0] - b[0]),
    roles,
    turns,
    duplicates,
    longest: order.slice(0, LONGEST_LISTED).map((i) => ({
      row: i + 1,
      tokens: total[i],
      promptTokens: prompt[i],
      answerTokens: answer[i],
    })),
    templateTokens,
  };
}

/** The profile of `rows` (non-empty) for `tokenizer`, on this thread. */
export function profileDataset(tokenizer: Tokenizer, rows: readonly DatasetRow[]): DatasetProfile {
  const lengths = new Int32Array(2 * rows.length);
  measureRows(tokenizer, rows, 0, rows.length, lengths);
  const withSystem = rows.some((r) => rowMessages(r).some((m) => m.role === "system"));
  return summarizeProfile(rows, lengths, templateTokens(tokenizer, withSystem));
}

// ---------------------------------------------------------------- what follows for maxLength

/** Rows longer than `maxLength` tokens: the rows training truncates or drops. */
export function rowsOverMaxLength(profile: DatasetProfile, maxLength: number): number {
  let over = 0;
  for (const [tokens, rows] of profile.lengths) if (tokens > maxLength) over += rows;
  return over;
}

export interface MaxLengthSuggestion {
  maxLength: number;
  /** Rows longer than the suggestion (cut on the prompt side under "keep_answers"). */
  rowsOver: number;
  /** The rule did not fit in the model's context, which caps the suggestion. */
  cappedAtContext: boolean;
}

/**
 * The smallest multiple of 64 that holds the p95 row in full and the longest
 * answer with the least prompt (templateTokens), at most `contextLength`.
 */
export function suggestMaxLength(profile: DatasetProfile, contextLength?: number): MaxLengthSuggestion {
  const need = Math.max(
    profile.tokens.total.p95,
    profile.tokens.answer.max + profile.templateTokens,
    MAX_LENGTH_STEP,
  );
  let maxLength = Math.ceil(need / MAX_LENGTH_STEP) * MAX_LENGTH_STEP;
  const cappedAtContext = contextLength !== undefined && maxLength > contextLength;
  if (cappedAtContext) maxLength = contextLength;
  return { maxLength, rowsOver: rowsOverMaxLength(profile, maxLength), cappedAtContext };
}

/** Rows whose length is in [from, to); `to` null: from and longer. */
export interface LengthBin {
  from: number;
  to: number | null;
  rows: number;
}

/**
 * Row lengths in about `bins` equal bins whose width is a power of two, from
 * the shortest row (or maxLength, when shorter). They reach past
 * max(maxLength, 2 × p95) only as one open-ended last bin, so a few outliers do
 * not squeeze every other row into the first bar.
 */
export function lengthHistogram(profile: DatasetProfile, maxLength?: number, bins = 24): LengthBin[] {
  const { max, p95 } = profile.tokens.total;
  const lowest = Math.min(profile.lengths[0]?.[0] ?? 0, maxLength ?? Number.POSITIVE_INFINITY);
  const reach = Math.min(max + 1, Math.max(maxLength ?? 0, 2 * p95, lowest + 1));
  let width = 1;
  while (width * bins < reach - lowest) width *= 2;
  const start = Math.floor(lowest / width) * width;
  const closed = Math.ceil((reach - start) / width);
  const out: LengthBin[] = Array.from({ length: closed }, (_, k) => ({
    from: start + k * width,
    to: start + (k + 1) * width,
    rows: 0,
  }));
  if (max + 1 > start + closed * width) out.push({ from: start + closed * width, to: null, rows: 0 });
  for (const [tokens, rows] of profile.lengths)
    out[Math.min(out.length - 1, Math.floor((tokens - start) / width))].rows += rows;
  return out;
}

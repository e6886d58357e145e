// Task metrics of the eval pass, besides eval loss (docs/api.md#task-metrics):
//
// - evalTokenAccuracy: of the eval set's trained positions (the assistant
//   tokens the loss counts), the fraction whose argmax logit is the target
//   token, over the whole set: OpenAI's "mean token accuracy". The LM head
//   counts the hits in the eval forward (lm-head.ts), so it costs no extra pass.
// - evalExactMatch: greedy generation (temperature 0, at most
//   exactMatchMaxTokens tokens) from the prompt of each row of a fixed sample
//   of eval rows, compared with the row's reference answer, both trimmed of
//   leading and trailing whitespace; the fraction that are equal.
//
// Exact match rules, all here:
// - a row's reference answer is its last trained answer: the tokens of the
//   last run of trained labels up to the first end-of-turn (EOS) token, decoded
//   without special tokens; its prompt is every token before that run, as the
//   example was fitted to maxLength (so the template and truncation are the
//   ones training used), the generation prompt included;
// - it runs when the eval set's answers are short: at least SHORT_ANSWER_SHARE
//   of the eval rows' answers have at most exactMatchMaxTokens tokens; else
//   (and with exactMatchMaxTokens or exactMatchSamples 0, or lossOn "all",
//   where no answer is set apart) evalExactMatch is null;
// - the sample is exactMatchSamples rows drawn, with the run's seed, from the
//   rows whose answer is that short, the same rows at every eval step (and
//   after a resume).
// Its cost per eval step is bounded: at most exactMatchSamples prompts
// prefilled and exactMatchSamples × exactMatchMaxTokens tokens decoded.
import { createGenerator } from "../generation/generate.js";
import { Rng } from "../rng.js";
import type { Generator, LoraAdapter, Model, TokenizedExample, Tokenizer } from "../types.js";

/** hyperparameters.exactMatchMaxTokens when not set: answers of at most this many tokens count as short. */
export const DEFAULT_EXACT_MATCH_MAX_TOKENS = 32;
/** hyperparameters.exactMatchSamples when not set. */
export const DEFAULT_EXACT_MATCH_SAMPLES = 32;

/** Exact match runs when at least this share of the eval rows' answers fit in exactMatchMaxTokens. */
export const SHORT_ANSWER_SHARE = 0.95;

/** One eval row of the exact-match sample. */
export interface ExactMatchRow {
  /** Index of the row among the eval examples. */
  index: number;
  promptIds: number[];
  /** The reference answer's text (not yet trimmed). */
  reference: string;
  /** Tokens of the reference answer, end-of-turn token excluded. */
  answerTokens: number;
}

/**
 * The last trained answer of an example: the tokens before its last run of
 * trained labels (the prompt) and the run's tokens up to its first EOS token.
 * Null when nothing precedes the run (lossOn "all").
 */
export function lastAnswer(
  example: TokenizedExample,
  eosTokenIds: readonly number[],
): { promptIds: number[]; answerIds: number[] } | null {
  const { inputIds, labels } = example;
  let end = labels.length;
  while (end > 1 && labels[end - 1] < 0) end--;
  if (end <= 1) return null;
  let start = end - 1;
  while (start > 1 && labels[start - 1] >= 0) start--;
  if (labels[start - 1] >= 0) return null;
  const eos = new Set(eosTokenIds);
  const answerIds: number[] = [];
  for (let i = start; i < end && !eos.has(inputIds[i]); i++) answerIds.push(inputIds[i]);
  return { promptIds: Array.from(inputIds.subarray(0, start)), answerIds };
}

/** Whether a generated answer matches the reference: equal after trimming whitespace at both ends. */
export function answersMatch(generated: string, reference: string): boolean {
  return generated.trim() === reference.trim();
}

export interface ExactMatchSettings {
  maxTokens: number;
  samples: number;
  seed: number;
}

/**
 * The rows exact match generates for, or null when it does not run on this
 * eval set (switched off, no separate answers, or answers too long).
 */
export function exactMatchSample(
  examples: readonly TokenizedExample[],
  tokenizer: Tokenizer,
  settings: ExactMatchSettings,
  maxContext: number,
): ExactMatchRow[] | null {
  const { maxTokens, samples, seed } = settings;
  if (maxTokens < 1 || samples < 1 || examples.length === 0) return null;
  const short: { index: number; promptIds: number[]; answerIds: number[] }[] = [];
  for (const [index, example] of examples.entries()) {
    const answer = lastAnswer(example, tokenizer.eosTokenIds);
    if (!answer) return null;
    if (answer.answerIds.length > maxTokens) continue;
    if (answer.promptIds.length + 1 >= maxContext) continue;
    short.push({ index, ...answer });
  }
  if (short.length === 0 || short.length < SHORT_ANSWER_SHARE * examples.length) return null;
  const rng = new Rng((seed ^ 0x5eed_e3a7) >>> 0);
  const order = rng.shuffle(short.map((_, i) => i));
  return order
    .slice(0, samples)
    .sort((a, b) => a - b)
    .map((i) => ({
      index: short[i].index,
      promptIds: short[i].promptIds,
      reference: tokenizer.decode(short[i].answerIds, { skipSpecialTokens: true }),
      answerTokens: short[i].answerIds.length,
    }));
}

/** Greedy generation for a fixed sample of rows with a LoRA adapter that training updates in place. */
export class ExactMatchRunner {
  private readonly generator: Generator;

  constructor(
    model: Model,
    adapter: LoraAdapter,
    private readonly rows: readonly ExactMatchRow[],
    private readonly maxTokens: number,
  ) {
    let longest = 0;
    for (const row of rows) longest = Math.max(longest, row.promptIds.length);
    this.generator = createGenerator(model.withAdapter(adapter), {
      maxContext: Math.min(model.config.maxPositionEmbeddings, longest + maxTokens),
      maxBatch: Math.max(1, Math.min(rows.length, 32)),
    });
  }

  /** The fraction of rows whose greedy answer matches; null when aborted part-way. */
  async run(signal?: AbortSignal): Promise<number | null> {
    const results = await Promise.all(
      this.rows.map((row) =>
        this.generator.complete({
          promptIds: row.promptIds,
          temperature: 0,
          maxTokens: this.maxTokens,
          signal,
        }),
      ),
    );
    if (signal?.aborted || results.some((r) => r.finishReason === "cancelled")) return null;
    let hits = 0;
    results.forEach((r, i) => {
      if (answersMatch(r.text, this.rows[i].reference)) hits++;
    });
    return hits / this.rows.length;
  }
}

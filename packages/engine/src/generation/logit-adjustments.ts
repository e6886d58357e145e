// What a request changes in its logits before each token is drawn: OpenAI's
// logit_bias, frequency_penalty and presence_penalty, with OpenAI's formula
//
//   logit[j] += bias[j] - count[j] · frequencyPenalty - (count[j] > 0 ? presencePenalty : 0)
//
// where count[j] is how often token j was generated so far in this completion
// (the prompt does not count). They apply to the raw logits, before
// temperature, top-p and a grammar's mask, so a constrained sequence still
// draws only tokens its grammar allows (constrained/constraint.ts checks the
// drawn token, whatever the logits say).
import { EngineError } from "../errors.js";

export interface LogitAdjustmentOptions {
  /** In [-2, 2]: subtracted once per earlier occurrence of the token in the completion. */
  frequencyPenalty?: number;
  /** In [-2, 2]: subtracted once from every token that occurred in the completion. */
  presencePenalty?: number;
  /** Token id (as a decimal string, JSON's object keys) → a value in [-100, 100] added to its logit. */
  logitBias?: Readonly<Record<string, number>>;
}

/** The largest |penalty| and |bias| OpenAI documents. */
const PENALTY_LIMIT = 2;
const BIAS_LIMIT = 100;
/** The most bias entries OpenAI takes in one request. */
export const MAX_LOGIT_BIAS_ENTRIES = 300;

function penalty(value: number | undefined, name: string): number {
  if (value === undefined) return 0;
  if (typeof value !== "number" || !Number.isFinite(value) || Math.abs(value) > PENALTY_LIMIT)
    throw new EngineError("invalid_argument", `${name} must be a number in [-2, 2] (got ${value})`);
  return value;
}

export class LogitAdjuster {
  /** Completion tokens so far: id → count (only tokens that occurred). */
  private readonly counts = new Map<number, number>();

  private constructor(
    private readonly frequencyPenalty: number,
    private readonly presencePenalty: number,
    private readonly biasIds: Int32Array,
    private readonly biasValues: Float32Array,
  ) {}

  /** The request's adjustments, or null when it asks for none (the common case costs nothing). */
  static of(options: LogitAdjustmentOptions, vocabSize: number): LogitAdjuster | null {
    const frequency = penalty(options.frequencyPenalty, "frequencyPenalty");
    const presence = penalty(options.presencePenalty, "presencePenalty");
    const bias = options.logitBias ?? {};
    if (typeof bias !== "object" || bias === null || Array.isArray(bias))
      throw new EngineError("invalid_argument", "logitBias must be an object of token id → bias");
    const entries = Object.entries(bias);
    if (entries.length > MAX_LOGIT_BIAS_ENTRIES)
      throw new EngineError(
        "invalid_argument",
        `logitBias holds ${entries.length} entries; at most ${MAX_LOGIT_BIAS_ENTRIES} are allowed`,
      );
    const ids = new Int32Array(entries.length);
    const values = new Float32Array(entries.length);
    entries.forEach(([key, value], i) => {
      const id = /^(0|[1-9]\d*)$/.test(key) ? Number(key) : Number.NaN;
      if (!(id < vocabSize))
        throw new EngineError(
          "invalid_argument",
          `logitBias key ${JSON.stringify(key)} is not a token id in [0, ${vocabSize})`,
        );
      if (typeof value !== "number" || !Number.isFinite(value) || Math.abs(value) > BIAS_LIMIT)
        throw new EngineError(
          "invalid_argument",
          `logitBias[${JSON.stringify(key)}] must be a number in [-100, 100] (got ${value})`,
        );
      ids[i] = id;
      values[i] = value;
    });
    if (frequency === 0 && presence === 0 && entries.length === 0) return null;
    return new LogitAdjuster(frequency, presence, ids, values);
  }

  /** Adjusts one logits row [vocab] in place: the bias, then the penalties of the tokens generated so far. */
  apply(row: Float32Array): void {
    for (let i = 0; i < this.biasIds.length; i++) row[this.biasIds[i]] += this.biasValues[i];
    if (this.frequencyPenalty === 0 && this.presencePenalty === 0) return;
    for (const [id, count] of this.counts) row[id] -= count * this.frequencyPenalty + this.presencePenalty;
  }

  /** Counts a generated token for the penalties of the tokens after it. */
  record(tokenId: number): void {
    this.counts.set(tokenId, (this.counts.get(tokenId) ?? 0) + 1);
  }
}

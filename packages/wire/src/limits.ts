// Numeric limits of the cloud API, part of the wire contract: the server
// validates with them and the SDK and Studio may check the same ranges before
// sending.

/** A numeric range the API accepts (bounds inclusive; `exclusiveMin` where the bound itself is refused). */
export interface NumericRange {
  readonly integer: boolean;
  readonly min?: number;
  readonly exclusiveMin?: number;
  readonly max: number;
}

/** The largest integer a database column holds (PostgreSQL "integer"): steps and event ids. */
export const MAX_STORED_INTEGER = 2_147_483_647;

/** Sampling and shuffling seeds: the engine's PRNG is seeded with 32 bits. */
export const SEED_RANGE: NumericRange = { integer: true, min: 0, max: 4_294_967_295 };

/**
 * A job's evalFraction: any double in (0, 0.5], held exactly by both stores
 * (double precision on PostgreSQL since migration 0010, REAL on SQLite); any
 * fraction above 0 holds out at least one row.
 */
export const EVAL_FRACTION_RANGE: NumericRange = { integer: false, exclusiveMin: 0, max: 0.5 };

/**
 * Defaults of the operator's job limits (svc server --max-job-steps, --max-batch-size).
 * Step counts (maxSteps, warmupSteps, evalSteps, saveSteps, a checkpoint's step)
 * are bounded by maxSteps; a server may raise it up to MAX_STORED_INTEGER.
 */
export const DEFAULT_JOB_LIMITS = { maxSteps: 100_000, batchSize: 256 } as const;
export type JobLimits = { maxSteps: number; batchSize: number };

/**
 * The generation parameters' ranges, by svc's names (OpenAI's are their
 * snake_case): the one chat parser of the edge's /v1/chat/completions and of
 * /v1/inference/chat (packages/server/src/inference/chat-params.ts), the
 * Responses API's (responses-request.ts), and GRPO's sampling hyperparameters below.
 */
export const SAMPLING_RANGES = {
  temperature: { integer: false, min: 0, max: 2 },
  topP: { integer: false, exclusiveMin: 0, max: 1 },
  /** max_tokens / max_completion_tokens / maxTokens: one answer's most tokens. */
  maxTokens: { integer: true, min: 1, max: 8192 },
  /** Completions sampled together. */
  n: { integer: true, min: 1, max: 16 },
  /** frequency_penalty and presence_penalty. */
  penalty: { integer: false, min: -2, max: 2 },
  /** Alternatives per token with logprobs (the engine's MAX_TOP_LOGPROBS; a server test pins the two). */
  topLogprobs: { integer: true, min: 0, max: 20 },
} as const satisfies Record<string, NumericRange>;

/** The one definition of every job hyperparameter's range, for the given limits. */
export function hyperparameterRanges(limits: JobLimits = DEFAULT_JOB_LIMITS) {
  const steps = (min: number): NumericRange => ({ integer: true, min, max: limits.maxSteps });
  return {
    lora: {
      r: { integer: true, min: 1, max: 1024 },
      alpha: { integer: false, exclusiveMin: 0, max: 65_536 },
      maxLength: { integer: true, min: 2, max: 131_072 },
    },
    maxSteps: steps(1),
    numTrainEpochs: { integer: false, exclusiveMin: 0, max: 1000 },
    learningRate: { integer: false, exclusiveMin: 0, max: 1 },
    batchSize: { integer: true, min: 1, max: limits.batchSize },
    gradientAccumulationSteps: { integer: true, min: 1, max: 1024 },
    warmupSteps: steps(0),
    weightDecay: { integer: false, min: 0, max: 1 },
    evalSteps: steps(1),
    saveSteps: steps(1),
    seed: SEED_RANGE,
    // Exact match's cost per eval is at most samples × maxTokens decoded tokens.
    exactMatchMaxTokens: { integer: true, min: 0, max: 256 },
    exactMatchSamples: { integer: true, min: 0, max: 512 },
    // method "dpo" (docs/post-training.md); the engine checks the same (preference-loss.ts)
    // beta is also GRPO's KL weight, where 0 is allowed (no reference); DPO's must be > 0 (dpoBeta)
    beta: { integer: false, min: 0, max: 100 },
    dpoBeta: { integer: false, exclusiveMin: 0, max: 100 },
    labelSmoothing: { integer: false, min: 0, max: 0.5 },
    gamma: { integer: false, min: 0, max: 100 },
    // method "grpo" (docs/post-training.md#grpo); the engine checks the same (grpo-train.ts resolveGrpo)
    numGenerations: { integer: true, min: 2, max: 64 },
    temperature: SAMPLING_RANGES.temperature,
    topP: SAMPLING_RANGES.topP,
    maxCompletionTokens: { integer: true, min: 1, max: 4096 },
    epsilon: { integer: false, min: 0, max: 0.9 },
    // completions per eval prompt at each GRPO eval (grpo-eval.ts)
    evalGenerations: { integer: true, min: 1, max: 64 },
    // a GRPO job's graders[i].weight (negative: a penalty)
    graderWeight: { integer: false, min: -100, max: 100 },
  } satisfies Record<string, NumericRange | Record<string, NumericRange>>;
}

/** How text limits count characters ("1–80 characters"): Unicode code points, so an emoji is one. */
export function textLength(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

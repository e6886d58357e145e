// One generation request inside the Generator: validated and tokenized
// (prepareSequence), then its decode state and its consumer side (Sequence).
// A request's grammar is compiled a piece at a time by the Generator's
// scheduler (constrained/steps.ts); the sequence starts once it is ready.

import { loraLayersFor } from "../adapters/lora-layers.js";
import { compiledGrammarWork } from "../constrained/compiled.js";
import { GrammarConstraint, type RowHolder, type Turn } from "../constrained/constraint.js";
import type { OutputGrammar } from "../constrained/grammar.js";
import { SharedWork, type Steps, waitFor } from "../constrained/steps.js";
import { vocabularyWork } from "../constrained/vocabulary.js";
import { EngineError } from "../errors.js";
import type { ModelConfig } from "../families/index.js";
import type { LoraLayers } from "../graph/weights.js";
import type { Rng } from "../rng.js";
import type {
  FinishReason,
  GenerationChunk,
  GenerationRequest,
  GenerationResult,
  LoraAdapter,
  Tokenizer,
} from "../types.js";
import type { KvCache } from "./decode.js";
import { LogitAdjuster } from "./logit-adjustments.js";
import { type SamplingParams, samplingRng } from "./sampling.js";
import { IncrementalDetokenizer, StopStringFilter } from "./stop-strings.js";
import { MAX_TOP_LOGPROBS } from "./token-logprobs.js";

/** What a request is checked and tokenized against. */
export interface ServedModel {
  config: ModelConfig;
  tokenizer: Tokenizer;
  maxContext: number;
  defaultAdapter: LoraAdapter | null;
}

const DEFAULT_MAX_TOKENS = 256;

/** A request's grammar, from the tokenizer's vocabulary trie (built once) to its compilation (shared by equal grammars). */
function* grammarSetup(grammar: OutputGrammar, tokenizer: Tokenizer): Steps<GrammarConstraint> {
  const vocabulary = yield* waitFor(vocabularyWork(tokenizer));
  const compiled = yield* waitFor(compiledGrammarWork(grammar, vocabulary));
  return new GrammarConstraint(compiled, vocabulary, new Set(tokenizer.eosTokenIds));
}

/** A grammar turn (draw a token, move past it) that outlived its decode step, with the row it draws from. */
export interface Parked {
  /** `allowed`: the tokens the draw was restricted to, when the request asks for logprobs. */
  turn: Steps<Turn & { allowed?: readonly number[] }>;
  holder: RowHolder;
}

/** A request from submission to its result. */
export class Sequence {
  readonly promptIds: Int32Array;
  readonly maxTokens: number; // after clamping to the context
  readonly eos: Set<number>;
  cache: KvCache | null = null;
  prefilled = 0; // prompt tokens already in the cache
  readonly lastToken = new Int32Array(1); // the token fed at the next decode step
  completionTokens = 0;
  text = "";
  // Consumer side: chunks not yet taken, the result, a waiting consumer.
  readonly chunks: GenerationChunk[] = [];
  chunkRead = 0;
  result: GenerationResult | null = null;
  error: unknown = null;
  detached = false;
  /** The request's grammar (constrained/), or null; set once `setup` is done. */
  grammar: GrammarConstraint | null = null;
  /** A grammar turn still running: the sequence sits out decode steps until it is done. */
  parked: Parked | null = null;
  private wake: (() => void) | null = null;

  constructor(
    readonly sampling: SamplingParams,
    readonly signal: AbortSignal | undefined,
    promptIds: Int32Array,
    maxTokens: number,
    readonly lora: LoraLayers | null,
    readonly rng: Rng,
    readonly detokenizer: IncrementalDetokenizer,
    readonly stops: StopStringFilter,
    eos: readonly number[],
    /** The grammar's setup until it is done (then `grammar`), or null. */
    private setup: SharedWork<GrammarConstraint> | null,
    /** logit_bias and the penalties, or null when the request asks for neither. */
    readonly adjuster: LogitAdjuster | null,
    /** How many alternatives each token's logprob comes with; null: no logprobs. */
    readonly logprobs: number | null,
  ) {
    this.promptIds = promptIds;
    this.maxTokens = maxTokens;
    this.eos = new Set(eos);
  }

  get done(): boolean {
    return this.result !== null || this.error !== null;
  }

  /** Whether its grammar (if any) is compiled: it may start. */
  get ready(): boolean {
    return this.setup === null;
  }

  /**
   * Compiles the grammar until `deadline` (performance.now()); returns whether
   * it is done. A grammar that fails to compile fails the request, before anything is generated.
   */
  compileGrammar(deadline: number): boolean {
    const setup = this.setup;
    if (setup === null) return true;
    if (!setup.runUntil(deadline)) return false;
    try {
      this.grammar = setup.result;
    } catch (error) {
      this.fail(error);
    }
    this.setup = null;
    return true;
  }

  push(chunk: GenerationChunk): void {
    this.text += chunk.text;
    this.chunks.push(chunk);
    this.notify();
  }

  finish(reason: FinishReason): void {
    this.cache = null;
    this.result = {
      text: this.text,
      promptTokens: this.promptIds.length,
      completionTokens: this.completionTokens,
      finishReason: reason,
    };
    this.notify();
  }

  fail(error: unknown): void {
    this.cache = null;
    this.error = error;
    this.notify();
  }

  /** Resolves when there is something new for the consumer. */
  changed(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

/** Validates a request and turns it into a Sequence (tokenized prompt, adapter, sampler state). */
export function prepareSequence(request: GenerationRequest, served: ServedModel): Sequence {
  const { tokenizer, config, maxContext, defaultAdapter } = served;
  const temperature = request.temperature ?? 1;
  if (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0) {
    throw new EngineError(
      "invalid_argument",
      `temperature must be a finite number >= 0 (got ${temperature})`,
    );
  }
  const topP = request.topP ?? 1;
  if (typeof topP !== "number" || !(topP > 0 && topP <= 1)) {
    throw new EngineError("invalid_argument", `topP must be a number in (0, 1] (got ${topP})`);
  }
  const maxTokens = request.maxTokens ?? DEFAULT_MAX_TOKENS;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new EngineError("invalid_argument", `maxTokens must be an integer >= 1 (got ${maxTokens})`);
  }
  const stop = request.stop ?? [];
  if (!Array.isArray(stop) || stop.some((s) => typeof s !== "string" || s.length === 0)) {
    throw new EngineError("invalid_argument", "stop must be an array of non-empty strings");
  }
  if (request.seed !== undefined && !Number.isSafeInteger(request.seed)) {
    throw new EngineError("invalid_argument", `seed must be an integer (got ${request.seed})`);
  }
  const logprobs = request.logprobs ?? null;
  if (logprobs !== null && !(Number.isInteger(logprobs) && logprobs >= 0 && logprobs <= MAX_TOP_LOGPROBS)) {
    throw new EngineError(
      "invalid_argument",
      `logprobs must be an integer in [0, ${MAX_TOP_LOGPROBS}] (got ${logprobs})`,
    );
  }
  const adjuster = LogitAdjuster.of(request, config.vocabSize);

  let promptIds: number[];
  if (request.messages !== undefined && request.promptIds !== undefined) {
    throw new EngineError("invalid_argument", "give either messages or promptIds, not both");
  } else if (request.messages !== undefined) {
    if (!Array.isArray(request.messages) || request.messages.length === 0) {
      throw new EngineError("invalid_argument", "messages must be a non-empty array");
    }
    request.messages.forEach((m, i) => {
      if (typeof m?.role !== "string" || typeof m?.content !== "string") {
        throw new EngineError("invalid_argument", `messages[${i}] must have a string role and content`);
      }
    });
    promptIds = tokenizer.encode(
      tokenizer.applyChatTemplate(request.messages, { addGenerationPrompt: true }),
    );
  } else if (request.promptIds !== undefined) {
    if (!Array.isArray(request.promptIds))
      throw new EngineError("invalid_argument", "promptIds must be an array");
    request.promptIds.forEach((id, i) => {
      if (!Number.isInteger(id) || id < 0 || id >= config.vocabSize) {
        throw new EngineError(
          "invalid_argument",
          `promptIds[${i}] = ${id} is not a token id in [0, ${config.vocabSize})`,
        );
      }
    });
    promptIds = request.promptIds;
  } else {
    throw new EngineError("invalid_argument", "a request needs messages or promptIds");
  }
  if (promptIds.length === 0) throw new EngineError("invalid_argument", "the prompt has no tokens");
  if (promptIds.length >= maxContext) {
    throw new EngineError(
      "context_length_exceeded",
      `the prompt has ${promptIds.length} tokens; the context holds ${maxContext} (prompt plus at least one generated token)`,
    );
  }
  if (request.maxTokensPolicy === "refuse" && promptIds.length + maxTokens > maxContext) {
    throw new EngineError(
      "context_length_exceeded",
      `the context holds ${maxContext} tokens, but ${promptIds.length + maxTokens} were requested (${promptIds.length} in the messages, ${maxTokens} in the completion); shorten the messages or the completion`,
    );
  }

  const setup =
    request.grammar === undefined ? null : new SharedWork(grammarSetup(request.grammar, tokenizer));

  const adapter = request.adapter === undefined ? defaultAdapter : request.adapter;
  const lora = adapter ? loraLayersFor(adapter, config) : null;
  return new Sequence(
    { temperature, topP },
    request.signal,
    Int32Array.from(promptIds),
    Math.min(maxTokens, maxContext - promptIds.length),
    lora,
    samplingRng(request.seed),
    new IncrementalDetokenizer(tokenizer),
    new StopStringFilter(stop),
    tokenizer.eosTokenIds,
    setup,
    adjuster,
    logprobs,
  );
}

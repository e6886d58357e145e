// The Generator: streams completions for many concurrent requests over one set
// of base weights (continuous batching).
//
// A scheduler loop runs while there is work. Each iteration it admits queued
// requests (up to maxBatch active), runs ONE decode step for all active
// sequences (each decoding sequence feeds its last token; a sequence still
// prefilling feeds a chunk of its prompt, within a per-step token budget),
// samples a token for every sequence whose logits came back, and then yields
// to the event loop (setImmediate) so servers stay responsive. Requests join
// at the next step and leave as soon as they finish; their KV caches go with them.
import { compiledGrammarFor, GrammarConstraint } from "./constrained/constraint.js";
import { vocabularyOf } from "./constrained/vocabulary.js";
import { BatchDecoder, createKvCache, type DecodeEntry, type KvCache } from "./decode.js";
import { EngineError } from "./errors.js";
import type { ModelConfig } from "./families/index.js";
import { loraLayersFor } from "./lora-layers.js";
import { isWeightFormat, WEIGHT_FORMATS, type WeightFormat } from "./quant/formats.js";
import { type ServingModel, servingWeights } from "./quant/serving.js";
import type { Rng } from "./rng.js";
import { type SamplingParams, samplingRng, TokenSampler } from "./sampling.js";
import { IncrementalDetokenizer, StopStringFilter } from "./stop-strings.js";
import type {
  FinishReason,
  GenerationChunk,
  GenerationRequest,
  GenerationResult,
  Generator,
  LoraAdapter,
  Model,
  Tokenizer,
} from "./types.js";
import type { LoraLayers, ServingWeights } from "./weights.js";

export interface GeneratorOptions {
  /** Most sequences decoded together in one step; more requests wait in a queue (default 16). */
  maxBatch?: number;
  /** Most positions (prompt + completion) of one sequence (default: the model's max_position_embeddings). */
  maxContext?: number;
  /** Most tokens run in one step; long prompts are prefilled in chunks of this size (default 256). */
  maxStepTokens?: number;
  /** The format the base weights are served in (default "fp32"; quant/formats.ts); adapters stay fp32. */
  weightFormat?: WeightFormat;
  /** The base weights already converted (quant/serving.ts servingWeightsAsync), instead of weightFormat. */
  servingWeights?: ServingWeights;
}

const DEFAULT_MAX_TOKENS = 256;

/** A request from submission to its result. */
class Sequence {
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
    /** The request's grammar (constrained/), or null. */
    readonly grammar: GrammarConstraint | null,
  ) {
    this.promptIds = promptIds;
    this.maxTokens = maxTokens;
    this.eos = new Set(eos);
  }

  get done(): boolean {
    return this.result !== null || this.error !== null;
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

function nextTick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

class BatchGenerator implements Generator {
  // The model's parts a generation reads; the model object itself is not kept,
  // so fp32 weights that were converted for serving can be collected.
  private readonly config: ModelConfig;
  private readonly tokenizer: Tokenizer;
  private readonly defaultAdapter: LoraAdapter | null;
  private readonly decoder: BatchDecoder;
  private readonly sampler: TokenSampler;
  private readonly maxBatch: number;
  readonly maxContext: number;
  private readonly maxStepTokens: number;
  private readonly queue: Sequence[] = [];
  private readonly active: Sequence[] = [];
  private running = false;

  constructor(model: Model | ServingModel, options: GeneratorOptions) {
    const { config } = model;
    this.config = config;
    this.tokenizer = model.tokenizer;
    this.defaultAdapter = "adapter" in model ? model.adapter : null;
    this.maxBatch = positiveInteger(options.maxBatch ?? 16, "maxBatch");
    this.maxContext = positiveInteger(options.maxContext ?? config.maxPositionEmbeddings, "maxContext");
    this.maxStepTokens = Math.max(
      this.maxBatch,
      positiveInteger(options.maxStepTokens ?? 256, "maxStepTokens"),
    );
    const format = options.weightFormat ?? "fp32";
    if (!isWeightFormat(format)) {
      throw new EngineError(
        "invalid_argument",
        `weightFormat must be one of ${WEIGHT_FORMATS.join(", ")} (got ${format})`,
      );
    }
    if (options.servingWeights && options.weightFormat !== undefined) {
      throw new EngineError("invalid_argument", "give weightFormat or servingWeights, not both");
    }
    let weights: ServingWeights;
    if (options.servingWeights) weights = options.servingWeights;
    else if ("weightFormat" in model) {
      if (options.weightFormat !== undefined && options.weightFormat !== model.weightFormat) {
        throw new EngineError(
          "invalid_argument",
          `the model was loaded in ${model.weightFormat} (loadServingModel) and cannot be served in ${options.weightFormat}; load it again in that format`,
        );
      }
      weights = model.weights;
    } else weights = servingWeights(model.weights, config, format);
    this.decoder = new BatchDecoder(weights, config, this.maxContext);
    this.sampler = new TokenSampler(config.vocabSize);
  }

  generate(request: GenerationRequest): AsyncGenerator<GenerationChunk, GenerationResult> {
    const sequence = this.prepare(request); // bad input throws here, before anything runs
    return this.stream(sequence);
  }

  async complete(request: GenerationRequest): Promise<GenerationResult> {
    const iterator = this.generate(request);
    for (;;) {
      const next = await iterator.next();
      if (next.done) return next.value;
    }
  }

  private async *stream(sequence: Sequence): AsyncGenerator<GenerationChunk, GenerationResult> {
    this.submit(sequence);
    try {
      for (;;) {
        if (sequence.chunkRead < sequence.chunks.length) {
          const chunk = sequence.chunks[sequence.chunkRead];
          sequence.chunks[sequence.chunkRead++] = undefined as unknown as GenerationChunk; // let it be collected
          yield chunk;
          continue;
        }
        if (sequence.error !== null) throw sequence.error;
        if (sequence.result) return sequence.result;
        await sequence.changed();
      }
    } finally {
      // The consumer stopped early (break / return / throw): drop the sequence at the next step.
      if (!sequence.done) sequence.detached = true;
    }
  }

  /** Validates a request and turns it into a Sequence (tokenized prompt, adapter, sampler state). */
  private prepare(request: GenerationRequest): Sequence {
    const { tokenizer, config } = this;
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
    if (promptIds.length >= this.maxContext) {
      throw new EngineError(
        "context_length_exceeded",
        `the prompt has ${promptIds.length} tokens; the context holds ${this.maxContext} (prompt plus at least one generated token)`,
      );
    }
    if (request.maxTokensPolicy === "refuse" && promptIds.length + maxTokens > this.maxContext) {
      throw new EngineError(
        "context_length_exceeded",
        `the context holds ${this.maxContext} tokens, but ${promptIds.length + maxTokens} were requested (${promptIds.length} in the messages, ${maxTokens} in the completion); shorten the messages or the completion`,
      );
    }

    let grammar: GrammarConstraint | null = null;
    if (request.grammar !== undefined) {
      const vocabulary = vocabularyOf(tokenizer);
      grammar = new GrammarConstraint(
        compiledGrammarFor(request.grammar, vocabulary),
        vocabulary,
        new Set(tokenizer.eosTokenIds),
      );
    }

    const adapter = request.adapter === undefined ? this.defaultAdapter : request.adapter;
    const lora = adapter ? loraLayersFor(adapter, config) : null;
    return new Sequence(
      { temperature, topP },
      request.signal,
      Int32Array.from(promptIds),
      Math.min(maxTokens, this.maxContext - promptIds.length),
      lora,
      samplingRng(request.seed),
      new IncrementalDetokenizer(tokenizer),
      new StopStringFilter(stop),
      tokenizer.eosTokenIds,
      grammar,
    );
  }

  private submit(sequence: Sequence): void {
    this.queue.push(sequence);
    if (!this.running) {
      this.running = true;
      void this.run();
    }
  }

  private async run(): Promise<void> {
    try {
      while (this.queue.length > 0 || this.active.length > 0) {
        this.dropCancelled();
        while (this.active.length < this.maxBatch && this.queue.length > 0) this.admit(this.queue.shift()!);
        if (this.active.length > 0) {
          try {
            this.step();
          } catch (error) {
            for (const sequence of this.active) sequence.fail(error);
            this.active.length = 0;
          }
        }
        await nextTick();
      }
    } finally {
      this.running = false;
    }
  }

  /** Finishes aborted requests ("cancelled") and forgets detached ones, queued or active. */
  private dropCancelled(): void {
    for (const list of [this.queue, this.active]) {
      let kept = 0;
      for (const sequence of list) {
        if (sequence.detached) {
          sequence.finish("cancelled");
        } else if (sequence.signal?.aborted) {
          sequence.finish("cancelled");
        } else {
          list[kept++] = sequence;
        }
      }
      list.length = kept;
    }
  }

  private admit(sequence: Sequence): void {
    sequence.cache = createKvCache(this.config, sequence.promptIds.length + sequence.maxTokens);
    this.active.push(sequence);
  }

  /** One decode step over every active sequence. */
  private step(): void {
    const entries: DecodeEntry[] = [];
    const sampled: Sequence[] = [];
    let budget = this.maxStepTokens;
    // Decoding sequences first (one token each), then prompt chunks in arrival order.
    for (const sequence of this.active) {
      if (sequence.prefilled < sequence.promptIds.length) continue;
      entries.push({
        cache: sequence.cache!,
        tokenIds: sequence.lastToken,
        lora: sequence.lora,
        wantLogits: true,
      });
      sampled.push(sequence);
      budget--;
    }
    for (const sequence of this.active) {
      const remaining = sequence.promptIds.length - sequence.prefilled;
      if (remaining === 0 || budget === 0) continue;
      const n = Math.min(remaining, budget);
      const done = n === remaining;
      entries.push({
        cache: sequence.cache!,
        tokenIds: sequence.promptIds.subarray(sequence.prefilled, sequence.prefilled + n),
        lora: sequence.lora,
        wantLogits: done,
      });
      if (done) sampled.push(sequence);
      sequence.prefilled += n;
      budget -= n;
    }

    const logits = this.decoder.step(entries);
    const vocab = this.config.vocabSize;
    sampled.forEach((sequence, j) => {
      const row = logits.subarray(j * vocab, (j + 1) * vocab);
      if (!sequence.grammar) {
        this.accept(sequence, this.sampler.sample(row, sequence.sampling, sequence.rng));
        return;
      }
      try {
        const left = sequence.maxTokens - sequence.completionTokens;
        const tokenId = sequence.grammar.sample(row, this.sampler, sequence.sampling, sequence.rng, left);
        this.accept(sequence, tokenId);
      } catch (error) {
        sequence.fail(error); // this request only; the others in the step go on
      }
    });

    let kept = 0;
    for (const sequence of this.active) if (!sequence.done) this.active[kept++] = sequence;
    this.active.length = kept;
  }

  /**
   * Records a sampled token: streams its text, and finishes the request on eos,
   * a stop string, a grammar that is complete with nothing to follow, or the length limit.
   */
  private accept(sequence: Sequence, tokenId: number): void {
    sequence.completionTokens++;
    const grammarDone = sequence.grammar?.accept(tokenId) ?? false;
    let finish: FinishReason | null = null;
    let out: { text: string; stopped: boolean };
    if (sequence.eos.has(tokenId)) {
      out = sequence.stops.push(sequence.detokenizer.flush());
      finish = "stop";
    } else {
      out = sequence.stops.push(sequence.detokenizer.push(tokenId));
      if (out.stopped) finish = "stop";
      else if (grammarDone || sequence.completionTokens >= sequence.maxTokens) {
        const tail = sequence.stops.push(sequence.detokenizer.flush());
        out = { text: out.text + tail.text, stopped: tail.stopped };
        finish = tail.stopped || grammarDone ? "stop" : "length";
      }
    }
    let text = out.text;
    if (finish && !out.stopped) text += sequence.stops.flush();
    sequence.push({ text, tokenId });
    if (finish) sequence.finish(finish);
    else sequence.lastToken[0] = tokenId;
  }
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new EngineError("invalid_argument", `${name} must be a positive integer (got ${value})`);
  }
  return value;
}

/**
 * A Generator over the model's base weights (a ServingModel's: already in its
 * format); requests may each bring their own adapter.
 */
export function createGenerator(model: Model | ServingModel, options: GeneratorOptions = {}): Generator {
  return new BatchGenerator(model, options);
}

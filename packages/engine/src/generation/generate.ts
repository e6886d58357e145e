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
//
// Grammar work (compiling a request's grammar; a constrained sequence's turn,
// which may walk the vocabulary for a state's allowed tokens) runs in slices
// of at most GRAMMAR_SLICE_MS per iteration: a request joins once its grammar
// is compiled, and a sequence whose turn outlives the step's slice sits out
// the decode steps until it is done, so a large schema never holds up the
// other generations of the process.

import type { GrammarConstraint, RowHolder, Turn } from "../constrained/constraint.js";
import type { Steps } from "../constrained/steps.js";
import { EngineError } from "../errors.js";
import type { ServingWeights } from "../graph/weights.js";
import { type ServingModel, servingWeights } from "../loading/serving-weights.js";
import { isWeightFormat, WEIGHT_FORMATS, type WeightFormat } from "../quant/formats.js";
import type { Rng } from "../rng.js";
import type {
  FinishReason,
  GenerationChunk,
  GenerationRequest,
  GenerationResult,
  Generator,
  Model,
} from "../types.js";
import { BatchDecoder, createKvCache, type DecodeEntry } from "./decode.js";
import { prepareSequence, type Sequence, type ServedModel } from "./generation-sequence.js";
import { type SamplingParams, TokenSampler } from "./sampling.js";
import { LogprobReader, type TokenLogprob } from "./token-logprobs.js";

export interface GeneratorOptions {
  /** Most sequences decoded together in one step; more requests wait in a queue (default 16). */
  maxBatch?: number;
  /** Most positions (prompt + completion) of one sequence (default: the model's max_position_embeddings). */
  maxContext?: number;
  /** Most tokens run in one step; long prompts are prefilled in chunks of this size (default 256). */
  maxStepTokens?: number;
  /** The format the base weights are served in (default "fp32"; quant/formats.ts); adapters stay fp32. */
  weightFormat?: WeightFormat;
  /** The base weights already converted (loading/serving-weights.ts servingWeightsAsync), instead of weightFormat. */
  servingWeights?: ServingWeights;
}

/** Most grammar work one scheduler iteration does (milliseconds). */
const GRAMMAR_SLICE_MS = 4;

/**
 * A grammar turn that also returns the tokens its draw was restricted to,
 * read before the turn moves the grammar on (for the token's logprobs).
 */
function* turnReadingAllowed(
  grammar: GrammarConstraint,
  holder: RowHolder,
  sampler: TokenSampler,
  params: SamplingParams,
  rng: Rng,
  left: number,
): Steps<Turn & { allowed?: readonly number[] }> {
  const allowed = yield* grammar.allowedIds(left);
  const turn = yield* grammar.turn(holder, sampler, params, rng, left);
  return { ...turn, allowed };
}

function nextTick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

class BatchGenerator implements Generator {
  // The model's parts a generation reads; the model object itself is not kept,
  // so fp32 weights that were converted for serving can be collected.
  private readonly served: ServedModel;
  get maxContext(): number {
    return this.served.maxContext;
  }
  private readonly decoder: BatchDecoder;
  private readonly sampler: TokenSampler;
  private readonly logprobReader: LogprobReader;
  private readonly maxBatch: number;
  private readonly maxStepTokens: number;
  private readonly queue: Sequence[] = [];
  private readonly active: Sequence[] = [];
  private running = false;

  constructor(model: Model | ServingModel, options: GeneratorOptions) {
    const { config } = model;
    this.maxBatch = positiveInteger(options.maxBatch ?? 16, "maxBatch");
    this.served = {
      config,
      tokenizer: model.tokenizer,
      maxContext: positiveInteger(options.maxContext ?? config.maxPositionEmbeddings, "maxContext"),
      defaultAdapter: "adapter" in model ? model.adapter : null,
    };
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
    this.decoder = new BatchDecoder(weights, config, this.served.maxContext);
    this.sampler = new TokenSampler(config.vocabSize);
    this.logprobReader = new LogprobReader(model.tokenizer);
  }

  generate(request: GenerationRequest): AsyncGenerator<GenerationChunk, GenerationResult> {
    // bad input throws here, before anything runs; a grammar that does not compile fails the first next()
    const sequence = prepareSequence(request, this.served);
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
        this.admitReady();
        // one slice of grammar work per iteration, the step's turns first
        let deadline = performance.now() + GRAMMAR_SLICE_MS;
        if (this.active.some((sequence) => sequence.parked === null)) {
          try {
            deadline = this.step();
          } catch (error) {
            for (const sequence of this.active) sequence.fail(error);
            this.active.length = 0;
          }
        }
        this.grammarWork(deadline);
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

  /** Moves queued sequences whose grammar is ready into the batch, in arrival order, while there is room. */
  private admitReady(): void {
    let kept = 0;
    for (const sequence of this.queue) {
      if (sequence.done) continue; // its grammar failed to compile
      if (sequence.ready && this.active.length < this.maxBatch) {
        sequence.cache = createKvCache(this.served.config, sequence.promptIds.length + sequence.maxTokens);
        this.active.push(sequence);
      } else this.queue[kept++] = sequence;
    }
    this.queue.length = kept;
  }

  /**
   * Grammar work until `deadline`: first the turns of parked sequences, then
   * the grammars of queued requests, in arrival order.
   */
  private grammarWork(deadline: number): void {
    for (const sequence of this.active) {
      if (sequence.parked !== null && !this.continueTurn(sequence, deadline)) break;
    }
    this.dropDone(); // finished by the token drawn
    for (const sequence of this.queue) {
      if (performance.now() >= deadline) return;
      if (!sequence.compileGrammar(deadline)) return;
    }
  }

  /** Runs a sequence's grammar turn until `deadline` (one piece at least); returns whether it is done. */
  private continueTurn(sequence: Sequence, deadline: number): boolean {
    const parked = sequence.parked!;
    try {
      for (;;) {
        const next = parked.turn.next();
        if (next.done) {
          sequence.parked = null;
          const { tokenId, final, allowed } = next.value;
          this.accept(
            sequence,
            tokenId,
            final,
            this.logprobOf(sequence, parked.holder.row, allowed, tokenId),
          );
          return true;
        }
        if (performance.now() >= deadline) return false;
      }
    } catch (error) {
      sequence.parked = null;
      sequence.fail(error); // this request only; the others go on
      return true;
    }
  }

  private dropDone(): void {
    let kept = 0;
    for (const sequence of this.active) if (!sequence.done) this.active[kept++] = sequence;
    this.active.length = kept;
  }

  /** One decode step over every active sequence; returns the deadline of the grammar slice it started. */
  private step(): number {
    const entries: DecodeEntry[] = [];
    const sampled: Sequence[] = [];
    let budget = this.maxStepTokens;
    // Decoding sequences first (one token each), then prompt chunks in arrival order.
    for (const sequence of this.active) {
      if (sequence.prefilled < sequence.promptIds.length || sequence.parked !== null) continue;
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
    const vocab = this.served.config.vocabSize;
    const deadline = performance.now() + GRAMMAR_SLICE_MS;
    sampled.forEach((sequence, j) => {
      const row = logits.subarray(j * vocab, (j + 1) * vocab);
      // logit_bias and the penalties come before the draw (and so before a grammar's check of it)
      sequence.adjuster?.apply(row);
      if (!sequence.grammar) {
        const tokenId = this.sampler.sample(row, sequence.sampling, sequence.rng);
        this.accept(sequence, tokenId, false, this.logprobOf(sequence, row, undefined, tokenId));
        return;
      }
      const left = sequence.maxTokens - sequence.completionTokens;
      const holder = { row };
      const { grammar, sampling, rng } = sequence;
      const turn =
        sequence.logprobs === null
          ? grammar.turn(holder, this.sampler, sampling, rng, left)
          : turnReadingAllowed(grammar, holder, this.sampler, sampling, rng, left);
      sequence.parked = { turn, holder };
      // a turn left for grammarWork keeps its row: the decoder reuses its buffer
      if (!this.continueTurn(sequence, deadline)) holder.row = row.slice();
    });
    this.dropDone();
    return deadline;
  }

  /**
   * Records a sampled token: streams its text, and finishes the request on eos,
   * a stop string, a grammar that is complete with nothing to follow (`grammarDone`), or the length limit.
   */
  private accept(sequence: Sequence, tokenId: number, grammarDone: boolean, logprob?: TokenLogprob): void {
    sequence.completionTokens++;
    sequence.adjuster?.record(tokenId);
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
    sequence.push(logprob === undefined ? { text, tokenId } : { text, tokenId, logprob });
    if (finish) sequence.finish(finish);
    else sequence.lastToken[0] = tokenId;
  }

  /** With logprobs: token `tokenId`'s, read from the row it was drawn from (among `allowed` under a grammar). */
  private logprobOf(
    sequence: Sequence,
    row: Float32Array,
    allowed: readonly number[] | undefined,
    tokenId: number,
  ): TokenLogprob | undefined {
    if (sequence.logprobs === null || sequence.eos.has(tokenId)) return undefined;
    return this.logprobReader.read(
      row,
      sequence.sampling.temperature,
      allowed ?? null,
      tokenId,
      sequence.logprobs,
    );
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

// One GRPO step's two halves: sampling a group of completions per prompt with
// the engine's batched generation (under the adapter as it stands, so the
// policy that samples is the one that is trained), and the update pass that
// pushes grpoLoss's per-token weights through the cross-entropy backward.
//
// A completion is trained as one sequence: prompt tokens (no target) then the
// sampled tokens (each a target), so row t of the batch predicts sampled token
// t and its cross-entropy is −log πθ of that token. One forward with gradient
// scale 1 leaves d CE(row)/d xf in the graph; d loss/d CE(row) =
// −d loss/d logπθ(token), so each row is scaled by minus grpoLoss's gradient
// (ModelGraph.weightOutputGrad) and the usual backward runs, as DPO does.
//
// The old policy is the current one at sampling time (one update per batch of
// generations): the ratio is 1 but its gradient is not. The reference (β > 0)
// is the same graph with the adapter off (no second copy of the weights), or
// with the run's start adapter, frozen, when it started from one.

import type { OutputGrammar } from "../constrained/grammar.js";
import { makeBatch } from "../data/batching.js";
import { EngineError } from "../errors.js";
import type { ModelGraph } from "../graph/model.js";
import type { LoraLayers } from "../graph/weights.js";
import type {
  ChatMessage,
  Generator,
  LoraAdapter,
  TokenizedExample,
  Tokenizer,
  ToolDefinition,
} from "../types.js";
import { type CompletionLogProbs, type GrpoSettings, grpoLoss } from "./grpo-objective.js";

/** A GRPO dataset row: a prompt, plus any fields the rewards read (a reference answer, ...). */
export interface GrpoRow {
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  response_format?:
    | { type: "text" }
    | { type: "json_object" }
    | { type: "json_schema"; json_schema: { schema?: unknown } };
  [field: string]: unknown;
}

/** A row's prompt, tokenized once (the chat template with a generation prompt, its tools rendered). */
export interface GrpoPrompt {
  promptIds: number[];
  grammar?: OutputGrammar;
}

export interface SampledCompletion {
  /** Index of its row in the train set. */
  row: number;
  text: string;
  tokenIds: number[];
  finishReason: string;
}

/** The grammar a row's response_format asks for (as the chat API reads it); undefined for text. */
function grammarOf(row: GrpoRow, where: string): OutputGrammar | undefined {
  const format = row.response_format;
  if (format === undefined || format.type === "text") return undefined;
  if (format.type === "json_object") return { kind: "json", schema: null };
  if (format.type === "json_schema") {
    const schema = format.json_schema?.schema;
    return { kind: "json", schema: (schema ?? null) as Record<string, unknown> | null };
  }
  throw new EngineError(
    "invalid_dataset",
    `${where}: response_format.type must be text, json_object or json_schema`,
  );
}

/**
 * Every row's prompt tokenized; a row without messages, or whose prompt leaves
 * no room for a completion within maxLength (prompt + completion), is refused by number.
 */
export function preparePrompts(
  tokenizer: Tokenizer,
  rows: GrpoRow[],
  set: string,
  rowNumbers?: number[],
  maxLength = Number.POSITIVE_INFINITY,
): GrpoPrompt[] {
  return rows.map((row, i) => {
    const where = `${set} row ${rowNumbers?.[i] ?? i + 1}`;
    if (!Array.isArray(row?.messages) || row.messages.length === 0)
      throw new EngineError(
        "invalid_dataset",
        `${where}: messages must be a non-empty array of chat messages`,
      );
    const text = tokenizer.applyChatTemplate(row.messages, { addGenerationPrompt: true, tools: row.tools });
    const promptIds = tokenizer.encode(text);
    if (promptIds.length === 0)
      throw new EngineError("invalid_dataset", `${where}: the prompt has no tokens`);
    if (promptIds.length >= maxLength)
      throw new EngineError(
        "invalid_dataset",
        `${where}: the prompt has ${promptIds.length} tokens, and maxLength ${maxLength} (prompt plus completion) leaves no room for a completion; raise maxLength or shorten the prompt`,
      );
    const grammar = grammarOf(row, where);
    return grammar ? { promptIds, grammar } : { promptIds };
  });
}

export interface SamplingSettings {
  numGenerations: number;
  temperature: number;
  topP: number;
  maxCompletionTokens: number;
  /** Most tokens of prompt plus completion (hyperparameters.maxLength): a completion stops there. */
  maxLength: number;
  /** Each completion's seed is derived from this, the step and its place in the batch. */
  seed: number;
}

/** numGenerations completions per row (consecutive in the result), all decoded together. */
export async function sampleGroups(
  generator: Generator,
  adapter: LoraAdapter,
  prompts: GrpoPrompt[],
  rows: number[],
  step: number,
  s: SamplingSettings,
  signal?: AbortSignal,
): Promise<SampledCompletion[]> {
  const requests = rows.flatMap((row, k) =>
    Array.from({ length: s.numGenerations }, async (_, g): Promise<SampledCompletion> => {
      const prompt = prompts[row];
      const iterator = generator.generate({
        promptIds: prompt.promptIds,
        adapter,
        temperature: s.temperature,
        topP: s.topP,
        maxTokens: Math.min(s.maxCompletionTokens, s.maxLength - prompt.promptIds.length),
        seed: (s.seed * 1_000_003 + step * 7919 + k * s.numGenerations + g) >>> 0,
        grammar: prompt.grammar,
        signal,
      });
      const tokenIds: number[] = [];
      for (;;) {
        const next = await iterator.next();
        if (next.done) return { row, text: next.value.text, tokenIds, finishReason: next.value.finishReason };
        tokenIds.push(next.value.tokenId);
      }
    }),
  );
  return Promise.all(requests);
}

/** A completion as a training sequence: only its sampled tokens are targets. */
export function completionExample(prompt: GrpoPrompt, tokenIds: number[]): TokenizedExample {
  const P = prompt.promptIds.length;
  const inputIds = new Int32Array(P + tokenIds.length);
  inputIds.set(prompt.promptIds);
  inputIds.set(tokenIds, P);
  const labels = new Int32Array(inputIds.length).fill(-100);
  labels.set(tokenIds, P);
  return { inputIds, labels };
}

export interface GrpoPassOptions {
  graph: ModelGraph;
  lora: LoraLayers;
  grads: LoraLayers;
  /** The reference policy's adapter (the start adapter, frozen); null: the adapter switched off. */
  reference: LoraLayers | null;
  settings: GrpoSettings;
  pad: number;
  /** The batch's normaliser: kept completion tokens ("token") or kept completions ("sequence"). */
  batchTokens: number;
  batchKept: number;
}

export interface GrpoPassResult {
  /** This micro-batch's share of the batch loss. */
  loss: number;
  /** Sum of k3 over its kept tokens (0 without a reference pass). */
  klSum: number;
  clippedTokens: number;
  tokens: number;
}

/** The sampled tokens' log-probabilities per sequence, read from the rows' cross-entropy. */
function tokenLogProbs(rowLoss: Float32Array, targets: Int32Array, B: number, T: number): Float64Array[] {
  const out: Float64Array[] = [];
  for (let b = 0; b < B; b++) {
    const lp: number[] = [];
    for (let t = 0; t < T; t++) if (targets[b * T + t] >= 0) lp.push(-rowLoss[b * T + t]);
    out.push(Float64Array.from(lp));
  }
  return out;
}

/**
 * One micro-batch of completions (all kept: a zero group's completions never
 * reach here): accumulates its LoRA gradients, each token weighted as the whole
 * batch's normalisation says, and returns its figures.
 */
export function grpoPass(
  examples: TokenizedExample[],
  advantages: number[],
  o: GrpoPassOptions,
): GrpoPassResult {
  const batch = makeBatch(examples, o.pad);
  const { B, T, targets } = batch;
  const rowLoss = new Float32Array(B * T);
  let reference: Float64Array[] | null = null;
  if (o.settings.beta > 0) {
    o.graph.forward(batch, o.reference, null, rowLoss);
    reference = tokenLogProbs(rowLoss, targets, B, T);
  }
  o.graph.forward(batch, o.lora, 1, rowLoss);
  const policy = tokenLogProbs(rowLoss, targets, B, T);
  const completions: CompletionLogProbs[] = policy.map((logprobs, b) =>
    reference ? { logprobs, refLogprobs: reference[b] } : { logprobs },
  );
  const keep = completions.map(() => true);
  const part = grpoLoss(completions, advantages, keep, o.settings);
  // grpoLoss normalised over this micro-batch; rescale to the whole batch's normaliser
  const factor =
    o.settings.normalization === "token" ? part.tokens / o.batchTokens : examples.length / o.batchKept;
  const weights = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    let k = 0;
    for (let t = 0; t < T; t++) {
      if (targets[b * T + t] < 0) continue;
      weights[b * T + t] = -factor * part.grads[b][k++];
    }
  }
  o.graph.weightOutputGrad(weights);
  o.graph.backward(o.lora, o.grads);
  return {
    loss: part.loss * factor,
    klSum: part.meanKl * part.tokens,
    clippedTokens: part.clipFraction * part.tokens,
    tokens: part.tokens,
  };
}

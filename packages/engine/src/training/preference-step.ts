// Preference pairs through the graph: each answer is its own sequence (prompt +
// answer, tokenized and cut as SFT does, so only the answer's tokens count), a
// micro-batch holds the chosen and rejected sequences of its pairs side by side,
// and a sequence's log-probability is minus the sum of its rows' cross-entropy.
//
// The reference policy is the same graph with the adapter switched off (lora
// null): no second copy of the weights. A run from a start adapter has that
// adapter, frozen, as its reference instead (referenceLora). Either way its
// log-probabilities never change, so they are computed once per pair, the
// first time the pair is met, and kept.
//
// The gradient: the loss depends on the tokens only through the sequence sums,
// so d loss/d CE(row) = −d loss/d log πθ(y) for every answer row of y. One
// forward with gradient scale 1 leaves d CE(row)/d xf(row) in the graph; once
// the pairs' losses are known, each row of it is scaled by its weight
// (ModelGraph.weightOutputGrad) and the usual backward runs.
import { makeBatch } from "../data/batching.js";
import { answerRow, type PreferenceRow } from "../data/preference-dataset.js";
import { type FitOptions, fitRow } from "../data/truncation.js";
import { EngineError } from "../errors.js";
import type { ModelGraph } from "../graph/model.js";
import type { LoraLayers } from "../graph/weights.js";
import type { TokenizedExample, Tokenizer } from "../types.js";
import {
  type PairLoss,
  PreferenceMeter,
  type PreferenceMetrics,
  type PreferenceSettings,
  pairLoss,
} from "./preference-loss.js";

export interface TokenizedPair {
  chosen: TokenizedExample;
  rejected: TokenizedExample;
}

/** One set of pairs fitted to maxLength, with the 1-based rows cut or dropped (as PreparedSet). */
export interface PreparedPairs {
  pairs: TokenizedPair[];
  rows: number;
  truncated: number[];
  dropped: { row: number; reason: string }[];
}

/** Every pair of a set tokenized and fitted; a pair is dropped when either answer cannot fit. */
export function preparePairs(
  tokenizer: Tokenizer,
  rows: PreferenceRow[],
  set: string,
  fit: FitOptions,
  rowNumbers?: number[],
): PreparedPairs {
  const prepared: PreparedPairs = { pairs: [], rows: rows.length, truncated: [], dropped: [] };
  rows.forEach((row, i) => {
    const number = rowNumbers?.[i] ?? i + 1;
    const fitted = (["chosen", "rejected"] as const).map((answer) => {
      try {
        return fitRow(tokenizer, answerRow(row, answer), fit);
      } catch (error) {
        if (!(error instanceof EngineError)) throw error;
        throw new EngineError(
          error.code,
          `${set} row ${number} (${answer}): ${error.message}`,
          error.file,
          number,
        );
      }
    });
    const [chosen, rejected] = fitted;
    if (chosen.example === null || rejected.example === null) {
      const [answer, why] = chosen.example === null ? ["chosen", chosen] : ["rejected", rejected];
      prepared.dropped.push({ row: number, reason: `${answer}: ${(why as { dropped: string }).dropped}` });
      return;
    }
    prepared.pairs.push({ chosen: chosen.example, rejected: rejected.example });
    if (chosen.truncated || rejected.truncated) prepared.truncated.push(number);
  });
  if (prepared.pairs.length === 0 && rows.length > 0) {
    const first = prepared.dropped[0];
    throw new EngineError(
      "invalid_dataset",
      `${set}: no usable pairs: all ${rows.length} were dropped as too long for maxLength ${fit.maxLength} ` +
        `(row ${first.row}: ${first.reason}); raise maxLength or shorten the answers`,
    );
  }
  return prepared;
}

/** The reference log-probabilities of a set's pairs, filled the first time each pair is met. */
export class ReferenceLogProbs {
  private readonly values: Float64Array;

  constructor(pairs: number) {
    this.values = new Float64Array(2 * pairs).fill(Number.NaN);
  }

  has(pair: number): boolean {
    return !Number.isNaN(this.values[2 * pair]);
  }

  get(pair: number): [number, number] {
    return [this.values[2 * pair], this.values[2 * pair + 1]];
  }

  set(pair: number, chosen: number, rejected: number): void {
    this.values[2 * pair] = chosen;
    this.values[2 * pair + 1] = rejected;
  }
}

/** Per-sequence sums of a batch's row losses: [−log p(y), answer tokens] for each of its B sequences. */
function sequenceSums(
  rowLoss: Float32Array,
  targets: Int32Array,
  B: number,
  T: number,
): [Float64Array, Int32Array] {
  const sums = new Float64Array(B);
  const counts = new Int32Array(B);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      if (targets[b * T + t] < 0) continue;
      sums[b] += rowLoss[b * T + t];
      counts[b]++;
    }
  }
  return [sums, counts];
}

export interface PairPassOptions {
  graph: ModelGraph;
  lora: LoraLayers;
  /** With grads given, the backward runs and accumulates gradScale·d loss into them. */
  grads: LoraLayers | null;
  gradScale: number;
  settings: PreferenceSettings;
  pad: number;
  reference: ReferenceLogProbs;
  /** The reference policy's adapter: the start adapter, frozen; null: the adapter switched off. */
  referenceLora: LoraLayers | null;
}

/**
 * One micro-batch of pairs (their indices into `pairs`): the losses and
 * rewards of each pair, and, with grads, its LoRA gradients accumulated.
 */
export function pairPass(pairs: TokenizedPair[], indices: number[], o: PairPassOptions): PairLoss[] {
  const { graph, settings } = o;
  const sequences = indices.flatMap((i) => [pairs[i].chosen, pairs[i].rejected]);
  const batch = makeBatch(sequences, o.pad);
  const rowLoss = new Float32Array(batch.B * batch.T);
  if (settings.loss === "sigmoid" && indices.some((i) => !o.reference.has(i))) {
    graph.forward(batch, o.referenceLora, null, rowLoss); // the reference: frozen start adapter, or none
    const [ref] = sequenceSums(rowLoss, batch.targets, batch.B, batch.T);
    indices.forEach((i, k) => {
      if (!o.reference.has(i)) o.reference.set(i, -ref[2 * k], -ref[2 * k + 1]);
    });
  }
  graph.forward(batch, o.lora, o.grads ? 1 : null, rowLoss);
  const [sums, counts] = sequenceSums(rowLoss, batch.targets, batch.B, batch.T);
  const losses = indices.map((i, k) => {
    const [referenceChosen, referenceRejected] = settings.loss === "sigmoid" ? o.reference.get(i) : [0, 0];
    return pairLoss(
      {
        policyChosen: -sums[2 * k],
        policyRejected: -sums[2 * k + 1],
        referenceChosen,
        referenceRejected,
        chosenTokens: counts[2 * k],
        rejectedTokens: counts[2 * k + 1],
      },
      settings,
    );
  });
  if (o.grads) {
    // d loss/d CE(row) = −d loss/d log p(sequence), the same for every answer row of that sequence
    const weights = new Float32Array(batch.B * batch.T);
    for (let b = 0; b < batch.B; b++) {
      const l = losses[b >> 1];
      const w = -o.gradScale * (b % 2 === 0 ? l.dChosen : l.dRejected);
      for (let t = 0; t < batch.T; t++) if (batch.targets[b * batch.T + t] >= 0) weights[b * batch.T + t] = w;
    }
    graph.weightOutputGrad(weights);
    graph.backward(o.lora, o.grads);
  }
  return losses;
}

/** Preference figures over a set (no gradients), in micro-batches of B pairs; null when aborted. */
export async function evaluatePairs(
  pairs: TokenizedPair[],
  B: number,
  o: Omit<PairPassOptions, "grads" | "gradScale">,
  signal?: AbortSignal,
): Promise<PreferenceMetrics | null> {
  const meter = new PreferenceMeter();
  for (let i = 0; i < pairs.length; i += B) {
    if (signal?.aborted) return null;
    const indices = Array.from({ length: Math.min(B, pairs.length - i) }, (_, k) => i + k);
    for (const l of pairPass(pairs, indices, { ...o, grads: null, gradScale: 0 })) meter.add(l);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return meter.result();
}

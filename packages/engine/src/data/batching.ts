// Micro-batches: examples right-padded to the longest in the batch, in the
// given order (no sorting, so batching is a pure function of the data order).
// targets are shifted here: row (b, t) predicts labels[t+1] (Hugging Face's
// causal-LM convention), and the last position and padding predict nothing.
import type { Batch } from "../graph/model.js";
import type { TokenizedExample } from "../types.js";

export function makeBatch(examples: TokenizedExample[], padTokenId: number): Batch {
  const B = examples.length;
  let T = 0;
  for (const e of examples) T = Math.max(T, e.inputIds.length);
  const inputIds = new Int32Array(B * T).fill(padTokenId);
  const targets = new Int32Array(B * T).fill(-100);
  const lengths = new Int32Array(B);
  for (let b = 0; b < B; b++) {
    const { inputIds: ids, labels } = examples[b];
    lengths[b] = ids.length;
    inputIds.set(ids, b * T);
    for (let t = 0; t + 1 < ids.length; t++) targets[b * T + t] = labels[t + 1];
  }
  return { B, T, inputIds, targets, lengths };
}

/** Tokens that carry a loss in a batch. */
export function countTargets(batch: Batch): number {
  let n = 0;
  for (let i = 0; i < batch.targets.length; i++) if (batch.targets[i] >= 0) n++;
  return n;
}

/** Real (non-padding) tokens in a batch. */
export function countTokens(batch: Batch): number {
  let n = 0;
  for (let i = 0; i < batch.B; i++) n += batch.lengths[i];
  return n;
}

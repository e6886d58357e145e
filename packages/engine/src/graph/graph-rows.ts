// What one pass of the graph runs over: a padded training batch, or rows of
// many sequences (decode), each sequence an attention segment, possibly with
// its KV cache, and runs of rows that share a LoRA adapter.
import type { ModelConfig } from "../families/index.js";
import type { LoraGroup } from "./lora-apply.js";

/** One padded micro-batch. targets[n] is the token row n must predict (-100 = no loss). */
export interface Batch {
  B: number;
  T: number;
  inputIds: Int32Array; // [B*T]
  targets: Int32Array; // [B*T]
  lengths: Int32Array; // [B] real tokens per sequence; the rest is padding
}

/** Keys and values of one sequence, preallocated up to maxLength positions (decode). */
export interface KvCache {
  readonly maxLength: number;
  /** Positions filled so far (the next token goes at this position). */
  length: number;
  readonly k: Float32Array[]; // per layer [maxLength, K]
  readonly v: Float32Array[]; // per layer [maxLength, K]
  /** The token ids the cache holds (a longrope model recomputes the cache from them). */
  readonly ids: Int32Array; // [maxLength]
}

/**
 * Rows row..row+rows-1 are one sequence for attention. Without a cache the
 * rows are the whole sequence (training); with one they are its next
 * positions, appended to the cache layer by layer (decode).
 */
export interface Segment {
  row: number;
  rows: number;
  cache: KvCache | null;
  /**
   * The sequence length a longrope model picks its factors by (transformers:
   * max position + 1 of the forward call; a padded batch's padded length).
   * Default: the positions the sequence holds after this pass.
   */
  ropeLength?: number;
}

/** One forward pass over N rows: token ids, positions, attention segments and LoRA groups. */
export interface Rows {
  N: number;
  ids: ArrayLike<number>;
  positions: Int32Array; // [N]
  segments: readonly Segment[];
  lora: readonly LoraGroup[];
}

export function createKvCache(config: ModelConfig, maxLength: number): KvCache {
  const kvDim = config.numKeyValueHeads * config.headDim;
  const k: Float32Array[] = [];
  const v: Float32Array[] = [];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    k.push(new Float32Array(maxLength * kvDim));
    v.push(new Float32Array(maxLength * kvDim));
  }
  return { maxLength, length: 0, k, v, ids: new Int32Array(maxLength) };
}

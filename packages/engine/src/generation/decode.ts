// Generation's incremental step: one step runs the new tokens of many
// sequences at once through the model's one graph (model.ts), each sequence
// with its own KV cache, positions and adapter. Prefill (many tokens of one
// sequence) and decode (one token each of many sequences) mix freely in a step.
//
// Rows of all sequences are stacked so every projection is ONE matmul against
// the shared base weights; sequences with the same adapter sit side by side so
// LoRA runs once per adapter; the LM head runs only on the rows whose logits
// are wanted.
import { EngineError } from "../errors.js";
import type { ModelConfig } from "../families/index.js";
import type { LoraGroup } from "../graph/lora-apply.js";
import { createKvCache, type KvCache, ModelGraph, type Segment } from "../graph/model.js";
import type { LoraLayers, ServingWeights } from "../graph/weights.js";

export { createKvCache, type KvCache };

/** One sequence's part of a step. */
export interface DecodeEntry {
  cache: KvCache;
  /** New tokens, placed at positions cache.length .. cache.length + n - 1. */
  tokenIds: ArrayLike<number>;
  /** The sequence's adapter (shared by reference across sequences), or null. */
  lora: LoraLayers | null;
  /** Whether to compute logits for this sequence's last new token. */
  wantLogits: boolean;
}

export class BatchDecoder {
  readonly config: ModelConfig;
  readonly maxContext: number;
  private readonly graph: ModelGraph;
  private readonly longAfter: number; // longrope: the original context, past which the long factors apply
  private ids = new Int32Array(0);
  private positions = new Int32Array(0);
  private logits = new Float32Array(0); // [wanted, vocab], reused by the next step

  /** weights: fp32 or converted for serving (loading/serving-weights.ts servingWeights). */
  constructor(weights: ServingWeights, config: ModelConfig, maxContext: number) {
    this.config = config;
    this.maxContext = maxContext;
    this.graph = new ModelGraph(config, weights, { inferenceOnly: true });
    this.longAfter = Math.min(...config.ropes.map((r) => r.long?.originalMaxPositions ?? Infinity));
  }

  /**
   * Runs one step and advances every entry's cache. Returns logits
   * [nWanted, vocab] for the entries with wantLogits, in entry order; the
   * array is reused by the next step.
   */
  step(entries: readonly DecodeEntry[]): Float32Array {
    if (entries.length === 0) return this.logits.subarray(0, 0);
    const vocab = this.config.vocabSize;
    // entries with the same adapter side by side: each adapter's rows are one block
    const order = orderByAdapter(entries);
    // a longrope sequence crossing its original context runs again from position 0
    const recompute = entries.map((entry) => this.crossesLongrope(entry));
    const pasts = entries.map((entry, e) => (recompute[e] ? 0 : entry.cache.length));
    const feeds = entries.map((entry, e) =>
      recompute[e]
        ? [...entry.cache.ids.subarray(0, entry.cache.length), ...Array.from(entry.tokenIds)]
        : entry.tokenIds,
    );
    const rowOf = new Array<number>(entries.length);
    let N = 0;
    for (const e of order) {
      const entry = entries[e];
      const T = feeds[e].length;
      if (T === 0) throw new EngineError("invalid_argument", "decode step: an entry has no new tokens");
      const limit = Math.min(entry.cache.maxLength, this.maxContext);
      if (pasts[e] + T > limit) {
        throw new EngineError(
          "invalid_argument",
          `decode step: ${pasts[e]} + ${T} positions exceed the cache (${limit})`,
        );
      }
      rowOf[e] = N;
      N += T;
    }
    if (this.ids.length < N) {
      this.ids = new Int32Array(Math.max(N, 2 * this.ids.length));
      this.positions = new Int32Array(this.ids.length);
    }
    const segments: Segment[] = [];
    const lora: LoraGroup[] = [];
    for (const e of order) {
      const entry = entries[e];
      const row = rowOf[e];
      const ids = feeds[e];
      const T = ids.length;
      for (let t = 0; t < T; t++) {
        const id = ids[t];
        if (!(Number.isInteger(id) && id >= 0 && id < vocab)) {
          throw new EngineError("invalid_argument", `token id ${id} is outside the vocabulary [0, ${vocab})`);
        }
        this.ids[row + t] = id;
        this.positions[row + t] = pasts[e] + t;
      }
      segments.push({ row, rows: T, cache: entry.cache });
      const last = lora[lora.length - 1];
      if (last && last.lora === entry.lora && last.row + last.rows === row) last.rows += T;
      else lora.push({ row, rows: T, lora: entry.lora });
    }
    // every entry is valid: only now may a cache be emptied for its recompute
    for (const [e, entry] of entries.entries()) entry.cache.length = pasts[e];
    this.graph.run({ N, ids: this.ids, positions: this.positions, segments, lora });
    for (const [e, entry] of entries.entries()) {
      entry.cache.ids.set(feeds[e], entry.cache.length);
      entry.cache.length += feeds[e].length;
    }

    const wanted: number[] = [];
    for (let e = 0; e < entries.length; e++) {
      if (entries[e].wantLogits) wanted.push(rowOf[e] + feeds[e].length - 1);
    }
    if (this.logits.length < wanted.length * vocab) this.logits = new Float32Array(wanted.length * vocab * 2);
    const out = this.logits.subarray(0, wanted.length * vocab);
    if (wanted.length > 0) this.graph.logitsOfRows(wanted, out);
    return out;
  }

  /**
   * Whether a longrope model's sequence grows past the original context in
   * this step: transformers then recomputes its cache with the long factors,
   * so the whole sequence runs again from an emptied cache.
   */
  private crossesLongrope(entry: DecodeEntry): boolean {
    const past = entry.cache.length;
    return past > 0 && past <= this.longAfter && past + entry.tokenIds.length > this.longAfter;
  }
}

/** Entry indices with equal adapters adjacent (first-seen order of adapters; stable within one). */
function orderByAdapter(entries: readonly DecodeEntry[]): number[] {
  const order: number[] = [];
  for (let e = 0; e < entries.length; e++) {
    const lora = entries[e].lora;
    let placed = false;
    for (let p = order.length - 1; p >= 0; p--) {
      if (entries[order[p]].lora === lora) {
        order.splice(p + 1, 0, e);
        placed = true;
        break;
      }
    }
    if (!placed) order.push(e);
  }
  return order;
}

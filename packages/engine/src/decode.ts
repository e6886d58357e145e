// The incremental forward pass used for generation: one step runs the new
// tokens of many sequences at once, each with its own KV cache, position and
// adapter. Prefill (many tokens of one sequence) and decode (one token each of
// many sequences) mix freely in one step.
//
// Per layer, the rows of all sequences are stacked into x[R, hidden] so every
// projection is ONE matmul against the shared base weights; LoRA deltas are
// added per group of rows that share an adapter; RoPE uses each row's own
// position; attention runs per sequence against its cache (S = past + new);
// the LM head runs only on the rows whose logits are wanted.
//
// The math is the training forward's (model.ts): RMSNorm, rotate_half RoPE
// from ropeTables, grouped-query attention, SwiGLU, LM head on the final norm.
import { EngineError } from "./errors.js";
import { getKernels, type Kernels } from "./kernels/index.js";
import type { LlamaConfig, LoraTarget } from "./types.js";
import { type LlamaWeights, type LoraLayers, ropeTables } from "./weights.js";

/** Keys and values of one sequence, preallocated up to maxLength positions. */
export interface KvCache {
  readonly maxLength: number;
  /** Positions filled so far (the next token goes at this position). */
  length: number;
  readonly k: Float32Array[]; // per layer [maxLength, nKv*headDim]
  readonly v: Float32Array[]; // per layer [maxLength, nKv*headDim]
}

export function createKvCache(config: LlamaConfig, maxLength: number): KvCache {
  const kvDim = config.numKeyValueHeads * config.headDim;
  const k: Float32Array[] = [];
  const v: Float32Array[] = [];
  for (let l = 0; l < config.numHiddenLayers; l++) {
    k.push(new Float32Array(maxLength * kvDim));
    v.push(new Float32Array(maxLength * kvDim));
  }
  return { maxLength, length: 0, k, v };
}

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

/** Scratch buffers sized for R rows (grown, never shrunk, so steady decoding allocates nothing). */
interface Scratch {
  rows: number;
  x: Float32Array; // [R, hidden] residual stream
  xn: Float32Array; // [R, hidden] normed input of a block
  q: Float32Array; // [R, nHeads*headDim]
  k: Float32Array; // [R, nKv*headDim]
  v: Float32Array; // [R, nKv*headDim]
  attn: Float32Array; // [R, nHeads*headDim]
  gate: Float32Array; // [R, ffn]
  up: Float32Array; // [R, ffn]
  h: Float32Array; // [R, ffn] silu(gate) * up
  rstd: Float32Array; // [R]
  positions: Int32Array; // [R]
  loraMid: Float32Array; // [R, maxR] x·Aᵀ
}

export class BatchDecoder {
  readonly config: LlamaConfig;
  readonly maxContext: number;
  private readonly weights: LlamaWeights;
  private readonly kernels: Kernels;
  private cos: Float32Array = new Float32Array(0); // [ropeLength, headDim/2], grown on demand up to maxContext
  private sin: Float32Array = new Float32Array(0);
  private ropeLength = 0;
  private scratch: Scratch | null = null;
  private loraMidWidth = 0; // the largest adapter rank seen
  private headRows = 0;
  private lastX = new Float32Array(0); // [B, hidden] rows whose logits are wanted
  private lastXn = new Float32Array(0); // [B, hidden]
  private lastRstd = new Float32Array(0); // [B]
  private logits = new Float32Array(0); // [B, vocab]
  // Per-step bookkeeping, reused: entry order (grouped by adapter) and row offsets.
  private order: number[] = [];
  private rowStart: number[] = [];

  constructor(weights: LlamaWeights, config: LlamaConfig, maxContext: number) {
    this.weights = weights;
    this.config = config;
    this.maxContext = maxContext;
    this.kernels = getKernels();
  }

  /**
   * Runs one step and advances every entry's cache. Returns logits
   * [nWanted, vocab] for the entries with wantLogits, in entry order; the
   * array is reused by the next step.
   */
  step(entries: readonly DecodeEntry[]): Float32Array {
    if (entries.length === 0) return this.logits.subarray(0, 0);
    const { hiddenSize: hidden, headDim, numAttentionHeads: nHeads, numKeyValueHeads: nKv } = this.config;
    const { intermediateSize: ffn, rmsNormEps: eps, vocabSize: vocab } = this.config;
    const qDim = nHeads * headDim;
    const kvDim = nKv * headDim;
    const K = this.kernels;
    const W = this.weights;

    // Rows are laid out entry by entry, entries with the same adapter side by
    // side, so each adapter's rows form one contiguous block.
    const order = this.orderByAdapter(entries);
    const rowStart = this.rowStart;
    rowStart.length = entries.length;
    let R = 0;
    let nWanted = 0;
    for (const e of order) {
      const entry = entries[e];
      const T = entry.tokenIds.length;
      if (T === 0) throw new EngineError("invalid_argument", "decode step: an entry has no new tokens");
      if (entry.cache.length + T > entry.cache.maxLength || entry.cache.length + T > this.maxContext) {
        throw new EngineError(
          "invalid_argument",
          `decode step: ${entry.cache.length} + ${T} positions exceed the cache (${Math.min(entry.cache.maxLength, this.maxContext)})`,
        );
      }
      rowStart[e] = R;
      R += T;
      if (entry.wantLogits) nWanted++;
      this.ensureRope(entry.cache.length + T);
    }
    const s = this.ensureScratch(R);

    // Embedding lookup and positions.
    for (const e of order) {
      const entry = entries[e];
      const r0 = rowStart[e];
      for (let t = 0; t < entry.tokenIds.length; t++) {
        const id = entry.tokenIds[t];
        if (!(id >= 0 && id < vocab)) {
          throw new EngineError("invalid_argument", `token id ${id} is outside the vocabulary [0, ${vocab})`);
        }
        s.x.set(W.embed.subarray(id * hidden, (id + 1) * hidden), (r0 + t) * hidden);
        s.positions[r0 + t] = entry.cache.length + t;
      }
    }

    const scale = 1 / Math.sqrt(headDim);
    for (let l = 0; l < this.config.numHiddenLayers; l++) {
      const L = W.layers[l];
      // ---- attention block: x += o(attn(rope(q(xn)), rope(k(xn)), v(xn)))
      K.rmsnormForward(s.x, L.inputNorm, s.xn, s.rstd, R, hidden, eps);
      K.matmul(s.xn, L.q, s.q, R, qDim, hidden, false, true, false);
      K.matmul(s.xn, L.k, s.k, R, kvDim, hidden, false, true, false);
      K.matmul(s.xn, L.v, s.v, R, kvDim, hidden, false, true, false);
      this.addLora(entries, l, "q_proj", s.xn, s.q, hidden, qDim);
      this.addLora(entries, l, "k_proj", s.xn, s.k, hidden, kvDim);
      this.addLora(entries, l, "v_proj", s.xn, s.v, hidden, kvDim);
      K.rope(s.q, this.cos, this.sin, s.positions, R, nHeads, headDim, false);
      K.rope(s.k, this.cos, this.sin, s.positions, R, nKv, headDim, false);
      for (const e of order) {
        const entry = entries[e];
        const cache = entry.cache;
        const T = entry.tokenIds.length;
        const r0 = rowStart[e];
        const past = cache.length;
        cache.k[l].set(s.k.subarray(r0 * kvDim, (r0 + T) * kvDim), past * kvDim);
        cache.v[l].set(s.v.subarray(r0 * kvDim, (r0 + T) * kvDim), past * kvDim);
        K.attentionForward(
          s.q.subarray(r0 * qDim, (r0 + T) * qDim),
          cache.k[l],
          cache.v[l],
          s.attn.subarray(r0 * qDim, (r0 + T) * qDim),
          null,
          T,
          past + T,
          nHeads,
          nKv,
          headDim,
          scale,
          kvDim,
        );
      }
      K.matmul(s.attn, L.o, s.x, R, hidden, qDim, false, true, true); // residual add
      this.addLora(entries, l, "o_proj", s.attn, s.x, qDim, hidden);

      // ---- MLP block: x += down(silu(gate(xn)) * up(xn))
      K.rmsnormForward(s.x, L.postNorm, s.xn, s.rstd, R, hidden, eps);
      K.matmul(s.xn, L.gate, s.gate, R, ffn, hidden, false, true, false);
      K.matmul(s.xn, L.up, s.up, R, ffn, hidden, false, true, false);
      this.addLora(entries, l, "gate_proj", s.xn, s.gate, hidden, ffn);
      this.addLora(entries, l, "up_proj", s.xn, s.up, hidden, ffn);
      K.swigluForward(s.gate, s.up, s.h, R * ffn);
      K.matmul(s.h, L.down, s.x, R, hidden, ffn, false, true, true); // residual add
      this.addLora(entries, l, "down_proj", s.h, s.x, ffn, hidden);
    }
    for (const entry of entries) entry.cache.length += entry.tokenIds.length;

    // ---- LM head on each wanted entry's last row only
    this.ensureHead(nWanted);
    let j = 0;
    for (let e = 0; e < entries.length; e++) {
      const entry = entries[e];
      if (!entry.wantLogits) continue;
      const last = rowStart[e] + entry.tokenIds.length - 1;
      this.lastX.set(s.x.subarray(last * hidden, (last + 1) * hidden), j * hidden);
      j++;
    }
    if (nWanted > 0) {
      K.rmsnormForward(this.lastX, W.finalNorm, this.lastXn, this.lastRstd, nWanted, hidden, eps);
      K.matmul(this.lastXn, W.lmHead, this.logits, nWanted, vocab, hidden, false, true, false);
    }
    return this.logits.subarray(0, nWanted * vocab);
  }

  /**
   * out[rows of an adapter] += scale · (x[rows]·Aᵀ)·Bᵀ for every group of
   * rows whose adapter targets this projection. x[R, inDim], out[R, outDim].
   */
  private addLora(
    entries: readonly DecodeEntry[],
    layer: number,
    target: LoraTarget,
    x: Float32Array,
    out: Float32Array,
    inDim: number,
    outDim: number,
  ): void {
    const order = this.order;
    const s = this.scratch!;
    let g = 0;
    while (g < order.length) {
      const lora = entries[order[g]].lora;
      let end = g + 1;
      while (end < order.length && entries[order[end]].lora === lora) end++;
      const pair = lora?.layers[layer]?.[target];
      if (lora && pair) {
        const r0 = this.rowStart[order[g]];
        const last = entries[order[end - 1]];
        const rows = this.rowStart[order[end - 1]] + last.tokenIds.length - r0;
        const xRows = x.subarray(r0 * inDim, (r0 + rows) * inDim);
        const outRows = out.subarray(r0 * outDim, (r0 + rows) * outDim);
        this.kernels.matmul(xRows, pair.a, s.loraMid, rows, lora.r, inDim, false, true, false);
        this.kernels.matmul(s.loraMid, pair.b, outRows, rows, outDim, lora.r, false, true, true, lora.scale);
      }
      g = end;
    }
  }

  /** Entry indices with equal adapters adjacent (first-seen order of adapters; stable within one). */
  private orderByAdapter(entries: readonly DecodeEntry[]): number[] {
    const order = this.order;
    order.length = 0;
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
    let maxR = 0;
    for (const entry of entries) if (entry.lora) maxR = Math.max(maxR, entry.lora.r);
    this.ensureLoraMid(maxR);
    return order;
  }

  private ensureLoraMid(maxR: number): void {
    if (maxR <= this.loraMidWidth || !this.scratch) {
      this.loraMidWidth = Math.max(this.loraMidWidth, maxR);
      return;
    }
    this.loraMidWidth = maxR;
    this.scratch.loraMid = new Float32Array(this.scratch.rows * maxR);
  }

  /** RoPE tables covering positions < length (doubling, so long contexts cost only what they use). */
  private ensureRope(length: number): void {
    if (length <= this.ropeLength) return;
    const grown = Math.min(this.maxContext, Math.max(length, 2 * this.ropeLength, 256));
    const tables = ropeTables(this.config, grown);
    this.cos = tables.cos;
    this.sin = tables.sin;
    this.ropeLength = grown;
  }

  private ensureScratch(rows: number): Scratch {
    if (this.scratch && this.scratch.rows >= rows) return this.scratch;
    let capacity = Math.max(8, this.scratch?.rows ?? 0);
    while (capacity < rows) capacity *= 2;
    const c = this.config;
    const qDim = c.numAttentionHeads * c.headDim;
    const kvDim = c.numKeyValueHeads * c.headDim;
    this.scratch = {
      rows: capacity,
      x: new Float32Array(capacity * c.hiddenSize),
      xn: new Float32Array(capacity * c.hiddenSize),
      q: new Float32Array(capacity * qDim),
      k: new Float32Array(capacity * kvDim),
      v: new Float32Array(capacity * kvDim),
      attn: new Float32Array(capacity * qDim),
      gate: new Float32Array(capacity * c.intermediateSize),
      up: new Float32Array(capacity * c.intermediateSize),
      h: new Float32Array(capacity * c.intermediateSize),
      rstd: new Float32Array(capacity),
      positions: new Int32Array(capacity),
      loraMid: new Float32Array(capacity * this.loraMidWidth),
    };
    return this.scratch;
  }

  private ensureHead(rows: number): void {
    if (rows <= this.headRows) return;
    let capacity = Math.max(1, this.headRows);
    while (capacity < rows) capacity *= 2;
    this.headRows = capacity;
    this.lastX = new Float32Array(capacity * this.config.hiddenSize);
    this.lastXn = new Float32Array(capacity * this.config.hiddenSize);
    this.lastRstd = new Float32Array(capacity);
    this.logits = new Float32Array(capacity * this.config.vocabSize);
  }
}

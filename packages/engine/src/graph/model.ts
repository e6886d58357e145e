// ModelGraph: one model definition for LoRA training, logits and decode, for
// every supported family. It owns the buffers; the passes live beside it:
// forward-pass.ts (the decoder layers), backward-pass.ts (their gradients),
// lm-head.ts (the LM head fused with the loss), graph-state.ts (what they
// share). Rotary tables live in rope-tables.ts, LoRA in lora-apply.ts,
// activations in activations.ts.
//
// Notation: N rows (B sequences of T positions when training, right-padded;
// the new tokens of many sequences when decoding), C = hidden, F = ffn,
// V = vocab, Hq / Hkv heads of D = headDim, Q = Hq*D, K = Hkv*D, r = LoRA rank.

import type { ModelConfig } from "../families/index.js";
import { getKernels } from "../kernels/index.js";
import { layerActivations, scratch } from "./activations.js";
import { backwardLayers } from "./backward-pass.js";
import { forwardLayers } from "./forward-pass.js";
import type { Batch, Rows, Segment } from "./graph-rows.js";
import { type GraphState, sizesOf } from "./graph-state.js";
import { LmHead } from "./lm-head.js";
import { LoraRunner } from "./lora-apply.js";
import { PackedWeights } from "./packed-weights.js";
import { RopeTables } from "./rope-tables.js";
import type { LoraLayers, ServingWeights } from "./weights.js";

export { type Batch, createKvCache, type KvCache, type Rows, type Segment } from "./graph-rows.js";
export { sizesOf } from "./graph-state.js";
export { profile } from "./profile.js";

export interface GraphOptions {
  /** Compute LM-head logits only for rows with a target (default true). */
  skipUnlabeledRows?: boolean;
  /** Forward only (logits, eval, decode): one layer's activations are reused by every layer. */
  inferenceOnly?: boolean;
  /**
   * A bf16 training run (train-precision.ts): attention's matmuls on bf16
   * operands with fp32 sums, and an int8 base's products in bf16 where the
   * kernels have bf16 dot products (Kernels.matmulQuantTrain's bf16).
   */
  bf16?: boolean;
}

export class ModelGraph {
  readonly config: ModelConfig;
  /** fp32, or a serving format: decode (loading/serving-weights.ts) and bf16 / int8 training (training/train-precision.ts). */
  readonly weights: ServingWeights;
  private readonly skipUnlabeledRows: boolean;
  private readonly inferenceOnly: boolean;
  private readonly g: GraphState;
  private readonly head: LmHead;
  private rows = 0;
  private batch: Batch | null = null;

  constructor(config: ModelConfig, weights: ServingWeights, options: GraphOptions = {}) {
    this.config = config;
    this.weights = weights;
    const kern = getKernels();
    this.skipUnlabeledRows = options.skipUnlabeledRows ?? true;
    this.inferenceOnly = options.inferenceOnly ?? false;
    const packed = this.inferenceOnly ? null : PackedWeights.of(kern, weights);
    this.g = {
      config,
      weights,
      kern,
      lora: new LoraRunner(kern),
      packed,
      ropes: new RopeTables(config, kern),
      inferenceOnly: this.inferenceOnly,
      bf16: options.bf16 ?? false,
      acts: [],
      s: scratch(config, 0, !this.inferenceOnly),
      pass: null,
      joinedOut: new Float32Array(0),
    };
    this.head = new LmHead(config, weights.lmHead, kern, !this.inferenceOnly, packed, this.g.bf16);
  }

  /** Sizes the buffers for N rows, positions below maxPos and LoRA rank r. */
  private ensureCapacity(N: number, maxPos: number, r: number): void {
    const cfg = this.config;
    const g = this.g;
    const { C, F, Q } = sizesOf(cfg);
    g.ropes.ensure(maxPos);
    if (N > this.rows) {
      const grown = this.inferenceOnly ? Math.max(N, 2 * this.rows) : N;
      this.rows = grown;
      const sets = this.inferenceOnly ? 1 : cfg.numHiddenLayers;
      const alloc = g.kern.zeroedFloats; // absent: the plain arrays activations.ts defaults to
      g.acts = Array.from({ length: sets }, () => layerActivations(cfg, grown, alloc));
      g.s = scratch(cfg, grown, !this.inferenceOnly, alloc);
      this.head.ensure(grown);
    }
    g.lora.ensure(this.rows, g.acts.length, r, Math.max(C, F, Q));
  }

  /**
   * Runs the layers and the final norm over the rows; returns xf [N,C] ready
   * for the LM head. With caches, appends each layer's keys and values.
   */
  run(rows: Rows): Float32Array {
    let maxPos = 0;
    for (let n = 0; n < rows.N; n++) maxPos = Math.max(maxPos, rows.positions[n] + 1);
    let rank = 0;
    for (const group of rows.lora) rank = Math.max(rank, group.lora?.r ?? 0);
    this.ensureCapacity(rows.N, maxPos, rank);
    return forwardLayers(this.g, rows);
  }

  /**
   * Forward pass of a training batch with the loss. Returns the summed loss
   * over rows with a target and their count. With gradScale set, the LM
   * head's backward runs here too (dLogits = gradScale·(softmax − onehot)),
   * leaving d(xf) for backward(). With it or without (eval), `correct` counts the
   * rows with a target whose argmax logit is the target (lm-head.ts). With rowLoss
   * given, each row's own cross-entropy lands there (0 for rows without a target).
   */
  forward(
    batch: Batch,
    lora: LoraLayers | null,
    gradScale: number | null = null,
    rowLoss: Float32Array | null = null,
  ): { lossSum: number; count: number; correct: number | null } {
    if (gradScale !== null && this.inferenceOnly)
      throw new Error("an inference-only graph has no backward pass");
    const { B, T, inputIds, targets, lengths } = batch;
    const N = B * T;
    const positions = new Int32Array(N);
    const segments: Segment[] = [];
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < T; t++) positions[b * T + t] = t;
      if (lengths[b] > 0) segments.push({ row: b * T, rows: lengths[b], cache: null, ropeLength: T });
    }
    const xf = this.run({ N, ids: inputIds, positions, segments, lora: [{ row: 0, rows: N, lora }] });
    this.batch = batch;
    // d(xf) lands in dtmp for backward()
    const dxf = gradScale !== null ? this.g.s.dtmp : null;
    rowLoss?.fill(0);
    return this.head.loss(xf, targets, N, this.skipUnlabeledRows, dxf, gradScale ?? 0, rowLoss);
  }

  /**
   * Scales row n of d(xf) by rowWeights[n] after a forward with gradScale 1:
   * the loss's gradient then weighs each row's cross-entropy by its weight, as
   * a preference loss needs once it knows the sequences' log-probabilities.
   */
  weightOutputGrad(rowWeights: Float32Array): void {
    const C = this.config.hiddenSize;
    const d = this.g.s.dtmp;
    for (let n = 0; n < rowWeights.length; n++) {
      const w = rowWeights[n];
      for (let c = n * C; c < (n + 1) * C; c++) d[c] *= w;
    }
  }

  /** Backward pass after forward(batch, lora, gradScale): accumulates LoRA gradients into grads. */
  backward(lora: LoraLayers, grads: LoraLayers): void {
    const batch = this.batch;
    if (!batch || !this.g.pass || this.inferenceOnly)
      throw new Error("backward() needs a forward() with gradScale first");
    backwardLayers(this.g, batch, lora, grads);
  }

  /** Logits [T,V] for one sequence (a fresh forward pass). */
  logits(tokenIds: ArrayLike<number>, lora: LoraLayers | null): Float32Array {
    const T = tokenIds.length;
    const positions = new Int32Array(T);
    for (let t = 0; t < T; t++) positions[t] = t;
    const xf = this.run({
      N: T,
      ids: tokenIds,
      positions,
      segments: [{ row: 0, rows: T, cache: null }],
      lora: [{ row: 0, rows: T, lora }],
    });
    const out = new Float32Array(T * this.config.vocabSize);
    this.head.logits(xf, out, T);
    return out;
  }

  /** Logits [rows.length, V] of chosen rows of the last run (decode: each sequence's last new token). */
  logitsOfRows(rowIndices: readonly number[], out: Float32Array): void {
    this.head.logitsOfRows(this.g.s.xf, rowIndices, out);
  }
}

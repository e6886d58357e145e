// What the forward pass (forward-pass.ts) and the backward pass
// (backward-pass.ts) share: the model, its kernels, the activations kept for
// backward and the scratch, plus the small pieces both directions run (norms,
// the gated activation, RoPE). ModelGraph (model.ts) owns one and sizes it.

import type { ModelConfig } from "../families/index.js";
import type { Kernels } from "../kernels/types.js";
import type { LayerActivations, Scratch } from "./activations.js";
import type { Rows } from "./graph-rows.js";
import type { LoraRunner } from "./lora-apply.js";
import type { PackedWeights } from "./packed-weights.js";
import { tick, tock } from "./profile.js";
import type { RopeTables } from "./rope-tables.js";
import type { ServingWeights } from "./weights.js";

/** The notation's sizes for a config: C, F, V, Hq, Hkv, D, and Q = Hq*D, K = Hkv*D. */
export function sizesOf(config: ModelConfig) {
  const {
    hiddenSize: C,
    intermediateSize: F,
    vocabSize: V,
    numAttentionHeads: Hq,
    numKeyValueHeads: Hkv,
    headDim: D,
  } = config;
  return { C, F, V, Hq, Hkv, D, Q: Hq * D, K: Hkv * D };
}

export interface GraphState {
  readonly config: ModelConfig;
  /** fp32, or a serving format: decode (loading/serving-weights.ts) and bf16 / int8 training (training/train-precision.ts). */
  readonly weights: ServingWeights;
  readonly kern: Kernels;
  readonly lora: LoraRunner;
  /** The frozen weights packed ahead for the blocked matmul (training graphs within budget), or null. */
  readonly packed: PackedWeights | null;
  readonly ropes: RopeTables;
  /** Forward only: one set of activations, shared by every layer. */
  readonly inferenceOnly: boolean;
  /** A bf16 training run: attention's matmuls and an int8 base's products on bf16 operands (GraphOptions.bf16). */
  readonly bf16: boolean;
  acts: LayerActivations[];
  s: Scratch;
  /** The rows of the last forward pass (its positions and segments drive RoPE and attention). */
  pass: Rows | null;
  /** A joined projection's output [N, its rows] before it is split (serving weights; grown on use). */
  joinedOut: Float32Array;
}

/** Layer l's activations (the one shared set when inference-only). */
export function layerActs(g: GraphState, l: number): LayerActivations {
  return g.acts[g.inferenceOnly ? 0 : l];
}

export function norm(
  g: GraphState,
  x: Float32Array,
  w: Float32Array,
  y: Float32Array,
  rstd: Float32Array,
  rows: number,
  dim: number,
): void {
  const t = tick();
  g.kern.rmsnormForward(x, w, y, rstd, rows, dim, g.config.rmsNormEps);
  tock("fwd.rmsnorm", t);
}

/** q/k norm rows and width: one row per head, or the whole projection. */
export function qkRows(config: ModelConfig, N: number, heads: number): [number, number] {
  const D = config.headDim;
  return config.block.qkNorm === "head" ? [N * heads, D] : [N, heads * D];
}

/** out = act(gate)·up: SwiGLU or GeGLU per the family. */
export function activation(
  g: GraphState,
  gate: Float32Array,
  up: Float32Array,
  out: Float32Array,
  n: number,
): void {
  if (g.config.block.activation === "silu") g.kern.swigluForward(gate, up, out, n);
  else g.kern.gegluForward(gate, up, out, n);
}

/** RoPE over the last pass's rows (inverse: its backward). */
export function rope(
  g: GraphState,
  x: Float32Array,
  layer: number,
  heads: number,
  N: number,
  inverse: boolean,
): void {
  const pass = g.pass as Rows;
  g.ropes.apply(x, layer, heads, N, inverse, pass.positions, pass.segments);
}

/** y[0..n) += alpha·x[0..n): the kernels' row-broadcast add over one row of n (vectorised, unlike a JS loop). */
export function addScaled(g: GraphState, y: Float32Array, x: Float32Array, n: number, alpha: number): void {
  g.kern.addBias(y.subarray(0, n), x.subarray(0, n), 1, n, alpha);
}

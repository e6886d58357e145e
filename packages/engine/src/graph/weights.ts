// In-memory layout of a model's weights, read by the one forward/backward
// graph (model.ts) for training, logits and decode. Every matrix is row-major
// in Hugging Face's [out, in] orientation; fused checkpoint tensors (Phi-3's
// qkv_proj, gate_up_proj) are split into per-slot views without copies, and
// (1 + w) norms (Gemma) are stored as their effective weight.
import type { LoraModule, ModelConfig, Slot } from "../families/index.js";
import type { QuantMatrix } from "../kernels/types.js";

/** A frozen matrix: fp32 (loaded, trained against), or a serving format (quant/; decode only). */
export type ProjectionWeight = Float32Array | QuantMatrix;

/** P: how the projections are held (fp32 unless the weights were converted for serving). */
export interface LayerWeights<P extends ProjectionWeight = Float32Array> {
  attnNorm: Float32Array | null; // [hidden]
  attnOutNorm: Float32Array | null; // [hidden]
  mlpNorm: Float32Array | null; // [hidden]
  mlpOutNorm: Float32Array | null; // [hidden]
  qNorm: Float32Array | null; // [headDim] per head, or [nHeads*headDim] over the projection
  kNorm: Float32Array | null; // [headDim] or [nKv*headDim]
  q: P; // [nHeads*headDim, hidden]
  k: P; // [nKv*headDim, hidden]
  v: P; // [nKv*headDim, hidden]
  o: P; // [hidden, nHeads*headDim]
  gate: P; // [ffn, hidden]
  up: P; // [ffn, hidden]
  down: P; // [hidden, ffn]
  /** Biases of the projections that have one, [out]. */
  bias: Partial<Record<Slot, Float32Array>>;
  /** Serving formats: q/k/v and gate/up each as one matrix, their slots row views of it (quant/joined.ts). */
  joined?: Partial<Record<JoinedGroup, QuantMatrix>>;
}

// Projections grouped by the input they read: their LoRA x·Aᵀ is one matmul
// per group, and serving weights hold q/k/v and gate/up as one matrix each.
export const QKV: readonly Slot[] = ["q", "k", "v"];
export const O: readonly Slot[] = ["o"];
export const GATE_UP: readonly Slot[] = ["gate", "up"];
export const DOWN: readonly Slot[] = ["down"];

/** Projections that read one input, held as one matrix for serving. */
export type JoinedGroup = "qkv" | "gateUp";

export interface ModelWeights<P extends ProjectionWeight = Float32Array> {
  embed: P; // [vocab, hidden]
  layers: LayerWeights<P>[];
  finalNorm: Float32Array; // [hidden] (effective weight)
  /** [vocab, hidden]; the same array as embed when tie_word_embeddings. */
  lmHead: P;
}

/** Weights a model is served with: projections, embeddings and head in any format (loading/serving-weights.ts; the graph's products with them: frozen-weights.ts). */
export type ServingWeights = ModelWeights<ProjectionWeight>;

/** LoRA factors of one slot: delta W = scale * B·A (views into the adapter's tensors). */
export interface LoraPair {
  a: Float32Array; // [r, in]
  b: Float32Array; // [out, r]
}

/** LoRA factors by layer and slot, with scale = alpha / r. */
export interface LoraLayers {
  r: number;
  scale: number;
  layers: Partial<Record<Slot, LoraPair>>[];
}

/** Input and output sizes of each slot's projection. */
export function projectionShape(config: ModelConfig, slot: Slot): { in: number; out: number } {
  const qDim = config.numAttentionHeads * config.headDim;
  const kvDim = config.numKeyValueHeads * config.headDim;
  switch (slot) {
    case "q":
      return { in: config.hiddenSize, out: qDim };
    case "k":
    case "v":
      return { in: config.hiddenSize, out: kvDim };
    case "o":
      return { in: qDim, out: config.hiddenSize };
    case "gate":
    case "up":
      return { in: config.hiddenSize, out: config.intermediateSize };
    case "down":
      return { in: config.intermediateSize, out: config.hiddenSize };
  }
}

/** A module's input size and output size (a fused module's is the sum of its slots'). */
export function moduleShape(config: ModelConfig, module: LoraModule): { in: number; out: number } {
  let out = 0;
  for (const slot of module.slots) out += projectionShape(config, slot).out;
  return { in: projectionShape(config, module.slots[0]).in, out };
}

/**
 * A module's tensor of [out, width] split into its slots, in order, as views
 * (no copies): a fused checkpoint weight (width = in), its bias (width = 1),
 * or a LoRA B factor (width = r).
 */
export function slotRows(
  config: ModelConfig,
  module: LoraModule,
  data: Float32Array,
  width: number,
): Partial<Record<Slot, Float32Array>> {
  const out: Partial<Record<Slot, Float32Array>> = {};
  let row = 0;
  for (const slot of module.slots) {
    const rows = projectionShape(config, slot).out;
    out[slot] = data.subarray(row * width, (row + rows) * width);
    row += rows;
  }
  return out;
}

/** Slots' tensors joined end to end into one module tensor: slotRows' inverse. */
export function concatSlots(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

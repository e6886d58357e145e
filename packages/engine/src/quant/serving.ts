// A model's weights converted for serving in one format: every frozen
// projection, the embeddings and the LM head (one matrix when tied) are
// quantized; norms and biases stay fp32, and LoRA adapters run in fp32 on top
// (lora-apply.ts is untouched by the format). Training never sees these:
// it runs on the fp32 weights the model was loaded with.

import type { ModelConfig } from "../families/index.js";
import { SLOTS } from "../families/index.js";
import { dequantizeRow } from "../kernels/quant-matrix.js";
import type { Kernels } from "../kernels/types.js";
import {
  type LayerWeights,
  type ModelWeights,
  type ProjectionWeight,
  projectionShape,
  type ServingWeights,
} from "../weights.js";
import { matrixBytes, quantizeMatrix, type WeightFormat } from "./formats.js";

/** The weights in `format` (fp32: the same weights, nothing copied). */
export function servingWeights(
  weights: ModelWeights,
  config: ModelConfig,
  format: WeightFormat,
): ServingWeights {
  if (format === "fp32") return weights;
  const { hiddenSize: C, vocabSize: V } = config;
  const layers = weights.layers.map((lw) => {
    const out: LayerWeights<ProjectionWeight> = { ...lw };
    for (const slot of SLOTS) {
      const shape = projectionShape(config, slot);
      out[slot] = quantizeMatrix(format, lw[slot], shape.out, shape.in);
    }
    return out;
  });
  const embed = quantizeMatrix(format, weights.embed, V, C);
  const lmHead = weights.lmHead === weights.embed ? embed : quantizeMatrix(format, weights.lmHead, V, C);
  return { embed, layers, finalNorm: weights.finalNorm, lmHead };
}

/** Bytes of the weights a decode step reads: every projection, the LM head (embeddings: one row a token). */
export function decodeWeightBytes(weights: ServingWeights): number {
  let bytes = matrixBytes(weights.lmHead);
  for (const lw of weights.layers) for (const slot of SLOTS) bytes += matrixBytes(lw[slot]);
  return bytes;
}

/**
 * y[N, out] (+)= alpha·x[N, in]·Wᵀ for a frozen weight in any format: the one
 * place the forward pass tells fp32 from the serving formats.
 */
export function matmulWeight(
  kern: Kernels,
  x: Float32Array,
  w: ProjectionWeight,
  y: Float32Array,
  N: number,
  out: number,
  inDim: number,
  accumulate = false,
  alpha = 1,
): void {
  if (w instanceof Float32Array) kern.matmul(x, w, y, N, out, inDim, false, true, accumulate, alpha);
  else kern.matmulQuant(x, w, y, N, accumulate, alpha);
}

/** Row `row` of an embedding table in any format, into out[0..cols). */
export function matrixRow(w: ProjectionWeight, row: number, cols: number, out: Float32Array): void {
  if (w instanceof Float32Array) out.set(w.subarray(row * cols, row * cols + cols));
  else dequantizeRow(w, row, out);
}

/** The fp32 matrix behind a weight, for the backward pass (which serving weights never reach). */
export function fp32Weight(w: ProjectionWeight, what: string): Float32Array {
  if (w instanceof Float32Array) return w;
  throw new Error(
    `${what}: weights served in ${w.format} have no backward pass; training runs on fp32 weights`,
  );
}

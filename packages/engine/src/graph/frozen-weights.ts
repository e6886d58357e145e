// A frozen weight in any format as the graph uses it (the forward pass, the
// backward pass, the LM head): products with fp32 or serving-format matrices,
// an embedding row, and the bytes a decode step reads. Kept apart from the
// conversion (loading/serving-weights.ts), which only loads: the graph runs on
// whatever format it is given and knows no checkpoint.

import { SLOTS } from "../families/index.js";
import { dequantizeRow } from "../kernels/quant-matrix.js";
import type { Kernels } from "../kernels/types.js";
import { matrixBytes } from "../quant/formats.js";
import type { LowRankAddend } from "./lora-apply.js";
import type { ProjectionWeight, ServingWeights } from "./weights.js";

/** Bytes of the weights a decode step reads: every projection, the LM head (embeddings: one row a token). */
export function decodeWeightBytes(weights: ServingWeights): number {
  let bytes = matrixBytes(weights.lmHead);
  for (const lw of weights.layers) for (const slot of SLOTS) bytes += matrixBytes(lw[slot]);
  return bytes;
}

/**
 * y[N, out] (+)= alpha·x[N, in]·Wᵀ for a frozen weight in any format: the one
 * place the forward pass tells fp32 from the serving formats. bPacked: an fp32
 * W packed ahead for this product (PackedWeights.forward), or null.
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
  bPacked: Float32Array | null = null,
): void {
  if (w instanceof Float32Array) kern.matmul(x, w, y, N, out, inDim, false, true, accumulate, alpha, bPacked);
  else kern.matmulQuant(x, w, y, N, accumulate, alpha);
}

/**
 * A training graph's products with a frozen weight in any format (the
 * kernels' matmulQuantTrain for a serving format: bf16 dot products where
 * the kernels have them): transW false y[N, out] (+)= x[N, in]·Wᵀ, true
 * y[N, in] (+)= x[N, out]·W (the input gradient). bPacked: an fp32 W packed
 * ahead in that orientation (PackedWeights), or null. addend: a LoRA
 * branch's second product, added in the same pass over y (matmulLowRank for
 * fp32 W, matmulQuantTrain's low-rank term otherwise): y += scale·xa·op(b),
 * b being B [out, r] forward (used transposed) and the stacked A [r, in] for
 * the input gradient. bf16: a bf16 run's product (an int8 base then takes
 * bf16 dot products where the kernels have them, Kernels.matmulQuantTrain).
 */
export function matmulFrozen(
  kern: Kernels,
  x: Float32Array,
  w: ProjectionWeight,
  y: Float32Array,
  N: number,
  out: number,
  inDim: number,
  transW: boolean,
  accumulate: boolean,
  bPacked: Float32Array | null = null,
  addend: LowRankAddend | null = null,
  bf16 = false,
): void {
  if (!(w instanceof Float32Array)) {
    const lowRank = addend
      ? { a: addend.xa, b: addend.b, k: addend.r, transB: !transW, alpha: addend.scale }
      : undefined;
    kern.matmulQuantTrain(x, w, y, N, transW, accumulate, 1, lowRank, bf16);
  } else if (addend) {
    const { xa, b, r, scale } = addend;
    if (transW)
      kern.matmulLowRank(x, w, y, N, inDim, out, false, xa, b, r, false, scale, accumulate, bPacked);
    else kern.matmulLowRank(x, w, y, N, out, inDim, true, xa, b, r, true, scale, accumulate, bPacked);
  } else if (transW) kern.matmul(x, w, y, N, inDim, out, false, false, accumulate, 1, bPacked);
  else kern.matmul(x, w, y, N, out, inDim, false, true, accumulate, 1, bPacked);
}

/** Row `row` of an embedding table in any format, into out[0..cols). */
export function matrixRow(w: ProjectionWeight, row: number, cols: number, out: Float32Array): void {
  if (w instanceof Float32Array) out.set(w.subarray(row * cols, row * cols + cols));
  else dequantizeRow(w, row, out);
}

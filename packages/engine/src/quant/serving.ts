// A model's weights converted for serving in one format: every frozen
// projection, the embeddings and the LM head (one matrix when tied) are
// quantized; norms and biases stay fp32, and LoRA adapters run in fp32 on top
// (lora-apply.ts is untouched by the format). Training never sees these:
// it runs on the fp32 weights the model was loaded with.

import type { ModelConfig } from "../families/index.js";
import { SLOTS } from "../families/index.js";
import { dequantizeRow } from "../kernels/quant-matrix.js";
import type { Kernels, QuantMatrix } from "../kernels/types.js";
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

/** About how many weights one slice of servingWeightsAsync converts before it yields. */
const SLICE_WEIGHTS = 1 << 20;

/**
 * servingWeights without holding the thread: each matrix is converted in
 * slices of rows (about a million weights, a few milliseconds), yielding to
 * the event loop between slices, so a server converting a model for a new
 * format keeps answering the requests it is already serving.
 */
export async function servingWeightsAsync(
  weights: ModelWeights,
  config: ModelConfig,
  format: WeightFormat,
): Promise<ServingWeights> {
  if (format === "fp32") return weights;
  const convert = (w: Float32Array, rows: number, cols: number) => quantizeInSlices(format, w, rows, cols);
  const { hiddenSize: C, vocabSize: V } = config;
  const layers: LayerWeights<ProjectionWeight>[] = [];
  for (const lw of weights.layers) {
    const out: LayerWeights<ProjectionWeight> = { ...lw };
    for (const slot of SLOTS) {
      const shape = projectionShape(config, slot);
      out[slot] = await convert(lw[slot], shape.out, shape.in);
    }
    layers.push(out);
  }
  const embed = await convert(weights.embed, V, C);
  const lmHead = weights.lmHead === weights.embed ? embed : await convert(weights.lmHead, V, C);
  return { embed, layers, finalNorm: weights.finalNorm, lmHead };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** quantizeMatrix, a slice of rows at a time, each slice's arrays copied into the whole matrix's. */
async function quantizeInSlices(
  format: Exclude<WeightFormat, "fp32">,
  w: Float32Array,
  rows: number,
  cols: number,
): Promise<QuantMatrix> {
  const step = Math.max(1, Math.floor(SLICE_WEIGHTS / Math.max(1, cols)));
  if (rows <= step) return quantizeMatrix(format, w, rows, cols);
  let whole: QuantMatrix | null = null;
  for (let r0 = 0; r0 < rows; r0 += step) {
    await nextTurn();
    const n = Math.min(step, rows - r0);
    const part = quantizeMatrix(format, w.subarray(r0 * cols, (r0 + n) * cols), n, cols);
    if (!whole) {
      const data = new (part.data.constructor as new (length: number) => typeof part.data)(
        (part.data.length / n) * rows,
      );
      const scales = part.scales
        ? new (part.scales.constructor as new (length: number) => NonNullable<typeof part.scales>)(
            (part.scales.length / n) * rows,
          )
        : null;
      whole = { ...part, rows, data, scales } as QuantMatrix;
    }
    whole.data.set(part.data as never, (part.data.length / n) * r0);
    if (whole.scales && part.scales) whole.scales.set(part.scales as never, (part.scales.length / n) * r0);
  }
  return whole as QuantMatrix;
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

// A model's weights converted for serving in one format: every frozen
// projection, the embeddings and the LM head (one matrix when tied) are
// quantized; norms and biases stay fp32, and LoRA adapters run in fp32 on top
// (graph/lora-apply.ts is untouched by the format). Each layer's q/k/v and gate/up
// are joined into one matrix per group (quant/joined.ts). Training runs on the
// fp32 weights, or on bf16 / int8 ones converted the same way
// (training/train-precision.ts; the graph's products with them are
// graph/frozen-weights.ts). Converted from fp32 weights already in memory
// (servingWeights), or matrix by matrix as a checkpoint is read
// (readServingWeights), which never holds the fp32 model.

import type { ModelConfig } from "../families/index.js";
import { SLOTS } from "../families/index.js";
import {
  type LayerWeights,
  type ModelWeights,
  type ProjectionWeight,
  projectionShape,
  type ServingWeights,
} from "../graph/weights.js";
import type { QuantMatrix } from "../kernels/types.js";
import { matrixBytes, quantizeMatrix, type WeightFormat } from "../quant/formats.js";
import { joinProjections } from "../quant/joined.js";
import type { Tokenizer } from "../types.js";
import { type MatrixSource, readWeightsAs } from "./checkpoint.js";

/**
 * A model held for serving only, its base weights in `weightFormat` and no
 * fp32 copy of them (load.ts loadServingModel): generation runs on it,
 * training and logits() need the fp32 Model.
 */
export interface ServingModel {
  readonly dir: string;
  readonly config: ModelConfig;
  readonly tokenizer: Tokenizer;
  readonly weightFormat: WeightFormat;
  readonly weights: ServingWeights;
}

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
    return joinProjections(out);
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
  const convert = (w: Float32Array, rows: number, cols: number) =>
    quantizeMatrixAsync(format, memoryMatrix(w, rows, cols));
  const { hiddenSize: C, vocabSize: V } = config;
  const layers: LayerWeights<ProjectionWeight>[] = [];
  for (const lw of weights.layers) {
    const out: LayerWeights<ProjectionWeight> = { ...lw };
    for (const slot of SLOTS) {
      const shape = projectionShape(config, slot);
      out[slot] = await convert(lw[slot], shape.out, shape.in);
    }
    await nextTurn();
    layers.push(joinProjections(out));
  }
  const embed = await convert(weights.embed, V, C);
  const lmHead = weights.lmHead === weights.embed ? embed : await convert(weights.lmHead, V, C);
  return { embed, layers, finalNorm: weights.finalNorm, lmHead };
}

/**
 * A folder's weights in `format`, each matrix converted a slice of rows at a
 * time as it is read from the checkpoint (checkpoint.ts readWeightsAs): no
 * more than one slice (about a million weights) is ever held in fp32.
 * fp32: the weights as read, also a slice at a time (readMatrixAsync).
 */
export async function readServingWeights(
  dir: string,
  config: ModelConfig,
  format: WeightFormat,
): Promise<ServingWeights> {
  if (format === "fp32") return readWeightsAs(dir, config, readMatrixAsync);
  const weights = await readWeightsAs(dir, config, (matrix) => quantizeMatrixAsync(format, matrix));
  const layers: LayerWeights<ProjectionWeight>[] = [];
  for (const lw of weights.layers) {
    await nextTurn(); // a layer's copy is a few milliseconds
    layers.push(joinProjections(lw));
  }
  return { ...weights, layers };
}

/**
 * A checkpoint matrix in fp32 without holding the thread: read (and decoded
 * from F16 / BF16) a slice of rows at a time, yielding to the event loop
 * before each slice, so a process loading a model keeps serving the others
 * (reading a 1 GB checkpoint in one piece would hold it for about half a second).
 */
export async function readMatrixAsync(matrix: MatrixSource): Promise<Float32Array> {
  const { rows, cols } = matrix;
  const out = new Float32Array(rows * cols);
  const step = Math.max(1, Math.floor(SLICE_WEIGHTS / Math.max(1, cols)));
  for (let r0 = 0; r0 < rows; r0 += step) {
    await nextTurn();
    const n = Math.min(step, rows - r0);
    out.set(matrix.readRows(r0, n), r0 * cols);
  }
  return out;
}

/** An fp32 matrix in memory as a MatrixSource (its rows are views, nothing copied). */
function memoryMatrix(w: Float32Array, rows: number, cols: number): MatrixSource {
  if (w.length < rows * cols)
    throw new RangeError(`quantize: ${w.length} weights, the shape needs ${rows * cols}`);
  return {
    rows,
    cols,
    read: () => w.slice(0, rows * cols),
    readRows: (first, count) => w.subarray(first * cols, (first + count) * cols),
  };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * quantizeMatrix without holding the thread: a slice of rows at a time,
 * yielding before each slice, each slice's arrays copied into the whole matrix's.
 */
async function quantizeMatrixAsync(
  format: Exclude<WeightFormat, "fp32">,
  matrix: MatrixSource,
): Promise<QuantMatrix> {
  const { rows, cols } = matrix;
  const step = Math.max(1, Math.floor(SLICE_WEIGHTS / Math.max(1, cols)));
  if (rows <= step) {
    await nextTurn();
    return quantizeMatrix(format, matrix.readRows(0, rows), rows, cols);
  }
  let whole: QuantMatrix | null = null;
  for (let r0 = 0; r0 < rows; r0 += step) {
    await nextTurn();
    const n = Math.min(step, rows - r0);
    const part = quantizeMatrix(format, matrix.readRows(r0, n), n, cols);
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

/** What a model's weights occupy: every matrix (a tied head once) and, of those, the fp32 ones. */
export function heldWeightBytes(weights: ServingWeights): { matrices: number; fp32Matrices: number } {
  const matrices: ProjectionWeight[] = [weights.embed];
  if (weights.lmHead !== weights.embed) matrices.push(weights.lmHead);
  for (const lw of weights.layers) for (const slot of SLOTS) matrices.push(lw[slot]);
  let all = 0;
  let fp32Matrices = 0;
  for (const w of matrices) {
    const bytes = matrixBytes(w);
    all += bytes;
    if (w instanceof Float32Array) fp32Matrices += bytes;
  }
  return { matrices: all, fp32Matrices };
}

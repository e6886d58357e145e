// The weight formats a model can be served in, and the one quantizer entry
// point. fp32 is the format the engine loads and trains in; the others hold
// the frozen projections (and the embeddings / LM head) in fewer bytes, so
// decode, which is bound by memory bandwidth, reads fewer bytes per token.
import type { QuantMatrix } from "../kernels/types.js";
import { encodeBf16 } from "./half.js";
import { quantizeInt8 } from "./int8.js";
import { Q4_BLOCK, quantizeQ4_0 } from "./q4.js";

export const WEIGHT_FORMATS = ["fp32", "bf16", "int8", "q4_0"] as const;
export type WeightFormat = (typeof WEIGHT_FORMATS)[number];

/** Bytes one weight takes in each format (int8's per-row scale and Q4_0's block scale included, for long rows). */
export const BYTES_PER_WEIGHT: Record<WeightFormat, number> = { fp32: 4, bf16: 2, int8: 1, q4_0: 18 / 32 };

export function isWeightFormat(v: unknown): v is WeightFormat {
  return typeof v === "string" && (WEIGHT_FORMATS as readonly string[]).includes(v);
}

/**
 * W [rows, cols] in a format. A q4_0 matrix whose rows are not whole 32-weight
 * blocks is held as int8 instead (as llama.cpp falls back per tensor).
 */
export function quantizeMatrix(
  format: Exclude<WeightFormat, "fp32">,
  w: Float32Array,
  rows: number,
  cols: number,
): QuantMatrix {
  if (w.length < rows * cols)
    throw new RangeError(`quantize: ${w.length} weights, the shape needs ${rows * cols}`);
  const view = w.subarray(0, rows * cols);
  switch (format) {
    case "bf16":
      return { format, rows, cols, data: encodeBf16(view), scales: null };
    case "int8":
      return quantizeInt8(view, rows, cols);
    case "q4_0":
      return cols % Q4_BLOCK === 0 ? quantizeQ4_0(view, rows, cols) : quantizeInt8(view, rows, cols);
  }
}

/** Bytes a matrix occupies (data and scales). */
export function matrixBytes(w: Float32Array | QuantMatrix): number {
  if (w instanceof Float32Array) return w.byteLength;
  return w.data.byteLength + (w.scales?.byteLength ?? 0);
}

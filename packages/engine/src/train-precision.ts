// A training run's precision (docs/training-precision.md): which format holds
// the frozen base weights and how the products with them are computed. The
// LoRA factors, their gradients, the optimizer state, norms, softmax, the
// loss and the residual stream are fp32 in every precision.

import { EngineError } from "./errors.js";
import { type ModelConfig, SLOTS } from "./families/index.js";
import type { Kernels } from "./kernels/types.js";
import { servingWeights } from "./quant/serving.js";
import type { ModelWeights, ProjectionWeight, ServingWeights } from "./weights.js";

/**
 * The values of a job's `precision`: "fp32" (every product in fp32), "bf16"
 * (base weights held in bf16, their forward and input-gradient products in
 * bf16 with fp32 sums, as PyTorch's bf16 autocast), "auto" (bf16 where the
 * kernels have native bf16 dot products, Kernels.bf16Dot, else fp32).
 */
export const TRAINING_PRECISIONS = ["fp32", "bf16", "auto"] as const;
export type TrainingPrecision = (typeof TRAINING_PRECISIONS)[number];

/** What a job asks for when it names no precision: bf16 where the CPU has bf16 dot products. */
export const DEFAULT_JOB_PRECISION: TrainingPrecision = "auto";

/**
 * The values of a job's `baseWeights`: "int8" holds the frozen base weights
 * in the serving formats' int8 layout (per-output-channel scales), a quarter
 * of fp32's memory, dequantized inside the products (QLoRA-style memory).
 */
export const BASE_WEIGHT_FORMATS = ["int8"] as const;
export type BaseWeightFormat = (typeof BASE_WEIGHT_FORMATS)[number];

/** What a run actually does: its compute precision and the format its base weights are held in. */
export interface ResolvedPrecision {
  precision: "fp32" | "bf16";
  baseWeights: "fp32" | "bf16" | "int8";
}

/**
 * The run's precision from the job's settings (omitted precision: "fp32", the
 * engine's exact path; a job layer passes DEFAULT_JOB_PRECISION). A value not
 * understood is an EngineError naming the field.
 */
export function resolvePrecision(
  precision: unknown,
  baseWeights: unknown,
  kern: Pick<Kernels, "bf16Dot">,
): ResolvedPrecision {
  const p = precision ?? "fp32";
  if (!(TRAINING_PRECISIONS as readonly unknown[]).includes(p)) {
    throw new EngineError(
      "invalid_argument",
      `precision must be "fp32", "bf16" or "auto" (got ${JSON.stringify(precision)})`,
    );
  }
  if (baseWeights !== undefined && !(BASE_WEIGHT_FORMATS as readonly unknown[]).includes(baseWeights)) {
    throw new EngineError(
      "invalid_argument",
      `baseWeights must be "int8" or omitted (got ${JSON.stringify(baseWeights)})`,
    );
  }
  const compute = p === "auto" ? (kern.bf16Dot ? "bf16" : "fp32") : (p as "fp32" | "bf16");
  return { precision: compute, baseWeights: baseWeights === "int8" ? "int8" : compute };
}

/**
 * The weights a run trains against: fp32 as loaded, or every frozen matrix
 * (projections, embeddings, LM head; one matrix when tied) converted to the
 * run's base format. Norms and biases stay fp32. Weights already held in that
 * format (a model read straight into it) are used as they are, so no fp32
 * copy need exist.
 */
export function trainingWeights(
  weights: ServingWeights,
  config: ModelConfig,
  resolved: ResolvedPrecision,
): ServingWeights {
  const format = resolved.baseWeights;
  const held = heldFormat(weights);
  if (held === format) return weights;
  if (held !== "fp32") {
    throw new EngineError(
      "invalid_argument",
      `the model's weights are held in ${held}; a ${format} run needs them in fp32 or ${format}`,
    );
  }
  return servingWeights(weights as ModelWeights, config, format);
}

/** The one format every frozen matrix of these weights is held in ("mixed" when they differ). */
function heldFormat(weights: ServingWeights): string {
  const of = (w: ProjectionWeight) => (w instanceof Float32Array ? "fp32" : w.format);
  const formats = new Set<string>([of(weights.embed), of(weights.lmHead)]);
  for (const lw of weights.layers) for (const slot of SLOTS) formats.add(of(lw[slot]));
  return formats.size === 1 ? [...formats][0] : "mixed";
}

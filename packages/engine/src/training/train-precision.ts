// A training run's precision (docs/training-precision.md): which format holds
// the frozen base weights and how the products with them are computed. The
// LoRA factors, their gradients, the optimizer state, norms, softmax, the
// loss and the residual stream are fp32 in every precision.

import { allowedValues, EngineError } from "../errors.js";
import { type ModelConfig, SLOTS } from "../families/index.js";
import type { GraphOptions } from "../graph/model.js";
import {
  type LayerWeights,
  type ProjectionWeight,
  projectionShape,
  type ServingWeights,
} from "../graph/weights.js";
import type { Kernels } from "../kernels/types.js";
import { quantizeMatrix } from "../quant/formats.js";
import { holdsBf16Values } from "../quant/half.js";

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
      `precision must be ${allowedValues(TRAINING_PRECISIONS)} (got ${JSON.stringify(precision)})`,
    );
  }
  if (baseWeights !== undefined && !(BASE_WEIGHT_FORMATS as readonly unknown[]).includes(baseWeights)) {
    throw new EngineError(
      "invalid_argument",
      `baseWeights must be ${allowedValues(BASE_WEIGHT_FORMATS)} or omitted (got ${JSON.stringify(baseWeights)})`,
    );
  }
  const compute = p === "auto" ? (kern.bf16Dot ? "bf16" : "fp32") : (p as "fp32" | "bf16");
  return { precision: compute, baseWeights: baseWeights === "int8" ? "int8" : compute };
}

/** What a run's precision asks of its training graph: in bf16, attention's matmuls and an int8 base's products on bf16 operands. */
export function graphPrecision(resolved: ResolvedPrecision): Pick<GraphOptions, "bf16"> {
  return { bf16: resolved.precision === "bf16" };
}

/**
 * The weights a run trains against: fp32 as loaded, or every frozen matrix a
 * product reads (the projections and the LM head) in the run's base format.
 * The embedding table keeps its values: its rows are looked up, not
 * multiplied, and an fp32 lookup starts the residual stream from the exact
 * embeddings, as autocast does (F.embedding is not an autocast op). Rounding
 * the lookups to bf16 moved a random model's loss 4× further from fp32 than
 * autocast's own distance (docs/training-precision.md). Where every value of
 * the table is a bf16 value (a bf16 checkpoint, as most are published), a
 * bf16 or int8 run holds it in bf16, exactly, at half the bytes, and a tied
 * bf16 head is that same matrix; otherwise the table stays fp32 and a tied
 * head gets its own copy in the base format. Norms and biases stay fp32.
 * Matrices already in the run's format (a model read straight into it) are
 * used as they are, so no fp32 copy need exist.
 */
export function trainingWeights(
  weights: ServingWeights,
  config: ModelConfig,
  resolved: ResolvedPrecision,
): ServingWeights {
  const format = resolved.baseWeights;
  const convert = (w: ProjectionWeight, rows: number, cols: number): ProjectionWeight => {
    const held = w instanceof Float32Array ? "fp32" : w.format;
    if (held === format) return w;
    if (!(w instanceof Float32Array)) {
      throw new EngineError(
        "invalid_argument",
        `the model's weights are held in ${held}; a ${format} run needs them in fp32 or ${format}`,
      );
    }
    return format === "fp32" ? w : quantizeMatrix(format, w, rows, cols);
  };
  const tied = weights.lmHead === weights.embed;
  const embed =
    format !== "fp32" && weights.embed instanceof Float32Array && holdsBf16Values(weights.embed)
      ? quantizeMatrix("bf16", weights.embed, config.vocabSize, config.hiddenSize)
      : weights.embed;
  const layers = weights.layers.map((lw) => {
    const out: LayerWeights<ProjectionWeight> = { ...lw, joined: undefined };
    for (const slot of SLOTS) {
      const shape = projectionShape(config, slot);
      out[slot] = convert(lw[slot], shape.out, shape.in);
    }
    return out;
  });
  const lmHead =
    tied && embed !== weights.embed && format === "bf16"
      ? embed
      : convert(weights.lmHead, config.vocabSize, config.hiddenSize);
  const same =
    embed === weights.embed &&
    lmHead === weights.lmHead &&
    layers.every((lw, l) => SLOTS.every((s) => lw[s] === weights.layers[l][s]));
  return same ? weights : { embed, layers, finalNorm: weights.finalNorm, lmHead };
}

// The allowed values of a job's precision and base weights and of a
// deployment's weight format. The engine owns what they mean (and the
// defaults); the wire carries the same lists so the server's routes, the SDK
// and Studio check requests without importing the engine.
// packages/server/src/wire-engine.test.ts fails if the lists drift from the engine's.

/** A job's `precision` (docs/training-precision.md): "fp32", "bf16", or "auto" (bf16 where the CPU has bf16 dot products). */
export const TRAINING_PRECISIONS = ["fp32", "bf16", "auto"] as const;
export type TrainingPrecision = (typeof TRAINING_PRECISIONS)[number];

/** A job's `baseWeights`: "int8" holds the frozen base weights in int8 (QLoRA-style memory). */
export const BASE_WEIGHT_FORMATS = ["int8"] as const;
export type BaseWeightFormat = (typeof BASE_WEIGHT_FORMATS)[number];

/** A deployment's `weightFormat` (docs/serving-formats.md). */
export const WEIGHT_FORMATS = ["fp32", "bf16", "int8", "q4_0"] as const;
export type WeightFormat = (typeof WEIGHT_FORMATS)[number];

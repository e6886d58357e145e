// How much memory training a LoRA on a base model takes, from its config
// alone, so a job on a model that cannot fit is refused before any weight is
// downloaded or loaded (docs/hub.md#memory). The engine holds every weight as
// F32 whatever the checkpoint's dtype, trains only the LoRA factors with
// AdamW, and keeps each layer's activations of a micro-batch for the backward
// pass. The figure is an estimate of the peak, rounded up on purpose.
import {
  loraModulesOf,
  type ModelConfig,
  packedWeightBytes,
  parameterCount,
  resolveHyperparameters,
  type TrainHyperparameters,
} from "@svc/engine";

export interface TrainingMemoryEstimate {
  /** Base weights as F32: parameters × 4. */
  weightBytes: number;
  /**
   * The projections and LM head packed ahead for the matmuls, both
   * orientations, when they fit the engine's budget (SVC_PACKED_WEIGHTS_MB; else 0).
   */
  packedBytes: number;
  /** LoRA factors with their gradients and AdamW's two moments: LoRA parameters × 16. */
  loraBytes: number;
  /** Saved activations of one micro-batch (batchSize × maxLength tokens) through every layer, and the LM head's chunk. */
  activationBytes: number;
  /** The process itself (Node.js, tokenizer, buffers). */
  runtimeBytes: number;
  totalBytes: number;
}

const F32 = 4;
const RUNTIME_BYTES = 512 * 2 ** 20;
/** Rows of logits the engine's LM head computes at once (lm-head.ts: at least 256 rows per chunk). */
const LM_HEAD_ROWS = 256;

export function estimateTrainingMemory(
  config: ModelConfig,
  hyperparameters: TrainHyperparameters,
): TrainingMemoryEstimate {
  const settings = resolveHyperparameters(hyperparameters);
  const C = config.hiddenSize;
  const F = config.intermediateSize;
  const Q = config.numAttentionHeads * config.headDim;
  const K = config.numKeyValueHeads * config.headDim;
  const L = config.numHiddenLayers;
  const width: Record<string, number> = { q: Q, k: K, v: K, o: C, gate: F, up: F, down: C };
  const inputOf: Record<string, number> = { o: Q, down: F };

  const targets = settings.lora.targetModules;
  const modules = loraModulesOf(config).filter(
    (m) => targets.includes("all-linear") || targets.includes(m.name),
  );
  let loraParameters = 0;
  for (const module of modules) {
    const input = inputOf[module.slots[0]!] ?? C;
    const output = module.slots.reduce((sum, slot) => sum + (width[slot] ?? C), 0);
    loraParameters += L * settings.lora.r * (input + output);
  }

  // Per token and layer: the block's inputs, norms, projections and MLP
  // intermediates kept for backward (about 6C + 2Q + 2K + 3F values), plus one
  // row of attention probabilities per head over the sequence.
  const tokens = settings.batchSize * settings.maxLength;
  const perTokenLayer = 6 * C + 2 * Q + 2 * K + 3 * F + config.numAttentionHeads * settings.maxLength;
  const activations =
    tokens * L * perTokenLayer * F32 + 2 * LM_HEAD_ROWS * config.vocabSize * F32 + 4 * tokens * C * F32;

  const weightBytes = parameterCount(config) * F32;
  // the matrices a step multiplies by: every projection and the LM head (packed-weights.ts)
  const projections = L * (C * (Q + 2 * K) + Q * C + 3 * C * F);
  const packedBytes = packedWeightBytes((projections + config.vocabSize * C) * F32);
  const loraBytes = loraParameters * 4 * F32;
  const totalBytes = weightBytes + packedBytes + loraBytes + activations + RUNTIME_BYTES;
  return {
    weightBytes,
    packedBytes,
    loraBytes,
    activationBytes: activations,
    runtimeBytes: RUNTIME_BYTES,
    totalBytes,
  };
}

/** The least memory any use of the model takes (serving it): its weights as F32 and the process. */
export function estimateServingMemory(config: ModelConfig): { weightBytes: number; totalBytes: number } {
  const weightBytes = parameterCount(config) * F32;
  return { weightBytes, totalBytes: weightBytes + RUNTIME_BYTES };
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value >= 100 || unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

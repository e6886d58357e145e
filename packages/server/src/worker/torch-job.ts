// What the torch backend's process (packages/trainer-torch) is given for one
// job: the engine's reading of the model (its block description: ModelConfig
// plus the family's checkpoint layout), the examples the engine tokenized and
// fitted to maxLength, the hyperparameters with the engine's defaults applied
// and the engine's planned step count. The Python side decides none of these,
// so dataset validation, truncation, defaults and the step count are the
// engine's by construction (docs/gpu-training.md).
import { fileURLToPath } from "node:url";
import {
  FAMILIES,
  type ModelConfig,
  type PreparedSets,
  plannedSteps,
  resolveHyperparameters,
  type TrainHyperparameters,
} from "@svc/engine";
import type { ModelHeader } from "./training-sets.js";

/** packages/trainer-torch (the Python package), from packages/server/dist/src/worker/. */
export const TRAINER_TORCH_DIR = fileURLToPath(new URL("../../../../trainer-torch", import.meta.url));

/** The engine's ModelConfig with its family's layout, as JSON (Float32Arrays as number arrays). */
export function blockDescription(config: ModelConfig): Record<string, unknown> {
  const family = FAMILIES.find((f) => f.name === config.family);
  if (!family) throw new Error(`no family ${config.family}`);
  return {
    ...config,
    ropes: config.ropes.map((rope) => ({
      rotaryDim: rope.rotaryDim,
      invFreq: [...rope.invFreq],
      attentionFactor: rope.attentionFactor,
      ...(rope.long
        ? { long: { invFreq: [...rope.long.invFreq], originalMaxPositions: rope.long.originalMaxPositions } }
        : {}),
    })),
    norms: family.norms,
    normPlusOne: family.normPlusOne,
    modules: family.modules,
  };
}

export interface TorchJobOptions {
  /** The base model's folder, config and tokenizer (its weights are PyTorch's to read). */
  model: ModelHeader;
  prepared: PreparedSets;
  hyperparameters: TrainHyperparameters;
  outputDir: string;
  resumeFrom: string | null;
  /** Torch's intra-op threads (unset: torch's default). */
  threads?: number;
  /** Recompute each decoder layer's activations in the backward pass, trading compute for memory. */
  gradientCheckpointing?: boolean;
  /** Pack each micro-batch's sequences into rows of up to maxLength tokens: the same losses, less padding. */
  packing?: boolean;
  /** Written to the adapters' adapter_config.json: a Hub model's id and commit (default: the model's folder). */
  baseModelName?: string;
  baseModelRevision?: string;
}

export function torchJob(options: TorchJobOptions): Record<string, unknown> {
  const { model, prepared } = options;
  const examples = (set: PreparedSets["train"] | null) =>
    set?.examples.map((e) => ({ inputIds: [...e.inputIds], labels: [...e.labels] })) ?? null;
  return {
    model: blockDescription(model.config),
    modelDir: model.dir,
    baseModelName: options.baseModelName ?? model.dir,
    baseModelRevision: options.baseModelRevision ?? null,
    padTokenId: model.tokenizer.padTokenId,
    settings: resolveHyperparameters(options.hyperparameters),
    totalSteps: plannedSteps(prepared.train.examples.length, options.hyperparameters),
    train: examples(prepared.train),
    eval: examples(prepared.eval),
    outputDir: options.outputDir,
    resumeFrom: options.resumeFrom,
    ...(options.threads ? { threads: options.threads } : {}),
    ...(options.gradientCheckpointing ? { gradientCheckpointing: true } : {}),
    ...(options.packing ? { packing: true } : {}),
  };
}

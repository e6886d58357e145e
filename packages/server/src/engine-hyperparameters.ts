// A job's hyperparameters as the wire carries them, turned into the engine's:
// lora.maxLength becomes the engine's top-level maxLength, and no targetModules
// means every LoRA target. The job runner trains with them; POST /v1/jobs
// bounds the job's planned steps with them.
import { ALL_LORA_TARGETS, type LoraTarget, type TrainHyperparameters } from "@svc/engine";
import type { JobHyperparameters } from "./wire.js";

export function engineHyperparameters(hp: JobHyperparameters): TrainHyperparameters {
  const { lora, ...rest } = hp;
  return {
    ...rest,
    ...(lora.maxLength !== undefined ? { maxLength: lora.maxLength } : {}),
    lora: {
      r: lora.r,
      alpha: lora.alpha,
      targetModules: (lora.targetModules as LoraTarget[] | undefined) ?? [...ALL_LORA_TARGETS],
    },
  };
}

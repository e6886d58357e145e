// A job's hyperparameters as the wire carries them, turned into the engine's:
// lora.maxLength becomes the engine's top-level maxLength, and no targetModules
// means every LoRA target. The job runner trains with them; POST /v1/jobs
// bounds the job's planned steps with them. No targetModules means PEFT's
// "all-linear": every linear layer of the model's family but the output head.
import type { TrainHyperparameters } from "@svc/engine";
import type { JobHyperparameters } from "./wire.js";

export function engineHyperparameters(hp: JobHyperparameters): TrainHyperparameters {
  const { lora, ...rest } = hp;
  return {
    ...rest,
    ...(lora.maxLength !== undefined ? { maxLength: lora.maxLength } : {}),
    lora: {
      r: lora.r,
      alpha: lora.alpha,
      targetModules: lora.targetModules ?? ["all-linear"],
    },
  };
}

// A job's hyperparameters as the wire carries them, turned into the engine's:
// lora.maxLength becomes the engine's top-level maxLength, and no targetModules
// means every LoRA target. The job runner trains with them; POST /v1/jobs
// bounds the job's planned steps with them. No targetModules means PEFT's
// "all-linear": every linear layer of the model's family but the output head.
// A DPO job's stored hyperparameters carry its method (routes/jobs.ts), which
// passes through to the training process.
import type {
  BaseWeightFormat,
  GrpoHyperparameters,
  PreferenceTrainHyperparameters,
  TrainingPrecision,
} from "@svc/engine";
import type { JobGrader, JobHyperparameters, JobReward, TorchModel, TrainingMethod } from "@svc/wire";

/**
 * What a training process trains with: the engine's hyperparameters, DPO's, GRPO's, the method, graders and
 * precision (absent: a job made before precisions existed, which trained in fp32).
 */
export type EngineJobHyperparameters = PreferenceTrainHyperparameters &
  GrpoHyperparameters & {
    method?: TrainingMethod;
    graders?: JobGrader[];
    /** The trainer's rewards, scored by its process (worker/trainer-rewards.ts). */
    rewards?: JobReward[];
    precision?: TrainingPrecision;
    baseWeights?: BaseWeightFormat;
  };

/** What builds the model on the torch backend (hyperparameters.torchModel; default svc's decoder). */
export function torchModelOf(hp: JobHyperparameters): TorchModel {
  return hp.torchModel ?? "svc";
}

export function engineHyperparameters(
  hp: JobHyperparameters & {
    method?: TrainingMethod;
    precision?: TrainingPrecision;
    baseWeights?: BaseWeightFormat;
  },
): EngineJobHyperparameters {
  // torchModel is the torch backend's choice of implementation, not a training setting (torchModelOf).
  const { lora, torchModel: _, ...rest } = hp;
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

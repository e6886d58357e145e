// OpenAI's supervised hyperparameters and svc's, both ways
// (docs/openai-fine-tuning.md#hyperparameters). Each "auto" resolves by one
// rule, and the job shows the resolved numbers:
// - n_epochs "auto": AUTO_EPOCHS;
// - batch_size "auto": the engine's default batch (4), or the training file's
//   rows when it has fewer;
// - learning_rate_multiplier "auto": 1. svc's learning rate is the multiplier
//   times BASE_LEARNING_RATE, the engine's default rate for LoRA (a DPO job's:
//   DPO_BASE_LEARNING_RATE, fine-tuning-method.ts).
// A checkpoint is saved at the end of each epoch, as OpenAI does, and a
// validation file is evaluated then too.
import { resolveHyperparameters } from "@svc/engine";
import { DEFAULT_LORA, hyperparameterRanges, type JobHyperparameters, type JobLimits } from "@svc/wire";
import { engineHyperparameters } from "../../engine-hyperparameters.js";

/** svc's learning rate for learning_rate_multiplier 1. */
export const BASE_LEARNING_RATE = 2e-4;
export const AUTO_EPOCHS = 3;
/** The largest n_epochs OpenAI takes. */
export const MAX_EPOCHS = 50;

/** The supervised hyperparameters as a fine-tuning job shows them: numbers, never "auto". */
export interface SupervisedHyperparameters {
  n_epochs: number;
  batch_size: number;
  learning_rate_multiplier: number;
}

/** As the request gives them: a number, "auto", or left out (the same as "auto"). */
export type RequestedHyperparameters = Partial<Record<keyof SupervisedHyperparameters, number | "auto">>;

/** The numbers "auto" and left-out values resolve to for a training file of `rows` rows. */
export function resolveSupervised(
  requested: RequestedHyperparameters,
  rows: number,
  limits: JobLimits,
): SupervisedHyperparameters {
  const pick = (value: number | "auto" | undefined, auto: number) =>
    value === undefined || value === "auto" ? auto : value;
  const engineBatch = resolveHyperparameters(engineHyperparameters({ lora: { ...DEFAULT_LORA } })).batchSize;
  return {
    n_epochs: pick(requested.n_epochs, AUTO_EPOCHS),
    batch_size: pick(requested.batch_size, Math.max(1, Math.min(engineBatch, rows, limits.batchSize))),
    learning_rate_multiplier: pick(requested.learning_rate_multiplier, 1),
  };
}

/** svc's hyperparameters for resolved OpenAI ones: LoRA at svc's default, a checkpoint (and eval) per epoch. */
export function svcHyperparameters(
  hp: SupervisedHyperparameters,
  seed: number,
  rows: number,
  withValidation: boolean,
  limits: JobLimits,
  baseRate = BASE_LEARNING_RATE,
): JobHyperparameters {
  // An epoch longer than the server's step limit is refused by the job's step bound, which names n_epochs.
  const stepsPerEpoch = Math.min(Math.max(1, Math.ceil(rows / hp.batch_size)), limits.maxSteps);
  // learningRate is bounded at 1 (@svc/wire's limits.ts): a larger multiplier is refused where it is read.
  const learningRate = hp.learning_rate_multiplier * baseRate;
  return {
    lora: { ...DEFAULT_LORA },
    numTrainEpochs: hp.n_epochs,
    batchSize: hp.batch_size,
    learningRate,
    seed,
    saveSteps: stepsPerEpoch,
    ...(withValidation ? { evalSteps: stepsPerEpoch } : {}),
  };
}

/** The largest learning_rate_multiplier svc's learning-rate bound allows. */
export const MAX_MULTIPLIER = (hyperparameterRanges().learningRate.max as number) / BASE_LEARNING_RATE;

/** What any svc job (svc start, POST /v1/jobs, this API) trains with, in OpenAI's terms. */
export function supervisedOf(
  hp: JobHyperparameters,
  baseRate = BASE_LEARNING_RATE,
): SupervisedHyperparameters {
  const s = resolveHyperparameters(engineHyperparameters(hp));
  return {
    n_epochs: s.numTrainEpochs,
    batch_size: s.batchSize,
    learning_rate_multiplier: s.learningRate / baseRate,
  };
}

/** The seed a job trains with (the engine's default when it names none). */
export const seedOf = (hp: JobHyperparameters): number =>
  resolveHyperparameters(engineHyperparameters(hp)).seed;

// OpenAI's `method` on POST /v1/fine_tuning/jobs, and how an svc job's method
// reads back on the fine_tuning.job object (docs/openai-fine-tuning.md#methods):
// - { type: "supervised", supervised: { hyperparameters } } (and the legacy
//   top-level hyperparameters) is svc's method "sft";
// - { type: "dpo", dpo: { hyperparameters: { beta, n_epochs, batch_size,
//   learning_rate_multiplier } } } is svc's method "dpo" with the sigmoid loss.
//   n_epochs and batch_size resolve as supervised ones do; beta "auto" (or left
//   out) is left out of the svc job, so the engine's default (0.1) applies, and
//   the job shows that number; the multiplier scales DPO_BASE_LEARNING_RATE.
// - { type: "reinforcement", reinforcement: { grader, hyperparameters } } is
//   svc's method "grpo" with that grader (fine-tuning-reinforcement.ts).
import { DEFAULT_BETA } from "@svc/engine";
import {
  type CreateJobRequest,
  hyperparameterRanges,
  type Job,
  type JobHyperparameters,
  type JobLimits,
  type TrainingLogEvent,
  type TrainingMethod,
} from "@svc/wire";
import { OpenAiError, refuseParam } from "../../http/openai-error.js";
import { type Check, inRange, object, oneOf, optional } from "../../http/validate.js";
import {
  BASE_LEARNING_RATE,
  MAX_EPOCHS,
  type RequestedHyperparameters,
  resolveSupervised,
  type SupervisedHyperparameters,
  supervisedOf,
  svcHyperparameters,
} from "./fine-tuning-hyperparameters.js";
import {
  GRPO_BASE_LEARNING_RATE,
  type ReinforcementHyperparameters,
  type RequestedReinforcementHyperparameters,
  reinforcementCheck,
  reinforcementOf,
  svcReinforcement,
} from "./fine-tuning-reinforcement.js";
import { fileId } from "./openai-ids.js";

/**
 * svc's learning rate for a DPO job's learning_rate_multiplier 1: half the
 * supervised base. DPO's gradient pushes the log-probability ratio against the
 * reference, and its sigmoid saturates once the adapter has moved; a smaller
 * step keeps the adapter near the reference, as OpenAI's and TRL's defaults for
 * preference tuning sit below their supervised ones. 1e-4 is the low end of
 * the range docs/post-training.md gives for small models.
 */
export const DPO_BASE_LEARNING_RATE = 1e-4;

const BASE_RATE: Record<TrainingMethod, number> = {
  sft: BASE_LEARNING_RATE,
  dpo: DPO_BASE_LEARNING_RATE,
  grpo: GRPO_BASE_LEARNING_RATE,
};
const MAX_RATE = hyperparameterRanges().learningRate.max as number;

/** A number within its check, or "auto". */
const autoOr =
  (check: Check<number>): Check<number | "auto"> =>
  (value, path) =>
    value === "auto" ? "auto" : check(value, path);

/** n_epochs, batch_size and learning_rate_multiplier, whose multiplier is bounded by svc's rate bound at `baseRate`. */
export const hyperparametersCheck = (limits: JobLimits, baseRate = BASE_LEARNING_RATE) => ({
  n_epochs: optional(autoOr(inRange({ integer: true, min: 1, max: MAX_EPOCHS }))),
  batch_size: optional(autoOr(inRange({ integer: true, min: 1, max: limits.batchSize }))),
  learning_rate_multiplier: optional(
    autoOr(inRange({ integer: false, exclusiveMin: 0, max: MAX_RATE / baseRate })),
  ),
  reasoning_effort: optional((_value: unknown, path: string): never => {
    throw refuseParam(path, `"${path}": svc's models are not reasoning models; leave reasoning_effort out`);
  }),
});

export type RequestedDpoHyperparameters = RequestedHyperparameters & { beta?: number | "auto" };

/** The request's method, parsed: the type and its hyperparameters as given. */
export type RequestedMethod =
  | { type: "supervised"; hyperparameters: RequestedHyperparameters }
  | { type: "dpo"; hyperparameters: RequestedDpoHyperparameters }
  | {
      type: "reinforcement";
      grader: Record<string, unknown>;
      hyperparameters: RequestedReinforcementHyperparameters;
    };

/** method: "supervised", "dpo" and "reinforcement", each with its own hyperparameters. */
export const methodCheck =
  (limits: JobLimits): Check<RequestedMethod> =>
  (value, path) => {
    const type = typeof value === "object" && value !== null ? (value as { type?: unknown }).type : undefined;
    if (type === "reinforcement") {
      const parsed = object({
        type: oneOf(["reinforcement"] as const),
        reinforcement: reinforcementCheck(hyperparametersCheck(limits, GRPO_BASE_LEARNING_RATE)),
      })(value, path);
      return {
        type: "reinforcement",
        grader: parsed.reinforcement.grader,
        hyperparameters: (parsed.reinforcement.hyperparameters ??
          {}) as RequestedReinforcementHyperparameters,
      };
    }
    if (type === "dpo") {
      const dpo = object({
        type: oneOf(["dpo"] as const),
        dpo: optional(
          object({
            hyperparameters: optional(
              object({
                ...hyperparametersCheck(limits, DPO_BASE_LEARNING_RATE),
                beta: optional(autoOr(inRange(hyperparameterRanges().dpoBeta))),
              }),
            ),
          }),
        ),
      })(value, path);
      return { type: "dpo", hyperparameters: dpo.dpo?.hyperparameters ?? {} };
    }
    // "dpo" and "reinforcement" were parsed above: listed here so that an unknown type's refusal names all three.
    const supervised = object({
      type: oneOf(["supervised", "dpo", "reinforcement"] as const),
      supervised: optional(object({ hyperparameters: optional(object(hyperparametersCheck(limits))) })),
    })(value, path);
    return { type: "supervised", hyperparameters: supervised.supervised?.hyperparameters ?? {} };
  };

/** createJob's method and hyperparameters for a parsed OpenAI method, its "auto"s resolved. */
export function svcTraining(
  method: RequestedMethod,
  seed: number,
  rows: number,
  withValidation: boolean,
  limits: JobLimits,
): Pick<CreateJobRequest, "method" | "graders"> & { hyperparameters: JobHyperparameters } {
  if (method.type === "reinforcement")
    return svcReinforcement(method.grader, method.hyperparameters, seed, rows, withValidation, limits);
  const resolved = resolveSupervised(method.hyperparameters, rows, limits);
  if (method.type === "supervised")
    return { hyperparameters: svcHyperparameters(resolved, seed, rows, withValidation, limits) };
  const { beta } = method.hyperparameters;
  const hyperparameters = svcHyperparameters(
    resolved,
    seed,
    rows,
    withValidation,
    limits,
    DPO_BASE_LEARNING_RATE,
  );
  return {
    method: "dpo",
    hyperparameters: beta === undefined || beta === "auto" ? hyperparameters : { ...hyperparameters, beta },
  };
}

export type JobMethodObject =
  | { type: "supervised"; supervised: { hyperparameters: SupervisedHyperparameters } }
  | { type: "dpo"; dpo: { hyperparameters: SupervisedHyperparameters & { beta: number } } }
  | {
      type: "reinforcement";
      reinforcement: { grader: Record<string, unknown>; hyperparameters: ReinforcementHyperparameters };
    };

/** The job's hyperparameters in OpenAI's terms (the multiplier against its method's base rate). */
export const hyperparametersOf = (job: Job): SupervisedHyperparameters =>
  supervisedOf(job.hyperparameters, BASE_RATE[job.method] ?? BASE_LEARNING_RATE);

/** The fine_tuning.job's `method`: what any svc job (svc start, POST /v1/jobs, this API) trains with. */
export function methodObjectOf(job: Job): JobMethodObject {
  if (job.method === "grpo") return { type: "reinforcement", reinforcement: reinforcementOf(job) };
  const hyperparameters = hyperparametersOf(job);
  if (job.method !== "dpo") return { type: "supervised", supervised: { hyperparameters } };
  const beta = job.hyperparameters.beta ?? DEFAULT_BETA[job.hyperparameters.loss ?? "sigmoid"];
  return { type: "dpo", dpo: { hyperparameters: { ...hyperparameters, beta } } };
}

/**
 * A refusal of createJob's that names the training or validation file, in
 * OpenAI's terms: a file whose rows do not fit the method (chat rows in a dpo
 * job, pairs in a supervised one) is invalid_training_file or
 * invalid_validation_file, and the message names the file by its file- id.
 */
export function fileRefusal(code: string, message: string, param: string): OpenAiError {
  if (code !== "invalid_dataset" || (param !== "training_file" && param !== "validation_file"))
    return new OpenAiError(400, code, message, param);
  return new OpenAiError(
    400,
    `invalid_${param}`,
    message.replace(/dataset ([0-9a-f-]{36})/g, (_, id) => `file ${fileId(id)}`),
    param,
  );
}

/** The metric names preferenceMetricsOf gives, in the metrics CSV's column order. */
export const PREFERENCE_METRICS = ["train", "valid"].flatMap((prefix) =>
  ["chosen_reward", "rejected_reward", "reward_margin", "preference_accuracy"].map(
    (name) => `${prefix}_${name}`,
  ),
);

/**
 * What a DPO step adds to its metrics event and checkpoint (svc's names in
 * OpenAI's style; OpenAI documents none for DPO): the mean chosen and rejected
 * rewards, their margin and the preference accuracy, train_ over the step's
 * pairs and valid_ over the validation file when it was evaluated.
 */
export function preferenceMetricsOf(log: TrainingLogEvent): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [prefix, figures] of [
    ["train", log.rewards],
    ["valid", log.evalRewards],
  ] as const) {
    if (!figures) continue;
    out[`${prefix}_chosen_reward`] = figures.chosenReward;
    out[`${prefix}_rejected_reward`] = figures.rejectedReward;
    out[`${prefix}_reward_margin`] = figures.margin;
    out[`${prefix}_preference_accuracy`] = figures.accuracy;
  }
  return out;
}

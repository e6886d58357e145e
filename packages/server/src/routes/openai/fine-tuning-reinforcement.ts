// OpenAI's { type: "reinforcement", reinforcement: { grader, hyperparameters } }
// as svc's method "grpo" (docs/openai-fine-tuning.md#methods):
// - the grader (one grader; a multi grader is one too) is the job's only
//   grader, weight 1; it is checked here with its fields named under
//   method.reinforcement.grader, and createJob runs it on the file's first row
//   and refuses score_model (routes/job-grpo.ts), its refusals renamed too;
// - n_epochs, batch_size (prompts per step) and learning_rate_multiplier resolve
//   as supervised ones do; the multiplier scales GRPO_BASE_LEARNING_RATE;
// - compute_multiplier scales the completions sampled per prompt:
//   numGenerations = GRPO_BASE_GENERATIONS × compute_multiplier ("auto": 1,
//   so 8), which must land on a whole number within GRPO's 2–64;
// - eval_interval and eval_samples are refused unless "auto": svc's GRPO has
//   no eval set yet; reasoning_effort is refused as for every method.

import {
  hyperparameterRanges,
  type Job,
  type JobGrader,
  type JobHyperparameters,
  type JobLimits,
  type TrainingLogEvent,
} from "@svc/wire";
import { parseGrader } from "../../graders/grader-schema.js";
import { OpenAiError } from "../../http/openai-error.js";
import { type Check, inRange, object, optional } from "../../http/validate.js";
import {
  BASE_LEARNING_RATE,
  type RequestedHyperparameters,
  resolveSupervised,
  type SupervisedHyperparameters,
  supervisedOf,
  svcHyperparameters,
} from "./fine-tuning-hyperparameters.js";

/** svc's learning rate for a reinforcement job's learning_rate_multiplier 1: the supervised base. */
export const GRPO_BASE_LEARNING_RATE = BASE_LEARNING_RATE;
/** Completions per prompt at compute_multiplier 1: GRPO's default group (docs/post-training.md#grpo). */
export const GRPO_BASE_GENERATIONS = 8;

const GENERATIONS = hyperparameterRanges().numGenerations;

export type RequestedReinforcementHyperparameters = RequestedHyperparameters & {
  compute_multiplier?: number | "auto";
};

export interface ReinforcementHyperparameters extends SupervisedHyperparameters {
  compute_multiplier: number;
}

const refuse = (param: string, message: string) => new OpenAiError(400, "invalid_request", message, param);

const autoOnly =
  (why: string): Check<"auto"> =>
  (value, path) => {
    if (value === "auto") return "auto";
    throw refuse(path, `"${path}": ${why}; send "auto" or leave it out`);
  };

const computeMultiplier: Check<number | "auto"> = (value, path) => {
  if (value === "auto") return "auto";
  const multiplier = inRange({
    integer: false,
    min: (GENERATIONS.min as number) / GRPO_BASE_GENERATIONS,
    max: (GENERATIONS.max as number) / GRPO_BASE_GENERATIONS,
  })(value, path);
  if (!Number.isInteger(multiplier * GRPO_BASE_GENERATIONS))
    throw refuse(
      path,
      `"${path}": svc samples ${GRPO_BASE_GENERATIONS} × compute_multiplier completions per prompt, which must be a whole number (${multiplier} gives ${multiplier * GRPO_BASE_GENERATIONS}); use a multiple of 1/${GRPO_BASE_GENERATIONS}`,
    );
  return multiplier;
};

/** method.reinforcement's checks, given the supervised ones (n_epochs, batch_size, the multiplier, reasoning_effort). */
export const reinforcementCheck = (hyperparameters: Record<string, Check<unknown>>) =>
  object({
    grader: (value: unknown, path: string) => {
      parseGrader(value, path);
      return value as Record<string, unknown>;
    },
    hyperparameters: optional(
      object({
        ...hyperparameters,
        compute_multiplier: optional(computeMultiplier),
        eval_interval: optional(autoOnly("svc's GRPO has no eval set yet")),
        eval_samples: optional(autoOnly("svc's GRPO has no eval set yet")),
      }),
    ),
  });

/** createJob's method, graders and hyperparameters for a reinforcement method, its "auto"s resolved. */
export function svcReinforcement(
  grader: Record<string, unknown>,
  requested: RequestedReinforcementHyperparameters,
  seed: number,
  rows: number,
  withValidation: boolean,
  limits: JobLimits,
): { method: "grpo"; graders: JobGrader[]; hyperparameters: JobHyperparameters } {
  const resolved = resolveSupervised(requested, rows, limits);
  const multiplier =
    requested.compute_multiplier === undefined || requested.compute_multiplier === "auto"
      ? 1
      : requested.compute_multiplier;
  return {
    method: "grpo",
    graders: [{ grader }],
    hyperparameters: {
      ...svcHyperparameters(resolved, seed, rows, withValidation, limits, GRPO_BASE_LEARNING_RATE),
      numGenerations: Math.round(multiplier * GRPO_BASE_GENERATIONS),
    },
  };
}

/**
 * The one grader a grpo job reads back with: its only grader at weight 1 as
 * given; several (a job made through POST /v1/jobs) as the multi grader that
 * sums them with their weights.
 */
export function graderOf(graders: readonly JobGrader[]): Record<string, unknown> {
  if (graders.length === 1 && (graders[0].weight ?? 1) === 1) return graders[0].grader;
  const names = graders.map((_, i) => `grader_${i + 1}`);
  return {
    type: "multi",
    name: "svc graders",
    graders: Object.fromEntries(graders.map((g, i) => [names[i], g.grader])),
    calculate_output: graders.map((g, i) => `${g.weight ?? 1} * ${names[i]}`).join(" + "),
  };
}

/** A grpo job's method as OpenAI's reinforcement method. */
export function reinforcementOf(job: Job): {
  grader: Record<string, unknown>;
  hyperparameters: ReinforcementHyperparameters;
} {
  return {
    grader: graderOf(job.hyperparameters.graders ?? []),
    hyperparameters: {
      ...supervisedOf(job.hyperparameters, GRPO_BASE_LEARNING_RATE),
      compute_multiplier:
        (job.hyperparameters.numGenerations ?? GRPO_BASE_GENERATIONS) / GRPO_BASE_GENERATIONS,
    },
  };
}

/** The metric names rewardMetricsOf gives, in the metrics CSV's column order. */
export const REWARD_METRICS = [
  "train_reward_mean",
  "train_reward_std",
  "train_kl",
  "train_completion_length",
  "train_zero_advantage_fraction",
  "train_clip_fraction",
];

/**
 * What a GRPO step adds to its metrics event and checkpoint (svc's names in
 * OpenAI's style; docs/openai-fine-tuning.md#methods): the mean combined reward
 * of the step's completions and the mean of its groups' standard deviations,
 * the KL to the reference (when beta > 0), the mean completion length in
 * tokens, the share of groups that scored alike, and the share of clipped tokens.
 */
export function rewardMetricsOf(log: TrainingLogEvent): Record<string, number> {
  const figures = log.grpo;
  if (!figures) return {};
  return {
    train_reward_mean: figures.reward,
    train_reward_std: figures.rewardStd,
    ...(figures.kl === null ? {} : { train_kl: figures.kl }),
    train_completion_length: figures.completionLength,
    train_zero_advantage_fraction: figures.zeroAdvantageFraction,
    train_clip_fraction: figures.clipFraction,
  };
}

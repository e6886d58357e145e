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
// - a validation_file is the GRPO job's eval set: every eval_interval steps
//   ("auto": once an epoch, as a supervised job's validation) and at the last
//   step, each of its prompts is sampled eval_samples times ("auto": 1) at the
//   job's sampling settings and graded; eval_interval or eval_samples without a
//   validation file is refused; reasoning_effort is refused as for every method.

import { resolveGrpo } from "@svc/engine";
import {
  hyperparameterRanges,
  type Job,
  type JobGrader,
  type JobHyperparameters,
  type JobLimits,
  type NumericRange,
  type TrainingLogEvent,
} from "@svc/wire";
import { parseGrader } from "../../graders/grader-schema.js";
import { refuseParam } from "../../http/openai-error.js";
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
  eval_interval?: number | "auto";
  eval_samples?: number | "auto";
};

export interface ReinforcementHyperparameters extends SupervisedHyperparameters {
  compute_multiplier: number;
  /** A job with an eval set only: steps between its evals, and samples per eval prompt. */
  eval_interval?: number;
  eval_samples?: number;
}

const HP = "method.reinforcement.hyperparameters";

/** A number within its range, or "auto". */
const autoOr =
  (range: NumericRange): Check<number | "auto"> =>
  (value, path) =>
    value === "auto" ? "auto" : inRange(range)(value, path);

const computeMultiplier: Check<number | "auto"> = (value, path) => {
  if (value === "auto") return "auto";
  const multiplier = inRange({
    integer: false,
    min: (GENERATIONS.min as number) / GRPO_BASE_GENERATIONS,
    max: (GENERATIONS.max as number) / GRPO_BASE_GENERATIONS,
  })(value, path);
  if (!Number.isInteger(multiplier * GRPO_BASE_GENERATIONS))
    throw refuseParam(
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
        eval_interval: optional(autoOr(hyperparameterRanges().evalSteps)),
        eval_samples: optional(autoOr(hyperparameterRanges().evalGenerations)),
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
  const { eval_interval: interval, eval_samples: samples } = requested;
  for (const [field, value] of [
    ["eval_interval", interval],
    ["eval_samples", samples],
  ] as const)
    if (value !== undefined && value !== "auto" && !withValidation)
      throw refuseParam(
        `${HP}.${field}`,
        `"${HP}.${field}": sets how the validation_file is evaluated; give one`,
      );
  const hyperparameters = svcHyperparameters(
    resolved,
    seed,
    rows,
    withValidation,
    limits,
    GRPO_BASE_LEARNING_RATE,
  );
  return {
    method: "grpo",
    graders: [{ grader }],
    hyperparameters: {
      ...hyperparameters,
      numGenerations: Math.round(multiplier * GRPO_BASE_GENERATIONS),
      // "auto": svcHyperparameters' once an epoch, and the engine's 1 sample per eval prompt
      ...(typeof interval === "number" ? { evalSteps: interval } : {}),
      ...(typeof samples === "number" ? { evalGenerations: samples } : {}),
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

/** An eval set's eval_interval and eval_samples as the job trains with them (the engine's defaults resolved). */
function evalSettingsOf(job: Job): { eval_interval?: number; eval_samples: number } {
  const hp = job.hyperparameters;
  return {
    // a job made without evalSteps (POST /v1/jobs) evaluates at its last step only: no interval to show
    ...(hp.evalSteps !== undefined ? { eval_interval: hp.evalSteps } : {}),
    eval_samples: resolveGrpo(hp).evalGenerations,
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
      ...(job.evalDatasetId ? evalSettingsOf(job) : {}),
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
  "valid_reward_mean",
];

/**
 * What a GRPO step adds to its metrics event and checkpoint (svc's names in
 * OpenAI's style; docs/openai-fine-tuning.md#methods): the mean combined reward
 * of the step's completions and the mean of its groups' standard deviations,
 * the KL to the reference (when beta > 0), the mean completion length in
 * tokens, the share of groups that scored alike, and the share of clipped tokens;
 * at a step that evaluated the validation file, its mean reward.
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
    ...(log.evalGrpo ? { valid_reward_mean: log.evalGrpo.reward } : {}),
  };
}

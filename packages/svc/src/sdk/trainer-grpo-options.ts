// createTrainer's method "grpo" options (docs/post-training.md#grpo): its
// sampling settings, its graders (JSON, run by the server) and its rewards
// (TypeScript functions, run by this process: reward-scorer.ts), checked at
// construction with the field named, as POST /v1/jobs checks them.
import {
  GRPO_HYPERPARAMETERS,
  hyperparameterRanges,
  type JobGrader,
  MAX_JOB_REWARDS,
  REWARD_NAME,
} from "@svc/wire";
import type { NamedReward, RewardFunction } from "./reward-scorer.js";
import { fail, type TrainerOptions, withinRange } from "./trainer-options.js";

/** createTrainer's `rewards`: functions (named by their function names) or an object of them by name. */
export type TrainerRewards = readonly RewardFunction[] | Readonly<Record<string, RewardFunction>>;

export interface GrpoTrainerOptions {
  /**
   * Method "grpo": reward functions, run by this process while the job trains (svc start): each gets
   * `{ prompt, messages, completion, row, rowNumber, step }` and returns a finite number (or a Promise of one).
   * An array names each by its function's name; an object by its key.
   */
  rewards?: TrainerRewards;
  /** The rewards' weights in the sum (default 1 each): in the rewards' order, or by name. */
  rewardWeights?: readonly number[] | Readonly<Record<string, number>>;
  /** Method "grpo": OpenAI grader objects with weights, run by the server (docs/graders.md). */
  graders?: JobGrader[];
}

/** The trainer's rewards with their names and weights (none: []). */
export function trainerRewards(o: GrpoTrainerOptions): NamedReward[] {
  const { rewards, rewardWeights } = o;
  if (rewards === undefined) return [];
  const entries: [string, unknown][] = Array.isArray(rewards)
    ? rewards.map((fn) => [typeof fn === "function" ? fn.name : "", fn])
    : Object.entries(rewards);
  const weights = rewardWeights ?? {};
  return entries.map(([name, fn], i) => ({
    name,
    fn: fn as RewardFunction,
    weight: (Array.isArray(weights) ? weights[i] : (weights as Record<string, number>)[name]) ?? 1,
  }));
}

function validateRewards(o: TrainerOptions): void {
  const { rewards, rewardWeights } = o;
  if (rewards === undefined) {
    if (rewardWeights !== undefined) fail("rewardWeights", "to be set only with rewards", rewardWeights);
    return;
  }
  if (typeof rewards !== "object" || rewards === null)
    fail("rewards", "an array of reward functions or an object of them by name", rewards);
  const named = trainerRewards(o);
  if (named.length === 0 || named.length > MAX_JOB_REWARDS)
    fail("rewards", `1 to ${MAX_JOB_REWARDS} reward functions`, named.length);
  const seen = new Set((o.graders ?? []).map((g) => (g?.grader as { name?: unknown })?.name));
  named.forEach(({ name, fn }, i) => {
    const field = Array.isArray(rewards) ? `rewards[${i}]` : `rewards.${name}`;
    if (typeof fn !== "function") fail(field, "a function", fn);
    if (!REWARD_NAME.test(name))
      fail(
        field,
        Array.isArray(rewards)
          ? "a named function (function length() {...}, or a const's arrow function), or pass { name: fn }"
          : "a name of a letter or _, then letters, digits, _ . - (at most 64)",
        name,
      );
    if (seen.has(name)) fail(field, "a name no other reward or grader has", name);
    seen.add(name);
  });
  if (rewardWeights === undefined) return;
  const range = hyperparameterRanges().graderWeight;
  if (Array.isArray(rewardWeights)) {
    if (rewardWeights.length !== named.length)
      fail("rewardWeights", `${named.length} weights (one per reward)`, rewardWeights);
    rewardWeights.forEach((w, i) => {
      withinRange(`rewardWeights[${i}]`, w, range);
    });
  } else {
    if (typeof rewardWeights !== "object" || rewardWeights === null)
      fail("rewardWeights", "an array of numbers or an object of them by reward name", rewardWeights);
    for (const [name, w] of Object.entries(rewardWeights)) {
      if (!named.some((r) => r.name === name)) fail(`rewardWeights.${name}`, "the name of a reward", name);
      withinRange(`rewardWeights.${name}`, w, range);
    }
  }
}

/**
 * GRPO's settings: in their ranges, refused with method "sft" or "dpo"; method "grpo" needs graders, rewards
 * or both. With no method they are checked too: svc start --method grpo may train them.
 */
export function validateGrpo(o: TrainerOptions): void {
  const stray = (["rewards", "rewardWeights", "graders", ...GRPO_HYPERPARAMETERS] as const).find(
    (key) => o[key] !== undefined,
  );
  if (o.method === "sft" || o.method === "dpo") {
    if (stray) fail(stray, 'to be left out unless method is "grpo"', stray);
    return;
  }
  if (o.method === undefined && !stray) return;
  const range = hyperparameterRanges();
  for (const key of [
    "numGenerations",
    "temperature",
    "topP",
    "maxCompletionTokens",
    "epsilon",
    "evalGenerations",
  ] as const)
    withinRange(key, o[key], range[key]);
  withinRange("beta", o.beta, range.beta);
  if (o.scaleRewards !== undefined && typeof o.scaleRewards !== "boolean")
    fail("scaleRewards", "a boolean", o.scaleRewards);
  if (o.graders !== undefined) {
    if (!Array.isArray(o.graders) || o.graders.length === 0)
      fail("graders", "a non-empty array of { grader, weight? }", o.graders);
    o.graders.forEach((g, i) => {
      if (typeof g?.grader !== "object" || g.grader === null || Array.isArray(g.grader))
        fail(`graders[${i}].grader`, "an OpenAI grader object (docs/graders.md)", g?.grader);
      withinRange(`graders[${i}].weight`, g.weight, range.graderWeight);
    });
  }
  validateRewards(o);
  if (o.method === "grpo" && o.rewards === undefined && o.graders === undefined)
    fail("rewards", 'reward functions or graders (method "grpo" needs at least one)', undefined);
}

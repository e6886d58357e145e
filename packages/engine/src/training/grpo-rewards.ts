// A GRPO step's rewards: the scorer's answer checked (one finite number per
// reward function for every completion; a throwing scorer or a NaN fails the
// step naming the row and the reward: nothing is ever trained on a bad
// reward), combined with the weights, and summarised for the step's log.
import { EngineError } from "../errors.js";
import type { GrpoRow } from "./grpo-step.js";

/** What the scorer is asked about one completion. */
export interface GrpoScoreItem {
  /** The dataset row (its messages and every other field, e.g. a reference answer). */
  row: GrpoRow;
  /** 1-based row number in the train set (in the eval set for an eval's items). */
  rowNumber: number;
  completion: string;
  /** "eval" for a held-out eval's completions (grpo-eval.ts); absent for a training step's. */
  set?: "eval";
}

/** Scores a batch: per completion, one reward per reward function (in rewardNames' order). */
export type GrpoScorer = (batch: GrpoScoreItem[]) => Promise<number[][]> | number[][];

/** A sampled completion shown in the step's log, with its scores. */
export interface GrpoSample {
  rowNumber: number;
  completion: string;
  rewards: Record<string, number>;
  reward: number;
  advantage: number;
}

/** Calls the scorer and checks its answer; returns [per-completion reward vectors, combined rewards]. */
export async function scoreBatch(
  score: GrpoScorer,
  items: GrpoScoreItem[],
  names: readonly string[],
  weights: readonly number[],
  step: number,
  /** Names what was scored in errors: "eval" for the eval at this step (default: the step's own completions). */
  set?: "eval",
): Promise<[number[][], Float64Array]> {
  const at = set === "eval" ? `step ${step} (eval set)` : `step ${step}`;
  let scores: number[][];
  try {
    scores = await score(items);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new EngineError("invalid_reward", `${at}: scoring failed: ${message}`);
  }
  if (!Array.isArray(scores) || scores.length !== items.length)
    throw new EngineError(
      "invalid_reward",
      `${at}: the scorer returned ${Array.isArray(scores) ? scores.length : typeof scores} score lists for ${items.length} completions`,
    );
  const combined = new Float64Array(items.length);
  scores.forEach((values, i) => {
    const where = `${at}: row ${items[i].rowNumber}`;
    if (!Array.isArray(values) || values.length !== names.length)
      throw new EngineError(
        "invalid_reward",
        `${where}: the scorer returned ${Array.isArray(values) ? values.length : typeof values} rewards; expected ${names.length} (${names.join(", ")})`,
      );
    values.forEach((v, k) => {
      if (typeof v !== "number" || !Number.isFinite(v))
        throw new EngineError(
          "invalid_reward",
          `${where}: reward "${names[k]}" is ${String(v)}; every reward must be a finite number, so ${set === "eval" ? "the eval was not scored" : "nothing was trained on this step"}`,
        );
      combined[i] += weights[k] * v;
    });
  });
  return [scores, combined];
}

/** The rewards' names and weights, checked (default: one reward named "reward", weight 1). */
export function resolveRewards(names?: readonly string[], weights?: readonly number[]): [string[], number[]] {
  const n = names && names.length > 0 ? [...names] : ["reward"];
  const w = weights ? [...weights] : n.map(() => 1);
  if (w.length !== n.length)
    throw new EngineError(
      "invalid_argument",
      `rewardWeights has ${w.length} weights for ${n.length} rewards (${n.join(", ")})`,
    );
  w.forEach((x, i) => {
    if (!Number.isFinite(x))
      throw new EngineError("invalid_argument", `rewardWeights[${i}] must be a finite number (got ${x})`);
  });
  return [n, w];
}

/** Mean of each group's (Bessel-corrected) standard deviation, as TRL's reward_std. */
export function meanGroupStd(rewards: Float64Array, groupSize: number): number {
  let total = 0;
  const groups = rewards.length / groupSize;
  for (let g = 0; g < groups; g++) {
    let mean = 0;
    for (let i = 0; i < groupSize; i++) mean += rewards[g * groupSize + i];
    mean /= groupSize;
    let squares = 0;
    for (let i = 0; i < groupSize; i++) squares += (rewards[g * groupSize + i] - mean) ** 2;
    total += Math.sqrt(squares / (groupSize - 1));
  }
  return groups > 0 ? total / groups : 0;
}

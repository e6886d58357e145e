// GRPO's held-out eval (an eval set, at every evalSteps-th step and the last):
// each eval prompt is sampled evalGenerations times under the adapter as it
// stands, at the run's temperature and topP, so the eval reward reads the same
// policy the train reward does (greedy decoding would score a completion the
// run never trains on, and gives several samples nothing to differ by); the
// completions are scored with the run's rewards, and the eval reports the mean
// combined reward and each reward's own mean. Every eval of a run uses the same
// seeds (its own, apart from any step's), so two evals differ only by the adapter.
import type { Generator, LoraAdapter } from "../types.js";
import { type GrpoScorer, scoreBatch } from "./grpo-rewards.js";
import { type GrpoPrompt, type GrpoRow, type SamplingSettings, sampleGroups } from "./grpo-step.js";

/** The eval's figures: means over every eval completion. */
export interface GrpoEvalMetrics {
  /** Mean combined (weighted) reward. */
  reward: number;
  /** Each reward function's own mean. */
  rewards: Record<string, number>;
  /** Mean completion length in tokens. */
  completionLength: number;
}

export interface GrpoEvalSet {
  rows: GrpoRow[];
  prompts: GrpoPrompt[];
  /** 1-based numbers of the rows in the eval file. */
  rowNumbers: number[];
}

/** The seeds' step for eval sampling: no training step has it. */
const EVAL_SEED_STEP = -1;

export async function evaluateGrpo(
  generator: Generator,
  adapter: LoraAdapter,
  set: GrpoEvalSet,
  sampling: SamplingSettings,
  rewards: { score: GrpoScorer; names: string[]; weights: number[] },
  step: number,
  signal?: AbortSignal,
): Promise<GrpoEvalMetrics | null> {
  const rows = set.rows.map((_, i) => i);
  const sampled = await sampleGroups(generator, adapter, set.prompts, rows, EVAL_SEED_STEP, sampling, signal);
  if (signal?.aborted) return null;
  const items = sampled.map((c) => ({
    row: set.rows[c.row],
    rowNumber: set.rowNumbers[c.row],
    completion: c.text,
    set: "eval" as const,
  }));
  const [scores, combined] = await scoreBatch(
    rewards.score,
    items,
    rewards.names,
    rewards.weights,
    step,
    "eval",
  );
  return evalFigures(
    scores,
    combined,
    rewards.names,
    sampled.map((c) => c.tokenIds.length),
  );
}

/**
 * An eval's figures from its scored completions (one definition for both backends: the torch
 * backend's worker scores what svc_trainer sampled for the eval and reports these).
 */
export function evalFigures(
  scores: number[][],
  combined: ArrayLike<number>,
  names: readonly string[],
  completionLengths: readonly number[],
): GrpoEvalMetrics {
  const mean = (values: ArrayLike<number>) => {
    let sum = 0;
    for (let i = 0; i < values.length; i++) sum += values[i];
    return sum / values.length;
  };
  return {
    reward: mean(combined),
    rewards: Object.fromEntries(names.map((name, k) => [name, mean(scores.map((s) => s[k]))])),
    completionLength: mean(completionLengths),
  };
}

// One GRPO step planned for the shared loop (training-loop.ts): the async half
// (sample a group per prompt under the current adapter, score the groups) runs
// in beginStep, and the StepPass it returns is the update: one micro-batch per
// B prompts' groups that have an advantage (a zero group adds no gradient, so
// it is not run). The loop clips, steps AdamW and counts the step; result()
// then gives the step's GRPO figures and timing. A stop while sampling or
// scoring gives null, so the loop checkpoints the last full step and this one
// is sampled again after a resume (the same seeds: the same completions).
import type { Generator, LoraAdapter } from "../types.js";
import { stepRewardFigures } from "./grpo-figures.js";
import { type GrpoSettings, groupAdvantages } from "./grpo-objective.js";
import { type GrpoSample, type GrpoScorer, scoreBatch } from "./grpo-rewards.js";
import {
  completionExample,
  type GrpoPassOptions,
  type GrpoPrompt,
  type GrpoRow,
  grpoPass,
  type SampledCompletion,
  type SamplingSettings,
  sampleGroups,
} from "./grpo-step.js";
import type { StepPass } from "./training-loop.js";

/** One step's GRPO figures. */
export interface GrpoMetrics {
  /** Mean combined reward over the step's completions, and the mean of the groups' standard deviations. */
  reward: number;
  rewardStd: number;
  /** Each reward function's own mean. */
  rewards: Record<string, number>;
  /** Mean k3 KL to the reference over the trained tokens; null when beta = 0 (no reference pass). */
  kl: number | null;
  /** Mean completion length in tokens. */
  completionLength: number;
  /** Fraction of groups whose rewards were all equal (they train nothing). */
  zeroAdvantageFraction: number;
  clipFraction: number;
  /** A few of the step's completions (the first group's first ones) with their scores. */
  samples: GrpoSample[];
}

/** What a GRPO step reports beyond the loop's shared figures. */
export interface GrpoStepFigures {
  grpo: GrpoMetrics;
  /** Seconds spent sampling, scoring and updating. */
  timing: { generation: number; scoring: number; update: number };
  /** The sampled tokens over the whole step (sampling, scoring and update), not only the update's. */
  tokensPerSecond: number;
}

/** A run's fixed GRPO parts, made once by trainGrpo. */
export interface GrpoStepContext {
  trainSet: GrpoRow[];
  prompts: GrpoPrompt[];
  rowNumber: (row: number) => number;
  generator: Generator;
  /** The adapter the optimizer updates in place: the policy that samples is the one trained. */
  adapter: LoraAdapter;
  sampling: SamplingSettings;
  grpo: GrpoSettings;
  /** Prompts per micro-batch (hyperparameters.batchSize). */
  batchSize: number;
  pass: Pick<GrpoPassOptions, "graph" | "lora" | "grads" | "reference" | "pad">;
  rewards: { score: GrpoScorer; names: string[]; weights: number[] };
  samplesShown?: number;
  sampleCompletions?: (rows: number[], step: number) => SampledCompletion[];
  signal?: AbortSignal;
}

const seconds = (since: number) => (performance.now() - since) / 1000;

/** Samples and scores step `step` + 1's groups of `rows`; null when the signal stopped it first. */
export async function beginGrpoStep(
  c: GrpoStepContext,
  rows: number[],
  step: number,
): Promise<StepPass<GrpoStepFigures> | null> {
  const { signal } = c;
  if (signal?.aborted) return null;
  const G = c.sampling.numGenerations;
  const began = performance.now();
  const sampled = c.sampleCompletions
    ? c.sampleCompletions(rows, step)
    : await sampleGroups(c.generator, c.adapter, c.prompts, rows, step, c.sampling, signal);
  if (signal?.aborted) return null;
  const generation = seconds(began);
  const scoringBegan = performance.now();
  const items = sampled.map((s) => ({
    row: c.trainSet[s.row],
    rowNumber: c.rowNumber(s.row),
    completion: s.text,
  }));
  let scored: [number[][], Float64Array];
  try {
    scored = await scoreBatch(c.rewards.score, items, c.rewards.names, c.rewards.weights, step + 1);
  } catch (error) {
    // Stopped while the scorer was asked (a pause: the trainer's scorer is gone): the steps done are
    // checkpointed, and this one is trained after the resume, on scores that came.
    if (signal?.aborted) return null;
    throw error;
  }
  // stopped while the scores came: nothing of this step is trained
  if (signal?.aborted) return null;
  const [scores, combined] = scored;
  const scoring = seconds(scoringBegan);
  const updateBegan = performance.now();
  const { advantages, zeroGroups } = groupAdvantages(combined, G, c.grpo.scaleRewards);
  const examples = sampled.map((s) => completionExample(c.prompts[s.row], s.tokenIds));
  let batchTokens = 0;
  let batchKept = 0;
  let trainedTokens = 0;
  sampled.forEach((s, i) => {
    if (zeroGroups[Math.floor(i / G)]) return;
    batchTokens += s.tokenIds.length;
    batchKept++;
    // the update's forward and backward run over the prompts and completions of groups with an advantage
    trainedTokens += examples[i].inputIds.length;
  });
  // one micro-batch is B prompts' groups, leaving out the zero groups; a chunk of only zero groups is not run
  const chunks: number[][] = [];
  for (let g0 = 0; g0 < zeroGroups.length; g0 += c.batchSize) {
    const members: number[] = [];
    for (let g = g0; g < Math.min(zeroGroups.length, g0 + c.batchSize); g++)
      if (!zeroGroups[g]) for (let k = 0; k < G; k++) members.push(g * G + k);
    if (members.length > 0) chunks.push(members);
  }
  const options: GrpoPassOptions = { ...c.pass, settings: c.grpo, batchTokens, batchKept };
  let loss = 0;
  let klSum = 0;
  let clipped = 0;
  return {
    tokens: trainedTokens,
    microBatches: chunks.length,
    microBatch(k) {
      const members = chunks[k];
      const part = grpoPass(
        members.map((i) => examples[i]),
        members.map((i) => advantages[i]),
        options,
      );
      loss += part.loss;
      klSum += part.klSum;
      clipped += part.clippedTokens;
    },
    result() {
      const update = seconds(updateBegan);
      const totalTokens = sampled.reduce((sum, s) => sum + s.tokenIds.length, 0);
      const figures = stepRewardFigures(
        items,
        scores,
        combined,
        advantages,
        zeroGroups,
        c.rewards.names,
        G,
        c.samplesShown,
      );
      const grpo: GrpoMetrics = {
        ...figures,
        kl: c.grpo.beta > 0 ? (batchTokens > 0 ? klSum / batchTokens : 0) : null,
        completionLength: totalTokens / sampled.length,
        clipFraction: batchTokens > 0 ? clipped / batchTokens : 0,
      };
      const elapsed = seconds(began);
      return {
        loss,
        figures: {
          grpo,
          timing: { generation, scoring, update },
          tokensPerSecond: elapsed > 0 ? totalTokens / elapsed : 0,
        },
      };
    },
  };
}

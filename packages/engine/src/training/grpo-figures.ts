// A GRPO step's reward figures, from its scored completions: the mean combined
// reward, the mean of the groups' standard deviations, each reward's own mean,
// the share of zero-advantage groups and the first few completions with their
// scores. One definition for both backends: the engine's trainGrpo and the torch
// backend's worker (which scores what svc_trainer sampled) report the same.
import { type GrpoSample, type GrpoScoreItem, meanGroupStd } from "./grpo-rewards.js";

export interface StepRewardFigures {
  reward: number;
  rewardStd: number;
  rewards: Record<string, number>;
  zeroAdvantageFraction: number;
  samples: GrpoSample[];
}

export function stepRewardFigures(
  items: readonly Pick<GrpoScoreItem, "rowNumber" | "completion">[],
  scores: number[][],
  combined: Float64Array,
  advantages: ArrayLike<number>,
  zeroGroups: readonly boolean[],
  rewardNames: readonly string[],
  groupSize: number,
  samplesPerStep = 4,
): StepRewardFigures {
  const rewards: Record<string, number> = {};
  rewardNames.forEach((name, k) => {
    rewards[name] = scores.reduce((sum, s) => sum + s[k], 0) / scores.length;
  });
  return {
    reward: combined.reduce((a, b) => a + b, 0) / combined.length,
    rewardStd: meanGroupStd(combined, groupSize),
    rewards,
    zeroAdvantageFraction: zeroGroups.filter(Boolean).length / zeroGroups.length,
    samples: items.slice(0, samplesPerStep).map((item, i) => ({
      rowNumber: item.rowNumber,
      completion: item.completion,
      rewards: Object.fromEntries(rewardNames.map((name, k) => [name, scores[i][k]])),
      reward: combined[i],
      advantage: advantages[i],
    })),
  };
}

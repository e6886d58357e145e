// A DPO job's implicit rewards as the rewards chart and its readout show them
// (docs/post-training.md#what-the-charts-mean): the chosen and rejected
// answers' mean reward and their margin, on each step's training pairs and on
// the eval set. Rewards are log-probability ratios (β·(log π − log π_ref)), so
// unbounded and signed: the y range always holds 0, where the policy equals
// the reference. The points live in LossSeries (loss-series.ts).
import type { Extent, LossPoint, LossSeries } from "./loss-series.js";

/** The series the chart draws, in legend order. */
export const REWARD_SERIES = [
  "chosenReward",
  "rejectedReward",
  "margin",
  "evalChosenReward",
  "evalRejectedReward",
  "evalMargin",
] as const;

export type RewardSeries = (typeof REWARD_SERIES)[number];

const rewardPoints = (series: LossSeries): LossPoint[] => REWARD_SERIES.flatMap((key) => series[key]);

export function hasPreferenceRewards(series: LossSeries): boolean {
  return rewardPoints(series).length > 0;
}

/** The y range: every reward point and 0, padded a little so no line runs along the frame. */
export function rewardsExtent(series: LossSeries): Extent {
  let min = 0;
  let max = 0;
  for (const p of rewardPoints(series)) {
    if (p.value < min) min = p.value;
    if (p.value > max) max = p.value;
  }
  if (min === max) return { min: -1, max: 1 };
  const pad = (max - min) * 0.05;
  return { min: min - pad, max: max + pad };
}

export type RewardsHover = { step: number } & Record<RewardSeries, number | null>;

/** The step nearest to x among the reward points, with whichever figures exist at that step. */
export function nearestRewards(series: LossSeries, x: number): RewardsHover | null {
  let best: number | null = null;
  for (const p of rewardPoints(series)) {
    if (best === null || Math.abs(p.step - x) < Math.abs(best - x)) best = p.step;
  }
  if (best === null) return null;
  const step = best;
  const at = (points: LossPoint[]) => {
    for (let i = points.length - 1; i >= 0; i--) if (points[i].step === step) return points[i].value;
    return null;
  };
  return Object.assign({ step }, ...REWARD_SERIES.map((key) => ({ [key]: at(series[key]) }))) as RewardsHover;
}

/** A reward with a sign and 3 decimals: 0.1234 → "+0.123". */
export function formatReward(v: number): string {
  return `${v > 0 ? "+" : ""}${v.toFixed(3)}`;
}

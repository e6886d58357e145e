// A GRPO job's per-step figures (training.log's `grpo`, docs/post-training.md#grpo)
// as Studio's GRPO charts and Samples panel read them: one entry per logged step,
// kept apart from LossSeries because a step carries per-reward names and sampled
// completions, not just numbers. A resumed run logs the steps after its
// checkpoint again, and its entries replace the earlier run's (dropGrpoStepsAfter).
import type { Extent, LossPoint } from "./loss-series.js";

export interface GrpoSample {
  rowNumber: number;
  completion: string;
  rewards: Record<string, number>;
  reward: number;
  advantage: number;
}

export interface GrpoStep {
  step: number;
  reward: number;
  rewardStd: number;
  rewards: Record<string, number>;
  /** null when beta is 0 (no reference pass). */
  kl: number | null;
  completionLength: number;
  zeroAdvantageFraction: number;
  clipFraction: number;
  samples: GrpoSample[];
  /** The eval set's mean reward when an eval ran at this step (training.log's evalGrpo), else null. */
  evalReward: number | null;
}

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

function numberRecord(v: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (isObject(v)) for (const [name, value] of Object.entries(v)) if (isNumber(value)) out[name] = value;
  return out;
}

function sampleOf(v: unknown): GrpoSample | null {
  if (!isObject(v) || typeof v.completion !== "string" || !isNumber(v.reward)) return null;
  return {
    rowNumber: isNumber(v.rowNumber) ? v.rowNumber : 0,
    completion: v.completion,
    rewards: numberRecord(v.rewards),
    reward: v.reward,
    advantage: isNumber(v.advantage) ? v.advantage : 0,
  };
}

/** The GRPO figures of one training.log payload, or null when it has none (SFT, DPO, eval-only frames). */
export function grpoStepOf(payload: Record<string, unknown>): GrpoStep | null {
  const g = payload.grpo;
  if (!isNumber(payload.step) || !isObject(g) || !isNumber(g.reward)) return null;
  return {
    step: payload.step,
    reward: g.reward,
    rewardStd: isNumber(g.rewardStd) ? g.rewardStd : 0,
    rewards: numberRecord(g.rewards),
    kl: isNumber(g.kl) ? g.kl : null,
    completionLength: isNumber(g.completionLength) ? g.completionLength : 0,
    zeroAdvantageFraction: isNumber(g.zeroAdvantageFraction) ? g.zeroAdvantageFraction : 0,
    clipFraction: isNumber(g.clipFraction) ? g.clipFraction : 0,
    samples: Array.isArray(g.samples)
      ? g.samples.map(sampleOf).filter((s): s is GrpoSample => s !== null)
      : [],
    evalReward:
      isObject(payload.evalGrpo) && isNumber(payload.evalGrpo.reward) ? payload.evalGrpo.reward : null,
  };
}

/** Adds a payload's GRPO step; returns the same array when it has none. A step logged again replaces the old. */
export function addGrpoFrame(steps: GrpoStep[], payload: Record<string, unknown>): GrpoStep[] {
  const next = grpoStepOf(payload);
  if (!next) return steps;
  return [...steps.filter((s) => s.step !== next.step), next];
}

export function dropGrpoStepsAfter(steps: GrpoStep[], step: number): GrpoStep[] {
  return steps.some((s) => s.step > step) ? steps.filter((s) => s.step <= step) : steps;
}

export interface GrpoRewardSeries {
  reward: LossPoint[];
  /** The band reward ± rewardStd at each step. */
  band: { step: number; low: number; high: number }[];
  /** Each reward's own mean, by name, in the order the names first appear. */
  perReward: { name: string; points: LossPoint[] }[];
  /** The eval set's mean reward at the steps an eval ran. */
  evalReward: LossPoint[];
}

export function grpoRewardSeries(steps: GrpoStep[]): GrpoRewardSeries {
  const perReward = new Map<string, LossPoint[]>();
  for (const s of steps)
    for (const [name, value] of Object.entries(s.rewards)) {
      const points = perReward.get(name) ?? [];
      points.push({ step: s.step, value });
      perReward.set(name, points);
    }
  return {
    reward: steps.map((s) => ({ step: s.step, value: s.reward })),
    band: steps.map((s) => ({ step: s.step, low: s.reward - s.rewardStd, high: s.reward + s.rewardStd })),
    perReward: [...perReward].map(([name, points]) => ({ name, points })),
    evalReward: steps.flatMap((s) => (s.evalReward === null ? [] : [{ step: s.step, value: s.evalReward }])),
  };
}

/** The health figures, each its own small chart: KL (absent when beta is 0), completion length, zero-advantage share. */
export const GRPO_HEALTH = ["kl", "completionLength", "zeroAdvantageFraction"] as const;
export type GrpoHealthKey = (typeof GRPO_HEALTH)[number];

export function grpoHealthSeries(steps: GrpoStep[]): Record<GrpoHealthKey, LossPoint[]> {
  const of = (key: GrpoHealthKey) =>
    steps.flatMap((s) => (s[key] === null ? [] : [{ step: s.step, value: s[key] as number }]));
  return {
    kl: of("kl"),
    completionLength: of("completionLength"),
    zeroAdvantageFraction: of("zeroAdvantageFraction"),
  };
}

/** The y range of the reward chart: the band, the mean, each reward and the eval reward; widened when flat. */
export function grpoRewardExtent(series: GrpoRewardSeries): Extent {
  const values = [
    ...series.band.flatMap((b) => [b.low, b.high]),
    ...series.perReward.flatMap((r) => r.points.map((p) => p.value)),
    ...series.evalReward.map((p) => p.value),
  ];
  return valueExtent(values);
}

/** Min–max of the values, widened when flat (by 5% of the value, or 1 at 0), padded 5% otherwise. */
export function valueExtent(values: number[]): Extent {
  if (values.length === 0) return { min: 0, max: 1 };
  const min = Math.min(...values);
  const max = Math.max(...values);
  if (min === max) {
    const pad = Math.abs(min) * 0.05 || 1;
    return { min: min - pad, max: max + pad };
  }
  const pad = (max - min) * 0.05;
  return { min: min - pad, max: max + pad };
}

/** The step extent over the GRPO steps (the x range of every GRPO chart). */
export function grpoStepExtent(steps: GrpoStep[]): Extent {
  if (steps.length === 0) return { min: 0, max: 1 };
  const min = Math.min(...steps.map((s) => s.step));
  const max = Math.max(...steps.map((s) => s.step));
  return min === max ? { min, max: max + 1 } : { min, max };
}

/** A completion clipped for the Samples panel: at most `limit` characters, with whether it was cut. */
export function clipCompletion(text: string, limit = 280): { text: string; clipped: boolean } {
  const chars = Array.from(text);
  return chars.length <= limit
    ? { text, clipped: false }
    : { text: `${chars.slice(0, limit).join("")}…`, clipped: true };
}

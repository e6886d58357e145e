// Learning-rate schedules as Hugging Face's get_scheduler defines them: a
// multiplier of the base rate for the optimizer step that follows `step`
// completed steps (so with warm-up the first step runs at rate 0).
import type { LrSchedulerType } from "../types.js";

/** hyperparameters.lrSchedulerType's values (the wire's LR_SCHEDULER_TYPES is pinned to this list). */
export const LR_SCHEDULER_TYPES: readonly LrSchedulerType[] = ["linear", "cosine", "constant"];

export function lrMultiplier(
  type: LrSchedulerType,
  step: number,
  warmupSteps: number,
  totalSteps: number,
): number {
  if (step < warmupSteps) return step / Math.max(1, warmupSteps);
  const progress = (step - warmupSteps) / Math.max(1, totalSteps - warmupSteps);
  switch (type) {
    case "constant":
      return 1;
    case "linear":
      return Math.max(0, (totalSteps - step) / Math.max(1, totalSteps - warmupSteps));
    case "cosine":
      return Math.max(0, 0.5 * (1 + Math.cos(Math.PI * progress)));
  }
}

/** The learning rate of the optimizer step after `step` completed steps. */
export function learningRateAt(
  type: LrSchedulerType,
  baseRate: number,
  step: number,
  warmupSteps: number,
  totalSteps: number,
): number {
  return baseRate * lrMultiplier(type, step, warmupSteps, totalSteps);
}

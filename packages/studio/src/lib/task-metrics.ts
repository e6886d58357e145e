// The eval task metrics of training.log (evalTokenAccuracy, evalExactMatch:
// fractions in [0, 1], docs/api.md#task-metrics) as the task metrics chart and
// its readout show them, with a DPO job's preference accuracy (training, each
// step, and eval). The points live in LossSeries (loss-series.ts).
import type { Extent, LossPoint, LossSeries } from "./loss-series.js";

/** Every point the chart draws. */
const metricPoints = (series: LossSeries): LossPoint[] => [
  ...series.tokenAccuracy,
  ...series.exactMatch,
  ...series.preferenceAccuracy,
  ...series.trainPreferenceAccuracy,
];

export function hasTaskMetrics(series: LossSeries): boolean {
  return metricPoints(series).length > 0;
}

export interface TaskMetricsHover {
  step: number;
  tokenAccuracy: number | null;
  exactMatch: number | null;
  /** A DPO job's held-out preference accuracy. */
  preferenceAccuracy: number | null;
  /** A DPO job's preference accuracy on the step's training pairs. */
  trainPreferenceAccuracy: number | null;
}

/** The step nearest to x among the task metric points, with whichever metrics exist at that step. */
export function nearestTaskMetrics(series: LossSeries, x: number): TaskMetricsHover | null {
  let best: number | null = null;
  for (const p of metricPoints(series)) {
    if (best === null || Math.abs(p.step - x) < Math.abs(best - x)) best = p.step;
  }
  if (best === null) return null;
  const at = (points: LossPoint[]) => {
    for (let i = points.length - 1; i >= 0; i--) if (points[i].step === best) return points[i].value;
    return null;
  };
  return {
    step: best,
    tokenAccuracy: at(series.tokenAccuracy),
    exactMatch: at(series.exactMatch),
    preferenceAccuracy: at(series.preferenceAccuracy),
    trainPreferenceAccuracy: at(series.trainPreferenceAccuracy),
  };
}

/** The step range of the loss chart when it has points (so the two charts line up), else the metrics' own. */
export function metricsStepExtent(series: LossSeries): Extent {
  const points = series.train.length + series.eval.length > 0 ? [...series.train, ...series.eval] : [];
  const all = points.length > 0 ? points : metricPoints(series);
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const p of all) {
    if (p.step < min) min = p.step;
    if (p.step > max) max = p.step;
  }
  return min === max ? { min, max: max + 1 } : { min, max };
}

/** A fraction as a percentage with one decimal: 0.8125 → "81.3%". */
export function formatPercent(v: number): string {
  return `${(v * 100).toFixed(1)}%`;
}

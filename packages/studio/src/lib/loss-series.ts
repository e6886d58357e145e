// Chart data from training.log events: a Training loss point per frame with a
// numeric loss, an Eval loss point per frame with a numeric evalLoss (eval-only
// frames included), plus the geometry helpers the SVG chart uses. The eval task
// metrics (evalTokenAccuracy, evalExactMatch: fractions) ride along for their
// own chart (TaskMetricsChart) and the CSV, and so does a DPO job's held-out
// preference accuracy (evalRewards.accuracy, docs/post-training.md), and its
// per-step figures (rewards: chosen and rejected reward, margin, accuracy) and
// their eval counterparts for the rewards chart (preference-rewards.ts); the
// loss chart's scale, hover and placeholder read the two loss series only.
export interface LossPoint {
  step: number;
  value: number;
}

export interface LossSeries {
  train: LossPoint[];
  eval: LossPoint[];
  /** Points of frames with a numeric evalTokenAccuracy. */
  tokenAccuracy: LossPoint[];
  /** Points of frames with a numeric evalExactMatch. */
  exactMatch: LossPoint[];
  /** A DPO job's: points of frames with a numeric evalRewards.accuracy. */
  preferenceAccuracy: LossPoint[];
  /** A DPO job's training figures (rewards.accuracy, .chosenReward, .rejectedReward, .margin). */
  trainPreferenceAccuracy: LossPoint[];
  chosenReward: LossPoint[];
  rejectedReward: LossPoint[];
  margin: LossPoint[];
  /** The same on the eval set (evalRewards.*). */
  evalChosenReward: LossPoint[];
  evalRejectedReward: LossPoint[];
  evalMargin: LossPoint[];
}

const SERIES_KEYS = [
  "train",
  "eval",
  "tokenAccuracy",
  "exactMatch",
  "preferenceAccuracy",
  "trainPreferenceAccuracy",
  "chosenReward",
  "rejectedReward",
  "margin",
  "evalChosenReward",
  "evalRejectedReward",
  "evalMargin",
] as const;

type SeriesKey = (typeof SERIES_KEYS)[number];

/** The training.log field each series is drawn from. */
const FIELD_OF: Record<SeriesKey, string> = {
  train: "loss",
  eval: "evalLoss",
  tokenAccuracy: "evalTokenAccuracy",
  exactMatch: "evalExactMatch",
  preferenceAccuracy: "evalRewards.accuracy",
  trainPreferenceAccuracy: "rewards.accuracy",
  chosenReward: "rewards.chosenReward",
  rejectedReward: "rewards.rejectedReward",
  margin: "rewards.margin",
  evalChosenReward: "evalRewards.chosenReward",
  evalRejectedReward: "evalRewards.rejectedReward",
  evalMargin: "evalRewards.margin",
};

/** A DPO job's series (read from rewards and evalRewards): a CSV column only when the job logged them. */
const PREFERENCE_KEYS: ReadonlySet<SeriesKey> = new Set(
  SERIES_KEYS.filter((key) => /^(evalR|r)ewards\./.test(FIELD_OF[key])),
);

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** A payload's field by its FIELD_OF path ("evalRewards.accuracy" reads a nested object). */
function fieldOf(payload: Record<string, unknown>, path: string): unknown {
  let value: unknown = payload;
  for (const key of path.split("."))
    value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  return value;
}

export function emptySeries(): LossSeries {
  return {
    train: [],
    eval: [],
    tokenAccuracy: [],
    exactMatch: [],
    preferenceAccuracy: [],
    trainPreferenceAccuracy: [],
    chosenReward: [],
    rejectedReward: [],
    margin: [],
    evalChosenReward: [],
    evalRejectedReward: [],
    evalMargin: [],
  };
}

/** Adds the points of one training.log payload; returns the same object when nothing numeric arrived. */
export function addLogFrame(series: LossSeries, payload: Record<string, unknown>): LossSeries {
  const step = payload.step;
  if (!isNumber(step)) return series;
  if (!SERIES_KEYS.some((key) => isNumber(fieldOf(payload, FIELD_OF[key])))) return series;
  const next = { ...series };
  for (const key of SERIES_KEYS) {
    const value = fieldOf(payload, FIELD_OF[key]);
    if (isNumber(value)) next[key] = [...series[key], { step, value }];
  }
  return next;
}

/**
 * The series without points past `step`: a run resumed from the checkpoint at
 * `step` (training.started with resumedFromStep) logs the following steps
 * again, and its frames replace the earlier run's, so each step counts once in
 * the chart, the statistics and the CSV.
 */
export function dropStepsAfter(series: LossSeries, step: number): LossSeries {
  if (!SERIES_KEYS.some((key) => series[key].some((p) => p.step > step))) return series;
  const next = { ...series };
  for (const key of SERIES_KEYS) next[key] = series[key].filter((p) => p.step <= step);
  return next;
}

export function hasPoints(series: LossSeries): boolean {
  return series.train.length > 0 || series.eval.length > 0;
}

export interface Extent {
  min: number;
  max: number;
}

/** Min–max extent of the values (y) or the steps (x) over both series; widened when flat. */
export function extent(series: LossSeries, of: "step" | "value"): Extent {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const p of [...series.train, ...series.eval]) {
    const v = of === "step" ? p.step : p.value;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === max) {
    const pad = of === "step" ? 1 : Math.abs(min) * 0.05 || 1;
    return { min: min - (of === "step" ? 0 : pad), max: max + pad };
  }
  return { min, max };
}

export interface HoverInfo {
  step: number;
  loss: number | null;
  evalLoss: number | null;
}

/** The step nearest to x among all points, with whichever values exist at that step. */
export function nearestStep(series: LossSeries, x: number): HoverInfo | null {
  let best: number | null = null;
  for (const p of [...series.train, ...series.eval]) {
    if (best === null || Math.abs(p.step - x) < Math.abs(best - x)) best = p.step;
  }
  if (best === null) return null;
  const at = (points: LossPoint[]) => {
    for (let i = points.length - 1; i >= 0; i--) if (points[i].step === best) return points[i].value;
    return null;
  };
  return { step: best, loss: at(series.train), evalLoss: at(series.eval) };
}

/** Nice round tick values covering [min, max]. */
export function ticks(min: number, max: number, count = 5): number[] {
  const span = max - min;
  if (!(span > 0)) return [min];
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= count) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step)
    out.push(Number(v.toPrecision(12)));
  return out;
}

/**
 * CSV with one row per step: step,loss,evalLoss,evalTokenAccuracy,evalExactMatch
 * (the training.log field names; empty cells where a series has no point),
 * and for a DPO job evalRewards.accuracy, then rewards.* and evalRewards.*.
 */
export function seriesToCsv(series: LossSeries): string {
  const rows = new Map<number, (number | null)[]>();
  const keys = SERIES_KEYS.filter((key) => !PREFERENCE_KEYS.has(key) || series[key].length > 0);
  keys.forEach((key, column) => {
    for (const p of series[key]) {
      const row = rows.get(p.step) ?? keys.map(() => null);
      row[column] = p.value;
      rows.set(p.step, row);
    }
  });
  const lines = [["step", ...keys.map((key) => FIELD_OF[key])].join(",")];
  for (const step of [...rows.keys()].sort((a, b) => a - b))
    lines.push([step, ...rows.get(step)!.map((v) => v ?? "")].join(","));
  return `${lines.join("\n")}\n`;
}

// Chart data from training.log events: a Training loss point per frame with a
// numeric loss, an Eval loss point per frame with a numeric evalLoss (eval-only
// frames included), plus the geometry helpers the SVG chart uses.
export interface LossPoint {
  step: number;
  value: number;
}

export interface LossSeries {
  train: LossPoint[];
  eval: LossPoint[];
}

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

export function emptySeries(): LossSeries {
  return { train: [], eval: [] };
}

/** Adds the points of one training.log payload; returns the same object when nothing numeric arrived. */
export function addLogFrame(series: LossSeries, payload: Record<string, unknown>): LossSeries {
  const step = payload.step;
  if (!isNumber(step)) return series;
  const hasLoss = isNumber(payload.loss);
  const hasEval = isNumber(payload.evalLoss);
  if (!hasLoss && !hasEval) return series;
  return {
    train: hasLoss ? [...series.train, { step, value: payload.loss as number }] : series.train,
    eval: hasEval ? [...series.eval, { step, value: payload.evalLoss as number }] : series.eval,
  };
}

/**
 * The series without points past `step`: a run resumed from the checkpoint at
 * `step` (training.started with resumedFromStep) logs the following steps
 * again, and its frames replace the earlier run's, so each step counts once in
 * the chart, the statistics and the CSV.
 */
export function dropStepsAfter(series: LossSeries, step: number): LossSeries {
  const keep = (points: LossPoint[]) =>
    points.some((p) => p.step > step) ? points.filter((p) => p.step <= step) : points;
  const train = keep(series.train);
  const evalPoints = keep(series.eval);
  return train === series.train && evalPoints === series.eval ? series : { train, eval: evalPoints };
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

/** CSV with one row per step: step,loss,evalLoss (empty cells where a series has no point). */
export function seriesToCsv(series: LossSeries): string {
  const rows = new Map<number, { loss: number | null; evalLoss: number | null }>();
  for (const p of series.train)
    rows.set(p.step, { loss: p.value, evalLoss: rows.get(p.step)?.evalLoss ?? null });
  for (const p of series.eval) rows.set(p.step, { loss: rows.get(p.step)?.loss ?? null, evalLoss: p.value });
  const lines = ["step,loss,evalLoss"];
  for (const step of [...rows.keys()].sort((a, b) => a - b)) {
    const r = rows.get(step)!;
    lines.push(`${step},${r.loss ?? ""},${r.evalLoss ?? ""}`);
  }
  return `${lines.join("\n")}\n`;
}

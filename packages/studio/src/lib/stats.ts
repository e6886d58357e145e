// Summary statistics for the Advanced cards of the loss chart. Sample estimates
// (ddof = 1), a 95% confidence half-width from Student's t with n − 1 degrees of
// freedom (z = 1.96 once n > 31), and percentiles with numpy's default linear
// interpolation.
import tQuantile from "@stdlib/stats-base-dists-t-quantile";

export interface SeriesStats {
  n: number;
  mean: number;
  /** Half-width of the 95% confidence interval of the mean; NaN when n < 2. */
  ci95: number;
  /** Sample standard deviation (ddof = 1); NaN when n < 2. */
  sd: number;
  /** Sample variance (ddof = 1); NaN when n < 2. */
  variance: number;
  p90: number;
  p95: number;
}

/** The large-sample critical value used once n exceeds 31. */
export const Z_95 = 1.96;

export function mean(values: readonly number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

export function sampleVariance(values: readonly number[]): number {
  const n = values.length;
  if (n < 2) return Number.NaN;
  const m = mean(values);
  let ss = 0;
  for (const v of values) ss += (v - m) * (v - m);
  return ss / (n - 1);
}

/** Two-sided 95% critical value for a sample of n: t(0.975, n − 1), or 1.96 for n > 31. */
export function criticalValue95(n: number): number {
  if (n < 2) return Number.NaN;
  return n > 31 ? Z_95 : tQuantile(0.975, n - 1);
}

/** numpy.percentile(values, q) with the default method="linear". */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (q / 100) * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  const frac = pos - lo;
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

export function seriesStats(values: readonly number[]): SeriesStats | null {
  const n = values.length;
  if (n === 0) return null;
  const variance = sampleVariance(values);
  const sd = Math.sqrt(variance);
  return {
    n,
    mean: mean(values),
    ci95: (criticalValue95(n) * sd) / Math.sqrt(n),
    sd,
    variance,
    p90: percentile(values, 90),
    p95: percentile(values, 95),
  };
}

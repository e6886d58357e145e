// The eval task metrics under the loss chart, in their own small SVG so the
// loss chart keeps its scale, hover and placeholder: Eval token accuracy (solid
// indigo) and Eval exact match (dashed amber), a marker at each eval, y fixed
// at 0–100% (the metrics are fractions), x the loss chart's step range so the
// two charts line up. Hidden until the first metric point; each legend entry
// appears with its series' first point. A DPO job's held-out preference
// accuracy (dotted teal) shares the chart: also a fraction, per eval; so does
// its preference accuracy on each step's training pairs (solid, lighter teal).
import { useMemo, useState } from "react";
import { linePath, stepAxis } from "../lib/chart-axis.js";
import { type LossPoint, type LossSeries, ticks } from "../lib/loss-series.js";
import {
  formatPercent,
  hasTaskMetrics,
  metricsStepExtent,
  nearestTaskMetrics,
  type TaskMetricsHover,
} from "../lib/task-metrics.js";
import { ChartSvg, HoverLine, LegendSwatch, StepGrid } from "./chart-parts.js";

export const TOKEN_ACCURACY_COLOR = "#4f46e5";
export const EXACT_MATCH_COLOR = "#d97706";
export const PREFERENCE_ACCURACY_COLOR = "#0d9488";
export const TRAIN_PREFERENCE_ACCURACY_COLOR = "#5eead4";

const W = 720;
const H = 150;
// The loss chart's left and right padding, so steps fall at the same x in both.
const PAD = { left: 56, right: 16, top: 10, bottom: 22 };
const Y_TICKS = [0, 0.25, 0.5, 0.75, 1];

export function TaskMetricsChart({ series }: { series: LossSeries }) {
  const [hover, setHover] = useState<TaskMetricsHover | null>(null);
  const geometry = useMemo(() => {
    if (!hasTaskMetrics(series)) return null;
    const xs = metricsStepExtent(series);
    const axis = stepAxis(xs, W, PAD);
    const x = axis.x;
    const y = (v: number) => PAD.top + (1 - v) * (H - PAD.top - PAD.bottom);
    const path = (pts: LossPoint[]) => linePath(pts, x, y);
    return { axis, x, y, path, xTicks: ticks(xs.min, xs.max, 6) };
  }, [series]);
  if (!geometry) return null;
  const { axis, x, y, path, xTicks } = geometry;
  const frame = { width: W, height: H, pad: PAD, x, y };

  const lines = [
    {
      points: series.tokenAccuracy,
      color: TOKEN_ACCURACY_COLOR,
      dash: undefined,
      testId: "token-accuracy-line",
    },
    { points: series.exactMatch, color: EXACT_MATCH_COLOR, dash: "6 4", testId: "exact-match-line" },
    {
      points: series.trainPreferenceAccuracy,
      color: TRAIN_PREFERENCE_ACCURACY_COLOR,
      dash: undefined,
      testId: "train-preference-accuracy-line",
    },
    {
      points: series.preferenceAccuracy,
      color: PREFERENCE_ACCURACY_COLOR,
      dash: "2 3",
      testId: "preference-accuracy-line",
    },
  ];

  return (
    <div className="chart task-metrics-chart">
      <div className="chart-toolbar">
        <div className="legend">
          {series.tokenAccuracy.length > 0 && (
            <span className="legend-item" data-testid="legend-token-accuracy">
              <LegendSwatch color={TOKEN_ACCURACY_COLOR} dashed={false} marker />
              Eval token accuracy
            </span>
          )}
          {series.exactMatch.length > 0 && (
            <span className="legend-item" data-testid="legend-exact-match">
              <LegendSwatch color={EXACT_MATCH_COLOR} dashed={true} marker />
              Eval exact match
            </span>
          )}
          {series.trainPreferenceAccuracy.length > 0 && (
            <span className="legend-item" data-testid="legend-train-preference-accuracy">
              <LegendSwatch color={TRAIN_PREFERENCE_ACCURACY_COLOR} dashed={false} marker />
              Preference accuracy
            </span>
          )}
          {series.preferenceAccuracy.length > 0 && (
            <span className="legend-item" data-testid="legend-preference-accuracy">
              <LegendSwatch color={PREFERENCE_ACCURACY_COLOR} dashed={true} marker />
              Eval preference accuracy
            </span>
          )}
        </div>
      </div>
      <ChartSvg
        width={W}
        height={H}
        label="Task metrics chart"
        testId="task-metrics-chart"
        onPointer={(px) => setHover(px === null ? null : nearestTaskMetrics(series, axis.stepAt(px)))}
      >
        <StepGrid
          frame={frame}
          yTicks={Y_TICKS}
          xTicks={xTicks}
          yLabel={(t) => `${t * 100}%`}
          strongAt={0}
          strongOpacity={0.35}
        />
        {lines.map(
          ({ points, color, dash, testId }) =>
            points.length > 0 && (
              <g key={testId} data-testid={testId} data-points={points.length}>
                <path d={path(points)} fill="none" stroke={color} strokeWidth="2" strokeDasharray={dash} />
                {points.map((p) => (
                  <circle key={p.step} cx={x(p.step)} cy={y(p.value)} r="3" fill={color} />
                ))}
              </g>
            ),
        )}
        {hover && <HoverLine frame={frame} step={hover.step} />}
      </ChartSvg>
      <div className="chart-readout" data-testid="task-metrics-readout">
        {hover ? (
          <>
            <span>step {hover.step}</span>
            {hover.tokenAccuracy !== null && (
              <span style={{ color: TOKEN_ACCURACY_COLOR }}>
                token accuracy {formatPercent(hover.tokenAccuracy)}
              </span>
            )}
            {hover.exactMatch !== null && (
              <span style={{ color: EXACT_MATCH_COLOR }}>exact match {formatPercent(hover.exactMatch)}</span>
            )}
            {hover.trainPreferenceAccuracy !== null && (
              <span style={{ color: TRAIN_PREFERENCE_ACCURACY_COLOR }}>
                preference accuracy {formatPercent(hover.trainPreferenceAccuracy)}
              </span>
            )}
            {hover.preferenceAccuracy !== null && (
              <span style={{ color: PREFERENCE_ACCURACY_COLOR }}>
                eval preference accuracy {formatPercent(hover.preferenceAccuracy)}
              </span>
            )}
          </>
        ) : (
          <span className="muted">Hover to read a step's task metrics</span>
        )}
      </div>
    </div>
  );
}

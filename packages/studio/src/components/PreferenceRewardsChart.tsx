// A DPO job's rewards under the task metrics, in their own small SVG: the
// chosen answers' mean reward (green), the rejected answers' (red) and their
// margin (violet), a solid line over each step's training pairs and a dashed
// line with a marker at each eval. y is min–max over the rewards and always
// holds 0 (drawn stronger: where the adapter equals the reference); x is the
// loss chart's step range, so the charts line up. Hidden until the first
// reward; each legend entry appears with its series' first point. Healthy:
// the margin climbs above 0 while the chosen reward stays near or above 0.
import { useMemo, useState } from "react";
import { linePath, stepAxis } from "../lib/chart-axis.js";
import { type LossSeries, ticks } from "../lib/loss-series.js";
import {
  formatReward,
  hasPreferenceRewards,
  nearestRewards,
  type RewardSeries,
  type RewardsHover,
  rewardsExtent,
} from "../lib/preference-rewards.js";
import { metricsStepExtent } from "../lib/task-metrics.js";
import { ChartSvg, HoverLine, LegendSwatch, StepGrid } from "./chart-parts.js";

export const CHOSEN_COLOR = "#16a34a";
export const REJECTED_COLOR = "#dc2626";
export const MARGIN_COLOR = "#7c3aed";

const W = 720;
const H = 170;
// The loss chart's left and right padding, so steps fall at the same x in every chart.
const PAD = { left: 56, right: 16, top: 10, bottom: 22 };

/** Each series: its colour, whether it is the eval set's (dashed, markers), its legend and readout names. */
const LINES: { key: RewardSeries; color: string; eval: boolean; label: string; testId: string }[] = [
  { key: "chosenReward", color: CHOSEN_COLOR, eval: false, label: "Chosen reward", testId: "chosen-reward" },
  {
    key: "rejectedReward",
    color: REJECTED_COLOR,
    eval: false,
    label: "Rejected reward",
    testId: "rejected-reward",
  },
  { key: "margin", color: MARGIN_COLOR, eval: false, label: "Reward margin", testId: "reward-margin" },
  {
    key: "evalChosenReward",
    color: CHOSEN_COLOR,
    eval: true,
    label: "Eval chosen reward",
    testId: "eval-chosen-reward",
  },
  {
    key: "evalRejectedReward",
    color: REJECTED_COLOR,
    eval: true,
    label: "Eval rejected reward",
    testId: "eval-rejected-reward",
  },
  {
    key: "evalMargin",
    color: MARGIN_COLOR,
    eval: true,
    label: "Eval reward margin",
    testId: "eval-reward-margin",
  },
];

export function PreferenceRewardsChart({ series }: { series: LossSeries }) {
  const [hover, setHover] = useState<RewardsHover | null>(null);
  const geometry = useMemo(() => {
    if (!hasPreferenceRewards(series)) return null;
    const xs = metricsStepExtent(series);
    const ys = rewardsExtent(series);
    const axis = stepAxis(xs, W, PAD);
    const y = (v: number) => PAD.top + (1 - (v - ys.min) / (ys.max - ys.min)) * (H - PAD.top - PAD.bottom);
    return { axis, x: axis.x, y, xTicks: ticks(xs.min, xs.max, 6), yTicks: ticks(ys.min, ys.max, 4) };
  }, [series]);
  if (!geometry) return null;
  const { axis, x, y, xTicks, yTicks } = geometry;
  const frame = { width: W, height: H, pad: PAD, x, y };
  const drawn = LINES.filter((line) => series[line.key].length > 0);

  return (
    <div className="chart task-metrics-chart" data-testid="preference-rewards">
      <div className="chart-toolbar">
        <div className="legend">
          {drawn.map((line) => (
            <span key={line.key} className="legend-item" data-testid={`legend-${line.testId}`}>
              <LegendSwatch color={line.color} dashed={line.eval} marker={line.eval} />
              {line.label}
            </span>
          ))}
        </div>
      </div>
      <ChartSvg
        width={W}
        height={H}
        label="Preference rewards chart"
        testId="preference-rewards-chart"
        onPointer={(px) => setHover(px === null ? null : nearestRewards(series, axis.stepAt(px)))}
      >
        <StepGrid frame={frame} yTicks={yTicks} xTicks={xTicks} strongAt={0} />
        {drawn.map((line) => {
          const points = series[line.key];
          return (
            <g key={line.key} data-testid={`${line.testId}-line`} data-points={points.length}>
              <path
                d={linePath(points, x, y)}
                fill="none"
                stroke={line.color}
                strokeWidth="2"
                strokeDasharray={line.eval ? "6 4" : undefined}
              />
              {(line.eval || points.length === 1) &&
                points.map((p) => (
                  <circle key={p.step} cx={x(p.step)} cy={y(p.value)} r="3" fill={line.color} />
                ))}
            </g>
          );
        })}
        {hover && <HoverLine frame={frame} step={hover.step} />}
      </ChartSvg>
      <div className="chart-readout" data-testid="preference-rewards-readout">
        {hover ? (
          <>
            <span>step {hover.step}</span>
            {LINES.map(
              (line) =>
                hover[line.key] !== null && (
                  <span key={line.key} style={{ color: line.color }}>
                    {line.label.toLowerCase()} {formatReward(hover[line.key] as number)}
                  </span>
                ),
            )}
          </>
        ) : (
          <span className="muted">Hover to read a step's rewards</span>
        )}
      </div>
    </div>
  );
}

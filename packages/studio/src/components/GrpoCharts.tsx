// A GRPO job's charts (docs/studio.md#grpo-jobs), hidden for other jobs:
// - rewards: the mean reward of each step's completions (solid) inside a band of
//   ± the mean group standard deviation, each reward's own mean (thin lines), and
//   the eval set's mean reward where an eval ran (dashed, with a dot per eval);
// - health: small multiples, each with its own y scale, of the KL to the
//   reference (absent when beta is 0), the mean completion length in tokens, and
//   the share of groups whose completions all scored the same (zero advantage).
// Hovering a chart reads that step; the Samples panel picks the step it shows.
import { useMemo, useState } from "react";
import { linePath, stepAxis } from "../lib/chart-axis.js";
import {
  GRPO_HEALTH,
  type GrpoHealthKey,
  type GrpoStep,
  grpoHealthSeries,
  grpoRewardExtent,
  grpoRewardSeries,
  grpoStepExtent,
  valueExtent,
} from "../lib/grpo-series.js";
import { type Extent, type LossPoint, ticks } from "../lib/loss-series.js";
import { type ChartFrame, ChartSvg, HoverLine, LegendSwatch, StepGrid } from "./chart-parts.js";

export const MEAN_REWARD_COLOR = "#2563eb";
export const EVAL_REWARD_COLOR = "#ea580c";
/** Each reward's own line, by its position among the reward names. */
const REWARD_COLORS = ["#16a34a", "#dc2626", "#d97706", "#7c3aed", "#0891b2", "#db2777"];
const W = 720;
// The loss chart's left and right padding, so steps fall at the same x in every chart.
const PAD = { left: 56, right: 16, top: 10, bottom: 22 };

function frameOf(xs: Extent, ys: Extent, height: number): ChartFrame {
  const axis = stepAxis(xs, W, PAD);
  const y = (v: number) => PAD.top + (1 - (v - ys.min) / (ys.max - ys.min)) * (height - PAD.top - PAD.bottom);
  return { width: W, height, pad: PAD, x: axis.x, y };
}

/** The step nearest to a pointer over one of the charts. */
function nearestStep(steps: GrpoStep[], xs: Extent, px: number | null): GrpoStep | null {
  if (px === null) return null;
  const at = stepAxis(xs, W, PAD).stepAt(px);
  let best: GrpoStep | null = null;
  for (const s of steps) if (!best || Math.abs(s.step - at) < Math.abs(best.step - at)) best = s;
  return best;
}

const fmt = (v: number) =>
  Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3);

interface ChartProps {
  steps: GrpoStep[];
}

export function GrpoRewardsChart({ steps }: ChartProps) {
  const [hover, setHover] = useState<GrpoStep | null>(null);
  const H = 190;
  const view = useMemo(() => {
    const series = grpoRewardSeries(steps);
    const xs = grpoStepExtent(steps);
    const ys = grpoRewardExtent(series);
    return { series, xs, ys, frame: frameOf(xs, ys, H) };
  }, [steps]);
  if (steps.length === 0) return null;
  const { series, xs, ys, frame } = view;
  const { x, y } = frame;
  const band = [
    ...series.band.map((b, i) => `${i ? "L" : "M"}${x(b.step).toFixed(1)},${y(b.high).toFixed(1)}`),
    ...[...series.band].reverse().map((b) => `L${x(b.step).toFixed(1)},${y(b.low).toFixed(1)}`),
    "Z",
  ].join("");
  return (
    <div className="chart task-metrics-chart" data-testid="grpo-rewards">
      <div className="chart-toolbar">
        <div className="legend">
          <span className="legend-item" data-testid="legend-mean-reward">
            <LegendSwatch color={MEAN_REWARD_COLOR} dashed={false} marker={false} />
            Mean reward ± std
          </span>
          {series.evalReward.length > 0 && (
            <span className="legend-item" data-testid="legend-eval-reward">
              <LegendSwatch color={EVAL_REWARD_COLOR} dashed marker />
              Eval reward
            </span>
          )}
          {series.perReward.map((r, i) => (
            <span key={r.name} className="legend-item" data-testid={`legend-reward-${r.name}`}>
              <LegendSwatch color={REWARD_COLORS[i % REWARD_COLORS.length]} dashed={false} marker={false} />
              {r.name}
            </span>
          ))}
        </div>
      </div>
      <ChartSvg
        width={W}
        height={H}
        label="GRPO rewards chart"
        testId="grpo-rewards-chart"
        onPointer={(px) => setHover(nearestStep(steps, xs, px))}
      >
        <StepGrid
          frame={frame}
          yTicks={ticks(ys.min, ys.max, 4)}
          xTicks={ticks(xs.min, xs.max, 6)}
          strongAt={0}
        />
        <path d={band} fill={MEAN_REWARD_COLOR} fillOpacity="0.12" data-testid="reward-std-band" />
        {series.perReward.map((r, i) => (
          <g key={r.name} data-testid={`reward-${r.name}-line`} data-points={r.points.length}>
            <path
              d={linePath(r.points, x, y)}
              fill="none"
              stroke={REWARD_COLORS[i % REWARD_COLORS.length]}
              strokeWidth="1.5"
            />
          </g>
        ))}
        <g data-testid="mean-reward-line" data-points={series.reward.length}>
          <path d={linePath(series.reward, x, y)} fill="none" stroke={MEAN_REWARD_COLOR} strokeWidth="2" />
          {series.reward.length === 1 && (
            <circle
              cx={x(series.reward[0].step)}
              cy={y(series.reward[0].value)}
              r="3"
              fill={MEAN_REWARD_COLOR}
            />
          )}
        </g>
        {series.evalReward.length > 0 && (
          <g data-testid="eval-reward-line" data-points={series.evalReward.length}>
            <path
              d={linePath(series.evalReward, x, y)}
              fill="none"
              stroke={EVAL_REWARD_COLOR}
              strokeWidth="2"
              strokeDasharray="5 3"
            />
            {series.evalReward.map((p) => (
              <circle key={p.step} cx={x(p.step)} cy={y(p.value)} r="3" fill={EVAL_REWARD_COLOR} />
            ))}
          </g>
        )}
        {hover && <HoverLine frame={frame} step={hover.step} />}
      </ChartSvg>
      <div className="chart-readout" data-testid="grpo-rewards-readout">
        {hover ? (
          <>
            <span>step {hover.step}</span>
            <span style={{ color: MEAN_REWARD_COLOR }}>
              reward {fmt(hover.reward)} ± {fmt(hover.rewardStd)}
            </span>
            {hover.evalReward !== null && (
              <span style={{ color: EVAL_REWARD_COLOR }}>eval {fmt(hover.evalReward)}</span>
            )}
            {series.perReward.map(
              (r, i) =>
                hover.rewards[r.name] !== undefined && (
                  <span key={r.name} style={{ color: REWARD_COLORS[i % REWARD_COLORS.length] }}>
                    {r.name} {fmt(hover.rewards[r.name])}
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

const HEALTH: Record<GrpoHealthKey, { label: string; color: string; testId: string }> = {
  kl: { label: "KL to reference", color: "#7c3aed", testId: "grpo-kl" },
  completionLength: {
    label: "Completion length (tokens)",
    color: "#0891b2",
    testId: "grpo-completion-length",
  },
  zeroAdvantageFraction: { label: "Zero-advantage groups", color: "#d97706", testId: "grpo-zero-advantage" },
};

function HealthPanel({
  name,
  points,
  xs,
  steps,
}: { name: GrpoHealthKey; points: LossPoint[]; xs: Extent } & ChartProps) {
  const [hover, setHover] = useState<GrpoStep | null>(null);
  const H = 110;
  const { label, color, testId } = HEALTH[name];
  const fraction = name === "zeroAdvantageFraction";
  const ys = fraction ? { min: 0, max: 1 } : valueExtent([0, ...points.map((p) => p.value)]);
  const frame = frameOf(xs, ys, H);
  const yTicks = fraction ? [0, 0.5, 1] : ticks(ys.min, ys.max, 3);
  const value = hover ? points.find((p) => p.step === hover.step)?.value : undefined;
  return (
    <div className="grpo-health-panel">
      <div className="legend-item">
        <LegendSwatch color={color} dashed={false} marker={false} />
        {label}
        <span className="muted" data-testid={`${testId}-readout`}>
          {hover && value !== undefined
            ? ` step ${hover.step}: ${fraction ? `${(value * 100).toFixed(0)}%` : fmt(value)}`
            : ""}
        </span>
      </div>
      <ChartSvg
        width={W}
        height={H}
        label={`${label} chart`}
        testId={`${testId}-chart`}
        onPointer={(px) => setHover(nearestStep(steps, xs, px))}
      >
        <StepGrid
          frame={frame}
          yTicks={yTicks}
          xTicks={ticks(xs.min, xs.max, 6)}
          yLabel={fraction ? (t) => `${t * 100}%` : undefined}
          strongAt={0}
          strongOpacity={0.35}
        />
        <g data-testid={`${testId}-line`} data-points={points.length}>
          <path d={linePath(points, frame.x, frame.y)} fill="none" stroke={color} strokeWidth="2" />
          {points.length === 1 && (
            <circle cx={frame.x(points[0].step)} cy={frame.y(points[0].value)} r="3" fill={color} />
          )}
        </g>
        {hover && <HoverLine frame={frame} step={hover.step} />}
      </ChartSvg>
    </div>
  );
}

export function GrpoHealthChart({ steps }: ChartProps) {
  const health = useMemo(() => grpoHealthSeries(steps), [steps]);
  if (steps.length === 0) return null;
  const xs = grpoStepExtent(steps);
  return (
    <div className="chart task-metrics-chart" data-testid="grpo-health">
      {GRPO_HEALTH.filter((name) => health[name].length > 0).map((name) => (
        <HealthPanel key={name} name={name} points={health[name]} xs={xs} steps={steps} />
      ))}
      {health.kl.length === 0 && (
        <p className="muted">No KL: this job trains with beta 0 (no reference pass).</p>
      )}
    </div>
  );
}

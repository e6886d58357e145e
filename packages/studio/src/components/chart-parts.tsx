// The SVG pieces every small step chart draws the same way (loss, task
// metrics, DPO rewards, GRPO rewards and health; the loss chart its grid only): the chart's svg element with its hover
// handling, a legend swatch, the y grid with its labels and the x step labels,
// and the dashed hover line. Each chart keeps its
// own series, scale and readout.
import type { ReactNode } from "react";
import { pointerX } from "../lib/chart-axis.js";

export interface ChartFrame {
  width: number;
  height: number;
  pad: { left: number; right: number; top: number; bottom: number };
  x(step: number): number;
  y(value: number): number;
}

/** A legend's line sample: dashed for eval series, with a dot where the chart marks points. */
export function LegendSwatch({ color, dashed, marker }: { color: string; dashed: boolean; marker: boolean }) {
  return (
    <svg width="22" height="10" aria-hidden="true">
      <line
        x1="0"
        y1="5"
        x2="22"
        y2="5"
        stroke={color}
        strokeWidth="2"
        strokeDasharray={dashed ? "4 3" : undefined}
      />
      {marker && <circle cx="11" cy="5" r="3" fill={color} />}
    </svg>
  );
}

/** The y grid lines with labels (the one at `strongAt`, if any, drawn stronger) and the x step labels. */
export function StepGrid({
  frame,
  yTicks,
  xTicks,
  yLabel = (t) => t,
  strongAt,
  strongOpacity = 0.45,
  xLabelDy = 15,
}: {
  frame: ChartFrame;
  yTicks: number[];
  xTicks: number[];
  yLabel?: (t: number) => ReactNode;
  strongAt?: number;
  strongOpacity?: number;
  /** How far below the plot area the step labels sit. */
  xLabelDy?: number;
}) {
  const { width: W, height: H, pad, x, y } = frame;
  return (
    <>
      {yTicks.map((t) => (
        <g key={`y${t}`}>
          <line
            x1={pad.left}
            x2={W - pad.right}
            y1={y(t)}
            y2={y(t)}
            stroke="currentColor"
            strokeOpacity={t === strongAt ? strongOpacity : 0.1}
          />
          <text x={pad.left - 8} y={y(t) + 4} textAnchor="end" fill="currentColor" fillOpacity="0.65">
            {yLabel(t)}
          </text>
        </g>
      ))}
      {xTicks.map((t) => (
        <text
          key={`x${t}`}
          x={x(t)}
          y={H - pad.bottom + xLabelDy}
          textAnchor="middle"
          fill="currentColor"
          fillOpacity="0.65"
        >
          {t}
        </text>
      ))}
    </>
  );
}

/** The dashed vertical line at the hovered step. */
export function HoverLine({ frame, step }: { frame: ChartFrame; step: number }) {
  return (
    <line
      x1={frame.x(step)}
      x2={frame.x(step)}
      y1={frame.pad.top}
      y2={frame.height - frame.pad.bottom}
      stroke="currentColor"
      strokeOpacity="0.4"
      strokeDasharray="2 2"
      pointerEvents="none"
    />
  );
}

/** A chart's svg: viewBox width × height, its label and test id; onPointer gets the pointer's x in viewBox units, null on leave. */
export function ChartSvg({
  width,
  height,
  label,
  testId,
  onPointer,
  children,
}: {
  width: number;
  height: number;
  label: string;
  testId: string;
  onPointer(px: number | null): void;
  children: ReactNode;
}) {
  return (
    <svg
      className="chart-svg"
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={label}
      data-testid={testId}
      onMouseMove={(e) => onPointer(pointerX(e, width))}
      onMouseLeave={() => onPointer(null)}
      fontFamily="system-ui, sans-serif"
      fontSize="10.5"
    >
      {children}
    </svg>
  );
}

// What the loss chart and the task-metrics chart share: steps on x across the
// plot area (and back, for hover), and a line through points. Both charts use
// the same padding, so a step falls at the same x in each.
import type { MouseEvent } from "react";
import type { LossPoint } from "./loss-series.js";

export interface StepAxis {
  /** The x of a step in viewBox units. */
  x(step: number): number;
  /** The step at an x in viewBox units. */
  stepAt(px: number): number;
}

export function stepAxis(
  steps: { min: number; max: number },
  width: number,
  pad: { left: number; right: number },
): StepAxis {
  const span = width - pad.left - pad.right;
  return {
    x: (step) => pad.left + ((step - steps.min) / (steps.max - steps.min)) * span,
    stepAt: (px) => steps.min + ((px - pad.left) / span) * (steps.max - steps.min),
  };
}

/** An SVG path through the points, coordinates to one decimal. */
export function linePath(
  points: LossPoint[],
  x: (step: number) => number,
  y: (value: number) => number,
): string {
  return points.map((p, i) => `${i ? "L" : "M"}${x(p.step).toFixed(1)},${y(p.value).toFixed(1)}`).join("");
}

/** The pointer's x in viewBox units of an SVG `width` wide. */
export function pointerX(e: MouseEvent<SVGSVGElement>, width: number): number {
  const rect = e.currentTarget.getBoundingClientRect();
  return ((e.clientX - rect.left) / rect.width) * width;
}

// Hand-written SVG loss chart: min–max y, step on x, Training loss as a solid
// teal line, Eval loss as a dashed pink line with markers, hover readout of the
// nearest step, and CSV / PNG export.
import { useMemo, useRef, useState } from "react";
import { linePath, pointerX, stepAxis } from "../lib/chart-axis.js";
import {
  extent,
  type HoverInfo,
  hasPoints,
  type LossPoint,
  type LossSeries,
  nearestStep,
  seriesToCsv,
  ticks,
} from "../lib/loss-series.js";
import { StepGrid } from "./chart-parts.js";

export const TRAIN_COLOR = "#0d9488";
export const EVAL_COLOR = "#db2777";

const W = 720;
const H = 280;
const PAD = { left: 56, right: 16, top: 16, bottom: 36 };

/** Tick labels with as many decimals as the tick spacing needs. */
function tickLabel(v: number, spacing: number): string {
  const decimals = spacing > 0 ? Math.min(6, Math.max(0, -Math.floor(Math.log10(spacing)))) : 2;
  return v.toFixed(decimals);
}

function fmt(v: number): string {
  return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(2) : v.toFixed(4);
}

function download(name: string, blob: Blob) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

function exportPng(svg: SVGSVGElement, name: string) {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  const style = getComputedStyle(svg);
  clone.setAttribute("width", String(W * 2));
  clone.setAttribute("height", String(H * 2));
  clone.style.color = style.color;
  const bg = document.createElementNS("http://www.w3.org/2000/svg", "rect");
  bg.setAttribute("width", "100%");
  bg.setAttribute("height", "100%");
  bg.setAttribute("fill", getComputedStyle(document.body).backgroundColor);
  clone.insertBefore(bg, clone.firstChild);
  const url = URL.createObjectURL(
    new Blob([new XMLSerializer().serializeToString(clone)], { type: "image/svg+xml" }),
  );
  const img = new Image();
  img.onload = () => {
    const canvas = document.createElement("canvas");
    canvas.width = W * 2;
    canvas.height = H * 2;
    canvas.getContext("2d")!.drawImage(img, 0, 0);
    URL.revokeObjectURL(url);
    canvas.toBlob((b) => b && download(name, b), "image/png");
  };
  img.src = url;
}

export function LossChart({ series, fileName = "loss" }: { series: LossSeries; fileName?: string }) {
  const svgRef = useRef<SVGSVGElement>(null);
  const [hover, setHover] = useState<HoverInfo | null>(null);
  const geometry = useMemo(() => {
    if (!hasPoints(series)) return null;
    const xs = extent(series, "step");
    const ys = extent(series, "value");
    const axis = stepAxis(xs, W, PAD);
    const x = axis.x;
    const y = (v: number) => PAD.top + (1 - (v - ys.min) / (ys.max - ys.min)) * (H - PAD.top - PAD.bottom);
    const path = (pts: LossPoint[]) => linePath(pts, x, y);
    return { axis, x, y, path, xTicks: ticks(xs.min, xs.max, 6), yTicks: ticks(ys.min, ys.max, 5) };
  }, [series]);

  if (!geometry) {
    return (
      <div className="chart-placeholder" data-testid="chart-placeholder">
        Waiting for training.log events…
      </div>
    );
  }
  const { axis, x, y, path, xTicks, yTicks } = geometry;
  const hasEval = series.eval.length > 0;

  const onMove = (e: React.MouseEvent<SVGSVGElement>) => {
    setHover(nearestStep(series, axis.stepAt(pointerX(e, W))));
  };

  return (
    <div className="chart">
      <div className="chart-toolbar">
        <div className="legend">
          <span className="legend-item" data-testid="legend-train">
            <svg width="22" height="10" aria-hidden="true">
              <line x1="0" y1="5" x2="22" y2="5" stroke={TRAIN_COLOR} strokeWidth="2.5" />
            </svg>
            Training loss
          </span>
          {hasEval && (
            <span className="legend-item" data-testid="legend-eval">
              <svg width="22" height="10" aria-hidden="true">
                <line
                  x1="0"
                  y1="5"
                  x2="22"
                  y2="5"
                  stroke={EVAL_COLOR}
                  strokeWidth="2"
                  strokeDasharray="4 3"
                />
                <circle cx="11" cy="5" r="3" fill={EVAL_COLOR} />
              </svg>
              Eval loss
            </span>
          )}
        </div>
        <div className="chart-actions">
          <button
            type="button"
            className="btn btn-small btn-ghost"
            onClick={() => download(`${fileName}.csv`, new Blob([seriesToCsv(series)], { type: "text/csv" }))}
          >
            CSV
          </button>
          <button
            type="button"
            className="btn btn-small btn-ghost"
            onClick={() => svgRef.current && exportPng(svgRef.current, `${fileName}.png`)}
          >
            PNG
          </button>
        </div>
      </div>
      <svg
        ref={svgRef}
        className="chart-svg"
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label="Loss chart"
        data-testid="loss-chart"
        onMouseMove={onMove}
        onMouseLeave={() => setHover(null)}
        fontFamily="system-ui, sans-serif"
        fontSize="10.5"
      >
        <StepGrid
          frame={{ width: W, height: H, pad: PAD, x, y }}
          yTicks={yTicks}
          xTicks={xTicks}
          yLabel={(t) => tickLabel(t, yTicks.length > 1 ? yTicks[1] - yTicks[0] : 0)}
          xLabelDy={16}
        />
        <text
          x={(PAD.left + W - PAD.right) / 2}
          y={H - 4}
          textAnchor="middle"
          fill="currentColor"
          fillOpacity="0.8"
        >
          step
        </text>
        <line
          x1={PAD.left}
          x2={W - PAD.right}
          y1={H - PAD.bottom}
          y2={H - PAD.bottom}
          stroke="currentColor"
          strokeOpacity="0.35"
        />
        {series.train.length > 0 && (
          <path
            d={path(series.train)}
            fill="none"
            stroke={TRAIN_COLOR}
            strokeWidth="2"
            strokeLinejoin="round"
            data-testid="train-line"
            data-points={series.train.length}
          />
        )}
        {series.train.length === 1 && (
          <circle cx={x(series.train[0].step)} cy={y(series.train[0].value)} r="3" fill={TRAIN_COLOR} />
        )}
        {hasEval && (
          <g data-testid="eval-line" data-points={series.eval.length}>
            <path
              d={path(series.eval)}
              fill="none"
              stroke={EVAL_COLOR}
              strokeWidth="2"
              strokeDasharray="6 4"
            />
            {series.eval.map((p) => (
              <circle key={p.step} cx={x(p.step)} cy={y(p.value)} r="3.5" fill={EVAL_COLOR} />
            ))}
          </g>
        )}
        {hover && (
          <g data-testid="chart-hover" pointerEvents="none">
            <line
              x1={x(hover.step)}
              x2={x(hover.step)}
              y1={PAD.top}
              y2={H - PAD.bottom}
              stroke="currentColor"
              strokeOpacity="0.4"
              strokeDasharray="2 2"
            />
            {hover.loss !== null && (
              <circle cx={x(hover.step)} cy={y(hover.loss)} r="4.5" fill={TRAIN_COLOR} stroke="white" />
            )}
            {hover.evalLoss !== null && (
              <circle cx={x(hover.step)} cy={y(hover.evalLoss)} r="4.5" fill={EVAL_COLOR} stroke="white" />
            )}
          </g>
        )}
      </svg>
      <div className="chart-readout" data-testid="chart-readout">
        {hover ? (
          <>
            <span>step {hover.step}</span>
            {hover.loss !== null && <span style={{ color: TRAIN_COLOR }}>loss {fmt(hover.loss)}</span>}
            {hover.evalLoss !== null && (
              <span style={{ color: EVAL_COLOR }}>evalLoss {fmt(hover.evalLoss)}</span>
            )}
          </>
        ) : (
          <span className="muted">Hover the chart to read a step</span>
        )}
      </div>
    </div>
  );
}

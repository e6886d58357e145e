// Geometry of the dataset profile's histogram in job detail: one bar per bin of
// row lengths (the API's power-of-two bins, the last one open-ended when
// outliers reach past it), bars past maxLength marked, and where the maxLength
// line falls.

export interface LengthBin {
  from: number;
  /** Exclusive; null: the open-ended last bin. */
  to: number | null;
  rows: number;
}

export interface HistogramBar {
  x: number;
  y: number;
  width: number;
  height: number;
  rows: number;
  /** Every row of the bin is longer than maxLength. */
  over: boolean;
  /** e.g. "128–135 tokens: 96 rows", "512+ tokens: 3 rows". */
  label: string;
}

export interface HistogramLayout {
  bars: HistogramBar[];
  /** x of the maxLength line; null when there are no bins. */
  markerX: number | null;
  /** maxLength lies past the longest row (every row fits). */
  markerBeyond: boolean;
}

const rowsText = (n: number) => `${n} row${n === 1 ? "" : "s"}`;

export function binLabel(bin: LengthBin): string {
  const range =
    bin.to === null ? `${bin.from}+` : bin.to - bin.from === 1 ? `${bin.from}` : `${bin.from}–${bin.to - 1}`;
  return `${range} tokens: ${rowsText(bin.rows)}`;
}

/** Bars filling `width` × `height`, tallest bin full height; a bin with rows is at least 2 high. */
export function histogramLayout(
  bins: LengthBin[],
  maxLength: number,
  size: { width: number; height: number },
): HistogramLayout {
  if (bins.length === 0) return { bars: [], markerX: null, markerBeyond: false };
  const slot = size.width / bins.length;
  const gap = Math.min(2, slot * 0.15);
  const tallest = Math.max(1, ...bins.map((b) => b.rows));
  const bars = bins.map((bin, k): HistogramBar => {
    const height = bin.rows === 0 ? 0 : Math.max(2, (bin.rows / tallest) * size.height);
    return {
      x: k * slot + gap / 2,
      y: size.height - height,
      width: slot - gap,
      height,
      rows: bin.rows,
      over: bin.from >= maxLength,
      label: binLabel(bin),
    };
  });
  // The line sits at maxLength's place within its bin (tokens above it are over).
  let markerX: number | null = null;
  let markerBeyond = false;
  const last = bins[bins.length - 1];
  if (maxLength < bins[0].from) markerX = 0;
  else if (last.to !== null && maxLength >= last.to) {
    markerX = size.width;
    markerBeyond = true;
  } else {
    const k = bins.findIndex((b) => b.to === null || maxLength < b.to);
    const bin = bins[k];
    const within = bin.to === null ? 0 : (maxLength + 1 - bin.from) / (bin.to - bin.from);
    markerX = (k + Math.min(1, within)) * slot;
  }
  return { bars, markerX, markerBeyond };
}

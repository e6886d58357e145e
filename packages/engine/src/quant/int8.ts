// int8 per output channel: each row of W [rows, cols] gets one fp32 scale,
// max|row| / 127, and its weights round to the nearest multiple of it
// (symmetric, no zero point), so w ≈ q·scale with |error| ≤ scale/2.
import type { QuantMatrix } from "../kernels/types.js";

export function quantizeInt8(w: Float32Array, rows: number, cols: number): QuantMatrix & { format: "int8" } {
  const data = new Int8Array(rows * cols);
  const scales = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let max = 0;
    for (let p = 0; p < cols; p++) max = Math.max(max, Math.abs(w[o + p]));
    const scale = Math.fround(max / 127);
    scales[r] = scale;
    if (scale === 0) continue;
    const inv = 1 / scale;
    for (let p = 0; p < cols; p++) data[o + p] = Math.max(-127, Math.min(127, Math.round(w[o + p] * inv)));
  }
  return { format: "int8", rows, cols, data, scales };
}

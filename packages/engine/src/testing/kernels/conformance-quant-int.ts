// How far matmulQuant may be from the fp32 product where an implementation
// rounds x to 8 bits per 32-block (Kernels.quantInt8MaxRows: native
// avx512vnni at any number of rows, avx2 at up to 32; int8 and q4_0 weights).
//
// x[p] becomes d·q, q = round(x[p] / d), d = max|x| of p's block / 127, so
// each element is off by at most d/2 and each output y = α Σ_p w[p]·x[p] by
//   bound = |α| Σ_p |w[p]| · d_b(p) / 2                (worst case, every output)
// and, the rounding errors being spread evenly in ±d/2 and independent of w,
// by a standard deviation of
//   σ = |α| sqrt(Σ_p w[p]² · d_b(p)² / 12).
// Each output is held to its bound, and the RMS error of a case with at least
// 64 outputs to 1.5·RMS(σ), which a dropped block or a wrong scale would break
// while the worst-case bound alone might not. Both get the fp32 slack the
// other cases get: 2e-5 of max(1, max |y|).
import { dequantizeRow } from "../../kernels/quant-matrix.js";
import { referenceKernels } from "../../kernels/reference.js";
import type { Kernels, QuantMatrix } from "../../kernels/types.js";

const FP32_SLACK = 2e-5;
const RMS_FACTOR = 1.5;
const RMS_MIN_OUTPUTS = 64;

/** Whether `kern`'s matmulQuant takes these shapes the 8-bit way. */
export function roundsActivations(kern: Kernels, w: QuantMatrix, m: number): boolean {
  return w.format !== "bf16" && m <= (kern.quantInt8MaxRows ?? 0) && w.cols % 32 === 0 && w.cols > 0;
}

/**
 * The worst ratio of `kern`'s error to what rounding x to 8 bits allows (<= 1
 * passes), y being given with guard elements around [guard, guard + m·n)
 * that must come back unchanged (Infinity otherwise).
 */
export function roundedActivationsError(
  kern: Kernels,
  x: Float32Array,
  w: QuantMatrix,
  yInit: Float32Array,
  guard: number,
  m: number,
  accumulate: boolean,
  alpha: number | undefined,
): number {
  const { rows: n, cols: k } = w;
  const run = (impl: Kernels) => {
    const y = yInit.slice();
    impl.matmulQuant(x, w, y.subarray(guard, guard + m * n), m, accumulate, alpha);
    return y;
  };
  const want = run(referenceKernels);
  const got = run(kern);
  for (let i = 0; i < yInit.length; i++)
    if ((i < guard || i >= guard + m * n) && !Object.is(got[i], yInit[i])) return Number.POSITIVE_INFINITY;
  let mag = 1;
  for (const v of want) mag = Math.max(mag, Math.abs(v));
  const slack = FP32_SLACK * mag;
  const a = Math.abs(alpha ?? 1);
  // d_b / 2 of every element of x
  const half = new Float64Array(m * k);
  for (let i = 0; i < m; i++)
    for (let b = 0; b < k / 32; b++) {
      let amax = 0;
      for (let p = 0; p < 32; p++) amax = Math.max(amax, Math.abs(x[i * k + b * 32 + p]));
      half.fill(amax / 127 / 2, i * k + b * 32, i * k + b * 32 + 32);
    }
  const row = new Float64Array(k);
  let worst = 0;
  let errSq = 0;
  let sigmaSq = 0;
  for (let j = 0; j < n; j++) {
    dequantizeRow(w, j, row);
    for (let i = 0; i < m; i++) {
      let bound = 0;
      let variance = 0;
      for (let p = 0; p < k; p++) {
        const e = Math.abs(row[p]) * half[i * k + p];
        bound += e;
        variance += (e * e) / 3; // (|w|·d/2)²/3 = w²·d²/12
      }
      const err = Math.abs(got[guard + i * n + j] - want[guard + i * n + j]);
      if (!(err <= a * bound + slack)) return err / (a * bound + slack) || Number.POSITIVE_INFINITY;
      worst = Math.max(worst, err / (a * bound + slack));
      errSq += err * err;
      sigmaSq += a * a * variance;
    }
  }
  if (m * n >= RMS_MIN_OUTPUTS) {
    const rms = Math.sqrt(errSq / (m * n));
    worst = Math.max(worst, rms / (RMS_FACTOR * Math.sqrt(sigmaSq / (m * n)) + slack));
  }
  return worst;
}

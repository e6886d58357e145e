// Reading a QuantMatrix (types.ts) back: one row as numbers, the row-by-row
// product the plain-JS and reference kernels run, and the checks every
// implementation makes of a matrix before using it.
import type { QuantMatrix } from "./types.js";

const bf16Scratch = new Uint32Array(1);
const bf16Float = new Float32Array(bf16Scratch.buffer);

/** f16 bits → float (exact); the kernels' own copy, so kernels/ needs nothing from quant/. */
function f16(h: number): number {
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  const s = h & 0x8000 ? -1 : 1;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Row r of W as the format stores it, into out[0..cols) (Float32Array: rounded to fp32). */
export function dequantizeRow(w: QuantMatrix, r: number, out: Float32Array | Float64Array): void {
  const k = w.cols;
  switch (w.format) {
    case "bf16": {
      const o = r * k;
      for (let p = 0; p < k; p++) {
        bf16Scratch[0] = w.data[o + p] << 16;
        out[p] = bf16Float[0];
      }
      return;
    }
    case "int8": {
      const o = r * k;
      const s = w.scales[r];
      for (let p = 0; p < k; p++) out[p] = w.data[o + p] * s;
      return;
    }
    case "q4_0": {
      const blocks = k / 32;
      for (let b = 0; b < blocks; b++) {
        const d = f16(w.scales[r * blocks + b]);
        const o = r * (k / 2) + b * 16;
        for (let j = 0; j < 16; j++) {
          const byte = w.data[o + j];
          out[b * 32 + j] = ((byte & 15) - 8) * d;
          out[b * 32 + j + 16] = ((byte >> 4) - 8) * d;
        }
      }
      return;
    }
  }
}

/**
 * y[m, rows] = alpha·x·Wᵀ (+ y) row by row of W, float64 sums: the plain-JS
 * kernel (row in a Float32Array) and the reference (a Float64Array).
 */
export function matmulQuantRows(
  x: Float32Array,
  w: QuantMatrix,
  y: Float32Array,
  m: number,
  accumulate: boolean,
  alpha: number,
  row: Float32Array | Float64Array,
): void {
  const { rows: n, cols: k } = w;
  for (let j = 0; j < n; j++) {
    dequantizeRow(w, j, row);
    for (let i = 0; i < m; i++) {
      let s = 0;
      const o = i * k;
      for (let p = 0; p < k; p++) s += x[o + p] * row[p];
      y[i * n + j] = alpha * s + (accumulate ? y[i * n + j] : 0);
    }
  }
}

/**
 * y[m, cols] = alpha·x[m, rows]·W (+ y), W read row by row: the plain-JS and
 * reference input gradient of a frozen layer (sums in `acc`, float64, m·cols).
 */
export function matmulQuantTransRows(
  x: Float32Array,
  w: QuantMatrix,
  y: Float32Array,
  m: number,
  accumulate: boolean,
  alpha: number,
  row: Float32Array | Float64Array,
  acc: Float64Array,
): void {
  const { rows: n, cols: k } = w;
  acc.fill(0, 0, m * k);
  for (let r = 0; r < n; r++) {
    dequantizeRow(w, r, row);
    for (let i = 0; i < m; i++) {
      const xv = x[i * n + r];
      const o = i * k;
      for (let p = 0; p < k; p++) acc[o + p] += xv * row[p];
    }
  }
  for (let i = 0; i < m * k; i++) y[i] = alpha * acc[i] + (accumulate ? y[i] : 0);
}

function failIn(arg: string, detail: string, range: boolean, fn: string): never {
  const msg = `${fn}: argument '${arg}' ${detail}`;
  throw range ? new RangeError(msg) : new TypeError(msg);
}

/** Checks a QuantMatrix's format, shape and array types and lengths; throws naming what is wrong. */
export function checkQuantMatrix(w: QuantMatrix, fn = "matmulQuant"): void {
  const fail = (arg: string, detail: string, range: boolean): never => failIn(arg, detail, range, fn);
  if (typeof w !== "object" || w === null) fail("w", "must be a QuantMatrix", false);
  const { format, rows, cols } = w;
  for (const [name, v] of [
    ["w.rows", rows],
    ["w.cols", cols],
  ] as const) {
    if (typeof v !== "number") fail(name, "must be a number", false);
    if (!(v >= 0 && Number.isSafeInteger(v))) fail(name, `must be a non-negative integer, got ${v}`, true);
  }
  const nk = rows * cols;
  const need = (
    name: string,
    v: unknown,
    type: abstract new (...args: never[]) => unknown,
    tname: string,
    n: number,
  ) => {
    if (!(v instanceof type)) fail(name, `must be ${tname}`, false);
    const len = (v as ArrayLike<number>).length;
    if (len < n) fail(name, `has ${len} elements but the shapes need ${n}`, true);
  };
  switch (format) {
    case "bf16":
      need("w.data", w.data, Uint16Array, "a Uint16Array", nk);
      return;
    case "int8":
      need("w.data", w.data, Int8Array, "an Int8Array", nk);
      need("w.scales", w.scales, Float32Array, "a Float32Array", rows);
      return;
    case "q4_0":
      if (cols % 32 !== 0) fail("w.cols", `must be a multiple of 32 for q4_0, got ${cols}`, true);
      need("w.data", w.data, Uint8Array, "a Uint8Array", nk / 2);
      need("w.scales", w.scales, Uint16Array, "a Uint16Array", nk / 32);
      return;
    default:
      fail("w.format", `must be "bf16", "int8" or "q4_0", got ${JSON.stringify(format)}`, true);
  }
}

/** matmulQuantTrain's y width: W's rows forward (x·Wᵀ), its columns for the input gradient (dy·W). */
export function quantTrainCols(w: QuantMatrix, transW: boolean): number {
  return transW ? w.cols : w.rows;
}

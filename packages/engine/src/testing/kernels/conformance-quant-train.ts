// Conformance and fuzz cases of matmulQuantTrain, the training products with a
// frozen weight in a serving format: both orientations (x·Wᵀ forward, dy·W
// input gradient), every format, GEMV row counts and the many-row path,
// shapes on and across the native bf16 GEMM's tile edges (12 rows, 32
// columns, 256 pairs = 512 of the contraction per pass, 512 columns per
// packed block, 4096 pairs per chunk of x, fewer where packed x passes 1 MB),
// odd contractions (a half pair), views at non-zero offsets,
// accumulate and alpha, the low-rank term (a LoRA branch's second product, on
// the last pass's tiles in the native bf16 GEMM), y between guards that must
// come back untouched.
//
// Where an implementation multiplies bf16 weights with bf16 dot products
// (Kernels.bf16Dot), x is rounded to bf16 first (and so, in a bf16 product,
// for int8 weights: x·Wᵀ rounds x, dy·W rounds dy times W's row scales, the
// codes being exact bf16 values): each x is then off by at most
// 2⁻⁸ of itself (half a unit in the last of 8 significant bits), so each output
//   y = α Σ_p w[p]·x[p]   may be off by   bound = |α| Σ_p |w[p]·x[p]| · 2⁻⁸,
// and, the rounding errors spread in ± that and independent of w, by an RMS
// of at most sqrt(Σ_p (w[p]·x[p]·2⁻⁸)² / 3). Those cases are held to both
// (plus the fp32 slack of 2e-5 of max(1, max |y|)) in place of the tolerance.

import { dequantizeRow } from "../../kernels/quant-matrix.js";
import { referenceKernels } from "../../kernels/reference.js";
import type { Kernels, LowRankTerm, QuantFormat, QuantMatrix } from "../../kernels/types.js";
import { type KernelCase, randomSource, randomView } from "./conformance-inputs.js";
import { randomQuantMatrix } from "./conformance-quant.js";

const GUARD = 5;
const FP32_SLACK = 2e-5;
const BF16_REL = 2 ** -8;
const RMS_FACTOR = 1.5;

interface Shape {
  format: QuantFormat;
  m: number;
  /** W's rows and columns. */
  n: number;
  k: number;
  transW: boolean;
  accumulate: boolean;
  alpha: number | undefined;
  /** The low-rank term's width and orientation (its a [m, k2], b op'd to [k2, cols]), or none. */
  lowRank?: { k: number; transB: boolean; alpha: number };
  /** A bf16 run's product (matmulQuantTrain's bf16): int8 weights may take bf16 dot products. */
  bf16?: boolean;
}

function operands(shape: Shape, seed: number) {
  const { format, m, n, k, transW } = shape;
  const rand = randomSource(seed);
  const w = randomQuantMatrix(rand, format, n, k);
  const x = randomView(rand, m * (transW ? n : k));
  const yBuf = new Float32Array(m * (transW ? k : n) + 2 * GUARD);
  for (let i = 0; i < yBuf.length; i++) yBuf[i] = rand();
  const term = shape.lowRank;
  const lowRank: LowRankTerm | undefined = term && {
    ...term,
    a: randomView(rand, m * term.k),
    b: randomView(rand, (transW ? k : n) * term.k),
  };
  return { w, x, yBuf, lowRank };
}

function run(kern: Kernels, shape: Shape, seed: number): Float32Array {
  const { w, x, yBuf, lowRank } = operands(shape, seed);
  const cols = shape.transW ? shape.k : shape.n;
  kern.matmulQuantTrain(
    x,
    w,
    yBuf.subarray(GUARD, GUARD + shape.m * cols),
    shape.m,
    shape.transW,
    shape.accumulate,
    shape.alpha,
    lowRank,
    shape.bf16,
  );
  return yBuf;
}

/** W as float64 [n, k]. */
function dense(w: QuantMatrix): Float64Array {
  const out = new Float64Array(w.rows * w.cols);
  const row = new Float64Array(w.cols);
  for (let r = 0; r < w.rows; r++) {
    dequantizeRow(w, r, row);
    out.set(row, r * w.cols);
  }
  return out;
}

/** The worst ratio of `kern`'s error to what rounding x to bf16 allows (<= 1 passes). */
function bf16RoundedError(kern: Kernels, shape: Shape, seed: number): number {
  const { m, n, k, transW } = shape;
  const want = run(referenceKernels, shape, seed);
  const got = run(kern, shape, seed);
  const { w, x, yBuf } = operands(shape, seed);
  const cols = transW ? k : n;
  const inner = transW ? n : k;
  for (let i = 0; i < yBuf.length; i++)
    if ((i < GUARD || i >= GUARD + m * cols) && !Object.is(got[i], yBuf[i])) return Number.POSITIVE_INFINITY;
  let mag = 1;
  for (const v of want) mag = Math.max(mag, Math.abs(v));
  const slack = FP32_SLACK * mag;
  const a = Math.abs(shape.alpha ?? 1);
  const wd = dense(w);
  let worst = 0;
  let errSq = 0;
  let sigmaSq = 0;
  for (let i = 0; i < m; i++)
    for (let j = 0; j < cols; j++) {
      let bound = 0;
      let variance = 0;
      for (let p = 0; p < inner; p++) {
        const e = Math.abs(x[i * inner + p] * (transW ? wd[p * k + j] : wd[j * k + p])) * BF16_REL;
        bound += e;
        variance += (e * e) / 3;
      }
      const err = Math.abs(got[GUARD + i * cols + j] - want[GUARD + i * cols + j]);
      const limit = a * bound + slack;
      if (!(err <= limit)) return err / limit || Number.POSITIVE_INFINITY;
      worst = Math.max(worst, err / limit);
      errSq += err * err;
      sigmaSq += a * a * variance;
    }
  if (m * cols >= 64) {
    const rms = Math.sqrt(errSq / (m * cols));
    worst = Math.max(worst, rms / (RMS_FACTOR * Math.sqrt(sigmaSq / (m * cols)) + slack));
  }
  return worst;
}

function shapeCase(shape: Shape, seed: number, prefix = "matmulQuantTrain"): KernelCase {
  const { format, m, n, k, transW, accumulate, alpha, lowRank, bf16 } = shape;
  const term = lowRank ? ` + low rank ${lowRank.k}${lowRank.transB ? " transB" : ""}` : "";
  const bf16Products = format === "bf16" || (format === "int8" && bf16 === true);
  return {
    name: `${prefix} ${format} ${m}x${n}x${k}${transW ? " transW" : ""}${accumulate ? " acc" : ""}${alpha !== undefined ? ` α=${alpha}` : ""}${term}${bf16 ? " in bf16" : ""}`,
    tolerance: 2e-5,
    run: (kern) => [run(kern, shape, seed)],
    roundedActivations: (kern) => (kern.bf16Dot && bf16Products ? bf16RoundedError(kern, shape, seed) : null),
  };
}

export function quantTrainCases(): KernelCase[] {
  // [m, W rows, W cols]
  const shapes: [number, number, number][] = [
    [1, 9, 64],
    [3, 17, 33],
    [16, 40, 96],
    [32, 50, 192],
    [33, 31, 64], // one row past the GEMV: the bf16 GEMM, every tile ragged
    [12, 32, 32],
    [36, 64, 512], // whole tiles, one whole pass
    [37, 65, 513], // one past each: a half pair, a 1-row tile, a 1-column panel
    [48, 130, 1030], // three passes over the contraction, a ragged last
    [70, 520, 96], // a second packed block of columns
    [100, 96, 577],
    [40, 8195, 40], // transW: a contraction of two chunks (4096 pairs each) and an odd tail; else 17 blocks of columns
    // 1100 rows: chunks of 237 pairs keep packed x within 1 MB (BF_X_BYTES), three over 1001 and a ragged tail
    [1100, 40, 1001],
    [1100, 1001, 40],
  ];
  const out: KernelCase[] = [];
  let seed = 900;
  for (const format of ["bf16", "int8", "q4_0"] as const)
    for (const [m, n, k] of shapes) {
      if (format === "q4_0" && k % 32 !== 0) continue;
      for (const transW of [false, true]) {
        const s = seed++;
        const accumulate = (s & 1) === 0;
        const alpha = s % 3 === 0 ? 0.5 : undefined;
        out.push(shapeCase({ format, m, n, k, transW, accumulate, alpha }, s));
        // the same with a LoRA branch's term: rank 16 as training uses it (B [cols, r] forward,
        // the stacked A [r, cols] backward), and an odd rank the other way round
        const lowRank =
          s % 2 === 0 ? { k: 16, transB: !transW, alpha: 2 } : { k: 5, transB: transW, alpha: -0.75 };
        out.push(shapeCase({ format, m, n, k, transW, accumulate, alpha, lowRank }, s + 5000));
        // a bf16 run's int8 products (vdpbf16ps where the kernels have it, the scales around it)
        if (format === "int8") {
          out.push(shapeCase({ format, m, n, k, transW, accumulate, alpha, bf16: true }, s + 10000));
          out.push(shapeCase({ format, m, n, k, transW, accumulate, alpha, lowRank, bf16: true }, s + 15000));
        }
      }
    }
  out.push({
    name: "matmulQuantTrain bf16 transW with no rows of W overwrites y with zeros",
    tolerance: 0,
    run(kern) {
      const y = randomView(randomSource(8), 6);
      const w: QuantMatrix = { format: "bf16", rows: 0, cols: 3, data: new Uint16Array(0), scales: null };
      kern.matmulQuantTrain(new Float32Array(0), w, y, 2, true, false);
      return [y];
    },
  });
  return out;
}

/** `count` seeded random shapes (case i depends only on (seed, i)), aimed at the tile edges above. */
export function quantTrainFuzzCases(seed: number, count: number): KernelCase[] {
  const out: KernelCase[] = [];
  for (let i = 0; i < count; i++) {
    const rand = randomSource((seed * 7919 + i) >>> 0);
    const pick = (xs: number[]) => xs[Math.floor(((rand() + 1) / 2) * xs.length) % xs.length];
    const near = (edges: number[]) => Math.max(1, pick(edges) + pick([-1, 0, 0, 1, 2]));
    const format = pick([0, 0, 1]) === 0 ? "bf16" : "int8";
    const shape: Shape = {
      format,
      m: near([1, 12, 24, 32, 33, 48, 96]),
      n: near([1, 16, 32, 64, 100, 256, 512]),
      k: near([2, 31, 64, 257, 512, 520]),
      transW: rand() < 0,
      accumulate: rand() < 0,
      alpha: rand() < -0.5 ? -1.5 : undefined,
      bf16: format === "int8" && rand() < 0,
    };
    if (rand() < 0) shape.lowRank = { k: near([1, 16, 32, 48]), transB: rand() < 0, alpha: 1.5 };
    out.push(shapeCase(shape, (seed + i) >>> 0, `matmulQuantTrain fuzz ${seed}/${i}`));
  }
  return out;
}

// Kernel conformance cases: each runs one kernel on seeded random inputs (odd
// sizes, GQA, KV-cache strides, ignored targets, in-place gradients, subarray
// views) and returns its outputs, so any implementation can be compared with
// the reference kernels (see compareWithReference). The cases of the kernels
// that newer architectures need (partial rotary, sliding windows, GeGLU, biases)
// are in conformance-ops.ts.

import { referenceKernels } from "../../kernels/reference.js";
import type { Kernels } from "../../kernels/types.js";
import { attentionBf16Cases } from "./conformance-attention-bf16.js";
import { type KernelCase, randomSource, randomView, ropeTables } from "./conformance-inputs.js";
import { opsCases } from "./conformance-ops.js";
import { quantCases } from "./conformance-quant.js";
import { quantTrainCases } from "./conformance-quant-train.js";

export { type KernelCase, randomSource } from "./conformance-inputs.js";

function matmulCases(): KernelCase[] {
  const shapes: [number, number, number][] = [
    [1, 7, 5],
    [1, 300, 129],
    [3, 33, 17],
    [4, 65, 300],
    [5, 3100, 20],
    [13, 37, 29],
    [7, 100, 520],
    [50, 70, 300],
    [131, 97, 263],
    [200, 16, 70],
    [97, 130, 16],
    [13, 3100, 40],
    [40, 3100, 40],
    [60, 40, 33],
    [20, 45, 100],
    [32, 97, 576],
    [300, 47, 50],
  ];
  const out: KernelCase[] = [];
  let seed = 1;
  for (const [m, n, k] of shapes)
    for (const transA of [false, true])
      for (const transB of [false, true]) {
        const accumulate = (seed & 1) === 0;
        const alpha = seed % 3 === 0 ? 0.5 : undefined;
        const s = seed++;
        out.push({
          name: `matmul ${m}x${n}x${k}${transA ? " tA" : ""}${transB ? " tB" : ""}${accumulate ? " acc" : ""}${alpha ? ` α=${alpha}` : ""}`,
          tolerance: 2e-5,
          run(kern) {
            const rand = randomSource(s);
            const a = randomView(rand, m * k);
            const b = randomView(rand, k * n);
            const c = randomView(rand, m * n);
            kern.matmul(a, b, c, m, n, k, transA, transB, accumulate, alpha);
            return [c];
          },
        });
      }
  out.push({
    name: "matmul k=0 overwrites C with zeros",
    tolerance: 0,
    run(kern) {
      const c = randomView(randomSource(99), 12);
      kern.matmul(new Float32Array(0), new Float32Array(0), c, 3, 4, 0, false, false, false);
      return [c];
    },
  });
  return out;
}

// The fused path (many rows and columns, both k > 0) in one pass and in
// several (k past the largest pass, 768), over more than one column block
// (3100 > 3072) and row block; few rows, few columns and k = 0 run two products.
function matmulLowRankCases(): KernelCase[] {
  const shapes: [number, number, number, number][] = [
    [64, 96, 576, 16],
    [200, 130, 70, 48],
    [37, 3100, 40, 8],
    [50, 70, 1000, 16],
    [13, 37, 29, 16],
    [60, 16, 33, 4],
    [40, 50, 0, 16],
    [40, 50, 30, 0],
  ];
  const out: KernelCase[] = [];
  let seed = 500;
  for (const [m, n, k, k2] of shapes)
    for (const [transB, transB2] of [
      [true, true],
      [false, false],
      [true, false],
    ]) {
      const accumulate = (seed & 1) === 0;
      const s = seed++;
      out.push({
        name: `matmulLowRank ${m}x${n}x${k}+${k2}${transB ? " tB" : ""}${transB2 ? " tB2" : ""}${accumulate ? " acc" : ""}`,
        tolerance: 2e-5,
        run(kern) {
          const rand = randomSource(s);
          const a = randomView(rand, m * k);
          const b = randomView(rand, k * n);
          const c = randomView(rand, m * n);
          const a2 = randomView(rand, m * k2);
          const b2 = randomView(rand, k2 * n);
          kern.matmulLowRank(a, b, c, m, n, k, transB, a2, b2, k2, transB2, 1.75, accumulate);
          return [c];
        },
      });
    }
  return out;
}

function rmsnormCases(): KernelCase[] {
  const out: KernelCase[] = [];
  for (const [rows, dim, withDw] of [
    [5, 37, true],
    [9, 64, false],
    [3, 577, true],
  ] as [number, number, boolean][]) {
    out.push({
      name: `rmsnorm rows=${rows} dim=${dim}${withDw ? "" : " frozen"}`,
      tolerance: 2e-5,
      run(kern) {
        const rand = randomSource(rows * 1000 + dim);
        const x = randomView(rand, rows * dim, 2);
        const w = randomView(rand, dim);
        const dy = randomView(rand, rows * dim);
        const y = new Float32Array(rows * dim);
        const rstd = new Float32Array(rows);
        kern.rmsnormForward(x, w, y, rstd, rows, dim, 1e-5);
        const dx = new Float32Array(rows * dim);
        const dw = withDw ? randomView(rand, dim) : null;
        kern.rmsnormBackward(dy, x, w, rstd, dx, dw, rows, dim);
        return dw ? [y, rstd, dx, dw] : [y, rstd, dx];
      },
    });
  }
  return out;
}

function ropeCases(): KernelCase[] {
  const out: KernelCase[] = [];
  for (const headDim of [8, 16, 64])
    for (const inverse of [false, true]) {
      out.push({
        name: `rope headDim=${headDim}${inverse ? " inverse" : ""}`,
        tolerance: 1e-5,
        run(kern) {
          const rand = randomSource(headDim + (inverse ? 7 : 0));
          const T = 11;
          const nHeads = 3;
          const [cos, sin] = ropeTables(40, headDim / 2, 10000);
          const positions = Int32Array.from({ length: T }, (_, i) => (i * 7 + 3) % 40);
          const x = randomView(rand, T * nHeads * headDim);
          kern.rope(x, cos, sin, positions, T, nHeads, headDim, inverse);
          return [x];
        },
      });
    }
  return out;
}

function swigluCases(): KernelCase[] {
  return [13, 4099].map((n) => ({
    name: `swiglu n=${n}`,
    tolerance: 1e-5,
    run(kern: Kernels) {
      const rand = randomSource(n);
      const gate = randomView(rand, n, 6);
      const up = randomView(rand, n);
      const dOut = randomView(rand, n);
      const out = new Float32Array(n);
      const dGate = new Float32Array(n);
      const dUp = new Float32Array(n);
      kern.swigluForward(gate, up, out, n);
      kern.swigluBackward(dOut, gate, up, dGate, dUp, n);
      return [out, dGate, dUp];
    },
  }));
}

function attentionCases(): KernelCase[] {
  const out: KernelCase[] = [];
  // [T, S, nHeads, nKv, headDim, extra kvStride padding]; decode (T = 1) over
  // one and several chunks of keys, ragged ones, groups of 7 and head dims
  // that are not a whole number of vectors; heads that do not fill the
  // threads evenly, whose query blocks the backward pass splits in pairs
  const configs: [number, number, number, number, number, number][] = [
    [7, 7, 4, 2, 8, 0],
    [150, 150, 3, 1, 16, 0],
    [260, 260, 5, 1, 8, 0],
    [33, 33, 3, 1, 16, 0],
    [70, 70, 2, 2, 64, 0],
    [5, 40, 4, 2, 16, 8],
    [1, 50, 6, 3, 64, 64],
    [1, 301, 14, 2, 20, 4],
    [1, 1000, 8, 8, 128, 0],
    [19, 19, 6, 2, 64, 0],
  ];
  for (const [T, S, nHeads, nKv, D, pad] of configs) {
    const kvStride = nKv * D + pad;
    const scale = 1 / Math.sqrt(D);
    out.push({
      name: `attentionForward T=${T} S=${S} heads=${nHeads}/${nKv} D=${D} kvStride=${kvStride}`,
      tolerance: 2e-5,
      run(kern) {
        const rand = randomSource(T * 31 + S + D);
        const q = randomView(rand, T * nHeads * D, 2);
        const k = randomView(rand, S * kvStride, 2);
        const v = randomView(rand, S * kvStride);
        const o = new Float32Array(T * nHeads * D);
        const lse = new Float32Array(nHeads * T);
        kern.attentionForward(q, k, v, o, lse, T, S, nHeads, nKv, D, scale, kvStride);
        const o2 = new Float32Array(T * nHeads * D);
        kern.attentionForward(q, k, v, o2, null, T, S, nHeads, nKv, D, scale, kvStride);
        return [o, lse, o2];
      },
    });
    if (T !== S || pad !== 0) continue;
    out.push({
      name: `attentionBackward T=${T} heads=${nHeads}/${nKv} D=${D}`,
      tolerance: 5e-5,
      run(kern) {
        const rand = randomSource(T * 17 + D);
        const n = T * nHeads * D;
        const nkv = T * nKv * D;
        const q = randomView(rand, n, 2);
        const k = randomView(rand, nkv, 2);
        const v = randomView(rand, nkv);
        const dOut = randomView(rand, n);
        const o = new Float32Array(n);
        const lse = new Float32Array(nHeads * T);
        // Both sides start from the reference forward, so only the backward is compared.
        referenceKernels.attentionForward(q, k, v, o, lse, T, T, nHeads, nKv, D, scale, nKv * D);
        const dq = randomView(rand, n);
        const dk = randomView(rand, nkv);
        const dv = randomView(rand, nkv);
        kern.attentionBackward(dOut, q, k, v, o, lse, dq, dk, dv, T, nHeads, nKv, D, scale);
        return [dq, dk, dv];
      },
    });
  }
  return out;
}

function crossEntropyCases(): KernelCase[] {
  const out: KernelCase[] = [];
  for (const [rows, vocab, mode] of [
    [6, 1001, "separate"],
    [5, 4099, "in-place"],
    [4, 37, "loss-only"],
  ] as [number, number, string][]) {
    out.push({
      name: `crossEntropy rows=${rows} vocab=${vocab} ${mode}`,
      tolerance: 2e-5,
      run(kern) {
        const rand = randomSource(rows * vocab);
        const logits = randomView(rand, rows * vocab, 8);
        const targets = Int32Array.from({ length: rows }, (_, r) => (r === 1 ? -1 : (r * 7919) % vocab));
        const dLogits =
          mode === "separate" ? randomView(rand, rows * vocab) : mode === "in-place" ? logits : null;
        const loss = kern.crossEntropy(logits, targets, rows, vocab, dLogits, 0.25);
        return dLogits ? [Float32Array.of(loss), dLogits] : [Float32Array.of(loss)];
      },
    });
  }
  return out;
}

function adamwCases(): KernelCase[] {
  return [1, 5].map((step) => ({
    name: `adamw n=1003 step=${step}`,
    tolerance: 2e-5,
    run(kern: Kernels) {
      const rand = randomSource(step);
      const n = 1003;
      const p = randomView(rand, n);
      const g = randomView(rand, n);
      const m = randomView(rand, n, 0.1);
      const v = randomView(rand, n, 0.1).map(Math.abs);
      kern.adamw(p, g, m, v, n, 1e-3, 0.9, 0.999, 1e-8, 0.1, step);
      return [p, m, v];
    },
  }));
}

// Ranks of one vector and less, several (48: a pass of two vectors and one of
// one on AVX-512), odd ranks that need padding, dxa as a column slice of a
// wider matrix at an offset, ragged row blocks, and empty n or out.
function lowRankBackwardCases(): KernelCase[] {
  const shapes: [number, number, number, number][] = [
    [64, 96, 16, 0],
    [37, 130, 16, 32],
    [50, 70, 8, 0],
    [29, 33, 48, 0],
    [13, 40, 5, 3],
    [130, 576, 64, 0],
    [3, 17, 1, 0],
    [0, 20, 16, 0],
    [9, 0, 16, 0],
  ];
  return shapes.map(([n, out, r, extra], s) => {
    const ld = r + extra;
    return {
      name: `lowRankBackward n=${n} out=${out} r=${r}${extra ? ` ldDxa=${ld}` : ""}`,
      tolerance: 2e-5,
      run(kern: Kernels) {
        const rand = randomSource(700 + s);
        const dy = randomView(rand, n * out);
        const xa = randomView(rand, n * r);
        const b = randomView(rand, out * r);
        const dB = randomView(rand, out * r);
        const dxa = randomView(rand, n * ld + 2); // the slice starts 2 floats in
        kern.lowRankBackward(dy, xa, b, dB, dxa.subarray(2), n, out, r, 0.75, ld);
        return [dB, dxa];
      },
    };
  });
}

export function kernelCases(): KernelCase[] {
  return [
    ...matmulCases(),
    ...matmulLowRankCases(),
    ...lowRankBackwardCases(),
    ...rmsnormCases(),
    ...ropeCases(),
    ...swigluCases(),
    ...attentionCases(),
    ...attentionBf16Cases(),
    ...crossEntropyCases(),
    ...adamwCases(),
    ...opsCases(),
    ...quantCases(),
    ...quantTrainCases(),
  ];
}

/**
 * Largest error of `kern` against the reference on one case, each output's
 * differences divided by max(1, that output's largest magnitude).
 */
export function compareWithReference(kern: Kernels, c: KernelCase): number {
  const want = c.run(referenceKernels);
  const got = c.run(kern);
  let worst = 0;
  for (let o = 0; o < want.length; o++) {
    let mag = 1;
    for (const x of want[o]) mag = Math.max(mag, Math.abs(x));
    for (let i = 0; i < want[o].length; i++) {
      const err = Math.abs(got[o][i] - want[o][i]) / mag;
      if (!(err <= worst)) worst = Number.isNaN(err) ? Number.POSITIVE_INFINITY : err;
    }
  }
  return worst;
}

/**
 * Why `kern` fails a case, or null: its error against the reference within the
 * case's tolerance, or within the bounds of 8-bit activations where the
 * implementation rounds them (KernelCase.roundedActivations).
 */
export function conformanceFailure(kern: Kernels, c: KernelCase): string | null {
  const ratio = c.roundedActivations?.(kern) ?? null;
  if (ratio !== null) return ratio <= 1 ? null : `${c.name}: error ${ratio}× what 8-bit activations allow`;
  const err = compareWithReference(kern, c);
  return err <= c.tolerance ? null : `${c.name}: error ${err} > ${c.tolerance}`;
}

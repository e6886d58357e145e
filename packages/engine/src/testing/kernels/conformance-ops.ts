// Conformance cases for what newer architectures need of the kernels: partial
// rotary (Phi-3), sliding-window attention (Mistral, Gemma 3, Qwen2), GeGLU
// (Gemma) and linear-layer biases (Qwen2). Part of kernelCases() (conformance.ts).

import { referenceKernels } from "../../kernels/reference.js";
import type { Kernels } from "../../kernels/types.js";
import { type KernelCase, randomSource, randomView, ropeTables } from "./conformance-inputs.js";

function partialRopeCases(): KernelCase[] {
  const out: KernelCase[] = [];
  // [headDim, rotaryDim]: half, three quarters (Phi-4-mini), odd halves that end
  // in scalar tails, the smallest, and rotaryDim given equal to headDim.
  const configs: [number, number][] = [
    [16, 8],
    [128, 96],
    [32, 12],
    [24, 2],
    [64, 64],
  ];
  for (const [headDim, rotaryDim] of configs)
    for (const inverse of [false, true]) {
      const run = (kern: Kernels) => {
        const rand = randomSource(headDim * 7 + rotaryDim + (inverse ? 1 : 0));
        const T = 9;
        const nHeads = 3;
        const [cos, sin] = ropeTables(30, rotaryDim / 2, 10000);
        const positions = Int32Array.from({ length: T }, (_, i) => (i * 11 + 5) % 30);
        const x = randomView(rand, T * nHeads * headDim);
        kern.rope(x, cos, sin, positions, T, nHeads, headDim, inverse, rotaryDim);
        return x;
      };
      const name = `rope headDim=${headDim} rotaryDim=${rotaryDim}${inverse ? " inverse" : ""}`;
      out.push({ name, tolerance: 1e-5, run: (kern) => [run(kern)] });
      if (rotaryDim === headDim) continue;
      // The dims past rotaryDim are not rotated: exactly what went in.
      out.push({
        name: `${name}: the other dims pass through`,
        tolerance: 0,
        run(kern) {
          const x = run(kern);
          return [x.filter((_, i) => i % headDim >= rotaryDim)];
        },
      });
    }
  return out;
}

function windowCases(): KernelCase[] {
  const out: KernelCase[] = [];
  // [T, S, nHeads, nKv, headDim, extra kvStride padding, window]: windows shorter
  // than T, of 1, of exactly T, longer than S; a KV cache (S > T) with padded
  // strides; decode (T = 1); query blocks of 64 that skip keys; no head dims.
  const configs: [number, number, number, number, number, number, number][] = [
    [7, 7, 4, 2, 8, 0, 3],
    [70, 70, 2, 2, 64, 0, 1],
    [33, 33, 3, 1, 16, 0, 100],
    [19, 19, 6, 2, 64, 0, 19],
    [5, 40, 4, 2, 16, 8, 12],
    [1, 50, 6, 3, 64, 64, 7],
    [1, 50, 2, 1, 16, 0, 50],
    [1, 600, 4, 1, 8, 0, 333],
    [130, 130, 4, 2, 32, 0, 40],
    [129, 129, 2, 2, 8, 0, 64],
    [200, 200, 3, 1, 16, 0, 90],
    [150, 200, 2, 1, 16, 16, 70],
    [9, 12, 2, 1, 0, 0, 4],
  ];
  for (const [T, S, nHeads, nKv, D, pad, window] of configs) {
    const kvStride = nKv * D + pad;
    const scale = 1 / Math.sqrt(Math.max(D, 1));
    out.push({
      name: `attentionForward T=${T} S=${S} heads=${nHeads}/${nKv} D=${D} kvStride=${kvStride} window=${window}`,
      tolerance: 2e-5,
      run(kern) {
        const rand = randomSource(T * 37 + S + D + window);
        const q = randomView(rand, T * nHeads * D, 2);
        const k = randomView(rand, S * kvStride, 2);
        const v = randomView(rand, S * kvStride);
        const o = new Float32Array(T * nHeads * D);
        const lse = new Float32Array(nHeads * T);
        kern.attentionForward(q, k, v, o, lse, T, S, nHeads, nKv, D, scale, kvStride, window);
        const o2 = new Float32Array(T * nHeads * D);
        kern.attentionForward(q, k, v, o2, null, T, S, nHeads, nKv, D, scale, kvStride, window);
        return [o, lse, o2];
      },
    });
    if (T !== S || pad !== 0 || D === 0) continue;
    out.push({
      name: `attentionBackward T=${T} heads=${nHeads}/${nKv} D=${D} window=${window}`,
      tolerance: 5e-5,
      run(kern) {
        const rand = randomSource(T * 19 + D + window);
        const n = T * nHeads * D;
        const nkv = T * nKv * D;
        const q = randomView(rand, n, 2);
        const k = randomView(rand, nkv, 2);
        const v = randomView(rand, nkv);
        const dOut = randomView(rand, n);
        const o = new Float32Array(n);
        const lse = new Float32Array(nHeads * T);
        // Both sides start from the reference forward, so only the backward is compared.
        referenceKernels.attentionForward(q, k, v, o, lse, T, T, nHeads, nKv, D, scale, nKv * D, window);
        const dq = randomView(rand, n);
        const dk = randomView(rand, nkv);
        const dv = randomView(rand, nkv);
        kern.attentionBackward(dOut, q, k, v, o, lse, dq, dk, dv, T, nHeads, nKv, D, scale, window);
        return [dq, dk, dv];
      },
    });
  }
  return out;
}

/** Gate values from tiny to where x³ overflows float32, each sign, and 0. */
const EXTREME_GATES = [0, 1e-8, 1e-3, 0.5, 1, 2.5, 4, 6, 9, 15, 30, 100, 1e4, 1e6, 1e12, 1e15, 3e38];

function gegluCases(): KernelCase[] {
  const random = [13, 4099].map((n) => ({
    name: `geglu n=${n}`,
    tolerance: 1e-6,
    run(kern: Kernels) {
      const rand = randomSource(n + 1);
      const gate = randomView(rand, n, 6);
      const up = randomView(rand, n);
      const dOut = randomView(rand, n);
      const out = new Float32Array(n);
      const dGate = new Float32Array(n);
      const dUp = new Float32Array(n);
      kern.gegluForward(gate, up, out, n);
      kern.gegluBackward(dOut, gate, up, dGate, dUp, n);
      return [out, dGate, dUp];
    },
  }));
  const extreme: KernelCase = {
    name: "geglu at large magnitudes (saturated tanh, overflowing x³)",
    tolerance: 1e-6,
    run(kern) {
      const g = EXTREME_GATES.flatMap((x) => [x, -x]);
      const n = g.length;
      const gate = Float32Array.from(g);
      // up and dOut scaled by 1/|x| keep every output near 1, so each is compared
      // at its own scale rather than the largest one's.
      const up = gate.map((x) => 1 / Math.max(1, Math.abs(x)));
      const dOut = up.map((u, i) => u * (i % 3 === 0 ? -1 : 1));
      const out = new Float32Array(n);
      const dGate = new Float32Array(n);
      const dUp = new Float32Array(n);
      kern.gegluForward(gate, up, out, n);
      kern.gegluBackward(dOut, gate, up, dGate, dUp, n);
      return [out, dGate, dUp];
    },
  };
  return [...random, extreme];
}

function addBiasCases(): KernelCase[] {
  const configs: [number, number, number | undefined][] = [
    [5, 37, undefined],
    [3, 4099, -0.5],
    [64, 96, 2],
    [1, 1, 1],
  ];
  return configs.map(([rows, dim, alpha]) => ({
    name: `addBias rows=${rows} dim=${dim}${alpha === undefined ? "" : ` α=${alpha}`}`,
    tolerance: 1e-6,
    run(kern: Kernels) {
      const rand = randomSource(rows * 101 + dim);
      const y = randomView(rand, rows * dim, 3);
      const bias = randomView(rand, dim);
      kern.addBias(y, bias, rows, dim, alpha);
      return [y];
    },
  }));
}

export function opsCases(): KernelCase[] {
  return [...partialRopeCases(), ...windowCases(), ...gegluCases(), ...addBiasCases()];
}

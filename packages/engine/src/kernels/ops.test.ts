// Checks of the newer kernel options on every implementation this machine has
// (each native ISA, the wasm module when built, the JS kernels, the reference),
// against independent float64 code written here rather than against
// reference.ts: sliding-window attention against an explicit mask (Hugging
// Face's kv_idx > q_idx - sliding_window) and its backward against a numerical
// gradient; GeGLU elementwise against the tanh formula; the new arguments'
// validation.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { randomSource } from "../testing/kernels/conformance.js";
import { loadNativeKernels } from "./native.js";
import { loadPortableKernels } from "./portable.js";
import { referenceKernels } from "./reference.js";
import type { Kernels } from "./types.js";

const impls: { label: string; kernels: Kernels }[] = [{ label: "reference", kernels: referenceKernels }];
try {
  for (const isa of loadNativeKernels({ isa: "baseline" }).supportedIsas)
    impls.push({ label: `native ${isa}`, kernels: loadNativeKernels({ isa }) });
} catch {}
try {
  impls.push({ label: "portable wasm-simd", kernels: loadPortableKernels({ isa: "wasm-simd" }) });
} catch {}
impls.push({ label: "portable js", kernels: loadPortableKernels({ isa: "js" }) });

function randomF32(rand: () => number, n: number, scale = 1): Float32Array {
  return Float32Array.from({ length: n }, () => rand() * scale);
}

interface Shape {
  T: number;
  S: number;
  nHeads: number;
  nKv: number;
  D: number;
  kvStride: number;
  window: number;
  scale: number;
}

/** Masked dense attention in float64: out[T,nHeads,D] and lse[nHeads,T]. */
function maskedAttention(s: Shape, q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>) {
  const { T, S, nHeads, nKv, D, kvStride, window, scale } = s;
  const out = new Float64Array(T * nHeads * D);
  const lse = new Float64Array(nHeads * T);
  const visible = (qIdx: number, kvIdx: number) => kvIdx <= qIdx && (window === 0 || kvIdx > qIdx - window);
  for (let h = 0; h < nHeads; h++) {
    const kh = Math.floor(h / (nHeads / nKv));
    for (let t = 0; t < T; t++) {
      const qIdx = S - T + t;
      const w = new Float64Array(S).fill(Number.NEGATIVE_INFINITY);
      for (let j = 0; j < S; j++) {
        if (!visible(qIdx, j)) continue;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += q[(t * nHeads + h) * D + d] * k[j * kvStride + kh * D + d];
        w[j] = dot * scale;
      }
      const max = Math.max(...w);
      let sum = 0;
      for (let j = 0; j < S; j++) sum += Math.exp(w[j] - max);
      lse[h * T + t] = max + Math.log(sum);
      for (let d = 0; d < D; d++) {
        let acc = 0;
        for (let j = 0; j < S; j++) acc += Math.exp(w[j] - max) * v[j * kvStride + kh * D + d];
        out[(t * nHeads + h) * D + d] = acc / sum;
      }
    }
  }
  return { out, lse };
}

function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what: string): void {
  let mag = 1;
  for (let i = 0; i < want.length; i++) mag = Math.max(mag, Math.abs(want[i]));
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i] - want[i]) / mag;
    assert.ok(err <= tol, `${what}[${i}]: got ${got[i]}, want ${want[i]} (error ${err} > ${tol})`);
  }
}

describe("sliding-window attention matches an explicit mask", () => {
  const shapes: Shape[] = [
    { T: 12, S: 12, nHeads: 4, nKv: 2, D: 8, kvStride: 16, window: 5, scale: 0.35 },
    { T: 6, S: 31, nHeads: 3, nKv: 1, D: 16, kvStride: 24, window: 9, scale: 0.25 },
    { T: 1, S: 40, nHeads: 4, nKv: 4, D: 8, kvStride: 40, window: 3, scale: 0.35 },
    { T: 100, S: 140, nHeads: 2, nKv: 1, D: 4, kvStride: 8, window: 70, scale: 0.5 },
    { T: 9, S: 9, nHeads: 2, nKv: 2, D: 4, kvStride: 8, window: 1, scale: 0.5 },
  ];
  for (const s of shapes) {
    const rand = randomSource(s.T * 1000 + s.S * 10 + s.window);
    const q = randomF32(rand, s.T * s.nHeads * s.D, 2);
    const k = randomF32(rand, s.S * s.kvStride, 2);
    const v = randomF32(rand, s.S * s.kvStride);
    const want = maskedAttention(s, q, k, v);
    for (const { label, kernels } of impls)
      test(`${label}: T=${s.T} S=${s.S} window=${s.window}`, () => {
        const out = new Float32Array(s.T * s.nHeads * s.D);
        const lse = new Float32Array(s.nHeads * s.T);
        kernels.attentionForward(
          q,
          k,
          v,
          out,
          lse,
          s.T,
          s.S,
          s.nHeads,
          s.nKv,
          s.D,
          s.scale,
          s.kvStride,
          s.window,
        );
        assertClose(out, want.out, 2e-6, "out");
        assertClose(lse, want.lse, 2e-6, "lse");
      });
  }
});

describe("sliding-window attention backward is the gradient (central differences in float64)", () => {
  const shapes: Shape[] = [
    { T: 11, S: 11, nHeads: 4, nKv: 2, D: 6, kvStride: 12, window: 4, scale: 0.4 },
    { T: 70, S: 70, nHeads: 2, nKv: 1, D: 4, kvStride: 4, window: 20, scale: 0.5 },
    { T: 8, S: 8, nHeads: 2, nKv: 1, D: 4, kvStride: 4, window: 1, scale: 0.5 },
  ];
  for (const s of shapes) {
    const rand = randomSource(s.T * 77 + s.window);
    const q = randomF32(rand, s.T * s.nHeads * s.D, 1.5);
    const k = randomF32(rand, s.T * s.kvStride, 1.5);
    const v = randomF32(rand, s.T * s.kvStride);
    const dOut = randomF32(rand, s.T * s.nHeads * s.D);
    // loss = Σ dOut·out; its gradient by central differences, one input at a time.
    const loss = (qq: ArrayLike<number>, kk: ArrayLike<number>, vv: ArrayLike<number>) => {
      const { out } = maskedAttention(s, qq, kk, vv);
      let l = 0;
      for (let i = 0; i < out.length; i++) l += dOut[i] * out[i];
      return l;
    };
    const numeric = (which: 0 | 1 | 2) => {
      const xs = [Float64Array.from(q), Float64Array.from(k), Float64Array.from(v)];
      const x = xs[which];
      const g = new Float64Array(x.length);
      const h = 1e-5;
      for (let i = 0; i < x.length; i++) {
        const x0 = x[i];
        x[i] = x0 + h;
        const up = loss(xs[0], xs[1], xs[2]);
        x[i] = x0 - h;
        const down = loss(xs[0], xs[1], xs[2]);
        x[i] = x0;
        g[i] = (up - down) / (2 * h);
      }
      return g;
    };
    const want = [numeric(0), numeric(1), numeric(2)];
    for (const { label, kernels } of impls)
      test(`${label}: T=${s.T} heads=${s.nHeads}/${s.nKv} window=${s.window}`, () => {
        const out = new Float32Array(q.length);
        const lse = new Float32Array(s.nHeads * s.T);
        const { T, nHeads, nKv, D, scale, window } = s;
        kernels.attentionForward(q, k, v, out, lse, T, T, nHeads, nKv, D, scale, s.kvStride, window);
        const dq = new Float32Array(q.length).fill(9);
        const dk = new Float32Array(k.length).fill(9);
        const dv = new Float32Array(v.length).fill(9);
        kernels.attentionBackward(dOut, q, k, v, out, lse, dq, dk, dv, T, nHeads, nKv, D, scale, window);
        assertClose(dq, want[0], 2e-5, "dq");
        assertClose(dk, want[1], 2e-5, "dk");
        assertClose(dv, want[2], 2e-5, "dv");
      });
  }
});

describe("GeGLU matches 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) elementwise", () => {
  const beta = Math.sqrt(2 / Math.PI);
  const xs: number[] = [];
  for (let i = 0; i <= 4000; i++) xs.push(-12 + (24 * i) / 4000);
  for (const x of [1e-30, 1e-8, 50, 1e4, 1e8, 1e13, 1e20, 3e38]) xs.push(x, -x);
  const gate = Float32Array.from(xs);
  const n = gate.length;
  const ones = new Float32Array(n).fill(1);
  const gelu = new Float64Array(n);
  const dGelu = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const x = gate[i];
    const t = Math.tanh(beta * (x + 0.044715 * x * x * x));
    gelu[i] = 0.5 * x * (1 + t);
    dGelu[i] = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * beta * (1 + 3 * 0.044715 * x * x);
  }
  for (const { label, kernels } of impls)
    test(label, () => {
      const out = new Float32Array(n);
      const dGate = new Float32Array(n);
      const dUp = new Float32Array(n);
      kernels.gegluForward(gate, ones, out, n);
      kernels.gegluBackward(ones, gate, ones, dGate, dUp, n);
      for (let i = 0; i < n; i++) {
        const x = gate[i];
        // Relative where the value is a normal float32 well away from underflow
        // (1 + tanh cancelling in float would fail this by orders of magnitude).
        const tol = Math.abs(gelu[i]) >= 1e-6 ? 1e-5 * Math.abs(gelu[i]) : 1e-12;
        assert.ok(Math.abs(out[i] - gelu[i]) <= tol, `gelu(${x}) = ${out[i]}, want ${gelu[i]}`);
        assert.ok(Math.abs(dUp[i] - gelu[i]) <= tol, `dUp at ${x} = ${dUp[i]}, want ${gelu[i]}`);
        assert.ok(Math.abs(dGate[i] - dGelu[i]) <= 1e-6, `gelu'(${x}) = ${dGate[i]}, want ${dGelu[i]}`);
      }
    });
});

test("GeGLU passes a NaN gate on as NaN", () => {
  for (const { label, kernels } of impls) {
    const gate = Float32Array.of(Number.NaN, 1);
    const one = Float32Array.of(1, 1);
    const out = new Float32Array(2);
    const dGate = new Float32Array(2);
    const dUp = new Float32Array(2);
    kernels.gegluForward(gate, one, out, 2);
    kernels.gegluBackward(one, gate, one, dGate, dUp, 2);
    assert.deepEqual([out[0], dGate[0], dUp[0]], [Number.NaN, Number.NaN, Number.NaN], label);
  }
});

describe("the new arguments are validated", () => {
  const f = (n: number) => new Float32Array(n);
  for (const { label, kernels: k } of impls) {
    if (label === "reference") continue;
    test(label, () => {
      for (const rot of [3, 0, 10]) {
        assert.throws(() => k.rope(f(8), f(8), f(8), Int32Array.of(0), 1, 1, 8, false, rot), {
          name: "RangeError",
          message: new RegExp(
            `rope: argument 'rotaryDim' must be even and in \\[2, headDim \\(8\\)\\], got ${rot}`,
          ),
        });
      }
      // The cos/sin tables are [maxPos, rotaryDim/2]: 8 entries are 4 rows of 2.
      k.rope(f(8), f(8), f(8), Int32Array.of(3), 1, 1, 8, false, 4);
      assert.throws(
        () => k.rope(f(8), f(8), f(8), Int32Array.of(4), 1, 1, 8, false, 4),
        /'positions' holds 4, outside the cos\/sin table of 4 rows/,
      );
      assert.throws(() => k.attentionForward(f(8), f(8), f(8), f(8), null, 1, 1, 2, 1, 4, 1, 4, -1), {
        name: "RangeError",
        message: /attentionForward: argument 'window' must be a non-negative integer, got -1/,
      });
      assert.throws(
        () => k.attentionBackward(f(4), f(4), f(4), f(4), f(4), f(1), f(4), f(4), f(4), 1, 1, 1, 4, 1, 1.5),
        {
          name: "RangeError",
          message: /attentionBackward: argument 'window' must be a non-negative integer/,
        },
      );
      assert.throws(
        () => k.attentionForward(f(8), f(8), f(8), f(8), null, 1, 1, 2, 1, 4, 1, 4, "2" as unknown as number),
        { name: "TypeError", message: /'window' must be a number/ },
      );
      assert.throws(() => k.addBias(f(12), f(3), 3, 4), {
        name: "RangeError",
        message: "addBias: argument 'bias' has 3 elements but the shapes need 4",
      });
      assert.throws(() => k.addBias(f(12), f(4), 3, 4, "1" as unknown as number), {
        name: "TypeError",
        message: "addBias: argument 'alpha' must be a number",
      });
      assert.throws(() => k.gegluBackward(f(4), f(4), f(4), f(4), f(3), 4), {
        name: "RangeError",
        message: /'dUp' has 3 elements/,
      });
    });
  }
});

test("omitted options are the defaults: window 0, rotaryDim = headDim, alpha 1", () => {
  for (const { label, kernels: k } of impls) {
    const rand = randomSource(5);
    const q = randomF32(rand, 6 * 2 * 8);
    const kv = randomF32(rand, 6 * 8);
    const a = new Float32Array(q.length);
    const b = new Float32Array(q.length);
    k.attentionForward(q, kv, kv, a, null, 6, 6, 2, 1, 8, 0.3, 8);
    k.attentionForward(q, kv, kv, b, null, 6, 6, 2, 1, 8, 0.3, 8, 0);
    assert.deepEqual(a, b, label);
    const cos = randomF32(rand, 4 * 6);
    const sin = randomF32(rand, 4 * 6);
    const x1 = randomF32(rand, 12);
    const x2 = x1.slice();
    k.rope(x1, cos, sin, Int32Array.of(3), 1, 1, 12, false);
    k.rope(x2, cos, sin, Int32Array.of(3), 1, 1, 12, false, 12);
    assert.deepEqual(x1, x2, label);
    const y1 = randomF32(rand, 10);
    const y2 = y1.slice();
    const bias = randomF32(rand, 5);
    k.addBias(y1, bias, 2, 5);
    k.addBias(y2, bias, 2, 5, 1);
    assert.deepEqual(y1, y2, label);
  }
});

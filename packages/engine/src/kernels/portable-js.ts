// The kernels in plain JavaScript: what runs when neither the native addon nor
// the WebAssembly build is available. Same algorithms as the native code, with
// float64 accumulators and scratch arrays reused across calls; arguments are
// checked by the caller (validate.ts).
import { addLowRankTerm } from "./low-rank-term.js";
import { jsAttention } from "./portable-js-attention.js";
import { matmulQuantRows, matmulQuantTransRows } from "./quant-matrix.js";
import { GELU_BETA, GELU_KAPPA, referenceKernels } from "./reference.js";
import type { Kernels } from "./types.js";

let scratchA: Float32Array = new Float32Array(0);
let scratchB: Float32Array = new Float32Array(0);
let scratchF64 = new Float64Array(0);
let scratchRow: Float32Array = new Float32Array(0);

function growF32(buf: Float32Array, n: number): Float32Array {
  return buf.length >= n ? buf : new Float32Array(Math.max(n, buf.length * 2));
}

/** dst[c * rows + r] = src[r * cols + c]: a [rows, cols] matrix stored as [cols, rows]. */
function transpose(src: Float32Array, rows: number, cols: number, dst: Float32Array): void {
  const B = 32;
  for (let r0 = 0; r0 < rows; r0 += B)
    for (let c0 = 0; c0 < cols; c0 += B) {
      const r1 = Math.min(rows, r0 + B);
      const c1 = Math.min(cols, c0 + B);
      for (let r = r0; r < r1; r++) for (let c = c0; c < c1; c++) dst[c * rows + r] = src[r * cols + c];
    }
}

const KC = 256; // k per pass: four A rows and four Bᵀ rows of it stay in L1

/**
 * C[m,n] += alpha * A[m,k] · Bt[n,k]ᵀ, both operands row-major along k. A 4x4
 * register block of dot products (16 float64 accumulators, which V8 keeps in
 * registers) over a KC slice keeps eight rows in L1.
 */
function gemmDot(
  A: Float32Array,
  Bt: Float32Array,
  c: Float32Array,
  m: number,
  n: number,
  k: number,
  alpha: number,
): void {
  for (let p0 = 0; p0 < k; p0 += KC) {
    const p1 = Math.min(k, p0 + KC);
    let i = 0;
    for (; i + 4 <= m; i += 4) {
      const a0 = i * k;
      const a1 = a0 + k;
      const a2 = a1 + k;
      const a3 = a2 + k;
      let j = 0;
      for (; j + 4 <= n; j += 4) {
        const b0 = j * k;
        const b1 = b0 + k;
        const b2 = b1 + k;
        const b3 = b2 + k;
        let s00 = 0,
          s01 = 0,
          s02 = 0,
          s03 = 0,
          s10 = 0,
          s11 = 0,
          s12 = 0,
          s13 = 0;
        let s20 = 0,
          s21 = 0,
          s22 = 0,
          s23 = 0,
          s30 = 0,
          s31 = 0,
          s32 = 0,
          s33 = 0;
        for (let p = p0; p < p1; p++) {
          const y0 = Bt[b0 + p];
          const y1 = Bt[b1 + p];
          const y2 = Bt[b2 + p];
          const y3 = Bt[b3 + p];
          let x = A[a0 + p];
          s00 += x * y0;
          s01 += x * y1;
          s02 += x * y2;
          s03 += x * y3;
          x = A[a1 + p];
          s10 += x * y0;
          s11 += x * y1;
          s12 += x * y2;
          s13 += x * y3;
          x = A[a2 + p];
          s20 += x * y0;
          s21 += x * y1;
          s22 += x * y2;
          s23 += x * y3;
          x = A[a3 + p];
          s30 += x * y0;
          s31 += x * y1;
          s32 += x * y2;
          s33 += x * y3;
        }
        let o = i * n + j;
        c[o] += alpha * s00;
        c[o + 1] += alpha * s01;
        c[o + 2] += alpha * s02;
        c[o + 3] += alpha * s03;
        o += n;
        c[o] += alpha * s10;
        c[o + 1] += alpha * s11;
        c[o + 2] += alpha * s12;
        c[o + 3] += alpha * s13;
        o += n;
        c[o] += alpha * s20;
        c[o + 1] += alpha * s21;
        c[o + 2] += alpha * s22;
        c[o + 3] += alpha * s23;
        o += n;
        c[o] += alpha * s30;
        c[o + 1] += alpha * s31;
        c[o + 2] += alpha * s32;
        c[o + 3] += alpha * s33;
      }
      for (; j < n; j++) {
        const b0 = j * k;
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        for (let p = p0; p < p1; p++) {
          const y = Bt[b0 + p];
          s0 += A[a0 + p] * y;
          s1 += A[a1 + p] * y;
          s2 += A[a2 + p] * y;
          s3 += A[a3 + p] * y;
        }
        c[i * n + j] += alpha * s0;
        c[(i + 1) * n + j] += alpha * s1;
        c[(i + 2) * n + j] += alpha * s2;
        c[(i + 3) * n + j] += alpha * s3;
      }
    }
    for (; i < m; i++) {
      const a0 = i * k;
      for (let j = 0; j < n; j++) {
        const b0 = j * k;
        let s = 0;
        for (let p = p0; p < p1; p++) s += A[a0 + p] * Bt[b0 + p];
        c[i * n + j] += alpha * s;
      }
    }
  }
}

function sigmoid(g: number): number {
  return 1 / (1 + Math.exp(-g));
}

export const jsKernels: Kernels = {
  name: "portable",
  isa: "js",

  matmul(a, b, c, m, n, k, transA, transB, accumulate, alpha = 1) {
    if (!accumulate) c.fill(0, 0, m * n);
    if (m === 0 || n === 0 || k === 0) return;
    let A: Float32Array = a;
    if (transA) {
      scratchA = growF32(scratchA, m * k);
      transpose(a, k, m, scratchA);
      A = scratchA;
    }
    let Bt: Float32Array = b;
    if (!transB) {
      scratchB = growF32(scratchB, n * k);
      transpose(b, k, n, scratchB);
      Bt = scratchB;
    }
    gemmDot(A, Bt, c, m, n, k, alpha);
  },

  // Two products: the JS kernels gain nothing from one pass over C.
  matmulLowRank(a, b, c, m, n, k, transB, a2, b2, k2, transB2, alpha2, accumulate) {
    jsKernels.matmul(a, b, c, m, n, k, false, transB, accumulate);
    jsKernels.matmul(a2, b2, c, m, n, k2, false, transB2, true, alpha2);
  },

  // One pass over dy, float64 sums: dB's in a scratch [out, r], dxa's per row.
  lowRankBackward(dy, xa, b, dB, dxa, n, out, r, alpha, ldDxa) {
    const size = out * r + r;
    scratchF64 = scratchF64.length >= size ? scratchF64 : new Float64Array(size);
    const g = scratchF64;
    g.fill(0, 0, size);
    const acc = out * r; // a row's dxa sums sit after dB's
    for (let i = 0; i < n; i++) {
      for (let o = 0; o < out; o++) {
        const d = dy[i * out + o];
        for (let c = 0; c < r; c++) {
          g[acc + c] += d * b[o * r + c];
          g[o * r + c] += d * xa[i * r + c];
        }
      }
      for (let c = 0; c < r; c++) {
        dxa[i * ldDxa + c] = alpha * g[acc + c];
        g[acc + c] = 0;
      }
    }
    for (let j = 0; j < out * r; j++) dB[j] += alpha * g[j];
  },

  // One row of W widened to fp32 at a time, float64 sums.
  matmulQuant(x, w, y, m, accumulate, alpha = 1) {
    scratchRow = growF32(scratchRow, w.cols);
    matmulQuantRows(x, w, y, m, accumulate, alpha, scratchRow);
  },

  // The same rows widened one at a time; the input gradient sums in float64 scratch.
  matmulQuantTrain(x, w, y, m, transW, accumulate, alpha = 1, lowRank) {
    scratchRow = growF32(scratchRow, w.cols);
    if (!transW) matmulQuantRows(x, w, y, m, accumulate, alpha, scratchRow);
    else {
      if (scratchF64.length < m * w.cols) scratchF64 = new Float64Array(m * w.cols);
      matmulQuantTransRows(x, w, y, m, accumulate, alpha, scratchRow, scratchF64);
    }
    addLowRankTerm(jsKernels, y, m, w, transW, lowRank);
  },

  // One pass over the row already: the reference's loop is the whole kernel.
  rmsnormForward: referenceKernels.rmsnormForward,

  rmsnormBackward(dy, x, weight, rstd, dx, dWeight, rows, dim) {
    scratchF64 = scratchF64.length >= dim ? scratchF64 : new Float64Array(dim);
    const dw = scratchF64;
    dw.fill(0, 0, dim);
    for (let r = 0; r < rows; r++) {
      const o = r * dim;
      const rs = rstd[r];
      let dot = 0;
      for (let i = 0; i < dim; i++) dot += weight[i] * dy[o + i] * x[o + i];
      const coef = (rs * rs * rs * dot) / dim;
      for (let i = 0; i < dim; i++) {
        dx[o + i] = rs * weight[i] * dy[o + i] - coef * x[o + i];
        dw[i] += dy[o + i] * x[o + i] * rs;
      }
    }
    if (dWeight) for (let i = 0; i < dim; i++) dWeight[i] += dw[i];
  },

  // An elementwise rotation: nothing for plain JS to do faster than the reference.
  rope: referenceKernels.rope,

  swigluForward(gate, up, out, n) {
    for (let i = 0; i < n; i++) {
      const g = gate[i];
      out[i] = g * sigmoid(g) * up[i];
    }
  },

  swigluBackward(dOut, gate, up, dGate, dUp, n) {
    for (let i = 0; i < n; i++) {
      const g = gate[i];
      const sig = sigmoid(g);
      const d = dOut[i];
      dGate[i] = d * up[i] * sig * (1 + g * (1 - sig));
      dUp[i] = d * g * sig;
    }
  },

  // gelu_tanh(x) = 0.5·x·(1 + tanh(u)) = x·σ(2u): one exp, no cancellation in
  // 1 + tanh(u) for negative x, and exp overflowing to Infinity just gives σ = 0.
  gegluForward(gate, up, out, n) {
    for (let i = 0; i < n; i++) {
      const x = gate[i];
      out[i] = (x / (1 + Math.exp(-2 * GELU_BETA * (x + GELU_KAPPA * x * x * x)))) * up[i];
    }
  },

  gegluBackward(dOut, gate, up, dGate, dUp, n) {
    for (let i = 0; i < n; i++) {
      const x = gate[i];
      const s = 1 / (1 + Math.exp(-2 * GELU_BETA * (x + GELU_KAPPA * x * x * x)));
      // d/dx x·σ(2u) = σ + x·σ(1-σ)·2u', u' = β(1 + 3κx²)
      const dGelu = s + x * s * (1 - s) * (2 * GELU_BETA) * (1 + 3 * GELU_KAPPA * x * x);
      const d = dOut[i];
      dUp[i] = d * x * s;
      dGate[i] = d * up[i] * dGelu;
    }
  },

  addBias(y, bias, rows, dim, alpha = 1) {
    for (let r = 0; r < rows; r++) {
      const o = r * dim;
      for (let c = 0; c < dim; c++) y[o + c] += alpha * bias[c];
    }
  },

  ...jsAttention,

  crossEntropy(logits, targets, rows, vocab, dLogits, gradScale) {
    let total = 0;
    for (let r = 0; r < rows; r++) {
      const o = r * vocab;
      const target = targets[r];
      if (target < 0) {
        if (dLogits) dLogits.fill(0, o, o + vocab);
        continue;
      }
      let max = Number.NEGATIVE_INFINITY;
      for (let i = 0; i < vocab; i++) if (logits[o + i] > max) max = logits[o + i];
      let sum = 0;
      for (let i = 0; i < vocab; i++) sum += Math.exp(logits[o + i] - max);
      const logZ = max + Math.log(sum);
      total += logZ - logits[o + target];
      if (dLogits) {
        for (let i = 0; i < vocab; i++) dLogits[o + i] = gradScale * Math.exp(logits[o + i] - logZ);
        dLogits[o + target] -= gradScale;
      }
    }
    return total;
  },

  adamw(param, grad, m, v, n, lr, beta1, beta2, eps, weightDecay, step) {
    const bc1 = 1 - beta1 ** step;
    const bc2 = 1 - beta2 ** step;
    const decay = 1 - lr * weightDecay;
    for (let i = 0; i < n; i++) {
      const g = grad[i];
      const mi = beta1 * m[i] + (1 - beta1) * g;
      const vi = beta2 * v[i] + (1 - beta2) * g * g;
      m[i] = mi;
      v[i] = vi;
      param[i] = param[i] * decay - (lr * (mi / bc1)) / (Math.sqrt(vi / bc2) + eps);
    }
  },
};

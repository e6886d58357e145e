// Straightforward, obviously-correct kernels in plain JS (float64 accumulation).
// They are the oracle the fast kernels are tested against; the portable JS
// kernels also run rmsnormForward and rope from here, where a faster loop has
// nothing to gain.
import {
  attentionBackwardBf16,
  attentionForwardBf16,
  firstKey,
  takesBf16Products,
} from "./attention-bf16.js";
import { addLowRankTerm } from "./low-rank-term.js";
import { matmulQuantRows, matmulQuantTransRows } from "./quant-matrix.js";
import type { Kernels } from "./types.js";

/** gelu_tanh's constants: √(2/π) and the cubic's coefficient. */
export const GELU_BETA = Math.sqrt(2 / Math.PI);
export const GELU_KAPPA = 0.044715;

export const referenceKernels: Kernels = {
  name: "portable",
  isa: "reference",

  matmul(a, b, c, m, n, k, transA, transB, accumulate, alpha = 1) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let p = 0; p < k; p++) {
          const av = transA ? a[p * m + i] : a[i * k + p];
          const bv = transB ? b[j * k + p] : b[p * n + j];
          s += av * bv;
        }
        c[i * n + j] = alpha * s + (accumulate ? c[i * n + j] : 0);
      }
    }
  },

  matmulLowRank(a, b, c, m, n, k, transB, a2, b2, k2, transB2, alpha2, accumulate) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let p = 0; p < k; p++) s += a[i * k + p] * (transB ? b[j * k + p] : b[p * n + j]);
        let s2 = 0;
        for (let p = 0; p < k2; p++) s2 += a2[i * k2 + p] * (transB2 ? b2[j * k2 + p] : b2[p * n + j]);
        c[i * n + j] = s + alpha2 * s2 + (accumulate ? c[i * n + j] : 0);
      }
    }
  },

  lowRankBackward(dy, xa, b, dB, dxa, n, out, r, alpha, ldDxa) {
    for (let o = 0; o < out; o++)
      for (let c = 0; c < r; c++) {
        let s = 0;
        for (let i = 0; i < n; i++) s += dy[i * out + o] * xa[i * r + c];
        dB[o * r + c] += alpha * s;
      }
    for (let i = 0; i < n; i++)
      for (let c = 0; c < r; c++) {
        let s = 0;
        for (let o = 0; o < out; o++) s += dy[i * out + o] * b[o * r + c];
        dxa[i * ldDxa + c] = alpha * s;
      }
  },

  // The weights as stored, widened to float64, against x in float64.
  matmulQuant(x, w, y, m, accumulate, alpha = 1) {
    matmulQuantRows(x, w, y, m, accumulate, alpha, new Float64Array(w.cols));
  },

  // The same, x as given (never rounded to bf16), float64 sums.
  matmulQuantTrain(x, w, y, m, transW, accumulate, alpha = 1, lowRank) {
    const row = new Float64Array(w.cols);
    if (!transW) matmulQuantRows(x, w, y, m, accumulate, alpha, row);
    else matmulQuantTransRows(x, w, y, m, accumulate, alpha, row, new Float64Array(m * w.cols));
    addLowRankTerm(referenceKernels, y, m, w, transW, lowRank);
  },

  rmsnormForward(x, weight, y, rstd, rows, dim, eps) {
    for (let r = 0; r < rows; r++) {
      let ss = 0;
      for (let i = 0; i < dim; i++) ss += x[r * dim + i] * x[r * dim + i];
      const rs = 1 / Math.sqrt(ss / dim + eps);
      rstd[r] = rs;
      for (let i = 0; i < dim; i++) y[r * dim + i] = x[r * dim + i] * rs * weight[i];
    }
  },

  rmsnormBackward(dy, x, weight, rstd, dx, dWeight, rows, dim) {
    for (let r = 0; r < rows; r++) {
      const rs = rstd[r];
      // dx = rs * (w*dy) - rs^3/dim * x * sum(w*dy*x)
      let dot = 0;
      for (let i = 0; i < dim; i++) dot += weight[i] * dy[r * dim + i] * x[r * dim + i];
      const coef = (rs * rs * rs * dot) / dim;
      for (let i = 0; i < dim; i++) {
        dx[r * dim + i] = rs * weight[i] * dy[r * dim + i] - coef * x[r * dim + i];
        if (dWeight) dWeight[i] += dy[r * dim + i] * x[r * dim + i] * rs;
      }
    }
  },

  rope(x, cos, sin, positions, T, nHeads, headDim, inverse, rotaryDim = headDim) {
    // Dims rotaryDim..headDim-1 are never touched: they pass through.
    const half = rotaryDim / 2;
    const sign = inverse ? -1 : 1;
    for (let t = 0; t < T; t++) {
      const row = positions[t] * half;
      for (let h = 0; h < nHeads; h++) {
        const base = (t * nHeads + h) * headDim;
        for (let i = 0; i < half; i++) {
          const c = cos[row + i];
          const s = sign * sin[row + i];
          const x1 = x[base + i];
          const x2 = x[base + i + half];
          x[base + i] = x1 * c - x2 * s;
          x[base + i + half] = x2 * c + x1 * s;
        }
      }
    }
  },

  swigluForward(gate, up, out, n) {
    for (let i = 0; i < n; i++) {
      const g = gate[i];
      out[i] = (g / (1 + Math.exp(-g))) * up[i];
    }
  },

  swigluBackward(dOut, gate, up, dGate, dUp, n) {
    for (let i = 0; i < n; i++) {
      const g = gate[i];
      const sig = 1 / (1 + Math.exp(-g));
      const silu = g * sig;
      dUp[i] = dOut[i] * silu;
      dGate[i] = dOut[i] * up[i] * sig * (1 + g * (1 - sig));
    }
  },

  gegluForward(gate, up, out, n) {
    for (let i = 0; i < n; i++) {
      const x = gate[i];
      const t = Math.tanh(GELU_BETA * (x + GELU_KAPPA * x * x * x));
      out[i] = 0.5 * x * (1 + t) * up[i];
    }
  },

  gegluBackward(dOut, gate, up, dGate, dUp, n) {
    for (let i = 0; i < n; i++) {
      const x = gate[i];
      const t = Math.tanh(GELU_BETA * (x + GELU_KAPPA * x * x * x));
      const gelu = 0.5 * x * (1 + t);
      // d/dx of 0.5·x·(1 + tanh(u)), u = β(x + κx³): tanh' = 1 - tanh², u' = β(1 + 3κx²)
      const dGelu = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_BETA * (1 + 3 * GELU_KAPPA * x * x);
      dUp[i] = dOut[i] * gelu;
      dGate[i] = dOut[i] * up[i] * dGelu;
    }
  },

  addBias(y, bias, rows, dim, alpha = 1) {
    for (let r = 0; r < rows; r++) for (let c = 0; c < dim; c++) y[r * dim + c] += alpha * bias[c];
  },

  attentionForward(q, k, v, out, lse, T, S, nHeads, nKv, headDim, scale, kvStride, window = 0, bf16 = false) {
    if (takesBf16Products(bf16, T))
      return attentionForwardBf16(q, k, v, out, lse, T, S, nHeads, nKv, headDim, scale, kvStride, window);
    const group = nHeads / nKv;
    const scores = new Float64Array(S);
    for (let h = 0; h < nHeads; h++) {
      const kh = Math.floor(h / group);
      for (let t = 0; t < T; t++) {
        const last = S - T + t;
        const first = firstKey(last, window);
        const qo = (t * nHeads + h) * headDim;
        let max = -Infinity;
        for (let s = first; s <= last; s++) {
          const ko = s * kvStride + kh * headDim;
          let dot = 0;
          for (let d = 0; d < headDim; d++) dot += q[qo + d] * k[ko + d];
          scores[s] = dot * scale;
          if (scores[s] > max) max = scores[s];
        }
        let sum = 0;
        for (let s = first; s <= last; s++) sum += Math.exp(scores[s] - max);
        if (lse) lse[h * T + t] = max + Math.log(sum);
        for (let d = 0; d < headDim; d++) {
          let acc = 0;
          for (let s = first; s <= last; s++)
            acc += Math.exp(scores[s] - max) * v[s * kvStride + kh * headDim + d];
          out[qo + d] = acc / sum;
        }
      }
    }
  },

  attentionBackward(
    dOut,
    q,
    k,
    v,
    out,
    lse,
    dq,
    dk,
    dv,
    T,
    nHeads,
    nKv,
    headDim,
    scale,
    window = 0,
    bf16 = false,
  ) {
    if (bf16)
      return attentionBackwardBf16(
        dOut,
        q,
        k,
        v,
        out,
        lse,
        dq,
        dk,
        dv,
        T,
        nHeads,
        nKv,
        headDim,
        scale,
        window,
      );
    const group = nHeads / nKv;
    const kvStride = nKv * headDim;
    dq.fill(0, 0, T * nHeads * headDim);
    dk.fill(0, 0, T * kvStride);
    dv.fill(0, 0, T * kvStride);
    for (let h = 0; h < nHeads; h++) {
      const kh = Math.floor(h / group);
      for (let t = 0; t < T; t++) {
        const qo = (t * nHeads + h) * headDim;
        // D = sum_d dOut*out (the softmax backward's row term)
        let D = 0;
        for (let d = 0; d < headDim; d++) D += dOut[qo + d] * out[qo + d];
        for (let s = firstKey(t, window); s <= t; s++) {
          const ko = s * kvStride + kh * headDim;
          let dot = 0;
          for (let d = 0; d < headDim; d++) dot += q[qo + d] * k[ko + d];
          const p = Math.exp(dot * scale - lse[h * T + t]);
          let dp = 0;
          for (let d = 0; d < headDim; d++) {
            dp += dOut[qo + d] * v[ko + d];
            dv[ko + d] += p * dOut[qo + d];
          }
          const ds = p * (dp - D) * scale;
          for (let d = 0; d < headDim; d++) {
            dq[qo + d] += ds * k[ko + d];
            dk[ko + d] += ds * q[qo + d];
          }
        }
      }
    }
  },

  crossEntropy(logits, targets, rows, vocab, dLogits, gradScale) {
    let total = 0;
    for (let r = 0; r < rows; r++) {
      const o = r * vocab;
      const target = targets[r];
      if (target < 0) {
        if (dLogits) dLogits.fill(0, o, o + vocab);
        continue;
      }
      let max = -Infinity;
      for (let i = 0; i < vocab; i++) if (logits[o + i] > max) max = logits[o + i];
      let sum = 0;
      for (let i = 0; i < vocab; i++) sum += Math.exp(logits[o + i] - max);
      const logZ = max + Math.log(sum);
      total += logZ - logits[o + target];
      if (dLogits) {
        for (let i = 0; i < vocab; i++) {
          dLogits[o + i] = gradScale * (Math.exp(logits[o + i] - logZ) - (i === target ? 1 : 0));
        }
      }
    }
    return total;
  },

  adamw(param, grad, m, v, n, lr, beta1, beta2, eps, weightDecay, step) {
    const bc1 = 1 - beta1 ** step;
    const bc2 = 1 - beta2 ** step;
    for (let i = 0; i < n; i++) {
      const g = grad[i];
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      param[i] -= lr * weightDecay * param[i];
      param[i] -= (lr * (m[i] / bc1)) / (Math.sqrt(v[i] / bc2) + eps);
    }
  },
};

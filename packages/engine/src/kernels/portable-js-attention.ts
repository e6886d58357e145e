// Attention in plain JavaScript, part of the portable JS kernels
// (portable-js.ts): the native kernels' causal, grouped-query attention with
// float64 accumulators, its bf16 products through attention-bf16.ts.
import { attentionBackwardBf16, attentionForwardBf16, takesBf16Products } from "./attention-bf16.js";
import type { Kernels } from "./types.js";

let scratchF64 = new Float64Array(0);

export const jsAttention: Pick<Kernels, "attentionForward" | "attentionBackward"> = {
  attentionForward(q, k, v, out, lse, T, S, nHeads, nKv, D, scale, kvStride, window = 0, bf16 = false) {
    if (takesBf16Products(bf16, T))
      return attentionForwardBf16(q, k, v, out, lse, T, S, nHeads, nKv, D, scale, kvStride, window);
    const group = nHeads / nKv;
    scratchF64 = scratchF64.length >= S + D ? scratchF64 : new Float64Array(S + D);
    const p = scratchF64;
    for (let h = 0; h < nHeads; h++) {
      const kh = Math.floor(h / group) * D;
      for (let t = 0; t < T; t++) {
        const n = S - T + t + 1;
        const first = window > 0 ? Math.max(0, n - window) : 0; // keys first..n-1
        const qo = (t * nHeads + h) * D;
        let max = Number.NEGATIVE_INFINITY;
        for (let s = first; s < n; s++) {
          const ko = s * kvStride + kh;
          let dot = 0;
          for (let d = 0; d < D; d++) dot += q[qo + d] * k[ko + d];
          p[s] = dot * scale;
          if (p[s] > max) max = p[s];
        }
        let sum = 0;
        for (let s = first; s < n; s++) {
          p[s] = Math.exp(p[s] - max);
          sum += p[s];
        }
        const acc = S;
        p.fill(0, acc, acc + D);
        for (let s = first; s < n; s++) {
          const w = p[s];
          const vo = s * kvStride + kh;
          for (let d = 0; d < D; d++) p[acc + d] += w * v[vo + d];
        }
        for (let d = 0; d < D; d++) out[qo + d] = p[acc + d] / sum;
        if (lse) lse[h * T + t] = max + Math.log(sum);
      }
    }
  },

  attentionBackward(dOut, q, k, v, out, lse, dq, dk, dv, T, nHeads, nKv, D, scale, window = 0, bf16 = false) {
    if (bf16)
      return attentionBackwardBf16(dOut, q, k, v, out, lse, dq, dk, dv, T, nHeads, nKv, D, scale, window);
    const group = nHeads / nKv;
    const stride = nKv * D;
    dk.fill(0, 0, T * stride);
    dv.fill(0, 0, T * stride);
    scratchF64 = scratchF64.length >= 2 * T + D ? scratchF64 : new Float64Array(2 * T + D);
    const P = scratchF64;
    const dqAcc = 2 * T;
    for (let h = 0; h < nHeads; h++) {
      const kh = Math.floor(h / group) * D;
      for (let t = 0; t < T; t++) {
        const qo = (t * nHeads + h) * D;
        let Dt = 0;
        for (let d = 0; d < D; d++) Dt += dOut[qo + d] * out[qo + d];
        const l = lse[h * T + t];
        const first = window > 0 ? Math.max(0, t - window + 1) : 0;
        for (let s = first; s <= t; s++) {
          const ko = s * stride + kh;
          let dot = 0;
          let dp = 0;
          for (let d = 0; d < D; d++) {
            dot += q[qo + d] * k[ko + d];
            dp += dOut[qo + d] * v[ko + d];
          }
          const pr = Math.exp(dot * scale - l);
          P[s] = pr;
          P[T + s] = pr * (dp - Dt) * scale;
        }
        P.fill(0, dqAcc, dqAcc + D);
        for (let s = first; s <= t; s++) {
          const ko = s * stride + kh;
          const pr = P[s];
          const ds = P[T + s];
          for (let d = 0; d < D; d++) {
            P[dqAcc + d] += ds * k[ko + d];
            dk[ko + d] += ds * q[qo + d];
            dv[ko + d] += pr * dOut[qo + d];
          }
        }
        for (let d = 0; d < D; d++) dq[qo + d] = P[dqAcc + d];
      }
    }
  },
};

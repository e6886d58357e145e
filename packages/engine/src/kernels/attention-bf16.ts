// Attention with bf16 products, as a bf16 training run computes it
// (Kernels.attentionForward/attentionBackward with bf16 set): the operands of
// its matmuls rounded to bf16 where the native kernels round them
// (native/src/attention.h), the sums and the softmax in float64 here. The
// reference kernels and the portable JS kernels both run these.
import { bf16Copy, bf16Value } from "./bf16-rounding.js";

/**
 * Whether a forward call takes bf16 products: a bf16 run's (bf16 set), except
 * decode, one query against a KV cache, which is fp32 in every precision.
 */
export function takesBf16Products(bf16: boolean, T: number): boolean {
  return bf16 && T > 1;
}

/** The first key the query at absolute position p sees (window 0: none cut off). */
export function firstKey(p: number, window: number): number {
  return window > 0 ? Math.max(0, p - window + 1) : 0;
}

/**
 * attentionForward for T > 1 with bf16 products: scores from bf16 q and k;
 * the output from the unnormalised probabilities exp(s − max), rounded, and
 * bf16 v, divided by the float64 sum of the unrounded exponentials.
 */
export function attentionForwardBf16(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  out: Float32Array,
  lse: Float32Array | null,
  T: number,
  S: number,
  nHeads: number,
  nKv: number,
  D: number,
  scale: number,
  kvStride: number,
  window: number,
): void {
  const group = nHeads / nKv;
  const kvn = S === 0 ? 0 : (S - 1) * kvStride + nKv * D;
  const qb = bf16Copy(q.subarray(0, T * nHeads * D));
  const kb = bf16Copy(k.subarray(0, kvn));
  const vb = bf16Copy(v.subarray(0, kvn));
  const e = new Float64Array(S);
  for (let h = 0; h < nHeads; h++) {
    const kh = Math.floor(h / group) * D;
    for (let t = 0; t < T; t++) {
      const last = S - T + t;
      const first = firstKey(last, window);
      const qo = (t * nHeads + h) * D;
      let max = Number.NEGATIVE_INFINITY;
      for (let s = first; s <= last; s++) {
        let dot = 0;
        for (let d = 0; d < D; d++) dot += qb[qo + d] * kb[s * kvStride + kh + d];
        e[s] = dot * scale;
        if (e[s] > max) max = e[s];
      }
      let sum = 0;
      for (let s = first; s <= last; s++) {
        const x = Math.exp(e[s] - max);
        sum += x;
        e[s] = bf16Value(x);
      }
      if (lse) lse[h * T + t] = max + Math.log(sum);
      for (let d = 0; d < D; d++) {
        let acc = 0;
        for (let s = first; s <= last; s++) acc += e[s] * vb[s * kvStride + kh + d];
        out[qo + d] = acc / sum;
      }
    }
  }
}

/**
 * attentionBackward with bf16 products: P from bf16 q and k; dP from bf16
 * dOut and v; dS = P∘(dP − rowsum(dOut∘out))·scale unrounded, then rounded
 * with P for dv = Pᵀ·dOut, dq = dS·k and dk = dSᵀ·q (all bf16 operands).
 */
export function attentionBackwardBf16(
  dOut: Float32Array,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  out: Float32Array,
  lse: Float32Array,
  dq: Float32Array,
  dk: Float32Array,
  dv: Float32Array,
  T: number,
  nHeads: number,
  nKv: number,
  D: number,
  scale: number,
  window: number,
): void {
  const group = nHeads / nKv;
  const stride = nKv * D;
  const qn = T * nHeads * D;
  const [qb, dOb] = [bf16Copy(q.subarray(0, qn)), bf16Copy(dOut.subarray(0, qn))];
  const [kb, vb] = [bf16Copy(k.subarray(0, T * stride)), bf16Copy(v.subarray(0, T * stride))];
  const dqAcc = new Float64Array(qn);
  const dkAcc = new Float64Array(T * stride);
  const dvAcc = new Float64Array(T * stride);
  for (let h = 0; h < nHeads; h++) {
    const kh = Math.floor(h / group) * D;
    for (let t = 0; t < T; t++) {
      const qo = (t * nHeads + h) * D;
      let rowTerm = 0;
      for (let d = 0; d < D; d++) rowTerm += dOut[qo + d] * out[qo + d];
      for (let s = firstKey(t, window); s <= t; s++) {
        const ko = s * stride + kh;
        let dot = 0;
        let dp = 0;
        for (let d = 0; d < D; d++) {
          dot += qb[qo + d] * kb[ko + d];
          dp += dOb[qo + d] * vb[ko + d];
        }
        const p = Math.exp(dot * scale - lse[h * T + t]);
        const pb = bf16Value(p);
        const ds = bf16Value(p * (dp - rowTerm) * scale);
        for (let d = 0; d < D; d++) {
          dvAcc[ko + d] += pb * dOb[qo + d];
          dqAcc[qo + d] += ds * kb[ko + d];
          dkAcc[ko + d] += ds * qb[qo + d];
        }
      }
    }
  }
  dq.set(dqAcc);
  dk.set(dkAcc);
  dv.set(dvAcc);
}

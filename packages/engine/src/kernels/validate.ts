// Argument checks for the portable kernels, with the native addon's messages:
// a wrong type is a TypeError, a short array or a bad shape a RangeError, each
// naming the argument. Cheap (lengths and a pass over the integer arrays).
import { checkQuantMatrix, quantTrainCols } from "./quant-matrix.js";
import type { Kernels } from "./types.js";

function fail(fn: string, arg: string, detail: string, range: boolean): never {
  const msg = `${fn}: argument '${arg}' ${detail}`;
  throw range ? new RangeError(msg) : new TypeError(msg);
}

function dim(fn: string, arg: string, v: unknown): number {
  if (typeof v !== "number") fail(fn, arg, "must be a number", false);
  if (!(v >= 0 && Number.isSafeInteger(v))) fail(fn, arg, `must be a non-negative integer, got ${v}`, true);
  return v;
}

function num(fn: string, arg: string, v: unknown): number {
  if (typeof v !== "number") fail(fn, arg, "must be a number", false);
  return v;
}

function flag(fn: string, arg: string, v: unknown): void {
  if (typeof v !== "boolean") fail(fn, arg, "must be a boolean", false);
}

function f32(fn: string, arg: string, v: unknown, need: number, nullable = false): void {
  if (nullable && (v === null || v === undefined)) return;
  if (!(v instanceof Float32Array))
    fail(fn, arg, nullable ? "must be a Float32Array or null" : "must be a Float32Array", false);
  if (v.length < need) fail(fn, arg, `has ${v.length} elements but the shapes need ${need}`, true);
}

function i32(fn: string, arg: string, v: unknown, need: number): asserts v is Int32Array {
  if (!(v instanceof Int32Array)) fail(fn, arg, "must be an Int32Array", false);
  if (v.length < need) fail(fn, arg, `has ${v.length} elements but the shapes need ${need}`, true);
}

/** Whether an optional argument was given (null or undefined: its default). */
function optional(v: unknown): boolean {
  return v !== undefined && v !== null;
}

function heads(fn: string, nHeads: number, nKv: number): void {
  if (nKv === 0 || nHeads % nKv !== 0) fail(fn, "nKv", `must divide nHeads (${nHeads}), got ${nKv}`, true);
}

/** Wraps kernels so that every call checks its arguments first. */
/** The arguments of a gated activation (SwiGLU, GeGLU): gate, up, out of n elements each. */
function gatedForwardArgs(fn: string, gate: unknown, up: unknown, out: unknown, n: unknown): void {
  dim(fn, "n", n);
  f32(fn, "gate", gate, n as number);
  f32(fn, "up", up, n as number);
  f32(fn, "out", out, n as number);
}

/** The arguments of a gated activation's backward: dOut, gate, up, dGate, dUp of n elements each. */
function gatedBackwardArgs(
  fn: string,
  dOut: unknown,
  gate: unknown,
  up: unknown,
  dGate: unknown,
  dUp: unknown,
  n: unknown,
): void {
  dim(fn, "n", n);
  f32(fn, "dOut", dOut, n as number);
  f32(fn, "gate", gate, n as number);
  f32(fn, "up", up, n as number);
  f32(fn, "dGate", dGate, n as number);
  f32(fn, "dUp", dUp, n as number);
}

export function withValidation(impl: Kernels): Kernels {
  return {
    name: impl.name,
    isa: impl.isa,
    matmul(a, b, c, m, n, k, transA, transB, accumulate, alpha) {
      const fn = "matmul";
      dim(fn, "m", m);
      dim(fn, "n", n);
      dim(fn, "k", k);
      flag(fn, "transA", transA);
      flag(fn, "transB", transB);
      flag(fn, "accumulate", accumulate);
      if (optional(alpha)) num(fn, "alpha", alpha);
      f32(fn, "a", a, m * k);
      f32(fn, "b", b, k * n);
      f32(fn, "c", c, m * n);
      impl.matmul(a, b, c, m, n, k, transA, transB, accumulate, alpha ?? 1);
    },
    matmulLowRank(a, b, c, m, n, k, transB, a2, b2, k2, transB2, alpha2, accumulate) {
      const fn = "matmulLowRank";
      dim(fn, "m", m);
      dim(fn, "n", n);
      dim(fn, "k", k);
      dim(fn, "k2", k2);
      flag(fn, "transB", transB);
      flag(fn, "transB2", transB2);
      flag(fn, "accumulate", accumulate);
      num(fn, "alpha2", alpha2);
      f32(fn, "a", a, m * k);
      f32(fn, "b", b, k * n);
      f32(fn, "c", c, m * n);
      f32(fn, "a2", a2, m * k2);
      f32(fn, "b2", b2, k2 * n);
      impl.matmulLowRank(a, b, c, m, n, k, transB, a2, b2, k2, transB2, alpha2, accumulate);
    },
    lowRankBackward(dy, xa, b, dB, dxa, n, out, r, alpha, ldDxa) {
      const fn = "lowRankBackward";
      dim(fn, "n", n);
      dim(fn, "out", out);
      dim(fn, "r", r);
      num(fn, "alpha", alpha);
      dim(fn, "ldDxa", ldDxa);
      if (ldDxa < r) fail(fn, "ldDxa", `must be at least r (${r}), got ${ldDxa}`, true);
      f32(fn, "dy", dy, n * out);
      f32(fn, "xa", xa, n * r);
      f32(fn, "b", b, out * r);
      f32(fn, "dB", dB, out * r);
      f32(fn, "dxa", dxa, n > 0 ? (n - 1) * ldDxa + r : 0);
      impl.lowRankBackward(dy, xa, b, dB, dxa, n, out, r, alpha, ldDxa);
    },
    matmulQuant(x, w, y, m, accumulate, alpha) {
      const fn = "matmulQuant";
      checkQuantMatrix(w);
      dim(fn, "m", m);
      flag(fn, "accumulate", accumulate);
      if (optional(alpha)) num(fn, "alpha", alpha);
      f32(fn, "x", x, m * w.cols);
      f32(fn, "y", y, m * w.rows);
      impl.matmulQuant(x, w, y, m, accumulate, alpha ?? 1);
    },
    matmulQuantTrain(x, w, y, m, transW, accumulate, alpha, lowRank, bf16) {
      const fn = "matmulQuantTrain";
      checkQuantMatrix(w, fn);
      dim(fn, "m", m);
      flag(fn, "transW", transW);
      flag(fn, "accumulate", accumulate);
      if (optional(alpha)) num(fn, "alpha", alpha);
      if (optional(bf16)) flag(fn, "bf16", bf16);
      f32(fn, "x", x, m * (transW ? w.rows : w.cols));
      f32(fn, "y", y, m * quantTrainCols(w, transW));
      if (lowRank !== undefined && lowRank !== null) {
        dim(fn, "lowRank.k", lowRank.k);
        flag(fn, "lowRank.transB", lowRank.transB);
        num(fn, "lowRank.alpha", lowRank.alpha);
        f32(fn, "lowRank.a", lowRank.a, m * lowRank.k);
        f32(fn, "lowRank.b", lowRank.b, quantTrainCols(w, transW) * lowRank.k);
      }
      impl.matmulQuantTrain(x, w, y, m, transW, accumulate, alpha ?? 1, lowRank ?? undefined, bf16 ?? false);
    },
    rmsnormForward(x, weight, y, rstd, rows, d, eps) {
      const fn = "rmsnormForward";
      dim(fn, "rows", rows);
      dim(fn, "dim", d);
      num(fn, "eps", eps);
      f32(fn, "x", x, rows * d);
      f32(fn, "weight", weight, d);
      f32(fn, "y", y, rows * d);
      f32(fn, "rstd", rstd, rows);
      impl.rmsnormForward(x, weight, y, rstd, rows, d, eps);
    },
    rmsnormBackward(dy, x, weight, rstd, dx, dWeight, rows, d) {
      const fn = "rmsnormBackward";
      dim(fn, "rows", rows);
      dim(fn, "dim", d);
      f32(fn, "dy", dy, rows * d);
      f32(fn, "x", x, rows * d);
      f32(fn, "weight", weight, d);
      f32(fn, "rstd", rstd, rows);
      f32(fn, "dx", dx, rows * d);
      f32(fn, "dWeight", dWeight, d, true);
      impl.rmsnormBackward(dy, x, weight, rstd, dx, dWeight ?? null, rows, d);
    },
    rope(x, cos, sin, positions, T, nHeads, headDim, inverse, rotaryDim) {
      const fn = "rope";
      dim(fn, "T", T);
      dim(fn, "nHeads", nHeads);
      dim(fn, "headDim", headDim);
      flag(fn, "inverse", inverse);
      if (headDim % 2) fail(fn, "headDim", `must be even, got ${headDim}`, true);
      const rot = optional(rotaryDim) ? dim(fn, "rotaryDim", rotaryDim) : headDim;
      if (rot !== headDim && (rot % 2 || rot < 2 || rot > headDim))
        fail(fn, "rotaryDim", `must be even and in [2, headDim (${headDim})], got ${rot}`, true);
      const half = rot / 2;
      f32(fn, "x", x, T * nHeads * headDim);
      f32(fn, "cos", cos, half);
      f32(fn, "sin", sin, half);
      i32(fn, "positions", positions, T);
      if (half > 0) {
        const rows = Math.floor(Math.min(cos.length, sin.length) / half);
        for (let t = 0; t < T; t++) {
          const p = positions[t];
          if (p < 0 || p >= rows)
            fail(fn, "positions", `holds ${p}, outside the cos/sin table of ${rows} rows`, true);
        }
      }
      impl.rope(x, cos, sin, positions, T, nHeads, headDim, inverse, rot);
    },
    swigluForward(gate, up, out, n) {
      gatedForwardArgs("swigluForward", gate, up, out, n);
      impl.swigluForward(gate, up, out, n);
    },
    swigluBackward(dOut, gate, up, dGate, dUp, n) {
      gatedBackwardArgs("swigluBackward", dOut, gate, up, dGate, dUp, n);
      impl.swigluBackward(dOut, gate, up, dGate, dUp, n);
    },
    gegluForward(gate, up, out, n) {
      gatedForwardArgs("gegluForward", gate, up, out, n);
      impl.gegluForward(gate, up, out, n);
    },
    gegluBackward(dOut, gate, up, dGate, dUp, n) {
      gatedBackwardArgs("gegluBackward", dOut, gate, up, dGate, dUp, n);
      impl.gegluBackward(dOut, gate, up, dGate, dUp, n);
    },
    addBias(y, bias, rows, d, alpha) {
      const fn = "addBias";
      dim(fn, "rows", rows);
      dim(fn, "dim", d);
      if (optional(alpha)) num(fn, "alpha", alpha);
      f32(fn, "y", y, rows * d);
      f32(fn, "bias", bias, d);
      impl.addBias(y, bias, rows, d, alpha ?? 1);
    },
    attentionForward(q, k, v, out, lse, T, S, nHeads, nKv, headDim, scale, kvStride, window, bf16) {
      const fn = "attentionForward";
      dim(fn, "T", T);
      dim(fn, "S", S);
      dim(fn, "nHeads", nHeads);
      dim(fn, "nKv", nKv);
      dim(fn, "headDim", headDim);
      num(fn, "scale", scale);
      dim(fn, "kvStride", kvStride);
      const win = optional(window) ? dim(fn, "window", window) : 0;
      if (optional(bf16)) flag(fn, "bf16", bf16);
      heads(fn, nHeads, nKv);
      if (T > S) fail(fn, "T", `(${T}) must not exceed S (${S})`, true);
      if (kvStride < nKv * headDim)
        fail(fn, "kvStride", `(${kvStride}) must be at least nKv*headDim (${nKv * headDim})`, true);
      const qn = T * nHeads * headDim;
      const kvn = S === 0 ? 0 : (S - 1) * kvStride + nKv * headDim;
      f32(fn, "q", q, qn);
      f32(fn, "k", k, kvn);
      f32(fn, "v", v, kvn);
      f32(fn, "out", out, qn);
      f32(fn, "lse", lse, nHeads * T, true);
      impl.attentionForward(
        q,
        k,
        v,
        out,
        lse ?? null,
        T,
        S,
        nHeads,
        nKv,
        headDim,
        scale,
        kvStride,
        win,
        bf16 ?? false,
      );
    },
    attentionBackward(dOut, q, k, v, out, lse, dq, dk, dv, T, nHeads, nKv, headDim, scale, window, bf16) {
      const fn = "attentionBackward";
      dim(fn, "T", T);
      dim(fn, "nHeads", nHeads);
      dim(fn, "nKv", nKv);
      dim(fn, "headDim", headDim);
      num(fn, "scale", scale);
      const win = optional(window) ? dim(fn, "window", window) : 0;
      if (optional(bf16)) flag(fn, "bf16", bf16);
      heads(fn, nHeads, nKv);
      const qn = T * nHeads * headDim;
      const kvn = T * nKv * headDim;
      f32(fn, "dOut", dOut, qn);
      f32(fn, "q", q, qn);
      f32(fn, "k", k, kvn);
      f32(fn, "v", v, kvn);
      f32(fn, "out", out, qn);
      f32(fn, "lse", lse, nHeads * T);
      f32(fn, "dq", dq, qn);
      f32(fn, "dk", dk, kvn);
      f32(fn, "dv", dv, kvn);
      impl.attentionBackward(
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
        win,
        bf16 ?? false,
      );
    },
    crossEntropy(logits, targets, rows, vocab, dLogits, gradScale) {
      const fn = "crossEntropy";
      dim(fn, "rows", rows);
      dim(fn, "vocab", vocab);
      num(fn, "gradScale", gradScale);
      f32(fn, "logits", logits, rows * vocab);
      i32(fn, "targets", targets, rows);
      f32(fn, "dLogits", dLogits, rows * vocab, true);
      for (let r = 0; r < rows; r++)
        if (targets[r] >= vocab) fail(fn, "targets", `holds ${targets[r]}, not below vocab (${vocab})`, true);
      return impl.crossEntropy(logits, targets, rows, vocab, dLogits ?? null, gradScale);
    },
    adamw(param, grad, m, v, n, lr, beta1, beta2, eps, weightDecay, step) {
      const fn = "adamw";
      dim(fn, "n", n);
      num(fn, "lr", lr);
      num(fn, "beta1", beta1);
      num(fn, "beta2", beta2);
      num(fn, "eps", eps);
      num(fn, "weightDecay", weightDecay);
      dim(fn, "step", step);
      if (step < 1) fail(fn, "step", `must be at least 1, got ${step}`, true);
      f32(fn, "param", param, n);
      f32(fn, "grad", grad, n);
      f32(fn, "m", m, n);
      f32(fn, "v", v, n);
      impl.adamw(param, grad, m, v, n, lr, beta1, beta2, eps, weightDecay, step);
    },
  };
}

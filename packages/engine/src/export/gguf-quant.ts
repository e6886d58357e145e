// ggml's block formats, encoded from float32 (and decoded, for tests and
// error measurement). Layouts as ggml-common.h defines them:
//   BF16: the top half of each float32
//   Q4_0: 32 values; f16 d; u8 qs[16] (low nibbles values 0–15, high 16–31)
//                                                       x = d·(q − 8)
//   Q8_0: 32 values; f16 d; int8 q[32]                  x = d·q
//   Q5_0: 32 values; f16 d; u32 qh (5th bits); u8 qs[16] x = d·(q − 16)
//   Q4_K: 256 values; f16 d, f16 dmin; u8 scales[12] (eight 6-bit scales and
//         mins); u8 qs[128]                             x = d·sc·q − dmin·m
//   Q6_K: 256 values; u8 ql[128], u8 qh[64] (6-bit q); int8 scales[16]; f16 d
//                                                       x = d·sc·(q − 32)
// The K formats' block scales come from a small search per sub-block (a few
// candidate grids, each refitted by weighted least squares), the same idea as
// llama.cpp's reference quantizer; Q8_0 and Q5_0 scale by the block's largest
// value, as llama.cpp does.
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from "../quant/half.js";
import { quantizeQ4_0 } from "../quant/q4.js";
import type { GgmlTypeName } from "./gguf-file.js";

export const BLOCK = { F32: 1, F16: 1, BF16: 1, Q4_0: 32, Q8_0: 32, Q5_0: 32, Q4_K: 256, Q6_K: 256 } as const;
export const BLOCK_BYTES = {
  F32: 4,
  F16: 2,
  BF16: 2,
  Q4_0: 18,
  Q8_0: 34,
  Q5_0: 22,
  Q4_K: 144,
  Q6_K: 210,
} as const;

/** Bytes of `count` values in a type (count a multiple of its block). */
export function encodedSize(type: GgmlTypeName, count: number): number {
  return (count / BLOCK[type]) * BLOCK_BYTES[type];
}

const roundHalfAway = (x: number) => (x < 0 ? -Math.round(-x) : Math.round(x));

export function encode(type: GgmlTypeName, values: Float32Array): Uint8Array {
  if (values.length % BLOCK[type] !== 0) {
    throw new Error(`${type}: ${values.length} values are not whole blocks of ${BLOCK[type]}`);
  }
  const out = new Uint8Array(encodedSize(type, values.length));
  const view = new DataView(out.buffer);
  const blocks = values.length / BLOCK[type];
  switch (type) {
    case "F32":
      new Float32Array(out.buffer).set(values);
      break;
    case "F16":
      for (let i = 0; i < values.length; i++) view.setUint16(2 * i, f32ToF16(values[i]), true);
      break;
    case "BF16":
      for (let i = 0; i < values.length; i++) view.setUint16(2 * i, f32ToBf16(values[i]), true);
      break;
    case "Q4_0": {
      // The serving format's blocks (quant/q4.ts) are GGUF's: one rule, taken a block at a time.
      const q = quantizeQ4_0(values, blocks, 32);
      for (let b = 0; b < blocks; b++) {
        view.setUint16(b * 18, q.scales[b], true);
        out.set(q.data.subarray(b * 16, b * 16 + 16), b * 18 + 2);
      }
      break;
    }
    case "Q8_0":
      for (let b = 0; b < blocks; b++) encodeQ8_0(values.subarray(b * 32, b * 32 + 32), view, b * 34);
      break;
    case "Q5_0":
      for (let b = 0; b < blocks; b++) encodeQ5_0(values.subarray(b * 32, b * 32 + 32), view, b * 22);
      break;
    case "Q4_K":
      for (let b = 0; b < blocks; b++) encodeQ4K(values.subarray(b * 256, b * 256 + 256), out, b * 144);
      break;
    case "Q6_K":
      for (let b = 0; b < blocks; b++) encodeQ6K(values.subarray(b * 256, b * 256 + 256), out, b * 210);
      break;
  }
  return out;
}

function encodeQ8_0(x: Float32Array, view: DataView, at: number): void {
  let amax = 0;
  for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(x[i]));
  const d = amax / 127;
  const id = d ? 1 / d : 0;
  view.setUint16(at, f32ToF16(d), true);
  for (let i = 0; i < 32; i++) view.setInt8(at + 2 + i, roundHalfAway(x[i] * id));
}

function encodeQ5_0(x: Float32Array, view: DataView, at: number): void {
  let max = 0;
  for (let i = 0; i < 32; i++) if (Math.abs(x[i]) > Math.abs(max)) max = x[i];
  const d = max / -16;
  const id = d ? 1 / d : 0;
  view.setUint16(at, f32ToF16(d), true);
  let qh = 0;
  for (let j = 0; j < 16; j++) {
    const q0 = Math.min(31, Math.trunc(x[j] * id + 16.5));
    const q1 = Math.min(31, Math.trunc(x[j + 16] * id + 16.5));
    view.setUint8(at + 6 + j, (q0 & 0xf) | ((q1 & 0xf) << 4));
    qh |= ((q0 >> 4) & 1) << j;
    qh |= ((q1 >> 4) & 1) << (j + 16);
  }
  view.setUint32(at + 2, qh >>> 0, true);
}

// scratch of the fits (a sub-block is at most 32 values)
const WEIGHTS = new Float64Array(32);
const LEVELS = new Int8Array(32);

/**
 * Scale s ≥ 0 and offset m ≤ 0 of x ≈ s·q + m with q in 0..nmax: a search
 * over candidate grids, each followed by the weighted least-squares s and m
 * for its q (weights favour larger values, whose error costs more).
 */
function fitScaleMin(x: Float32Array, nmax: number): { scale: number; min: number } {
  const n = x.length;
  let lo = 0;
  let hi = x[0];
  let sumSq = 0;
  for (let i = 0; i < n; i++) {
    lo = Math.min(lo, x[i]);
    hi = Math.max(hi, x[i]);
    sumSq += x[i] * x[i];
  }
  if (hi <= lo) return { scale: 0, min: lo };
  const mean = Math.sqrt(sumSq / n);
  const w = WEIGHTS;
  for (let i = 0; i < n; i++) w[i] = mean + Math.abs(x[i]);
  let best = { scale: (hi - lo) / nmax, min: lo };
  let bestError = Number.POSITIVE_INFINITY;
  const q = LEVELS;
  for (let step = 0; step <= 20; step++) {
    const iscale = (nmax - 1 + 0.1 * step) / (hi - lo);
    let sw = 0;
    let swq = 0;
    let swq2 = 0;
    let swx = 0;
    let swqx = 0;
    for (let i = 0; i < n; i++) {
      q[i] = Math.max(0, Math.min(nmax, Math.round(iscale * (x[i] - lo))));
      sw += w[i];
      swq += w[i] * q[i];
      swq2 += w[i] * q[i] * q[i];
      swx += w[i] * x[i];
      swqx += w[i] * q[i] * x[i];
    }
    const det = sw * swq2 - swq * swq;
    if (det <= 0) continue;
    let scale = (sw * swqx - swq * swx) / det;
    let min = (swq2 * swx - swq * swqx) / det;
    if (min > 0) {
      min = 0;
      scale = swqx / swq2;
    }
    let error = 0;
    for (let i = 0; i < n; i++) error += w[i] * (scale * q[i] + min - x[i]) ** 2;
    if (error < bestError) {
      bestError = error;
      best = { scale, min };
    }
  }
  return best;
}

function encodeQ4K(x: Float32Array, out: Uint8Array, at: number): void {
  const scales = new Float32Array(8);
  const mins = new Float32Array(8);
  for (let s = 0; s < 8; s++) {
    const fit = fitScaleMin(x.subarray(s * 32, s * 32 + 32), 15);
    scales[s] = fit.scale;
    mins[s] = -fit.min;
  }
  const maxScale = Math.max(...scales);
  const maxMin = Math.max(...mins);
  const ls = new Uint8Array(8);
  const lm = new Uint8Array(8);
  for (let s = 0; s < 8; s++) {
    ls[s] = maxScale > 0 ? Math.min(63, Math.round((63 / maxScale) * scales[s])) : 0;
    lm[s] = maxMin > 0 ? Math.min(63, Math.round((63 / maxMin) * mins[s])) : 0;
  }
  const dBits = f32ToF16(maxScale / 63);
  const dminBits = f32ToF16(maxMin / 63);
  const d = f16ToF32(dBits);
  const dmin = f16ToF32(dminBits);
  const view = new DataView(out.buffer, out.byteOffset);
  view.setUint16(at, dBits, true);
  view.setUint16(at + 2, dminBits, true);
  const sc = out.subarray(at + 4, at + 16);
  for (let j = 0; j < 4; j++) {
    sc[j] = ls[j] | ((ls[j + 4] >> 4) << 6);
    sc[j + 4] = lm[j] | ((lm[j + 4] >> 4) << 6);
    sc[j + 8] = (ls[j + 4] & 0xf) | ((lm[j + 4] & 0xf) << 4);
  }
  const q = new Uint8Array(256);
  for (let s = 0; s < 8; s++) {
    const step = d * ls[s];
    const offset = dmin * lm[s];
    for (let i = 0; i < 32; i++) {
      const v = step ? Math.round((x[s * 32 + i] + offset) / step) : 0;
      q[s * 32 + i] = Math.max(0, Math.min(15, v));
    }
  }
  const qs = out.subarray(at + 16, at + 144);
  for (let j = 0; j < 4; j++) {
    for (let l = 0; l < 32; l++) qs[j * 32 + l] = q[j * 64 + l] | (q[j * 64 + 32 + l] << 4);
  }
}

/** The symmetric scale of x ≈ s·q, q in -32..31, that minimizes the x²-weighted error over a few grids. */
function fitSymmetricScale(x: Float32Array): number {
  let max = 0;
  for (const v of x) if (Math.abs(v) > Math.abs(max)) max = v;
  if (max === 0) return 0;
  let best = max / -32;
  let bestError = Number.POSITIVE_INFINITY;
  for (let step = -9; step <= 9; step++) {
    const iscale = -(32 + 0.1 * step) / max;
    let sumQX = 0;
    let sumQQ = 0;
    const q = LEVELS;
    for (let i = 0; i < x.length; i++) {
      q[i] = Math.max(-32, Math.min(31, Math.round(iscale * x[i])));
      const w = x[i] * x[i];
      sumQX += w * q[i] * x[i];
      sumQQ += w * q[i] * q[i];
    }
    if (sumQQ <= 0) continue;
    const scale = sumQX / sumQQ;
    let error = 0;
    for (let i = 0; i < x.length; i++) error += x[i] * x[i] * (scale * q[i] - x[i]) ** 2;
    if (error < bestError) {
      bestError = error;
      best = scale;
    }
  }
  return best;
}

function encodeQ6K(x: Float32Array, out: Uint8Array, at: number): void {
  const scales = new Float32Array(16);
  for (let s = 0; s < 16; s++) scales[s] = fitSymmetricScale(x.subarray(s * 16, s * 16 + 16));
  let maxScale = 0;
  for (const s of scales) if (Math.abs(s) > Math.abs(maxScale)) maxScale = s;
  const iscale = maxScale ? -128 / maxScale : 0;
  const dBits = f32ToF16(iscale ? 1 / iscale : 0);
  const d = f16ToF32(dBits);
  const ls = new Int8Array(16);
  for (let s = 0; s < 16; s++) ls[s] = Math.max(-128, Math.min(127, Math.round(iscale * scales[s])));
  const L = new Uint8Array(256);
  for (let s = 0; s < 16; s++) {
    const step = d * ls[s];
    for (let i = 0; i < 16; i++) {
      const v = step ? Math.round(x[s * 16 + i] / step) : 0;
      L[s * 16 + i] = Math.max(-32, Math.min(31, v)) + 32;
    }
  }
  const ql = out.subarray(at, at + 128);
  const qh = out.subarray(at + 128, at + 192);
  for (let n = 0; n < 2; n++) {
    const y = n * 128;
    for (let l = 0; l < 32; l++) {
      const [a, b, c, e] = [L[y + l], L[y + l + 32], L[y + l + 64], L[y + l + 96]];
      ql[n * 64 + l] = (a & 0xf) | ((c & 0xf) << 4);
      ql[n * 64 + l + 32] = (b & 0xf) | ((e & 0xf) << 4);
      qh[n * 32 + l] = (a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6);
    }
  }
  new Int8Array(out.buffer, out.byteOffset + at + 192, 16).set(ls);
  new DataView(out.buffer, out.byteOffset).setUint16(at + 208, dBits, true);
}

/** The float32 values the blocks stand for, as ggml dequantizes them. */
export function decode(type: GgmlTypeName, bytes: Uint8Array, count: number): Float32Array {
  const y = new Float32Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const blocks = count / BLOCK[type];
  for (let b = 0; b < blocks; b++) {
    const at = b * BLOCK_BYTES[type];
    const o = b * BLOCK[type];
    if (type === "F32") y[o] = view.getFloat32(at, true);
    else if (type === "F16") y[o] = f16ToF32(view.getUint16(at, true));
    else if (type === "BF16") y[o] = bf16ToF32(view.getUint16(at, true));
    else if (type === "Q4_0") {
      const d = f16ToF32(view.getUint16(at, true));
      for (let j = 0; j < 16; j++) {
        y[o + j] = d * ((bytes[at + 2 + j] & 0xf) - 8);
        y[o + j + 16] = d * ((bytes[at + 2 + j] >> 4) - 8);
      }
    } else if (type === "Q8_0") {
      const d = f16ToF32(view.getUint16(at, true));
      for (let i = 0; i < 32; i++) y[o + i] = d * view.getInt8(at + 2 + i);
    } else if (type === "Q5_0") {
      const d = f16ToF32(view.getUint16(at, true));
      const qh = view.getUint32(at + 2, true);
      for (let j = 0; j < 16; j++) {
        const byte = bytes[at + 6 + j];
        y[o + j] = d * (((byte & 0xf) | (((qh >>> j) & 1) << 4)) - 16);
        y[o + j + 16] = d * (((byte >> 4) | (((qh >>> (j + 16)) & 1) << 4)) - 16);
      }
    } else if (type === "Q4_K") {
      const d = f16ToF32(view.getUint16(at, true));
      const dmin = f16ToF32(view.getUint16(at + 2, true));
      const sc = bytes.subarray(at + 4, at + 16);
      const qs = bytes.subarray(at + 16, at + 144);
      const scaleMin = (j: number): [number, number] =>
        j < 4
          ? [sc[j] & 63, sc[j + 4] & 63]
          : [(sc[j + 4] & 0xf) | ((sc[j - 4] >> 6) << 4), (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)];
      for (let j = 0; j < 4; j++) {
        const [s1, m1] = scaleMin(2 * j);
        const [s2, m2] = scaleMin(2 * j + 1);
        for (let l = 0; l < 32; l++) {
          y[o + j * 64 + l] = d * s1 * (qs[j * 32 + l] & 0xf) - dmin * m1;
          y[o + j * 64 + 32 + l] = d * s2 * (qs[j * 32 + l] >> 4) - dmin * m2;
        }
      }
    } else if (type === "Q6_K") {
      const ql = bytes.subarray(at, at + 128);
      const qh = bytes.subarray(at + 128, at + 192);
      const sc = new Int8Array(bytes.buffer, bytes.byteOffset + at + 192, 16);
      const d = f16ToF32(view.getUint16(at + 208, true));
      for (let n = 0; n < 2; n++) {
        for (let l = 0; l < 32; l++) {
          const is = Math.floor(l / 16) + n * 8;
          const h = qh[n * 32 + l];
          const a = ql[n * 64 + l];
          const b2 = ql[n * 64 + l + 32];
          y[o + n * 128 + l] = d * sc[is] * (((a & 0xf) | ((h & 3) << 4)) - 32);
          y[o + n * 128 + l + 32] = d * sc[is + 2] * (((b2 & 0xf) | (((h >> 2) & 3) << 4)) - 32);
          y[o + n * 128 + l + 64] = d * sc[is + 4] * (((a >> 4) | (((h >> 4) & 3) << 4)) - 32);
          y[o + n * 128 + l + 96] = d * sc[is + 6] * (((b2 >> 4) | (((h >> 6) & 3) << 4)) - 32);
        }
      }
    }
  }
  return y;
}

// IEEE 754 half precision (f16: 1 sign, 5 exponent, 10 mantissa bits) and
// bfloat16 (bf16: the top 16 bits of a float32) encoders and decoders. Every
// place that reads or writes 16-bit weights (safetensors, GGUF, the serving
// weight formats) goes through these, so rounding is the same everywhere:
// round to nearest, ties to even; NaN stays NaN (quiet, sign kept); values past
// the f16 range become ±Infinity; f16 subnormals are produced and read exactly.

import { bf16Copy, f32BitsToBf16 } from "../kernels/bf16-rounding.js";

export { f32BitsToBf16 };

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** float32 bit pattern → f16 bits, round to nearest even. */
export function f32BitsToF16(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | (mantissa ? 0x7e00 | (mantissa >>> 13) : 0x7c00);
  const e = exponent - 127 + 15; // the f16 biased exponent
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // An f16 subnormal (unit 2^-24) or zero; below half the smallest subnormal is zero.
    if (e < -10) return sign;
    const significand = mantissa | 0x800000;
    const shift = 14 - e;
    let half = significand >>> shift;
    const rest = significand & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && half & 1)) half++;
    return sign | half; // a carry into 0x400 is the smallest normal, as it should be
  }
  let half = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half++; // a carry may reach 0x7c00 = Infinity
  return sign | half;
}

/** f16 bits → the float32 value (exact: every f16 is a float32). */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** bf16 bits → the float32 value. */
export function bf16ToF32(h: number): number {
  scratchU32[0] = (h & 0xffff) << 16;
  return scratchF32[0];
}

/** A number (rounded to float32 first, as a Float32Array would) → f16 bits. */
export function f32ToF16(x: number): number {
  scratchF32[0] = x;
  return f32BitsToF16(scratchU32[0]);
}

/** A number (rounded to float32 first) → bf16 bits. */
export function f32ToBf16(x: number): number {
  scratchF32[0] = x;
  return f32BitsToBf16(scratchU32[0]);
}

function bitsOf(values: Float32Array): Uint32Array {
  return new Uint32Array(values.buffer, values.byteOffset, values.length);
}

export function encodeF16(values: Float32Array, out = new Uint16Array(values.length)): Uint16Array {
  const bits = bitsOf(values);
  for (let i = 0; i < bits.length; i++) out[i] = f32BitsToF16(bits[i]);
  return out;
}

export function decodeF16(halves: Uint16Array, out = new Float32Array(halves.length)): Float32Array {
  for (let i = 0; i < halves.length; i++) out[i] = f16ToF32(halves[i]);
  return out;
}

export function encodeBf16(values: Float32Array, out = new Uint16Array(values.length)): Uint16Array {
  const bits = bitsOf(values);
  for (let i = 0; i < bits.length; i++) out[i] = f32BitsToBf16(bits[i]);
  return out;
}

export function decodeBf16(halves: Uint16Array, out = new Float32Array(halves.length)): Float32Array {
  const bits = bitsOf(out);
  for (let i = 0; i < halves.length; i++) bits[i] = halves[i] << 16;
  return out;
}

/** The values as f16 would store them (encode then decode), for comparisons at f16. */
export function roundToF16(values: Float32Array): Float32Array {
  return decodeF16(encodeF16(values));
}

/** Whether every value is a bf16 value (its low 16 bits zero), so bf16 holds them exactly. */
export function holdsBf16Values(values: Float32Array): boolean {
  const bits = bitsOf(values);
  for (let i = 0; i < bits.length; i++) if ((bits[i] & 0xffff) !== 0) return false;
  return true;
}

/** The values as bf16 would store them. */
export const roundToBf16: (values: Float32Array) => Float32Array = bf16Copy;

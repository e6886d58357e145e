// bf16 rounding (nearest even, NaN kept NaN): the one rule the bf16 paths
// share, the kernels' (attention-bf16.ts) and the weight formats'
// (quant/half.ts). Matches the native kernels' bf16_bits and vcvtne2ps2bf16.

const scratchU32 = new Uint32Array(1);
const scratchF32 = new Float32Array(scratchU32.buffer);

/** float32 bit pattern → bf16 bits, round to nearest even. */
export function f32BitsToBf16(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && bits & 0x7fffff) return ((bits >>> 16) | 0x0040) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** x rounded to float32, then to the nearest bf16 value (as a number). */
export function bf16Value(x: number): number {
  scratchF32[0] = x;
  scratchU32[0] = f32BitsToBf16(scratchU32[0]) << 16;
  return scratchF32[0];
}

/** A copy of `values` with each rounded to the nearest bf16 value. */
export function bf16Copy(values: Float32Array): Float32Array {
  const out = new Float32Array(values);
  const bits = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; i++) bits[i] = f32BitsToBf16(bits[i]) << 16;
  return out;
}

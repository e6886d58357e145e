// Q4_0, GGUF's simplest 4-bit block format: along each row, blocks of 32
// weights share one f16 scale d. d = m / -8 where m is the block's weight of
// largest magnitude (sign kept), so m itself is stored exactly as nibble 0;
// each weight is the nibble q = min(15, ⌊w/d + 8.5⌋) and reads back as
// (q − 8)·d. 18 bytes per 32 weights (4.5 bits a weight). Byte j of a block
// holds weight j in its low nibble and weight j + 16 in its high nibble, as
// GGUF stores it, so a block here is byte for byte a GGUF block.
import type { QuantMatrix } from "../kernels/types.js";
import { f32ToF16 } from "./half.js";

export const Q4_BLOCK = 32;

export function quantizeQ4_0(w: Float32Array, rows: number, cols: number): QuantMatrix & { format: "q4_0" } {
  if (cols % Q4_BLOCK !== 0) throw new RangeError(`q4_0: a row of ${cols} weights is not whole blocks of 32`);
  const blocks = cols / Q4_BLOCK;
  const data = new Uint8Array((rows * cols) / 2);
  const scales = new Uint16Array(rows * blocks);
  const q = new Uint8Array(Q4_BLOCK);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < blocks; b++) {
      const o = r * cols + b * Q4_BLOCK;
      let amax = 0;
      let max = 0;
      for (let j = 0; j < Q4_BLOCK; j++) {
        const v = w[o + j];
        if (Math.abs(v) > amax) {
          amax = Math.abs(v);
          max = v;
        }
      }
      const d = Math.fround(max / -8);
      const id = d !== 0 ? Math.fround(1 / d) : 0;
      for (let j = 0; j < Q4_BLOCK; j++)
        q[j] = Math.min(15, Math.trunc(Math.fround(Math.fround(w[o + j] * id) + 8.5)));
      scales[r * blocks + b] = f32ToF16(d);
      const out = r * (cols / 2) + b * 16;
      for (let j = 0; j < 16; j++) data[out + j] = q[j] | (q[j + 16] << 4);
    }
  }
  return { format: "q4_0", rows, cols, data, scales };
}

// What every kernel conformance case is built from: the case shape and seeded
// random inputs (the same on every implementation), shared by conformance.ts,
// conformance-ops.ts and the fuzz.
import type { Kernels } from "../../kernels/types.js";

export interface KernelCase {
  /** e.g. "matmul 13x37x29 tA tB acc α=0.5" */
  readonly name: string;
  /** Relative tolerance against the reference (errors are scaled by the output's magnitude). */
  readonly tolerance: number;
  run(k: Kernels): Float32Array[];
  /**
   * For an implementation that rounds x on this case (matmulQuant's 8 bits,
   * quantInt8MaxRows; matmulQuantTrain's bf16, bf16Dot): its worst error over
   * what the rounding allows (<= 1 passes), in place of `tolerance`; null
   * where it does not.
   */
  roundedActivations?(k: Kernels): number | null;
}

/** A seeded uniform [-1, 1) generator (mulberry32), so every implementation sees the same inputs. */
export function randomSource(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2147483648 - 1;
  };
}

/** A Float32Array view at a non-zero byteOffset into a larger buffer (catches ignored offsets). */
export function randomView(rand: () => number, n: number, scale = 1): Float32Array {
  const buf = new Float32Array(n + 7);
  for (let i = 0; i < buf.length; i++) buf[i] = rand() * scale;
  return buf.subarray(3, 3 + n);
}

/** cos/sin tables [maxPos, half] for the rotary angles p·theta^(-i/half). */
export function ropeTables(maxPos: number, half: number, theta: number): [Float32Array, Float32Array] {
  const cos = new Float32Array(maxPos * half);
  const sin = new Float32Array(maxPos * half);
  for (let p = 0; p < maxPos; p++)
    for (let i = 0; i < half; i++) {
      const a = p * theta ** (-i / half);
      cos[p * half + i] = Math.cos(a);
      sin[p * half + i] = Math.sin(a);
    }
  return [cos, sin];
}

// Conformance cases of matmulQuant: every serving format, GEMV row counts
// 1-16 (the 8- and 4-row weight groups and their tails), 17-32 (the integer
// decode path's limit) and the many-row paths (prefill: whole and ragged
// tiles of 6 rows by 32 weight rows), odd output widths, k with and without a
// tail past 32, views at non-zero offsets, accumulate and alpha. Weights are random bytes (every
// nibble, int8 −128 included) with random scales; y sits between guard
// elements that must come back untouched. Some x rows carry an outlier
// channel (×40), an all-zero block and one of magnitude 1e-38. Where an
// implementation rounds x to 8 bits (quantInt8MaxRows) the int8 and q4_0
// cases it takes that way are held to that rounding's bounds instead
// (conformance-quant-int.ts).

import type { QuantFormat, QuantMatrix } from "../../kernels/types.js";
import { f32ToF16 } from "../../quant/half.js";
import { type KernelCase, randomSource, randomView } from "./conformance-inputs.js";
import { roundedActivationsError, roundsActivations } from "./conformance-quant-int.js";

const GUARD = 5;

/** A random matrix of a format, its arrays views at odd offsets into larger buffers. */
export function randomQuantMatrix(
  rand: () => number,
  format: QuantFormat,
  rows: number,
  cols: number,
): QuantMatrix {
  const byte = () => Math.floor((rand() + 1) * 128) & 255;
  const nk = rows * cols;
  switch (format) {
    case "bf16": {
      const data = new Uint16Array(nk + 3).subarray(3);
      // random sign and mantissa, exponents near 1 (a bf16 is an fp32's top half)
      for (let i = 0; i < nk; i++)
        data[i] = (byte() & 0x80 ? 0x8000 : 0) | ((120 + (byte() % 10)) << 7) | (byte() & 0x7f);
      return { format, rows, cols, data, scales: null };
    }
    case "int8": {
      const data = new Int8Array(nk + 1).subarray(1);
      for (let i = 0; i < nk; i++) data[i] = byte() - 128;
      const scales = randomView(rand, rows, 0.02);
      return { format, rows, cols, data, scales };
    }
    case "q4_0": {
      const data = new Uint8Array(nk / 2 + 7).subarray(7);
      for (let i = 0; i < nk / 2; i++) data[i] = byte();
      const scales = new Uint16Array(nk / 32 + 1).subarray(1);
      for (let i = 0; i < scales.length; i++) scales[i] = f32ToF16(rand() * 0.05);
      return { format, rows, cols, data, scales };
    }
  }
}

export function quantCases(): KernelCase[] {
  const shapes: [number, number, number][] = [
    [1, 1, 32],
    [1, 7, 64],
    [1, 9, 96],
    [1, 257, 576],
    // one row read front to back (int8 at batch 1): four steps at a time, the rest, and a half step
    [1, 130, 288],
    [1, 70, 1568],
    [2, 33, 160],
    [3, 17, 32],
    [4, 65, 320],
    [5, 31, 64],
    [7, 100, 128],
    [13, 37, 192],
    [16, 40, 1536],
    [17, 41, 96],
    [32, 50, 192],
    [40, 130, 320],
    [70, 300, 64],
    [96, 64, 576],
    [257, 97, 96],
  ];
  // bf16 and int8 also take rows that are not whole 32-blocks (a scalar tail)
  const tails: [number, number, number][] = [
    [1, 9, 33],
    [3, 11, 7],
    [6, 70, 100],
    [21, 33, 577],
  ];
  const out: KernelCase[] = [];
  let seed = 500;
  for (const format of ["bf16", "int8", "q4_0"] as const) {
    for (const [m, n, k] of format === "q4_0" ? shapes : [...shapes, ...tails]) {
      const s = seed++;
      const accumulate = (s & 1) === 0;
      const alpha = s % 3 === 0 ? 0.5 : undefined;
      const outliers = s % 4 === 1;
      const operands = () => {
        const rand = randomSource(s);
        const w = randomQuantMatrix(rand, format, n, k);
        const x = randomView(rand, m * k);
        if (outliers) {
          for (let i = 0; i < m; i++) x[i * k + ((7 * i + 5) % k)] *= 40;
          if (k >= 64) x.fill(0, 32, 64);
          if (k >= 96) for (let p = 64; p < 96; p++) x[p] *= 1e-38; // 127 / max|x| overflows fp32
        }
        const yBuf = new Float32Array(m * n + 2 * GUARD);
        for (let i = 0; i < yBuf.length; i++) yBuf[i] = rand();
        return { w, x, yBuf };
      };
      const probe = randomQuantMatrix(randomSource(0), format, 1, k);
      out.push({
        name: `matmulQuant ${format} ${m}x${n}x${k}${accumulate ? " acc" : ""}${alpha ? ` α=${alpha}` : ""}${outliers ? " outliers" : ""}`,
        tolerance: 2e-5,
        run(kern) {
          const { w, x, yBuf } = operands();
          kern.matmulQuant(x, w, yBuf.subarray(GUARD, GUARD + m * n), m, accumulate, alpha);
          return [yBuf];
        },
        roundedActivations(kern) {
          if (!roundsActivations(kern, probe, m)) return null;
          const { w, x, yBuf } = operands();
          return roundedActivationsError(kern, x, w, yBuf, GUARD, m, accumulate, alpha);
        },
      });
    }
  }
  out.push({
    name: "matmulQuant int8 k=0 overwrites y with zeros",
    tolerance: 0,
    run(kern) {
      const y = randomView(randomSource(7), 6);
      const w: QuantMatrix = {
        format: "int8",
        rows: 3,
        cols: 0,
        data: new Int8Array(0),
        scales: new Float32Array(3),
      };
      kern.matmulQuant(new Float32Array(0), w, y, 2, false);
      return [y];
    },
  });
  return out;
}

// Conformance cases for attention with bf16 products (a bf16 training run):
// every unit, with native bf16 dot products or not, must round the operands
// of attention's matmuls where the reference does (kernels/attention-bf16.ts)
// and sum in fp32. Part of kernelCases() (conformance.ts).

import { referenceKernels } from "../../kernels/reference.js";
import type { Kernels } from "../../kernels/types.js";
import { type KernelCase, randomSource, randomView } from "./conformance-inputs.js";

/** One attention shape's outputs, forward (out, lse) or backward (dq, dk, dv), at bf16 or fp32. */
function attentionOutputs(kern: Kernels, shape: number[], backward: boolean, bf16: boolean): Float32Array[] {
  const [T, S, nHeads, nKv, D, pad, window] = shape;
  const kvStride = nKv * D + pad;
  const scale = 1 / Math.sqrt(D);
  const rand = randomSource(T * 41 + S * 3 + D + window + (backward ? 1 : 0));
  const q = randomView(rand, T * nHeads * D, 2);
  const k = randomView(rand, S * kvStride, 2);
  const v = randomView(rand, S * kvStride);
  const o = new Float32Array(T * nHeads * D);
  const lse = new Float32Array(nHeads * T);
  if (!backward) {
    kern.attentionForward(q, k, v, o, lse, T, S, nHeads, nKv, D, scale, kvStride, window, bf16);
    return [o, lse];
  }
  // Both sides start from the reference's bf16 forward, so only the backward is compared.
  referenceKernels.attentionForward(q, k, v, o, lse, T, T, nHeads, nKv, D, scale, kvStride, window, true);
  const dOut = randomView(rand, T * nHeads * D);
  const dq = randomView(rand, T * nHeads * D);
  const dk = randomView(rand, T * nKv * D);
  const dv = randomView(rand, T * nKv * D);
  kern.attentionBackward(dOut, q, k, v, o, lse, dq, dk, dv, T, nHeads, nKv, D, scale, window, bf16);
  return [dq, dk, dv];
}

export function attentionBf16Cases(): KernelCase[] {
  const out: KernelCase[] = [];
  // [T, S, nHeads, nKv, headDim, extra kvStride padding, window]: GQA groups,
  // an odd head dimension and odd key counts (a pair's second element past
  // the end), more rows than one packed block, query blocks of 64 with
  // ragged ends, a KV cache (S > T) with a padded stride, sliding windows.
  const shapes = [
    [7, 7, 4, 2, 8, 0, 0],
    [150, 150, 3, 1, 16, 0, 0],
    [70, 70, 2, 2, 64, 0, 0],
    [33, 33, 3, 1, 9, 0, 0],
    [200, 200, 9, 3, 64, 0, 0],
    [5, 40, 4, 2, 16, 8, 0],
    [130, 130, 4, 2, 32, 0, 40],
    [129, 129, 2, 1, 24, 0, 17],
  ];
  for (const shape of shapes) {
    const [T, S, nHeads, nKv, D, pad, window] = shape;
    const name = `T=${T} S=${S} heads=${nHeads}/${nKv} D=${D} pad=${pad} window=${window}`;
    for (const backward of T === S && pad === 0 ? [false, true] : [false]) {
      const fn = backward ? "attentionBackward" : "attentionForward";
      out.push({
        name: `${fn} bf16 ${name}`,
        tolerance: 2e-4,
        run: (kern) => attentionOutputs(kern, shape, backward, true),
      });
      // What bf16 changes (bf16 minus fp32, on the same unit) must be the
      // reference's change: a unit that ignored bf16 would be off by all of it.
      out.push({
        name: `${fn} bf16 - fp32 ${name}`,
        tolerance: 2e-4,
        run(kern) {
          const lo = attentionOutputs(kern, shape, backward, true);
          const hi = attentionOutputs(kern, shape, backward, false);
          return lo.map((x, i) => x.map((y, j) => y - hi[i][j]));
        },
      });
    }
  }
  return out;
}

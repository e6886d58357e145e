// matmulQuantTrain's low-rank term for the implementations that add it as a
// second product (the portable kernels, the reference): y += alpha·a·op(b).
import type { Kernels, LowRankTerm } from "./types.js";

/** y[m, cols] += t.alpha · t.a[m, t.k] · op(t.b) with `kern`'s own matmul; nothing without a term. */
export function addLowRankTerm(
  kern: Pick<Kernels, "matmul">,
  y: Float32Array,
  m: number,
  cols: number,
  t: LowRankTerm | undefined,
): void {
  if (t && t.k > 0) kern.matmul(t.a, t.b, y, m, cols, t.k, false, t.transB, true, t.alpha);
}

// matmulQuantTrain's low-rank term for the implementations that add it as a
// second product (the portable kernels, the reference): y += alpha·a·op(b).
import { quantTrainCols } from "./quant-matrix.js";
import type { Kernels, LowRankTerm, QuantMatrix } from "./types.js";

/** y[m, cols] += t.alpha · t.a[m, t.k] · op(t.b) with `kern`'s own matmul (cols as matmulQuantTrain's y); nothing without a term. */
export function addLowRankTerm(
  kern: Pick<Kernels, "matmul">,
  y: Float32Array,
  m: number,
  w: QuantMatrix,
  transW: boolean,
  t: LowRankTerm | undefined,
): void {
  if (t && t.k > 0)
    kern.matmul(t.a, t.b, y, m, quantTrainCols(w, transW), t.k, false, t.transB, true, t.alpha);
}

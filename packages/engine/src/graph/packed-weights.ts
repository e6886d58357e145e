// A training graph's frozen fp32 weights packed ahead for the kernels' blocked
// matmul (Kernels.packB), in both orientations a step multiplies by: x·Wᵀ
// forward and dy·W for the input gradient. Without it every product copies its
// weight into panels first; on the Zen 4 VM that copying was a tenth of a
// SmolLM2-shape projection's time (docs/kernels.md). Each weight is packed the
// first time a product uses it, and the packs cost twice the weights' memory,
// so a graph packs only when they fit in its budget.
import type { Kernels } from "../kernels/types.js";
import { decodeWeightBytes } from "./frozen-weights.js";
import { machineMemoryBytes } from "./machine-memory.js";
import type { ProjectionWeight, ServingWeights } from "./weights.js";

interface Packs {
  forward: Float32Array; // op(W) = Wᵀ [in, out], for y = x·Wᵀ
  backward: Float32Array; // op(W) = W [out, in], for dx = dy·W
}

/**
 * Bytes the packs of a graph may take: SVC_PACKED_WEIGHTS_MB when set (0: never
 * pack), else a quarter of the memory the machine gives the process.
 */
export function packBudgetBytes(): number {
  const mb = process.env.SVC_PACKED_WEIGHTS_MB;
  if (mb !== undefined && mb !== "") {
    const v = Number(mb);
    if (!(v >= 0))
      throw new RangeError(`SVC_PACKED_WEIGHTS_MB must be a number of megabytes >= 0, got "${mb}"`);
    return v * 2 ** 20;
  }
  return machineMemoryBytes() / 4;
}

/**
 * Bytes a graph's packs take for frozen fp32 matrices of `weightBytes` (the
 * projections and the LM head): both orientations, or 0 over the budget. The
 * server's memory estimate counts them by this same rule.
 */
export function packedWeightBytes(weightBytes: number, budget = packBudgetBytes()): number {
  return weightBytes > 0 && 2 * weightBytes <= budget ? 2 * weightBytes : 0;
}

export class PackedWeights {
  private readonly packs = new WeakMap<Float32Array, Packs>();

  private constructor(private readonly pack: NonNullable<Kernels["packB"]>) {}

  /** Packs for these weights' fp32 projections and LM head, or null (no packB, or over budget). */
  static of(kern: Kernels, weights: ServingWeights, budget = packBudgetBytes()): PackedWeights | null {
    if (!kern.packB) return null;
    // the matrices a step multiplies by are the ones a decode step reads: the projections and the head
    return packedWeightBytes(decodeWeightBytes(weights), budget) > 0
      ? new PackedWeights(kern.packB.bind(kern))
      : null;
  }

  private packsOf(w: Float32Array, rows: number, cols: number): Packs {
    let p = this.packs.get(w);
    if (!p) {
      p = { forward: this.pack(w, cols, rows, true), backward: this.pack(w, rows, cols, false) };
      this.packs.set(w, p);
    }
    return p;
  }

  /** W [rows, cols] packed for x·Wᵀ; null for a weight in a serving format (not packed). */
  forward(w: ProjectionWeight, rows: number, cols: number): Float32Array | null {
    return w instanceof Float32Array ? this.packsOf(w, rows, cols).forward : null;
  }

  /** W [rows, cols] packed for dy·W. */
  backward(w: Float32Array, rows: number, cols: number): Float32Array {
    return this.packsOf(w, rows, cols).backward;
  }
}

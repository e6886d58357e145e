// The rotary tables of a model's ropes (one per distinct rope: Gemma's sliding
// and full layers differ), grown on demand, and their application to q or k.
import type { ModelConfig } from "../families/index.js";
import { ropeTables } from "../families/rope.js";
import type { Kernels } from "../kernels/types.js";
import type { Segment } from "./graph-rows.js";
import { tick, tock } from "./profile.js";

export class RopeTables {
  private cos: Float32Array[] = [];
  private sin: Float32Array[] = [];
  private longCos: (Float32Array | null)[] = []; // longrope's long-factor tables
  private longSin: (Float32Array | null)[] = [];
  private length = 0;

  constructor(
    private readonly config: ModelConfig,
    private readonly kern: Kernels,
  ) {}

  /** Tables covering positions < maxPos (doubling, so long contexts cost only what they use). */
  ensure(maxPos: number): void {
    if (maxPos <= this.length) return;
    const grown = Math.max(maxPos, Math.min(2 * this.length, this.config.maxPositionEmbeddings));
    this.cos = [];
    this.sin = [];
    this.longCos = [];
    this.longSin = [];
    for (const rope of this.config.ropes) {
      const tables = ropeTables(rope, grown);
      this.cos.push(tables.cos);
      this.sin.push(tables.sin);
      const long = rope.long ? ropeTables({ ...rope, invFreq: rope.long.invFreq }, grown) : null;
      this.longCos.push(long?.cos ?? null);
      this.longSin.push(long?.sin ?? null);
    }
    this.length = grown;
  }

  /** Rotates x[N, heads, headDim] in place by layer l's rope (none: unchanged); inverse for the backward pass. */
  apply(
    x: Float32Array,
    layer: number,
    heads: number,
    N: number,
    inverse: boolean,
    positions: Int32Array,
    segments: readonly Segment[],
  ): void {
    const index = this.config.layers[layer].rope;
    if (index < 0) return;
    const t = tick();
    const rope = this.config.ropes[index];
    const D = this.config.headDim;
    const cos = this.cos[index];
    const sin = this.sin[index];
    if (!rope.long) {
      this.kern.rope(x, cos, sin, positions, N, heads, D, inverse, rope.rotaryDim);
    } else {
      // longrope: each sequence rotates by the short or the long factors, by its length
      const width = heads * D;
      for (const seg of segments) {
        const length = seg.ropeLength ?? (seg.cache?.length ?? 0) + seg.rows;
        const long = length > rope.long.originalMaxPositions;
        this.kern.rope(
          x.subarray(seg.row * width, (seg.row + seg.rows) * width),
          long ? (this.longCos[index] as Float32Array) : cos,
          long ? (this.longSin[index] as Float32Array) : sin,
          positions.subarray(seg.row, seg.row + seg.rows),
          seg.rows,
          heads,
          D,
          inverse,
          rope.rotaryDim,
        );
      }
    }
    tock(inverse ? "bwd.rope" : "fwd.rope", t);
  }
}

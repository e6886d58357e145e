// LoRA inside the graph: y += scale·(x·Aᵀ)·Bᵀ for the projections an adapter
// targets, and its backward. Projections that read the same input form a group
// (q/k/v, gate/up) whose x·Aᵀ is one matmul over their stacked A factors.
// Rows may carry different adapters (decode batches many requests): each
// LoraGroup is a contiguous run of rows with one adapter.
import type { Slot } from "../families/index.js";
import type { Kernels } from "../kernels/types.js";
import { tick, tock } from "./profile.js";
import type { LoraLayers, LoraPair } from "./weights.js";

/** A LoRA branch's second product as an addend of its projection's matmul: y += scale·xa·op(b). */
export interface LowRankAddend {
  xa: Float32Array; // [N, r]
  b: Float32Array; // B [out, r] forward (used transposed); the stacked A [r, in] backward
  r: number;
  scale: number;
}

/** Rows row..row+rows-1 use this adapter (null: none). */
export interface LoraGroup {
  row: number;
  rows: number;
  lora: LoraLayers | null;
}

interface LayerLoraState {
  xa: Partial<Record<Slot, Float32Array>>; // [N,r] x·Aᵀ per adapted slot (kept for backward)
  aStack: Partial<Record<Slot, Float32Array>>; // [g*r,in] stacked A factors, keyed by the group's first slot
}

export class LoraRunner {
  private rows = 0;
  private rank = 0;
  private layers: LayerLoraState[] = [];
  private xaGroup = new Float32Array(0); // [N,3r]
  private dxaGroup = new Float32Array(0); // [N,3r]
  private dAGroup = new Float32Array(0); // [3r,maxIn]

  constructor(private readonly kern: Kernels) {}

  /** Buffers for N rows, `layers` sets of saved activations, ranks up to r and inputs up to maxIn wide. */
  ensure(N: number, layers: number, r: number, maxIn: number): void {
    if (
      N <= this.rows &&
      r <= this.rank &&
      layers <= this.layers.length &&
      this.dAGroup.length >= 3 * r * maxIn
    )
      return;
    this.rows = Math.max(N, this.rows);
    this.rank = Math.max(r, this.rank);
    this.layers = Array.from({ length: Math.max(layers, this.layers.length) }, () => ({
      xa: {},
      aStack: {},
    }));
    this.xaGroup = new Float32Array(this.rows * 3 * this.rank);
    this.dxaGroup = new Float32Array(this.rows * 3 * this.rank);
    this.dAGroup = new Float32Array(Math.max(this.dAGroup.length, 3 * this.rank * maxIn));
  }

  private xaBuffer(layer: number, slot: Slot): Float32Array {
    const state = this.layers[layer];
    let buf = state.xa[slot];
    if (!buf) {
      buf = new Float32Array(this.rows * this.rank);
      state.xa[slot] = buf;
    }
    return buf;
  }

  /** The slots of a group that the adapter targets. */
  private present(lora: LoraLayers, layer: number, slots: readonly Slot[]): number[] {
    const out: number[] = [];
    for (let i = 0; i < slots.length; i++) if (lora.layers[layer][slots[i]]) out.push(i);
    return out;
  }

  private stackedA(
    lora: LoraLayers,
    state: number,
    layer: number,
    slots: readonly Slot[],
    idx: number[],
    inDim: number,
  ) {
    if (idx.length === 1) return (lora.layers[layer][slots[idx[0]]] as LoraPair).a;
    const key = slots[idx[0]];
    const size = idx.length * lora.r * inDim;
    const acts = this.layers[state];
    let stack = acts.aStack[key];
    if (!stack || stack.length !== size) {
      stack = new Float32Array(size);
      acts.aStack[key] = stack;
    }
    for (const [j, i] of idx.entries())
      stack.set((lora.layers[layer][slots[i]] as LoraPair).a, j * lora.r * inDim);
    return stack;
  }

  /**
   * x·A_iᵀ [rows, r] for the group's adapted projections (their indices in
   * `slots`, returned), kept in activation set `state` (the layer when
   * training): one matmul over the stacked A factors.
   */
  private projectA(
    group: LoraGroup,
    lora: LoraLayers,
    x: Float32Array,
    inDim: number,
    layer: number,
    state: number,
    slots: readonly Slot[],
  ): number[] {
    const idx = this.present(lora, layer, slots);
    if (idx.length === 0) return idx;
    const t = tick();
    const { row, rows } = group;
    const r = lora.r;
    const g = idx.length;
    const gr = g * r;
    const xRows = x.subarray(row * inDim, (row + rows) * inDim);
    const a = this.stackedA(lora, state, layer, slots, idx, inDim);
    const xaGroup = g === 1 ? this.xaBuffer(state, slots[idx[0]]) : this.xaGroup;
    this.kern.matmul(xRows, a, xaGroup, rows, gr, inDim, false, true, false); // [rows, g*r]
    if (g > 1)
      for (let j = 0; j < g; j++) {
        const xa = this.xaBuffer(state, slots[idx[j]]);
        for (let n = 0; n < rows; n++) {
          const src = n * gr + j * r;
          for (let c = 0; c < r; c++) xa[n * r + c] = xaGroup[src + c];
        }
      }
    tock("fwd.lora", t);
    return idx;
  }

  /**
   * When one adapter covers all N rows (training, one request's prefill): each
   * projection's branch as an addend for its matmul (matmulLowRank), null for
   * a projection without factors. Null when rows carry different adapters or
   * none: forward() then adds the branches.
   */
  addends(
    groups: readonly LoraGroup[],
    x: Float32Array,
    inDim: number,
    layer: number,
    state: number,
    slots: readonly Slot[],
    N: number,
  ): (LowRankAddend | null)[] | null {
    const group = groups.length === 1 ? groups[0] : null;
    const lora = group?.lora;
    if (!group || !lora || group.row !== 0 || group.rows !== N) return null;
    const out: (LowRankAddend | null)[] = slots.map(() => null);
    for (const i of this.projectA(group, lora, x, inDim, layer, state, slots)) {
      const pair = lora.layers[layer][slots[i]] as LoraPair;
      out[i] = { xa: this.xaBuffer(state, slots[i]), b: pair.b, r: lora.r, scale: lora.scale };
    }
    return out;
  }

  /**
   * ys[i][rows of each group] += scale·(x·A_iᵀ)·B_iᵀ for the group's projections.
   * `state` is the activation set the x·Aᵀ values are kept in (the layer when training).
   */
  forward(
    groups: readonly LoraGroup[],
    x: Float32Array,
    inDim: number,
    layer: number,
    state: number,
    slots: readonly Slot[],
    ys: Float32Array[],
    outs: number[],
  ): void {
    for (const group of groups) {
      const lora = group.lora;
      if (!lora) continue;
      const idx = this.projectA(group, lora, x, inDim, layer, state, slots);
      const t = tick();
      const { row, rows } = group;
      for (const i of idx) {
        const pair = lora.layers[layer][slots[i]] as LoraPair;
        const y = ys[i].subarray(row * outs[i], (row + rows) * outs[i]);
        const xa = this.xaBuffer(state, slots[i]);
        this.kern.matmul(xa, pair.b, y, rows, outs[i], lora.r, false, true, true, lora.scale);
      }
      if (idx.length > 0) tock("fwd.lora", t);
    }
  }

  /**
   * Backward of forward() for one adapter over all N rows (training), given
   * dys[i] = d(ys[i]): dB_i += scale·dy_iᵀ·xa_i, dA_i += dxa_iᵀ·x with
   * dxa_i = scale·dy_i·B_i. Slots of a fused module share one A, so their dA
   * slices add up in it. Returns the branches' part of the input gradient,
   * dx += dxa·A_stacked, as an addend for the group's last dx matmul (null:
   * no adapted slot).
   */
  backward(
    x: Float32Array,
    N: number,
    inDim: number,
    lora: LoraLayers,
    grads: LoraLayers,
    layer: number,
    slots: readonly Slot[],
    dys: Float32Array[],
    outs: number[],
  ): LowRankAddend | null {
    const idx = this.present(lora, layer, slots);
    if (idx.length === 0) return null;
    const t = tick();
    const k = this.kern;
    const r = lora.r;
    const g = idx.length;
    const gr = g * r;
    const dxaGroup = this.dxaGroup; // [N, g·r]: slot j's dxa in columns j·r..
    for (let j = 0; j < g; j++) {
      const slot = slots[idx[j]];
      const pair = lora.layers[layer][slot] as LoraPair;
      const gradPair = grads.layers[layer][slot] as LoraPair;
      const xa = this.xaBuffer(layer, slot);
      // dB[out,r] += scale·dyᵀ·xa and dxa = scale·dy·B, one pass over dy
      k.lowRankBackward(
        dys[idx[j]],
        xa,
        pair.b,
        gradPair.b,
        dxaGroup.subarray(j * r),
        N,
        outs[idx[j]],
        r,
        lora.scale,
        gr,
      );
    }
    if (g === 1) {
      const gradA = (grads.layers[layer][slots[idx[0]]] as LoraPair).a;
      k.matmul(dxaGroup, x, gradA, r, inDim, N, true, false, true); // dA[r,in]
    } else {
      const dA = this.dAGroup;
      k.matmul(dxaGroup, x, dA, gr, inDim, N, true, false, false); // [g*r, in]
      for (let j = 0; j < g; j++) {
        const gradA = (grads.layers[layer][slots[idx[j]]] as LoraPair).a;
        const off = j * r * inDim;
        for (let i = 0; i < r * inDim; i++) gradA[i] += dA[off + i];
      }
    }
    tock("bwd.lora", t);
    const a =
      g === 1 ? (lora.layers[layer][slots[idx[0]]] as LoraPair).a : this.layers[layer].aStack[slots[idx[0]]];
    return { xa: dxaGroup, b: a as Float32Array, r: gr, scale: 1 };
  }
}

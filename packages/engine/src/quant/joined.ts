// Serving weights hold the projections that read one input (q/k/v; gate/up)
// as one matrix per group, each slot a row view of it, so a decode step runs
// one GEMV per group: each thread streams one run of weights instead of one
// per projection, each of which starts cold and pays the pool's hand-off
// (docs/serving-formats.md, "Speed"). The slots' views keep every other
// reader (exports, byte counts, the backward guard) as it was.
import type { Slot } from "../families/index.js";
import {
  GATE_UP,
  type JoinedGroup,
  type LayerWeights,
  type ProjectionWeight,
  QKV,
} from "../graph/weights.js";
import type { QuantMatrix } from "../kernels/types.js";

/** The groups joined, by the slots they hold, in row order. */
export const JOINED_GROUPS: Record<JoinedGroup, readonly Slot[]> = { qkv: QKV, gateUp: GATE_UP };
const GROUPS = Object.entries(JOINED_GROUPS) as [JoinedGroup, readonly Slot[]][];

/**
 * The layer with each group's slots copied into one matrix and replaced by
 * row views of it. A group stays apart when a slot is fp32 (training's
 * weights, never copied) or its slots differ in format or width.
 */
export function joinProjections(lw: LayerWeights<ProjectionWeight>): LayerWeights<ProjectionWeight> {
  const out: LayerWeights<ProjectionWeight> = { ...lw, joined: {} };
  for (const [group, slots] of GROUPS) {
    const parts = slots.map((slot) => lw[slot]);
    const whole = joinRows(parts);
    if (!whole) continue;
    out.joined![group] = whole;
    let row = 0;
    for (const [i, slot] of slots.entries()) {
      const rows = (parts[i] as QuantMatrix).rows;
      out[slot] = rowView(whole, row, rows);
      row += rows;
    }
  }
  return out;
}

/**
 * The joined matrix holding exactly `slots` (in order), or null; also null
 * when a slot no longer views it (a copy of the layer with its slots replaced).
 */
export function joinedWeight(lw: LayerWeights<ProjectionWeight>, slots: readonly Slot[]): QuantMatrix | null {
  if (!lw.joined) return null;
  for (const [group, members] of GROUPS) {
    if (members.length !== slots.length || members.some((s, i) => s !== slots[i])) continue;
    const whole = lw.joined[group];
    const views = (s: Slot) => {
      const w = lw[s];
      return !(w instanceof Float32Array) && w.data.buffer === whole?.data.buffer;
    };
    return whole && slots.every(views) ? whole : null;
  }
  return null;
}

/** Matrices of one format and width stacked by rows, or null when they cannot be. */
function joinRows(parts: ProjectionWeight[]): QuantMatrix | null {
  const first = parts[0];
  if (first instanceof Float32Array) return null;
  const quant: QuantMatrix[] = [];
  for (const p of parts) {
    if (p instanceof Float32Array || p.format !== first.format || p.cols !== first.cols) return null;
    quant.push(p);
  }
  const rows = quant.reduce((n, p) => n + p.rows, 0);
  return {
    ...first,
    rows,
    data: stack(quant.map((p) => p.data)),
    scales: first.scales ? stack(quant.map((p) => p.scales as NonNullable<QuantMatrix["scales"]>)) : null,
  } as QuantMatrix;
}

type Stackable = QuantMatrix["data"] | NonNullable<QuantMatrix["scales"]>;

function stack<T extends Stackable>(arrays: T[]): T {
  const out = new (arrays[0].constructor as new (length: number) => T)(
    arrays.reduce((n, a) => n + a.length, 0),
  );
  let at = 0;
  for (const a of arrays) {
    out.set(a as never, at);
    at += a.length;
  }
  return out;
}

/** Rows first..first+count-1 of m, as views of its arrays. */
function rowView(m: QuantMatrix, first: number, count: number): QuantMatrix {
  const per = m.data.length / m.rows;
  const scalesPer = m.scales ? m.scales.length / m.rows : 0;
  return {
    ...m,
    rows: count,
    data: m.data.subarray(first * per, (first + count) * per),
    scales: m.scales ? m.scales.subarray(first * scalesPer, (first + count) * scalesPer) : null,
  } as QuantMatrix;
}

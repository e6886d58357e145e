// Seeded fuzzing of matmul and attentionForward against the reference kernels,
// aimed at the edges of the native SGEMM's tiles (MR 12/6, NR 32/16/8, KC 384,
// NC = NR*96, GEMV up to 16 rows or columns) and at the decode GEMV over a KV
// cache (kvStride > nKv*headDim), half of the attentions with a sliding window.
// Every operand is a view at a random offset into a larger buffer whose guard
// regions hold a sentinel; the guards, the inputs and the unused stride padding
// of the cache must come back unchanged, so writes past a tile's edge are
// caught, and reads of them spoil the result.
// Case i depends only on (seed, i): a failure names both, and replays alone.

import { referenceKernels } from "../../kernels/reference.js";
import type { Kernels } from "../../kernels/types.js";
import { randomSource } from "./conformance.js";

/** Written around and between operands; finite, exact in float32, and large enough to spoil a sum. */
export const SENTINEL = -987654.25;

export interface MatmulShape {
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  accumulate: boolean;
  /** undefined: the default (1). */
  alpha: number | undefined;
}

export interface AttentionShape {
  T: number;
  S: number;
  nHeads: number;
  nKv: number;
  headDim: number;
  kvStride: number;
  withLse: boolean;
  /** A sliding window (0: none). */
  window: number;
}

type Rand = () => number;

/** An integer in [lo, hi]. */
function int(rand: Rand, lo: number, hi: number): number {
  return lo + Math.floor(((rand() + 1) / 2) * (hi - lo + 1));
}

function pick<T>(rand: Rand, xs: readonly T[]): T {
  return xs[int(rand, 0, xs.length - 1)];
}

/** A tile edge, or one either side of it. */
function nearEdge(rand: Rand, edges: readonly number[]): number {
  return Math.max(1, pick(rand, edges) + int(rand, -1, 1));
}

// Rows: MR (12 / 6, and 4 for the GEMV's row groups), GEMV_MAX_ROWS (16),
// MC_MAX (MR * 16: 192 / 96). Columns: NR (32 / 16 / 8) and the GEMV's
// 4-vector chunks, NC (NR * 96: 3072 / 1536 / 768). Depth: vector widths, KC
// (384) and the balanced split of two passes (576 -> 2 x 288), three passes (768+).
const ROW_EDGES = [4, 6, 8, 12, 16, 18, 24, 32, 36];
const BIG_ROW_EDGES = [48, 96, 192, 288];
const COL_EDGES = [4, 8, 16, 24, 32, 48, 64, 96];
const NC_EDGES = [768, 1536, 3072];
const DEPTH_EDGES = [4, 8, 16, 32, 64, 384, 576, 768];
/** Caps m*n*k, so the JS reference keeps the fuzz fast. */
const MAX_WORK = 3e6;

function dimension(rand: Rand, edges: readonly number[], bigEdges: readonly number[]): number {
  const r = rand();
  if (r < -0.98) return 0;
  if (r < -0.1) return int(rand, 1, 40);
  if (r < 0.6) return nearEdge(rand, edges);
  if (r < 0.8) return int(rand, 41, 300);
  return nearEdge(rand, bigEdges);
}

export function randomMatmulShape(rand: Rand): MatmulShape {
  let m = dimension(rand, ROW_EDGES, BIG_ROW_EDGES);
  let n = dimension(rand, COL_EDGES, [128, 256]);
  let k: number;
  const r = rand();
  if (r < -0.95) k = 0;
  else if (r < 0) k = int(rand, 1, 64);
  else if (r < 0.7) k = nearEdge(rand, DEPTH_EDGES);
  else k = int(rand, 65, 800);
  if (rand() < -0.96) {
    // Wider than one NC block of some ISA: a short, shallow product.
    n = nearEdge(rand, NC_EDGES) + int(rand, 0, 40);
    m = int(rand, 1, 40);
    k = int(rand, 1, 40);
  }
  if (m * n * k > MAX_WORK) k = Math.max(1, Math.floor(MAX_WORK / (m * n)));
  const alphas = [undefined, undefined, 1, 0.5, -1.5, 0];
  return {
    m,
    n,
    k,
    transA: rand() < 0,
    transB: rand() < 0,
    accumulate: rand() < 0,
    alpha: pick(rand, alphas),
  };
}

export function randomAttentionShape(rand: Rand): AttentionShape {
  const nKv = int(rand, 1, 4);
  const nHeads = nKv * pick(rand, [1, 1, 2, 3, 4]);
  const headDim = rand() < 0 ? int(rand, 1, 80) : nearEdge(rand, [4, 8, 16, 32, 64]);
  const S = rand() < 0.6 ? int(rand, 1, 64) : int(rand, 65, 300);
  const T = rand() < 0.2 ? 1 : rand() < 0 ? int(rand, 1, Math.min(S, 8)) : int(rand, 1, Math.min(S, 80));
  // Mostly a view into a wider cache; sometimes dense.
  const kvStride = nKv * headDim + (rand() < -0.8 ? 0 : int(rand, 1, 48));
  const withLse = rand() < 0.5;
  // Half with a sliding window: shorter than a query block, longer, or past S.
  const window = rand() < 0 ? 0 : int(rand, 1, S + 8);
  return { T, S, nHeads, nKv, headDim, kvStride, withLse, window };
}

export function describeMatmul(s: MatmulShape): string {
  const flags = [
    s.transA && "tA",
    s.transB && "tB",
    s.accumulate && "acc",
    s.alpha !== undefined && `α=${s.alpha}`,
  ];
  return [`matmul ${s.m}x${s.n}x${s.k}`, ...flags.filter(Boolean)].join(" ");
}

export function describeAttention(s: AttentionShape): string {
  return (
    `attentionForward T=${s.T} S=${s.S} heads=${s.nHeads}/${s.nKv} D=${s.headDim} kvStride=${s.kvStride}` +
    (s.withLse ? "" : " no lse") +
    (s.window ? ` window=${s.window}` : "")
  );
}

/** A view of n elements at a random offset into a buffer filled with SENTINEL. */
class Guarded {
  readonly buf: Float32Array;
  readonly view: Float32Array;
  constructor(rand: Rand, n: number) {
    // No guard on one side now and then: there the allocation's own end is the
    // edge (which AddressSanitizer watches when the addon is built with it).
    const before = rand() < -0.8 ? 0 : int(rand, 1, 17);
    const after = rand() < -0.8 ? 0 : int(rand, 1, 40);
    this.buf = new Float32Array(before + n + after).fill(SENTINEL);
    this.view = this.buf.subarray(before, before + n);
  }
  fill(rand: Rand): this {
    for (let i = 0; i < this.view.length; i++) this.view[i] = rand();
    return this;
  }
  /** The first guard element that changed, as an index relative to the view, or undefined. */
  changedGuard(): number | undefined {
    const start = this.view.byteOffset / 4 - this.buf.byteOffset / 4;
    for (let i = 0; i < this.buf.length; i++) {
      if (i >= start && i < start + this.view.length) continue;
      if (!Object.is(this.buf[i], SENTINEL)) return i - start;
    }
    return undefined;
  }
}

/** The first index where two arrays differ (bit for bit), or undefined. */
function firstDifference(a: Float32Array, b: Float32Array): number | undefined {
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return i;
  return undefined;
}

/** max |got - want| / max(1, max |want|); NaN counts as infinite. */
export function relativeError(got: Float32Array, want: Float32Array): number {
  let mag = 1;
  for (const x of want) mag = Math.max(mag, Math.abs(x));
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i] - want[i]) / mag;
    if (!(err <= worst)) worst = Number.isNaN(err) ? Number.POSITIVE_INFINITY : err;
  }
  return worst;
}

interface Operands {
  inputs: Guarded[];
  outputs: Guarded[];
  call(k: Kernels): void;
}

function matmulOperands(s: MatmulShape, rand: Rand): Operands {
  const a = new Guarded(rand, s.m * s.k).fill(rand);
  const b = new Guarded(rand, s.k * s.n).fill(rand);
  const c = new Guarded(rand, s.m * s.n).fill(rand);
  return {
    inputs: [a, b],
    outputs: [c],
    call: (k) => k.matmul(a.view, b.view, c.view, s.m, s.n, s.k, s.transA, s.transB, s.accumulate, s.alpha),
  };
}

function attentionOperands(s: AttentionShape, rand: Rand): Operands {
  const { T, S, nHeads, nKv, headDim: D, kvStride } = s;
  const q = new Guarded(rand, T * nHeads * D).fill(rand);
  // The cache: S rows of kvStride, the last one cut after its nKv*D values (the
  // shortest view the kernels accept); the padding between rows stays SENTINEL.
  const kvLength = (S - 1) * kvStride + nKv * D;
  const cache = () => {
    const g = new Guarded(rand, kvLength);
    for (let p = 0; p < S; p++) for (let i = 0; i < nKv * D; i++) g.view[p * kvStride + i] = rand() * 2;
    return g;
  };
  const k = cache();
  const v = cache();
  const out = new Guarded(rand, T * nHeads * D).fill(rand);
  const lse = s.withLse ? new Guarded(rand, nHeads * T).fill(rand) : null;
  const scale = 1 / Math.sqrt(D);
  return {
    inputs: [q, k, v],
    outputs: lse ? [out, lse] : [out],
    call: (kern) =>
      kern.attentionForward(
        q.view,
        k.view,
        v.view,
        out.view,
        lse ? lse.view : null,
        T,
        S,
        nHeads,
        nKv,
        D,
        scale,
        kvStride,
        s.window,
      ),
  };
}

export interface FuzzCase {
  readonly index: number;
  readonly name: string;
  readonly tolerance: number;
  /** Fresh operands; the same for every call with the same case. */
  operands(): Operands;
}

/** Case `index` of the fuzz with `seed`: mostly matmuls, every eighth an attention forward. */
export function fuzzCase(seed: number, index: number): FuzzCase {
  const caseSeed = (Math.imul(seed, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
  const shapeRand = randomSource(caseSeed);
  if (index % 8 === 7) {
    const s = randomAttentionShape(shapeRand);
    return {
      index,
      name: describeAttention(s),
      tolerance: 2e-5,
      operands: () => attentionOperands(s, randomSource(caseSeed ^ 0x5bd1e995)),
    };
  }
  const s = randomMatmulShape(shapeRand);
  return {
    index,
    name: describeMatmul(s),
    tolerance: 2e-5,
    operands: () => matmulOperands(s, randomSource(caseSeed ^ 0x5bd1e995)),
  };
}

/** What a call changed that it must not have: an input (guards and padding included) or an output's guards. */
function untouched(ops: Operands, pristine: Operands): string | undefined {
  for (let i = 0; i < ops.inputs.length; i++) {
    const at = firstDifference(ops.inputs[i].buf, pristine.inputs[i].buf);
    if (at !== undefined) return `input ${i} changed at element ${at} of its buffer`;
  }
  for (let o = 0; o < ops.outputs.length; o++) {
    const at = ops.outputs[o].changedGuard();
    if (at !== undefined) return `output ${o} was written outside its view, at element ${at} relative to it`;
  }
  return undefined;
}

export interface FuzzFailure {
  readonly index: number;
  readonly message: string;
}

/**
 * Runs `count` cases of the fuzz with `seed` on each implementation, computing
 * the reference once per case. Returns the failures (at most `maxFailures`
 * per implementation) and the largest error seen per implementation.
 */
export function fuzzKernels(
  impls: readonly { label: string; kernels: Kernels }[],
  options: { seed: number; count: number; maxFailures?: number },
): { failures: Map<string, FuzzFailure[]>; worst: Map<string, number> } {
  const failures = new Map(impls.map((i) => [i.label, [] as FuzzFailure[]]));
  const worst = new Map(impls.map((i) => [i.label, 0]));
  const maxFailures = options.maxFailures ?? 5;
  for (let index = 0; index < options.count; index++) {
    const c = fuzzCase(options.seed, index);
    const ref = c.operands();
    ref.call(referenceKernels);
    const pristine = c.operands();
    for (const { label, kernels } of impls) {
      const list = failures.get(label)!;
      if (list.length >= maxFailures) continue;
      const fail = (what: string) =>
        list.push({ index, message: `${label}: case ${index} of seed ${options.seed}, ${c.name}: ${what}` });
      const ops = c.operands();
      try {
        ops.call(kernels);
      } catch (err) {
        fail(`threw ${(err as Error).message}`);
        continue;
      }
      const problem = untouched(ops, pristine);
      if (problem) {
        fail(problem);
        continue;
      }
      let err = 0;
      for (let o = 0; o < ops.outputs.length; o++)
        err = Math.max(err, relativeError(ops.outputs[o].view, ref.outputs[o].view));
      worst.set(label, Math.max(worst.get(label)!, err));
      if (!(err <= c.tolerance)) fail(`error ${err} > ${c.tolerance}`);
    }
  }
  return { failures, worst };
}

// The forward pass of every supported family through the decoder layers and
// the final norm, read from the config's block description (families/types.ts).
// Every projection runs on all N rows at once so the matmuls are large:
// y[N,out] = x[N,in]·Wᵀ (+ bias) (+ scale·(x·Aᵀ)·Bᵀ). A decoder layer is two
// residual branches, each
//   x += residualScale · outNorm?(branch(inNorm?(x)))
// attention: o(attn(rope(qkNorm(q)), rope(qkNorm(k)), v)), MLP: down(act(gate)·up).

import type { Slot } from "../families/index.js";
import type { QuantMatrix } from "../kernels/types.js";
import { joinedWeight } from "../quant/joined.js";
import type { LayerActivations } from "./activations.js";
import { matmulFrozen, matmulWeight, matrixRow } from "./frozen-weights.js";
import type { Rows, Segment } from "./graph-rows.js";
import {
  activation,
  addScaled,
  type GraphState,
  layerActs,
  norm,
  qkRows,
  rope,
  sizesOf,
} from "./graph-state.js";
import type { LowRankAddend } from "./lora-apply.js";
import { tick, tock } from "./profile.js";
import { DOWN, GATE_UP, type LayerWeights, O, type ProjectionWeight, QKV } from "./weights.js";

/**
 * Runs the layers and the final norm over the rows (buffers already sized for
 * them); leaves xf [N,C] in g.s.xf for the LM head. With caches, appends each
 * layer's keys and values.
 */
export function forwardLayers(g: GraphState, rows: Rows): Float32Array {
  const { N, ids, segments } = rows;
  const cfg = g.config;
  const { C, F, Hq, Hkv, Q, K } = sizesOf(cfg);
  const w = g.weights;
  g.pass = rows;
  const s = g.s;
  const fused = cfg.residualScale === 1; // the residual add rides on the output projection's matmul

  // token embeddings (times the family's scale) → the residual stream [N,C]
  let t0 = tick();
  const x0 = g.acts[0].resid;
  const scale = cfg.embeddingScale;
  for (let n = 0; n < N; n++) {
    const row = x0.subarray(n * C, n * C + C);
    matrixRow(w.embed, ids[n], C, row);
    if (scale !== 1) for (let c = 0; c < C; c++) row[c] *= scale;
  }
  tock("fwd.embed", t0);

  for (let l = 0; l < cfg.numHiddenLayers; l++) {
    const a = layerActs(g, l);
    const lw = w.layers[l];
    const state = g.inferenceOnly ? 0 : l;
    const next = l + 1 < cfg.numHiddenLayers ? layerActs(g, l + 1).resid : s.final;

    // ---- attention branch
    let h = a.resid;
    if (lw.attnNorm) {
      norm(g, a.resid, lw.attnNorm, s.ln, a.rstd1, N, C);
      h = s.ln;
    }
    projectGroup(g, rows, h, lw, QKV, [a.q, a.k, a.v], [Q, K, K], C, l, state);
    if (lw.qNorm && lw.kNorm) {
      a.qPre.set(a.q.subarray(0, N * Q));
      a.kPre.set(a.k.subarray(0, N * K));
      norm(g, a.qPre, lw.qNorm, a.q, a.rstdQ, ...qkRows(cfg, N, Hq));
      norm(g, a.kPre, lw.kNorm, a.k, a.rstdK, ...qkRows(cfg, N, Hkv));
    }
    rope(g, a.q, l, Hq, N, false);
    rope(g, a.k, l, Hkv, N, false);
    attend(g, a, l, N, segments);

    // o_proj, then its norm and the residual add
    const xmid = a.xmid;
    const outNormA = lw.attnOutNorm;
    if (!outNormA && fused) {
      xmid.set(a.resid.subarray(0, N * C));
      projectGroup(g, rows, a.att, lw, O, [xmid], [C], Q, l, state, true);
    } else {
      projectGroup(g, rows, a.att, lw, O, [a.attnOut], [C], Q, l, state);
      residualAdd(g, a.resid, a.attnOut, outNormA, a.rstd3, xmid, N);
    }

    // ---- MLP branch
    let h2 = xmid;
    if (lw.mlpNorm) {
      norm(g, xmid, lw.mlpNorm, s.ln, a.rstd2, N, C);
      h2 = s.ln;
    }
    projectGroup(g, rows, h2, lw, GATE_UP, [a.gate, a.up], [F, F], C, l, state);
    t0 = tick();
    activation(g, a.gate, a.up, s.act, N * F);
    tock("fwd.act", t0);
    const outNormM = lw.mlpOutNorm;
    if (!outNormM && fused) {
      next.set(xmid.subarray(0, N * C));
      projectGroup(g, rows, s.act, lw, DOWN, [next], [C], F, l, state, true);
    } else {
      projectGroup(g, rows, s.act, lw, DOWN, [a.mlpOut], [C], F, l, state);
      residualAdd(g, xmid, a.mlpOut, outNormM, a.rstd4, next, N);
    }
  }
  norm(g, s.final, w.finalNorm, s.xf, s.rstdf, N, C);
  return s.xf;
}

/**
 * The projections that read one input (q/k/v, o, gate/up, down) and their LoRA
 * branches: ys[i] (+)= x·W_iᵀ (+ bias) + scale·(x·A_iᵀ)·B_iᵀ. With one adapter
 * over all rows and fp32 weights, or a training run's bf16 / int8 base, each
 * branch's second product rides on its projection's matmul (one pass over y);
 * otherwise the branches are added after.
 */
function projectGroup(
  g: GraphState,
  rows: Rows,
  x: Float32Array,
  lw: LayerWeights<ProjectionWeight>,
  slots: readonly Slot[],
  ys: Float32Array[],
  outs: number[],
  inDim: number,
  l: number,
  state: number,
  accumulate = false,
): void {
  const joined = accumulate || rows.N > JOINED_MAX_ROWS ? null : joinedWeight(lw, slots);
  // fp32 weights take the branch into matmulLowRank; a training run's bf16 / int8 base into
  // matmulQuantTrain's low-rank term. Serving formats at inference add the branches after.
  const fused = !joined && (!g.inferenceOnly || slots.every((slot) => lw[slot] instanceof Float32Array));
  const addends = fused ? g.lora.addends(rows.lora, x, inDim, l, state, slots, rows.N) : null;
  if (joined) projectJoined(g, x, lw, joined, slots, ys, outs, rows.N);
  else
    for (let i = 0; i < slots.length; i++)
      project(g, x, lw, slots[i], ys[i], rows.N, outs[i], inDim, accumulate, addends?.[i] ?? null);
  if (!addends) g.lora.forward(rows.lora, x, inDim, l, state, slots, ys, outs);
}

/**
 * The most rows a joined group's one product takes. Decode's few rows stream
 * the weights, where each product's start and hand-off cost; at prefill's many
 * rows the products are compute-bound and splitting the joined output would
 * only add a copy.
 */
const JOINED_MAX_ROWS = 32;

/** ys[i] = x·W_iᵀ (+ bias) for slots held as one serving-format matrix: one product, its columns split. */
function projectJoined(
  g: GraphState,
  x: Float32Array,
  lw: LayerWeights<ProjectionWeight>,
  joined: QuantMatrix,
  slots: readonly Slot[],
  ys: Float32Array[],
  outs: number[],
  N: number,
): void {
  const t = tick();
  const total = joined.rows;
  if (g.joinedOut.length < N * total) g.joinedOut = new Float32Array(N * total);
  const y = g.joinedOut;
  g.kern.matmulQuant(x, joined, y, N, false, 1);
  for (let n = 0, at = 0; n < N; n++) {
    for (let i = 0; i < slots.length; i++) {
      ys[i].set(y.subarray(at, at + outs[i]), n * outs[i]);
      at += outs[i];
    }
  }
  for (let i = 0; i < slots.length; i++) {
    const bias = lw.bias[slots[i]];
    if (bias) g.kern.addBias(ys[i], bias, N, outs[i], 1);
  }
  tock(`fwd.matmul.${slots.join("")}`, t);
}

/** y[N,out] (+)= x[N,in]·Wᵀ (+ bias) (+ the LoRA branch's addend): a frozen base projection. */
function project(
  g: GraphState,
  x: Float32Array,
  lw: LayerWeights<ProjectionWeight>,
  slot: Slot,
  y: Float32Array,
  N: number,
  out: number,
  inDim: number,
  accumulate: boolean,
  addend: LowRankAddend | null,
): void {
  const t = tick();
  const w = lw[slot];
  const packed = g.packed?.forward(w, out, inDim) ?? null;
  // at inference an addend exists only for fp32 weights (projectGroup)
  if (g.inferenceOnly && !addend) matmulWeight(g.kern, x, w, y, N, out, inDim, accumulate, 1, packed);
  else matmulFrozen(g.kern, x, w, y, N, out, inDim, false, accumulate, packed, addend, g.bf16); // training: bf16 dot products
  const bias = lw.bias[slot];
  if (bias) g.kern.addBias(y, bias, N, out, 1);
  tock(`fwd.matmul.${slot}`, t);
}

/** out = resid + residualScale · outNorm?(branch); branch [N,C] keeps its pre-norm value for backward. */
function residualAdd(
  g: GraphState,
  resid: Float32Array,
  branch: Float32Array,
  outNorm: Float32Array | null,
  rstd: Float32Array,
  out: Float32Array,
  N: number,
): void {
  const C = g.config.hiddenSize;
  let y = branch;
  if (outNorm) {
    norm(g, branch, outNorm, g.s.dtmp, rstd, N, C);
    y = g.s.dtmp;
  }
  out.set(resid.subarray(0, N * C));
  addScaled(g, out, y, N * C, g.config.residualScale);
}

/** Causal attention of each segment's queries over its keys (and its cache's). */
function attend(
  g: GraphState,
  a: LayerActivations,
  l: number,
  N: number,
  segments: readonly Segment[],
): void {
  const t0 = tick();
  const { Hq, Hkv, D, Q, K } = sizesOf(g.config);
  const k = g.kern;
  const scale = g.config.attentionScale;
  const window = g.config.layers[l].window;
  let covered = 0;
  for (const seg of segments) {
    const { row, rows, cache } = seg;
    const q = a.q.subarray(row * Q, (row + rows) * Q);
    const out = a.att.subarray(row * Q, (row + rows) * Q);
    if (row > covered) a.att.fill(0, covered * Q, row * Q); // padding rows attend to nothing
    covered = row + rows;
    if (cache) {
      const past = cache.length;
      cache.k[l].set(a.k.subarray(row * K, (row + rows) * K), past * K);
      cache.v[l].set(a.v.subarray(row * K, (row + rows) * K), past * K);
      k.attentionForward(
        q,
        cache.k[l],
        cache.v[l],
        out,
        null,
        rows,
        past + rows,
        Hq,
        Hkv,
        D,
        scale,
        K,
        window,
      );
    } else {
      const lse = g.inferenceOnly ? null : a.lse.subarray(row * Hq, (row + rows) * Hq);
      const kk = a.k.subarray(row * K, (row + rows) * K);
      const vv = a.v.subarray(row * K, (row + rows) * K);
      k.attentionForward(q, kk, vv, out, lse, rows, rows, Hq, Hkv, D, scale, K, window, g.bf16);
    }
  }
  if (N > covered) a.att.fill(0, covered * Q, N * Q);
  tock("fwd.attention", t0);
}

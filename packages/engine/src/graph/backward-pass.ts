// The backward pass through the decoder layers after a training forward
// (forward-pass.ts) and the LM head's backward (lm-head.ts), which leaves
// d(xf) in the scratch's dtmp. Base weights are frozen: only dx propagates
// through W, and gradients accumulate into the LoRA factors. Norm inputs and
// the MLP's activation are recomputed rather than kept.

import type { Slot } from "../families/index.js";
import type { LayerActivations } from "./activations.js";
import { matmulFrozen } from "./frozen-weights.js";
import type { Batch } from "./graph-rows.js";
import { activation, addScaled, type GraphState, qkRows, rope, sizesOf } from "./graph-state.js";
import type { LowRankAddend } from "./lora-apply.js";
import { tick, tock } from "./profile.js";
import { DOWN, GATE_UP, type LoraLayers, O, type ProjectionWeight, QKV } from "./weights.js";

/** Accumulates the LoRA gradients of the last forward pass (over `batch`) into grads. */
export function backwardLayers(g: GraphState, batch: Batch, lora: LoraLayers, grads: LoraLayers): void {
  const { B, T } = batch;
  const N = B * T;
  const cfg = g.config;
  const { C, F, Q, K } = sizesOf(cfg);
  const k = g.kern;
  const w = g.weights;
  const s = g.s;
  const { dres, dxmid, dtmp, dln } = s;

  // final norm: d(final) from d(xf) (held in dtmp by the LM head)
  let t0 = tick();
  k.rmsnormBackward(dtmp, s.final, w.finalNorm, s.rstdf, dres, null, N, C);
  tock("bwd.rmsnorm", t0);

  for (let l = cfg.numHiddenLayers - 1; l >= 0; l--) {
    const a = g.acts[l];
    const lw = w.layers[l];
    const needInputGrad = l > 0; // the embeddings are frozen: no gradient below layer 0's LoRA

    // ---- MLP branch. dres = d(layer output).
    const dy = branchGrad(g, dres, a.mlpOut, lw.mlpOutNorm, a.rstd4, N); // d(down output)
    t0 = tick();
    activation(g, a.gate, a.up, s.act, N * F); // recompute the down projection's input
    tock("bwd.recompute", t0);
    const dDown = g.lora.backward(s.act, N, F, lora, grads, l, DOWN, [dy], [C]);
    projectBack(g, dy, lw.down, s.dact, N, C, F, "down", false, dDown);
    t0 = tick();
    if (cfg.block.activation === "silu") k.swigluBackward(s.dact, a.gate, a.up, s.dgate, s.dup, N * F);
    else k.gegluBackward(s.dact, a.gate, a.up, s.dgate, s.dup, N * F);
    tock("bwd.act", t0);
    const h2 = branchInput(g, a.xmid, lw.mlpNorm, N); // the MLP's input
    const dGateUp = g.lora.backward(h2, N, C, lora, grads, l, GATE_UP, [s.dgate, s.dup], [F, F]);
    projectBack(g, s.dgate, lw.gate, dln, N, F, C, "gate", false, null);
    projectBack(g, s.dup, lw.up, dln, N, F, C, "up", true, dGateUp);
    inputGrad(g, dres, dln, a.xmid, lw.mlpNorm, a.rstd2, dxmid, N);

    // ---- attention branch. dxmid = d(residual after attention).
    const dyA = branchGrad(g, dxmid, a.attnOut, lw.attnOutNorm, a.rstd3, N); // d(o output)
    const dO = g.lora.backward(a.att, N, Q, lora, grads, l, O, [dyA], [C]);
    projectBack(g, dyA, lw.o, s.datt, N, C, Q, "o", false, dO);
    attentionBackward(g, a, l, batch);
    let dq = s.dq;
    let dk = s.dk;
    if (lw.qNorm && lw.kNorm) {
      t0 = tick();
      const [qr, qd] = qkRows(cfg, N, cfg.numAttentionHeads);
      const [kr, kd] = qkRows(cfg, N, cfg.numKeyValueHeads);
      k.rmsnormBackward(s.dq, a.qPre, lw.qNorm, a.rstdQ, s.dqPre, null, qr, qd);
      k.rmsnormBackward(s.dk, a.kPre, lw.kNorm, a.rstdK, s.dkPre, null, kr, kd);
      tock("bwd.rmsnorm", t0);
      dq = s.dqPre;
      dk = s.dkPre;
    }
    const h = branchInput(g, a.resid, lw.attnNorm, N); // the attention's input
    const dQkv = g.lora.backward(h, N, C, lora, grads, l, QKV, [dq, dk, s.dv], [Q, K, K]);
    if (!needInputGrad) break;
    projectBack(g, dq, lw.q, dln, N, Q, C, "q", false, null);
    projectBack(g, dk, lw.k, dln, N, K, C, "k", true, null);
    projectBack(g, s.dv, lw.v, dln, N, K, C, "v", true, dQkv);
    inputGrad(g, dxmid, dln, a.resid, lw.attnNorm, a.rstd1, dres, N);
  }
}

/**
 * A branch's input recomputed from the residual stream x [N, C]: x through the
 * branch's pre-norm into s.ln, or x itself where the block has no such norm.
 */
function branchInput(g: GraphState, x: Float32Array, norm: Float32Array | null, N: number): Float32Array {
  if (!norm) return x;
  const s = g.s;
  const t0 = tick();
  g.kern.rmsnormForward(x, norm, s.ln, s.rstdTmp, N, g.config.hiddenSize, g.config.rmsNormEps);
  tock("bwd.recompute", t0);
  return s.ln;
}

/** dq, dk, dv (after RoPE's inverse) from d(attention output) in s.datt, sequence by sequence. */
function attentionBackward(g: GraphState, a: LayerActivations, l: number, batch: Batch): void {
  const { B, T, lengths } = batch;
  const { Hq, Hkv, D, Q, K } = sizesOf(g.config);
  const s = g.s;
  const t0 = tick();
  const window = g.config.layers[l].window;
  for (let b = 0; b < B; b++) {
    const len = lengths[b];
    const rowQ = b * T * Q;
    const rowK = b * T * K;
    g.kern.attentionBackward(
      s.datt.subarray(rowQ, rowQ + len * Q),
      a.q.subarray(rowQ, rowQ + len * Q),
      a.k.subarray(rowK, rowK + len * K),
      a.v.subarray(rowK, rowK + len * K),
      a.att.subarray(rowQ, rowQ + len * Q),
      a.lse.subarray(b * T * Hq, b * T * Hq + len * Hq),
      s.dq.subarray(rowQ, rowQ + len * Q),
      s.dk.subarray(rowK, rowK + len * K),
      s.dv.subarray(rowK, rowK + len * K),
      len,
      Hq,
      Hkv,
      D,
      g.config.attentionScale,
      window,
      g.bf16,
    );
    if (len < T) {
      s.dq.fill(0, rowQ + len * Q, rowQ + T * Q);
      s.dk.fill(0, rowK + len * K, rowK + T * K);
      s.dv.fill(0, rowK + len * K, rowK + T * K);
    }
  }
  tock("bwd.attention", t0);
  rope(g, s.dq, l, Hq, B * T, true);
  rope(g, s.dk, l, Hkv, B * T, true);
}

/**
 * dx[N,in] (+)= dy[N,out]·W (+ the LoRA branches' dxa·A): the input gradient of
 * a frozen projection (W gets none), in one pass over dx.
 */
function projectBack(
  g: GraphState,
  dy: Float32Array,
  w: ProjectionWeight,
  dx: Float32Array,
  N: number,
  out: number,
  inDim: number,
  slot: Slot,
  accumulate: boolean,
  addend: LowRankAddend | null,
): void {
  const t = tick();
  // fp32 W packed ahead where it is; a bf16 / int8 base (train-precision.ts) by the kernels' frozen-weight product
  const packed = w instanceof Float32Array ? (g.packed?.backward(w, out, inDim) ?? null) : null;
  matmulFrozen(g.kern, dy, w, dx, N, out, inDim, true, accumulate, packed, addend, g.bf16);
  tock(`bwd.matmul.${slot}`, t);
}

/** d(branch output before its out-norm) from d(residual stream): residualScale, then the out-norm's backward. */
function branchGrad(
  g: GraphState,
  dOut: Float32Array,
  pre: Float32Array,
  outNorm: Float32Array | null,
  rstd: Float32Array,
  N: number,
): Float32Array {
  const C = g.config.hiddenSize;
  const m = g.config.residualScale;
  let dy = dOut;
  if (m !== 1) {
    const scaled = g.s.dbranch;
    for (let i = 0; i < N * C; i++) scaled[i] = m * dOut[i];
    dy = scaled;
  }
  if (!outNorm) return dy;
  const t0 = tick();
  g.kern.rmsnormBackward(dy, pre, outNorm, rstd, g.s.dtmp, null, N, C);
  tock("bwd.rmsnorm", t0);
  return g.s.dtmp;
}

/** d(residual input) = d(residual output) + d(branch input) through the in-norm, if any. */
function inputGrad(
  g: GraphState,
  dOut: Float32Array,
  dh: Float32Array,
  x: Float32Array,
  inNorm: Float32Array | null,
  rstd: Float32Array,
  dx: Float32Array,
  N: number,
): void {
  const C = g.config.hiddenSize;
  const t0 = tick();
  if (inNorm) {
    // the norm's input gradient straight into dx, then the residual's added
    // (a + b is b + a exactly): no copy of dOut first
    g.kern.rmsnormBackward(dh, x, inNorm, rstd, dx, null, N, C);
    addScaled(g, dx, dOut, N * C, 1);
  } else {
    dx.set(dOut.subarray(0, N * C));
    addScaled(g, dx, dh, N * C, 1);
  }
  tock("bwd.rmsnorm", t0);
}

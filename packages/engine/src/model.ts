// The forward and backward pass of every supported family, top to bottom: one
// definition for LoRA training, logits and decode, read from the config's
// block description (families/types.ts).
//
// Notation: N rows (B sequences of T positions when training, right-padded;
// the new tokens of many sequences when decoding), C = hidden, F = ffn,
// V = vocab, Hq / Hkv heads of D = headDim, Q = Hq*D, K = Hkv*D, r = LoRA
// rank. Every projection runs on all N rows at once so the matmuls are large:
// y[N,out] = x[N,in]·Wᵀ (+ bias) (+ scale·(x·Aᵀ)·Bᵀ).
//
// A decoder layer is two residual branches, each
//   x += residualScale · outNorm?(branch(inNorm?(x)))
// attention: o(attn(rope(qkNorm(q)), rope(qkNorm(k)), v)), MLP: down(act(gate)·up).
//
// Base weights are frozen: the backward pass only propagates dx through W and
// accumulates gradients into the LoRA factors. The LM head and the loss are
// fused (lm-head.ts); rotary tables live in rope-tables.ts, LoRA in
// lora-apply.ts, activations in activations.ts.
import { type LayerActivations, layerActivations, type Scratch, scratch } from "./activations.js";
import type { ModelConfig, Slot } from "./families/index.js";
import type { Batch, Rows, Segment } from "./graph-rows.js";
import { getKernels } from "./kernels/index.js";
import type { Kernels } from "./kernels/types.js";
import { LmHead } from "./lm-head.js";
import { LoraRunner } from "./lora-apply.js";
import { tick, tock } from "./profile.js";
import { fp32Weight, matmulWeight, matrixRow } from "./quant/serving.js";
import { RopeTables } from "./rope-tables.js";
import type { LayerWeights, LoraLayers, ProjectionWeight, ServingWeights } from "./weights.js";

export { type Batch, createKvCache, type KvCache, type Rows, type Segment } from "./graph-rows.js";
export { profile } from "./profile.js";

export interface GraphOptions {
  /** Compute LM-head logits only for rows with a target (default true). */
  skipUnlabeledRows?: boolean;
  /** Forward only (logits, eval, decode): one layer's activations are reused by every layer. */
  inferenceOnly?: boolean;
}

// Projections grouped by the input they read (their LoRA x·Aᵀ is one matmul per group).
const QKV: readonly Slot[] = ["q", "k", "v"];
const O: readonly Slot[] = ["o"];
const GATE_UP: readonly Slot[] = ["gate", "up"];
const DOWN: readonly Slot[] = ["down"];

/** The notation's sizes for a config: C, F, V, Hq, Hkv, D, and Q = Hq*D, K = Hkv*D. */
export function sizesOf(config: ModelConfig) {
  const {
    hiddenSize: C,
    intermediateSize: F,
    vocabSize: V,
    numAttentionHeads: Hq,
    numKeyValueHeads: Hkv,
    headDim: D,
  } = config;
  return { C, F, V, Hq, Hkv, D, Q: Hq * D, K: Hkv * D };
}

export class ModelGraph {
  readonly config: ModelConfig;
  /** fp32 (training, logits) or a serving format (decode: quant/serving.ts); the backward pass needs fp32. */
  readonly weights: ServingWeights;
  private readonly kern: Kernels;
  private readonly skipUnlabeledRows: boolean;
  private readonly inferenceOnly: boolean;
  private readonly lora: LoraRunner;

  private rows = 0;
  private acts: LayerActivations[] = [];
  private s!: Scratch;
  private readonly ropes: RopeTables;
  private readonly head: LmHead;
  private pass: Rows | null = null;
  private batch: Batch | null = null;

  constructor(config: ModelConfig, weights: ServingWeights, options: GraphOptions = {}) {
    this.config = config;
    this.weights = weights;
    this.kern = getKernels();
    this.skipUnlabeledRows = options.skipUnlabeledRows ?? true;
    this.inferenceOnly = options.inferenceOnly ?? false;
    this.lora = new LoraRunner(this.kern);
    this.ropes = new RopeTables(config, this.kern);
    this.head = new LmHead(config, weights.lmHead, this.kern, !this.inferenceOnly);
  }

  // ------------------------------------------------------------------ buffers

  private ensureCapacity(N: number, maxPos: number, r: number): void {
    const cfg = this.config;
    const { C, F, Q } = sizesOf(cfg);
    this.ropes.ensure(maxPos);
    if (N > this.rows) {
      const grown = this.inferenceOnly ? Math.max(N, 2 * this.rows) : N;
      this.rows = grown;
      const sets = this.inferenceOnly ? 1 : cfg.numHiddenLayers;
      this.acts = Array.from({ length: sets }, () => layerActivations(cfg, grown));
      this.s = scratch(cfg, grown, !this.inferenceOnly);
      this.head.ensure(grown);
    }
    this.lora.ensure(this.rows, this.acts.length, r, Math.max(C, F, Q));
  }

  /** Layer l's activations (the one shared set when inference-only). */
  private layerActs(l: number): LayerActivations {
    return this.acts[this.inferenceOnly ? 0 : l];
  }

  // ------------------------------------------------------------------ pieces

  /** y[N,out] (+)= alpha·x[N,in]·Wᵀ (+ alpha·bias): a frozen base projection. */
  private project(
    x: Float32Array,
    lw: LayerWeights<ProjectionWeight>,
    slot: Slot,
    y: Float32Array,
    N: number,
    out: number,
    inDim: number,
    accumulate = false,
    alpha = 1,
  ): void {
    const t = tick();
    matmulWeight(this.kern, x, lw[slot], y, N, out, inDim, accumulate, alpha);
    const bias = lw.bias[slot];
    if (bias) this.kern.addBias(y, bias, N, out, alpha);
    tock(`fwd.matmul.${slot}`, t);
  }

  /** dx[N,in] (+)= dy[N,out]·W: the input gradient of a frozen projection (W gets none). */
  private projectBack(
    dy: Float32Array,
    w: ProjectionWeight,
    dx: Float32Array,
    N: number,
    out: number,
    inDim: number,
    slot: Slot,
    accumulate: boolean,
  ): void {
    const t = tick();
    this.kern.matmul(dy, fp32Weight(w, "backward"), dx, N, inDim, out, false, false, accumulate);
    tock(`bwd.matmul.${slot}`, t);
  }

  private norm(
    x: Float32Array,
    w: Float32Array,
    y: Float32Array,
    rstd: Float32Array,
    rows: number,
    dim: number,
  ): void {
    const t = tick();
    this.kern.rmsnormForward(x, w, y, rstd, rows, dim, this.config.rmsNormEps);
    tock("fwd.rmsnorm", t);
  }

  /** q/k norm rows and width: one row per head, or the whole projection. */
  private qkRows(N: number, heads: number): [number, number] {
    const D = this.config.headDim;
    return this.config.block.qkNorm === "head" ? [N * heads, D] : [N, heads * D];
  }

  private activation(gate: Float32Array, up: Float32Array, out: Float32Array, n: number): void {
    if (this.config.block.activation === "silu") this.kern.swigluForward(gate, up, out, n);
    else this.kern.gegluForward(gate, up, out, n);
  }

  private rope(x: Float32Array, layer: number, heads: number, N: number, inverse: boolean): void {
    const pass = this.pass as Rows;
    this.ropes.apply(x, layer, heads, N, inverse, pass.positions, pass.segments);
  }

  // ------------------------------------------------------------------ forward

  /**
   * Runs the layers and the final norm over the rows; leaves xf [N,C] ready
   * for the LM head. With caches, appends each layer's keys and values.
   */
  run(rows: Rows): Float32Array {
    const { N, ids, positions, segments } = rows;
    const cfg = this.config;
    const { C, F, Hq, Hkv, Q, K } = sizesOf(cfg);
    const w = this.weights;
    let maxPos = 0;
    for (let n = 0; n < N; n++) maxPos = Math.max(maxPos, positions[n] + 1);
    let rank = 0;
    for (const group of rows.lora) rank = Math.max(rank, group.lora?.r ?? 0);
    this.ensureCapacity(N, maxPos, rank);
    this.pass = rows;
    const s = this.s;
    const fused = cfg.residualScale === 1; // the residual add rides on the output projection's matmul

    // token embeddings (times the family's scale) → the residual stream [N,C]
    let t0 = tick();
    const x0 = this.acts[0].resid;
    const scale = cfg.embeddingScale;
    for (let n = 0; n < N; n++) {
      const row = x0.subarray(n * C, n * C + C);
      matrixRow(w.embed, ids[n], C, row);
      if (scale !== 1) for (let c = 0; c < C; c++) row[c] *= scale;
    }
    tock("fwd.embed", t0);

    for (let l = 0; l < cfg.numHiddenLayers; l++) {
      const a = this.layerActs(l);
      const lw = w.layers[l];
      const state = this.inferenceOnly ? 0 : l;
      const next = l + 1 < cfg.numHiddenLayers ? this.layerActs(l + 1).resid : s.final;

      // ---- attention branch
      let h = a.resid;
      if (lw.attnNorm) {
        this.norm(a.resid, lw.attnNorm, s.ln, a.rstd1, N, C);
        h = s.ln;
      }
      this.project(h, lw, "q", a.q, N, Q, C);
      this.project(h, lw, "k", a.k, N, K, C);
      this.project(h, lw, "v", a.v, N, K, C);
      this.lora.forward(rows.lora, h, C, l, state, QKV, [a.q, a.k, a.v], [Q, K, K]);
      if (lw.qNorm && lw.kNorm) {
        a.qPre.set(a.q.subarray(0, N * Q));
        a.kPre.set(a.k.subarray(0, N * K));
        this.norm(a.qPre, lw.qNorm, a.q, a.rstdQ, ...this.qkRows(N, Hq));
        this.norm(a.kPre, lw.kNorm, a.k, a.rstdK, ...this.qkRows(N, Hkv));
      }
      this.rope(a.q, l, Hq, N, false);
      this.rope(a.k, l, Hkv, N, false);
      this.attend(a, l, segments);

      // o_proj, then its norm and the residual add
      const xmid = a.xmid;
      const outNormA = lw.attnOutNorm;
      if (!outNormA && fused) {
        xmid.set(a.resid.subarray(0, N * C));
        this.project(a.att, lw, "o", xmid, N, C, Q, true);
        this.lora.forward(rows.lora, a.att, Q, l, state, O, [xmid], [C]);
      } else {
        this.project(a.att, lw, "o", a.attnOut, N, C, Q);
        this.lora.forward(rows.lora, a.att, Q, l, state, O, [a.attnOut], [C]);
        this.residualAdd(a.resid, a.attnOut, outNormA, a.rstd3, xmid, N);
      }

      // ---- MLP branch
      let h2 = xmid;
      if (lw.mlpNorm) {
        this.norm(xmid, lw.mlpNorm, s.ln, a.rstd2, N, C);
        h2 = s.ln;
      }
      this.project(h2, lw, "gate", a.gate, N, F, C);
      this.project(h2, lw, "up", a.up, N, F, C);
      this.lora.forward(rows.lora, h2, C, l, state, GATE_UP, [a.gate, a.up], [F, F]);
      t0 = tick();
      this.activation(a.gate, a.up, s.act, N * F);
      tock("fwd.act", t0);
      const outNormM = lw.mlpOutNorm;
      if (!outNormM && fused) {
        next.set(xmid.subarray(0, N * C));
        this.project(s.act, lw, "down", next, N, C, F, true);
        this.lora.forward(rows.lora, s.act, F, l, state, DOWN, [next], [C]);
      } else {
        this.project(s.act, lw, "down", a.mlpOut, N, C, F);
        this.lora.forward(rows.lora, s.act, F, l, state, DOWN, [a.mlpOut], [C]);
        this.residualAdd(xmid, a.mlpOut, outNormM, a.rstd4, next, N);
      }
    }
    this.norm(s.final, w.finalNorm, s.xf, s.rstdf, N, C);
    return s.xf;
  }

  /** out = resid + residualScale · outNorm?(branch); branch [N,C] keeps its pre-norm value for backward. */
  private residualAdd(
    resid: Float32Array,
    branch: Float32Array,
    outNorm: Float32Array | null,
    rstd: Float32Array,
    out: Float32Array,
    N: number,
  ): void {
    const C = this.config.hiddenSize;
    let y = branch;
    if (outNorm) {
      this.norm(branch, outNorm, this.s.dtmp, rstd, N, C);
      y = this.s.dtmp;
    }
    const m = this.config.residualScale;
    for (let i = 0; i < N * C; i++) out[i] = resid[i] + m * y[i];
  }

  /** Causal attention of each segment's queries over its keys (and its cache's). */
  private attend(a: LayerActivations, l: number, segments: readonly Segment[]): void {
    const t0 = tick();
    const { Hq, Hkv, D, Q, K } = sizesOf(this.config);
    const k = this.kern;
    const scale = this.config.attentionScale;
    const window = this.config.layers[l].window;
    const N = this.pass?.N ?? 0;
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
        const lse = this.inferenceOnly ? null : a.lse.subarray(row * Hq, (row + rows) * Hq);
        const kk = a.k.subarray(row * K, (row + rows) * K);
        const vv = a.v.subarray(row * K, (row + rows) * K);
        k.attentionForward(q, kk, vv, out, lse, rows, rows, Hq, Hkv, D, scale, K, window);
      }
    }
    if (N > covered) a.att.fill(0, covered * Q, N * Q);
    tock("fwd.attention", t0);
  }

  /**
   * Forward pass of a training batch with the loss. Returns the summed loss
   * over rows with a target and their count. With gradScale set, the LM
   * head's backward runs here too (dLogits = gradScale·(softmax − onehot)),
   * leaving d(xf) for backward(). Without it (eval), `correct` counts the rows
   * with a target whose argmax logit is the target (lm-head.ts).
   */
  forward(
    batch: Batch,
    lora: LoraLayers | null,
    gradScale: number | null = null,
  ): { lossSum: number; count: number; correct: number | null } {
    if (gradScale !== null && this.inferenceOnly)
      throw new Error("an inference-only graph has no backward pass");
    const { B, T, inputIds, targets, lengths } = batch;
    const N = B * T;
    const positions = new Int32Array(N);
    const segments: Segment[] = [];
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < T; t++) positions[b * T + t] = t;
      if (lengths[b] > 0) segments.push({ row: b * T, rows: lengths[b], cache: null, ropeLength: T });
    }
    this.run({ N, ids: inputIds, positions, segments, lora: [{ row: 0, rows: N, lora }] });
    this.batch = batch;
    // d(xf) lands in dtmp for backward()
    const dxf = gradScale !== null ? this.s.dtmp : null;
    return this.head.loss(this.s.xf, targets, N, this.skipUnlabeledRows, dxf, gradScale ?? 0);
  }

  // ------------------------------------------------------------------ backward

  /** Backward pass after forward(batch, lora, gradScale): accumulates LoRA gradients into grads. */
  backward(lora: LoraLayers, grads: LoraLayers): void {
    const batch = this.batch;
    const pass = this.pass;
    if (!batch || !pass || this.inferenceOnly)
      throw new Error("backward() needs a forward() with gradScale first");
    const { B, T, lengths } = batch;
    const N = B * T;
    const cfg = this.config;
    const { C, F, Hq, Hkv, D, Q, K } = sizesOf(cfg);
    const k = this.kern;
    const w = this.weights;
    const s = this.s;
    const { dres, dxmid, dtmp, dln, ln } = s;
    const eps = cfg.rmsNormEps;
    const scale = cfg.attentionScale;

    // final norm: d(final) from d(xf) (held in dtmp by forward)
    let t0 = tick();
    k.rmsnormBackward(dtmp, s.final, w.finalNorm, s.rstdf, dres, null, N, C);
    tock("bwd.rmsnorm", t0);

    for (let l = cfg.numHiddenLayers - 1; l >= 0; l--) {
      const a = this.acts[l];
      const lw = w.layers[l];
      const needInputGrad = l > 0; // the embeddings are frozen: no gradient below layer 0's LoRA

      // ---- MLP branch. dres = d(layer output).
      const dy = this.branchGrad(dres, a.mlpOut, lw.mlpOutNorm, a.rstd4, N); // d(down output)
      t0 = tick();
      this.activation(a.gate, a.up, s.act, N * F); // recompute the down projection's input
      tock("bwd.recompute", t0);
      this.projectBack(dy, lw.down, s.dact, N, C, F, "down", false);
      this.lora.backward(s.act, N, F, lora, grads, l, DOWN, [dy], [C], s.dact);
      t0 = tick();
      if (cfg.block.activation === "silu") k.swigluBackward(s.dact, a.gate, a.up, s.dgate, s.dup, N * F);
      else k.gegluBackward(s.dact, a.gate, a.up, s.dgate, s.dup, N * F);
      tock("bwd.act", t0);
      let h2 = a.xmid;
      if (lw.mlpNorm) {
        t0 = tick();
        k.rmsnormForward(a.xmid, lw.mlpNorm, ln, s.rstdTmp, N, C, eps); // recompute the MLP input
        tock("bwd.recompute", t0);
        h2 = ln;
      }
      this.projectBack(s.dgate, lw.gate, dln, N, F, C, "gate", false);
      this.projectBack(s.dup, lw.up, dln, N, F, C, "up", true);
      this.lora.backward(h2, N, C, lora, grads, l, GATE_UP, [s.dgate, s.dup], [F, F], dln);
      this.inputGrad(dres, dln, a.xmid, lw.mlpNorm, a.rstd2, dxmid, N);

      // ---- attention branch. dxmid = d(residual after attention).
      const dyA = this.branchGrad(dxmid, a.attnOut, lw.attnOutNorm, a.rstd3, N); // d(o output)
      this.projectBack(dyA, lw.o, s.datt, N, C, Q, "o", false);
      this.lora.backward(a.att, N, Q, lora, grads, l, O, [dyA], [C], s.datt);
      t0 = tick();
      const window = cfg.layers[l].window;
      for (let b = 0; b < B; b++) {
        const len = lengths[b];
        const rowQ = b * T * Q;
        const rowK = b * T * K;
        k.attentionBackward(
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
          scale,
          window,
        );
        if (len < T) {
          s.dq.fill(0, rowQ + len * Q, rowQ + T * Q);
          s.dk.fill(0, rowK + len * K, rowK + T * K);
          s.dv.fill(0, rowK + len * K, rowK + T * K);
        }
      }
      tock("bwd.attention", t0);
      this.rope(s.dq, l, Hq, N, true);
      this.rope(s.dk, l, Hkv, N, true);
      let dq = s.dq;
      let dk = s.dk;
      if (lw.qNorm && lw.kNorm) {
        t0 = tick();
        const [qr, qd] = this.qkRows(N, Hq);
        const [kr, kd] = this.qkRows(N, Hkv);
        k.rmsnormBackward(s.dq, a.qPre, lw.qNorm, a.rstdQ, s.dqPre, null, qr, qd);
        k.rmsnormBackward(s.dk, a.kPre, lw.kNorm, a.rstdK, s.dkPre, null, kr, kd);
        tock("bwd.rmsnorm", t0);
        dq = s.dqPre;
        dk = s.dkPre;
      }
      let h = a.resid;
      if (lw.attnNorm) {
        t0 = tick();
        k.rmsnormForward(a.resid, lw.attnNorm, ln, s.rstdTmp, N, C, eps); // recompute the attention input
        tock("bwd.recompute", t0);
        h = ln;
      }
      if (needInputGrad) {
        this.projectBack(dq, lw.q, dln, N, Q, C, "q", false);
        this.projectBack(dk, lw.k, dln, N, K, C, "k", true);
        this.projectBack(s.dv, lw.v, dln, N, K, C, "v", true);
      }
      this.lora.backward(h, N, C, lora, grads, l, QKV, [dq, dk, s.dv], [Q, K, K], needInputGrad ? dln : null);
      if (!needInputGrad) break;
      this.inputGrad(dxmid, dln, a.resid, lw.attnNorm, a.rstd1, dres, N);
    }
  }

  /** d(branch output before its out-norm) from d(residual stream): residualScale, then the out-norm's backward. */
  private branchGrad(
    dOut: Float32Array,
    pre: Float32Array,
    outNorm: Float32Array | null,
    rstd: Float32Array,
    N: number,
  ): Float32Array {
    const C = this.config.hiddenSize;
    const m = this.config.residualScale;
    let dy = dOut;
    if (m !== 1) {
      const scaled = this.s.dbranch;
      for (let i = 0; i < N * C; i++) scaled[i] = m * dOut[i];
      dy = scaled;
    }
    if (!outNorm) return dy;
    const t0 = tick();
    this.kern.rmsnormBackward(dy, pre, outNorm, rstd, this.s.dtmp, null, N, C);
    tock("bwd.rmsnorm", t0);
    return this.s.dtmp;
  }

  /** d(residual input) = d(residual output) + d(branch input) through the in-norm, if any. */
  private inputGrad(
    dOut: Float32Array,
    dh: Float32Array,
    x: Float32Array,
    inNorm: Float32Array | null,
    rstd: Float32Array,
    dx: Float32Array,
    N: number,
  ): void {
    const C = this.config.hiddenSize;
    const t0 = tick();
    let d = dh;
    if (inNorm) {
      this.kern.rmsnormBackward(dh, x, inNorm, rstd, this.s.dtmp, null, N, C);
      d = this.s.dtmp;
    }
    for (let i = 0; i < N * C; i++) dx[i] = dOut[i] + d[i];
    tock("bwd.rmsnorm", t0);
  }

  // ------------------------------------------------------------------ inference

  /** Logits [T,V] for one sequence (a fresh forward pass). */
  logits(tokenIds: ArrayLike<number>, lora: LoraLayers | null): Float32Array {
    const T = tokenIds.length;
    const positions = new Int32Array(T);
    for (let t = 0; t < T; t++) positions[t] = t;
    const xf = this.run({
      N: T,
      ids: tokenIds,
      positions,
      segments: [{ row: 0, rows: T, cache: null }],
      lora: [{ row: 0, rows: T, lora }],
    });
    const out = new Float32Array(T * this.config.vocabSize);
    this.head.logits(xf, out, T);
    return out;
  }

  /** Logits [rows.length, V] of chosen rows of the last run (decode: each sequence's last new token). */
  logitsOfRows(rowIndices: readonly number[], out: Float32Array): void {
    this.head.logitsOfRows(this.s.xf, rowIndices, out);
  }
}

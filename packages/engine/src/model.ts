// The Llama forward and backward pass, top to bottom, for LoRA training.
//
// Notation: B sequences of T positions (right-padded), N = B*T rows,
// C = hidden, F = ffn, V = vocab, Hq / Hkv heads of D = headDim,
// Q = Hq*D, K = Hkv*D, r = LoRA rank. Every projection runs on all N rows at
// once so the matmuls are large: y[N,out] = x[N,in]·Wᵀ (+ scale·(x·Aᵀ)·Bᵀ).
//
// Base weights are frozen: the backward pass only propagates dx through W and
// accumulates gradients into the LoRA factors. The LM head and the loss are
// fused (llm.c's "fused classifier"): logits exist only for a chunk of rows at
// a time, and by default only for rows that carry a label.
import { getKernels } from "./kernels/index.js";
import type { Kernels } from "./kernels/types.js";
import type { LlamaConfig, LoraTarget } from "./types.js";
import { type LlamaWeights, type LoraLayers, type LoraPair, ropeTables } from "./weights.js";

/** One padded micro-batch. targets[n] is the token row n must predict (-100 = no loss). */
export interface Batch {
  B: number;
  T: number;
  inputIds: Int32Array; // [B*T]
  targets: Int32Array; // [B*T]
  lengths: Int32Array; // [B] real tokens per sequence; the rest is padding
}

export interface GraphOptions {
  /** Compute LM-head logits only for rows with a target (default true). */
  skipUnlabeledRows?: boolean;
  /** Forward only (logits, eval): one layer's activations are reused by every layer. */
  inferenceOnly?: boolean;
}

interface LayerActivations {
  resid: Float32Array; // [N,C] the layer's input (residual stream)
  rstd1: Float32Array; // [N]
  q: Float32Array; // [N,Q] after RoPE
  k: Float32Array; // [N,K] after RoPE
  v: Float32Array; // [N,K]
  att: Float32Array; // [N,Q] attention output, input of o_proj
  lse: Float32Array; // [B,Hq,T]
  xmid: Float32Array; // [N,C] residual after attention
  rstd2: Float32Array; // [N]
  gate: Float32Array; // [N,F] pre-activation
  up: Float32Array; // [N,F]
  xa: Partial<Record<LoraTarget, Float32Array>>; // [N,r] x·Aᵀ per adapted projection
  aStack: Partial<Record<LoraTarget, Float32Array>>; // [g*r,in] stacked A factors, keyed by the group's first
}

/** The notation's sizes for a config: C, F, V, Hq, Hkv, D, and Q = Hq*D, K = Hkv*D. */
export function sizesOf(config: LlamaConfig) {
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

// Per-op timings, enabled with SVC_ENGINE_PROFILE=1 (printed by the benchmark).
const profiling = process.env.SVC_ENGINE_PROFILE === "1";
export const profile = new Map<string, { ms: number; calls: number }>();
function tick(): number {
  return profiling ? performance.now() : 0;
}
function tock(label: string, start: number): void {
  if (!profiling) return;
  const entry = profile.get(label) ?? { ms: 0, calls: 0 };
  entry.ms += performance.now() - start;
  entry.calls++;
  profile.set(label, entry);
}

const LOGIT_CHUNK_FLOATS = 1 << 23; // 32 MB of logits per LM-head chunk

// Projections grouped by the input they read (their LoRA x·Aᵀ is one matmul per group).
const QKV: readonly LoraTarget[] = ["q_proj", "k_proj", "v_proj"];
const O: readonly LoraTarget[] = ["o_proj"];
const GATE_UP: readonly LoraTarget[] = ["gate_proj", "up_proj"];
const DOWN: readonly LoraTarget[] = ["down_proj"];

export class LlamaGraph {
  readonly config: LlamaConfig;
  readonly weights: LlamaWeights;
  private readonly kern: Kernels;
  private readonly skipUnlabeledRows: boolean;
  private readonly inferenceOnly: boolean;

  // Activations and scratch, sized for `rows` rows and grown on demand.
  private rows = 0;
  private acts: LayerActivations[] = [];
  private xaRank = 0;
  private final!: Float32Array; // [N,C] residual after the last layer
  private xf!: Float32Array; // [N,C] final norm output
  private rstdf!: Float32Array; // [N]
  private positions!: Int32Array; // [N]
  private ln!: Float32Array; // [N,C] a norm output (forward), recomputed in backward
  private act!: Float32Array; // [N,F]
  private dact!: Float32Array; // [N,F]
  private dgate!: Float32Array; // [N,F]
  private dup!: Float32Array; // [N,F]
  private dres!: Float32Array; // [N,C]
  private dxmid!: Float32Array; // [N,C]
  private dtmp!: Float32Array; // [N,C]
  private dln!: Float32Array; // [N,C]
  private datt!: Float32Array; // [N,Q]
  private dq!: Float32Array; // [N,Q]
  private dk!: Float32Array; // [N,K]
  private dv!: Float32Array; // [N,K]
  private dxa!: Float32Array; // [N,r]
  private xaGroup!: Float32Array; // [N,3r] x·Aᵀ of a projection group
  private dxaGroup!: Float32Array; // [N,3r]
  private dAGroup!: Float32Array; // [3r,C] stacked A gradients of a group
  private headRows!: Float32Array; // [chunk,C] gathered rows for the LM head
  private headTargets!: Int32Array; // [chunk]
  private logitChunk!: Float32Array; // [chunk,V]
  private ropeCos: Float32Array = new Float32Array(0);
  private ropeSin: Float32Array = new Float32Array(0);
  private ropeLen = 0;
  private batch: Batch | null = null;

  constructor(config: LlamaConfig, weights: LlamaWeights, options: GraphOptions = {}) {
    this.config = config;
    this.weights = weights;
    this.kern = getKernels();
    this.skipUnlabeledRows = options.skipUnlabeledRows ?? true;
    this.inferenceOnly = options.inferenceOnly ?? false;
  }

  // ------------------------------------------------------------------ buffers

  private ensureCapacity(N: number, T: number, r: number): void {
    const { C, F, V, Hq, Q, K } = sizesOf(this.config);
    if (T > this.ropeLen) {
      const tables = ropeTables(this.config, T);
      this.ropeCos = tables.cos;
      this.ropeSin = tables.sin;
      this.ropeLen = T;
    }
    if (N > this.rows) {
      this.rows = N;
      this.acts = [];
      for (let l = 0; l < (this.inferenceOnly ? 1 : this.config.numHiddenLayers); l++) {
        this.acts.push({
          resid: new Float32Array(N * C),
          rstd1: new Float32Array(N),
          q: new Float32Array(N * Q),
          k: new Float32Array(N * K),
          v: new Float32Array(N * K),
          att: new Float32Array(N * Q),
          lse: new Float32Array(N * Hq),
          xmid: new Float32Array(N * C),
          rstd2: new Float32Array(N),
          gate: new Float32Array(N * F),
          up: new Float32Array(N * F),
          xa: {},
          aStack: {},
        });
      }
      this.xaRank = 0;
      this.final = new Float32Array(N * C);
      this.xf = new Float32Array(N * C);
      this.rstdf = new Float32Array(N);
      this.positions = new Int32Array(N);
      this.ln = new Float32Array(N * C);
      this.act = new Float32Array(N * F);
      this.dact = new Float32Array(N * F);
      this.dgate = new Float32Array(N * F);
      this.dup = new Float32Array(N * F);
      this.dres = new Float32Array(N * C);
      this.dxmid = new Float32Array(N * C);
      this.dtmp = new Float32Array(N * C);
      this.dln = new Float32Array(N * C);
      this.datt = new Float32Array(N * Q);
      this.dq = new Float32Array(N * Q);
      this.dk = new Float32Array(N * K);
      this.dv = new Float32Array(N * K);
      const chunk = Math.max(1, Math.min(N, Math.floor(LOGIT_CHUNK_FLOATS / V)));
      this.headRows = new Float32Array(chunk * C);
      this.headTargets = new Int32Array(chunk);
      this.logitChunk = new Float32Array(chunk * V);
    }
    if (r > 0 && r !== this.xaRank) {
      this.xaRank = r;
      for (const a of this.acts) a.xa = {};
      this.dxa = new Float32Array(this.rows * r);
      this.xaGroup = new Float32Array(this.rows * 3 * r);
      this.dxaGroup = new Float32Array(this.rows * 3 * r);
      this.dAGroup = new Float32Array(3 * r * this.config.hiddenSize);
    }
  }

  /** Layer l's activations (the one shared set when inference-only). */
  private layerActs(l: number): LayerActivations {
    return this.acts[this.inferenceOnly ? 0 : l];
  }

  private xaBuffer(layer: number, target: LoraTarget): Float32Array {
    const acts = this.layerActs(layer);
    let buf = acts.xa[target];
    if (!buf) {
      buf = new Float32Array(this.rows * this.xaRank);
      acts.xa[target] = buf;
    }
    return buf;
  }

  // ------------------------------------------------------------------ projections

  /** y[N,out] (+)= x[N,in]·Wᵀ: a frozen base projection. */
  private baseForward(
    x: Float32Array,
    w: Float32Array,
    y: Float32Array,
    N: number,
    out: number,
    inDim: number,
    target: LoraTarget,
    accumulate = false,
  ): void {
    const t = tick();
    this.kern.matmul(x, w, y, N, out, inDim, false, true, accumulate);
    tock(`fwd.matmul.${target}`, t);
  }

  /** dx[N,in] (+)= dy[N,out]·W: the input gradient of a frozen projection (W gets none). */
  private baseBackward(
    dy: Float32Array,
    w: Float32Array,
    dx: Float32Array,
    N: number,
    out: number,
    inDim: number,
    target: LoraTarget,
    accumulate: boolean,
  ): void {
    const t = tick();
    this.kern.matmul(dy, w, dx, N, inDim, out, false, false, accumulate);
    tock(`bwd.matmul.${target}`, t);
  }

  /** The adapted projections of a group (those the adapter targets), with their A·B factors. */
  private present(lora: LoraLayers | null, layer: number, targets: readonly LoraTarget[]): number[] {
    const out: number[] = [];
    if (!lora) return out;
    for (let i = 0; i < targets.length; i++) if (lora.layers[layer][targets[i]]) out.push(i);
    return out;
  }

  /**
   * The A factors of g projections that read the same input, stacked [g*r, in],
   * so x·Aᵀ for the whole group is one matmul (kept per layer for the backward pass).
   */
  private stackedA(
    lora: LoraLayers,
    layer: number,
    targets: readonly LoraTarget[],
    idx: number[],
    inDim: number,
  ) {
    if (idx.length === 1) return (lora.layers[layer][targets[idx[0]]] as LoraPair).a;
    const key = targets[idx[0]];
    const size = idx.length * lora.r * inDim;
    const acts = this.layerActs(layer);
    let stack = acts.aStack[key];
    if (!stack || stack.length !== size) {
      stack = new Float32Array(size);
      acts.aStack[key] = stack;
    }
    for (const [j, i] of idx.entries())
      stack.set((lora.layers[layer][targets[i]] as LoraPair).a, j * lora.r * inDim);
    return stack;
  }

  /**
   * LoRA of projections that all read x[N,in]: ys[i] += scale·(x·A_iᵀ)·B_iᵀ.
   * x·Aᵀ of the group is one matmul [N, g*r]; each projection's [N,r] slice
   * is kept in its xa buffer for the backward pass.
   */
  private loraForward(
    x: Float32Array,
    N: number,
    inDim: number,
    lora: LoraLayers | null,
    layer: number,
    targets: readonly LoraTarget[],
    ys: Float32Array[],
    outs: number[],
  ): void {
    const idx = this.present(lora, layer, targets);
    if (!lora || idx.length === 0) return;
    const t = tick();
    const k = this.kern;
    const r = lora.r;
    const g = idx.length;
    const gr = g * r;
    const a = this.stackedA(lora, layer, targets, idx, inDim);
    const xaGroup = g === 1 ? this.xaBuffer(layer, targets[idx[0]]) : this.xaGroup;
    k.matmul(x, a, xaGroup, N, gr, inDim, false, true, false); // [N, g*r]
    for (let j = 0; j < g; j++) {
      const target = targets[idx[j]];
      const xa = this.xaBuffer(layer, target);
      if (g > 1) {
        for (let n = 0; n < N; n++) {
          const src = n * gr + j * r;
          for (let c = 0; c < r; c++) xa[n * r + c] = xaGroup[src + c];
        }
      }
      const pair = lora.layers[layer][target] as LoraPair;
      k.matmul(xa, pair.b, ys[idx[j]], N, outs[idx[j]], r, false, true, true, lora.scale);
    }
    tock("fwd.lora", t);
  }

  /**
   * Backward of loraForward given dys[i] = d(ys[i]): accumulates dB_i +=
   * scale·dy_iᵀ·xa_i and dA_i += dxa_iᵀ·x with dxa_i = scale·dy_i·B_i, and
   * when dx is given, dx += dxa·A_stacked (one matmul for the group).
   */
  private loraBackward(
    x: Float32Array,
    N: number,
    inDim: number,
    lora: LoraLayers | null,
    grads: LoraLayers | null,
    layer: number,
    targets: readonly LoraTarget[],
    dys: Float32Array[],
    outs: number[],
    dx: Float32Array | null,
  ): void {
    const idx = this.present(lora, layer, targets);
    if (!lora || !grads || idx.length === 0) return;
    const t = tick();
    const k = this.kern;
    const r = lora.r;
    const g = idx.length;
    const gr = g * r;
    const dxaGroup = g === 1 ? this.dxa : this.dxaGroup;
    for (let j = 0; j < g; j++) {
      const target = targets[idx[j]];
      const pair = lora.layers[layer][target] as LoraPair;
      const gradPair = grads.layers[layer][target] as LoraPair;
      const dy = dys[idx[j]];
      const out = outs[idx[j]];
      k.matmul(dy, this.xaBuffer(layer, target), gradPair.b, out, r, N, true, false, true, lora.scale); // dB[out,r]
      k.matmul(dy, pair.b, this.dxa, N, r, out, false, false, false, lora.scale); // dxa[N,r]
      if (g > 1) {
        const dxa = this.dxa;
        for (let n = 0; n < N; n++) {
          const dst = n * gr + j * r;
          for (let c = 0; c < r; c++) dxaGroup[dst + c] = dxa[n * r + c];
        }
      }
    }
    if (g === 1) {
      const gradA = (grads.layers[layer][targets[idx[0]]] as LoraPair).a;
      k.matmul(dxaGroup, x, gradA, r, inDim, N, true, false, true); // dA[r,in]
    } else {
      const dA = this.dAGroup;
      k.matmul(dxaGroup, x, dA, gr, inDim, N, true, false, false); // [g*r, in]
      for (let j = 0; j < g; j++) {
        const gradA = (grads.layers[layer][targets[idx[j]]] as LoraPair).a;
        const off = j * r * inDim;
        for (let i = 0; i < r * inDim; i++) gradA[i] += dA[off + i];
      }
    }
    if (dx) {
      const a =
        g === 1
          ? (lora.layers[layer][targets[idx[0]]] as LoraPair).a
          : this.layerActs(layer).aStack[targets[idx[0]]];
      k.matmul(dxaGroup, a as Float32Array, dx, N, inDim, gr, false, false, true);
    }
    tock("bwd.lora", t);
  }

  // ------------------------------------------------------------------ forward

  /** Runs the layers and the final norm over a batch; leaves xf [N,C] ready for the LM head. */
  private forwardLayers(batch: Batch, lora: LoraLayers | null): void {
    const { B, T, inputIds, lengths } = batch;
    const N = B * T;
    const cfg = this.config;
    const { C, F, Hq, Hkv, D, Q, K } = sizesOf(cfg);
    const k = this.kern;
    const w = this.weights;
    this.ensureCapacity(N, T, lora ? lora.r : 0);
    for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) this.positions[b * T + t] = t;

    // token embeddings → the residual stream [N,C]
    let t0 = tick();
    const x0 = this.acts.length > 0 ? this.acts[0].resid : this.final;
    for (let n = 0; n < N; n++) x0.set(w.embed.subarray(inputIds[n] * C, inputIds[n] * C + C), n * C);
    tock("fwd.embed", t0);

    const scale = 1 / Math.sqrt(D);
    const ln = this.ln;
    for (let l = 0; l < cfg.numHiddenLayers; l++) {
      const a = this.layerActs(l);
      const lw = w.layers[l];
      const next = l + 1 < cfg.numHiddenLayers ? this.layerActs(l + 1).resid : this.final;

      // attention block: ln1 = rmsnorm(resid); q,k,v projections; RoPE; causal attention; o_proj
      t0 = tick();
      k.rmsnormForward(a.resid, lw.inputNorm, ln, a.rstd1, N, C, cfg.rmsNormEps);
      tock("fwd.rmsnorm", t0);
      this.baseForward(ln, lw.q, a.q, N, Q, C, "q_proj");
      this.baseForward(ln, lw.k, a.k, N, K, C, "k_proj");
      this.baseForward(ln, lw.v, a.v, N, K, C, "v_proj");
      this.loraForward(ln, N, C, lora, l, QKV, [a.q, a.k, a.v], [Q, K, K]);
      t0 = tick();
      k.rope(a.q, this.ropeCos, this.ropeSin, this.positions, N, Hq, D, false);
      k.rope(a.k, this.ropeCos, this.ropeSin, this.positions, N, Hkv, D, false);
      tock("fwd.rope", t0);
      t0 = tick();
      for (let b = 0; b < B; b++) {
        const len = lengths[b];
        const rowQ = b * T * Q;
        const rowK = b * T * K;
        k.attentionForward(
          a.q.subarray(rowQ, rowQ + len * Q),
          a.k.subarray(rowK, rowK + len * K),
          a.v.subarray(rowK, rowK + len * K),
          a.att.subarray(rowQ, rowQ + len * Q),
          a.lse.subarray(b * T * Hq, b * T * Hq + len * Hq),
          len,
          len,
          Hq,
          Hkv,
          D,
          scale,
          K,
        );
        // padding rows attend to nothing; keep them finite and zero
        if (len < T) a.att.fill(0, rowQ + len * Q, rowQ + T * Q);
      }
      tock("fwd.attention", t0);
      // the residual add rides on the matmul: xmid = resid, then xmid += att·Woᵀ
      const xmid = a.xmid;
      xmid.set(a.resid.subarray(0, N * C));
      this.baseForward(a.att, lw.o, xmid, N, C, Q, "o_proj", true);
      this.loraForward(a.att, N, Q, lora, l, O, [xmid], [C]);

      // MLP block: ln2 = rmsnorm(xmid); down(silu(gate(ln2)) * up(ln2))
      t0 = tick();
      k.rmsnormForward(xmid, lw.postNorm, ln, a.rstd2, N, C, cfg.rmsNormEps);
      tock("fwd.rmsnorm", t0);
      this.baseForward(ln, lw.gate, a.gate, N, F, C, "gate_proj");
      this.baseForward(ln, lw.up, a.up, N, F, C, "up_proj");
      this.loraForward(ln, N, C, lora, l, GATE_UP, [a.gate, a.up], [F, F]);
      t0 = tick();
      k.swigluForward(a.gate, a.up, this.act, N * F);
      tock("fwd.swiglu", t0);
      next.set(xmid.subarray(0, N * C));
      this.baseForward(this.act, lw.down, next, N, C, F, "down_proj", true);
      this.loraForward(this.act, N, F, lora, l, DOWN, [next], [C]);
    }
    t0 = tick();
    k.rmsnormForward(this.final, w.finalNorm, this.xf, this.rstdf, N, C, cfg.rmsNormEps);
    tock("fwd.rmsnorm", t0);
  }

  /**
   * Forward pass with the loss. Returns the summed loss over rows with a
   * target and their count. With gradScale set, the LM head's backward runs
   * here too (dLogits = gradScale·(softmax − onehot)), leaving d(xf) for backward().
   */
  forward(
    batch: Batch,
    lora: LoraLayers | null,
    gradScale: number | null = null,
  ): { lossSum: number; count: number } {
    if (gradScale !== null && this.inferenceOnly)
      throw new Error("an inference-only graph has no backward pass");
    this.forwardLayers(batch, lora);
    this.batch = batch;
    const { B, T, targets } = batch;
    const N = B * T;
    const { hiddenSize: C, vocabSize: V } = this.config;
    const k = this.kern;
    const lmHead = this.weights.lmHead;
    const chunk = this.headTargets.length;
    const grad = gradScale !== null;
    if (grad) this.dtmp.fill(0, 0, N * C); // d(xf), scattered per row below

    let lossSum = 0;
    let count = 0;
    let n = 0;
    while (n < N) {
      // gather up to `chunk` rows (only labelled ones when skipping)
      let m = 0;
      const rowsOfChunk: number[] = [];
      for (; n < N && m < chunk; n++) {
        if (this.skipUnlabeledRows && targets[n] < 0) continue;
        this.headRows.set(this.xf.subarray(n * C, n * C + C), m * C);
        this.headTargets[m] = targets[n];
        rowsOfChunk.push(n);
        if (targets[n] >= 0) count++;
        m++;
      }
      if (m === 0) break;
      let t0 = tick();
      k.matmul(this.headRows, lmHead, this.logitChunk, m, V, C, false, true, false); // logits[m,V]
      tock("fwd.matmul.lm_head", t0);
      t0 = tick();
      lossSum += k.crossEntropy(
        this.logitChunk,
        this.headTargets,
        m,
        V,
        grad ? this.logitChunk : null,
        gradScale ?? 0,
      );
      tock("fwd.cross_entropy", t0);
      if (!grad) continue;
      t0 = tick();
      k.matmul(this.logitChunk, lmHead, this.headRows, m, C, V, false, false, false); // d(rows)[m,C]
      tock("bwd.matmul.lm_head", t0);
      for (let i = 0; i < m; i++) {
        this.dtmp.set(this.headRows.subarray(i * C, i * C + C), rowsOfChunk[i] * C);
      }
    }
    return { lossSum, count };
  }

  // ------------------------------------------------------------------ backward

  /** Backward pass after forward(batch, lora, gradScale): accumulates LoRA gradients into grads. */
  backward(lora: LoraLayers, grads: LoraLayers): void {
    const batch = this.batch;
    if (!batch || this.inferenceOnly) throw new Error("backward() needs a forward() with gradScale first");
    const { B, T, lengths } = batch;
    const N = B * T;
    const cfg = this.config;
    const { C, F, Hq, Hkv, D, Q, K } = sizesOf(cfg);
    const k = this.kern;
    const w = this.weights;
    const { dres, dxmid, dtmp, dln, ln } = this;
    const scale = 1 / Math.sqrt(D);

    // final norm: d(final) from d(xf) (held in dtmp by forward)
    let t0 = tick();
    k.rmsnormBackward(dtmp, this.final, w.finalNorm, this.rstdf, dres, null, N, C);
    tock("bwd.rmsnorm", t0);

    for (let l = cfg.numHiddenLayers - 1; l >= 0; l--) {
      const a = this.acts[l];
      const lw = w.layers[l];
      const needInputGrad = l > 0; // the embeddings are frozen: no gradient below layer 0's LoRA

      // MLP block. dres = d(layer output).
      t0 = tick();
      k.swigluForward(a.gate, a.up, this.act, N * F); // recompute the down projection's input
      tock("bwd.recompute", t0);
      this.baseBackward(dres, lw.down, this.dact, N, C, F, "down_proj", false);
      this.loraBackward(this.act, N, F, lora, grads, l, DOWN, [dres], [C], this.dact);
      t0 = tick();
      k.swigluBackward(this.dact, a.gate, a.up, this.dgate, this.dup, N * F);
      tock("bwd.swiglu", t0);
      t0 = tick();
      k.rmsnormForward(a.xmid, lw.postNorm, ln, dtmp, N, C, cfg.rmsNormEps); // recompute ln2 (dtmp: throwaway rstd)
      tock("bwd.recompute", t0);
      this.baseBackward(this.dgate, lw.gate, dln, N, F, C, "gate_proj", false);
      this.baseBackward(this.dup, lw.up, dln, N, F, C, "up_proj", true);
      this.loraBackward(ln, N, C, lora, grads, l, GATE_UP, [this.dgate, this.dup], [F, F], dln);
      t0 = tick();
      k.rmsnormBackward(dln, a.xmid, lw.postNorm, a.rstd2, dtmp, null, N, C);
      for (let i = 0; i < N * C; i++) dxmid[i] = dres[i] + dtmp[i];
      tock("bwd.rmsnorm", t0);

      // attention block. dxmid = d(residual after attention).
      this.baseBackward(dxmid, lw.o, this.datt, N, C, Q, "o_proj", false);
      this.loraBackward(a.att, N, Q, lora, grads, l, O, [dxmid], [C], this.datt);
      t0 = tick();
      for (let b = 0; b < B; b++) {
        const len = lengths[b];
        const rowQ = b * T * Q;
        const rowK = b * T * K;
        k.attentionBackward(
          this.datt.subarray(rowQ, rowQ + len * Q),
          a.q.subarray(rowQ, rowQ + len * Q),
          a.k.subarray(rowK, rowK + len * K),
          a.v.subarray(rowK, rowK + len * K),
          a.att.subarray(rowQ, rowQ + len * Q),
          a.lse.subarray(b * T * Hq, b * T * Hq + len * Hq),
          this.dq.subarray(rowQ, rowQ + len * Q),
          this.dk.subarray(rowK, rowK + len * K),
          this.dv.subarray(rowK, rowK + len * K),
          len,
          Hq,
          Hkv,
          D,
          scale,
        );
        if (len < T) {
          this.dq.fill(0, rowQ + len * Q, rowQ + T * Q);
          this.dk.fill(0, rowK + len * K, rowK + T * K);
          this.dv.fill(0, rowK + len * K, rowK + T * K);
        }
      }
      tock("bwd.attention", t0);
      t0 = tick();
      k.rope(this.dq, this.ropeCos, this.ropeSin, this.positions, N, Hq, D, true);
      k.rope(this.dk, this.ropeCos, this.ropeSin, this.positions, N, Hkv, D, true);
      tock("bwd.rope", t0);
      t0 = tick();
      k.rmsnormForward(a.resid, lw.inputNorm, ln, dtmp, N, C, cfg.rmsNormEps); // recompute ln1
      tock("bwd.recompute", t0);
      if (needInputGrad) {
        this.baseBackward(this.dq, lw.q, dln, N, Q, C, "q_proj", false);
        this.baseBackward(this.dk, lw.k, dln, N, K, C, "k_proj", true);
        this.baseBackward(this.dv, lw.v, dln, N, K, C, "v_proj", true);
      }
      const dqkv = [this.dq, this.dk, this.dv];
      this.loraBackward(ln, N, C, lora, grads, l, QKV, dqkv, [Q, K, K], needInputGrad ? dln : null);
      if (!needInputGrad) break;
      t0 = tick();
      k.rmsnormBackward(dln, a.resid, lw.inputNorm, a.rstd1, dtmp, null, N, C);
      for (let i = 0; i < N * C; i++) dres[i] = dxmid[i] + dtmp[i];
      tock("bwd.rmsnorm", t0);
    }
  }

  // ------------------------------------------------------------------ inference

  /** Logits [T,V] for one sequence (a fresh forward pass). */
  logits(tokenIds: ArrayLike<number>, lora: LoraLayers | null): Float32Array {
    const T = tokenIds.length;
    const { hiddenSize: C, vocabSize: V } = this.config;
    const batch: Batch = {
      B: 1,
      T,
      inputIds: Int32Array.from(tokenIds),
      targets: new Int32Array(T).fill(-100),
      lengths: Int32Array.of(T),
    };
    this.forwardLayers(batch, lora);
    const out = new Float32Array(T * V);
    this.kern.matmul(this.xf, this.weights.lmHead, out, T, V, C, false, true, false);
    return out;
  }
}

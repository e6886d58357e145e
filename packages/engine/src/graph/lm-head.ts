// The LM head and the loss, fused (llm.c's "fused classifier"): logits exist
// only for a chunk of rows at a time, and by default only for rows that carry
// a label. The family's logit scale and final softcap are applied to the
// logits, and their derivatives on the way back.
import type { ModelConfig } from "../families/index.js";
import type { Kernels } from "../kernels/types.js";
import { matmulFrozen, matmulWeight } from "./frozen-weights.js";
import type { PackedWeights } from "./packed-weights.js";
import { tick, tock } from "./profile.js";
import type { ProjectionWeight } from "./weights.js";

// Logits exist for a chunk of rows at a time: 32 MB of them, but never fewer
// than 512 rows. The head's matmul streams the whole [V,C] weight from memory
// once per chunk and packs it once for all of the chunk's rows, so short chunks
// run it at a fraction of the SGEMM rate: a 262,144-token vocabulary would give
// 32-row chunks at about half the rate (bench/README.md), and 256-row chunks
// still run 10-13% slower than 512-row ones (Gemma-3's head, one thread:
// 117 vs 131 GFLOP/s forward, 136 vs 150 for d(rows)), for 256 MB more logits.
const LOGIT_CHUNK_FLOATS = 1 << 23;
const MIN_CHUNK_ROWS = 512;

export class LmHead {
  private rows = 0;
  private headRows = new Float32Array(0); // [chunk,C] gathered rows
  private headTargets = new Int32Array(0); // [chunk]
  private logitChunk = new Float32Array(0); // [chunk,V]
  private capTanh: Float32Array | null = null; // [chunk,V] tanh(logits/cap) for the softcap's backward

  constructor(
    private readonly config: ModelConfig,
    private readonly head: ProjectionWeight, // [V,C]: fp32, or bf16 / int8 (train-precision.ts)
    private readonly kern: Kernels,
    private readonly training: boolean,
    private readonly packed: PackedWeights | null = null,
    private readonly bf16 = false, // a bf16 run (GraphOptions.bf16)
  ) {}

  /** Chunk buffers for passes of up to N rows. */
  ensure(N: number): void {
    if (N <= this.rows) return;
    this.rows = N;
    const { hiddenSize: C, vocabSize: V } = this.config;
    const chunk = Math.max(1, Math.min(N, Math.max(MIN_CHUNK_ROWS, Math.floor(LOGIT_CHUNK_FLOATS / V))));
    this.headRows = new Float32Array(chunk * C);
    this.headTargets = new Int32Array(chunk);
    this.logitChunk = this.kern.zeroedFloats?.(chunk * V) ?? new Float32Array(chunk * V);
    this.capTanh = this.config.finalLogitSoftcap > 0 && this.training ? new Float32Array(chunk * V) : null;
  }

  /** out[rows,V] = transformed logits of x[rows,C]; keeps tanh(logits/cap) in capTanh when given. */
  logits(x: Float32Array, out: Float32Array, rows: number, capTanh: Float32Array | null = null): void {
    const { hiddenSize: C, vocabSize: V } = this.config;
    const t0 = tick();
    const packed = this.packed?.forward(this.head, V, C) ?? null;
    if (this.training)
      matmulFrozen(this.kern, x, this.head, out, rows, V, C, false, false, packed, null, this.bf16);
    else matmulWeight(this.kern, x, this.head, out, rows, V, C, false, 1, packed);
    const m = this.config.logitScale;
    if (m !== 1) for (let i = 0; i < rows * V; i++) out[i] *= m;
    const cap = this.config.finalLogitSoftcap;
    if (cap > 0) {
      for (let i = 0; i < rows * V; i++) {
        const th = Math.tanh(out[i] / cap);
        if (capTanh) capTanh[i] = th;
        out[i] = th * cap;
      }
    }
    tock("fwd.matmul.lm_head", t0);
  }

  /** Logits [rows.length, V] of chosen rows of xf (decode: each sequence's last new token). */
  logitsOfRows(xf: Float32Array, rowIndices: readonly number[], out: Float32Array): void {
    const C = this.config.hiddenSize;
    const gathered =
      rowIndices.length <= this.headTargets.length ? this.headRows : new Float32Array(rowIndices.length * C);
    for (const [i, row] of rowIndices.entries()) gathered.set(xf.subarray(row * C, row * C + C), i * C);
    this.logits(gathered, out, rowIndices.length);
  }

  /**
   * The summed cross-entropy of xf[N,C]'s rows against targets (a target < 0
   * counts nothing) and the count of counted rows. With dxf given, the head's
   * backward runs too: dxf[n] = d(loss·gradScale)/d(xf[n]) (zero for skipped rows).
   * `correct` counts the counted rows whose logits' argmax (the first, on
   * ties) is the target, with dxf too (before the gradient overwrites the
   * logits: one pass over the chunk's logits, beside the softmax's). With rowLoss
   * given, rowLoss[n] receives row n's own cross-entropy (0 for uncounted rows),
   * which preference losses sum per sequence (preference-step.ts).
   */
  loss(
    xf: Float32Array,
    targets: Int32Array,
    N: number,
    skipUnlabeledRows: boolean,
    dxf: Float32Array | null,
    gradScale: number,
    rowLoss: Float32Array | null = null,
  ): { lossSum: number; count: number; correct: number } {
    const { hiddenSize: C, vocabSize: V } = this.config;
    const k = this.kern;
    const chunk = this.headTargets.length;
    if (dxf) dxf.fill(0, 0, N * C);
    let lossSum = 0;
    let count = 0;
    let correct = 0;
    let n = 0;
    while (n < N) {
      // gather up to `chunk` rows (only labelled ones when skipping)
      let m = 0;
      const rowsOfChunk: number[] = [];
      for (; n < N && m < chunk; n++) {
        if (skipUnlabeledRows && targets[n] < 0) continue;
        this.headRows.set(xf.subarray(n * C, n * C + C), m * C);
        this.headTargets[m] = targets[n];
        rowsOfChunk.push(n);
        if (targets[n] >= 0) count++;
        m++;
      }
      if (m === 0) break;
      const logits = this.logitChunk;
      this.logits(this.headRows, logits, m, dxf ? this.capTanh : null);
      // the cross-entropy below overwrites the logits with their gradient: count the hits first
      if (dxf) correct += argmaxHits(logits, this.headTargets, m, V);
      let t0 = tick();
      if (rowLoss) {
        for (let i = 0; i < m; i++) {
          const row = logits.subarray(i * V, (i + 1) * V);
          const one = k.crossEntropy(
            row,
            this.headTargets.subarray(i, i + 1),
            1,
            V,
            dxf ? row : null,
            gradScale,
          );
          rowLoss[rowsOfChunk[i]] = one;
          lossSum += one;
        }
      } else lossSum += k.crossEntropy(logits, this.headTargets, m, V, dxf ? logits : null, gradScale);
      tock("fwd.cross_entropy", t0);
      if (!dxf) {
        correct += argmaxHits(logits, this.headTargets, m, V);
        continue;
      }
      t0 = tick();
      // back through the softcap and the logit scale
      const capTanh = this.capTanh;
      if (capTanh) for (let i = 0; i < m * V; i++) logits[i] *= 1 - capTanh[i] * capTanh[i];
      const scale = this.config.logitScale;
      if (scale !== 1) for (let i = 0; i < m * V; i++) logits[i] *= scale;
      const head = this.head;
      const packed = head instanceof Float32Array ? (this.packed?.backward(head, V, C) ?? null) : null;
      matmulFrozen(k, logits, head, this.headRows, m, V, C, true, false, packed, null, this.bf16); // d(rows)[m,C]
      tock("bwd.matmul.lm_head", t0);
      for (let i = 0; i < m; i++) dxf.set(this.headRows.subarray(i * C, i * C + C), rowsOfChunk[i] * C);
    }
    return { lossSum, count, correct };
  }
}

/** How many of logits[m,V]'s rows with a target ≥ 0 have their argmax (the first, on ties) at the target. */
export function argmaxHits(logits: Float32Array, targets: Int32Array, m: number, V: number): number {
  let hits = 0;
  for (let i = 0; i < m; i++) {
    const target = targets[i];
    if (target < 0) continue;
    const o = i * V;
    let best = 0;
    let max = logits[o];
    for (let j = 1; j < V; j++) {
      if (logits[o + j] > max) {
        max = logits[o + j];
        best = j;
      }
    }
    if (best === target) hits++;
  }
  return hits;
}

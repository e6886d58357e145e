// The compute kernels the model is written against. Two implementations exist:
// `native` (a Node addon: C++ with AVX-512 / AVX2 / baseline dispatch and two
// threads) and `portable` (WebAssembly SIMD or plain JS), chosen at load time
// (see kernels/index.ts; SVC_KERNELS=native|portable forces one).
//
// Conventions, for every kernel:
// - All tensors are row-major Float32Array views; a view may be a subarray of
//   a larger buffer (implementations must honour byteOffset).
// - Shapes are given in elements and named in the argument list.
// - Calls are synchronous. `out` arguments are fully overwritten unless the
//   kernel says it accumulates.

/**
 * A frozen weight matrix W [rows, cols] (Hugging Face's [out, in]) in a
 * serving format, as quant/ writes it:
 * - "bf16": data Uint16Array [rows·cols], the top 16 bits of each fp32 weight; scales null.
 * - "int8": data Int8Array [rows·cols]; scales Float32Array [rows]: w = q·scale (per output channel).
 * - "q4_0": GGUF's Q4_0 blocks of 32 weights along a row (cols % 32 = 0): data Uint8Array
 *   [rows·cols/2], byte j of a block holding weight j in its low nibble and weight j+16 in its
 *   high nibble; scales Uint16Array [rows·cols/32] of f16 d: w = (nibble − 8)·d.
 */
export type QuantMatrix =
  | { format: "bf16"; rows: number; cols: number; data: Uint16Array; scales: null }
  | { format: "int8"; rows: number; cols: number; data: Int8Array; scales: Float32Array }
  | { format: "q4_0"; rows: number; cols: number; data: Uint8Array; scales: Uint16Array };

export type QuantFormat = QuantMatrix["format"];

/**
 * A term y += alpha · a[m, k] · op(b) that matmulQuantTrain adds to its
 * product: a LoRA branch's second product (x·Aᵀ times Bᵀ in the forward,
 * d(x·Aᵀ) times the stacked A in the input gradient). op(b) is [k, cols]:
 * b is [k, cols], or [cols, k] with transB.
 */
export interface LowRankTerm {
  a: Float32Array;
  b: Float32Array;
  k: number;
  transB: boolean;
  alpha: number;
}

/** The number each implementation passes for a format (native quant.h's SVC_QUANT_*). */
export const QUANT_FORMAT_CODES: Record<QuantFormat, number> = { bf16: 1, int8: 2, q4_0: 3 };

export interface Kernels {
  /** "native" or "portable". */
  readonly name: "native" | "portable";
  /** The instruction set actually in use, e.g. "avx512vnni", "avx2", "baseline", "wasm-simd", "js". */
  readonly isa: string;
  /**
   * The most rows m at which matmulQuant rounds x to 8 bits per 32-block (one
   * fp32 scale each) for int8 and q4_0 weights (cols % 32 == 0) and multiplies
   * in integers: Infinity on native avx512vnni, 32 on native avx2. The result
   * then differs from the fp32 product by at most Σ|w|·scale/2 per output.
   * Absent or 0: the product is computed in fp32.
   */
  readonly quantInt8MaxRows?: number;
  /**
   * Whether matmulQuantTrain multiplies bf16 weights, and int8 weights in a
   * bf16 product, with native bf16 dot products (native AVX-512 BF16's
   * vdpbf16ps, at more rows than a GEMV takes). Absent or false: it widens
   * them to fp32.
   */
  readonly bf16Dot?: boolean;
  /**
   * The machine's arithmetic peak as these kernels can reach it, in GFLOP/s:
   * independent multiply-add chains over registers on every pool thread, for
   * about `seconds` (best of the calls). "fp32": FMA (native avx512, avx2);
   * "bf16": vdpbf16ps, 64 FLOPs each (native AVX-512 units on a CPU with
   * AVX512_BF16). null where this implementation or CPU lacks that kind;
   * absent (portable kernels): not measured. For bench/kernels.mjs.
   */
  peakGflops?(kind: "bf16" | "fp32", seconds: number): number | null;
  /**
   * n zeroed floats on a 64-byte boundary, where the kernels write large
   * outputs with streaming stores that need aligned lines (native). Absent:
   * a plain Float32Array serves as well.
   */
  zeroedFloats?(n: number): Float32Array<ArrayBuffer>;

  /**
   * op(b) [k, n] (b stored [n, k] when transB) packed once in the layout this
   * implementation's matmul reads it (native), for matmul's and
   * matmulLowRank's `bPacked`: a frozen weight packed ahead is read in place by
   * every product with it, where each call would copy it anew. Absent: there
   * is nothing to pack (the portable kernels read b as it is).
   */
  packB?(b: Float32Array, k: number, n: number, transB: boolean): Float32Array<ArrayBuffer>;

  /**
   * C[m,n] = alpha * op(A) · op(B) + (accumulate ? C : 0)
   * op(A) is [m,k]: A is stored [m,k], or [k,m] when transA.
   * op(B) is [k,n]: B is stored [k,n], or [n,k] when transB.
   * A Linear layer y = x·Wᵀ with W stored [out,in] is matmul(x, W, y, T, out, in, false, true).
   * bPacked: packB(b, k, n, transB) of these kernels, or absent; it must hold
   * b's values (paths that read b itself, e.g. few rows, still do).
   */
  matmul(
    a: Float32Array,
    b: Float32Array,
    c: Float32Array,
    m: number,
    n: number,
    k: number,
    transA: boolean,
    transB: boolean,
    accumulate: boolean,
    alpha?: number,
    bPacked?: Float32Array | null,
  ): void;

  /**
   * C[m,n] = a[m,k] · op(b) + alpha2 · a2[m,k2] · op(b2) + (accumulate ? C : 0):
   * a frozen projection and its LoRA branch's second product, (x·Aᵀ)·Bᵀ, in one
   * pass over C where two matmuls would stream it twice. op(b) is [k,n]: b is
   * stored [k,n], or [n,k] when transB; op(b2) is [k2,n] likewise. bPacked:
   * as for matmul.
   */
  matmulLowRank(
    a: Float32Array,
    b: Float32Array,
    c: Float32Array,
    m: number,
    n: number,
    k: number,
    transB: boolean,
    a2: Float32Array,
    b2: Float32Array,
    k2: number,
    transB2: boolean,
    alpha2: number,
    accumulate: boolean,
    bPacked?: Float32Array | null,
  ): void;

  /**
   * A LoRA branch's factor gradients from its output gradient dy[n, out], in
   * one pass over dy where two matmuls would each read it:
   *   dB[out, r] += alpha · dyᵀ · xa      (xa = x·Aᵀ [n, r], kept from the forward pass)
   *   dxa[i·ldDxa + c] = alpha · (dy · b)[i, c] for c < r   (b = B [out, r])
   * ldDxa ≥ r: dxa may be a column slice of a wider matrix (a group's stacked
   * dxa); its other columns are left as they are.
   */
  lowRankBackward(
    dy: Float32Array,
    xa: Float32Array,
    b: Float32Array,
    dB: Float32Array,
    dxa: Float32Array,
    n: number,
    out: number,
    r: number,
    alpha: number,
    ldDxa: number,
  ): void;

  /**
   * y[m, w.rows] = alpha · x[m, w.cols] · Wᵀ + (accumulate ? y : 0), with W in a
   * serving format (QuantMatrix): a Linear layer of frozen quantized weights.
   * The product is of x with the weights as the format stores them, in fp32
   * (or with x rounded to 8 bits: quantInt8MaxRows).
   */
  matmulQuant(
    x: Float32Array,
    w: QuantMatrix,
    y: Float32Array,
    m: number,
    accumulate: boolean,
    alpha?: number,
  ): void;

  /**
   * The training products with a frozen weight W [w.rows, w.cols] held in a
   * serving format (LoRA on a bf16 or int8 base):
   * - transW false: y[m, w.rows] = alpha · x[m, w.cols] · Wᵀ + (accumulate ? y : 0), the forward GEMM;
   * - transW true:  y[m, w.cols] = alpha · x[m, w.rows] · W  + (accumulate ? y : 0), the input gradient dy·W.
   * Where bf16Dot is true, bf16 weights may be multiplied with native bf16
   * dot products: x rounded to bf16 (nearest even), products summed in fp32,
   * as PyTorch's bf16 autocast does; each output is then within
   * |alpha|·Σ|x·w|·2⁻⁸ of the fp32 product. Otherwise x stays fp32 and W is
   * widened to fp32 on the fly (never held whole in fp32).
   * lowRank: y += lowRank.alpha · a[m, k] · op(b) as well, in fp32 (a LoRA
   * branch's second product), in the same pass over y where the kernels can.
   * bf16: a bf16 run's product: where bf16Dot is true, int8 weights too may
   * be multiplied with bf16 dot products. Their codes are exact bf16 values;
   * the per-row scales are applied in fp32, to y's columns forward and to x's
   * columns before its rounding in the input gradient; each output is then
   * within |alpha|·Σ|x·w|·2⁻⁸ of the fp32 product. The amx unit widens them.
   */
  matmulQuantTrain(
    x: Float32Array,
    w: QuantMatrix,
    y: Float32Array,
    m: number,
    transW: boolean,
    accumulate: boolean,
    alpha?: number,
    lowRank?: LowRankTerm,
    bf16?: boolean,
  ): void;

  /**
   * RMSNorm over the last dimension: y[r,:] = x[r,:] * rstd[r] * weight[:],
   * rstd[r] = 1 / sqrt(mean(x[r,:]²) + eps). rstd[rows] is written for the backward pass.
   */
  rmsnormForward(
    x: Float32Array,
    weight: Float32Array,
    y: Float32Array,
    rstd: Float32Array,
    rows: number,
    dim: number,
    eps: number,
  ): void;

  /**
   * Backward of rmsnormForward. dx[rows,dim] is written (overwritten).
   * dWeight[dim] is accumulated into when given (null when the weight is frozen).
   */
  rmsnormBackward(
    dy: Float32Array,
    x: Float32Array,
    weight: Float32Array,
    rstd: Float32Array,
    dx: Float32Array,
    dWeight: Float32Array | null,
    rows: number,
    dim: number,
  ): void;

  /**
   * Rotary embedding in place, Hugging Face Llama convention (rotate_half: the
   * first and second halves of the rotated dims are the pair), on
   * x[T, nHeads, headDim]. Only the first rotaryDim dims of each head rotate
   * (default headDim; less for partial rotary, Phi-3's partial_rotary_factor):
   * dim i pairs with i + rotaryDim/2, and dims rotaryDim..headDim-1 pass through.
   * A given rotaryDim must be even, 2 <= rotaryDim <= headDim.
   * cos/sin are [maxPos, rotaryDim/2]; positions[T] selects the row of each token.
   * inverse=true applies the inverse rotation (the backward pass).
   */
  rope(
    x: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    positions: Int32Array,
    T: number,
    nHeads: number,
    headDim: number,
    inverse: boolean,
    rotaryDim?: number,
  ): void;

  /** out[i] = silu(gate[i]) * up[i] for i < n. */
  swigluForward(gate: Float32Array, up: Float32Array, out: Float32Array, n: number): void;

  /** Backward of swigluForward: writes dGate[i] and dUp[i]. */
  swigluBackward(
    dOut: Float32Array,
    gate: Float32Array,
    up: Float32Array,
    dGate: Float32Array,
    dUp: Float32Array,
    n: number,
  ): void;

  /**
   * out[i] = gelu_tanh(gate[i]) * up[i] for i < n, with PyTorch's
   * gelu(approximate="tanh") ("gelu_pytorch_tanh" in Hugging Face configs):
   * gelu_tanh(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). Finite for any
   * finite input (the tanh saturates, nothing overflows).
   */
  gegluForward(gate: Float32Array, up: Float32Array, out: Float32Array, n: number): void;

  /** Backward of gegluForward: writes dGate[i] = dOut[i]·up[i]·gelu_tanh'(gate[i]) and dUp[i]. */
  gegluBackward(
    dOut: Float32Array,
    gate: Float32Array,
    up: Float32Array,
    dGate: Float32Array,
    dUp: Float32Array,
    n: number,
  ): void;

  /**
   * y[r,c] += alpha * bias[c] on y[rows, dim] (alpha default 1): a Linear
   * layer's bias (Qwen2's q/k/v projections) added to its output rows.
   */
  addBias(y: Float32Array, bias: Float32Array, rows: number, dim: number, alpha?: number): void;

  /**
   * Causal self-attention for one sequence with grouped-query heads.
   * q[T, nHeads, headDim], k/v[S, nKv, headDim] where the T queries are the
   * last T of the S positions (S = T for training; S = past + T with a KV cache).
   * Query t (absolute position p = S-T+t) attends to keys 0..p, or with a
   * sliding window W > 0 to the last W of them, keys j with p-W < j <= p
   * (Hugging Face's sliding_window: Mistral, Gemma 3's local layers, Qwen2);
   * window 0 or omitted is full causal attention.
   * out[T, nHeads, headDim]; lse[nHeads, T] (log-sum-exp of the scaled scores,
   * kept for the backward pass) is written when given.
   * kvStride: elements between consecutive positions in k and v (nKv*headDim
   * when dense; larger when k/v are views into a preallocated cache).
   * bf16 (a bf16 training run): where T > 1, the two products' operands are
   * rounded to bf16 (nearest even) and summed in fp32, as bf16 autocast's
   * attention matmuls are: q and k for the scores, the unnormalised
   * probabilities exp(s - max) and v for the output. The softmax, its sums and
   * lse stay fp32. Decode (T = 1) is fp32 whatever bf16 says.
   */
  attentionForward(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    out: Float32Array,
    lse: Float32Array | null,
    T: number,
    S: number,
    nHeads: number,
    nKv: number,
    headDim: number,
    scale: number,
    kvStride: number,
    window?: number,
    bf16?: boolean,
  ): void;

  /**
   * Backward of attentionForward with S = T (training) and the same window.
   * Writes dq, dk, dv (overwritten). Needs the forward's out and lse.
   * bf16: the five products' operands rounded to bf16 with fp32 sums (q, k for
   * the recomputed scores; dOut, v for dP; P, dOut for dv; dS, k for dq; dS, q
   * for dk); P, dS and rowsum(dOut∘out) are computed in fp32 first.
   */
  attentionBackward(
    dOut: Float32Array,
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    out: Float32Array,
    lse: Float32Array,
    dq: Float32Array,
    dk: Float32Array,
    dv: Float32Array,
    T: number,
    nHeads: number,
    nKv: number,
    headDim: number,
    scale: number,
    window?: number,
    bf16?: boolean,
  ): void;

  /**
   * Softmax cross-entropy over rows of logits[rows, vocab] against targets[rows]
   * (a target < 0 is ignored). Returns the summed loss over counted rows.
   * When dLogits is given it receives gradScale * (softmax - onehot) for counted
   * rows and 0 for ignored rows; dLogits may alias logits (in place).
   */
  crossEntropy(
    logits: Float32Array,
    targets: Int32Array,
    rows: number,
    vocab: number,
    dLogits: Float32Array | null,
    gradScale: number,
  ): number;

  /**
   * One AdamW step (decoupled weight decay, PyTorch semantics) on n parameters:
   * m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g²; p -= lr*wd*p;
   * p -= lr * (m/(1-b1^step)) / (sqrt(v/(1-b2^step)) + eps).
   */
  adamw(
    param: Float32Array,
    grad: Float32Array,
    m: Float32Array,
    v: Float32Array,
    n: number,
    lr: number,
    beta1: number,
    beta2: number,
    eps: number,
    weightDecay: number,
    step: number,
  ): void;
}

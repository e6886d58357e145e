// The functions native/src/wasm_main.cc exports from the WebAssembly kernels,
// as portable-wasm.ts calls them: every array is a byte offset into the
// module's linear memory, every flag a 0/1 number.

export interface WasmExports {
  memory: { buffer: ArrayBuffer };
  svc_io(bytes: number): number;
  matmul(
    a: number,
    b: number,
    c: number,
    m: number,
    n: number,
    k: number,
    ta: number,
    tb: number,
    acc: number,
    alpha: number,
  ): void;
  matmul_low_rank(
    a: number,
    b: number,
    c: number,
    m: number,
    n: number,
    k: number,
    tb: number,
    a2: number,
    b2: number,
    k2: number,
    tb2: number,
    alpha2: number,
    acc: number,
  ): void;
  low_rank_backward(
    dy: number,
    xa: number,
    b: number,
    dB: number,
    dxa: number,
    n: number,
    out: number,
    r: number,
    alpha: number,
    ldx: number,
  ): void;
  matmul_quant(
    format: number,
    x: number,
    w: number,
    scales: number,
    y: number,
    m: number,
    n: number,
    k: number,
    acc: number,
    alpha: number,
  ): void;
  /** Absent from modules built before it existed (the JS kernel stands in). */
  matmul_quant_train?(
    format: number,
    x: number,
    w: number,
    scales: number,
    y: number,
    m: number,
    n: number,
    k: number,
    transW: number,
    acc: number,
    alpha: number,
  ): void;
  rmsnorm_forward(
    x: number,
    w: number,
    y: number,
    rstd: number,
    rows: number,
    dim: number,
    eps: number,
  ): void;
  rmsnorm_backward(
    dy: number,
    x: number,
    w: number,
    rstd: number,
    dx: number,
    dw: number,
    rows: number,
    dim: number,
  ): void;
  rope(
    x: number,
    cos: number,
    sin: number,
    pos: number,
    T: number,
    nHeads: number,
    headDim: number,
    inverse: number,
    rotaryDim: number,
  ): void;
  swiglu_forward(gate: number, up: number, out: number, n: number): void;
  swiglu_backward(dOut: number, gate: number, up: number, dGate: number, dUp: number, n: number): void;
  geglu_forward(gate: number, up: number, out: number, n: number): void;
  geglu_backward(dOut: number, gate: number, up: number, dGate: number, dUp: number, n: number): void;
  add_bias(y: number, bias: number, rows: number, dim: number, alpha: number): void;
  attention_forward(
    q: number,
    k: number,
    v: number,
    out: number,
    lse: number,
    T: number,
    S: number,
    nHeads: number,
    nKv: number,
    headDim: number,
    scale: number,
    kvStride: number,
    window: number,
    bf16: number,
  ): void;
  attention_backward(
    dOut: number,
    q: number,
    k: number,
    v: number,
    out: number,
    lse: number,
    dq: number,
    dk: number,
    dv: number,
    T: number,
    nHeads: number,
    nKv: number,
    headDim: number,
    scale: number,
    window: number,
    bf16: number,
  ): void;
  cross_entropy(
    logits: number,
    targets: number,
    rows: number,
    vocab: number,
    dLogits: number,
    gradScale: number,
  ): number;
  adamw(
    p: number,
    g: number,
    m: number,
    v: number,
    n: number,
    lr: number,
    beta1: number,
    beta2: number,
    eps: number,
    wd: number,
    bc1: number,
    bc2: number,
  ): void;
}

// The portable kernels compiled to WebAssembly SIMD (native/src/wasm_main.cc,
// built by scripts/build-native.mjs when clang and wasm-ld exist). Each call
// copies its inputs into the module's linear memory, runs there, and copies the
// outputs back; arguments are checked by the caller (validate.ts).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { addLowRankTerm } from "./low-rank-term.js";
import { jsKernels } from "./portable-js.js";
import { type Kernels, QUANT_FORMAT_CODES, type QuantMatrix } from "./types.js";
import type { WasmExports } from "./wasm-exports.js";

export const defaultWasmPath = fileURLToPath(
  new URL("../../../native/build/wasm/svc_kernels.wasm", import.meta.url),
);

// The slice of the WebAssembly JS API used here (this project's TypeScript libs
// carry no DOM or WebAssembly declarations).
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}
const WebAssemblyApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

type Buf = Float32Array | Int32Array;

/** One argument: the array (or null), how many elements the kernel uses, whether to copy it in. */
type Slot = [Buf | null, number, boolean];

/** The WebAssembly kernels; throws when the module is missing or this runtime lacks SIMD. */
export function loadWasmKernels(path = defaultWasmPath): Kernels {
  const bytes = readFileSync(path);
  const instance = new WebAssemblyApi.Instance(new WebAssemblyApi.Module(bytes), {});
  const w = instance.exports as unknown as WasmExports;

  // Lays the slots out in one region of linear memory and copies the inputs in.
  function stage(slots: Slot[]): number[] {
    const offsets: number[] = [];
    let total = 0;
    for (const [arr, len] of slots) {
      offsets.push(total);
      if (arr) total += (len * 4 + 63) & ~63;
    }
    const base = w.svc_io(total);
    const heapF = new Float32Array(w.memory.buffer);
    const heapI = new Int32Array(w.memory.buffer);
    return slots.map(([arr, len, copyIn], i) => {
      if (!arr) return 0;
      const ptr = base + offsets[i];
      if (copyIn) (arr instanceof Int32Array ? heapI : heapF).set(arr.subarray(0, len), ptr / 4);
      return ptr;
    });
  }

  // A QuantMatrix's data and scales staged as bytes (they are Uint16/Int8/Uint8/Float32 arrays),
  // with x [m, xCols] and y [m, yCols]; returns the pointers of x, data, scales and y.
  function stageQuant(
    x: Float32Array,
    wq: QuantMatrix,
    y: Float32Array,
    m: number,
    xCols: number,
    yCols: number,
    acc: boolean,
  ) {
    const { rows: n, cols: k } = wq;
    const dataBytes = wq.format === "q4_0" ? (n * k) / 2 : wq.format === "int8" ? n * k : 2 * n * k;
    const scaleBytes = wq.format === "q4_0" ? (n * k) / 16 : wq.format === "int8" ? 4 * n : 0;
    const parts: [ArrayBufferView | null, number, boolean][] = [
      [x, 4 * m * xCols, true],
      [wq.data, dataBytes, true],
      [wq.scales, scaleBytes, true],
      [y, 4 * m * yCols, acc],
    ];
    const offsets: number[] = [];
    let total = 0;
    for (const [, bytes] of parts) {
      offsets.push(total);
      total += (bytes + 63) & ~63;
    }
    const base = w.svc_io(total);
    const heap = new Uint8Array(w.memory.buffer);
    return parts.map(([arr, bytes, copyIn], i) => {
      const ptr = base + offsets[i];
      if (arr && copyIn) heap.set(new Uint8Array(arr.buffer, arr.byteOffset, bytes), ptr);
      return ptr;
    });
  }

  function matmulQuant(
    x: Float32Array,
    wq: QuantMatrix,
    y: Float32Array,
    m: number,
    acc: boolean,
    alpha: number,
  ) {
    const { rows: n, cols: k } = wq;
    const ptrs = stageQuant(x, wq, y, m, k, n, acc);
    w.matmul_quant(QUANT_FORMAT_CODES[wq.format], ptrs[0], ptrs[1], ptrs[2], ptrs[3], m, n, k, +acc, alpha);
    unstage(y, ptrs[3], m * n);
  }

  function matmulQuantTrain(
    x: Float32Array,
    wq: QuantMatrix,
    y: Float32Array,
    m: number,
    transW: boolean,
    acc: boolean,
    alpha: number,
  ) {
    const train = w.matmul_quant_train;
    if (!train) return jsKernels.matmulQuantTrain(x, wq, y, m, transW, acc, alpha);
    const { rows: n, cols: k } = wq;
    const [xCols, yCols] = transW ? [n, k] : [k, n];
    const ptrs = stageQuant(x, wq, y, m, xCols, yCols, acc);
    train(QUANT_FORMAT_CODES[wq.format], ptrs[0], ptrs[1], ptrs[2], ptrs[3], m, n, k, +transW, +acc, alpha);
    unstage(y, ptrs[3], m * yCols);
  }

  // Copies len floats at ptr back out (after the call: memory may have grown).
  function unstage(dst: Float32Array | null, ptr: number, len: number): void {
    if (dst) dst.set(new Float32Array(w.memory.buffer, ptr, len));
  }

  // A gated activation (SwiGLU, GeGLU) and its backward, staged the same way for either export.
  function gatedForward(
    op: WasmExports["swiglu_forward"],
    gate: Float32Array,
    up: Float32Array,
    out: Float32Array,
    n: number,
  ): void {
    const [pg, pu, po] = stage([
      [gate, n, true],
      [up, n, true],
      [out, n, false],
    ]);
    op(pg, pu, po, n);
    unstage(out, po, n);
  }

  function gatedBackward(
    op: WasmExports["swiglu_backward"],
    dOut: Float32Array,
    gate: Float32Array,
    up: Float32Array,
    dGate: Float32Array,
    dUp: Float32Array,
    n: number,
  ): void {
    const [pd, pg, pu, pdg, pdu] = stage([
      [dOut, n, true],
      [gate, n, true],
      [up, n, true],
      [dGate, n, false],
      [dUp, n, false],
    ]);
    op(pd, pg, pu, pdg, pdu, n);
    unstage(dGate, pdg, n);
    unstage(dUp, pdu, n);
  }

  const kernels: Kernels = {
    name: "portable",
    isa: "wasm-simd",
    matmul(a, b, c, m, n, k, transA, transB, accumulate, alpha = 1) {
      const [pa, pb, pc] = stage([
        [a, m * k, true],
        [b, k * n, true],
        [c, m * n, accumulate],
      ]);
      w.matmul(pa, pb, pc, m, n, k, +transA, +transB, +accumulate, alpha);
      unstage(c, pc, m * n);
    },
    matmulLowRank(a, b, c, m, n, k, transB, a2, b2, k2, transB2, alpha2, accumulate) {
      const [pa, pb, pc, pa2, pb2] = stage([
        [a, m * k, true],
        [b, k * n, true],
        [c, m * n, accumulate],
        [a2, m * k2, true],
        [b2, k2 * n, true],
      ]);
      w.matmul_low_rank(pa, pb, pc, m, n, k, +transB, pa2, pb2, k2, +transB2, alpha2, +accumulate);
      unstage(c, pc, m * n);
    },
    lowRankBackward(dy, xa, b, dB, dxa, n, out, r, alpha, ldDxa) {
      const dxaLen = n > 0 ? (n - 1) * ldDxa + r : 0;
      const [pdy, pxa, pb, pdB, pdxa] = stage([
        [dy, n * out, true],
        [xa, n * r, true],
        [b, out * r, true],
        [dB, out * r, true],
        [dxa, dxaLen, ldDxa > r], // columns past r are kept: copy them in
      ]);
      w.low_rank_backward(pdy, pxa, pb, pdB, pdxa, n, out, r, alpha, ldDxa);
      unstage(dB, pdB, out * r);
      unstage(dxa, pdxa, dxaLen);
    },
    matmulQuant: (x, wq, y, m, accumulate, alpha = 1) => matmulQuant(x, wq, y, m, accumulate, alpha),
    matmulQuantTrain(x, wq, y, m, transW, accumulate, alpha = 1, lowRank) {
      matmulQuantTrain(x, wq, y, m, transW, accumulate, alpha);
      addLowRankTerm(kernels, y, m, wq, transW, lowRank);
    },
    rmsnormForward(x, weight, y, rstd, rows, dim, eps) {
      const [px, pw, py, pr] = stage([
        [x, rows * dim, true],
        [weight, dim, true],
        [y, rows * dim, false],
        [rstd, rows, false],
      ]);
      w.rmsnorm_forward(px, pw, py, pr, rows, dim, eps);
      unstage(y, py, rows * dim);
      unstage(rstd, pr, rows);
    },
    rmsnormBackward(dy, x, weight, rstd, dx, dWeight, rows, dim) {
      const n = rows * dim;
      const [pdy, px, pw, pr, pdx, pdw] = stage([
        [dy, n, true],
        [x, n, true],
        [weight, dim, true],
        [rstd, rows, true],
        [dx, n, false],
        [dWeight, dim, true],
      ]);
      w.rmsnorm_backward(pdy, px, pw, pr, pdx, pdw, rows, dim);
      unstage(dx, pdx, n);
      unstage(dWeight, pdw, dim);
    },
    rope(x, cos, sin, positions, T, nHeads, headDim, inverse, rotaryDim = headDim) {
      const half = rotaryDim / 2;
      let rows = 0;
      for (let t = 0; t < T; t++) rows = Math.max(rows, positions[t] + 1);
      const n = T * nHeads * headDim;
      const [px, pc, ps, pp] = stage([
        [x, n, true],
        [cos, rows * half, true],
        [sin, rows * half, true],
        [positions, T, true],
      ]);
      w.rope(px, pc, ps, pp, T, nHeads, headDim, +inverse, rotaryDim);
      unstage(x, px, n);
    },
    swigluForward: (gate, up, out, n) => gatedForward(w.swiglu_forward, gate, up, out, n),
    swigluBackward: (dOut, gate, up, dGate, dUp, n) =>
      gatedBackward(w.swiglu_backward, dOut, gate, up, dGate, dUp, n),
    gegluForward: (gate, up, out, n) => gatedForward(w.geglu_forward, gate, up, out, n),
    gegluBackward: (dOut, gate, up, dGate, dUp, n) =>
      gatedBackward(w.geglu_backward, dOut, gate, up, dGate, dUp, n),
    addBias(y, bias, rows, dim, alpha = 1) {
      const [py, pb] = stage([
        [y, rows * dim, true],
        [bias, dim, true],
      ]);
      w.add_bias(py, pb, rows, dim, alpha);
      unstage(y, py, rows * dim);
    },
    attentionForward(
      q,
      k,
      v,
      out,
      lse,
      T,
      S,
      nHeads,
      nKv,
      headDim,
      scale,
      kvStride,
      window = 0,
      bf16 = false,
    ) {
      // With a window, keys before the first query's window are never read: copy
      // only the rest, as a cache that starts there (same result, less to stage).
      const skip = window > 0 ? Math.max(0, S - T - window + 1) : 0;
      const s = S - skip;
      const qn = T * nHeads * headDim;
      const kvn = s === 0 ? 0 : (s - 1) * kvStride + nKv * headDim;
      const [pq, pk, pv, po, pl] = stage([
        [q, qn, true],
        [k.subarray(skip * kvStride), kvn, true],
        [v.subarray(skip * kvStride), kvn, true],
        [out, qn, false],
        [lse, nHeads * T, false],
      ]);
      w.attention_forward(
        pq,
        pk,
        pv,
        po,
        pl,
        T,
        s,
        nHeads,
        nKv,
        headDim,
        scale,
        kvStride,
        window,
        bf16 ? 1 : 0,
      );
      unstage(out, po, qn);
      unstage(lse, pl, nHeads * T);
    },
    attentionBackward(
      dOut,
      q,
      k,
      v,
      out,
      lse,
      dq,
      dk,
      dv,
      T,
      nHeads,
      nKv,
      headDim,
      scale,
      window = 0,
      bf16 = false,
    ) {
      const qn = T * nHeads * headDim;
      const kvn = T * nKv * headDim;
      const [pdo, pq, pk, pv, po, pl, pdq, pdk, pdv] = stage([
        [dOut, qn, true],
        [q, qn, true],
        [k, kvn, true],
        [v, kvn, true],
        [out, qn, true],
        [lse, nHeads * T, true],
        [dq, qn, false],
        [dk, kvn, false],
        [dv, kvn, false],
      ]);
      w.attention_backward(
        pdo,
        pq,
        pk,
        pv,
        po,
        pl,
        pdq,
        pdk,
        pdv,
        T,
        nHeads,
        nKv,
        headDim,
        scale,
        window,
        bf16 ? 1 : 0,
      );
      unstage(dq, pdq, qn);
      unstage(dk, pdk, kvn);
      unstage(dv, pdv, kvn);
    },
    crossEntropy(logits, targets, rows, vocab, dLogits, gradScale) {
      const n = rows * vocab;
      // In place (dLogits aliasing logits) works on the one staged copy.
      const inPlace =
        dLogits !== null && dLogits.buffer === logits.buffer && dLogits.byteOffset === logits.byteOffset;
      const [pl, pt, pd] = stage([
        [logits, n, true],
        [targets, rows, true],
        [inPlace ? null : dLogits, n, false],
      ]);
      const loss = w.cross_entropy(pl, pt, rows, vocab, inPlace ? pl : pd, gradScale);
      unstage(dLogits, inPlace ? pl : pd, dLogits ? n : 0);
      return loss;
    },
    adamw(param, grad, m, v, n, lr, beta1, beta2, eps, weightDecay, step) {
      const [pp, pg, pm, pv] = stage([
        [param, n, true],
        [grad, n, true],
        [m, n, true],
        [v, n, true],
      ]);
      w.adamw(pp, pg, pm, pv, n, lr, beta1, beta2, eps, weightDecay, 1 - beta1 ** step, 1 - beta2 ** step);
      unstage(param, pp, n);
      unstage(m, pm, n);
      unstage(v, pv, n);
    },
  };
  return kernels;
}

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { conformanceFailure, kernelCases } from "../testing/kernels/conformance.js";
import { needs } from "../testing/missing-piece.js";
import { loadPortableKernels } from "./portable.js";
import type { Kernels } from "./types.js";

let wasmError = "";
try {
  loadPortableKernels({ isa: "wasm-simd" });
} catch (err) {
  wasmError = (err as Error).message;
}

for (const isa of ["wasm-simd", "js"]) {
  // The wasm module needs clang at build time; without it only the JS path exists.
  const skip =
    isa === "wasm-simd" && wasmError
      ? needs("WebAssembly kernels", `wasm module not built: ${wasmError}`)
      : false;
  describe(`portable ${isa} kernels match the reference`, { skip }, () => {
    let instance: Kernels | undefined;
    const kern = () => {
      instance ??= loadPortableKernels({ isa });
      return instance;
    };
    test("reports its ISA", () => {
      assert.equal(kern().name, "portable");
      assert.equal(kern().isa, isa);
    });
    for (const c of kernelCases()) {
      test(c.name, () => {
        assert.equal(conformanceFailure(kern(), c), null, isa);
      });
    }
  });

  describe(`portable ${isa} kernels validate their arguments`, { skip }, () => {
    const k = (): Kernels => loadPortableKernels({ isa });
    const f = (n: number) => new Float32Array(n);
    test("short arrays, wrong types and bad shapes name the argument", () => {
      assert.throws(() => k().matmul(f(6), f(5), f(9), 3, 3, 2, false, false, false), {
        name: "RangeError",
        message: "matmul: argument 'b' has 5 elements but the shapes need 6",
      });
      assert.throws(() => k().matmulLowRank(f(6), f(6), f(9), 3, 3, 2, true, f(6), f(5), 2, true, 1, false), {
        name: "RangeError",
        message: "matmulLowRank: argument 'b2' has 5 elements but the shapes need 6",
      });
      assert.throws(() => k().lowRankBackward(f(12), f(6), f(8), f(8), f(11), 3, 4, 2, 1, 5), {
        name: "RangeError",
        message: "lowRankBackward: argument 'dxa' has 11 elements but the shapes need 12",
      });
      assert.throws(() => k().lowRankBackward(f(12), f(6), f(8), f(8), f(12), 3, 4, 2, 1, 1), {
        name: "RangeError",
        message: "lowRankBackward: argument 'ldDxa' must be at least r (2), got 1",
      });
      assert.throws(
        () =>
          k().adamw(f(4), [0, 0, 0, 0] as unknown as Float32Array, f(4), f(4), 4, 1, 0.9, 0.9, 1e-8, 0, 1),
        {
          name: "TypeError",
          message: "adamw: argument 'grad' must be a Float32Array",
        },
      );
      assert.throws(() => k().crossEntropy(f(8), Int32Array.of(1, 4), 2, 4, null, 1), {
        name: "RangeError",
        message: "crossEntropy: argument 'targets' holds 4, not below vocab (4)",
      });
      assert.throws(
        () => k().attentionForward(f(8), f(8), f(8), f(8), null, 1, 1, 3, 2, 8, 1, 16),
        /'nKv' must divide nHeads/,
      );
      assert.throws(
        () =>
          k().attentionForward(f(8), f(8), f(8), f(8), null, 2, 2, 1, 1, 4, 1, 4, 0, 1 as unknown as boolean),
        { name: "TypeError", message: "attentionForward: argument 'bf16' must be a boolean" },
      );
      const w8 = { format: "int8", rows: 2, cols: 2, data: new Int8Array(4), scales: f(2) } as const;
      assert.throws(
        () => k().matmulQuantTrain(f(4), w8, f(4), 2, false, false, 1, undefined, 1 as unknown as boolean),
        {
          name: "TypeError",
          message: "matmulQuantTrain: argument 'bf16' must be a boolean",
        },
      );
      assert.throws(
        () => k().rope(f(8), f(8), f(8), Int32Array.of(-1), 1, 1, 8, false),
        /'positions' holds -1/,
      );
    });
    test("a view's byteOffset is honoured, and memory around it is untouched", () => {
      const buf = new Float32Array(10).fill(7);
      k().matmul(
        Float32Array.of(1, 2),
        Float32Array.of(3, 4),
        buf.subarray(3, 7),
        2,
        2,
        1,
        false,
        false,
        false,
      );
      assert.deepEqual([...buf], [7, 7, 7, 3, 4, 6, 8, 7, 7, 7]);
    });
  });
}

test("an unknown portable ISA is an error", () => {
  assert.throws(() => loadPortableKernels({ isa: "avx512" }), /"avx512" is not one of wasm-simd, js/);
});

test("a missing wasm module falls back to JS, or errors when wasm is asked for", () => {
  assert.equal(loadPortableKernels({ wasmPath: "/nonexistent/svc_kernels.wasm" }).isa, "js");
  assert.throws(
    () => loadPortableKernels({ isa: "wasm-simd", wasmPath: "/nonexistent/svc_kernels.wasm" }),
    /WebAssembly module is unavailable/,
  );
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { needs } from "../testing/missing-piece.js";
import { loadNativeKernels, type NativeKernels } from "./native.js";

let native: NativeKernels | undefined;
try {
  native = loadNativeKernels({ isa: "baseline" });
} catch {}
const skip = native ? false : needs("native kernels", "native addon not built");
const isas = native ? native.supportedIsas : [];

const wave = (n: number, f: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * f));

// [m, n, k]: n past a column block (3072 columns on AVX-512, 1536 on AVX2) and
// k past one pass (768); a ragged last panel; few rows and few columns, whose
// paths read b itself.
const shapes: [number, number, number][] = [
  [40, 3100, 1000],
  [200, 70, 33],
  [5, 70, 33],
  [100, 8, 50],
];

describe("weights packed ahead (packB)", { skip }, () => {
  for (const isa of isas) {
    test(`${isa}: products with b packed ahead hold the same bits as with b`, () => {
      const kern = loadNativeKernels({ isa });
      for (const [m, n, k] of shapes)
        for (const transB of [true, false]) {
          const a = wave(m * k, 0.37);
          const b = wave(k * n, 0.11);
          const packed = kern.packB(b, k, n, transB);
          const want = new Float32Array(m * n);
          const got = new Float32Array(m * n).fill(Number.NaN);
          kern.matmul(a, b, want, m, n, k, false, transB, false, 0.5);
          kern.matmul(a, b, got, m, n, k, false, transB, false, 0.5, packed);
          assert.deepEqual(got, want, `matmul ${m}x${n}x${k}${transB ? " tB" : ""}`);
          const a2 = wave(m * 16, 0.5);
          const b2 = wave(n * 16, 0.3);
          kern.matmulLowRank(a, b, want, m, n, k, transB, a2, b2, 16, true, 2, true);
          kern.matmulLowRank(a, b, got, m, n, k, transB, a2, b2, 16, true, 2, true, packed);
          assert.deepEqual(got, want, `matmulLowRank ${m}x${n}x${k}${transB ? " tB" : ""}`);
        }
    });
  }

  test("k = 0 packs nothing; a short pack is a RangeError naming it", () => {
    const kern = native as NativeKernels;
    assert.equal(kern.packB(new Float32Array(0), 0, 5, true).length, 0);
    const c = new Float32Array(6).fill(1);
    kern.matmul(
      new Float32Array(0),
      new Float32Array(0),
      c,
      2,
      3,
      0,
      false,
      true,
      false,
      1,
      new Float32Array(0),
    );
    assert.deepEqual([...c], [0, 0, 0, 0, 0, 0]);
    const b = wave(40 * 50, 0.2);
    const packed = kern.packB(b, 40, 50, false);
    assert.ok(packed.length >= 40 * 50);
    assert.throws(
      () =>
        kern.matmul(
          wave(64 * 40, 0.1),
          b,
          new Float32Array(64 * 50),
          64,
          50,
          40,
          false,
          false,
          false,
          1,
          packed.subarray(1),
        ),
      { name: "RangeError", message: /matmul: argument 'bPacked' has \d+ elements but the shapes need \d+/ },
    );
  });
});

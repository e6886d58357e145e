import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { conformanceFailure, kernelCases } from "../testing/kernels/conformance.js";
import { randomSource } from "../testing/kernels/conformance-inputs.js";
import { randomQuantMatrix } from "../testing/kernels/conformance-quant.js";
import { needs } from "../testing/missing-piece.js";
import { bf16Value } from "./bf16-rounding.js";
import { loadNativeKernels, type NativeKernels } from "./native.js";

/** The CPU's feature flags (Linux; elsewhere none, and no unit may claim bf16 dot products). */
function cpuFlags(): string[] {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8").match(/^flags\s*:(.*)$/m);
    return line ? line[1].trim().split(/\s+/) : [];
  } catch {
    return [];
  }
}

let native: NativeKernels | undefined;
let loadError = "";
try {
  native = loadNativeKernels({ isa: "baseline" });
} catch (err) {
  loadError = (err as Error).message;
}
// Without a C++ toolchain the addon is absent; the portable tests cover that machine.
const skip = native ? false : needs("native kernels", `native addon not built: ${loadError}`);
const isas = native ? native.supportedIsas : [];

test("lists the amx unit exactly where the CPU has AMX-BF16 tiles and AVX512_BF16", { skip }, () => {
  // Linux grants the tiles to any process that asks from 5.16; this kernel is newer.
  const flags = cpuFlags();
  const hasAmx = ["amx_bf16", "amx_tile", "avx512_bf16", "avx512_vnni"].every((f) => flags.includes(f));
  assert.equal(isas.includes("amx"), hasAmx, `flags ${hasAmx}, units ${isas.join(", ")}`);
  if (hasAmx) assert.equal(isas[0], "amx", "the best unit is listed first");
});

describe("native kernels match the reference", { skip }, () => {
  for (const isa of isas) {
    describe(isa, () => {
      const kern = loadNativeKernels({ isa });
      test("reports its ISA", () => {
        assert.equal(kern.name, "native");
        assert.equal(kern.isa, isa);
        assert.ok(kern.threads >= 1);
      });
      test("reports bf16 dot products exactly where the CPU has AVX512_BF16 and the unit is AVX-512 or AMX", () => {
        const cpuHasBf16 = cpuFlags().includes("avx512_bf16");
        assert.equal(
          kern.bf16Dot,
          cpuHasBf16 && (isa.startsWith("avx512") || isa === "amx"),
          `${isa}, avx512_bf16 ${cpuHasBf16}`,
        );
      });
      test("a zero low-rank term leaves matmulQuantTrain's sums bit for bit as without one", () => {
        // DPO's first step compares a policy whose LoRA B is zero with the reference
        // (no branch) and expects rewards of exactly 0.
        const rand = randomSource(7);
        const m = 100,
          n = 96,
          k = 200,
          r = 8;
        const w = randomQuantMatrix(rand, "bf16", n, k);
        for (const transW of [false, true])
          for (const accumulate of [false, true]) {
            const cols = transW ? k : n;
            const x = Float32Array.from({ length: m * (transW ? n : k) }, rand);
            const y0 = Float32Array.from({ length: m * cols }, rand);
            const plain = y0.slice(),
              withTerm = y0.slice();
            kern.matmulQuantTrain(x, w, plain, m, transW, accumulate, 1);
            const term = {
              a: Float32Array.from({ length: m * r }, rand),
              b: new Float32Array(r * cols),
              k: r,
              transB: false,
              alpha: 2,
            };
            kern.matmulQuantTrain(x, w, withTerm, m, transW, accumulate, 1, term);
            assert.deepEqual(withTerm, plain, `${isa} transW ${transW} accumulate ${accumulate}`);
          }
      });
      test("a bf16 run's int8 products: bf16 dot products where the unit has them (not amx), else the fp32 product", () => {
        const rand = randomSource(11);
        const m = 40,
          n = 70,
          k = 130;
        const w = randomQuantMatrix(rand, "int8", n, k);
        if (w.format !== "int8") throw new Error("an int8 matrix");
        const rounds = kern.bf16Dot && isa !== "amx";
        for (const transW of [false, true]) {
          const inner = transW ? n : k,
            cols = transW ? k : n;
          const x = Float32Array.from({ length: m * inner }, rand);
          const fp32 = new Float32Array(m * cols),
            bf16 = new Float32Array(m * cols);
          kern.matmulQuantTrain(x, w, fp32, m, transW, false, 1);
          kern.matmulQuantTrain(x, w, bf16, m, transW, false, 1, undefined, true);
          if (!rounds) {
            assert.deepEqual(bf16, fp32, `${isa} transW ${transW}`);
            continue;
          }
          // the codes exact, the row scales in fp32: forward on y's columns, backward on dy's before rounding
          let worst = 0,
            moved = 0;
          for (let i = 0; i < m; i++)
            for (let j = 0; j < cols; j++) {
              let sum = 0,
                mag = 0;
              for (let p = 0; p < inner; p++) {
                const [r, c] = transW ? [p, j] : [j, p];
                const xv = x[i * inner + p];
                const t = transW
                  ? bf16Value(Math.fround(xv * w.scales[r])) * w.data[r * k + c]
                  : bf16Value(xv) * w.data[r * k + c];
                sum += t;
                mag += Math.abs(t);
              }
              const want = transW ? sum : sum * w.scales[j];
              const scaleMag = transW ? mag : mag * w.scales[j];
              worst = Math.max(worst, Math.abs(bf16[i * cols + j] - want) / (scaleMag * 1e-6 + 1e-30));
              moved = Math.max(moved, Math.abs(bf16[i * cols + j] - fp32[i * cols + j]) / (scaleMag + 1e-30));
            }
          assert.ok(
            worst <= 1,
            `${isa} transW ${transW}: off the rounded product by ${worst}e-6 of Σ|terms|`,
          );
          assert.ok(moved > 1e-4, `${isa} transW ${transW}: the bf16 product is the fp32 one (${moved})`);
        }
      });
      for (const c of kernelCases()) {
        test(c.name, () => {
          assert.equal(conformanceFailure(kern, c), null, isa);
        });
      }
    });
  }
});

describe("native kernels validate their arguments", { skip }, () => {
  const k = () => native as NativeKernels;
  const f = (n: number) => new Float32Array(n);

  test("a short array is a RangeError naming it", () => {
    assert.throws(() => k().matmul(f(6), f(5), f(9), 3, 3, 2, false, false, false), {
      name: "RangeError",
      message: /matmul: argument 'b' has 5 elements but the shapes need 6/,
    });
    assert.throws(() => k().swigluForward(f(4), f(4), f(3), 4), {
      name: "RangeError",
      message: /'out'/,
    });
    assert.throws(() => k().matmulLowRank(f(6), f(6), f(9), 3, 3, 2, true, f(5), f(6), 2, true, 1, false), {
      name: "RangeError",
      message: /matmulLowRank: argument 'a2' has 5 elements but the shapes need 6/,
    });
    // dxa is 3 rows 5 apart: (3 - 1)·5 + 2 floats
    assert.throws(() => k().lowRankBackward(f(12), f(6), f(8), f(8), f(11), 3, 4, 2, 1, 5), {
      name: "RangeError",
      message: /lowRankBackward: argument 'dxa' has 11 elements but the shapes need 12/,
    });
    assert.throws(() => k().lowRankBackward(f(12), f(6), f(8), f(8), f(12), 3, 4, 2, 1, 1), {
      name: "RangeError",
      message: /lowRankBackward: argument 'ldDxa' must be at least r \(2\), got 1/,
    });
  });

  test("a wrong type is a TypeError naming it", () => {
    assert.throws(
      () => k().matmul(f(4), [1, 2, 3, 4] as unknown as Float32Array, f(4), 2, 2, 1, false, false, false),
      {
        name: "TypeError",
        message: /argument 'b' must be a Float32Array/,
      },
    );
    assert.throws(() => k().crossEntropy(f(8), new Float32Array(2) as unknown as Int32Array, 2, 4, null, 1), {
      name: "TypeError",
      message: /'targets' must be an Int32Array/,
    });
    assert.throws(() => k().matmul(f(4), f(4), f(4), 2, 2, 1, 0 as unknown as boolean, false, false), {
      name: "TypeError",
      message: /'transA' must be a boolean/,
    });
  });

  test("bad shapes and indices are RangeErrors", () => {
    assert.throws(
      () => k().matmul(f(4), f(4), f(4), -1, 2, 1, false, false, false),
      /'m' must be a non-negative integer/,
    );
    assert.throws(
      () => k().crossEntropy(f(8), Int32Array.of(1, 4), 2, 4, null, 1),
      /'targets' holds 4, not below vocab/,
    );
    assert.throws(
      () => k().rope(f(8), f(8), f(8), Int32Array.of(2), 1, 1, 8, false),
      /'positions' holds 2, outside the cos\/sin table of 2 rows/,
    );
    assert.throws(
      () => k().attentionForward(f(8), f(8), f(8), f(8), null, 1, 1, 3, 2, 8, 1, 16),
      /'nKv' must divide nHeads/,
    );
    assert.throws(
      () => k().attentionForward(f(8), f(8), f(8), f(8), null, 2, 1, 1, 1, 4, 1, 4),
      /'T' \(2\) must not exceed S/,
    );
    const notFlag = 1 as unknown as boolean;
    const w8 = { format: "int8", rows: 2, cols: 2, data: new Int8Array(4), scales: f(2) } as const;
    assert.throws(
      () => k().matmulQuantTrain(f(4), w8, f(4), 2, false, false, 1, undefined, notFlag),
      /matmulQuantTrain: argument 'bf16' must be a boolean/,
    );
    assert.throws(
      () => k().attentionForward(f(8), f(8), f(8), f(8), null, 1, 1, 1, 1, 8, 1, 8, 0, notFlag),
      /attentionForward: argument 'bf16' must be a boolean/,
    );
    assert.throws(
      () =>
        k().attentionBackward(
          f(8),
          f(8),
          f(8),
          f(8),
          f(8),
          f(1),
          f(8),
          f(8),
          f(8),
          1,
          1,
          1,
          8,
          1,
          0,
          notFlag,
        ),
      /attentionBackward: argument 'bf16' must be a boolean/,
    );
  });

  test("a view's byteOffset is honoured, and memory around it is untouched", () => {
    const buf = new Float32Array(10).fill(7);
    const c = buf.subarray(3, 7);
    k().matmul(Float32Array.of(1, 2), Float32Array.of(3, 4), c, 2, 2, 1, false, false, false);
    assert.deepEqual([...buf], [7, 7, 7, 3, 4, 6, 8, 7, 7, 7]);
  });
});

describe("native zeroedFloats and streamed outputs", { skip }, () => {
  test("zeroedFloats: zeroed, of its length; bad counts are RangeErrors", () => {
    const k = native as NativeKernels;
    for (const n of [0, 1, 17, 1 << 20]) {
      const a = k.zeroedFloats(n);
      assert.equal(a.length, n);
      assert.ok(a.every((x) => x === 0));
    }
    assert.throws(() => k.zeroedFloats(-1), RangeError);
    assert.throws(() => k.zeroedFloats(1.5), RangeError);
    assert.throws(() => k.zeroedFloats(Number.NaN), RangeError);
  });

  for (const isa of isas) {
    test(`${isa}: a C large enough to stream holds the same bits as a plain one`, () => {
      const kern = loadNativeKernels({ isa });
      // m·n = 2^19 + 96·16: past STREAM_C_FLOATS, one k pass, ragged edges in m and n
      const m = 1043;
      const n = 517;
      const k = 67;
      const a = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.37));
      const b = Float32Array.from({ length: n * k }, (_, i) => Math.cos(i * 0.11));
      const plain = new Float32Array(m * n).fill(Number.NaN);
      const streamed = kern.zeroedFloats(m * n).fill(Number.NaN);
      kern.matmul(a, b, plain, m, n, k, false, true, false, 0.5);
      kern.matmul(a, b, streamed, m, n, k, false, true, false, 0.5);
      assert.deepEqual(streamed, plain);
      const a2 = Float32Array.from({ length: m * 16 }, (_, i) => Math.sin(i * 0.5));
      const b2 = Float32Array.from({ length: n * 16 }, (_, i) => Math.cos(i * 0.3));
      kern.matmulLowRank(a, b, plain, m, n, k, true, a2, b2, 16, true, 2, false);
      kern.matmulLowRank(a, b, streamed, m, n, k, true, a2, b2, 16, true, 2, false);
      assert.deepEqual(streamed, plain);
    });
  }
});

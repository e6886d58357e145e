import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { needs } from "../testing/missing-piece.js";
import { loadNativeKernels } from "./native.js";
import { loadPortableKernels } from "./portable.js";
import type { Kernels, QuantMatrix } from "./types.js";

const implementations: [string, () => Kernels][] = [
  ["js", () => loadPortableKernels({ isa: "js" })],
  ["wasm-simd", () => loadPortableKernels({ isa: "wasm-simd" })],
  ["native", () => loadNativeKernels()],
];

for (const [name, load] of implementations) {
  let kern: Kernels | undefined;
  try {
    kern = load();
  } catch {}
  describe(`matmulQuant checks its arguments (${name})`, {
    skip: kern
      ? false
      : needs(name === "native" ? "native kernels" : "WebAssembly kernels", `${name} unavailable`),
  }, () => {
    const k = () => kern as Kernels;
    const int8 = (rows: number, cols: number): QuantMatrix => ({
      format: "int8",
      rows,
      cols,
      data: new Int8Array(rows * cols),
      scales: new Float32Array(rows),
    });

    test("short arrays are RangeErrors naming them", () => {
      assert.throws(() => k().matmulQuant(new Float32Array(3), int8(2, 4), new Float32Array(2), 1, false), {
        name: "RangeError",
        message: /matmulQuant: argument 'x' has 3 elements but the shapes need 4/,
      });
      const short = { ...int8(2, 4), scales: new Float32Array(1) } as QuantMatrix;
      assert.throws(() => k().matmulQuant(new Float32Array(4), short, new Float32Array(2), 1, false), {
        name: "RangeError",
        message: /'w.scales' has 1 elements but the shapes need 2/,
      });
      assert.throws(
        () => k().matmulQuant(new Float32Array(8), int8(2, 4), new Float32Array(3), 2, false),
        /'y' has 3/,
      );
    });

    test("wrong array types and formats are refused by name", () => {
      const wrong = { ...int8(2, 4), data: new Uint8Array(8) } as unknown as QuantMatrix;
      assert.throws(() => k().matmulQuant(new Float32Array(4), wrong, new Float32Array(2), 1, false), {
        name: "TypeError",
        message: /'w.data' must be an Int8Array/,
      });
      const unknown = { ...int8(2, 4), format: "q8_0" } as unknown as QuantMatrix;
      assert.throws(
        () => k().matmulQuant(new Float32Array(4), unknown, new Float32Array(2), 1, false),
        /'w.format' must be "bf16", "int8" or "q4_0", got "q8_0"/,
      );
      const q4: QuantMatrix = {
        format: "q4_0",
        rows: 1,
        cols: 40,
        data: new Uint8Array(20),
        scales: new Uint16Array(2),
      };
      assert.throws(
        () => k().matmulQuant(new Float32Array(40), q4, new Float32Array(1), 1, false),
        /'w.cols' must be a multiple of 32 for q4_0, got 40/,
      );
    });

    test("y's neighbours are untouched and accumulate adds", () => {
      const w: QuantMatrix = {
        format: "bf16",
        rows: 2,
        cols: 2,
        data: Uint16Array.of(0x3f80, 0x4000, 0x4040, 0x4080),
        scales: null,
      };
      const buf = new Float32Array(6).fill(7);
      k().matmulQuant(Float32Array.of(1, 1), w, buf.subarray(2, 4), 1, false); // rows (1, 2) and (3, 4)
      assert.deepEqual([...buf], [7, 7, 3, 7, 7, 7]);
      k().matmulQuant(Float32Array.of(1, 1), w, buf.subarray(2, 4), 1, true, 2);
      assert.deepEqual([...buf], [7, 7, 9, 21, 7, 7]);
    });

    // 8 bits cannot carry a NaN or an infinity: the integer path must not round them away.
    test("a NaN or infinity in x reaches every output, as in fp32", () => {
      const q4: QuantMatrix = {
        format: "q4_0",
        rows: 3,
        cols: 64,
        data: new Uint8Array(96).fill(0x9a),
        scales: new Uint16Array(6).fill(0x3c00),
      };
      for (const w of [int8(3, 64), q4]) {
        if (w.format === "int8") w.data.fill(3);
        for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
          const x = new Float32Array(128).fill(0.25);
          x[64 + 40] = bad;
          const y = new Float32Array(6);
          k().matmulQuant(x, w, y, 2, false);
          assert.ok(y.slice(0, 3).every(Number.isFinite), `${w.format}: row 0 is finite`);
          assert.ok(
            y.slice(3).every((v) => !Number.isFinite(v)),
            `${w.format} ${bad}: row 1 is ${[...y.slice(3)]}`,
          );
        }
      }
    });

    test("matmulQuantTrain checks x and y against the orientation, naming itself", () => {
      const w = int8(2, 4); // W [2, 4]: transW takes x [m, 2] and writes y [m, 4]
      assert.throws(() => k().matmulQuantTrain(new Float32Array(1), w, new Float32Array(4), 1, true, false), {
        name: "RangeError",
        message: /matmulQuantTrain: argument 'x' has 1 elements but the shapes need 2/,
      });
      assert.throws(() => k().matmulQuantTrain(new Float32Array(2), w, new Float32Array(3), 1, true, false), {
        name: "RangeError",
        message: /matmulQuantTrain: argument 'y' has 3 elements but the shapes need 4/,
      });
      assert.throws(
        () => k().matmulQuantTrain(new Float32Array(4), w, new Float32Array(2), 1, "no" as never, false),
        {
          name: "TypeError",
          message: /matmulQuantTrain: argument 'transW' must be a boolean/,
        },
      );
      const wrong = { ...int8(2, 4), data: new Uint8Array(8) } as unknown as QuantMatrix;
      assert.throws(
        () => k().matmulQuantTrain(new Float32Array(4), wrong, new Float32Array(2), 1, false, false),
        {
          name: "TypeError",
          message: /matmulQuantTrain: argument 'w.data' must be an Int8Array/,
        },
      );
    });

    test("matmulQuantTrain: dy·W and x·Wᵀ of a small int8 matrix, exactly", () => {
      // W = [[1, 2], [3, 4]] · 0.5 (rows scaled 0.5 and 1): [[0.5, 1], [3, 4]]
      const w: QuantMatrix = {
        format: "int8",
        rows: 2,
        cols: 2,
        data: Int8Array.of(1, 2, 3, 4),
        scales: Float32Array.of(0.5, 1),
      };
      const y = new Float32Array(2);
      k().matmulQuantTrain(Float32Array.of(1, 2), w, y, 1, true, false); // [1, 2]·W = [6.5, 9]
      assert.deepEqual([...y], [6.5, 9]);
      k().matmulQuantTrain(Float32Array.of(1, 2), w, y, 1, false, true, 2); // y += 2·[1, 2]·Wᵀ = 2·[2.5, 11]
      assert.deepEqual([...y], [11.5, 31]);
    });
  });
}

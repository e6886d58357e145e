import assert from "node:assert/strict";
import { test } from "node:test";
import { quantizeQ4_0 } from "../quant/q4.js";
import { Rng } from "../rng.js";
import { BLOCK_BYTES, decode, encode } from "./gguf-quant.js";

function values(n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: n }, () => rng.normal() * 0.05);
}

function rmsError(a: Float32Array, b: Float32Array): number {
  let e = 0;
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    e += (a[i] - b[i]) ** 2;
    s += a[i] ** 2;
  }
  return Math.sqrt(e / s);
}

test("each block format decodes to the values within its resolution", () => {
  const x = values(4096, 3);
  // relative RMS error bounds: 8 bits ~0.4%, 6 bits ~2%, 5 bits ~4%, 4 bits with a min ~8%
  const bounds = {
    F16: 1e-3,
    BF16: 8e-3,
    Q8_0: 0.01,
    Q6_K: 0.03,
    Q5_0: 0.06,
    Q4_K: 0.12,
    Q4_0: 0.15,
  } as const;
  for (const [type, bound] of Object.entries(bounds) as [keyof typeof bounds, number][]) {
    const bytes = encode(type, x);
    assert.equal(
      bytes.length,
      (x.length / (type.endsWith("16") ? 1 : type.endsWith("_K") ? 256 : 32)) * BLOCK_BYTES[type],
    );
    const error = rmsError(x, decode(type, bytes, x.length));
    assert.ok(error < bound, `${type}: relative RMS error ${error} ≥ ${bound}`);
    assert.ok(error > 0 || type.endsWith("16"));
  }
});

test("q8_0 rounds each value to the nearest step of its block's scale", () => {
  const x = Float32Array.from({ length: 32 }, (_, i) => (i - 16) / 10);
  const y = decode("Q8_0", encode("Q8_0", x), 32);
  const step = 1.6 / 127;
  for (let i = 0; i < 32; i++) assert.ok(Math.abs(x[i] - y[i]) <= step / 2 + 1e-3, `value ${i}`);
});

test("blocks of zeros and rows that are not whole blocks", () => {
  for (const type of ["Q8_0", "Q5_0", "Q4_K", "Q6_K"] as const) {
    const zeros = new Float32Array(256);
    assert.ok(
      decode(type, encode(type, zeros), 256).every((v) => v === 0),
      type,
    );
  }
  assert.throws(() => encode("Q4_K", new Float32Array(32)), /not whole blocks of 256/);
});

test("q4_0 blocks are the serving format's blocks byte for byte, and bf16 the top half of each float", () => {
  const x = values(256, 5);
  const q = quantizeQ4_0(x, 4, 64);
  const bytes = encode("Q4_0", x);
  for (let b = 0; b < 8; b++) {
    assert.equal(bytes[b * 18] | (bytes[b * 18 + 1] << 8), q.scales[b]);
    assert.deepEqual(bytes.subarray(b * 18 + 2, b * 18 + 18), q.data.subarray(b * 16, b * 16 + 16));
  }
  const bf = encode("BF16", Float32Array.of(1.5, -2.25));
  assert.deepEqual([...bf], [0xc0, 0x3f, 0x10, 0xc0]);
});

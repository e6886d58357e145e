import assert from "node:assert/strict";
import { test } from "node:test";
import {
  bf16ToF32,
  decodeBf16,
  decodeF16,
  encodeBf16,
  encodeF16,
  f16ToF32,
  f32BitsToF16,
  f32ToBf16,
  f32ToF16,
  roundToF16,
} from "./half.js";

const f32 = (x: number) => Math.fround(x);

test("every f16 bit pattern decodes and encodes back to itself (NaNs stay NaN)", () => {
  for (let h = 0; h < 0x10000; h++) {
    const value = f16ToF32(h);
    const back = f32ToF16(value);
    if (Number.isNaN(value)) {
      assert.ok(Number.isNaN(f16ToF32(back)), `NaN 0x${h.toString(16)}`);
    } else {
      assert.equal(back, h, `0x${h.toString(16)} -> ${value} -> 0x${back.toString(16)}`);
    }
  }
});

test("f16 rounds to nearest with ties to even, across normals and subnormals", () => {
  // Between every pair of neighbouring positive finite f16 values a and b: the
  // midpoint (exact in float32) goes to the one with the even mantissa, and one
  // float32 step either side of it goes to the nearer one.
  for (let h = 0; h < 0x7bff; h++) {
    const a = f16ToF32(h);
    const b = f16ToF32(h + 1);
    const mid = (a + b) / 2;
    assert.equal(f32(mid), mid);
    const even = h % 2 === 0 ? h : h + 1;
    assert.equal(f32ToF16(mid), even, `tie between 0x${h.toString(16)} and its successor`);
    const below = new Float32Array([mid]);
    new Uint32Array(below.buffer)[0] -= 1;
    assert.equal(f32ToF16(below[0]), h);
    const above = new Float32Array([mid]);
    new Uint32Array(above.buffer)[0] += 1;
    assert.equal(f32ToF16(above[0]), h + 1);
    assert.equal(f32ToF16(-mid), even | 0x8000, "negative values round the same way");
  }
});

test("f16 overflow, underflow, infinities, zeros and NaN", () => {
  assert.equal(f32ToF16(65504), 0x7bff); // the largest finite f16
  assert.equal(f32ToF16(65519.99), 0x7bff);
  assert.equal(f32ToF16(65520), 0x7c00); // the tie above 65504 rounds to even: Infinity
  assert.equal(f32ToF16(1e10), 0x7c00);
  assert.equal(f32ToF16(-1e10), 0xfc00);
  assert.equal(f32ToF16(Number.POSITIVE_INFINITY), 0x7c00);
  assert.equal(f32ToF16(Number.NEGATIVE_INFINITY), 0xfc00);
  assert.equal(f32ToF16(0), 0);
  assert.equal(f32ToF16(-0), 0x8000);
  assert.equal(f32ToF16(2 ** -24), 1); // the smallest subnormal
  assert.equal(f32ToF16(2 ** -25), 0); // half of it: a tie, to even (zero)
  assert.equal(f32ToF16(f32(2 ** -25 * 1.0001)), 1);
  assert.equal(f32ToF16(2 ** -30), 0);
  assert.equal(f32ToF16(-(2 ** -30)), 0x8000);
  assert.equal(f32ToF16(2 ** -14), 0x0400); // the smallest normal
  assert.equal(f32ToF16(2 ** -14 - 2 ** -25), 0x0400); // a subnormal rounding up into it
  assert.ok(Number.isNaN(f16ToF32(f32ToF16(Number.NaN))));
  assert.equal(f32BitsToF16(0xffc00000), 0xfe00, "a NaN keeps its sign and stays quiet");
  assert.equal(f32BitsToF16(0x7f800001), 0x7e00, "a NaN whose payload is below f16's is not Infinity");
  assert.equal(f32ToF16(1), 0x3c00);
  assert.equal(f32ToF16(-2), 0xc000);
  assert.equal(f16ToF32(0x3555), 0.333251953125);
});

test("bf16 rounds to nearest even and keeps NaN, infinities and signs", () => {
  assert.equal(f32ToBf16(1), 0x3f80);
  assert.equal(f32ToBf16(1 + 2 ** -8), 0x3f80); // a tie, to even
  assert.equal(f32ToBf16(1 + 3 * 2 ** -8), 0x3f82); // a tie, to even (upwards)
  assert.equal(f32ToBf16(f32(1 + 2 ** -8 + 2 ** -20)), 0x3f81);
  assert.equal(f32ToBf16(-3.140625), 0xc049);
  assert.equal(f32ToBf16(3.4e38), 0x7f80); // past the largest bf16: Infinity
  assert.equal(f32ToBf16(Number.NEGATIVE_INFINITY), 0xff80);
  const nan = f32ToBf16(Number.NaN);
  assert.ok(Number.isNaN(bf16ToF32(nan)));
  const negativeNan = new Float32Array(1);
  new Uint32Array(negativeNan.buffer)[0] = 0xff800001; // a signalling NaN whose payload is all below bit 16
  const encoded = encodeBf16(negativeNan)[0];
  assert.ok(Number.isNaN(bf16ToF32(encoded)), "a low-payload NaN does not become Infinity");
  assert.equal(encoded & 0x8000, 0x8000);
  assert.equal(bf16ToF32(0x0001), 2 ** -133); // subnormals carry over from float32
  for (let h = 0; h < 0x10000; h++) {
    const value = bf16ToF32(h);
    if (!Number.isNaN(value)) assert.equal(f32ToBf16(value), h);
  }
});

test("array encoders match the scalar ones and decode back", () => {
  const values = Float32Array.from([0, -0, 1, -1.5, 0.1, 65504, 1e-6, 3e38, Number.NaN]);
  const halves = encodeF16(values);
  assert.deepEqual([...halves], [...values].map(f32ToF16));
  const decoded = decodeF16(halves);
  assert.deepEqual(
    [...decoded.subarray(0, 7)],
    [0, -0, 1, -1.5, f16ToF32(0x2e66), 65504, f16ToF32(f32ToF16(1e-6))],
  );
  assert.equal(decoded[7], Number.POSITIVE_INFINITY);
  assert.ok(Number.isNaN(decoded[8]));
  const brain = encodeBf16(values);
  assert.deepEqual([...brain], [...values].map(f32ToBf16));
  assert.equal(decodeBf16(brain)[4], bf16ToF32(f32ToBf16(0.1)));
  assert.deepEqual([...roundToF16(Float32Array.of(0.1))], [f16ToF32(0x2e66)]);
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { dequantizeRow } from "../kernels/quant-matrix.js";
import { f16ToF32 } from "./half.js";
import { quantizeQ4_0 } from "./q4.js";

test("q4_0: GGUF's block — d = (signed max)/−8 in f16, nibbles ⌊w/d + 8.5⌋ capped at 15, low/high halves", () => {
  // one block: weight j = j − 16 (so the largest magnitude is −16, at j = 0)
  const w = Float32Array.from({ length: 32 }, (_, j) => j - 16);
  const q = quantizeQ4_0(w, 1, 32);
  assert.equal(f16ToF32(q.scales[0]), 2); // −16 / −8
  // w/d + 8.5 = (j − 16)/2 + 8.5 → nibble ⌊j/2 + 0.5⌋, capped at 15
  const nibble = (j: number) => Math.min(15, Math.floor(j / 2 + 0.5));
  for (let j = 0; j < 16; j++) {
    assert.equal(q.data[j] & 15, nibble(j), `low nibble ${j}`);
    assert.equal(q.data[j] >> 4, nibble(j + 16), `high nibble ${j}`);
  }
  const back = new Float32Array(32);
  dequantizeRow(q, 0, back);
  assert.equal(back[0], -16); // the block's extreme is exact
  for (let j = 0; j < 32; j++) assert.ok(Math.abs(back[j] - w[j]) <= 2, `weight ${j}: ${back[j]}`);
});

test("q4_0: rows of several blocks, each block its own scale; error within a step of its block", () => {
  const rows = 2;
  const cols = 96;
  const w = Float32Array.from({ length: rows * cols }, (_, i) => Math.cos(i * 0.7) * (1 + (i % 32)) * 0.01);
  const q = quantizeQ4_0(w, rows, cols);
  assert.equal(q.data.length, (rows * cols) / 2);
  assert.equal(q.scales.length, (rows * cols) / 32);
  const row = new Float32Array(cols);
  for (let r = 0; r < rows; r++) {
    dequantizeRow(q, r, row);
    for (let p = 0; p < cols; p++) {
      const d = Math.abs(f16ToF32(q.scales[r * 3 + Math.floor(p / 32)]));
      assert.ok(Math.abs(row[p] - w[r * cols + p]) <= d * 1.0001, `row ${r} col ${p}`);
    }
  }
});

test("q4_0: a row that is not whole blocks is refused", () => {
  assert.throws(() => quantizeQ4_0(new Float32Array(40), 1, 40), /not whole blocks of 32/);
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { dequantizeRow } from "../kernels/quant-matrix.js";
import { quantizeInt8 } from "./int8.js";

test("int8: one scale per row, max|row|/127; every weight within half a step; a zero row stays zero", () => {
  const rows = 3;
  const cols = 50;
  const w = new Float32Array(rows * cols);
  for (let i = 0; i < cols; i++) {
    w[i] = Math.sin(i) * 0.3;
    w[2 * cols + i] = (i - 25) * 10;
  }
  const q = quantizeInt8(w, rows, cols);
  assert.equal(q.scales[0], Math.fround(Math.max(...w.subarray(0, cols).map(Math.abs)) / 127));
  assert.equal(q.scales[1], 0);
  assert.equal(q.scales[2], Math.fround(250 / 127));
  const row = new Float32Array(cols);
  for (let r = 0; r < rows; r++) {
    dequantizeRow(q, r, row);
    for (let p = 0; p < cols; p++) {
      assert.ok(Math.abs(row[p] - w[r * cols + p]) <= q.scales[r] / 2 + 1e-6, `row ${r} col ${p}`);
    }
  }
  assert.equal(q.data[2 * cols], -127); // the row's extreme is exactly ±127 steps
  assert.equal(Math.max(...q.data), 127);
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { binLabel, histogramLayout } from "./dataset-histogram.js";

const bins = [
  { from: 112, to: 120, rows: 5 },
  { from: 120, to: 128, rows: 100 },
  { from: 128, to: 136, rows: 50 },
  { from: 136, to: null, rows: 0 },
];

test("bars: one per bin, the tallest full height, past maxLength marked", () => {
  const { bars } = histogramLayout(bins, 127, { width: 400, height: 100 });
  assert.deepEqual(
    bars.map((b) => [b.x, b.width, b.height, b.y, b.over]),
    [
      [1, 98, 5, 95, false],
      [101, 98, 100, 0, false],
      [201, 98, 50, 50, true],
      [301, 98, 0, 100, true],
    ],
  );
  assert.equal(bars[1].label, "120–127 tokens: 100 rows");
  assert.equal(bars[3].label, "136+ tokens: 0 rows");
  assert.equal(binLabel({ from: 7, to: 8, rows: 1 }), "7 tokens: 1 row");
  // A bin with a single row among hundreds is still visible.
  assert.equal(
    histogramLayout(
      [
        { from: 0, to: 1, rows: 1000 },
        { from: 1, to: 2, rows: 1 },
      ],
      4,
      { width: 10, height: 100 },
    ).bars[1].height,
    2,
  );
});

test("the maxLength line: inside its bin, before the first, or past the longest row", () => {
  const size = { width: 400, height: 100 };
  // maxLength 127 keeps 120..127 (the whole second bin): the line is at its right edge.
  assert.equal(histogramLayout(bins, 127, size).markerX, 200);
  // maxLength 123 keeps 120..123, half of the second bin.
  assert.equal(histogramLayout(bins, 123, size).markerX, 150);
  assert.equal(histogramLayout(bins, 64, size).markerX, 0);
  // Into the open-ended bin: at its start.
  assert.equal(histogramLayout(bins, 500, size).markerX, 300);
  const closed = histogramLayout(bins.slice(0, 3), 512, size);
  assert.deepEqual([closed.markerX, closed.markerBeyond], [400, true]);
  assert.deepEqual(histogramLayout([], 512, size), { bars: [], markerX: null, markerBeyond: false });
});

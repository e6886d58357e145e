import assert from "node:assert/strict";
import { test } from "node:test";
import { formatPrecision, precisionOfStarted } from "./training-precision.js";

test("training.started's precision: what ran, or null from events before precisions", () => {
  assert.deepEqual(precisionOfStarted({ totalSteps: 3, precision: "bf16", baseWeights: "bf16" }), {
    precision: "bf16",
    baseWeights: "bf16",
  });
  assert.equal(precisionOfStarted({ totalSteps: 3 }), null);
});

test("the Metadata line: what the job asked for, and what ran once it started", () => {
  assert.equal(formatPrecision("auto", null, null), "auto (bf16 where the CPU has bf16 dot products)");
  assert.equal(formatPrecision("auto", null, { precision: "bf16", baseWeights: "bf16" }), "auto → bf16");
  assert.equal(formatPrecision("auto", null, { precision: "fp32", baseWeights: "fp32" }), "auto → fp32");
  assert.equal(formatPrecision("bf16", null, { precision: "bf16", baseWeights: "bf16" }), "bf16");
  assert.equal(formatPrecision("fp32", "int8", null), "fp32, int8 base");
  assert.equal(
    formatPrecision("fp32", "int8", { precision: "fp32", baseWeights: "int8" }),
    "fp32, int8 base",
  );
});

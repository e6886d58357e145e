import assert from "node:assert/strict";
import { test } from "node:test";
import { clipGradNorm, globalGradNorm } from "./optim.js";
import { lrMultiplier } from "./schedule.js";

test("schedules follow Hugging Face's get_scheduler (warm-up from 0, then decay to 0)", () => {
  const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} vs ${b}`);
  // linear, 2 warm-up steps of 10
  close(lrMultiplier("linear", 0, 2, 10), 0);
  close(lrMultiplier("linear", 1, 2, 10), 0.5);
  close(lrMultiplier("linear", 2, 2, 10), 1);
  close(lrMultiplier("linear", 6, 2, 10), 0.5);
  close(lrMultiplier("linear", 10, 2, 10), 0);
  // no warm-up: the first step runs at the full rate
  close(lrMultiplier("linear", 0, 0, 4), 1);
  close(lrMultiplier("linear", 3, 0, 4), 0.25);
  // cosine: half a cycle after warm-up
  close(lrMultiplier("cosine", 1, 2, 10), 0.5);
  close(lrMultiplier("cosine", 2, 2, 10), 1);
  close(lrMultiplier("cosine", 6, 2, 10), 0.5);
  close(lrMultiplier("cosine", 4, 2, 10), 0.5 * (1 + Math.cos(Math.PI * 0.25)));
  // constant (with warm-up when asked)
  close(lrMultiplier("constant", 1, 2, 10), 0.5);
  close(lrMultiplier("constant", 9, 2, 10), 1);
});

test("gradient clipping scales to the max norm like clip_grad_norm_", () => {
  const grads = [Float32Array.of(3, 0), Float32Array.of(0, 4)];
  assert.equal(clipGradNorm(grads, 1), 5);
  assert.ok(Math.abs(globalGradNorm(grads) - 1) < 1e-6);
  const small = [Float32Array.of(0.3, 0.4)];
  clipGradNorm(small, 1);
  assert.deepEqual([...small[0]], [Math.fround(0.3), Math.fround(0.4)]);
});

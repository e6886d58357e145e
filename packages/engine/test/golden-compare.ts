// How the golden tests compare svc's numbers with PyTorch's fixtures.
import assert from "node:assert/strict";

/** The largest absolute difference, relative to the largest expected magnitude. */
export function rel(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  assert.equal(actual.length, expected.length);
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < expected.length; i++) {
    diff = Math.max(diff, Math.abs(actual[i] - expected[i]));
    scale = Math.max(scale, Math.abs(expected[i]));
  }
  return diff / scale;
}

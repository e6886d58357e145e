import assert from "node:assert/strict";
import { test } from "node:test";
import { isEngineError } from "../errors.js";
import { LogitAdjuster } from "./logit-adjustments.js";

test("logit adjustments: none asked, none made", () => {
  assert.equal(LogitAdjuster.of({}, 8), null);
  assert.equal(LogitAdjuster.of({ frequencyPenalty: 0, presencePenalty: 0, logitBias: {} }, 8), null);
});

test("logit adjustments: bias plus OpenAI's penalty formula over the completion's counts", () => {
  const adjuster = LogitAdjuster.of(
    { frequencyPenalty: 0.5, presencePenalty: 1.5, logitBias: { "3": 100, "0": -2.5 } },
    5,
  );
  assert.ok(adjuster);
  const row = Float32Array.of(1, 2, 3, 4, 5);
  adjuster.apply(row);
  assert.deepEqual(Array.from(row), [-1.5, 2, 3, 104, 5], "before any token: the bias alone");
  for (const id of [1, 1, 4]) adjuster.record(id);
  const next = Float32Array.of(1, 2, 3, 4, 5);
  adjuster.apply(next);
  // token 1 twice: 2 - 2·0.5 - 1.5; token 4 once: 5 - 0.5 - 1.5
  assert.deepEqual(Array.from(next), [-1.5, -0.5, 3, 104, 3]);
});

test("logit adjustments: out-of-range values and keys that are not token ids are refused naming the field", () => {
  const refused = (options: object, pattern: RegExp) =>
    assert.throws(
      () => LogitAdjuster.of(options, 10),
      (e: unknown) => isEngineError(e) && e.code === "invalid_argument" && pattern.test((e as Error).message),
    );
  refused({ frequencyPenalty: 2.5 }, /^frequencyPenalty/);
  refused({ presencePenalty: -3 }, /^presencePenalty/);
  refused({ presencePenalty: Number.NaN }, /^presencePenalty/);
  refused({ logitBias: { "10": 1 } }, /^logitBias key "10"/);
  refused({ logitBias: { "-1": 1 } }, /^logitBias key "-1"/);
  refused({ logitBias: { "01": 1 } }, /^logitBias key "01"/);
  refused({ logitBias: { a: 1 } }, /^logitBias key "a"/);
  refused({ logitBias: { "2": 101 } }, /^logitBias\["2"\]/);
  refused({ logitBias: [1] }, /^logitBias must be an object/);
  const many = Object.fromEntries(Array.from({ length: 301 }, (_, i) => [String(i), 1]));
  assert.throws(() => LogitAdjuster.of({ logitBias: many }, 1000), /at most 300/);
});

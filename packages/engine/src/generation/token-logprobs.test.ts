import assert from "node:assert/strict";
import { test } from "node:test";
import type { Tokenizer } from "../types.js";
import { LogprobReader } from "./token-logprobs.js";

/** A tokenizer of four tokens: "a", "b", "é" split over two tokens, and "é" whole. */
const tokenizer = {
  tokenBytes: () => [
    Uint8Array.of(0x61),
    Uint8Array.of(0x62),
    Uint8Array.of(0xc3),
    Uint8Array.of(0xc3, 0xa9),
  ],
} as unknown as Tokenizer;

const logSoftmax = (row: number[], scale = 1) => {
  const m = Math.max(...row.map((x) => x * scale));
  const z = m + Math.log(row.reduce((s, x) => s + Math.exp(x * scale - m), 0));
  return row.map((x) => x * scale - z);
};

test("logprobs: log-softmax of the row at the temperature, top alternatives most likely first", () => {
  const reader = new LogprobReader(tokenizer);
  const row = Float32Array.of(1, 3, 2, 3);
  const at = reader.read(row, 0.5, null, 2, 3);
  const expected = logSoftmax([1, 3, 2, 3], 2);
  assert.equal(at.token, "bytes:\\xc3", "a part of a UTF-8 character in OpenAI's notation");
  assert.deepEqual(at.bytes, [0xc3]);
  assert.ok(Math.abs(at.logprob - expected[2]) < 1e-12);
  assert.deepEqual(
    at.topLogprobs.map((t) => t.token),
    ["b", "é", "bytes:\\xc3"],
    "ties by lower id first",
  );
  for (const [i, t] of at.topLogprobs.entries())
    assert.ok(Math.abs(t.logprob - expected[[1, 3, 2][i]]) < 1e-12);
  // temperature 0 (greedy) reports the temperature 1 distribution
  assert.ok(Math.abs(reader.read(row, 0, null, 0, 0).logprob - logSoftmax([1, 3, 2, 3])[0]) < 1e-12);
  assert.deepEqual(reader.read(row, 1, null, 0, 0).topLogprobs, []);
});

test("logprobs: under a grammar the distribution is over the allowed tokens only", () => {
  const reader = new LogprobReader(tokenizer);
  const row = Float32Array.of(1, 3, 2, 5);
  const at = reader.read(row, 1, [0, 2], 2, 20);
  const expected = logSoftmax([1, 2]);
  assert.ok(Math.abs(at.logprob - expected[1]) < 1e-12);
  assert.deepEqual(
    at.topLogprobs.map((t) => t.bytes),
    [[0xc3], [0x61]],
    "only allowed tokens, however likely the others",
  );
  const mass = at.topLogprobs.reduce((s, t) => s + Math.exp(t.logprob), 0);
  assert.ok(Math.abs(mass - 1) < 1e-12);
});

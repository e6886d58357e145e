// Generation against the context window: a prompt that fills it is refused
// (context_length_exceeded), an explicit maxTokens past it is refused under
// "refuse" and clamped otherwise, and maxTokenBytes bounds what a token covers.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { isEngineError } from "../errors.js";
import { byteTokenModel } from "../testing/memory-model.js";
import type { GenerationRequest, Model } from "../types.js";
import { createGenerator } from "./generate.js";

let dir: string;
let model: Model;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-generate-context-"));
  model = await byteTokenModel(dir);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("generate: a prompt that fills the context, or an explicit maxTokens past it under 'refuse', is context_length_exceeded", () => {
  const generator = createGenerator(model, { maxContext: 64 });
  const cases: [GenerationRequest, RegExp][] = [
    [{ promptIds: new Array(64).fill(5) }, /64 tokens; the context holds 64/],
    [
      { promptIds: new Array(60).fill(5), maxTokens: 5, maxTokensPolicy: "refuse" },
      /holds 64 tokens, but 65 were requested \(60 in the messages, 5 in the completion\)/,
    ],
  ];
  for (const [request, message] of cases) {
    assert.throws(
      () => generator.generate(request),
      (error) => isEngineError(error, "context_length_exceeded") && message.test(error.message),
      JSON.stringify(request),
    );
  }
  // Within the context, "refuse" accepts: 60 + 4 = 64 positions.
  assert.doesNotThrow(() =>
    generator.generate({ promptIds: new Array(60).fill(5), maxTokens: 4, maxTokensPolicy: "refuse" }),
  );
});

test("tokenizer: maxTokenBytes bounds the text bytes of every token", () => {
  const { tokenizer } = model;
  assert.ok(tokenizer.maxTokenBytes >= 1);
  for (let id = 0; id < tokenizer.vocabSize; id++)
    assert.ok(Buffer.byteLength(tokenizer.decode([id])) <= tokenizer.maxTokenBytes, `token ${id}`);
});

test("generate: completion is clamped to the context window ('length')", async () => {
  const generator = createGenerator(model, { maxContext: 20 });
  const result = await generator.complete({
    promptIds: new Array(15).fill(40),
    temperature: 0,
    maxTokens: 50,
  });
  assert.equal(result.finishReason, "length");
  assert.equal(result.completionTokens, 5);
});

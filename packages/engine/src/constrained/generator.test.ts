// The grammar in the Generator: each request has its own grammar state in a
// continuous batch, streaming and complete() agree, and bad grammars are
// refused before anything runs.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { createGenerator } from "../generation/generate.js";
import { loadModel } from "../loading/load.js";
import type { GenerationRequest, Model } from "../types.js";
import { compileGrammar } from "./compile.js";
import { type OutputGrammar, SchemaError } from "./grammar.js";
import { advanceBytes, canEnd, initialState } from "./matcher.js";
import { vocabularyOf } from "./vocabulary.js";

const BUNDLED = new URL("../../../../../models/pico-llama/", import.meta.url).pathname;
let model: Model;

before(async () => {
  model = await loadModel(BUNDLED);
});

const SCHEMA = {
  type: "object",
  properties: { answer: { type: "string" }, score: { type: "number" } },
  required: ["answer", "score"],
  additionalProperties: false,
};
const GRAMMAR: OutputGrammar = { kind: "json", schema: SCHEMA };

function request(seed: number, grammar?: OutputGrammar): GenerationRequest {
  return {
    messages: [{ role: "user", content: `Question ${seed}?` }],
    temperature: 1.2,
    seed,
    maxTokens: 40,
    grammar,
  };
}

test("generator: requests with and without a grammar share a batch without affecting each other", async () => {
  const alone = createGenerator(model);
  const expectedFree = await alone.complete(request(7));
  const expectedJson = await alone.complete(request(8, GRAMMAR));
  const batched = createGenerator(model, { maxBatch: 8 });
  const results = await Promise.all([
    batched.complete(request(7)),
    batched.complete(request(8, GRAMMAR)),
    batched.complete(request(9, { kind: "json", schema: { type: "array", items: { type: "integer" } } })),
    batched.complete(request(10)),
  ]);
  assert.deepEqual(results[0], expectedFree);
  assert.deepEqual(results[1], expectedJson);
  const value = JSON.parse(results[1].text);
  assert.deepEqual(Object.keys(value), ["answer", "score"]);
  assert.ok(Array.isArray(JSON.parse(results[2].text)));
  assert.equal(results[1].finishReason, "stop");
});

test("generator: streamed chunks add up to complete()'s text, and the stream ends when the grammar is final", async () => {
  const generator = createGenerator(model);
  const complete = await generator.complete(request(3, GRAMMAR));
  const stream = generator.generate(request(3, GRAMMAR));
  let text = "";
  let chunks = 0;
  for (;;) {
    const next = await stream.next();
    if (next.done) {
      assert.deepEqual(next.value, complete);
      break;
    }
    text += next.value.text;
    chunks++;
  }
  assert.equal(text, complete.text);
  assert.equal(chunks, complete.completionTokens);
  // no end-of-sequence token was needed: the text closed with its last `}`
  assert.ok(complete.text.endsWith("}"));
});

test("generator: greedy decoding under a grammar picks the best allowed token at every step", async () => {
  const generator = createGenerator(model);
  const literal: OutputGrammar = {
    kind: "choice",
    options: [
      { kind: "literal", text: "yes" },
      { kind: "literal", text: "no" },
    ],
  };
  const result = await generator.complete({ ...request(1, literal), temperature: 0 });
  assert.ok(["yes", "no"].includes(result.text), result.text);
  assert.equal(result.finishReason, "stop");
  // the same prompt and seed give the same text
  const again = await generator.complete({ ...request(1, literal), temperature: 0 });
  assert.equal(again.text, result.text);
  // top-p below 1 masks first, then takes the nucleus among allowed tokens
  const nucleus = await generator.complete({ ...request(2, GRAMMAR), topP: 0.5 });
  assert.deepEqual(Object.keys(JSON.parse(nucleus.text)), ["answer", "score"]);
});

test("generator: every sampled token keeps the text a valid prefix, including tokens that split a UTF-8 character", async () => {
  const { tokenBytes } = vocabularyOf(model.tokenizer);
  const partial = tokenBytes.filter(
    (b) => b !== null && new TextDecoder("utf-8", { fatal: false }).decode(b).includes("\uFFFD"),
  );
  assert.ok(partial.length > 0, "the bundled vocabulary has tokens that hold part of a character");
  const generator = createGenerator(model);
  const grammar: OutputGrammar = {
    kind: "json",
    schema: { type: "array", items: { type: "string" }, minItems: 2 },
  };
  const root = compileGrammar(grammar);
  for (let seed = 0; seed < 8; seed++) {
    const ids: number[] = [];
    const stream = generator.generate({
      promptIds: model.tokenizer.encode("Grüße aus Köln — 日本語"),
      grammar,
      temperature: 1.5,
      seed,
      maxTokens: 48,
    });
    for (;;) {
      const next = await stream.next();
      if (next.done) break;
      ids.push(next.value.tokenId);
    }
    let state = initialState(root);
    for (const id of ids) {
      if (model.tokenizer.eosTokenIds.includes(id)) break;
      state = advanceBytes(state, tokenBytes[id]!);
      assert.ok(state.length > 0);
    }
    assert.ok(canEnd(state));
    assert.ok(Array.isArray(JSON.parse(model.tokenizer.decode(ids, { skipSpecialTokens: true }))));
  }
});

test("generator: a schema outside the subset or a malformed grammar fails the request before any token", async () => {
  const generator = createGenerator(model);
  await assert.rejects(
    generator.generate(request(1, { kind: "json", schema: { type: "string", pattern: "^a" } })).next(),
    (e: unknown) => e instanceof SchemaError && e.keyword === "pattern",
  );
  await assert.rejects(
    generator.complete(request(1, { kind: "choice", options: [] })),
    (e: unknown) => (e as { code?: string }).code === "invalid_argument",
  );
  // the others in the batch go on
  const results = await Promise.allSettled([
    generator.complete(request(2, { kind: "json", schema: { type: "string", pattern: "^a" } })),
    generator.complete(request(3, GRAMMAR)),
  ]);
  assert.equal(results[0].status, "rejected");
  assert.equal(results[1].status, "fulfilled");
});

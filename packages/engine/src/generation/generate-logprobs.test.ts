// Logprobs, logit_bias and the penalties in the Generator, against the
// model's own full forward (model.logits) for the same prefix.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { OutputGrammar } from "../constrained/grammar.js";
import { vocabularyOf } from "../constrained/vocabulary.js";
import { loadModel } from "../loading/load.js";
import type { GenerationChunk, GenerationRequest, Generator, Model } from "../types.js";
import { createGenerator } from "./generate.js";

const BUNDLED = new URL("../../../../../models/pico-llama/", import.meta.url).pathname;
let model: Model;
let promptIds: number[];

before(async () => {
  model = await loadModel(BUNDLED);
  promptIds = model.tokenizer.encode("the the the"); // greedy repeats " two, the" without ending
});

async function chunksOf(generator: Generator, request: GenerationRequest): Promise<GenerationChunk[]> {
  const chunks: GenerationChunk[] = [];
  const stream = generator.generate(request);
  for (;;) {
    const next = await stream.next();
    if (next.done) return chunks;
    chunks.push(next.value);
  }
}

/** log-softmax of the last position's logits after `adjust`, at temperature `t` (0: 1). */
function reference(ids: number[], t: number, adjust: (row: Float64Array) => void = () => {}): Float64Array {
  const V = model.config.vocabSize;
  const row = Float64Array.from(model.logits(ids).subarray((ids.length - 1) * V));
  adjust(row);
  const scale = t === 0 ? 1 : 1 / t;
  let max = Number.NEGATIVE_INFINITY;
  for (const x of row) max = Math.max(max, x * scale);
  let sum = 0;
  for (const x of row) sum += Math.exp(x * scale - max);
  const logZ = max + Math.log(sum);
  return row.map((x) => x * scale - logZ);
}

function assertLogprobs(chunks: GenerationChunk[], expectedAt: (prefix: number[]) => Float64Array) {
  const ids = [...promptIds];
  const { tokenBytes } = vocabularyOf(model.tokenizer);
  for (const chunk of chunks) {
    const expected = expectedAt(ids);
    const lp = chunk.logprob;
    assert.ok(lp, `token ${chunk.tokenId} has its logprob`);
    assert.ok(
      Math.abs(lp.logprob - expected[chunk.tokenId]) < 1e-4,
      `${lp.logprob} vs ${expected[chunk.tokenId]}`,
    );
    assert.deepEqual(lp.bytes, Array.from(tokenBytes[chunk.tokenId] ?? []));
    assert.equal(lp.topLogprobs.length, 5);
    const sorted = Array.from(expected).sort((a, b) => b - a);
    for (const [i, top] of lp.topLogprobs.entries()) assert.ok(Math.abs(top.logprob - sorted[i]) < 1e-4);
    ids.push(chunk.tokenId);
  }
}

test("generate logprobs: each token's logprob and top 5 equal the full forward's log-softmax, greedy and at a temperature", async () => {
  const generator = createGenerator(model);
  const greedy = await chunksOf(generator, { promptIds, temperature: 0, maxTokens: 8, logprobs: 5 });
  assert.equal(greedy.length, 8);
  assertLogprobs(greedy, (ids) => reference(ids, 0));
  // greedy: the chosen token is the most likely one
  for (const c of greedy) assert.equal(c.logprob?.logprob, c.logprob?.topLogprobs[0].logprob);
  const warm = await chunksOf(generator, { promptIds, temperature: 0.7, seed: 3, maxTokens: 8, logprobs: 5 });
  assertLogprobs(warm, (ids) => reference(ids, 0.7));
});

test("generate logprobs: asking for logprobs changes no sampled token, with or without a grammar", async () => {
  const generator = createGenerator(model);
  const grammar: OutputGrammar = { kind: "json", schema: { type: "array", items: { type: "integer" } } };
  for (const g of [undefined, grammar]) {
    const base = { promptIds, temperature: 1.1, seed: 9, maxTokens: 16, grammar: g };
    const plain = await chunksOf(generator, base);
    const logged = await chunksOf(generator, { ...base, logprobs: 2 });
    assert.deepEqual(
      logged.map((c) => c.tokenId),
      plain.map((c) => c.tokenId),
    );
  }
});

test("generate: frequency and presence penalties follow OpenAI's formula over the completion's own tokens", async () => {
  const generator = createGenerator(model);
  const frequencyPenalty = 1.25;
  const presencePenalty = 0.75;
  const chunks = await chunksOf(generator, {
    promptIds,
    temperature: 0,
    maxTokens: 10,
    logprobs: 5,
    frequencyPenalty,
    presencePenalty,
  });
  const plain = await chunksOf(generator, { promptIds, temperature: 0, maxTokens: 10 });
  assert.notDeepEqual(
    chunks.map((c) => c.tokenId),
    plain.map((c) => c.tokenId),
    "the penalties change the greedy continuation",
  );
  assertLogprobs(chunks, (ids) =>
    reference(ids, 0, (row) => {
      const counts = new Map<number, number>();
      for (const id of ids.slice(promptIds.length)) counts.set(id, (counts.get(id) ?? 0) + 1);
      for (const [id, n] of counts) row[id] -= n * frequencyPenalty + presencePenalty;
    }),
  );
});

test("generate: logit_bias +100 forces a token; under a grammar a biased invalid token is never drawn", async () => {
  const generator = createGenerator(model);
  const forced = model.tokenizer.encode(" zebra")[0];
  const chunks = await chunksOf(generator, {
    promptIds,
    temperature: 1,
    seed: 1,
    maxTokens: 6,
    logitBias: { [forced]: 100 },
    logprobs: 1,
  });
  assert.deepEqual(
    chunks.map((c) => c.tokenId),
    new Array(6).fill(forced),
  );
  for (const c of chunks)
    assert.ok(c.logprob && c.logprob.logprob > -1e-4, "a bias of 100 leaves it all the mass");
  const yesNo: OutputGrammar = {
    kind: "choice",
    options: [
      { kind: "literal", text: "yes" },
      { kind: "literal", text: "no" },
    ],
  };
  for (const seed of [1, 2, 3]) {
    const constrained = await chunksOf(generator, {
      promptIds,
      temperature: 1,
      seed,
      maxTokens: 6,
      logitBias: { [forced]: 100 },
      grammar: yesNo,
      logprobs: 3,
    });
    const text = constrained.map((c) => c.text).join("");
    assert.ok(["yes", "no"].includes(text), text);
    for (const c of constrained) {
      if (!c.logprob) continue;
      const mass = c.logprob.topLogprobs.reduce((s, t) => s + Math.exp(t.logprob), 0);
      assert.ok(mass <= 1 + 1e-6, "logprobs are over the allowed tokens, whose mass is 1");
      assert.ok(!c.logprob.topLogprobs.some((t) => t.token === " zebra"), "the biased token is not allowed");
    }
  }
});

test("generate: bad logprobs, penalties and bias are refused before anything runs", () => {
  const generator = createGenerator(model);
  for (const bad of [
    { logprobs: 21 },
    { logprobs: -1 },
    { frequencyPenalty: 3 },
    { presencePenalty: -2.01 },
    { logitBias: { [model.config.vocabSize]: 1 } },
  ])
    assert.throws(() => generator.generate({ promptIds, ...bad }), /logprobs|Penalty|logitBias/);
});

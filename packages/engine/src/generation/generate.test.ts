import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { saveAdapter } from "../adapters/peft.js";
import { isEngineError } from "../errors.js";
import { loadModel } from "../loading/load.js";
import { byteTokenModel, memoryModel } from "../testing/memory-model.js";
import { createRandomModel } from "../testing/random-model.js";
import { randomLoraAdapter } from "../testing/random-weights.js";
import type {
  GenerationChunk,
  GenerationRequest,
  GenerationResult,
  Generator,
  LoraAdapter,
  Model,
  Tokenizer,
} from "../types.js";
import { createGenerator } from "./generate.js";
import { argmax } from "./sampling.js";

let dir: string;
let model: Model;
let adapterA: LoraAdapter;
let adapterB: LoraAdapter;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-generate-"));
  model = await byteTokenModel(dir); // one token per byte: multi-byte characters span tokens
  const { config } = model;
  adapterA = randomLoraAdapter(config, { r: 4, alpha: 8, targetModules: ["all-linear"] }, 4);
  adapterB = randomLoraAdapter(config, { r: 8, alpha: 8, targetModules: ["q_proj", "up_proj", "o_proj"] }, 5);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const MESSAGES = [{ role: "user" as const, content: "Say something nice." }];

/** Runs a request to the end, keeping every chunk. */
async function collect(
  generator: Generator,
  request: GenerationRequest,
): Promise<{ chunks: GenerationChunk[]; result: GenerationResult }> {
  const chunks: GenerationChunk[] = [];
  const iterator = generator.generate(request);
  for (;;) {
    const next = await iterator.next();
    if (next.done) return { chunks, result: next.value };
    chunks.push(next.value);
  }
}

/** Greedy continuation by full recomputation (no cache), stopping at maxTokens. */
function referenceGreedy(m: Model, promptIds: number[], maxTokens: number): number[] {
  const ids = [...promptIds];
  const out: number[] = [];
  const V = m.config.vocabSize;
  while (out.length < maxTokens) {
    const logits = m.logits(ids);
    const next = argmax(logits.subarray((ids.length - 1) * V), V);
    out.push(next);
    if (m.tokenizer.eosTokenIds.includes(next)) break;
    ids.push(next);
  }
  return out;
}

test("generate: greedy tokens equal argmax of the full forward, step by step", async () => {
  const promptIds = model.tokenizer.encode("Once upon a time");
  for (const adapter of [null, adapterA]) {
    const { chunks, result } = await collect(createGenerator(model), {
      promptIds,
      temperature: 0,
      maxTokens: 12,
      adapter,
    });
    const expected = referenceGreedy(model.withAdapter(adapter), promptIds, 12);
    assert.deepEqual(
      chunks.map((c) => c.tokenId),
      expected,
    );
    assert.equal(result.completionTokens, expected.length);
  }
});

test("generate: a request's output does not depend on what else is in the batch", async () => {
  const requests: GenerationRequest[] = [
    { messages: MESSAGES, temperature: 0, maxTokens: 16, adapter: adapterA },
    {
      messages: [{ role: "user", content: "Another, longer question here?" }],
      temperature: 0,
      maxTokens: 10,
    },
    { messages: MESSAGES, temperature: 0.9, topP: 0.9, seed: 7, maxTokens: 20, adapter: adapterB },
  ];
  const alone: { chunks: GenerationChunk[]; result: GenerationResult }[] = [];
  for (const request of requests) alone.push(await collect(createGenerator(model), request));
  const generator = createGenerator(model, { maxBatch: 4 });
  const together = await Promise.all(requests.map((r) => collect(generator, r)));
  for (let i = 0; i < requests.length; i++) {
    assert.deepEqual(
      together[i].chunks.map((c) => c.tokenId),
      alone[i].chunks.map((c) => c.tokenId),
      `request ${i}`,
    );
    assert.deepEqual(together[i].result, alone[i].result);
  }
  // The adapters change the output (otherwise the test above would prove little).
  const base = await collect(createGenerator(model), { ...requests[0], adapter: null });
  assert.notDeepEqual(
    base.chunks.map((c) => c.tokenId),
    alone[0].chunks.map((c) => c.tokenId),
  );
});

test("generate: a model view's adapter is the default; adapter null overrides it", async () => {
  const request: GenerationRequest = { messages: MESSAGES, temperature: 0, maxTokens: 8 };
  const viaView = await createGenerator(model.withAdapter(adapterA)).complete(request);
  const viaRequest = await createGenerator(model).complete({ ...request, adapter: adapterA });
  const baseFromView = await createGenerator(model.withAdapter(adapterA)).complete({
    ...request,
    adapter: null,
  });
  const base = await createGenerator(model).complete(request);
  assert.deepEqual(viaView, viaRequest);
  assert.deepEqual(baseFromView, base);
});

test("generate: queued requests beyond maxBatch wait their turn and still match", async () => {
  const generator = createGenerator(model, { maxBatch: 2, maxStepTokens: 8 });
  const requests = [0, 1, 2, 3, 4].map((i) => ({
    promptIds: model.tokenizer.encode(`prompt number ${i} `.repeat(i + 1)),
    temperature: 0,
    maxTokens: 6 + i,
  }));
  const together = await Promise.all(requests.map((r) => generator.complete(r)));
  for (let i = 0; i < requests.length; i++) {
    assert.deepEqual(together[i], await createGenerator(model).complete(requests[i]), `request ${i}`);
  }
});

test("generate: the same seed gives the same text; another seed another", async () => {
  const generator = createGenerator(model);
  const request: GenerationRequest = { messages: MESSAGES, temperature: 1, maxTokens: 24, seed: 1234 };
  const first = await collect(generator, request);
  const second = await collect(generator, request);
  assert.deepEqual(
    first.chunks.map((c) => c.tokenId),
    second.chunks.map((c) => c.tokenId),
  );
  assert.equal(first.result.text, second.result.text);
  const other = await collect(generator, { ...request, seed: 4321 });
  assert.notDeepEqual(
    other.chunks.map((c) => c.tokenId),
    first.chunks.map((c) => c.tokenId),
  );
});

test("generate: maxTokens ends with 'length'; usage counts prompt and completion tokens", async () => {
  const { chunks, result } = await collect(createGenerator(model), {
    messages: MESSAGES,
    temperature: 0,
    maxTokens: 7,
  });
  const promptIds = model.tokenizer.encode(
    model.tokenizer.applyChatTemplate(MESSAGES, { addGenerationPrompt: true }),
  );
  assert.equal(result.finishReason, "length");
  assert.equal(result.promptTokens, promptIds.length);
  assert.equal(result.completionTokens, 7);
  assert.equal(chunks.length, 7);
  assert.equal(result.text, chunks.map((c) => c.text).join(""));
});

test("generate: streamed text never splits a multi-byte character and adds up to the decoded tokens", async () => {
  // Sampling at a high temperature over byte tokens produces many bytes >= 0x80.
  const { chunks, result } = await collect(createGenerator(model), {
    promptIds: model.tokenizer.encode("日本語 🙂"),
    temperature: 2,
    seed: 99,
    maxTokens: 120,
  });
  const ids = chunks.map((c) => c.tokenId).filter((id) => !model.tokenizer.eosTokenIds.includes(id));
  const whole = model.tokenizer.decode(ids, { skipSpecialTokens: true });
  assert.equal(result.text, whole);
  assert.equal(chunks.map((c) => c.text).join(""), whole);
  assert.ok(
    ids.some((id) => id >= 3 + 0x80),
    "the sample has bytes >= 0x80 (the test exercises multi-byte handling)",
  );
  // A chunk may end in U+FFFD only where the whole text has one at the same place.
  let offset = 0;
  for (const chunk of chunks) {
    offset += chunk.text.length;
    if (chunk.text.endsWith("\uFFFD")) assert.equal(whole[offset - 1], "\uFFFD");
    for (const ch of chunk.text) assert.ok(!/[\uD800-\uDFFF]/.test(ch), "no lone surrogate");
  }
});

test("generate: a stop string spanning tokens ends the generation before it", async () => {
  // Seeded sampling: the same stream up to the stop, and more varied than greedy on random weights.
  const request: GenerationRequest = {
    promptIds: model.tokenizer.encode("Hello"),
    temperature: 0.7,
    seed: 5,
    maxTokens: 40,
  };
  const free = await collect(createGenerator(model), request);
  const text = free.result.text;
  // Take a stop string from the middle of the free-running text: 3 characters, so 3+ byte tokens.
  let start = 5;
  while (start + 3 < text.length && /[\uFFFD\uD800-\uDFFF]/.test(text.slice(start, start + 3))) start++;
  assert.ok(start + 3 < text.length, `usable text: ${JSON.stringify(text)}`);
  const stop = text.slice(start, start + 3);
  const cut = text.indexOf(stop);
  const stopped = await collect(createGenerator(model), { ...request, stop: ["never-appears", stop] });
  assert.equal(stopped.result.finishReason, "stop");
  assert.equal(stopped.result.text, text.slice(0, cut));
  assert.equal(stopped.chunks.map((c) => c.text).join(""), text.slice(0, cut));
  assert.ok(stopped.result.completionTokens < free.result.completionTokens);
});

test("generate: an end-of-sequence token ends with 'stop' and is not in the text", async () => {
  const promptIds = model.tokenizer.encode("Hello");
  const request: GenerationRequest = { promptIds, temperature: 0.7, seed: 5, maxTokens: 20 };
  const free = await collect(createGenerator(model), request);
  const ids = free.chunks.map((c) => c.tokenId);
  const eosAt = ids.findIndex((id, i) => i >= 1 && ids.indexOf(id) === i);
  assert.ok(eosAt > 0, `a token first produced after step 1 in ${ids}`);
  // The same model, with a tokenizer whose end-of-sequence token is that token.
  const tokenizer: Tokenizer = Object.create(model.tokenizer, { eosTokenIds: { value: [ids[eosAt]] } });
  const eosModel = memoryModel(model.config, model.weights, tokenizer);
  const { chunks, result } = await collect(createGenerator(eosModel), request);
  assert.equal(result.finishReason, "stop");
  assert.equal(result.completionTokens, eosAt + 1);
  assert.equal(chunks.length, eosAt + 1);
  assert.equal(chunks[eosAt].tokenId, ids[eosAt]);
  assert.equal(result.text, model.tokenizer.decode(ids.slice(0, eosAt)));
});

test("generate: aborting the signal finishes with 'cancelled' and keeps the text so far", async () => {
  const controller = new AbortController();
  const generator = createGenerator(model);
  const iterator = generator.generate({
    messages: MESSAGES,
    temperature: 0,
    maxTokens: 200,
    signal: controller.signal,
  });
  const seen: GenerationChunk[] = [];
  let result: GenerationResult | undefined;
  for (;;) {
    const next = await iterator.next();
    if (next.done) {
      result = next.value;
      break;
    }
    seen.push(next.value);
    if (seen.length === 3) controller.abort();
  }
  assert.equal(result.finishReason, "cancelled");
  assert.ok(result.completionTokens >= 3 && result.completionTokens < 200);
  assert.equal(result.text, seen.map((c) => c.text).join(""));
  // Already aborted: nothing is generated.
  const early = await generator.complete({ messages: MESSAGES, maxTokens: 5, signal: AbortSignal.abort() });
  assert.equal(early.finishReason, "cancelled");
  assert.equal(early.completionTokens, 0);
});

test("generate: a consumer that stops iterating frees its slot for the next request", async () => {
  const generator = createGenerator(model, { maxBatch: 1 });
  for await (const chunk of generator.generate({ messages: MESSAGES, temperature: 0, maxTokens: 500 })) {
    assert.equal(typeof chunk.tokenId, "number");
    break; // return() runs the generator's finally: the sequence is dropped at the next step
  }
  // With maxBatch 1 this would wait for 500 tokens if the first sequence kept its slot.
  const started = Date.now();
  const next = await generator.complete({ messages: MESSAGES, temperature: 0, maxTokens: 3 });
  assert.equal(next.completionTokens, 3);
  assert.ok(Date.now() - started < 5000);
});

test("generate: bad requests are refused with an error naming the field", () => {
  const generator = createGenerator(model, { maxContext: 64 });
  const cases: [GenerationRequest, RegExp][] = [
    [{}, /messages or promptIds/],
    [{ messages: MESSAGES, promptIds: [1] }, /not both/],
    [{ promptIds: [] }, /no tokens/],
    [{ promptIds: [1, 1e6] }, /promptIds\[1\]/],
    [{ messages: MESSAGES, temperature: -1 }, /temperature/],
    [{ messages: MESSAGES, topP: 0 }, /topP/],
    [{ messages: MESSAGES, maxTokens: 0 }, /maxTokens/],
    [{ messages: MESSAGES, stop: [""] }, /stop/],
    [{ messages: MESSAGES, seed: 1.5 }, /seed/],
  ];
  for (const [request, message] of cases) {
    assert.throws(
      () => generator.generate(request),
      (error) => isEngineError(error, "invalid_argument") && message.test(error.message),
      JSON.stringify(request),
    );
  }
});

test("generate: on a model folder loaded with a PEFT adapter folder, greedy matches model.logits", async () => {
  const modelDir = join(dir, "model");
  await createRandomModel(modelDir, {
    hiddenSize: 48,
    numHiddenLayers: 2,
    std: 0.15,
    embedStd: 0.3,
    seed: 8,
  });
  const base = await loadModel(modelDir);
  const adapterDir = join(dir, "adapter");
  saveAdapter(
    randomLoraAdapter(base.config, { r: 4, alpha: 16, targetModules: ["all-linear"] }, 9),
    adapterDir,
  );
  const tuned = await loadModel(modelDir, { adapter: adapterDir });
  const promptIds = base.tokenizer.encode(
    base.tokenizer.applyChatTemplate(MESSAGES, { addGenerationPrompt: true }),
  );
  const outputs: number[][] = [];
  for (const m of [base, tuned]) {
    const { chunks } = await collect(createGenerator(m), {
      messages: MESSAGES,
      temperature: 0,
      maxTokens: 10,
    });
    const ids = chunks.map((c) => c.tokenId);
    assert.deepEqual(ids, referenceGreedy(m, promptIds, 10));
    outputs.push(ids);
  }
  assert.notDeepEqual(outputs[0], outputs[1], "the adapter changes the continuation");
  // One generator over the base model serves the adapter per request, at the same time as the base.
  const shared = createGenerator(base);
  const [viaBase, viaAdapter] = await Promise.all([
    shared.complete({ messages: MESSAGES, temperature: 0, maxTokens: 10 }),
    shared.complete({ messages: MESSAGES, temperature: 0, maxTokens: 10, adapter: tuned.adapter }),
  ]);
  assert.equal(viaBase.text, base.tokenizer.decode(outputs[0], { skipSpecialTokens: true }));
  assert.equal(viaAdapter.text, base.tokenizer.decode(outputs[1], { skipSpecialTokens: true }));
});

test("generate: the event loop runs between steps (timers fire during a generation)", async () => {
  const generator = createGenerator(model);
  let ticks = 0;
  let steps = 0;
  const timer = setInterval(() => ticks++, 1);
  const started = Date.now();
  for await (const _chunk of generator.generate({ messages: MESSAGES, temperature: 0, maxTokens: 80 }))
    steps++;
  clearInterval(timer);
  const elapsed = Date.now() - started;
  assert.equal(steps, 80);
  // A loop that never yielded would let no timer fire at all until the end. How many fire in
  // between depends on the machine's load and speed (6 in a 31 ms generation under a full test
  // run), so a few are enough to tell the two apart.
  assert.ok(ticks >= 3, `${ticks} timer ticks in ${elapsed} ms`);
});

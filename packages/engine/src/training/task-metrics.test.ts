import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import { loraLayersOf } from "../adapters/lora.js";
import { makeBatch } from "../data/batching.js";
import { tokenizeExample } from "../data/examples.js";
import { createGenerator } from "../generation/generate.js";
import { argmaxHits, LmHead } from "../graph/lm-head.js";
import { ModelGraph } from "../graph/model.js";
import { getKernels } from "../kernels/index.js";
import { byteTokenModel } from "../testing/memory-model.js";
import { randomLoraAdapter } from "../testing/random-weights.js";
import type { LoraAdapter, Model, ModelConfig, TokenizedExample } from "../types.js";
import {
  answersMatch,
  ExactMatchRunner,
  exactMatchSample,
  lastAnswer,
  SHORT_ANSWER_SHARE,
} from "./task-metrics.js";
import { evaluate } from "./train.js";

let model: Model;
let adapter: LoraAdapter;
before(async () => {
  model = await byteTokenModel(mkdtempSync(join(tmpdir(), "svc-task-metrics-")));
  adapter = randomLoraAdapter(model.config, { r: 4, alpha: 8, targetModules: ["all-linear"] }, 5);
});

// ---------------------------------------------------------------- token accuracy

test("token accuracy counts argmax hits on labelled rows, the first maximum on ties (hand-computed)", () => {
  // 5 rows over a vocabulary of 4; row 4 carries no label.
  const logits = Float32Array.from([
    ...[3, 1, 0, 0], // argmax 0, target 0: hit
    ...[0, 2, 1, 0], // argmax 1, target 2: miss
    ...[0, 0, 0, 5], // argmax 3, target 3: hit
    ...[1, 1, 0, 0], // tie between 0 and 1 → 0, target 1: miss
    ...[0, 9, 0, 0], // not labelled
  ]);
  const targets = Int32Array.from([0, 2, 3, 1, -100]);
  assert.equal(argmaxHits(logits, targets, 5, 4), 2);

  // The same rows through the LM head's fused loss: identity head, so logits = hidden rows.
  const config = { hiddenSize: 4, vocabSize: 4, logitScale: 1, finalLogitSoftcap: 0 } as ModelConfig;
  const identity = Float32Array.from([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
  for (const skip of [true, false]) {
    const head = new LmHead(config, identity, getKernels(), false);
    head.ensure(5);
    const result = head.loss(logits, targets, 5, skip, null, 0);
    assert.equal(result.count, 4);
    assert.equal(result.correct, 2, `skipUnlabeledRows ${skip}`);
    assert.equal(result.correct / result.count, 0.5);
  }
  // A pass with the backward (training) counts the same hits, before the gradient overwrites the logits.
  const training = new LmHead(config, identity, getKernels(), true);
  training.ensure(5);
  assert.equal(training.loss(logits, targets, 5, true, new Float32Array(20), 1).correct, 2);
});

test("the eval forward's hits are the argmax of the model's own logits against the labels", async () => {
  const lora = loraLayersOf(adapter, model.config);
  const examples = ["hello", "the answer is yes", "no"].map((answer) =>
    tokenizeExample(model.tokenizer, { prompt: `say ${answer}`, completion: answer }),
  );
  const graph = new ModelGraph(model.config, model.weights);
  let expectedHits = 0;
  let labelled = 0;
  for (const e of examples) {
    const logits = model.withAdapter(adapter).logits(e.inputIds);
    const V = model.config.vocabSize;
    const targets = makeBatch([e], model.tokenizer.padTokenId).targets;
    expectedHits += argmaxHits(logits, targets, e.inputIds.length, V);
    for (const t of targets) if (t >= 0) labelled++;
  }
  const forward = graph.forward(makeBatch(examples, model.tokenizer.padTokenId), lora);
  assert.equal(forward.count, labelled);
  assert.equal(forward.correct, expectedHits);
  const result = await evaluate(graph, lora, examples, 2, model.tokenizer.padTokenId);
  assert.ok(result);
  assert.equal(result.tokenAccuracy, expectedHits / labelled);
  assert.ok(Math.abs(result.loss - forward.lossSum / forward.count) < 1e-5);
});

// ---------------------------------------------------------------- exact match

const example = (ids: number[], labels: number[]): TokenizedExample => ({
  inputIds: Int32Array.from(ids),
  labels: Int32Array.from(labels),
});

test("lastAnswer: the last trained run, up to its end-of-turn token, and the prompt before it", () => {
  const eos = [9];
  // two answers (4 5 | eos) and (7 | eos); the last one counts
  const e = example([1, 2, 4, 5, 9, 3, 7, 9, 8], [-100, -100, 4, 5, 9, -100, 7, 9, -100]);
  assert.deepEqual(lastAnswer(e, eos), { promptIds: [1, 2, 4, 5, 9, 3], answerIds: [7] });
  // no end-of-turn token in the run (cut by truncation "end"): the whole run
  assert.deepEqual(lastAnswer(example([1, 2, 3], [-100, 2, 3]), eos), { promptIds: [1], answerIds: [2, 3] });
  // lossOn "all": nothing precedes the answer
  assert.equal(lastAnswer(example([1, 2, 3], [1, 2, 3]), eos), null);
  assert.equal(answersMatch("  yes\n", "yes "), true);
  assert.equal(answersMatch("Yes", "yes"), false);
});

test("the sample: short answers only, seeded and stable, off when answers are long or at 0", () => {
  const tk = model.tokenizer;
  const rows = Array.from({ length: 40 }, (_, i) =>
    tokenizeExample(tk, { prompt: `question ${i}`, completion: `a${i}` }),
  );
  const settings = { maxTokens: 16, samples: 8, seed: 42 };
  const sample = exactMatchSample(rows, tk, settings, 512);
  assert.ok(sample);
  assert.equal(sample.length, 8);
  assert.deepEqual(exactMatchSample(rows, tk, settings, 512), sample, "the same rows every time");
  assert.notDeepEqual(
    exactMatchSample(rows, tk, { ...settings, seed: 43 }, 512)?.map((r) => r.index),
    sample.map((r) => r.index),
  );
  for (const row of sample) {
    assert.equal(row.reference, `a${row.index}`);
    assert.equal(row.answerTokens, row.reference.length); // one token per byte
  }
  assert.equal(exactMatchSample(rows, tk, { ...settings, samples: 100 }, 512)?.length, 40);
  assert.equal(exactMatchSample(rows, tk, { ...settings, maxTokens: 0 }, 512), null);
  assert.equal(exactMatchSample(rows, tk, { ...settings, samples: 0 }, 512), null);
  // answers of 2–3 tokens are not short under a limit of 2 (fewer than 95% fit)
  assert.equal(exactMatchSample(rows, tk, { ...settings, maxTokens: 2 }, 512), null);
  // one long answer among 40 (2.5%) leaves exact match on, and out of the sample
  const withLong = [...rows.slice(0, 39), tokenizeExample(tk, { prompt: "q", completion: "x".repeat(40) })];
  assert.ok(1 / 40 < 1 - SHORT_ANSWER_SHARE);
  const all = exactMatchSample(withLong, tk, { ...settings, samples: 100 }, 512);
  assert.equal(all?.length, 39);
  assert.ok(all?.every((r) => r.index !== 39));
});

test("exact match on a tiny model: greedy answers equal to the reference count, others do not", async () => {
  const tk = model.tokenizer;
  const maxTokens = 6;
  const prompts = ["red", "green", "blue", "cyan"].map((w) =>
    Array.from(
      tk.encode(tk.applyChatTemplate([{ role: "user", content: w }], { addGenerationPrompt: true })),
    ),
  );
  // What the adapted model answers greedily, in the same batch the runner uses.
  const generator = createGenerator(model.withAdapter(adapter), {
    maxContext: Math.max(...prompts.map((p) => p.length)) + maxTokens,
    maxBatch: prompts.length,
  });
  const greedy = await Promise.all(
    prompts.map((promptIds) => generator.complete({ promptIds, temperature: 0, maxTokens })),
  );
  // Rows 0 and 2 have the model's own answer as reference (with whitespace around), rows 1 and 3 another one.
  const rows = prompts.map((promptIds, index) => ({
    index,
    promptIds,
    reference: index % 2 === 0 ? ` ${greedy[index].text}\n` : `${greedy[index].text}#`,
    answerTokens: 1,
  }));
  const runner = new ExactMatchRunner(model, adapter, rows, maxTokens);
  assert.equal(await runner.run(), 0.5);
  assert.equal(await runner.run(), 0.5, "stable across calls");
  const aborted = new AbortController();
  aborted.abort();
  assert.equal(await runner.run(aborted.signal), null);
});

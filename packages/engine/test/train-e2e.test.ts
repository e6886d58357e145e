// End to end: LoRA SFT on a random tiny model and a small generated chat
// dataset drives the loss down, and the trained adapter then answers every
// training prompt with its trained answer (greedy, through the KV-cache
// generator), while the base model does not.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createGenerator } from "../src/generation/generate.js";
import { loadModel } from "../src/loading/load.js";
import { createRandomModel } from "../src/testing/random-model.js";
import { train } from "../src/training/train.js";
import type { DatasetRow, Model } from "../src/types.js";

const facts: [string, string][] = [
  ["sky?", "blue"],
  ["grass?", "green"],
  ["snow?", "white"],
  ["coal?", "black"],
  ["sun?", "yellow"],
  ["2+2?", "four"],
  ["cat?", "meow"],
  ["hi?", "hello"],
];

async function answers(model: Model): Promise<string[]> {
  const generator = createGenerator(model);
  return Promise.all(
    facts.map(async ([prompt]) => {
      const result = await generator.complete({
        messages: [{ role: "user", content: prompt }],
        temperature: 0,
        maxTokens: 12,
        adapter: model.adapter,
      });
      return result.text;
    }),
  );
}

test("LoRA SFT teaches a random model its training answers; the base model does not know them", async () => {
  const root = mkdtempSync(join(tmpdir(), "svc-e2e-"));
  await createRandomModel(join(root, "model"), {
    seed: 5,
    hiddenSize: 48,
    intermediateSize: 96,
    numHiddenLayers: 2,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    tieWordEmbeddings: false,
    embedStd: 1,
    std: 0.2, // strong enough paths that a rank-8 adapter can route the prompt to the answer
  });
  const base = await loadModel(join(root, "model"));
  const trainSet: DatasetRow[] = facts.map(([prompt, answer]) => ({
    messages: [
      { role: "user", content: prompt },
      { role: "assistant", content: answer },
    ],
  }));
  const losses: number[] = [];
  const result = await train({
    model: base,
    trainSet,
    hyperparameters: {
      lora: {
        r: 8,
        alpha: 16,
        targetModules: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
      },
      maxSteps: 40,
      batchSize: 8,
      learningRate: 2e-2,
      lrSchedulerType: "constant",
      warmupSteps: 2,
      seed: 1,
    },
    outputDir: join(root, "out"),
    onProgress: (p) => {
      if (p.loss !== null) losses.push(p.loss);
    },
  });
  assert.equal(result.status, "completed");
  assert.equal(losses.length, 40);
  const first = losses[0];
  const last = losses[losses.length - 1];
  assert.ok(last < first / 10, `loss fell from ${first} to ${last}`);

  const tuned = await loadModel(join(root, "model"), { adapter: result.adapterDir });
  assert.deepEqual(
    await answers(tuned),
    facts.map(([, answer]) => answer),
  );
  const baseAnswers = await answers(base);
  assert.equal(baseAnswers.filter((text, i) => text === facts[i][1]).length, 0, JSON.stringify(baseAnswers));
});

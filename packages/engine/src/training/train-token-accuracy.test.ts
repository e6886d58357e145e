// A step's train mean token accuracy and trained tokens (TrainProgress
// tokenAccuracy, trainedTokens): counted in the training loss pass itself,
// they must equal what the eval pass (a separate code path: no backward)
// counts over the same rows under the same adapter.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import { loadModel } from "../loading/load.js";
import { createRandomModel } from "../testing/random-model.js";
import type { DatasetRow, Model, TrainProgress } from "../types.js";
import { prepareSets, train } from "./train.js";

let model: Model;
const LORA = { r: 4, alpha: 8, targetModules: ["q_proj", "v_proj"] };
const root = mkdtempSync(join(tmpdir(), "svc-train-accuracy-"));
const rows: DatasetRow[] = ["hello there", "4", "blue sky", "meow meow", "see you"].map((answer, i) => ({
  messages: [
    { role: "user", content: `question ${i}` },
    { role: "assistant", content: answer },
  ],
}));

before(async () => {
  await createRandomModel(join(root, "model"), {
    seed: 3,
    hiddenSize: 32,
    numHiddenLayers: 2,
    embedStd: 0.5,
  });
  model = await loadModel(join(root, "model"));
});

test("train token accuracy: the step's argmax hits over its targets, as the eval pass counts them; trained tokens are the step's tokens", async () => {
  const reports: TrainProgress[] = [];
  // one step over every row (batch 5), learning rate 0: the eval after it sees the adapter the step did
  await train({
    model,
    trainSet: rows,
    evalSet: rows,
    hyperparameters: { lora: LORA, maxSteps: 1, batchSize: 5, learningRate: 0, seed: 1 },
    outputDir: join(root, "run"),
    onProgress: (p) => {
      reports.push(p);
    },
  });
  assert.equal(reports.length, 1);
  const [step] = reports;
  assert.equal(typeof step.tokenAccuracy, "number");
  assert.ok(step.evalTokenAccuracy !== null);
  assert.ok(Math.abs((step.tokenAccuracy as number) - step.evalTokenAccuracy) < 1e-12);
  // a random model gets some but not all of them: the figure is a count, not a constant
  assert.ok((step.tokenAccuracy as number) < 1, String(step.tokenAccuracy));
  const { train: prepared } = prepareSets(model.tokenizer, rows, undefined, { lora: LORA });
  const tokens = prepared.examples.reduce((sum, e) => sum + e.inputIds.length, 0);
  assert.equal(step.trainedTokens, tokens);
});

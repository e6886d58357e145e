import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import { isEngineError } from "../errors.js";
import { loadModel } from "../loading/load.js";
import { createRandomModel } from "../testing/random-model.js";
import type { Model } from "../types.js";
import type { GrpoScoreItem } from "./grpo-rewards.js";
import { type GrpoProgress, type GrpoTrainHyperparameters, trainGrpo } from "./grpo-train.js";

let model: Model;
const root = mkdtempSync(join(tmpdir(), "svc-grpo-eval-"));
const prompt = (w: string) => ({ messages: [{ role: "user" as const, content: `say ${w}` }], word: w });
const train = ["red", "blue", "green", "cat"].map(prompt);
const held = ["sun", "moon", "star"].map(prompt);
const hyper: GrpoTrainHyperparameters = {
  lora: { r: 4, alpha: 8, targetModules: ["q_proj", "v_proj"] },
  batchSize: 2,
  learningRate: 0.05,
  seed: 3,
  numGenerations: 2,
  maxCompletionTokens: 6,
  maxSteps: 4,
};
/** Two rewards a completion's text alone decides, so an eval's figures can be recomputed from its items. */
const rewardsOf = (text: string) => [text.length, text.includes("a") ? 1 : 0];

before(async () => {
  await createRandomModel(join(root, "model"), {
    seed: 4,
    hiddenSize: 32,
    numHiddenLayers: 2,
    embedStd: 0.2,
  });
  model = await loadModel(join(root, "model"));
});

test("GRPO eval: every evalSteps-th step and the last sample the eval set evalGenerations times, at the same seeds, and report its means", async () => {
  const scored: GrpoScoreItem[][] = [];
  const reports: GrpoProgress[] = [];
  await trainGrpo({
    model,
    trainSet: train,
    evalSet: held,
    evalRowNumbers: [2, 4, 6],
    hyperparameters: { ...hyper, evalSteps: 3, evalGenerations: 2 },
    outputDir: join(root, "run"),
    rewardNames: ["length", "has_a"],
    rewardWeights: [1, 10],
    score: (batch) => {
      scored.push(batch);
      return batch.map((item) => rewardsOf(item.completion));
    },
    onProgress: (p) => {
      reports.push(p);
    },
  });
  // evals at step 3 (evalSteps) and step 4 (the last)
  assert.deepEqual(
    reports.map((r) => r.evalGrpo !== null),
    [false, false, true, true],
  );
  const evals = scored.filter((batch) => batch[0].set === "eval");
  assert.equal(evals.length, 2);
  for (const [k, batch] of evals.entries()) {
    // each eval prompt twice, named by its row number in the eval file
    assert.deepEqual(
      batch.map((item) => item.rowNumber),
      [2, 2, 4, 4, 6, 6],
    );
    assert.ok(batch.every((item, i) => item.row === held[Math.floor(i / 2)]));
    const figures = reports[2 + k].evalGrpo;
    assert.ok(figures);
    const rewards = batch.map((item) => rewardsOf(item.completion));
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    assert.ok(Math.abs(figures.reward - mean(rewards.map(([length, a]) => length + 10 * a))) < 1e-9);
    assert.ok(Math.abs(figures.rewards.length - mean(rewards.map((r) => r[0]))) < 1e-9);
    assert.ok(Math.abs(figures.rewards.has_a - mean(rewards.map((r) => r[1]))) < 1e-9);
    assert.ok(figures.completionLength > 0);
  }
  // training steps' items are never eval items
  assert.equal(scored.filter((batch) => batch.some((item) => item.set === "eval")).length, 2);

  // No adapter change between two evals (learning rate 0): the same seeds give the same completions.
  const frozen: GrpoScoreItem[][] = [];
  await trainGrpo({
    model,
    trainSet: train,
    evalSet: held,
    hyperparameters: { ...hyper, learningRate: 0, evalSteps: 2 },
    outputDir: join(root, "frozen"),
    score: (batch) => {
      if (batch[0].set === "eval") frozen.push(batch);
      return batch.map((item) => [item.completion.length]);
    },
  });
  assert.equal(frozen.length, 2);
  assert.deepEqual(
    frozen[0].map((item) => item.completion),
    frozen[1].map((item) => item.completion),
  );
});

test("GRPO eval: a bad reward on the eval set fails the step naming the eval set's row; evalGenerations is checked", async () => {
  await assert.rejects(
    trainGrpo({
      model,
      trainSet: train,
      evalSet: held,
      hyperparameters: { ...hyper, maxSteps: 1 },
      outputDir: join(root, "nan"),
      score: (batch) => batch.map((item, i) => [item.set === "eval" && i === 2 ? Number.NaN : 1]),
    }),
    (error: unknown) =>
      isEngineError(error, "invalid_reward") &&
      /step 1 \(eval set\): row 3: reward "reward" is NaN; .* so the eval was not scored/.test(
        (error as Error).message,
      ),
  );
  await assert.rejects(
    trainGrpo({
      model,
      trainSet: train,
      evalSet: held,
      hyperparameters: { ...hyper, evalGenerations: 0 },
      outputDir: join(root, "zero"),
      score: (batch) => batch.map(() => [1]),
    }),
    (error: unknown) => isEngineError(error, "invalid_argument") && /evalGenerations/.test(String(error)),
  );
});

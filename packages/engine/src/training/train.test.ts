import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import { loadAdapter } from "../adapters/peft.js";
import { isEngineError } from "../errors.js";
import { loadModel } from "../loading/load.js";
import { createRandomModel } from "../testing/random-model.js";
import type { DatasetRow, Model, TrainHyperparameters, TrainProgress } from "../types.js";
import { lrMultiplier } from "./schedule.js";
import { epochOrder, plannedSteps, train } from "./train.js";

let model: Model;
const root = mkdtempSync(join(tmpdir(), "svc-train-"));

const rows: DatasetRow[] = [
  {
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello!" },
    ],
  },
  {
    messages: [
      { role: "user", content: "2+2?" },
      { role: "assistant", content: "4" },
    ],
  },
  { prompt: "color of sky", completion: "blue" },
  {
    messages: [
      { role: "system", content: "be brief" },
      { role: "user", content: "yes?" },
      { role: "assistant", content: "no." },
    ],
  },
  { prompt: "cat says", completion: "meow" },
  {
    messages: [
      { role: "user", content: "bye" },
      { role: "assistant", content: "see you" },
    ],
  },
];
const evalRows: DatasetRow[] = [{ prompt: "dog says", completion: "woof" }];

const hyper: TrainHyperparameters = {
  lora: { r: 4, alpha: 8, targetModules: ["q_proj", "v_proj", "o_proj", "down_proj"] },
  maxSteps: 6,
  batchSize: 2,
  gradientAccumulationSteps: 2,
  learningRate: 1e-2,
  warmupSteps: 2,
  lrSchedulerType: "cosine",
  weightDecay: 0.01,
  maxGradNorm: 0.5,
  seed: 7,
};

before(async () => {
  await createRandomModel(join(root, "model"), { seed: 11, hiddenSize: 32, numHiddenLayers: 2 });
  model = await loadModel(join(root, "model"));
});

function tensorsOf(dir: string): Map<string, Float32Array> {
  return loadAdapter(dir).tensors;
}

test("progress reports every step: schedule, epochs, eval at evalSteps and at the end", async () => {
  const reports: TrainProgress[] = [];
  const result = await train({
    model,
    trainSet: rows,
    evalSet: evalRows,
    hyperparameters: { ...hyper, evalSteps: 4 },
    outputDir: join(root, "progress"),
    onProgress: (p) => {
      reports.push(p);
    },
  });
  assert.equal(result.status, "completed");
  assert.equal(result.steps, 6);
  assert.deepEqual(
    reports.map((r) => r.step),
    [1, 2, 3, 4, 5, 6],
  );
  for (const r of reports) {
    assert.equal(r.totalSteps, 6);
    assert.ok(Math.abs(r.learningRate - 1e-2 * lrMultiplier("cosine", r.step - 1, 2, 6)) < 1e-15);
    assert.ok(r.loss !== null && Number.isFinite(r.loss) && r.loss > 0);
    assert.ok(r.tokensPerSecond > 0);
    assert.equal(r.epoch, r.step / 2); // 6 examples, 4 per step → 2 steps per epoch
  }
  assert.deepEqual(
    reports.map((r) => r.evalLoss !== null),
    [false, false, false, true, false, true],
  );
  // The task metrics come with each eval: "woof" is a short answer, so exact match runs too.
  for (const r of reports) {
    for (const metric of [r.evalTokenAccuracy, r.evalExactMatch]) {
      if (r.evalLoss === null) assert.equal(metric, null);
      else assert.ok(metric !== null && metric >= 0 && metric <= 1, `step ${r.step}: ${metric}`);
    }
  }
  assert.equal(result.evalLoss, reports[5].evalLoss);
  assert.equal(result.finalLoss, reports[5].loss);
  const config = JSON.parse(readFileSync(join(result.adapterDir, "adapter_config.json"), "utf8"));
  assert.equal(config.r, 4);
  assert.equal(config.base_model_name_or_path, join(root, "model"));
});

test("the same seed gives identical results; another seed does not", async () => {
  const run = (seed: number, name: string) =>
    train({ model, trainSet: rows, hyperparameters: { ...hyper, seed }, outputDir: join(root, name) });
  const a = await run(7, "same-a");
  const b = await run(7, "same-b");
  const c = await run(8, "other");
  assert.equal(a.finalLoss, b.finalLoss);
  const ta = tensorsOf(a.adapterDir);
  const tb = tensorsOf(b.adapterDir);
  const tc = tensorsOf(c.adapterDir);
  for (const [name, t] of ta) assert.deepEqual(tb.get(name), t, name);
  assert.ok([...ta].some(([name, t]) => t.some((v, i) => v !== tc.get(name)?.[i])));
  assert.notDeepEqual(epochOrder(6, 7, 0), epochOrder(6, 7, 1));
});

test("cancel writes a checkpoint of the last full step; resuming from it equals an uninterrupted run", async () => {
  const full = await train({ model, trainSet: rows, hyperparameters: hyper, outputDir: join(root, "full") });

  const controller = new AbortController();
  const cancelled = await train({
    model,
    trainSet: rows,
    hyperparameters: hyper,
    outputDir: join(root, "cut"),
    signal: controller.signal,
    onProgress: (p) => {
      if (p.step === 3) controller.abort();
    },
  });
  assert.equal(cancelled.status, "cancelled");
  assert.equal(cancelled.steps, 3);
  assert.equal(cancelled.adapterDir, join(root, "cut", "checkpoint-3"));
  for (const file of [
    "adapter_config.json",
    "adapter_model.safetensors",
    "trainer_state.json",
    "optimizer.safetensors",
  ]) {
    assert.ok(existsSync(join(cancelled.adapterDir, file)), file);
  }
  const state = JSON.parse(readFileSync(join(cancelled.adapterDir, "trainer_state.json"), "utf8"));
  assert.equal(state.global_step, 3);
  assert.deepEqual(state.data_position, { epoch: 1, offset: 4 });

  const steps: number[] = [];
  const resumed = await train({
    model,
    trainSet: rows,
    hyperparameters: hyper,
    outputDir: join(root, "cut"),
    resumeFrom: cancelled.adapterDir,
    onProgress: (p) => {
      steps.push(p.step);
    },
  });
  assert.equal(resumed.status, "completed");
  assert.deepEqual(steps, [4, 5, 6]);
  assert.equal(resumed.finalLoss, full.finalLoss);
  const want = tensorsOf(full.adapterDir);
  const got = tensorsOf(resumed.adapterDir);
  for (const [name, t] of want) assert.deepEqual(got.get(name), t, name);
});

test("exact match is off at exactMatchMaxTokens 0 or for long answers; token accuracy still comes", async () => {
  const longAnswer: DatasetRow[] = [{ prompt: "dog says", completion: "woof woof woof woof woof" }];
  for (const [evalSet, extra] of [
    [evalRows, { exactMatchMaxTokens: 0 }],
    [evalRows, { exactMatchSamples: 0 }],
    [longAnswer, { exactMatchMaxTokens: 8 }],
  ] as const) {
    const reports: TrainProgress[] = [];
    await train({
      model,
      trainSet: rows,
      evalSet: [...evalSet],
      hyperparameters: { ...hyper, maxSteps: 2, ...extra },
      outputDir: join(root, "no-exact-match"),
      onProgress: (p) => {
        reports.push(p);
      },
    });
    const last = reports[reports.length - 1];
    assert.equal(last.evalExactMatch, null, JSON.stringify(extra));
    assert.ok(last.evalTokenAccuracy !== null && last.evalTokenAccuracy >= 0 && last.evalTokenAccuracy <= 1);
  }
});

test("checkpoints every saveSteps are reported", async () => {
  const seen: number[] = [];
  const result = await train({
    model,
    trainSet: rows,
    hyperparameters: { ...hyper, maxSteps: 4, saveSteps: 2 },
    outputDir: join(root, "saves"),
    onCheckpoint: (c) => {
      seen.push(c.step);
    },
  });
  assert.deepEqual(seen, [2, 4]);
  assert.deepEqual(
    result.checkpoints.map((c) => c.dir),
    [join(root, "saves", "checkpoint-2"), join(root, "saves", "checkpoint-4")],
  );
  assert.ok(existsSync(join(root, "saves", "final", "adapter_model.safetensors")));
});

test("bad hyperparameters and untrainable rows are named errors", async () => {
  const outputDir = join(root, "bad");
  await assert.rejects(
    train({ model, trainSet: rows, hyperparameters: { ...hyper, batchSize: 0 }, outputDir }),
    (e) => isEngineError(e, "invalid_argument") && /batchSize/.test(e.message),
  );
  for (const [field, value] of [
    ["exactMatchMaxTokens", -1],
    ["exactMatchSamples", 1.5],
  ] as const) {
    await assert.rejects(
      train({ model, trainSet: rows, hyperparameters: { ...hyper, [field]: value }, outputDir }),
      (e) => isEngineError(e, "invalid_argument") && e.message.includes(`hyperparameters.${field}`),
    );
  }
  await assert.rejects(
    train({
      model,
      trainSet: rows,
      hyperparameters: { ...hyper, lora: { ...hyper.lora, targetModules: ["qkv"] as never } },
      outputDir,
    }),
    (e) => isEngineError(e, "invalid_argument") && /qkv/.test(e.message),
  );
  await assert.rejects(
    train({
      model,
      trainSet: [...rows, { messages: [{ role: "user", content: "no answer" }] }],
      hyperparameters: hyper,
      outputDir,
    }),
    (e) => isEngineError(e) && /trainSet row 7/.test(e.message),
  );
  await assert.rejects(train({ model, trainSet: [], hyperparameters: hyper, outputDir }), (e) =>
    isEngineError(e, "invalid_argument"),
  );
});

test("plannedSteps: maxSteps, else epochs × ceil(examples / (batch × accumulation)) rounded up, as train() runs", () => {
  const lora = { r: 2, alpha: 4, targetModules: ["q_proj" as const] };
  assert.equal(plannedSteps(10, { lora, maxSteps: 7, numTrainEpochs: 3 }), 7);
  assert.equal(plannedSteps(10, { lora }), 3, "defaults: 1 epoch, batch 4");
  assert.equal(plannedSteps(10, { lora, batchSize: 4, gradientAccumulationSteps: 2 }), 2);
  assert.equal(plannedSteps(10, { lora, batchSize: 4, numTrainEpochs: 1.5 }), 5, "ceil(1.5 × 3)");
  assert.equal(plannedSteps(16, { lora, batchSize: 4, numTrainEpochs: 13 }), 52);
});
